/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The drain: reads one idle generation of the BPF maps into memory and clears it.
 *
 * It runs after sampler__flip() returned that generation, when no program writes it any
 * more. The result is plain data (samples, stacks by id, counters) that the rest of the
 * agent uses without touching BPF (samples.h): this file and the sampler are the only ones
 * that see the BPF records.
 */
#ifndef IGNIS_DRAIN_H
#define IGNIS_DRAIN_H

#include <stdint.h>

#include "common/ignis.h"
#include "samples.h"

struct drained_window;
struct sampler;

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

#endif /* IGNIS_DRAIN_H */
