/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The local analysis behind `ignis report` and `ignis diff`: window profiles read back from
 * pprof files (pprof_decode()), filtered by process, reduced to frames (a function in a
 * binary) and stacks of frames, and kept per window, so that any time range, or either side
 * of a diff, can be summed again without reading the files twice.
 *
 * A frame is a function name in a binary: every location of a function, in every process and
 * every window, is one frame, as in a flame graph. An inline frame is a frame of its own. A
 * frame without a name is "[binary]" (its mapping's basename), "[unknown]" without a mapping
 * either; the agent's placeholders ("[truncated]", ...) keep their names.
 *
 * Memory is bounded by what the windows hold: strings, frames and stacks are interned once
 * for all windows; each window keeps one (stack, value) pair per distinct stack it had.
 */
#ifndef IGNIS_REPORT_H
#define IGNIS_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/hashmap.h"
#include "common/ignis.h"

struct profile;

/* Which values a report sums. */
enum report_type {
	REPORT_CPU,    /* CPU samples (samples/count) */
	REPORT_OFFCPU, /* time off CPU (offcpu/nanoseconds) */
};

/*
 * Which samples count. Within one kind any entry may match; all kinds given must match.
 * Arrays are borrowed for the report's life.
 */
struct report_filter {
	const uint32_t *pids; /* the pid label (the process id) */
	size_t nr_pids;
	char *const *comms; /* fnmatch(3) globs on the comm label */
	size_t nr_comms;
	char *const *services; /* globs on the service name the sample's labels give (below) */
	size_t nr_services;
	char *const *labels; /* "key=glob": a string label, or a numeric one printed */
	size_t nr_labels;
};

struct report_frame {
	const char *name;   /* function, or a placeholder ("[libc.so.6]", "[truncated]") */
	const char *binary; /* basename of the mapping's file, "" when none */
	const char *file;   /* source file, "" when unknown */
	int64_t line;	    /* the function's first line, else the first line seen; 0 */
};

struct report_stack {
	uint64_t hash;
	uint32_t nr;
	uint32_t frames[]; /* frame ids, root first */
};

struct report_pair {
	uint32_t stack;
	uint64_t value;
};

/* One window profile, as read. */
struct report_window {
	const char *path;
	const char *host;     /* from the agent's comment, else the file name; "" */
	uint64_t seq;	      /* the agent's window number; 0 when unknown */
	uint64_t time_ns;     /* start, Unix ns */
	uint64_t duration_ns; /* 0 when unknown */
	uint32_t side;	      /* which set of profiles: a diff's BASE (0) or NEW (1) */
	bool has_accounting;  /* the agent's sample accounting was in the comments */
	uint64_t taken, idle; /* ... samples the sampler took, and of the idle task */
	uint64_t filtered;    /* ... left out by the agent's --pid */
	uint64_t profiled;    /* ... counted with a stack */
	uint64_t dropped;     /* ... lost, every reason */
	uint32_t nr_cpus;     /* 0 when unknown */
	double rate_hz;	      /* per CPU; 0 when unknown */
	uint64_t value_all;   /* the file's values of the report's type, before filtering */
	uint64_t value;	      /* the values selected */
	size_t first_pair;    /* into report.pairs */
	size_t nr_pairs;
};

struct report {
	enum report_type type;
	struct report_filter filter;
	uint64_t period_ns; /* of the first CPU profile with a period; 0: unknown */
	struct report_frame **frames;
	size_t nr_frames, cap_frames;
	struct report_stack **stacks;
	size_t nr_stacks, cap_stacks;
	struct report_window *windows;
	size_t nr_windows, cap_windows;
	struct report_pair *pairs;
	size_t nr_pairs, cap_pairs;
	struct hashmap strings, frame_index, stack_index, window_stacks;
	struct profile *merged; /* report__merge() adds here; the caller's */
	/* Scratch of one profile: each location's frames, found once (loc_nr UINT32_MAX: not
	 * yet), kept for the next profile's reuse. */
	uint32_t *loc_first, *loc_nr, *loc_frames;
	size_t cap_locs, nr_loc_frames, cap_loc_frames;
};

/* A new, empty report of type, with filter (borrowed; NULL: every sample). NULL + errno. */
struct report *report__new(enum report_type type, const struct report_filter *filter);
void report__free(struct report *r);

/*
 * Add the window profile p, read from path (copied), to side. Returns 0 or -errno (-ENOMEM,
 * -E2BIG past a cap: 4M frames or stacks, 1G pairs).
 */
int report__add_profile(struct report *r, const struct profile *p, const char *path,
			uint32_t side) __must_check;

/*
 * Add the samples of p that the filter selects, with their locations, mappings and labels
 * intact, to r->merged (one pprof of many windows: `--format pprof`). Its time is the
 * earliest window's, its duration reaches to the end of the latest. Returns 0 or -errno.
 */
int report__merge(struct report *r, const struct profile *p) __must_check;

/* Sort the windows by start time (then path); report__add_profile() appends. */
void report__sort(struct report *r);

/* Which windows a sum covers: start times in [start_ns, end_ns) (end 0: no end), one side or
 * every side (side < 0). */
struct report_range {
	uint64_t start_ns, end_ns;
	int side;
};

#define REPORT_RANGE_ALL ((struct report_range){ 0, 0, -1 })

bool report_range_has(const struct report_range *rg, const struct report_window *w);

/*
 * Sum the values of each stack over the windows of rg into stack_values (nr_stacks entries,
 * zeroed here). Returns the total.
 */
uint64_t report__sum_stacks(const struct report *r, const struct report_range *rg,
			    uint64_t *stack_values);

/*
 * Self and total values of each frame (nr_frames entries each, zeroed here) from stack values:
 * self where the frame is a stack's leaf, total where it is anywhere on it, counted once per
 * stack. Returns 0 or -ENOMEM.
 */
int report__frame_values(const struct report *r, const uint64_t *stack_values, uint64_t *self,
			 uint64_t *total) __must_check;

/*
 * The service a sample belongs to, from its labels as a server would name it (targets.h's
 * rules, on what a local profile keeps): NAMESPACE/CONTAINER of a pod, NAME of a systemd
 * NAME.service, the first 12 characters of a container id, else the comm. Each argument may
 * be NULL. Writes into out (size bytes) and returns it.
 */
const char *report_service_of(const char *namespace_, const char *container, const char *unit,
			      const char *container_id, const char *comm, char *out, size_t size);

#endif /* IGNIS_REPORT_H */
