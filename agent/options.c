// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "options.h"
#include "options_internal.h"

/* Parse an unsigned decimal in [min, max]. */
int option_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* true/false, yes/no, on/off, 1/0 (YAML 1.1 and environment habits). */
static int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(yes); i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

struct unit {
	const char *suffix;
	uint64_t mult;
};

/* A decimal number followed by one of the units' suffixes, multiplied out, overflow-checked. */
static int parse_with_unit(const char *s, const struct unit *units, size_t nr, uint64_t *out)
{
	unsigned long long v;
	char *end;
	size_t i;

	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	for (i = 0; i < nr; i++) {
		if (strcmp(end, units[i].suffix))
			continue;
		if (v > UINT64_MAX / units[i].mult)
			return -EINVAL;
		*out = v * units[i].mult;
		return 0;
	}
	return -EINVAL;
}

int parse_size(const char *s, uint64_t *bytes)
{
	static const struct unit units[] = {
		{ "", 1 },
		{ "B", 1 },
		{ "K", 1ULL << 10 },
		{ "KB", 1000 },
		{ "KiB", 1ULL << 10 },
		{ "M", 1ULL << 20 },
		{ "MB", 1000000 },
		{ "MiB", 1ULL << 20 },
		{ "G", 1ULL << 30 },
		{ "GB", 1000000000 },
		{ "GiB", 1ULL << 30 },
		{ "T", 1ULL << 40 },
		{ "TB", 1000000000000ULL },
		{ "TiB", 1ULL << 40 },
	};

	return parse_with_unit(s, units, ARRAY_SIZE(units), bytes);
}

int parse_duration(const char *s, uint64_t *seconds)
{
	static const struct unit units[] = {
		{ "", 1 }, { "s", 1 }, { "m", 60 }, { "h", 3600 }, { "d", 86400 },
	};

	return parse_with_unit(s, units, ARRAY_SIZE(units), seconds);
}

int option_set_string(char **field, const char *value, char *why, size_t len)
{
	char *copy = strdup(value);

	if (!copy)
		return WHY("out of memory");
	free(*field);
	*field = copy;
	return 0;
}

int option_set_flag(bool *field, bool invert, const char *value, char *why, size_t len)
{
	bool v;

	if (parse_bool(value, &v))
		return WHY("must be true or false");
	*field = invert ? !v : v;
	return 0;
}

static int opt_frequency(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	uint64_t v;

	if (option_parse_uint(arg, 1, 10000, &v))
		return WHY("must be a whole number of Hz from 1 to 10000");
	cfg->frequency_hz = (unsigned int)v;
	return 0;
}

static int opt_interval(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	uint64_t v;

	if (parse_duration(arg, &v) || v < 1 || v > 3600)
		return WHY("must be a duration from 1s to 1h (e.g. 10, 10s, 1m)");
	cfg->interval_sec = (unsigned int)v;
	return 0;
}

static int opt_duration(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	uint64_t v;

	if (parse_duration(arg, &v) || v > UINT_MAX)
		return WHY("must be a duration (e.g. 30, 30s, 5m, 2h); 0 runs until stopped");
	cfg->duration_sec = (unsigned int)v;
	return 0;
}

static int opt_output_dir(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	if (!*arg)
		return WHY("must name a folder");
	return option_set_string(&cfg->output_dir, arg, why, len);
}

static int opt_output_max_bytes(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	uint64_t v;

	if (parse_size(arg, &v) || v < (1ULL << 20))
		return WHY("must be a size of at least 1MiB (e.g. 256MiB, 2G)");
	cfg->output_max_bytes = v;
	return 0;
}

static int opt_output_max_age(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	uint64_t v;

	if (parse_duration(arg, &v) || v < 60)
		return WHY("must be a duration of at least 1m (e.g. 72h, 7d)");
	cfg->output_max_age_sec = v;
	return 0;
}

static int opt_pid(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	uint32_t *pids;
	uint64_t v;

	if (option_parse_uint(arg, 1, 4194304, &v))
		return WHY("must be a process id (1 to 4194304)");
	if (cfg->nr_pids >= 4096)
		return WHY("is given too often (at most 4096 processes)");
	pids = reallocarray(cfg->pids, cfg->nr_pids + 1, sizeof(*pids));
	if (!pids)
		return WHY("out of memory");
	pids[cfg->nr_pids++] = (uint32_t)v;
	cfg->pids = pids;
	return 0;
}

static int opt_no_kernel(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	return option_set_flag(&cfg->kernel_stacks, true, arg, why, len);
}

static int opt_top(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	uint64_t v;

	if (option_parse_uint(arg, 0, 1000, &v))
		return WHY("must be a number of functions from 0 to 1000");
	cfg->top = (unsigned int)v;
	return 0;
}

static int opt_log_level(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	if (log_parse_level(arg, &cfg->log_level))
		return WHY("must be one of error, warn, info, debug");
	return 0;
}

static int opt_event(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	if (!strcmp(arg, "cpu-clock"))
		cfg->event = SAMPLER_EVENT_CPU_CLOCK;
	else if (!strcmp(arg, "cycles"))
		cfg->event = SAMPLER_EVENT_CYCLES;
	else
		return WHY("must be cpu-clock or cycles");
	return 0;
}

static int opt_unwind(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	if (!strcmp(arg, "auto"))
		cfg->unwind = SAMPLER_UNWIND_AUTO;
	else if (!strcmp(arg, "fp"))
		cfg->unwind = SAMPLER_UNWIND_FP;
	else if (!strcmp(arg, "dwarf"))
		cfg->unwind = SAMPLER_UNWIND_TABLES;
	else
		return WHY("must be auto, fp or dwarf");
	return 0;
}

static int opt_unwind_table_size(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	uint64_t v;

	if (parse_size(arg, &v) || v < (1ULL << 20) || v > (1ULL << 30))
		return WHY("must be a size from 1MiB to 1GiB (e.g. 16MiB)");
	cfg->unwind_table_bytes = v;
	return 0;
}

static int opt_debug_dir(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	if (arg[0] != '/')
		return WHY("must be an absolute path (e.g. /usr/lib/debug)");
	return option_set_string(&cfg->debug_dir, arg, why, len);
}

static int opt_debuginfod_urls(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	const char *p = arg;

	/* Space-separated http(s) URLs, as DEBUGINFOD_URLS. */
	while (*p) {
		size_t n;

		p += strspn(p, " ");
		n = strcspn(p, " ");
		if (n && strncmp(p, "http://", 7) && strncmp(p, "https://", 8))
			return WHY("must be http:// or https:// URLs separated by spaces");
		p += n;
	}
	return option_set_string(&cfg->debuginfod_urls, arg, why, len);
}

static int opt_debuginfod_timeout(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	uint64_t v;

	if (parse_duration(arg, &v) || !v || v > 3600)
		return WHY("must be a duration from 1s to 1h (e.g. 30s)");
	cfg->debuginfod_timeout_sec = v;
	return 0;
}

static int opt_symbol_cache(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	uint64_t v;

	if (parse_size(arg, &v) || v < (1ULL << 20))
		return WHY("must be a size of at least 1MiB (e.g. 64MiB)");
	cfg->symbol_cache_bytes = v;
	return 0;
}

static int opt_max_stacks(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	uint64_t v;

	if (option_parse_uint(arg, 0, 1U << 22, &v) || (v && v < 1024))
		return WHY(
			"must be 0 (sized from CPUs, frequency and interval) or 1024 to 4194304");
	cfg->max_stacks = (uint32_t)v;
	return 0;
}

static int opt_skip_walk(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	return option_set_flag(&cfg->skip_walk, false, arg, why, len);
}

static int opt_version(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	return option_set_flag(&cfg->show_version, false, arg, why, len);
}

static int opt_help(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	return option_set_flag(&cfg->show_help, false, arg, why, len);
}

static int opt_print_config(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	return option_set_flag(&cfg->print_config, false, arg, why, len);
}

static int opt_print_reference(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	return option_set_flag(&cfg->print_reference, false, arg, why, len);
}

static int opt_config(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	if (!*arg)
		return WHY("must name a YAML file");
	return option_set_string(&cfg->config_file, arg, why, len);
}

/* HOST:PORT, [IPV6]:PORT or :PORT (every address). */
static int opt_metrics_address(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	const char *colon = strrchr(arg, ':');
	uint64_t port;

	if (!colon || option_parse_uint(colon + 1, 1, 65535, &port) ||
	    (arg[0] == '[' && (colon == arg || colon[-1] != ']')))
		return WHY("must be HOST:PORT, [IPV6]:PORT or :PORT (e.g. 127.0.0.1:9400)");
	return option_set_string(&cfg->metrics_address, arg, why, len);
}

static int opt_node_name(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	if (!*arg || strlen(arg) > 253)
		return WHY("must be a host name of 1 to 253 characters");
	return option_set_string(&cfg->node_name, arg, why, len);
}

static int opt_kubernetes(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	return option_set_flag(&cfg->kubernetes, false, arg, why, len);
}

static int opt_kubernetes_api_url(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	if (strncmp(arg, "https://", 8) && strncmp(arg, "http://", 7))
		return WHY("must be an http:// or https:// URL");
	return option_set_string(&cfg->kubernetes_api_url, arg, why, len);
}

static int opt_kubernetes_token_file(struct agent_config *cfg, const char *arg, char *why,
				     size_t len)
{
	return option_set_string(&cfg->kubernetes_token_file, arg, why, len);
}

static int opt_kubernetes_ca_file(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	return option_set_string(&cfg->kubernetes_ca_file, arg, why, len);
}

static int opt_kubernetes_pod_label(struct agent_config *cfg, const char *arg, char *why,
				    size_t len)
{
	char **list, *copy;

	/* Kubernetes label keys: [prefix/]name, name <= 63 of [A-Za-z0-9._-]. */
	if (!*arg || strlen(arg) > 316 ||
	    strspn(arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
			"qrstuvwxyz0123456789._-/") != strlen(arg))
		return WHY("must be a pod label key such as app.kubernetes.io/name");
	if (cfg->nr_kubernetes_pod_labels >= 16)
		return WHY("is given too often (at most 16 labels)");
	copy = strdup(arg);
	list = copy ? reallocarray(cfg->kubernetes_pod_labels, cfg->nr_kubernetes_pod_labels + 1,
				   sizeof(*list)) :
		      NULL;
	if (!list) {
		free(copy);
		return WHY("out of memory");
	}
	list[cfg->nr_kubernetes_pod_labels++] = copy;
	cfg->kubernetes_pod_labels = list;
	return 0;
}

#define SA "/var/run/secrets/kubernetes.io/serviceaccount"

static const struct option_desc options[] = {
	{ "config", 'c', "FILE", "read settings from this YAML file (IGNIS_CONFIG)", NULL,
	  OPT_CLI_ONLY, NULL, opt_config },
	{ "frequency", 0, "HZ", "samples per second on each CPU", "100", 0, NULL, opt_frequency },
	{ "interval", 0, "SECONDS", "window length: one profile per window", "10", 0, NULL,
	  opt_interval },
	{ "duration", 0, "SECONDS", "stop after this long (0: run until SIGINT/SIGTERM)", "0", 0,
	  NULL, opt_duration },
	{ "output-dir", 0, "DIR", "write one pprof (.pb.gz) per window into DIR",
	  DEFAULT_OUTPUT_DIR, 0, NULL, opt_output_dir },
	{ "output-max-bytes", 0, "SIZE", "remove the oldest profiles beyond this total size",
	  "256MiB", 0, NULL, opt_output_max_bytes },
	{ "output-max-age", 0, "DURATION", "remove profiles older than this", "72h", 0, NULL,
	  opt_output_max_age },
	{ "pid", 0, "PID", "profile only this process (repeatable)", NULL, OPT_REPEATABLE, NULL,
	  opt_pid },
	{ "no-kernel", 0, NULL, "record user stacks only (kernel threads are not profiled)", NULL,
	  OPT_FLAG, NULL, opt_no_kernel },
	{ "top", 0, "N", "after each window print the N hottest functions", "0", 0, NULL, opt_top },
	{ "log-level", 0, "LEVEL", "error, warn, info or debug", "info", 0, NULL, opt_log_level },
	{ "event", 0, "EVENT", "cpu-clock (software, works everywhere) or cycles (hardware)",
	  "cpu-clock", 0, NULL, opt_event },
	{ "unwind", 0, "MODE",
	  "user stacks: auto (unwind tables from .eh_frame where the kernel accepts the "
	  "unwinder, frame pointers elsewhere), dwarf (the same, but fail if the unwinder cannot "
	  "load) or fp (frame pointers only)",
	  "auto", 0, NULL, opt_unwind },
	{ "unwind-table-size", 0, "SIZE",
	  "kernel memory for unwind tables (8 bytes per row: libc needs 28000 rows, LLVM 950000)",
	  "16MiB", 0, NULL, opt_unwind_table_size },
	{ "symbol-cache-size", 0, "SIZE", "memory budget for cached symbol tables", "64MiB", 0,
	  NULL, opt_symbol_cache },
	{ "debug-dir", 0, "DIR",
	  "separate debug files on the host: DIR/.build-id/xx/rest.debug and DIR/PATH/DEBUGLINK "
	  "(looked up inside a container's root first)",
	  "/usr/lib/debug", 0, NULL, opt_debug_dir },
	{ "debuginfod-urls", 0, "URLS",
	  "fetch missing debug files from these debuginfod servers (space-separated), off the "
	  "drain path",
	  NULL, 0, "DEBUGINFOD_URLS", opt_debuginfod_urls },
	{ "debuginfod-timeout", 0, "DURATION", "give up on one debuginfod fetch after this long",
	  "30s", 0, NULL, opt_debuginfod_timeout },
	{ "max-stacks", 0, "N", "stacks per window in the BPF maps (0: sized automatically)", "0",
	  0, NULL, opt_max_stacks },
	{ "metrics-address", 0, "HOST:PORT",
	  "serve Prometheus metrics on /metrics and health on /healthz here", NULL, 0, NULL,
	  opt_metrics_address },
	{ "node-name", 0, "NAME", "this host's name in labels (NODE_NAME)", "the host name", 0,
	  "NODE_NAME", opt_node_name },
	{ "kubernetes", 0, NULL, "name pods and containers from the Kubernetes API server", NULL,
	  OPT_FLAG, NULL, opt_kubernetes },
	{ "kubernetes-api-url", 0, "URL", "the API server",
	  "https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT", 0, NULL,
	  opt_kubernetes_api_url },
	{ "kubernetes-token-file", 0, "FILE", "bearer token for the API server", SA "/token", 0,
	  NULL, opt_kubernetes_token_file },
	{ "kubernetes-ca-file", 0, "FILE", "CA certificates of the API server", SA "/ca.crt", 0,
	  NULL, opt_kubernetes_ca_file },
	{ "kubernetes-pod-label", 0, "KEY", "copy this pod label into profiles (repeatable)", NULL,
	  OPT_REPEATABLE, NULL, opt_kubernetes_pod_label },
	{ "server-url", 0, "URL",
	  "send profiles to this Grafana Pyroscope (e.g. http://pyroscope:4040); without "
	  "--output-dir, nothing is written locally",
	  NULL, 0, NULL, opt_server_url },
	{ "pyroscope-api", 0, "API", "push (the Connect push API) or ingest (the /ingest API)",
	  "push", 0, NULL, opt_pyroscope_api },
	{ "service-name-rule", 0, "RULE",
	  "name processes whose executable (exe:GLOB=NAME) or name (comm:GLOB=NAME) matches "
	  "(repeatable; first match wins)",
	  NULL, OPT_REPEATABLE, NULL, opt_service_name_rule },
	{ "label", 0, "NAME=VALUE", "add this label to every series sent (repeatable)", NULL,
	  OPT_REPEATABLE, NULL, opt_label },
	{ "sample-labels", 0, "LABEL",
	  "also send these sample labels: comm, thread_name (each becomes a series label)", NULL,
	  OPT_REPEATABLE, NULL, opt_sample_labels },
	{ "tls-ca-file", 0, "FILE", "trust the server certificates this CA file (PEM) signs",
	  "the system's", 0, NULL, opt_tls_ca_file },
	{ "tls-cert-file", 0, "FILE", "client certificate (PEM) for mutual TLS", NULL, 0, NULL,
	  opt_tls_cert_file },
	{ "tls-key-file", 0, "FILE", "key (PEM) of the client certificate", NULL, 0, NULL,
	  opt_tls_key_file },
	{ "tls-insecure-skip-verify", 0, NULL,
	  "do not verify the server's certificate (unsafe: for tests only)", NULL, OPT_FLAG, NULL,
	  opt_tls_insecure },
	{ "basic-auth-user", 0, "USER", "HTTP basic auth user (Grafana Cloud: the stack's user id)",
	  NULL, 0, NULL, opt_basic_auth_user },
	{ "basic-auth-password-file", 0, "FILE", "read the basic auth password from FILE", NULL, 0,
	  NULL, opt_basic_auth_password_file },
	{ "basic-auth-password", 0, "PASSWORD",
	  "the basic auth password itself: from the environment or the file, never a flag", NULL,
	  OPT_SECRET, NULL, opt_basic_auth_password },
	{ "bearer-token-file", 0, "FILE", "send 'Authorization: Bearer' with the token in FILE",
	  NULL, 0, NULL, opt_bearer_token_file },
	{ "tenant-id", 0, "ID", "send X-Scope-OrgID: ID (multi-tenant Pyroscope)", NULL, 0, NULL,
	  opt_tenant_id },
	{ "header", 0, "'NAME: VALUE'",
	  "send this HTTP header with every request (repeatable; shown by ps: no secrets)", NULL,
	  OPT_REPEATABLE | OPT_REDACT, NULL, opt_header },
	{ "upload-connect-timeout", 0, "DURATION", "give up connecting after this long", "5s", 0,
	  NULL, opt_upload_connect_timeout },
	{ "upload-timeout", 0, "DURATION", "give up on one request after this long", "30s", 0, NULL,
	  opt_upload_timeout },
	{ "upload-concurrency", 0, "N", "requests in flight at most", "4", 0, NULL,
	  opt_upload_concurrency },
	{ "queue-max-bytes", 0, "SIZE", "memory for profiles waiting to be sent", "16MiB", 0, NULL,
	  opt_queue_max_bytes },
	{ "spool-dir", 0, "DIR",
	  "keep profiles the memory queue cannot hold here, and across restarts", NULL, 0, NULL,
	  opt_spool_dir },
	{ "spool-max-bytes", 0, "SIZE", "disk for the spool; past it the oldest profiles go",
	  "512MiB", 0, NULL, opt_spool_max_bytes },
	{ "upload-max-age", 0, "DURATION",
	  "drop profiles not sent within this long (the server refuses older ones)", "1h",
	  OPT_HIDDEN, NULL, opt_upload_max_age },
	{ "upload-max-profile-bytes", 0, "SIZE", "tests: per-profile size limit", "2000000",
	  OPT_HIDDEN, NULL, opt_upload_max_bytes },
	{ "upload-max-profile-samples", 0, "N", "tests: per-profile sample limit", "16000",
	  OPT_HIDDEN, NULL, opt_upload_max_samples },
	{ "bench-skip-walk", 0, NULL, "benchmarks only: sample without walking stacks", NULL,
	  OPT_FLAG | OPT_HIDDEN, NULL, opt_skip_walk },
	{ "print-config", 0, NULL, "print the effective configuration and exit", NULL,
	  OPT_FLAG | OPT_CLI_ONLY, NULL, opt_print_config },
	{ "print-reference", 0, NULL, "print the configuration reference (markdown) and exit", NULL,
	  OPT_FLAG | OPT_CLI_ONLY | OPT_HIDDEN, NULL, opt_print_reference },
	{ "version", 'V', NULL, "print the version and exit", NULL, OPT_FLAG | OPT_CLI_ONLY, NULL,
	  opt_version },
	{ "help", 'h', NULL, "print this help and exit", NULL, OPT_FLAG | OPT_CLI_ONLY, NULL,
	  opt_help },
};

const struct option_desc *option_table(size_t *nr)
{
	*nr = ARRAY_SIZE(options);
	return options;
}

const struct option_desc *option_find(const char *name)
{
	size_t i, j;

	for (i = 0; i < ARRAY_SIZE(options); i++) {
		const char *n = options[i].name;

		for (j = 0; n[j] && name[j]; j++)
			if (name[j] != n[j] && !(n[j] == '-' && name[j] == '_'))
				break;
		if (!n[j] && !name[j])
			return &options[i];
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
	memset(cfg, 0, sizeof(*cfg));
	cfg->frequency_hz = 100;
	cfg->interval_sec = 10;
	cfg->output_max_bytes = 256ULL << 20;
	cfg->output_max_age_sec = 72 * 3600;
	cfg->kernel_stacks = true;
	cfg->log_level = LOG_LEVEL_INFO;
	cfg->event = SAMPLER_EVENT_CPU_CLOCK;
	cfg->unwind = SAMPLER_UNWIND_AUTO;
	cfg->unwind_table_bytes = 16ULL << 20;
	cfg->symbol_cache_bytes = 64ULL << 20;
	cfg->debug_dir = strdup("/usr/lib/debug");
	cfg->debuginfod_timeout_sec = 30;
	cfg->upload_connect_timeout_sec = 5;
	cfg->upload_timeout_sec = 30;
	cfg->upload_concurrency = 4;
	cfg->queue_max_bytes = 16ULL << 20;
	cfg->spool_max_bytes = 512ULL << 20;
	cfg->upload_max_age_sec = 3600;
}

void config_fini(struct agent_config *cfg)
{
	size_t i;

	free(cfg->output_dir);
	free(cfg->debug_dir);
	free(cfg->debuginfod_urls);
	free(cfg->pids);
	free(cfg->metrics_address);
	free(cfg->node_name);
	free(cfg->kubernetes_api_url);
	free(cfg->kubernetes_token_file);
	free(cfg->kubernetes_ca_file);
	for (i = 0; i < cfg->nr_kubernetes_pod_labels; i++)
		free(cfg->kubernetes_pod_labels[i]);
	free(cfg->kubernetes_pod_labels);
	free(cfg->config_file);
	config_server_fini(cfg);
	config_trace_free(cfg->trace);
	memset(cfg, 0, sizeof(*cfg));
}

void config_usage(FILE *out)
{
	size_t i;

	fprintf(out, "Usage: ignis [OPTION]...\n"
		     "Profile every process on this host and write one pprof per window.\n\n");
	for (i = 0; i < ARRAY_SIZE(options); i++) {
		const struct option_desc *o = &options[i];
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
