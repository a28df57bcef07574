// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "options.h"

typedef int (*option_parse_fn)(struct agent_config *cfg, const char *arg, char *why, size_t len);

struct option_desc {
	const char *name; /* long option, without dashes */
	char short_name;  /* one-letter alias, or 0 */
	const char *arg;  /* metavariable, NULL for a flag */
	const char *help;
	const char *def; /* default shown in the usage, or NULL */
	option_parse_fn parse;
};

/* Parse an unsigned decimal in [min, max]. */
static int parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
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

#define WHY(...) (snprintf(why, len, __VA_ARGS__), -EINVAL)

static int opt_frequency(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	uint64_t v;

	if (parse_uint(arg, 1, 10000, &v))
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
	char *dir;

	if (!*arg)
		return WHY("must name a folder");
	dir = strdup(arg);
	if (!dir)
		return WHY("out of memory");
	free(cfg->output_dir);
	cfg->output_dir = dir;
	return 0;
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

	if (parse_uint(arg, 1, 4194304, &v))
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
	(void)arg, (void)why, (void)len;
	cfg->kernel_stacks = false;
	return 0;
}

static int opt_top(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	uint64_t v;

	if (parse_uint(arg, 0, 1000, &v))
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

	if (parse_uint(arg, 0, 1U << 22, &v) || (v && v < 1024))
		return WHY(
			"must be 0 (sized from CPUs, frequency and interval) or 1024 to 4194304");
	cfg->max_stacks = (uint32_t)v;
	return 0;
}

static int opt_skip_walk(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	(void)arg, (void)why, (void)len;
	cfg->skip_walk = true;
	return 0;
}

static int opt_version(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	(void)arg, (void)why, (void)len;
	cfg->show_version = true;
	return 0;
}

static int opt_help(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	(void)arg, (void)why, (void)len;
	cfg->show_help = true;
	return 0;
}

static const struct option_desc options[] = {
	{ "frequency", 0, "HZ", "samples per second on each CPU", "100", opt_frequency },
	{ "interval", 0, "SECONDS", "window length: one profile per window", "10", opt_interval },
	{ "duration", 0, "SECONDS", "stop after this long (0: run until SIGINT/SIGTERM)", "0",
	  opt_duration },
	{ "output-dir", 0, "DIR", "write one pprof (.pb.gz) per window into DIR",
	  DEFAULT_OUTPUT_DIR, opt_output_dir },
	{ "output-max-bytes", 0, "SIZE", "remove the oldest profiles beyond this total size",
	  "256MiB", opt_output_max_bytes },
	{ "output-max-age", 0, "DURATION", "remove profiles older than this", "72h",
	  opt_output_max_age },
	{ "pid", 0, "PID", "profile only this process (repeatable)", NULL, opt_pid },
	{ "no-kernel", 0, NULL, "record user stacks only (kernel threads are not profiled)", NULL,
	  opt_no_kernel },
	{ "top", 0, "N", "after each window print the N hottest functions", "0", opt_top },
	{ "log-level", 0, "LEVEL", "error, warn, info or debug", "info", opt_log_level },
	{ "event", 0, "EVENT", "cpu-clock (software, works everywhere) or cycles (hardware)",
	  "cpu-clock", opt_event },
	{ "symbol-cache-size", 0, "SIZE", "memory budget for cached symbol tables", "64MiB",
	  opt_symbol_cache },
	{ "max-stacks", 0, "N", "stacks per window in the BPF maps (0: sized automatically)", "0",
	  opt_max_stacks },
	{ "bench-skip-walk", 0, NULL, "benchmarks only: sample without walking stacks", NULL,
	  opt_skip_walk },
	{ "version", 'V', NULL, "print the version and exit", NULL, opt_version },
	{ "help", 'h', NULL, "print this help and exit", NULL, opt_help },
};

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
	cfg->symbol_cache_bytes = 64ULL << 20;
}

void config_fini(struct agent_config *cfg)
{
	free(cfg->output_dir);
	free(cfg->pids);
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

		if (o->short_name)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", o->short_name, o->name,
				 o->arg ? " " : "", o->arg ? o->arg : "");
		else
			snprintf(left, sizeof(left), "--%s%s%s", o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		fprintf(out, "  %-28s %s", left, o->help);
		if (o->def)
			fprintf(out, " (default: %s)", o->def);
		fputc('\n', out);
	}
}

int config_parse_args(struct agent_config *cfg, int argc, char **argv, FILE *err)
{
	struct option longopts[ARRAY_SIZE(options) + 1];
	char shortopts[2 * ARRAY_SIZE(options) + 3] = "+:", *sp = shortopts + 2;
	const struct option_desc *o;
	char why[256];
	size_t i;
	int c;

	/* getopt_long returns 256 + the option's index, or the letter of a short option. */
	for (i = 0; i < ARRAY_SIZE(options); i++) {
		longopts[i] = (struct option){
			.name = options[i].name,
			.has_arg = options[i].arg ? required_argument : no_argument,
			.flag = NULL,
			.val = 256 + (int)i,
		};
	}
	memset(&longopts[i], 0, sizeof(longopts[i]));
	for (i = 0; i < ARRAY_SIZE(options); i++) {
		if (!options[i].short_name)
			continue;
		*sp++ = options[i].short_name;
		if (options[i].arg)
			*sp++ = ':';
	}
	*sp = '\0';

	opterr = 0;
	optind = 1;
	/* "+": stop at the first non-option; ":": report a missing value as ':'. */
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (c == ':') {
			fprintf(err, "ignis: %s: missing value\n", argv[optind - 1]);
			return -EINVAL;
		}
		if (c == '?') {
			if (optopt >= 256)
				fprintf(err, "ignis: --%s takes no value\n",
					options[optopt - 256].name);
			else if (optopt)
				fprintf(err, "ignis: -%c: unknown option\n", optopt);
			else
				fprintf(err, "ignis: %s: unknown option\n", argv[optind - 1]);
			return -EINVAL;
		}
		if (c < 256) {
			for (i = 0; i < ARRAY_SIZE(options) && options[i].short_name != c; i++)
				;
			c = 256 + (int)i;
		}
		o = &options[c - 256];
		why[0] = '\0';
		if (o->parse(cfg, optarg, why, sizeof(why))) {
			fprintf(err, "ignis: --%s %s: %s\n", o->name, optarg ? optarg : "", why);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(err, "ignis: %s: unexpected argument\n", argv[optind]);
		return -EINVAL;
	}
	return 0;
}
