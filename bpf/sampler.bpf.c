// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * ignis sampler: a perf_event program run by the cpu-clock event of every CPU, and two
 * tracepoint programs that follow execve() and process exit.
 *
 * Per sample it records (thread, process image, user stack, kernel stack, thread comm) -> count
 * in the active generation of the maps, and announces process images the agent has not seen
 * yet over the ring buffer, so their mappings are captured while the process is alive.
 * A user stack is walked with frame pointers (bpf_get_stack), or, where the process has
 * unwind tables, by the table unwinder (bpf/unwind.bpf.c): this file finds the tables and the
 * user registers and tail-calls it, and the unwinder records the sample.
 * The maps are in bpf/maps.bpf.h; their layout and the generation flip in bpf/profiler.h.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "maps.bpf.h"
#include "sample.bpf.h"

/* Whether the sample interrupted user mode. */
static __always_inline bool in_user_mode(struct bpf_perf_event_data *ctx)
{
	/* The context allows only whole 8-byte loads of the registers; cs's place is fixed by
	 * the UAPI struct pt_regs. The low bits of cs hold the privilege level: 3 is user. */
	__u64 cs =
		*(const __u64 *)((const char *)&ctx->regs + __builtin_offsetof(struct pt_regs, cs));

	return (cs & 3) == 3;
}

/* The user registers at the sample: the interrupted ones, or, when the sample hit the
 * kernel, the ones the task entered the kernel with. Returns 0 or -1. */
static __always_inline int user_regs(struct bpf_perf_event_data *ctx, bool user_mode,
				     struct uw_state *uw)
{
	if (user_mode) {
		uw->pc = ctx->regs.ip;
		uw->sp = ctx->regs.sp;
		uw->bp = ctx->regs.bp;
		return 0;
	}
	return task_user_regs(uw);
}

SEC("perf_event")
int ignis_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, g = read_gen(), zero = 0;
	struct ignis_sample_key key = {};
	struct ignis_cpu_window *cw;
	struct task_info ti;
	struct cpu_state *cs;
	bool user_mode;
	void *stacks;

	/* Only this program counts samples, one run per CPU at a time: no atomic needed. */
	cw = bpf_map_lookup_elem(&cpu_windows, &g);
	if (cw)
		cw->samples++;
	if (tgid == 0) {
		stat_inc(g, STAT_IDLE);
		return 0;
	}
	if (cfg.filter_pids && !bpf_map_lookup_elem(&pid_filter, &tgid)) {
		stat_inc(g, STAT_FILTERED);
		return 0;
	}
	cs = bpf_map_lookup_elem(&cpu_states, &zero);
	if (!cs) {
		stat_inc(g, STAT_DROP_NO_GEN);
		return 0;
	}

	read_task(&ti);
	key.tgid = tgid;
	key.pid = (__u32)id;
	key.start_time = ti.start_time;
	key.exec_id = ti.exec_id;
	bpf_get_current_comm(&key.comm, sizeof(key.comm));

	if (ti.kthread) {
		/* Without kernel stacks a kernel thread has nothing to show. */
		if (!cfg.kernel_stacks) {
			stat_inc(g, STAT_FILTERED);
			return 0;
		}
		key.flags |= SAMPLE_F_KTHREAD;
	} else {
		announce_process(g, cs, tgid, &ti);
	}

	if (!cfg.skip_walk) {
		stacks = bpf_map_lookup_elem(&stacks_gen, &g);
		if (!stacks) {
			stat_inc(g, STAT_DROP_NO_GEN);
			return 0;
		}
		user_mode = in_user_mode(ctx);
		/* The kernel stack first: the table unwinder records the sample itself. A
		 * sample in user mode has none (bpf_get_stack() would find 0 frames, after
		 * setting up a callchain buffer: about a microsecond on a VM). */
		if (cfg.kernel_stacks && !user_mode &&
		    walk_stack(ctx, g, stacks, &cs->stack, 0, &key.kernel_stack, STAT_KSTACK_ERR))
			key.flags |= SAMPLE_F_KSTACK_ERR;
		if (cfg.user_stacks && !ti.kthread) {
			/* Back here from start_unwind(): frame pointers, or no user stack. */
			if ((!cfg.unwind_tables ||
			     !start_unwind(ctx, &progs, CPU_STATE_SAMPLE, g, cs, &key,
					   user_regs(ctx, user_mode, &cs->uw), 0, ti.exec_vm)) &&
			    walk_stack(ctx, g, stacks, &cs->stack, BPF_F_USER_STACK,
				       &key.user_stack, STAT_USTACK_ERR))
				key.flags |= SAMPLE_F_USTACK_ERR;
		}
	}
	record(g, &key);
	return 0;
}

/* execve() replaced a process image the agent knows: forget it so its next sample announces
 * the new one, and tell the agent so it can release the old image after the window. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(ignis_exec, struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid), g = read_gen();
	long err;

	if (!bpf_map_lookup_elem(&procs, &tgid))
		return 0;
	bpf_map_delete_elem(&procs, &tgid);
	emit_event(g, PROC_EVENT_EXEC, tgid, BPF_CORE_READ(p, start_boottime),
		   (__u32)BPF_CORE_READ(p, self_exec_id), p, &err);
	return 0;
}

/* The last thread of a process the agent knows exited. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(ignis_exit, struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid), g = read_gen();
	struct ignis_proc_state *st;
	long err;

	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	st = bpf_map_lookup_elem(&procs, &tgid);
	if (!st)
		return 0;
	emit_event(g, PROC_EVENT_EXIT, tgid, st->start_time, st->exec_id,
		   BPF_CORE_READ(p, group_leader), &err);
	bpf_map_delete_elem(&procs, &tgid);
	return 0;
}
