/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The drain: reads one idle generation of the BPF maps into memory and clears it.
 *
 * It runs after sampler__flip() returned that generation, when no program writes it any
 * more. The result is plain data (samples, stacks by id, counters) that the rest of the
 * agent uses without touching BPF.
 */
#ifndef IGNIS_DRAIN_H
#define IGNIS_DRAIN_H

#include <stdint.h>

#include <linux/types.h>

#include "../bpf/profiler.h"
#include "hashmap.h"
#include "ignis.h"

struct sampler;

/* One counts-map entry. */
struct drained_sample {
	struct ignis_sample_key key;
	uint64_t count;
};

/* A stack from the stacks map, trimmed to its frames. */
struct drained_stack {
	struct ignis_stack_id id;
	uint32_t len;
	uint32_t flags; /* STACK_F_* */
	uint64_t ips[]; /* leaf first */
};

struct drained_window {
	struct drained_sample *samples;
	size_t nr_samples;
	size_t cap_samples;
	struct hashmap stacks;	  /* &id (struct ignis_stack_id) -> struct drained_stack */
	uint64_t stats[STAT_NR];  /* the generation's counters, summed over CPUs */
	uint64_t nr_stack_frames; /* frames held in stacks, for accounting */
};

void drained_window__init(struct drained_window *w);
/* Free every sample and stack, keeping nothing. */
void drained_window__fini(struct drained_window *w);
/* The stack with this id, or NULL (the all-zero id, or a stack that could not be stored). */
const struct drained_stack *drained_window__stack(const struct drained_window *w,
						  const struct ignis_stack_id *id);

/*
 * Read generation `gen` of the maps into w (which must be empty) and clear them, with
 * batched lookup-and-delete where the kernel has it and one-by-one iteration otherwise.
 * Returns 0 or -errno; on error w holds what was read so far.
 */
int drain__read(struct sampler *s, unsigned int gen, struct drained_window *w) __must_check;

/*
 * BPF remembers which process images it announced. Forget those for which known(ctx, ...)
 * is false (the agent failed to capture them for a passing reason, or lost the event), so
 * that their next sample announces them again. Returns how many were forgotten or -errno.
 */
int drain__reconcile_procs(struct sampler *s,
			   bool (*known)(void *ctx, uint32_t tgid, uint64_t start_time,
					 uint32_t exec_id),
			   void *ctx);

/* Sum of the counts of all drained samples. */
uint64_t drained_window__total(const struct drained_window *w);

#endif /* IGNIS_DRAIN_H */
