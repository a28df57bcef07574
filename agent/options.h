/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's configuration and its command-line options, described by one table
 * (options.c) from which parsing and the usage text are made.
 */
#ifndef IGNIS_OPTIONS_H
#define IGNIS_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ignis.h"
#include "log.h"
#include "sampler.h"

struct agent_config {
	unsigned int frequency_hz;   /* samples per second per CPU */
	unsigned int interval_sec;   /* window length */
	unsigned int duration_sec;   /* stop after this long; 0: until SIGINT/SIGTERM */
	char *output_dir;	     /* local sink folder */
	uint64_t output_max_bytes;   /* the folder's size cap, bytes */
	uint64_t output_max_age_sec; /* files older than this are removed */
	uint32_t *pids;		     /* --pid filter, tgids */
	size_t nr_pids;
	bool kernel_stacks;
	unsigned int top; /* print the N hottest functions after each window */
	enum log_level log_level;
	enum sampler_event event;
	uint64_t symbol_cache_bytes;
	uint32_t max_stacks; /* stacks per generation, 0: sized from CPUs and Hz */
	bool skip_walk;	     /* benchmark only: sample without walking stacks */
	bool show_version;
	bool show_help;
};

#define DEFAULT_OUTPUT_DIR "./ignis-profiles"

/* Fill cfg with the defaults. */
void config_init(struct agent_config *cfg);
void config_fini(struct agent_config *cfg);

/*
 * Parse argv into cfg. On a bad option writes one line saying what is wrong to err and
 * returns -EINVAL.
 */
int config_parse_args(struct agent_config *cfg, int argc, char **argv, FILE *err) __must_check;

/* The usage text, from the option table. */
void config_usage(FILE *out);

/* Value parsers, exposed for tests: sizes ("64MiB", "1G", "4096"), durations ("90s", "3h",
 * "7d", "60"). Return 0 or -EINVAL. */
int parse_size(const char *s, uint64_t *bytes) __must_check;
int parse_duration(const char *s, uint64_t *seconds) __must_check;

#endif /* IGNIS_OPTIONS_H */
