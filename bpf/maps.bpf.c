// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The one definition of every map, of the read-only configuration `cfg` and of the generation
 * `gen`, and the object's licence. The program files declare them through bpf/maps.bpf.h, and
 * bpftool's static linker resolves those declarations to these definitions when it joins the
 * files into one object (the Makefile lists this file first, so the skeleton's maps keep this
 * order). No programs here.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "maps.bpf.h"

const volatile struct ignis_config cfg = {};

__u32 gen = 0;

/* Written by every CPU that may wake the agent (bpf/maps.bpf.h, events_flags()): a cache line
 * of its own, away from gen, which every sample reads. */
__u64 events_woken_ns __attribute__((aligned(64))) = 0;

/* The two generations: the agent flips `gen` between them and drains the idle one. */
struct stacks_map stacks_0 SEC(".maps"), stacks_1 SEC(".maps");
struct counts_map counts_0 SEC(".maps"), counts_1 SEC(".maps");

struct stacks_gen_map stacks_gen SEC(".maps") = {
	.values = { &stacks_0, &stacks_1 },
};

/* A deep stack's parts after its first (bpf/profiler.h, struct ignis_stack_part). */
struct tails_map tails_0 SEC(".maps"), tails_1 SEC(".maps");

struct tails_gen_map tails_gen SEC(".maps") = {
	.values = { &tails_0, &tails_1 },
};

struct counts_gen_map counts_gen SEC(".maps") = {
	.values = { &counts_0, &counts_1 },
};

/* Off-CPU time, in generations as the counts (bpf/offcpu.bpf.c). */
struct counts_map offcpu_0 SEC(".maps"), offcpu_1 SEC(".maps");

struct counts_gen_map offcpu_gen SEC(".maps") = {
	.values = { &offcpu_0, &offcpu_1 },
};

/*
 * Never read by a program. The agent updates its one slot after a flip: the kernel waits for
 * an RCU grace period after any update of a map-in-map, so when that update returns, no
 * program that read the old `gen` is still running.
 */
struct sync_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} sync_inner SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct sync_inner);
} gen_sync SEC(".maps") = {
	.values = { &sync_inner },
};

struct stats_map stats SEC(".maps");
struct sample_log_map sample_log SEC(".maps");
struct cpu_windows_map cpu_windows SEC(".maps");
struct procs_map procs SEC(".maps");
struct pid_filter_map pid_filter SEC(".maps");
struct events_map events SEC(".maps");

/* The table unwinder's (described in bpf/profiler.h at struct ignis_unwind_row). */
struct unwind_rows_map unwind_rows SEC(".maps");
struct unwind_maps_map unwind_maps SEC(".maps");
struct unwind_procs_map unwind_procs SEC(".maps");
struct unwind_exes_map unwind_exes SEC(".maps");
struct progs_map progs SEC(".maps");

/* The Python walker's (described in bpf/profiler.h at struct ignis_py_proc). */
struct py_procs_map py_procs SEC(".maps");
struct py_codes_map py_codes SEC(".maps");

/* Off-CPU time's (described in bpf/profiler.h at struct ignis_offcpu_task). */
struct offcpu_tasks_map offcpu_tasks SEC(".maps");
struct offcpu_cpus_map offcpu_cpus SEC(".maps");
struct progs_map offcpu_progs SEC(".maps");

struct cpu_states_map cpu_states SEC(".maps");

char LICENSE[] SEC("license") = "Dual BSD/GPL";
