// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/kubernetes.h"
#include "collect/metadata.h"
#include "profile.h"
#include "targets.h"

enum rule_kind {
	RULE_EXE,
	RULE_COMM,
};

struct rule {
	enum rule_kind kind;
	char *glob;
	char name[SERVICE_NAME_MAX + 1]; /* sanitized */
};

struct targets {
	char *hostname;
	struct rule *rules;
	size_t nr_rules;
	struct target_label *labels; /* static */
	size_t nr_labels;
	bool container_id;

	struct target **v; /* this window's, by id */
	size_t nr, cap;
	struct hashmap index; /* key text -> id + 1 */
	uint64_t window;      /* the window v belongs to; meaningless while nr is 0 */
};

/* ---- Checks ------------------------------------------------------------------------------ */

bool label_name_valid(const char *name)
{
	size_t i;

	if (!name[0] || (name[0] >= '0' && name[0] <= '9') || !strncmp(name, "__", 2))
		return false;
	for (i = 0; name[i]; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_'))
			return false;
	}
	return i <= TARGET_MAX_NAME;
}

static bool legacy_char(char c, size_t i)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (i && c >= '0' && c <= '9');
}

int label_name_store(const char *name, size_t n, char *out, size_t size)
{
	size_t i;

	if (!n || n > TARGET_MAX_NAME || n >= size)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (!legacy_char(name[i], i) && name[i] != '.')
			return -EINVAL;
		out[i] = name[i] == '.' ? '_' : name[i];
	}
	out[i] = '\0';
	return 0;
}

/* The name with what Pyroscope refuses made '_' (one per UTF-8 character), '_' in front of
 * a leading digit: the fix an error message suggests. */
static void label_name_suggest(const char *name, size_t n, char *out, size_t size)
{
	size_t i, o = 0;

	if (n && name[0] >= '0' && name[0] <= '9' && o + 1 < size)
		out[o++] = '_';
	for (i = 0; i < n && o + 1 < size; i++) {
		unsigned char c = (unsigned char)name[i];

		if ((c & 0xC0) == 0x80)
			continue; /* a UTF-8 continuation byte: its character is one '_' already */
		out[o++] = legacy_char(name[i], 1) ? name[i] : '_';
	}
	out[o] = '\0';
}

static bool utf8_valid(const char *s)
{
	char *copy = utf8_sanitize(s);
	bool same = copy && !strcmp(copy, s);

	free(copy);
	return same;
}

static const char *const reserved[] = {
	"service_name", "hostname", "namespace", "pod", "container", "comm", "thread_name",
};

#define WHY(...) (snprintf(why, len, __VA_ARGS__), -EINVAL)

int targets_check_label(const char *name_value, char *why, size_t len)
{
	const char *eq = strchr(name_value, '=');
	char name[TARGET_MAX_NAME + 1], stored[TARGET_MAX_NAME + 1];
	size_t n, i;
	bool differ;

	if (!eq || eq == name_value)
		return WHY("must be NAME=VALUE (e.g. env=production)");
	n = (size_t)(eq - name_value);
	if (n > TARGET_MAX_NAME)
		return WHY("the name is longer than %d bytes", TARGET_MAX_NAME);
	memcpy(name, name_value, n);
	name[n] = '\0';
	if (label_name_store(name, n, stored, sizeof(stored))) {
		label_name_suggest(name, n, stored, sizeof(stored));
		return WHY("'%.64s' is not a label name every Pyroscope takes (1.x refuses it): "
			   "use letters, digits, '_' and '.' ([a-zA-Z_.][a-zA-Z0-9_.]*; a '.' is "
			   "sent as '_'), e.g. '%.64s'",
			   name, stored);
	}
	differ = strcmp(name, stored) != 0;
	if (!strncmp(stored, "__", 2))
		return WHY("'%.64s'%s%.64s%s: names starting with __ are reserved for the server",
			   name, differ ? " (stored as " : "", differ ? stored : "",
			   differ ? ")" : "");
	for (i = 0; i < ARRAY_SIZE(reserved); i++)
		if (!strcmp(stored, reserved[i]))
			return WHY("'%.64s'%s%s%s is set by ignis itself%s", name,
				   differ ? " (stored as " : "", differ ? reserved[i] : "",
				   differ ? ")" : "", i == 0 ? "; use --service-name-rule" : "");
	if (!eq[1])
		return WHY("the value of '%s' is empty", name);
	if (strlen(eq + 1) > TARGET_MAX_VALUE)
		return WHY("the value of '%s' is longer than %d bytes", name, TARGET_MAX_VALUE);
	if (!utf8_valid(eq + 1))
		return WHY("the value of '%s' is not valid UTF-8", name);
	if (strpbrk(eq + 1, ",}"))
		return WHY("the value of '%s' contains ',' or '}', which Pyroscope's /ingest "
			   "cannot carry",
			   name);
	return 0;
}

int targets_label_name(const char *name_value, char *out, size_t size)
{
	const char *eq = strchr(name_value, '=');

	return eq ? label_name_store(name_value, (size_t)(eq - name_value), out, size) : -EINVAL;
}

int targets_check_rule(const char *rule, char *why, size_t len)
{
	const char *glob = NULL, *eq = strrchr(rule, '=');

	if (!strncmp(rule, "exe:", 4) || !strncmp(rule, "comm:", 5))
		glob = strchr(rule, ':') + 1;
	if (!glob || !eq || eq < glob || eq == glob || !eq[1])
		return WHY("must be exe:GLOB=NAME or comm:GLOB=NAME "
			   "(e.g. exe:/usr/bin/python3*=billing)");
	if (strlen(eq + 1) > SERVICE_NAME_MAX)
		return WHY("the service name is longer than %d bytes", SERVICE_NAME_MAX);
	if (strspn(eq + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-/") !=
	    strlen(eq + 1))
		return WHY("the service name '%s' may use only A-Z a-z 0-9 _ . - /", eq + 1);
	return 0;
}

void service_name_sanitize(const char *in, char *out, size_t size)
{
	size_t i;

	if (!size)
		return;
	for (i = 0; in[i] && i + 1 < size; i++) {
		char c = in[i];

		out[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
					 (c >= '0' && c <= '9') || c == '_' || c == '.' ||
					 c == '-' || c == '/' ?
				 c :
				 '_';
	}
	out[i] = '\0';
	if (!i)
		snprintf(out, size, "unknown");
}

/* ---- Lifecycle --------------------------------------------------------------------------- */

static uint64_t hash_key(const void *k)
{
	return hash_str(k);
}

static bool equal_key(const void *a, const void *b)
{
	return !strcmp(a, b);
}

static int parse_rule(const char *text, struct rule *r)
{
	const char *colon = strchr(text, ':'), *eq = strrchr(text, '=');

	r->kind = !strncmp(text, "exe:", 4) ? RULE_EXE : RULE_COMM;
	r->glob = strndup(colon + 1, (size_t)(eq - colon - 1));
	if (!r->glob)
		return -ENOMEM;
	service_name_sanitize(eq + 1, r->name, sizeof(r->name));
	return 0;
}

struct targets *targets__new(const struct targets_opts *opts)
{
	struct targets *t = calloc(1, sizeof(*t));
	char why[256];
	size_t i;
	int err = -ENOMEM;

	if (!t)
		return NULL;
	hashmap__init(&t->index, hash_key, equal_key);
	t->hostname = strdup(opts->hostname ? opts->hostname : "localhost");
	t->container_id = opts->container_id;
	t->rules = calloc(opts->nr_rules + 1, sizeof(*t->rules));
	t->labels = calloc(opts->nr_labels + 1, sizeof(*t->labels));
	if (!t->hostname || !t->rules || !t->labels)
		goto err_out;
	for (i = 0; i < opts->nr_rules; i++) {
		if (targets_check_rule(opts->rules[i], why, sizeof(why))) {
			err = -EINVAL;
			goto err_out;
		}
		err = parse_rule(opts->rules[i], &t->rules[i]);
		if (err)
			goto err_out;
		t->nr_rules++;
	}
	if (opts->nr_labels > TARGET_MAX_STATIC) {
		err = -EINVAL;
		goto err_out;
	}
	for (i = 0; i < opts->nr_labels; i++) {
		const char *eq;

		if (targets_check_label(opts->labels[i], why, sizeof(why))) {
			err = -EINVAL;
			goto err_out;
		}
		eq = strchr(opts->labels[i], '=');
		/* As Pyroscope stores it: service.version is sent as service_version. */
		t->labels[i].name = strndup(opts->labels[i], (size_t)(eq - opts->labels[i]));
		if (t->labels[i].name && !opts->names_as_given)
			targets_label_name(opts->labels[i], t->labels[i].name,
					   (size_t)(eq - opts->labels[i]) + 1);
		t->labels[i].value = strdup(eq + 1);
		t->nr_labels++;
		if (!t->labels[i].name || !t->labels[i].value) {
			err = -ENOMEM;
			goto err_out;
		}
	}
	return t;
err_out:
	targets__free(t);
	errno = -err;
	return NULL;
}

/* Forget the window's targets; ids start again at 0. */
static void reset(struct targets *t)
{
	size_t i;
	uint32_t j;

	for (i = 0; i < t->nr; i++) {
		for (j = 0; j < t->v[i]->nr_labels; j++)
			free(t->v[i]->labels[j].value);
		free(t->v[i]->key);
		free(t->v[i]);
	}
	t->nr = 0;
	hashmap__clear(&t->index);
}

void targets__free(struct targets *t)
{
	size_t i;

	if (!t)
		return;
	reset(t);
	hashmap__fini(&t->index);
	free(t->v);
	for (i = 0; i < t->nr_rules; i++)
		free(t->rules[i].glob);
	free(t->rules);
	for (i = 0; i < t->nr_labels; i++) {
		free(t->labels[i].name);
		free(t->labels[i].value);
	}
	free(t->labels);
	free(t->hostname);
	free(t);
}

/* ---- Resolution -------------------------------------------------------------------------- */

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

const char *targets__service_name(const struct targets *t, const struct target_process *p,
				  char *out, size_t size)
{
	const struct proc_meta *m = p->meta;
	const struct pod_meta *pod = p->pod;
	char buf[SERVICE_NAME_MAX + 64 + 256]; /* namespace/pod, cut to size when sanitized */
	size_t i, n;

	for (i = 0; i < t->nr_rules; i++) {
		const struct rule *r = &t->rules[i];
		const char *subject = r->kind == RULE_EXE ? p->exe : p->comm;

		if (subject && subject[0] && !fnmatch(r->glob, subject, 0)) {
			snprintf(out, size, "%s", r->name);
			return "rule";
		}
	}
	if (pod && pod->service_name[0]) {
		service_name_sanitize(pod->service_name, out, size);
		return "annotation";
	}
	if (pod && pod->namespace_[0]) {
		snprintf(buf, sizeof(buf), "%s/%s", pod->namespace_,
			 pod->container[0] ? pod->container : pod->pod);
		service_name_sanitize(buf, out, size);
		return "kubernetes";
	}
	if (m && m->unit[0]) {
		n = strlen(m->unit);
		if (n > 8 && !strcmp(m->unit + n - 8, ".service")) {
			snprintf(buf, sizeof(buf), "%.*s", (int)(n - 8), m->unit);
			service_name_sanitize(buf, out, size);
			return "systemd";
		}
	}
	if (m && m->container_id[0]) {
		snprintf(buf, sizeof(buf), "%.12s", m->container_id);
		service_name_sanitize(buf, out, size);
		return "container";
	}
	if (p->kthread) {
		snprintf(out, size, "kernel");
		return "kernel";
	}
	/* A memfd executable (/memfd:NAME (deleted)) is better known by its comm. */
	if (p->exe && p->exe[0] && strncmp(p->exe, "/memfd:", 7)) {
		n = strlen(p->exe);
		if (n > 10 && !strcmp(p->exe + n - 10, " (deleted)"))
			n -= 10;
		snprintf(buf, sizeof(buf), "%.*s", (int)n, p->exe);
		service_name_sanitize(basename_of(buf), out, size);
		return "exe";
	}
	service_name_sanitize(p->comm ? p->comm : "", out, size);
	return "comm";
}

/* Append "name=value\n" to the key text. */
static int key_append(char **key, size_t *len, size_t *cap, const char *name, const char *value)
{
	size_t need = strlen(name) + strlen(value) + 3;
	int err = grow_array((void **)key, cap, *len + need, 1);

	if (err)
		return err;
	*len += (size_t)snprintf(*key + *len, need, "%s=%s\n", name, value);
	return 0;
}

int64_t targets__resolve(struct targets *t, uint64_t window, const struct target_process *p)
{
	struct target_label l[TARGET_MAX_LABELS];
	char service[SERVICE_NAME_MAX + 1];
	struct target *tg = NULL;
	char *key = NULL;
	size_t nr = 0, len = 0, cap = 0, i;
	uintptr_t found;
	int err = 0;

	if (t->nr && t->window != window)
		reset(t);
	t->window = window;
	targets__service_name(t, p, service, sizeof(service));
	l[nr++] = (struct target_label){ "__name__", p->offcpu ? "offcpu" : "process_cpu" };
	l[nr++] = (struct target_label){ "service_name", service };
	l[nr++] = (struct target_label){ "hostname", t->hostname };
	if (p->pod && p->pod->namespace_[0]) {
		l[nr++] = (struct target_label){ "namespace", (char *)p->pod->namespace_ };
		if (p->pod->pod[0])
			l[nr++] = (struct target_label){ "pod", (char *)p->pod->pod };
		if (p->pod->container[0])
			l[nr++] = (struct target_label){ "container", (char *)p->pod->container };
	}
	if (t->container_id && p->meta && p->meta->container_id[0])
		l[nr++] = (struct target_label){ "container_id", (char *)p->meta->container_id };
	for (i = 0; i < t->nr_labels; i++)
		l[nr++] = t->labels[i];
	for (i = 0; i < nr && !err; i++)
		err = key_append(&key, &len, &cap, l[i].name, l[i].value);
	if (err)
		goto err_out;
	found = (uintptr_t)hashmap__find(&t->index, key);
	if (found) {
		free(key);
		return (int64_t)found - 1;
	}
	err = grow_array((void **)&t->v, &t->cap, t->nr + 1, sizeof(*t->v));
	tg = err ? NULL : calloc(1, sizeof(*tg) + nr * sizeof(tg->labels[0]));
	if (!tg) {
		err = -ENOMEM;
		goto err_out;
	}
	tg->id = (uint32_t)t->nr;
	tg->key = key;
	for (i = 0; i < nr; i++) {
		/* Names are static strings or the table's own; values are copied, as UTF-8. */
		tg->labels[i].name = l[i].name;
		tg->labels[i].value = utf8_sanitize(l[i].value);
		tg->nr_labels++;
		if (!tg->labels[i].value) {
			err = -ENOMEM;
			goto err_free;
		}
	}
	tg->service_name = tg->labels[1].value;
	err = hashmap__insert(&t->index, tg->key, (void *)(uintptr_t)(tg->id + 1));
	if (err)
		goto err_free;
	t->v[t->nr++] = tg;
	return tg->id;
err_free:
	for (i = 0; i < tg->nr_labels; i++)
		free(tg->labels[i].value);
	free(tg);
err_out:
	free(key);
	return err;
}

size_t targets__count(const struct targets *t, uint64_t window)
{
	return t->window == window ? t->nr : 0;
}

const struct target *targets__get(const struct targets *t, uint64_t window, uint32_t id)
{
	return t->window == window && id < t->nr ? t->v[id] : NULL;
}
