/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The window cycle: at each window boundary, flip the map generations, drain the idle one,
 * build the window's profile, hand it to the sinks, account its figures (the counter table
 * of stats.h) and release what the window held. main.c owns the clock that says when; this
 * module does what happens then.
 */
#ifndef IGNIS_CYCLE_H
#define IGNIS_CYCLE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/ignis.h"

struct debuginfod_fetcher;
struct file_sink;
struct metrics;
struct proctab;
struct python;
struct sampler;
struct server_sink;
struct symbolizer;
struct unwinder;
struct window_builder;

/* What a cycle works with: all borrowed, and all must outlive it. */
struct cycle_opts {
	struct sampler *sampler;
	struct proctab *proctab;
	struct symbolizer *symbolizer;
	struct window_builder *builder;
	struct unwinder *unwinder;	       /* NULL without the table unwinder */
	struct python *python;		       /* NULL without the Python walker */
	struct file_sink *sink;		       /* NULL without a local folder */
	struct server_sink *server;	       /* NULL without a server */
	struct metrics *metrics;	       /* NULL without --metrics-address */
	struct debuginfod_fetcher *debuginfod; /* NULL without --debuginfod-urls */
	const char *hostname;		       /* in the profile's comments */
	const char *output_dir;		       /* in messages about the local folder */
	unsigned int frequency_hz;	       /* sampling frequency per CPU */
	bool offcpu; /* windows carry off-CPU samples: profiles of PROFILE_CPU_OFFCPU */
	unsigned int interval_sec; /* the window length */
	uint64_t symbol_idle_sec;  /* drop symbol tables no window used this long; 0: never */
	unsigned int top;	   /* print the top N functions per window; 0: no */
	uint64_t unwind_rows;	   /* rows the unwind table map holds */
	bool kernel_stacks;	   /* kernel stacks are walked: reload kallsyms when
						* their addresses go unnamed (modules loaded since) */
};

struct cycle;

/* Returns NULL with errno set (EINVAL without a sampler, proctab, symbolizer or builder;
 * ENOMEM). The first window starts now. */
struct cycle *cycle__new(const struct cycle_opts *opts);
void cycle__free(struct cycle *c);

/* End the current window and handle it; the next one starts at once. A sink that fails is
 * logged and counted. Returns 0, or -errno when the window could not be drained, built or
 * encoded (the agent stops: its state is not to be trusted). */
int cycle__window(struct cycle *c) __must_check;

/* The window being recorded (0 for the first). */
uint64_t cycle__seq(const struct cycle *c);

/* Publish the figures for /metrics now (they are after every window as well). */
void cycle__publish(struct cycle *c);

/* The totals since start at info level (once a minute, and at exit). */
void cycle__log_summary(struct cycle *c);

#endif /* IGNIS_CYCLE_H */
