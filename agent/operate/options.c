// SPDX-License-Identifier: Apache-2.0
/*
 * The value helpers every options file uses, and two slices of the option table (see
 * options_internal.h): the agent's own settings (--config, sampling, the local folder,
 * symbols, metrics, Kubernetes) and the command-line actions.
 */
#include <errno.h>
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

int option_list_add(char ***list, size_t *nr, size_t max, const char *value, char *why, size_t len)
{
	char **grown, *copy;

	if (*nr >= max)
		return WHY("is given too often (at most %zu)", max);
	copy = strdup(value);
	grown = copy ? reallocarray(*list, *nr + 1, sizeof(**list)) : NULL;
	if (!grown) {
		free(copy);
		return WHY("out of memory");
	}
	grown[(*nr)++] = copy;
	*list = grown;
	return 0;
}

void option_list_free(char **list, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		free(list[i]);
	free(list);
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

static int opt_no_python(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	return option_set_flag(&cfg->python, true, arg, why, len);
}

static int opt_off_cpu(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	return option_set_flag(&cfg->offcpu, false, arg, why, len);
}

static int opt_off_cpu_kthreads(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	return option_set_flag(&cfg->offcpu_kthreads, false, arg, why, len);
}

static int opt_off_cpu_period(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	uint64_t v;

	if (option_parse_uint(arg, 0, 1000, &v))
		return WHY("must be a number of milliseconds from 0 (every wait) to 1000");
	cfg->offcpu_period_ms = (unsigned int)v;
	return 0;
}

static int opt_off_cpu_min_block(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	uint64_t v;

	if (option_parse_uint(arg, 0, 1000000, &v))
		return WHY("must be a number of microseconds from 0 to 1000000");
	cfg->offcpu_min_block_us = (unsigned int)v;
	return 0;
}

static int opt_off_cpu_max_rate(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	uint64_t v;

	if (option_parse_uint(arg, 0, 100000, &v))
		return WHY("must be a number of samples per second from 0 (no cap) to 100000");
	cfg->offcpu_max_rate = (unsigned int)v;
	return 0;
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

static int opt_symbol_cache_idle(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	uint64_t v;

	if (parse_duration(arg, &v) || v > 7 * 24 * 3600)
		return WHY("must be a duration up to 7d (e.g. 5m); 0 keeps tables until the "
			   "budget needs their room");
	cfg->symbol_cache_idle_sec = v;
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

static int opt_log_records(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	uint64_t v;

	if (option_parse_uint(arg, 0, 1U << 16, &v))
		return WHY("must be 0 (sized from frequency and interval) to 65536");
	cfg->log_records = (uint32_t)v;
	return 0;
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

static const struct option_desc agent_options[] = {
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
	{ "no-python", 0, NULL,
	  "show Python processes as native code only (no Python frames from their interpreter)",
	  NULL, OPT_FLAG, NULL, opt_no_python },
	{ "off-cpu", 0, NULL,
	  "also record off-CPU time: where threads wait (sleep, I/O, locks, a CPU), as "
	  "offcpu/nanoseconds with a thread_state label",
	  NULL, OPT_FLAG, NULL, opt_off_cpu },
	{ "off-cpu-period", 0, "MS",
	  "off-CPU time one sample carries: a thread's waits add up until they reach it (0: a "
	  "sample per wait, for comparison: costly)",
	  "10", 0, NULL, opt_off_cpu_period },
	{ "off-cpu-min-block", 0, "US",
	  "leave out waits shorter than this (0: count every wait; anything else makes totals "
	  "short)",
	  "0", 0, NULL, opt_off_cpu_min_block },
	{ "off-cpu-max-rate", 0, "N",
	  "off-CPU samples per second on each CPU at most; time over it is kept without stacks "
	  "(0: no cap)",
	  "1000", 0, NULL, opt_off_cpu_max_rate },
	{ "off-cpu-kernel-threads", 0, NULL, "record the off-CPU time of kernel threads too", NULL,
	  OPT_FLAG, NULL, opt_off_cpu_kthreads },
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
	  "kernel memory for unwind tables (8 bytes per row: libc needs 28000 rows, LLVM 950000); "
	  "when full, tables no stack used for two windows make room, so it needs to hold what "
	  "is sampled at once, not every binary the host runs: the default holds libLLVM beside "
	  "libc and the common libraries, clang (libLLVM and libclang-cpp, 1.95 million rows) "
	  "needs 20MiB; a table that still does not fit is logged once with the size to set, "
	  "and stacks through it end in [truncated]",
	  "8MiB", 0, NULL, opt_unwind_table_size },
	{ "symbol-cache-size", 0, "SIZE",
	  "memory budget for cached symbol tables (one library's DWARF may take half of it, "
	  "while a window is symbolized)",
	  "64MiB", 0, NULL, opt_symbol_cache },
	{ "symbol-cache-idle", 0, "DURATION",
	  "drop a cached symbol table no window used for this long (in whole windows, at least "
	  "one), so that the memory held for binaries that ran once comes back (0: keep tables "
	  "until the budget needs the room)",
	  "5m", 0, NULL, opt_symbol_cache_idle },
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
	{ "max-stacks", 0, "N",
	  "stacks per window in the BPF maps, two 32-frame parts each (0: sized from CPUs, "
	  "frequency and interval)",
	  "0", 0, NULL, opt_max_stacks },
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
	/* Hidden: its place in the table shows nowhere. */
	{ "bench-skip-walk", 0, NULL, "benchmarks only: sample without walking stacks", NULL,
	  OPT_FLAG | OPT_HIDDEN, NULL, opt_skip_walk },
	{ "test-log-records", 0, "N",
	  "tests only: records of each CPU's run in the sample log (0: sized from frequency and "
	  "interval)",
	  "0", OPT_HIDDEN, NULL, opt_log_records },
};

static const struct option_desc actions[] = {
	{ "print-config", 0, NULL, "print the effective configuration and exit", NULL,
	  OPT_FLAG | OPT_CLI_ONLY, NULL, opt_print_config },
	{ "print-reference", 0, NULL, "print the configuration reference (markdown) and exit", NULL,
	  OPT_FLAG | OPT_CLI_ONLY | OPT_HIDDEN, NULL, opt_print_reference },
	{ "version", 'V', NULL, "print the version and exit", NULL, OPT_FLAG | OPT_CLI_ONLY, NULL,
	  opt_version },
	{ "help", 'h', NULL, "print this help and exit", NULL, OPT_FLAG | OPT_CLI_ONLY, NULL,
	  opt_help },
};

static void agent_init(struct agent_config *cfg)
{
	cfg->frequency_hz = 100;
	cfg->interval_sec = 10;
	cfg->output_max_bytes = 256ULL << 20;
	cfg->output_max_age_sec = 72 * 3600;
	cfg->kernel_stacks = true;
	cfg->python = true;
	cfg->offcpu_period_ms = 10;
	cfg->offcpu_max_rate = 1000;
	cfg->log_level = LOG_LEVEL_INFO;
	cfg->event = SAMPLER_EVENT_CPU_CLOCK;
	cfg->unwind = SAMPLER_UNWIND_AUTO;
	cfg->unwind_table_bytes = 8ULL << 20;
	cfg->symbol_cache_bytes = 64ULL << 20;
	cfg->symbol_cache_idle_sec = 5 * 60;
	cfg->debug_dir = strdup("/usr/lib/debug");
	cfg->debuginfod_timeout_sec = 30;
}

static void agent_fini(struct agent_config *cfg)
{
	free(cfg->output_dir);
	free(cfg->debug_dir);
	free(cfg->debuginfod_urls);
	free(cfg->pids);
	free(cfg->metrics_address);
	free(cfg->node_name);
	free(cfg->kubernetes_api_url);
	free(cfg->kubernetes_token_file);
	free(cfg->kubernetes_ca_file);
	option_list_free(cfg->kubernetes_pod_labels, cfg->nr_kubernetes_pod_labels);
	free(cfg->config_file);
}

static int agent_check(struct agent_config *cfg, char *why, size_t len)
{
	if (cfg->kubernetes && !cfg->node_name) {
		snprintf(why, len,
			 "--kubernetes needs this node's name: set NODE_NAME (from the downward "
			 "API's spec.nodeName) or --node-name");
		return -EINVAL;
	}
	return 0;
}

const struct option_slice agent_option_slice = {
	.options = agent_options,
	.nr = ARRAY_SIZE(agent_options),
	.init = agent_init,
	.fini = agent_fini,
	.check = agent_check,
};

const struct option_slice action_option_slice = {
	.options = actions,
	.nr = ARRAY_SIZE(actions),
};
