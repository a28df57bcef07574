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

/* The generation's counters, stats[STAT_NR] summed over CPUs, into the BPF rows of c. */
void drain_counters_of(const uint64_t *stats, struct counters *c);

#endif /* IGNIS_DRAIN_INTERNAL_H */
