// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "diff.h"
#include "load.h"
#include "operate/config.h"
#include "operate/options.h"
#include "profile/pprof.h"
#include "profile/profile.h"
#include "render.h"
#include "report.h"

extern char **environ;

/* The packaged service's configuration, read for its output folder when nothing else says. */
#define SYSTEM_CONFIG "/etc/ignis/config.yaml"

#define MAX_ARGS 256 /* of each repeatable option */

enum format { FMT_TEXT, FMT_MD, FMT_HTML, FMT_FOLDED, FMT_PPROF };

struct cli {
	bool diff;
	enum format format;
	const char *output;
	const char *dir;
	const char *config;
	enum report_type type;
	const char *since, *until, *last;
	uint32_t pids[MAX_ARGS];
	char *comms[MAX_ARGS], *services[MAX_ARGS], *labels[MAX_ARGS], *hosts[MAX_ARGS];
	size_t nr_pids, nr_comms, nr_services, nr_labels, nr_hosts;
	struct diff_gate gates[MAX_ARGS];
	size_t nr_gates;
	struct render_opts ro;
	struct diff_opts dopts;
	char *out_dir; /* the configured folder, owned */
};

static const char report_usage[] =
	"Usage: ignis report [OPTION]... [PATH]...\n"
	"Summarize the profiles in PATHs (pprof files, or folders of them; default: the agent's\n"
	"output folder) as text, Markdown, an HTML flame graph, folded stacks or one pprof.\n";

static const char diff_usage[] =
	"Usage: ignis diff [OPTION]... BASE NEW\n"
	"Compare two sets of profiles. BASE and NEW are each a pprof file, a folder, a list of\n"
	"files separated by commas, or a time range SINCE..UNTIL of the output folder (either end\n"
	"may be empty; times as for --since). Shares of each side's total are compared; changes\n"
	"within the sampling noise are not reported.\n";

static const char common_help[] =
	"\nSelection:\n"
	"  --since TIME           windows starting at or after TIME: 2026-12-02T06:00:00Z,\n"
	"                         '2026-12-02 06:00' (local time), @UNIX_SECONDS, 15m (ago), now\n"
	"  --until TIME           windows starting before TIME\n"
	"  --last DURATION        the last DURATION (15m, 2h, 1d): --since DURATION\n"
	"  --pid PID              samples of process PID (repeatable)\n"
	"  --comm GLOB            samples of processes whose name matches (repeatable)\n"
	"  --service GLOB         samples of a service as the server would name it (repeatable)\n"
	"  --label KEY=GLOB       samples with that label (repeatable; all must match)\n"
	"  --host GLOB            windows of matching hosts (repeatable)\n"
	"  --type cpu|offcpu      CPU samples (default) or time off CPU\n"
	"  --dir DIR              the output folder (default: --config's output_dir, else\n"
	"                         /etc/ignis/config.yaml's, else ./ignis-profiles)\n"
	"  -c, --config FILE      the agent's configuration file, for its output_dir\n"
	"\nOutput:\n"
	"  -f, --format FORMAT    text (default), md, html%s\n"
	"  -o, --output FILE      write to FILE instead of standard output\n"
	"  --top N                rows of each table (default 20)\n";

static const char report_help[] =
	"  --paths N              heaviest call paths, for the top N by self (default 5)\n"
	"  --max-stacks N         html: the N heaviest stacks; the rest fold into\n"
	"                         [other stacks] (default 20000)\n";

static const char diff_help[] =
	"  --fail-if COND         exit 3 when COND holds for a change above the noise floor:\n"
	"                         [self:|total:]GLOB>+N%% (share up by more than N points) or\n"
	"                         GLOB<-N%% (down); total when neither is given (repeatable)\n"
	"  --z Z                  standard errors a change must reach to be shown (default 4)\n"
	"  --min-change POINTS    percentage points a change must reach (default 0.5)\n";

static void usage(const struct cli *c, FILE *out)
{
	fputs(c->diff ? diff_usage : report_usage, out);
	fprintf(out, common_help, c->diff ? "" : ", folded, pprof");
	fprintf(out, c->diff ? diff_help : report_help);
	fputs("  -h, --help             this help\n", out);
	fprintf(out, "\nExit status: 0; 1 when nothing could be reported; 2 for a bad option%s.\n",
		c->diff ? "; 3 when a --fail-if condition holds" : "");
}

static int bad(const struct cli *c, const char *fmt, const char *arg)
{
	fprintf(stderr, "ignis %s: ", c->diff ? "diff" : "report");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'ignis %s --help'.\n", c->diff ? "diff" : "report");
	return 2;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno || end == s || *end || s[0] == '-' || *out > max ? -EINVAL : 0;
}

enum {
	OPT_SINCE = 256,
	OPT_UNTIL,
	OPT_LAST,
	OPT_PID,
	OPT_COMM,
	OPT_SERVICE,
	OPT_LABEL,
	OPT_HOST,
	OPT_TYPE,
	OPT_DIR,
	OPT_TOP,
	OPT_PATHS,
	OPT_MAX_STACKS,
	OPT_FAIL_IF,
	OPT_Z,
	OPT_MIN_CHANGE,
};

static const struct option long_options[] = {
	{ "since", required_argument, NULL, OPT_SINCE },
	{ "until", required_argument, NULL, OPT_UNTIL },
	{ "last", required_argument, NULL, OPT_LAST },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "comm", required_argument, NULL, OPT_COMM },
	{ "service", required_argument, NULL, OPT_SERVICE },
	{ "label", required_argument, NULL, OPT_LABEL },
	{ "host", required_argument, NULL, OPT_HOST },
	{ "type", required_argument, NULL, OPT_TYPE },
	{ "dir", required_argument, NULL, OPT_DIR },
	{ "config", required_argument, NULL, 'c' },
	{ "format", required_argument, NULL, 'f' },
	{ "output", required_argument, NULL, 'o' },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "paths", required_argument, NULL, OPT_PATHS },
	{ "max-stacks", required_argument, NULL, OPT_MAX_STACKS },
	{ "fail-if", required_argument, NULL, OPT_FAIL_IF },
	{ "z", required_argument, NULL, OPT_Z },
	{ "min-change", required_argument, NULL, OPT_MIN_CHANGE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Add arg to a repeatable option's list. */
static int push(const struct cli *c, char **list, size_t *nr, char *arg, const char *opt)
{
	if (*nr >= MAX_ARGS)
		return bad(c, "too many %s options (256 at most)", opt);
	list[(*nr)++] = arg;
	return 0;
}

static int parse_double(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno || end == s || *end || !(*out >= 0) ? -EINVAL : 0;
}

/* Options into c; *first_path is the index of the first operand. Returns -1 to go on, else an
 * exit status. */
static int parse(struct cli *c, int argc, char **argv, int *first_path)
{
	unsigned long v;
	int opt, ret;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":c:f:o:h", long_options, NULL)) != -1) {
		ret = 0;
		switch (opt) {
		case OPT_SINCE:
			c->since = optarg;
			break;
		case OPT_UNTIL:
			c->until = optarg;
			break;
		case OPT_LAST:
			c->last = optarg;
			break;
		case OPT_PID:
			if (parse_uint(optarg, UINT32_MAX, &v) || !v)
				return bad(c, "--pid %s: not a process id", optarg);
			if (c->nr_pids >= MAX_ARGS)
				return bad(c, "too many %s options (256 at most)", "--pid");
			c->pids[c->nr_pids++] = (uint32_t)v;
			break;
		case OPT_COMM:
			ret = push(c, c->comms, &c->nr_comms, optarg, "--comm");
			break;
		case OPT_SERVICE:
			ret = push(c, c->services, &c->nr_services, optarg, "--service");
			break;
		case OPT_LABEL:
			if (!strchr(optarg, '=') || optarg[0] == '=')
				return bad(
					c,
					"--label %s: give KEY=GLOB (e.g. --label unit=nginx.service)",
					optarg);
			ret = push(c, c->labels, &c->nr_labels, optarg, "--label");
			break;
		case OPT_HOST:
			ret = push(c, c->hosts, &c->nr_hosts, optarg, "--host");
			break;
		case OPT_TYPE:
			if (!strcmp(optarg, "cpu"))
				c->type = REPORT_CPU;
			else if (!strcmp(optarg, "offcpu") || !strcmp(optarg, "off-cpu"))
				c->type = REPORT_OFFCPU;
			else
				return bad(c, "--type %s: use cpu or offcpu", optarg);
			break;
		case OPT_DIR:
			c->dir = optarg;
			break;
		case 'c':
			c->config = optarg;
			break;
		case 'f':
			if (!strcmp(optarg, "text"))
				c->format = FMT_TEXT;
			else if (!strcmp(optarg, "md") || !strcmp(optarg, "markdown"))
				c->format = FMT_MD;
			else if (!strcmp(optarg, "html"))
				c->format = FMT_HTML;
			else if (!c->diff && !strcmp(optarg, "folded"))
				c->format = FMT_FOLDED;
			else if (!c->diff && !strcmp(optarg, "pprof"))
				c->format = FMT_PPROF;
			else
				return bad(
					c,
					c->diff ?
						"--format %s: use text, md or html" :
						"--format %s: use text, md, html, folded or pprof",
					optarg);
			break;
		case 'o':
			c->output = optarg;
			break;
		case OPT_TOP:
		case OPT_PATHS:
		case OPT_MAX_STACKS:
			if (parse_uint(optarg, opt == OPT_MAX_STACKS ? 1000000 : 10000, &v) ||
			    (opt == OPT_MAX_STACKS && !v))
				return bad(c, "%s: not a count in range", optarg);
			if (opt == OPT_TOP)
				c->ro.top = c->dopts.top = (unsigned int)v;
			else if (opt == OPT_PATHS)
				c->ro.paths = (unsigned int)v;
			else
				c->ro.max_stacks = v;
			break;
		case OPT_FAIL_IF:
			if (!c->diff)
				return bad(c, "%s: only ignis diff has --fail-if", optarg);
			if (c->nr_gates >= MAX_ARGS)
				return bad(c, "too many %s options (256 at most)", "--fail-if");
			if (diff_gate_parse(optarg, &c->gates[c->nr_gates++]))
				return bad(c,
					   "--fail-if '%s': give [self:|total:]FUNCTION>+N%% or "
					   "FUNCTION<-N%% (e.g. 'hot_a>+5%%')",
					   optarg);
			break;
		case OPT_Z:
			if (parse_double(optarg, &c->dopts.z_min))
				return bad(c, "--z %s: not a number of standard errors", optarg);
			break;
		case OPT_MIN_CHANGE:
			if (parse_double(optarg, &c->dopts.min_points))
				return bad(c, "--min-change %s: not a number of points", optarg);
			break;
		case 'h':
			usage(c, stdout);
			return 0;
		case ':':
			return bad(c, "option %s needs a value", argv[optind - 1]);
		default:
			return bad(c, "unknown option %s", argv[optind - 1]);
		}
		if (ret)
			return ret;
	}
	*first_path = optind;
	return -1;
}

/* The output folder the agent is configured with. Returns 0 or an exit status. */
static int configured_dir(struct cli *c)
{
	struct agent_config cfg;
	char *argv[4] = { "ignis", NULL, NULL, NULL };
	const char *file = c->config;
	int argc = 1, ret = 0;

	if (c->dir)
		return 0;
	if (!file && !getenv("IGNIS_CONFIG") && !access(SYSTEM_CONFIG, R_OK))
		file = SYSTEM_CONFIG;
	if (file) {
		argv[argc++] = "--config";
		argv[argc++] = (char *)file;
	}
	config_init(&cfg);
	if (config_load(&cfg, argc, argv, environ, stderr)) {
		fprintf(stderr, "ignis: fix the configuration, or name the folder with --dir\n");
		ret = 2;
	} else {
		c->out_dir = strdup(cfg.output_dir ? cfg.output_dir : DEFAULT_OUTPUT_DIR);
		c->dir = c->out_dir;
		if (!c->dir)
			ret = 1;
	}
	config_fini(&cfg);
	return ret;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* --since/--until/--last into sel. Returns -1 to go on, else an exit status. */
static int time_selection(const struct cli *c, struct report_select *sel)
{
	uint64_t now = now_ns(), d;

	if (c->last && c->since)
		return bad(c, "%s", "give --last or --since, not both");
	if (c->last) {
		if (report_parse_duration(c->last, &d))
			return bad(c, "--last %s: give a duration such as 15m, 2h or 1d", c->last);
		sel->since_ns = d < now ? now - d : 0;
	}
	if (c->since && report_parse_time(c->since, now, &sel->since_ns))
		return bad(c,
			   "--since %s: give a time such as 2026-12-02T06:00:00Z, '2026-12-02 "
			   "06:00', @1796191200 or 15m (ago)",
			   c->since);
	if (c->until && report_parse_time(c->until, now, &sel->until_ns))
		return bad(c, "--until %s: give a time such as 2026-12-02T07:00:00Z or 5m (ago)",
			   c->until);
	if (sel->until_ns && sel->since_ns >= sel->until_ns)
		return bad(c, "%s", "--since is not before --until: nothing to select");
	return -1;
}

static FILE *open_output(const struct cli *c)
{
	FILE *f;

	if (!c->output || !strcmp(c->output, "-")) {
		if (c->format == FMT_PPROF && isatty(STDOUT_FILENO)) {
			fprintf(stderr, "ignis report: pprof is binary: write it with -o FILE or "
					"into a pipe\n");
			return NULL;
		}
		return stdout;
	}
	f = fopen(c->output, "w");
	if (!f)
		fprintf(stderr, "ignis: %s: %s\n", c->output, strerror(errno));
	return f;
}

static int close_output(const struct cli *c, FILE *f, int err)
{
	if (f == stdout) {
		if (fflush(f) && !err)
			err = -errno;
	} else if (fclose(f) && !err) {
		err = -errno;
	}
	if (err) {
		fprintf(stderr, "ignis: cannot write %s: %s\n",
			c->output ? c->output : "the output", strerror(-err));
		return 1;
	}
	if (f != stdout)
		fprintf(stderr, "ignis: wrote %s\n", c->output);
	return 0;
}

static int write_pprof(FILE *out, const struct profile *p)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	int err = pprof_encode(p, 6, &buf, &len);

	if (!err && fwrite(buf, 1, len, out) != len)
		err = -EIO;
	free(buf);
	return err;
}

static void say_stats(const struct cli *c, const struct report_load_stats *st)
{
	if (st->bad || st->foreign)
		fprintf(stderr,
			"ignis %s: %zu file%s skipped (%zu unreadable or corrupt, %zu not CPU "
			"profiles)\n",
			c->diff ? "diff" : "report", st->bad + st->foreign,
			st->bad + st->foreign == 1 ? "" : "s", st->bad, st->foreign);
}

static void cli_init(struct cli *c, bool diff)
{
	memset(c, 0, sizeof(*c));
	c->diff = diff;
	c->ro.top = 20;
	c->ro.paths = 5;
	c->ro.max_stacks = 20000;
	c->dopts = (struct diff_opts){ .z_min = 4, .min_points = 0.5, .top = 20 };
}

static struct report *new_report(const struct cli *c)
{
	struct report_filter f = { .pids = c->pids,
				   .nr_pids = c->nr_pids,
				   .comms = c->comms,
				   .nr_comms = c->nr_comms,
				   .services = c->services,
				   .nr_services = c->nr_services,
				   .labels = c->labels,
				   .nr_labels = c->nr_labels };
	struct report *r = report__new(c->type, &f);

	if (!r)
		fprintf(stderr, "ignis: out of memory\n");
	return r;
}

int report_main(int argc, char **argv)
{
	struct report_select sel = { 0 };
	struct report_load_stats st = { 0 };
	char *default_path[1];
	struct report *r = NULL;
	struct cli c;
	FILE *out = NULL;
	int first, ret, err;

	cli_init(&c, false);
	ret = parse(&c, argc, argv, &first);
	if (ret < 0)
		ret = time_selection(&c, &sel);
	if (ret < 0 && first == argc)
		ret = configured_dir(&c) ?: -1;
	if (ret >= 0)
		goto out;
	sel.hosts = c.hosts;
	sel.nr_hosts = c.nr_hosts;
	ret = 1;
	r = new_report(&c);
	if (!r)
		goto out;
	if (c.format == FMT_PPROF) {
		struct profile_opts po = { .types = c.type == REPORT_CPU ? PROFILE_CPU :
									   PROFILE_OFFCPU };

		r->merged = profile__new(&po);
		if (!r->merged)
			goto out;
	}
	default_path[0] = (char *)c.dir;
	err = first < argc ?
		      report_load(r, argv + first, (size_t)(argc - first), &sel, 0, stderr, &st) :
		      report_load(r, default_path, 1, &sel, 0, stderr, &st);
	if (err) {
		if (err == -ENOENT && first == argc)
			fprintf(stderr,
				"ignis report: no profiles yet: run the agent (it writes "
				"to %s), or give a folder or files\n",
				c.dir);
		goto out;
	}
	say_stats(&c, &st);
	if (!r->nr_windows) {
		fprintf(stderr,
			"ignis report: no profiles selected (%zu files, %zu outside the "
			"selection)\n",
			st.files, st.outside);
		goto out;
	}
	report__sort(r);
	c.ro.stats = &st;
	out = open_output(&c);
	if (!out)
		goto out;
	switch (c.format) {
	case FMT_TEXT:
	case FMT_MD:
		err = report_render_text(out, r, &c.ro, c.format == FMT_MD);
		break;
	case FMT_HTML:
		err = report_render_html(out, r, &c.ro);
		break;
	case FMT_FOLDED:
		err = report_render_folded(out, r);
		break;
	case FMT_PPROF:
		err = profile__comment(r->merged, "ignis report: windows merged");
		if (!err)
			err = write_pprof(out, r->merged);
		break;
	}
	ret = close_output(&c, out, err);
out:
	if (r)
		profile__free(r->merged);
	report__free(r);
	free(c.out_dir);
	return ret;
}

/* Split a diff side into paths and a time range. paths[] points into copy. Returns -1 to go
 * on, else an exit status. */
static int parse_side(struct cli *c, char *arg, char **paths, size_t *nr, struct report_select *sel)
{
	char *dots = strstr(arg, ".."), *tok, *save = NULL;
	struct stat sb;
	uint64_t now = now_ns();
	int ret;

	*nr = 0;
	if (dots && stat(arg, &sb)) {
		*dots = '\0';
		if ((arg[0] && report_parse_time(arg, now, &sel->since_ns)) ||
		    (dots[2] && report_parse_time(dots + 2, now, &sel->until_ns)))
			return bad(c, "%s: a range is SINCE..UNTIL, times as for --since", arg);
		if (sel->until_ns && sel->since_ns >= sel->until_ns)
			return bad(c, "%s: the range is empty", arg);
		ret = configured_dir(c);
		if (ret)
			return ret;
		paths[(*nr)++] = (char *)c->dir;
		return -1;
	}
	for (tok = strtok_r(arg, ",", &save); tok && *nr < MAX_ARGS;
	     tok = strtok_r(NULL, ",", &save))
		paths[(*nr)++] = tok;
	return *nr ? -1 : bad(c, "%s: no files", arg);
}

int diff_main(int argc, char **argv)
{
	struct report_load_stats st = { 0 };
	struct report *r = NULL;
	char *paths[2][MAX_ARGS], *copy[2] = { NULL, NULL };
	size_t nr[2];
	struct cli c;
	FILE *out = NULL;
	int first, ret, err = 0, side, tripped = 0;
	size_t before;

	cli_init(&c, true);
	ret = parse(&c, argc, argv, &first);
	if (ret < 0 && argc - first != 2)
		ret = bad(&c, "%s", "give two sets of profiles: BASE NEW");
	if (ret >= 0)
		goto out;
	c.dopts.base_label = argv[first];
	c.dopts.new_label = argv[first + 1];
	r = new_report(&c);
	ret = 1;
	if (!r)
		goto out;
	for (side = 0; side < 2; side++) {
		struct report_select sel = { .hosts = c.hosts, .nr_hosts = c.nr_hosts };

		ret = time_selection(&c, &sel);
		copy[side] = strdup(argv[first + side]);
		if (ret < 0 && copy[side])
			ret = parse_side(&c, copy[side], paths[side], &nr[side], &sel);
		if (ret >= 0 || !copy[side])
			goto out;
		ret = 1;
		before = st.windows;
		err = report_load(r, paths[side], nr[side], &sel, (uint32_t)side, stderr, &st);
		if (err)
			goto out;
		/* A diff against nothing would pass every --fail-if: refuse it. */
		if (st.windows == before) {
			fprintf(stderr, "ignis diff: %s (%s) selects no profiles\n",
				side ? "NEW" : "BASE", argv[first + side]);
			goto out;
		}
	}
	say_stats(&c, &st);
	report__sort(r);
	out = open_output(&c);
	if (!out)
		goto out;
	if (c.format == FMT_HTML)
		err = diff_render_html(out, r, &c.dopts, &c.ro);
	else
		err = diff_render_text(out, r, &c.dopts, &c.ro, c.format == FMT_MD);
	ret = close_output(&c, out, err);
	if (!ret && c.nr_gates) {
		tripped = diff_gates_check(r, &c.dopts, c.gates, c.nr_gates, stderr);
		if (tripped < 0)
			ret = 1;
		else if (tripped)
			ret = 3;
	}
out:
	report__free(r);
	free(copy[0]);
	free(copy[1]);
	free(c.out_dir);
	return ret;
}
