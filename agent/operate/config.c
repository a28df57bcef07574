// SPDX-License-Identifier: Apache-2.0
/*
 * The option table, assembled from the slices the options files export, and where settings
 * come from: the command line, the environment and a YAML file (libyaml), with flags winning
 * over the environment and the environment over the file. Each source is read into a list
 * of (setting, value, origin) first; then, per setting, the values of the strongest source
 * that has it are checked and stored by the option table's parser, so that an error can
 * always say where the bad value came from. The errors about settings (a value, a source,
 * settings that do not go together) are written here, to the caller's err stream, as one
 * "ignis: ..." line each.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "config.h"
#include "options_internal.h"
#include "options_server.h"

/* ---- The table --------------------------------------------------------------------------- */

/* In the order of --help and the reference. */
static const struct option_slice *const slices[] = {
	&agent_option_slice,
	&server_option_slice,
	&action_option_slice,
};

size_t option_count(void)
{
	size_t i, nr = 0;

	for (i = 0; i < ARRAY_SIZE(slices); i++)
		nr += slices[i]->nr;
	return nr;
}

const struct option_desc *option_at(size_t i)
{
	size_t j;

	for (j = 0; j < ARRAY_SIZE(slices); i -= slices[j++]->nr)
		if (i < slices[j]->nr)
			return &slices[j]->options[i];
	return NULL;
}

const struct option_desc *option_find(const char *name)
{
	size_t nr = option_count(), i, j;

	for (i = 0; i < nr; i++) {
		const char *n = option_at(i)->name;

		for (j = 0; n[j] && name[j]; j++)
			if (name[j] != n[j] && !(n[j] == '-' && name[j] == '_'))
				break;
		if (!n[j] && !name[j])
			return option_at(i);
	}
	return NULL;
}

int option_apply(struct agent_config *cfg, const struct option_desc *o, const char *value,
		 char *why, size_t len)
{
	return o->parse(cfg, value, why, len);
}

void config_init(struct agent_config *cfg)
{
	size_t i;

	memset(cfg, 0, sizeof(*cfg));
	for (i = 0; i < ARRAY_SIZE(slices); i++)
		if (slices[i]->init)
			slices[i]->init(cfg);
}

void config_fini(struct agent_config *cfg)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(slices); i++)
		if (slices[i]->fini)
			slices[i]->fini(cfg);
	config_trace_free(cfg->trace);
	memset(cfg, 0, sizeof(*cfg));
}

int config_check(struct agent_config *cfg, FILE *err)
{
	char why[8192]; /* two paths and more */
	size_t i;

	for (i = 0; i < ARRAY_SIZE(slices); i++) {
		why[0] = '\0';
		if (slices[i]->check && slices[i]->check(cfg, why, sizeof(why))) {
			fprintf(err, "ignis: %s\n", why);
			return -EINVAL;
		}
	}
	return 0;
}

#ifndef IGNIS_VERSION
#define IGNIS_VERSION "0.0.0"
#endif

/* ---- Sources ---------------------------------------------------------------------------- */

struct setting {
	const struct option_desc *o;
	char *value;
	char origin[192]; /* "--frequency", "IGNIS_FREQUENCY", "/etc/ignis.yaml:3" */
};

struct settings {
	struct setting *v;
	size_t nr, cap;
};

/* What --print-config shows: per option, the value in force and where it came from. */
struct config_trace {
	size_t nr;
	struct {
		char *value; /* as given, repeatable values joined with ", "; NULL: default */
		char origin[192];
	} e[];
};

void config_trace_free(struct config_trace *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nr; i++)
		free(t->e[i].value);
	free(t);
}

static void settings_free(struct settings *s)
{
	size_t i;

	for (i = 0; i < s->nr; i++)
		free(s->v[i].value);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static int add(struct settings *s, const struct option_desc *o, const char *value,
	       const char *origin)
{
	char *copy = strdup(value);

	if (!copy || grow_array((void **)&s->v, &s->cap, s->nr + 1, sizeof(*s->v))) {
		free(copy);
		return -ENOMEM;
	}
	s->v[s->nr].o = o;
	s->v[s->nr].value = copy;
	snprintf(s->v[s->nr].origin, sizeof(s->v[s->nr].origin), "%s", origin);
	s->nr++;
	return 0;
}

/* ---- The command line --------------------------------------------------------------- */

static int from_argv(struct settings *out, int argc, char **argv, FILE *err)
{
	size_t nr = option_count(), i;
	const struct option_desc *o;
	struct option *longopts = calloc(nr + 1, sizeof(*longopts));
	char *shortopts = calloc(2 * nr + 3, 1), *sp, origin[192];
	int c, ret = 0;

	if (!longopts || !shortopts) {
		ret = -ENOMEM;
		goto out;
	}
	/* getopt_long returns 256 + the option's index, or the letter of a short option.
	 * Secret settings have no command-line form: argv is visible to every user. */
	for (i = 0, c = 0; i < nr; i++) {
		o = option_at(i);
		if (o->flags & OPT_SECRET)
			continue;
		longopts[c++] = (struct option){
			.name = o->name,
			.has_arg = o->flags & OPT_FLAG ? no_argument : required_argument,
			.val = 256 + (int)i,
		};
	}
	strcpy(shortopts, "+:");
	for (i = 0, sp = shortopts + 2; i < nr; i++) {
		o = option_at(i);
		if (!o->short_name)
			continue;
		*sp++ = o->short_name;
		if (!(o->flags & OPT_FLAG))
			*sp++ = ':';
	}

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (c == ':') {
			fprintf(err, "ignis: %s: missing value\n", argv[optind - 1]);
			ret = -EINVAL;
			goto out;
		}
		if (c == '?') {
			if (optopt >= 256)
				fprintf(err, "ignis: --%s takes no value\n",
					option_at((size_t)optopt - 256)->name);
			else if (optopt)
				fprintf(err, "ignis: -%c: unknown option\n", optopt);
			else
				fprintf(err, "ignis: %s: unknown option\n", argv[optind - 1]);
			ret = -EINVAL;
			goto out;
		}
		if (c < 256) {
			for (i = 0; i < nr && option_at(i)->short_name != c; i++)
				;
			c = 256 + (int)i;
		}
		o = option_at((size_t)c - 256);
		snprintf(origin, sizeof(origin), "--%s", o->name);
		ret = add(out, o, o->flags & OPT_FLAG ? "true" : optarg, origin);
		if (ret)
			goto out;
	}
	if (optind < argc) {
		fprintf(err, "ignis: %s: unexpected argument\n", argv[optind]);
		ret = -EINVAL;
	}
out:
	free(longopts);
	free(shortopts);
	return ret;
}

/* ---- The environment ------------------------------------------------------------------ */

/* Add one value, or for a repeatable setting each comma-separated item of it. */
static int add_values(struct settings *out, const struct option_desc *o, const char *value,
		      const char *origin, FILE *err)
{
	char *copy, *rest, *item, *end;
	int ret = 0;

	if (!(o->flags & OPT_REPEATABLE))
		return add(out, o, value, origin);
	copy = strdup(value);
	if (!copy)
		return -ENOMEM;
	for (rest = copy; rest && !ret;) {
		item = strsep(&rest, ",");
		item += strspn(item, " ");
		for (end = item + strlen(item); end > item && end[-1] == ' ';)
			*--end = '\0';
		if (!*item) {
			fprintf(err, "ignis: %s: empty item in a comma-separated list\n", origin);
			ret = -EINVAL;
			break;
		}
		ret = add(out, o, item, origin);
	}
	free(copy);
	return ret;
}

static int from_env(struct settings *out, char **envp, FILE *err)
{
	size_t nr = option_count(), i;
	char name[128], origin[192];
	int ret;

	/* Third-party variables first: IGNIS_* of the same setting, added after, wins. */
	for (i = 0; i < nr; i++) {
		const struct option_desc *a = option_at(i);
		size_t alen = a->env_alias ? strlen(a->env_alias) : 0;
		const char *v = NULL;
		char **e;

		for (e = envp; alen && e && *e; e++)
			if (!strncmp(*e, a->env_alias, alen) && (*e)[alen] == '=')
				v = *e + alen + 1;
		if (!v)
			continue;
		snprintf(origin, sizeof(origin), "environment %s", a->env_alias);
		ret = add_values(out, a, v, origin, err);
		if (ret)
			return ret;
	}
	for (; envp && *envp; envp++) {
		const char *eq = strchr(*envp, '='), *p;
		const struct option_desc *o;
		size_t len, j;

		if (strncmp(*envp, "IGNIS_", 6) || !eq)
			continue;
		len = (size_t)(eq - *envp);
		snprintf(origin, sizeof(origin), "environment %.*s", (int)len, *envp);
		if (len - 6 >= sizeof(name)) {
			fprintf(err, "ignis: %s: unknown setting (see ignis --help)\n", origin);
			return -EINVAL;
		}
		for (p = *envp + 6, j = 0; p < eq; p++, j++)
			name[j] = *p == '_' ? '-' : (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
		name[j] = '\0';
		o = option_find(name);
		if (!o || (o->flags & OPT_HIDDEN)) {
			fprintf(err, "ignis: %s: unknown setting (see ignis --help)\n", origin);
			return -EINVAL;
		}
		if ((o->flags & OPT_CLI_ONLY) && strcmp(o->name, "config")) {
			fprintf(err, "ignis: %s: --%s is a command-line action only\n", origin,
				o->name);
			return -EINVAL;
		}
		ret = add_values(out, o, eq + 1, origin, err);
		if (ret)
			return ret;
	}
	return 0;
}

/* ---- The YAML file ---------------------------------------------------------------------- */

/*
 * The file is one mapping of setting names (foo_bar) to a scalar, or for repeatable
 * settings a scalar or a list of scalars. Anything else is an error that names the line.
 */
/* Reading a YAML settings file: where the parser is in its mapping of settings. */
struct file_reader {
	struct settings *out;
	FILE *err;
	enum { TOP, KEY, VALUE, LIST } state;
	const struct option_desc *o; /* the setting of the current key */
	const struct option_desc *seen[64];
	size_t nr_seen;
	char origin[192]; /* "path:line" of the current event */
	char key[128];
	bool done;
};

/* A key: a known setting, given once. */
static int file_key(struct file_reader *r, const char *v)
{
	size_t i;

	snprintf(r->key, sizeof(r->key), "%s", v);
	r->o = strchr(v, '-') ? NULL : option_find(v);
	if (!r->o || (r->o->flags & (OPT_CLI_ONLY | OPT_HIDDEN))) {
		fprintf(r->err,
			"ignis: %s: %s: unknown setting (see ignis --help; "
			"file keys are written foo_bar)\n",
			r->origin, v);
		return -EINVAL;
	}
	for (i = 0; i < r->nr_seen; i++) {
		if (r->seen[i] == r->o) {
			fprintf(r->err, "ignis: %s: %s: given twice\n", r->origin, v);
			return -EINVAL;
		}
	}
	if (r->nr_seen < ARRAY_SIZE(r->seen))
		r->seen[r->nr_seen++] = r->o;
	r->state = VALUE;
	return 0;
}

static int file_scalar(struct file_reader *r, const yaml_event_t *ev)
{
	const char *v = (const char *)ev->data.scalar.value;
	int ret;

	if (r->state == KEY)
		return file_key(r, v);
	if (r->state == TOP) {
		fprintf(r->err, "ignis: %s: expected settings (key: value), not a value\n",
			r->origin);
		return -EINVAL;
	}
	if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	    (!ev->data.scalar.length || !strcmp(v, "~") || !strcasecmp(v, "null"))) {
		fprintf(r->err, "ignis: %s: %s: needs a value\n", r->origin, r->key);
		return -EINVAL;
	}
	snprintf(r->origin + strlen(r->origin), sizeof(r->origin) - strlen(r->origin), ": %s",
		 r->key);
	ret = add(r->out, r->o, v, r->origin);
	if (r->state == VALUE)
		r->state = KEY;
	return ret;
}

static int file_event(struct file_reader *r, const yaml_event_t *ev)
{
	int ret = 0;

	switch (ev->type) {
	case YAML_STREAM_START_EVENT:
	case YAML_DOCUMENT_START_EVENT:
	case YAML_DOCUMENT_END_EVENT:
		break;
	case YAML_STREAM_END_EVENT:
		r->done = true;
		break;
	case YAML_MAPPING_START_EVENT:
		if (r->state != TOP) {
			fprintf(r->err,
				"ignis: %s: %s: expected a value or a list, not a mapping\n",
				r->origin, r->key);
			ret = -EINVAL;
		}
		r->state = KEY;
		break;
	case YAML_MAPPING_END_EVENT:
		r->state = TOP;
		break;
	case YAML_SEQUENCE_START_EVENT:
		if (r->state == TOP) {
			fprintf(r->err, "ignis: %s: expected settings (key: value), not a list\n",
				r->origin);
			ret = -EINVAL;
		} else if (r->state != VALUE || !(r->o->flags & OPT_REPEATABLE)) {
			fprintf(r->err, "ignis: %s: %s: expected a single value, not a list\n",
				r->origin, r->state == VALUE ? r->key : "(top level)");
			ret = -EINVAL;
		}
		r->state = LIST;
		break;
	case YAML_SEQUENCE_END_EVENT:
		r->state = KEY;
		break;
	case YAML_SCALAR_EVENT:
		ret = file_scalar(r, ev);
		break;
	default:
		fprintf(r->err,
			"ignis: %s: unsupported YAML (anchors and aliases are not accepted)\n",
			r->origin);
		ret = -EINVAL;
	}
	return ret;
}

static int from_file(struct settings *out, const char *path, FILE *err)
{
	struct file_reader r = { .out = out, .err = err, .state = TOP };
	yaml_parser_t parser;
	yaml_event_t ev;
	int ret = 0;
	FILE *f;

	f = fopen(path, "re");
	if (!f) {
		ret = -errno;
		fprintf(err, "ignis: --config %s: cannot read it: %s\n", path, strerror(-ret));
		return -EINVAL;
	}
	if (!yaml_parser_initialize(&parser)) {
		fclose(f);
		return -ENOMEM;
	}
	yaml_parser_set_input_file(&parser, f);
	while (!r.done && !ret) {
		if (!yaml_parser_parse(&parser, &ev)) {
			fprintf(err, "ignis: %s:%zu: not valid YAML: %s\n", path,
				parser.problem_mark.line + 1,
				parser.problem ? parser.problem : "?");
			ret = -EINVAL;
			break;
		}
		snprintf(r.origin, sizeof(r.origin), "%s:%zu", path, ev.start_mark.line + 1);
		ret = file_event(&r, &ev);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	fclose(f);
	return ret;
}

/* ---- Precedence ------------------------------------------------------------------------- */

static int apply(struct agent_config *cfg, struct settings *levels[], size_t nr_levels, FILE *err)
{
	size_t nr = option_count(), i, l, j;
	struct config_trace *t;
	char why[256];
	int ret;

	t = calloc(1, sizeof(*t) + nr * sizeof(t->e[0]));
	if (!t)
		return -ENOMEM;
	t->nr = nr;
	config_trace_free(cfg->trace);
	cfg->trace = t;
	for (i = 0; i < nr; i++) {
		const struct option_desc *o = option_at(i);
		size_t used = 0, vlen = 0;

		/* The strongest level that sets it; levels are listed strongest first. */
		for (l = 0; l < nr_levels; l++) {
			for (j = 0; j < levels[l]->nr; j++)
				if (levels[l]->v[j].o == o)
					break;
			if (j < levels[l]->nr)
				break;
		}
		if (l == nr_levels) {
			snprintf(t->e[i].origin, sizeof(t->e[i].origin), "default");
			continue;
		}
		for (j = 0; j < levels[l]->nr; j++) {
			struct setting *s = &levels[l]->v[j];
			char *joined;

			if (s->o != o)
				continue;
			why[0] = '\0';
			ret = option_apply(cfg, o, s->value, why, sizeof(why));
			if (ret) {
				if (s->origin[0] == '-')
					fprintf(err, "ignis: %s %s: %s\n", s->origin, s->value,
						why);
				else
					fprintf(err, "ignis: %s: %s: %s\n", s->origin, s->value,
						why);
				return ret;
			}
			vlen = t->e[i].value ? strlen(t->e[i].value) : 0;
			joined = realloc(t->e[i].value, vlen + strlen(s->value) + 3);
			if (!joined)
				return -ENOMEM;
			sprintf(joined + vlen, "%s%s", vlen ? ", " : "", s->value);
			t->e[i].value = joined;
			if (!used++)
				snprintf(t->e[i].origin, sizeof(t->e[i].origin), "%s", s->origin);
		}
	}
	return 0;
}

int config_load(struct agent_config *cfg, int argc, char **argv, char **envp, FILE *err)
{
	struct settings flags = { 0 }, env = { 0 }, file = { 0 };
	struct settings *levels[] = { &flags, &env, &file };
	const char *path = NULL;
	size_t i;
	int ret;

	ret = from_argv(&flags, argc, argv, err);
	if (!ret)
		ret = from_env(&env, envp, err);
	/* --config on the command line, else IGNIS_CONFIG: strongest first. */
	for (i = 0; !ret && i < 2 && !path; i++) {
		struct settings *s = i ? &env : &flags;
		size_t j;

		for (j = 0; j < s->nr; j++)
			if (!strcmp(s->v[j].o->name, "config"))
				path = s->v[j].value;
	}
	if (!ret && path)
		ret = from_file(&file, path, err);
	if (!ret)
		ret = apply(cfg, levels, ARRAY_SIZE(levels), err);
	settings_free(&flags);
	settings_free(&env);
	settings_free(&file);
	return ret ? -EINVAL : 0;
}

int config_parse_args(struct agent_config *cfg, int argc, char **argv, FILE *err)
{
	struct settings flags = { 0 };
	struct settings *levels[] = { &flags };
	int ret;

	ret = from_argv(&flags, argc, argv, err);
	if (!ret)
		ret = apply(cfg, levels, 1, err);
	settings_free(&flags);
	return ret ? -EINVAL : 0;
}

/* ---- Output ------------------------------------------------------------------------------ */

void config_usage(FILE *out)
{
	size_t nr = option_count(), i;

	fprintf(out,
		"Usage: ignis [OPTION]...\n"
		"       ignis report [OPTION]... [PATH]...   (see ignis report --help)\n"
		"       ignis diff [OPTION]... BASE NEW      (see ignis diff --help)\n"
		"Profile every process on this host and write one pprof per window; report on\n"
		"and compare the profiles written.\n\n");
	for (i = 0; i < nr; i++) {
		const struct option_desc *o = option_at(i);
		char left[64];

		if (o->flags & (OPT_HIDDEN | OPT_SECRET))
			continue;
		if (o->short_name)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", o->short_name, o->name,
				 o->arg ? " " : "", o->arg ? o->arg : "");
		else
			snprintf(left, sizeof(left), "--%s%s%s", o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		fprintf(out, "  %-32s %s", left, o->help);
		if (o->def)
			fprintf(out, " (default: %s)", o->def);
		fputc('\n', out);
	}
	fprintf(out, "\nEvery setting but the actions can also come from the environment "
		     "(--foo-bar: IGNIS_FOO_BAR)\nand from the --config file (foo_bar: ...); flags "
		     "win over the environment,\nwhich wins over the file.\n");
}

static void yaml_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(out, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(out, "\\x%02x", (unsigned char)*s);
		else
			fputc(*s, out);
	}
	fputc('"', out);
}

static void key_of(const struct option_desc *o, char *buf, size_t size)
{
	size_t i;

	for (i = 0; o->name[i] && i + 1 < size; i++)
		buf[i] = o->name[i] == '-' ? '_' : o->name[i];
	buf[i] = '\0';
}

void config_print(const struct agent_config *cfg, FILE *out)
{
	size_t nr = option_count(), i;
	char key[64];

	fprintf(out, "# ignis: effective configuration (secrets redacted)\n");
	for (i = 0; i < nr; i++) {
		const struct option_desc *o = option_at(i);
		const char *value = cfg->trace && i < cfg->trace->nr ? cfg->trace->e[i].value :
								       NULL;

		if (o->flags & (OPT_CLI_ONLY | OPT_HIDDEN))
			continue;
		key_of(o, key, sizeof(key));
		if (!value) {
			fprintf(out, "# %s: %s  (default)\n", key,
				o->def		    ? o->def :
				o->flags & OPT_FLAG ? "false" :
						      "unset");
			continue;
		}
		fprintf(out, "%s: ", key);
		if (o->flags & (OPT_SECRET | OPT_REDACT)) {
			fprintf(out, "\"<redacted>\"");
		} else if (o->flags & OPT_REPEATABLE) {
			char *copy = strdup(value), *item, *save = NULL;
			bool first = true;

			fputc('[', out);
			for (item = copy ? strtok_r(copy, ",", &save) : NULL; item;
			     item = strtok_r(NULL, ",", &save)) {
				fprintf(out, "%s", first ? "" : ", ");
				yaml_string(out, item + strspn(item, " "));
				first = false;
			}
			fputc(']', out);
			free(copy);
		} else {
			yaml_string(out, value);
		}
		fprintf(out, "  # %s\n", cfg->trace->e[i].origin);
	}
	if (cfg->config_file)
		fprintf(out, "# file: %s\n", cfg->config_file);
}

void config_reference(FILE *out)
{
	size_t nr = option_count(), i;
	char key[64], env[80];

	fprintf(out, "| flag | environment | file key | default | meaning |\n"
		     "| --- | --- | --- | --- | --- |\n");
	for (i = 0; i < nr; i++) {
		const struct option_desc *o = option_at(i);
		size_t j;

		if (o->flags & OPT_HIDDEN)
			continue;
		key_of(o, key, sizeof(key));
		for (j = 0; key[j] && j + 7 < sizeof(env); j++)
			env[j] = key[j] >= 'a' && key[j] <= 'z' ? key[j] - 32 : key[j];
		env[j] = '\0';
		if (o->flags & OPT_SECRET)
			fprintf(out, "| (none: secret) ");
		else
			fprintf(out, "| `--%s%s%s` ", o->name, o->arg ? " " : "",
				o->arg ? o->arg : "");
		if (o->flags & OPT_CLI_ONLY && strcmp(o->name, "config"))
			fprintf(out, "| | ");
		else if (o->flags & OPT_CLI_ONLY)
			fprintf(out, "| `IGNIS_%s` | ", env);
		else
			fprintf(out, "| `IGNIS_%s`%s%s%s | `%s` ", env, o->env_alias ? ", `" : "",
				o->env_alias ? o->env_alias : "", o->env_alias ? "`" : "", key);
		fprintf(out, "| %s | %s%s |\n", o->def ? o->def : "", o->help,
			o->flags & OPT_REPEATABLE ? "; a list in the file, comma-separated in the "
						    "environment" :
						    "");
	}
}

bool config_act(const struct agent_config *cfg, FILE *out)
{
	if (cfg->show_help)
		config_usage(out);
	else if (cfg->show_version)
		fprintf(out, "ignis %s\n", IGNIS_VERSION);
	else if (cfg->print_config)
		config_print(cfg, out);
	else if (cfg->print_reference)
		config_reference(out);
	else
		return false;
	return true;
}
