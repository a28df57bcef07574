// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit.h"

#include "../../agent/operate/config.h"
#include "../../agent/operate/options.h"
#include "../../agent/profile/targets.h"
#include "../../agent/ship/encoder.h"

static int parse(struct agent_config *cfg, const char *line, char *err, size_t size)
{
	char copy[512], *argv[32], *tok, *save = NULL;
	int argc = 0, ret;
	FILE *f = fmemopen(err, size, "w");

	snprintf(copy, sizeof(copy), "ignis %s", line);
	for (tok = strtok_r(copy, " ", &save); tok && argc < 31; tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	config_init(cfg);
	ret = config_parse_args(cfg, argc, argv, f);
	fclose(f);
	return ret;
}

static void test_defaults_and_values(void **state)
{
	struct agent_config cfg;
	char err[256] = "";

	(void)state;
	assert_int_equal(parse(&cfg, "", err, sizeof(err)), 0);
	assert_int_equal(cfg.frequency_hz, 100);
	assert_int_equal(cfg.interval_sec, 10);
	assert_true(cfg.kernel_stacks);
	assert_null(cfg.output_dir);
	assert_int_equal(cfg.symbol_cache_idle_sec, 300);
	config_fini(&cfg);

	assert_int_equal(parse(&cfg,
			       "--frequency 997 --interval 2m --duration 30 --pid 12 "
			       "--pid 34 --no-kernel --top 5 --output-dir /tmp/x "
			       "--output-max-bytes 10MiB --output-max-age 2d --log-level debug "
			       "--event cycles --symbol-cache-size 1G --max-stacks 4096 "
			       "--symbol-cache-idle 1h",
			       err, sizeof(err)),
			 0);
	assert_int_equal(cfg.frequency_hz, 997);
	assert_int_equal(cfg.interval_sec, 120);
	assert_int_equal(cfg.duration_sec, 30);
	assert_int_equal(cfg.nr_pids, 2);
	assert_int_equal(cfg.pids[1], 34);
	assert_false(cfg.kernel_stacks);
	assert_int_equal(cfg.top, 5);
	assert_string_equal(cfg.output_dir, "/tmp/x");
	assert_int_equal(cfg.output_max_bytes, 10 << 20);
	assert_int_equal(cfg.output_max_age_sec, 2 * 86400);
	assert_int_equal(cfg.log_level, LOG_LEVEL_DEBUG);
	assert_int_equal(cfg.event, SAMPLER_EVENT_CYCLES);
	assert_int_equal(cfg.symbol_cache_bytes, 1ULL << 30);
	assert_int_equal(cfg.max_stacks, 4096);
	assert_int_equal(cfg.symbol_cache_idle_sec, 3600);
	config_fini(&cfg);
	assert_int_equal(parse(&cfg, "--symbol-cache-idle 0", err, sizeof(err)), 0);
	assert_int_equal(cfg.symbol_cache_idle_sec, 0); /* never */
	config_fini(&cfg);

	/* The server's protocol: Pyroscope unless said. */
	assert_int_equal(parse(&cfg, "", err, sizeof(err)), 0);
	assert_int_equal(cfg.server_protocol, SERVER_PYROSCOPE);
	config_fini(&cfg);
	assert_int_equal(parse(&cfg, "--server-protocol parca", err, sizeof(err)), 0);
	assert_int_equal(cfg.server_protocol, SERVER_PARCA);
	config_fini(&cfg);
	assert_int_equal(parse(&cfg, "--server-protocol otlp", err, sizeof(err)), 0);
	assert_int_equal(cfg.server_protocol, SERVER_OTLP);
	config_fini(&cfg);
	assert_int_not_equal(parse(&cfg, "--server-protocol grpc", err, sizeof(err)), 0);
	assert_non_null(strstr(err, "must be pyroscope, parca or otlp"));
	config_fini(&cfg);
}

static void test_errors(void **state)
{
	static const struct {
		const char *args;
		const char *message;
	} bad[] = {
		{ "--frequency 0", "--frequency 0: must be a whole number of Hz" },
		{ "--frequency 100000", "from 1 to 10000" },
		{ "--frequency 1e3", "--frequency 1e3" },
		{ "--frequency -5", "must be" },
		{ "--interval 0", "--interval 0: must be a duration" },
		{ "--interval 5x", "must be a duration" },
		{ "--pid abc", "--pid abc: must be a process id" },
		{ "--pid 0", "must be a process id" },
		{ "--log-level loud", "must be one of error, warn, info, debug" },
		{ "--event branches", "must be cpu-clock or cycles" },
		{ "--output-max-bytes 10", "at least 1MiB" },
		{ "--output-max-age 5s", "at least 1m" },
		{ "--max-stacks 5", "1024 to 4194304" },
		{ "--symbol-cache-idle 8d", "--symbol-cache-idle 8d: must be a duration up to 7d" },
		{ "--symbol-cache-idle soon", "must be a duration up to 7d" },
		{ "--bogus", "--bogus: unknown option" },
		{ "--frequency", "--frequency: missing value" },
		{ "--no-kernel=yes", "--no-kernel takes no value" },
		{ "extra", "extra: unexpected argument" },
	};
	struct agent_config cfg;
	char err[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(err, 0, sizeof(err));
		assert_int_equal(parse(&cfg, bad[i].args, err, sizeof(err)), -EINVAL);
		if (!strstr(err, bad[i].message))
			fail_msg("%s: message \"%s\" lacks \"%s\"", bad[i].args, err,
				 bad[i].message);
		/* One line. */
		assert_ptr_equal(strchr(err, '\n'), err + strlen(err) - 1);
		config_fini(&cfg);
	}
}

static void test_sizes_and_durations(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(parse_size("4096", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(parse_size("2KiB", &v), 0);
	assert_int_equal(v, 2048);
	assert_int_equal(parse_size("3MB", &v), 0);
	assert_int_equal(v, 3000000);
	assert_int_equal(parse_size("1TiB", &v), 0);
	assert_int_equal(v, 1ULL << 40);
	assert_int_equal(parse_size("99999999999999999999", &v), -EINVAL);
	assert_int_equal(parse_size("20000000TiB", &v), -EINVAL);
	assert_int_equal(parse_size("1 MiB", &v), -EINVAL);
	assert_int_equal(parse_size("", &v), -EINVAL);
	assert_int_equal(parse_duration("90", &v), 0);
	assert_int_equal(v, 90);
	assert_int_equal(parse_duration("3h", &v), 0);
	assert_int_equal(v, 10800);
	assert_int_equal(parse_duration("1w", &v), -EINVAL);
	assert_int_equal(parse_duration("-1s", &v), -EINVAL);
}

/* ---- Sources and precedence ---------------------------------------------------------- */

static char *write_yaml(const char *text)
{
	static char path[64];
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "/tmp/ignis-config-XXXXXX.yaml");
	fd = mkstemps(path, 5);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	return path;
}

static int load(struct agent_config *cfg, const char *args, char **envp, char *err, size_t size)
{
	char copy[512], *argv[32], *tok, *save = NULL;
	int argc = 0, ret;
	FILE *f = fmemopen(err, size, "w");

	snprintf(copy, sizeof(copy), "ignis %s", args);
	for (tok = strtok_r(copy, " ", &save); tok && argc < 31; tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	config_init(cfg);
	ret = config_load(cfg, argc, argv, envp, f);
	fclose(f);
	return ret;
}

static void test_precedence(void **state)
{
	char *path = write_yaml("# the file\nfrequency: 250\ninterval: 30\npid: [1, 2]\n"
				"no_kernel: yes\noutput_dir: /from/file\ntop: 3\n");
	char cfg_env[128], err[256] = "", *out = NULL;
	char *envp[] = { cfg_env,	"IGNIS_INTERVAL=20", "IGNIS_PID=7,8,9",
			 "IGNIS_TOP=4", "NODE_NAME=node-a",  "UNRELATED=1",
			 NULL };
	struct agent_config cfg;
	size_t len = 0;
	FILE *f;

	(void)state;
	snprintf(cfg_env, sizeof(cfg_env), "IGNIS_CONFIG=%s", path);
	assert_int_equal(load(&cfg, "--top 5 --pid 42", envp, err, sizeof(err)), 0);
	assert_int_equal(cfg.frequency_hz, 250); /* file */
	assert_int_equal(cfg.interval_sec, 20);	 /* environment over file */
	assert_int_equal(cfg.top, 5);		 /* flag over environment */
	assert_int_equal(cfg.nr_pids, 1);	 /* a list comes whole from one source */
	assert_int_equal(cfg.pids[0], 42);
	assert_false(cfg.kernel_stacks);
	assert_string_equal(cfg.output_dir, "/from/file");
	assert_string_equal(cfg.node_name, "node-a"); /* third-party variable */
	assert_string_equal(cfg.config_file, path);

	/* --print-config says where each value came from. */
	f = open_memstream(&out, &len);
	config_print(&cfg, f);
	fclose(f);
	assert_non_null(strstr(out, "frequency: \"250\"  # "));
	assert_non_null(strstr(out, ":2: frequency\n"));
	assert_non_null(strstr(out, "interval: \"20\"  # environment IGNIS_INTERVAL\n"));
	assert_non_null(strstr(out, "top: \"5\"  # --top\n"));
	assert_non_null(strstr(out, "pid: [\"42\"]  # --pid\n"));
	assert_non_null(strstr(out, "node_name: \"node-a\"  # environment NODE_NAME\n"));
	assert_non_null(strstr(out, "# duration: 0  (default)\n"));
	free(out);
	config_fini(&cfg);

	/* Environment lists are comma-separated; IGNIS_ wins over the third-party name. */
	envp[0] = "IGNIS_NODE_NAME=node-b";
	assert_int_equal(load(&cfg, "", envp, err, sizeof(err)), 0);
	assert_int_equal(cfg.nr_pids, 3);
	assert_int_equal(cfg.pids[2], 9);
	assert_string_equal(cfg.node_name, "node-b");
	config_fini(&cfg);
	unlink(path);
}

/* --label names as Pyroscope takes them, from the command line and the file: OTel-style dots
 * taken (sent as '_'), what the server refuses refused with the fix, and names that are one
 * label once stored refused as given twice. */
static void test_label_names(void **state)
{
	static const struct {
		const char *args;
		const char *message; /* NULL: accepted */
	} cases[] = {
		{ "--label service.version=1.2", NULL },
		{ "--label service.version=1.2 --label env=ci", NULL },
		{ "--label team-name=core", "e.g. 'team_name'" },
		{ "--label 9lives=x", "e.g. '_9lives'" },
		{ "--label service.name=x", "use --service-name-rule" },
		{ "--label a.b=1 --label a_b=2", "'a.b' and 'a_b' are both a_b in Pyroscope" },
		{ "--label a.b=1 --label a.b=1", "'a.b' is given twice" },
	};
	char *path = write_yaml("label: [deployment.environment=prod, region=eu]\n");
	char cfg_env[128], err[512];
	char *envp[] = { cfg_env, NULL };
	struct agent_config cfg;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		memset(err, 0, sizeof(err));
		if (!cases[i].message) {
			assert_int_equal(parse(&cfg, cases[i].args, err, sizeof(err)), 0);
			assert_string_equal(cfg.labels[0], "service.version=1.2");
		} else {
			assert_int_equal(parse(&cfg, cases[i].args, err, sizeof(err)), -EINVAL);
			if (!strstr(err, cases[i].message))
				fail_msg("%s: message \"%s\" lacks \"%s\"", cases[i].args, err,
					 cases[i].message);
			assert_ptr_equal(strchr(err, '\n'), err + strlen(err) - 1);
		}
		config_fini(&cfg);
	}
	/* Sample labels by their OTel name too, kept as Pyroscope stores them. */
	assert_int_equal(parse(&cfg,
			       "--sample-labels thread.name --sample-labels thread_name "
			       "--sample-labels comm",
			       err, sizeof(err)),
			 0);
	assert_int_equal(cfg.nr_sample_labels, 2);
	assert_string_equal(cfg.sample_labels[0], "thread_name");
	assert_string_equal(cfg.sample_labels[1], "comm");
	config_fini(&cfg);
	assert_int_equal(parse(&cfg, "--sample-labels thread-name", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "must be comm or thread_name"));
	config_fini(&cfg);
	assert_int_equal(parse(&cfg, "--sample-labels pid", err, sizeof(err)), -EINVAL);
	config_fini(&cfg);

	snprintf(cfg_env, sizeof(cfg_env), "IGNIS_CONFIG=%s", path);
	assert_int_equal(load(&cfg, "", envp, err, sizeof(err)), 0);
	assert_int_equal(cfg.nr_labels, 2);
	assert_string_equal(cfg.labels[0], "deployment.environment=prod");
	config_fini(&cfg);
	unlink(path);
	path = write_yaml("label: [k8s/app=x]\n");
	snprintf(cfg_env, sizeof(cfg_env), "IGNIS_CONFIG=%s", path);
	memset(err, 0, sizeof(err));
	assert_int_equal(load(&cfg, "", envp, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "e.g. 'k8s_app'"));
	config_fini(&cfg);
	unlink(path);
}

static void test_config_errors(void **state)
{
	static const struct {
		const char *yaml; /* NULL: use env */
		const char *env;
		const char *message;
	} bad[] = {
		{ "frequency: 10\nbogus_key: 1\n", NULL, ":2: bogus_key: unknown setting" },
		{ "output-dir: /x\n", NULL, ":1: output-dir: unknown setting" },
		{ "frequency: [1, 2]\n", NULL,
		  ":1: frequency: expected a single value, not a list" },
		{ "frequency:\n", NULL, ":1: frequency: needs a value" },
		{ "interval: 0\n", NULL, ":1: interval: 0: must be a duration" },
		{ "frequency: 10\nfrequency: 20\n", NULL, ":2: frequency: given twice" },
		{ "no_kernel: maybe\n", NULL, "no_kernel: maybe: must be true or false" },
		{ "pid: {a: 1}\n", NULL, "pid: expected a value or a list, not a mapping" },
		{ "- 1\n- 2\n", NULL, ":1: expected settings (key: value), not a list" },
		{ "frequency: \"unterminated\n", NULL, "not valid YAML" },
		{ "print_config: true\n", NULL, "print_config: unknown setting" },
		{ "a: &x 1\nb: *x\n", NULL, "unknown setting" },
		{ NULL, "IGNIS_FREQENCY=1", "environment IGNIS_FREQENCY: unknown setting" },
		{ NULL, "IGNIS_FREQUENCY=fast",
		  "environment IGNIS_FREQUENCY: fast: must be a whole" },
		{ NULL, "IGNIS_PID=1,,2", "environment IGNIS_PID: empty item" },
		{ NULL, "IGNIS_HELP=1",
		  "environment IGNIS_HELP: --help is a command-line action only" },
		{ NULL, "IGNIS_CONFIG=/nonexistent.yaml",
		  "--config /nonexistent.yaml: cannot read it" },
		{ NULL, "IGNIS_METRICS_ADDRESS=9400", "must be HOST:PORT" },
	};
	struct agent_config cfg;
	char err[512], *envp[2];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char args[128] = "", *path = NULL;

		envp[0] = NULL;
		envp[1] = NULL;
		if (bad[i].yaml) {
			path = write_yaml(bad[i].yaml);
			snprintf(args, sizeof(args), "--config %s", path);
		} else {
			envp[0] = (char *)bad[i].env;
		}
		memset(err, 0, sizeof(err));
		assert_int_equal(load(&cfg, args, envp, err, sizeof(err)), -EINVAL);
		if (!strstr(err, bad[i].message))
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err, bad[i].message);
		if (path) {
			if (!strstr(err, path) && !strstr(bad[i].message, "YAML"))
				fail_msg("case %zu: \"%s\" does not name the file", i, err);
			unlink(path);
		}
		config_fini(&cfg);
	}
}

/* ---- Settings that only make sense together (config_check) --------------------------- */

struct check_files {
	char dir[32];
	char pw[48], empty[48], lines[48], long_pw[48], cert[48];
};

static void make_file(char *path, size_t size, const char *dir, const char *name, const char *text,
		      size_t repeat)
{
	FILE *f;

	snprintf(path, size, "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	while (repeat--)
		fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, 0600), 0);
}

static int files_setup(void **state)
{
	struct check_files *cf = calloc(1, sizeof(*cf));

	assert_non_null(cf);
	snprintf(cf->dir, sizeof(cf->dir), "/tmp/ignis-check-XXXXXX");
	assert_non_null(mkdtemp(cf->dir));
	make_file(cf->pw, sizeof(cf->pw), cf->dir, "pw", "secret\n", 1);
	make_file(cf->empty, sizeof(cf->empty), cf->dir, "empty", "", 1);
	make_file(cf->lines, sizeof(cf->lines), cf->dir, "lines", "first\r\nsecond\n", 1);
	make_file(cf->long_pw, sizeof(cf->long_pw), cf->dir, "long", "0123456789abcdef", 257);
	make_file(cf->cert, sizeof(cf->cert), cf->dir, "cert", "PEM\n", 1);
	*state = cf;
	return 0;
}

static int files_teardown(void **state)
{
	struct check_files *cf = *state;
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", cf->dir);
	assert_int_equal(system(cmd), 0);
	free(cf);
	return 0;
}

/* Load args (with env, may be NULL), then config_check(): its result, its output in out. */
static int check(struct agent_config *cfg, const char *args, char *env, char *out, size_t size)
{
	char *envp[] = { env, NULL };
	char err[512] = "";
	FILE *f;
	int ret;

	assert_int_equal(load(cfg, args, envp, err, sizeof(err)), 0);
	memset(out, 0, size);
	f = fmemopen(out, size, "w");
	ret = config_check(cfg, f);
	fclose(f);
	return ret;
}

static void test_check_combinations(void **state)
{
	struct check_files *cf = *state;
	struct {
		char args[400];
		char *env;
		char line[400]; /* the whole output */
	} bad[20];
	struct agent_config cfg;
	char out[512];
	size_t i, n = 0;

#define BAD(env_, line_, ...)                                            \
	do {                                                             \
		snprintf(bad[n].args, sizeof(bad[n].args), __VA_ARGS__); \
		bad[n].env = env_;                                       \
		snprintf(bad[n].line, sizeof(bad[n].line), "%s", line_); \
		n++;                                                     \
	} while (0)
	BAD(NULL, "ignis: --tls-ca-file /nonexistent: cannot read it: No such file or directory\n",
	    "--server-url https://x:1 --tls-ca-file /nonexistent");
	BAD(NULL,
	    "ignis: --tls-cert-file /nonexistent: cannot read it: No such file or directory\n",
	    "--server-url https://x:1 --tls-cert-file /nonexistent --tls-key-file %s", cf->cert);
	BAD(NULL, "ignis: --tls-key-file /nonexistent: cannot read it: No such file or directory\n",
	    "--server-url https://x:1 --tls-cert-file %s --tls-key-file /nonexistent", cf->cert);
	BAD(NULL,
	    "ignis: --bearer-token-file /nonexistent: cannot read it: No such file or directory\n",
	    "--server-url https://x:1 --bearer-token-file /nonexistent");
	BAD(NULL, "ignis: --tls-cert-file and --tls-key-file go together\n",
	    "--server-url https://x:1 --tls-cert-file %s", cf->cert);
	BAD(NULL, "ignis: --tls-cert-file and --tls-key-file go together\n",
	    "--server-url https://x:1 --tls-key-file %s", cf->cert);
	BAD(NULL, "ignis: a basic auth password needs --basic-auth-user\n",
	    "--server-url https://x:1 --basic-auth-password-file %s", cf->pw);
	BAD("IGNIS_BASIC_AUTH_PASSWORD=x", "ignis: a basic auth password needs --basic-auth-user\n",
	    "--server-url https://x:1");
	BAD("IGNIS_BASIC_AUTH_PASSWORD=x",
	    "ignis: give the basic auth password once: either --basic-auth-password-file or "
	    "basic_auth_password\n",
	    "--server-url https://x:1 --basic-auth-user u --basic-auth-password-file %s", cf->pw);
	BAD(NULL,
	    "ignis: --basic-auth-user needs a password: --basic-auth-password-file FILE or "
	    "IGNIS_BASIC_AUTH_PASSWORD\n",
	    "--server-url https://x:1 --basic-auth-user u");
	BAD(NULL, "ignis: choose basic auth or --bearer-token-file, not both\n",
	    "--server-url https://x:1 --basic-auth-user u --basic-auth-password-file %s "
	    "--bearer-token-file %s",
	    cf->pw, cf->cert);
	BAD(NULL, "ignis: TLS settings given, but --server-url http://x:1 is not https://\n",
	    "--server-url http://x:1 --tls-insecure-skip-verify");
	BAD(NULL, "ignis: TLS settings given, but --server-url http://x:1 is not https://\n",
	    "--server-url http://x:1 --tls-ca-file %s", cf->cert);
	BAD(NULL, "ignis: TLS settings given, but --server-url http://x:1 is not https://\n",
	    "--server-url http://x:1 --tls-cert-file %s --tls-key-file %s", cf->cert, cf->cert);
	BAD(NULL,
	    "ignis: --basic-auth-password-file /nonexistent: cannot read it: No such file or "
	    "directory\n",
	    "--server-url https://x:1 --basic-auth-user u --basic-auth-password-file /nonexistent");
	BAD(NULL, "ignis: --pyroscope-api ingest is Pyroscope's: not with --server-protocol otlp\n",
	    "--server-url http://x:1 --server-protocol otlp --pyroscope-api ingest");
#undef BAD
	for (i = 0; i < n; i++) {
		if (check(&cfg, bad[i].args, bad[i].env, out, sizeof(out)) != -EINVAL)
			fail_msg("%s: accepted", bad[i].args);
		if (strcmp(out, bad[i].line))
			fail_msg("%s: \"%s\", not \"%s\"", bad[i].args, out, bad[i].line);
		config_fini(&cfg);
	}

	/* Password files that hold no password: empty, longer than 4096 bytes. */
	for (i = 0; i < 2; i++) {
		const char *file = i ? cf->long_pw : cf->empty;

		snprintf(bad[0].args, sizeof(bad[0].args),
			 "--server-url https://x:1 --basic-auth-user u "
			 "--basic-auth-password-file %s",
			 file);
		snprintf(bad[0].line, sizeof(bad[0].line),
			 "ignis: --basic-auth-password-file %s%s\n", file,
			 i ? ": longer than 4096 bytes" : " is empty");
		assert_int_equal(check(&cfg, bad[0].args, NULL, out, sizeof(out)), -EINVAL);
		assert_string_equal(out, bad[0].line);
		assert_null(cfg.basic_auth_password);
		config_fini(&cfg);
	}
}

static void test_check_accepts_and_reads_the_password(void **state)
{
	struct check_files *cf = *state;
	struct agent_config cfg;
	char args[400], out[512];

	/* Without --server-url the server's settings are not checked (as before). */
	snprintf(args, sizeof(args), "--tls-cert-file %s --basic-auth-user u", cf->cert);
	assert_int_equal(check(&cfg, args, NULL, out, sizeof(out)), 0);
	assert_string_equal(out, "");
	config_fini(&cfg);

	/* Everything at once, the password's first line read from its file. */
	snprintf(args, sizeof(args),
		 "--server-url https://x:1 --tls-ca-file %s --tls-cert-file %s --tls-key-file %s "
		 "--basic-auth-user u --basic-auth-password-file %s",
		 cf->cert, cf->cert, cf->cert, cf->lines);
	assert_int_equal(check(&cfg, args, NULL, out, sizeof(out)), 0);
	assert_string_equal(out, "");
	assert_string_equal(cfg.basic_auth_password, "first");
	config_fini(&cfg);

	/* A password from the environment stays as given; a bearer token alone is fine. */
	assert_int_equal(check(&cfg, "--server-url http://x:1 --basic-auth-user u",
			       "IGNIS_BASIC_AUTH_PASSWORD=from-env", out, sizeof(out)),
			 0);
	assert_string_equal(cfg.basic_auth_password, "from-env");
	config_fini(&cfg);
	snprintf(args, sizeof(args), "--server-url https://x:1 --bearer-token-file %s", cf->cert);
	assert_int_equal(check(&cfg, args, NULL, out, sizeof(out)), 0);
	assert_null(cfg.basic_auth_password);
	config_fini(&cfg);
}

/* config_check() with stderr (where pr_warn writes) caught in out. */
static int check_warnings(struct agent_config *cfg, const char *args, char *out, size_t size)
{
	char path[] = "/tmp/ignis-stderr-XXXXXX", text[512];
	int fd = mkstemp(path), saved = dup(2), ret;
	ssize_t n;

	assert_true(fd >= 0 && saved >= 0);
	fflush(stderr);
	assert_int_equal(dup2(fd, 2), 2);
	ret = check(cfg, args, NULL, text, sizeof(text));
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	memset(out, 0, size);
	n = pread(fd, out, size - 1, 0);
	assert_true(n >= 0);
	close(fd);
	unlink(path);
	return ret;
}

static void test_check_warns_about_unsafe_settings(void **state)
{
	struct check_files *cf = *state;
	struct agent_config cfg;
	char args[400], out[2048];

	snprintf(args, sizeof(args), "--server-url https://x:1 --bearer-token-file %s", cf->cert);
	assert_int_equal(check_warnings(&cfg, args, out, sizeof(out)), 0);
	assert_string_equal(out, "");
	config_fini(&cfg);

	assert_int_equal(check_warnings(&cfg, "--server-url https://x:1 --tls-insecure-skip-verify",
					out, sizeof(out)),
			 0);
	assert_non_null(strstr(out, "TLS VERIFICATION IS OFF (--tls-insecure-skip-verify): "
				    "anyone between this host and https://x:1 can read"));
	config_fini(&cfg);

	/* Credentials over http://, the password in a file every user can read. */
	assert_int_equal(chmod(cf->pw, 0644), 0);
	snprintf(args, sizeof(args),
		 "--server-url http://x:1 --basic-auth-user u --basic-auth-password-file %s",
		 cf->pw);
	assert_int_equal(check_warnings(&cfg, args, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "is readable by every user: make it 0600 or 0640"));
	assert_non_null(strstr(out, "credentials go to http://x:1 in clear text: use https://"));
	assert_string_equal(cfg.basic_auth_password, "secret");
	config_fini(&cfg);
	snprintf(args, sizeof(args), "--server-url http://x:1 --bearer-token-file %s", cf->cert);
	assert_int_equal(check_warnings(&cfg, args, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "credentials go to http://x:1 in clear text"));
	config_fini(&cfg);
}

static void test_reference_lists_every_setting(void **state)
{
	char *out = NULL;
	size_t len = 0, nr = option_count(), i;
	char needle[96];
	FILE *f = open_memstream(&out, &len);

	(void)state;
	config_reference(f);
	fclose(f);
	for (i = 0; i < nr; i++) {
		const struct option_desc *t = option_at(i);

		snprintf(needle, sizeof(needle), "`--%s", t->name);
		if ((t->flags & OPT_HIDDEN) ? strstr(out, needle) != NULL : !strstr(out, needle))
			fail_msg("reference and --%s disagree", t->name);
	}
	assert_null(option_at(nr));
	free(out);
}

/* --kubernetes names pods by the node it runs on: without the node's name, config_check()
 * says how to give it; NODE_NAME from the downward API does. */
static void test_check_kubernetes_needs_the_node(void **state)
{
	struct agent_config cfg;
	char out[1024];

	(void)state;
	assert_int_equal(check(&cfg, "--kubernetes", NULL, out, sizeof(out)), -EINVAL);
	assert_string_equal(out, "ignis: --kubernetes needs this node's name: set NODE_NAME "
				 "(from the downward API's spec.nodeName) or --node-name\n");
	config_fini(&cfg);
	assert_int_equal(check(&cfg, "--kubernetes", "NODE_NAME=node-7", out, sizeof(out)), 0);
	assert_string_equal(cfg.node_name, "node-7");
	config_fini(&cfg);
	assert_int_equal(check(&cfg, "--node-name n1", NULL, out, sizeof(out)), 0);
	config_fini(&cfg);
}

/* An action option does its thing on the stream it is given, and says it did. */
static void test_actions(void **state)
{
	struct agent_config cfg;
	char out[65536], err[512];
	FILE *f;

	(void)state;
	assert_int_equal(load(&cfg, "--version", NULL, err, sizeof(err)), 0);
	f = fmemopen(out, sizeof(out), "w");
	assert_true(config_act(&cfg, f));
	fclose(f);
	assert_int_equal(strncmp(out, "ignis ", 6), 0);
	config_fini(&cfg);
	assert_int_equal(load(&cfg, "--frequency 50", NULL, err, sizeof(err)), 0);
	memset(out, 0, sizeof(out));
	f = fmemopen(out, sizeof(out), "w");
	assert_false(config_act(&cfg, f));
	fclose(f);
	assert_string_equal(out, "");
	config_fini(&cfg);
}

/* /ingest's two extra series labels leave room for two fewer --label than the push API. */
static void test_ingest_label_count(void **state)
{
	char env[512] = "IGNIS_LABEL=", out[512];
	struct agent_config cfg;
	size_t n = strlen(env);
	int i;

	(void)state;
	for (i = 0; i < TARGET_MAX_STATIC - 2; i++)
		n += (size_t)snprintf(env + n, sizeof(env) - n, "%sl%d=v", i ? "," : "", i);
	assert_int_equal(check(&cfg, "--server-url http://x:1 --pyroscope-api ingest", env, out,
			       sizeof(out)),
			 0);
	config_fini(&cfg);
	snprintf(env + n, sizeof(env) - n, ",l%d=v", i);
	assert_int_equal(check(&cfg, "--server-url http://x:1", env, out, sizeof(out)), 0);
	config_fini(&cfg);
	assert_int_equal(check(&cfg, "--server-url http://x:1 --pyroscope-api ingest", env, out,
			       sizeof(out)),
			 -EINVAL);
	assert_non_null(strstr(out, "at most 20 --label fit in its 30 labels (21 given)"));
	config_fini(&cfg);
}

UNIT_MAIN("options", cmocka_unit_test(test_defaults_and_values), cmocka_unit_test(test_errors),
	  cmocka_unit_test(test_sizes_and_durations), cmocka_unit_test(test_precedence),
	  cmocka_unit_test(test_config_errors),
	  cmocka_unit_test_setup_teardown(test_check_combinations, files_setup, files_teardown),
	  cmocka_unit_test_setup_teardown(test_check_accepts_and_reads_the_password, files_setup,
					  files_teardown),
	  cmocka_unit_test_setup_teardown(test_check_warns_about_unsafe_settings, files_setup,
					  files_teardown),
	  cmocka_unit_test(test_reference_lists_every_setting),
	  cmocka_unit_test(test_check_kubernetes_needs_the_node), cmocka_unit_test(test_actions),
	  cmocka_unit_test(test_label_names), cmocka_unit_test(test_ingest_label_count))
