/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sampler's choices as the configuration names them (data only, so that the options
 * need not see the sampler).
 */
#ifndef IGNIS_SAMPLER_TYPES_H
#define IGNIS_SAMPLER_TYPES_H

enum sampler_event {
	SAMPLER_EVENT_CPU_CLOCK, /* software cpu-clock: works everywhere, VMs included */
	SAMPLER_EVENT_CYCLES,	 /* hardware cpu-cycles, where the PMU exposes it */
};

/* The table unwinder (--unwind): off, or on where the kernel accepts it (auto), or required
 * (a load failure is fatal). */
enum sampler_unwind {
	SAMPLER_UNWIND_FP,
	SAMPLER_UNWIND_AUTO,
	SAMPLER_UNWIND_TABLES,
};

#endif /* IGNIS_SAMPLER_TYPES_H */
