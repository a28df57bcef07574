/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The drain's conversions from BPF records (bpf/profiler.h) to the agent's plain data
 * (samples.h), apart from the map reading, for the unit tests.
 */
#ifndef IGNIS_DRAIN_INTERNAL_H
#define IGNIS_DRAIN_INTERNAL_H

#include <stdint.h>

#include "samples.h"

struct ignis_sample_key;

/* A counts-map entry (key, count) as a drained sample; the thread name is NUL-terminated. */
void drain_sample_of(const struct ignis_sample_key *k, uint64_t count, struct drained_sample *s);

/*
 * The records of the sample log (bpf/profiler.h), n of them, sorted in place and added to w
 * as one sample per distinct key with the number of its records as count. Returns 0 or
 * -ENOMEM.
 */
int drain_log_records(struct ignis_sample_key *recs, size_t n,
		      struct drained_window *w) __must_check;

/* The generation's counters, stats[STAT_NR] summed over CPUs, into the BPF rows of c. */
void drain_counters_of(const uint64_t *stats, struct counters *c);

/*
 * The stacks and tails maps' parts (struct ignis_stack_part, bpf/profiler.h) joined into
 * stacks: a stack of one part goes to the window at once, the parts of deeper ones are kept
 * until both maps have been read, then joined by stack_parts__finish(). Parts without their
 * first part (left by a stack that BPF cut short) are dropped; a stack whose part is missing
 * (not left so by BPF, which stores the first part last) is cut before the gap, flagged
 * STACK_TRUNCATED and counted in cut.
 */
struct stack_part_rec;

struct stack_parts {
	struct stack_part_rec *v;
	size_t n, cap;
	uint64_t cut; /* stacks cut at a missing part, since init */
};

struct ignis_stack_part_key;
struct ignis_stack_part;

void stack_parts__init(struct stack_parts *p);
/* Take one part (part 0: the stacks map's entry under k->id). Returns 0 or -ENOMEM. */
int stack_parts__add(struct stack_parts *p, const struct ignis_stack_part_key *k,
		     const struct ignis_stack_part *v, struct drained_window *w) __must_check;
/* Join the parts kept into stacks of w, and forget them. Returns 0 or -ENOMEM. */
int stack_parts__finish(struct stack_parts *p, struct drained_window *w) __must_check;
/* Free what is kept (after an error). */
void stack_parts__fini(struct stack_parts *p);

#endif /* IGNIS_DRAIN_INTERNAL_H */
