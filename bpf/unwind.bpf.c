// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * ignis table unwinder: a perf_event program the sampler tail-calls (through `progs`) for a
 * user stack of a process with unwind tables, and its copy for the off-CPU walk (through
 * `offcpu_progs`, a tp_btf/sys_exit program as that walk is); in the place of the eval-loop frames of a
 * Python process it puts the Python frames they run (bpf/python.bpf.h). It unwinds UNWIND_FRAMES_PER_RUN frames per
 * run with the logic of bpf/unwind.bpf.h and tail-calls itself for more, up to
 * IGNIS_MAX_STACK_DEPTH frames; then it stores the stack and counts the sample, as the
 * sampler does for every other sample. Its state is in the CPU's cpu_states entry, which
 * the sampler filled (bpf/sampler.bpf.c, start_unwind()). The tables and mappings are
 * described in bpf/profiler.h.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "maps.bpf.h"

/* Global functions, so the verifier checks each once, not at every frame of the walk. */
__noinline int unwind_find_mapping(__u32 start, __u32 n, __u64 pc)
{
	return find_mapping(start, n, pc);
}

__noinline int unwind_find_row(__u32 start, __u32 n, __u32 rel)
{
	return find_row(start, n, rel);
}

/* One step of the Python walk (bpf/python.bpf.h) over this CPU's state of the walk (slot:
 * CPU_STATE_*). */
__noinline int unwind_python(__u32 slot)
{
	struct cpu_state *cs = bpf_map_lookup_elem(&cpu_states, &slot);

	if (!cs)
		return PY_STEP_FAILED;
	return py_step(&cs->uw.py, &cs->stack, cs->uw.gen, &cs->uw.key);
}

/* Store the unwound user stack and count the sample (or add its off-CPU time): the end of
 * every table walk. */
static __always_inline void unwind_finish(struct cpu_state *cs, __u32 flags)
{
	struct uw_state *uw = &cs->uw;
	__u32 g = uw->gen;
	void *stacks = bpf_map_lookup_elem(&stacks_gen, &g), *counts;

	if (uw->offcpu_ns)
		counts = bpf_map_lookup_elem(&offcpu_gen, &g);
	else
		counts = bpf_map_lookup_elem(&counts_gen, &g);

	if (!stacks || !counts) {
		/* Off-CPU time is not in the CPU samples' accounting. */
		stat_inc(g, uw->offcpu_ns ? STAT_OFFCPU_DROPS : STAT_DROP_NO_GEN);
		return;
	}
	cs->stack.flags = flags | STACK_F_TABLES;
	stat_inc(g, STAT_UNWIND_SAMPLES);
	if (uw->py.total)
		stat_inc(g, STAT_PY_SAMPLES);
	/* A whole native stack with Python frames left: eval frames and Python frames did not
	 * pair up (a part of the eval loop outside its known ranges). */
	if (uw->py.on && uw->py.frame && !(flags & STACK_F_TRUNCATED))
		stat_inc(g, STAT_PY_UNMATCHED);
	store_stack(g, stacks, &cs->stack, &uw->key.user_stack);
	if (!uw->offcpu_ns) {
		record(g, counts, &uw->key);
		return;
	}
	if (!record_ns(g, counts, &uw->key, uw->offcpu_ns)) {
		stat_inc(g, STAT_OFFCPU_SAMPLES);
		stat_add(g, STAT_OFFCPU_WALKED_NS, uw->offcpu_ns);
	}
}

/* Unwind up to UNWIND_FRAMES_PER_RUN frames, then tail-call prog_array's copy of this
 * program (ctx's program type) or finish. */
static __always_inline int unwind_run(void *ctx, void *prog_array, __u32 slot)
{
	struct cpu_state *cs = bpf_map_lookup_elem(&cpu_states, &slot);
	int r;

	if (!cs)
		return 0;
	r = unwind_frames(&cs->uw, &cs->stack);
	if (r == STEP_CONTINUE) {
		bpf_tail_call(ctx, prog_array, IGNIS_PROG_UNWIND);
		stat_inc(cs->uw.gen, STAT_UNWIND_TAIL_CALL);
		r = STEP_TRUNCATED;
	}
	unwind_finish(cs, unwind_end_flags(r));
	return 0;
}

SEC("perf_event")
int ignis_unwind(struct bpf_perf_event_data *ctx)
{
	return unwind_run(ctx, &progs, CPU_STATE_SAMPLE);
}

/*
 * The same for the off-CPU walk (bpf/offcpu.bpf.c), which a tail call can reach only in a
 * program of its own type and attach point: loaded, never attached.
 */
SEC("tp_btf/sys_exit")
int ignis_offcpu_unwind(void *ctx)
{
	return unwind_run(ctx, &offcpu_progs, CPU_STATE_OFFCPU);
}
