// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * ignis off-CPU time: where threads wait (sleep, I/O, locks, a CPU), sampled by time.
 *
 * The programs share each thread's struct ignis_offcpu_task (task storage, freed with the
 * thread: no PID reuse, nothing per CPU that a migration could confuse):
 *
 *  - ignis_switch, on sched_switch: the thread going off CPU notes when and in what state
 *    (preempted, interruptible or uninterruptible sleep); the thread coming on adds the time
 *    since to its accumulator for that state. An accumulator that reaches
 *    cfg.offcpu_period_ns becomes a sample of its whole weight, which the thread owes. So
 *    totals are exact and a wait shorter than the period still counts, in proportion: it
 *    crosses the period with a probability that grows with its length, and then carries the
 *    accumulated time. A per-CPU credit caps samples per second; time over the cap is
 *    recorded without stacks (SAMPLE_F_OFFCPU_CAPPED), so it still adds up. For a sample
 *    owed, the thread's kernel stack is taken there (bpf_get_task_stack(): it has not run
 *    yet, its stack is the blocked one) with its user registers.
 *
 *  - ignis_offcpu, at the end of a system call: a thread that owes a sample and whose user
 *    registers are still the ones it blocked with waited in this system call, so its user
 *    stack is the blocked one. Only the thread itself can read it: it is walked here, as a
 *    CPU sample is (frame pointers, or the table unwinder's copy ignis_offcpu_unwind, Python
 *    frames included), and the weight added to the generation's offcpu map.
 *
 *  - A wait outside a system call (preempted in user mode, a page fault on I/O) never gets
 *    there with the same registers: its sample is recorded with the kernel stack and only the
 *    user pc it blocked at, then [truncated] (the next owed sample, or the thread's exit,
 *    records it; counted as user_leaf).
 *
 * The walk would be better at the return from schedule() (fexit) or in finish_task_switch()
 * (a kprobe), but neither is on every kernel: some build without kprobes or BPF trampolines;
 * tracepoints are everywhere.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "maps.bpf.h"
#include "sample.bpf.h"

#ifndef TASK_INTERRUPTIBLE
#define TASK_INTERRUPTIBLE   0x0001
#define TASK_UNINTERRUPTIBLE 0x0002
#define TASK_DEAD	     0x0080
#endif

/* Before 5.14 the state was task_struct.state. */
struct task_struct___o {
	volatile long state;
} __attribute__((preserve_access_index));

/*
 * The thread state a switch-out leaves prev in (IGNIS_STATE_*). Since 5.18 the tracepoint
 * passes the state __schedule() acted on (prev_state); reading prev->__state here instead
 * can see TASK_WAKING set by a wakeup on another CPU meanwhile, and call a disk wait a
 * sleep. The agent says which (cfg.switch_prev_state): the branch not taken is dead code.
 */
static __always_inline __u32 switch_state(bool preempt, struct task_struct *prev, __u32 arg_state,
					  __u32 *dead)
{
	__u32 state;

	if (cfg.switch_prev_state)
		state = arg_state;
	else if (bpf_core_field_exists(prev->__state))
		state = BPF_CORE_READ(prev, __state);
	else
		state = (__u32)BPF_CORE_READ((struct task_struct___o *)prev, state);
	*dead = state & TASK_DEAD;
	/* Preempted while setting a sleep state: __schedule() keeps it on the run queue. */
	if (preempt || !state)
		return IGNIS_STATE_RUNNABLE;
	if (state & TASK_UNINTERRUPTIBLE)
		return IGNIS_STATE_DISK;
	return IGNIS_STATE_SLEEPING;
}

/* Whose off-CPU time is recorded: not the idle task's, kernel threads only if asked, only the
 * --pid processes if given. */
static __always_inline int tracked(struct task_struct *t)
{
	__u32 tgid;

	if (!t->pid)
		return 0;
	if (!cfg.offcpu_kthreads && (t->flags & PF_KTHREAD))
		return 0;
	tgid = t->tgid;
	if (cfg.filter_pids && !bpf_map_lookup_elem(&pid_filter, &tgid))
		return 0;
	return 1;
}

/* A sample key for task t (not necessarily current), no stacks. */
static __always_inline void task_key(struct task_struct *t, struct ignis_sample_key *key,
				     __u32 state)
{
	struct task_struct *leader = t->group_leader;

	key->tgid = t->tgid;
	key->pid = t->pid;
	key->start_time = leader->start_boottime;
	key->exec_id = (__u32)leader->self_exec_id;
	key->flags = state << SAMPLE_F_STATE_SHIFT;
	if (t->flags & PF_KTHREAD)
		key->flags |= SAMPLE_F_KTHREAD;
	bpf_probe_read_kernel_str(key->comm, sizeof(key->comm), t->comm);
}

/* Record ns of off-CPU time under key, counting it as stat. */
static __always_inline void add_offcpu(__u32 g, struct ignis_sample_key *key, __u64 ns,
				       enum ignis_stat stat)
{
	void *offcpu = bpf_map_lookup_elem(&offcpu_gen, &g);

	if (!offcpu) {
		stat_inc(g, STAT_OFFCPU_DROPS);
		return;
	}
	if (record_ns(g, offcpu, key, ns))
		return;
	stat_add(g, stat, ns);
	if (stat != STAT_OFFCPU_CAPPED_NS && stat != STAT_OFFCPU_EXITED_NS)
		stat_inc(g, STAT_OFFCPU_SAMPLES);
}

/*
 * The owed sample's kernel stack, if generation g's stacks map has it. A sample owed in an
 * earlier window (the thread made no system call since) was stored in a map the agent has
 * drained since: unless the same stack is in this one (ids are hashes of the frames), it
 * goes without (counted). A stack that could not be walked or stored when the sample was
 * owed was counted then: the sample is only flagged.
 */
static __always_inline void owed_kernel_stack(__u32 g, struct ignis_offcpu_task *st,
					      struct ignis_sample_key *key)
{
	void *stacks;

	if (st->owed_kstack_lost) {
		key->flags |= SAMPLE_F_KSTACK_ERR;
		return;
	}
	if (!cfg.kernel_stacks || (!st->owed_kstack.lo && !st->owed_kstack.hi))
		return;
	stacks = bpf_map_lookup_elem(&stacks_gen, &g);
	if (stacks && bpf_map_lookup_elem(stacks, &st->owed_kstack)) {
		key->kernel_stack = st->owed_kstack;
		return;
	}
	key->flags |= SAMPLE_F_KSTACK_ERR;
	stat_inc(g, STAT_KSTACK_ERR);
}

/* Announce t's process image to the agent, as a CPU sample of it would (t need not be
 * current): its samples need its mappings. */
static __always_inline void announce_task(__u32 g, struct task_struct *t)
{
	__u32 slot = CPU_STATE_OFFCPU;
	struct cpu_state *cs;
	struct task_info ti;
	struct mm_struct *mm;

	if (t->flags & PF_KTHREAD)
		return;
	cs = bpf_map_lookup_elem(&cpu_states, &slot);
	if (!cs)
		return;
	ti.leader = t->group_leader;
	ti.start_time = ti.leader->start_boottime;
	ti.exec_id = (__u32)ti.leader->self_exec_id;
	ti.kthread = 0;
	mm = t->mm;
	ti.exec_vm = mm ? mm->exec_vm : 0;
	announce_process(g, cs, t->tgid, &ti);
}

/* A thread's time in its accumulators, short of a period: recorded without stacks. */
static __always_inline void flush_short(__u32 g, struct task_struct *t,
					struct ignis_offcpu_task *st)
{
	struct ignis_sample_key key = {};
	__u32 state;

	for (state = IGNIS_STATE_SLEEPING; state <= IGNIS_STATE_RUNNABLE; state++) {
		if (!st->acc_ns[state])
			continue;
		task_key(t, &key, state);
		key.flags |= SAMPLE_F_OFFCPU_EXITED;
		add_offcpu(g, &key, st->acc_ns[state], STAT_OFFCPU_EXITED_NS);
		st->acc_ns[state] = 0;
	}
}

/*
 * Record t's owed sample with what is known without walking its user stack: the kernel stack
 * and the user pc it blocked at, then [truncated] (a table stack cut short). t's image must
 * be the one it blocked in, else its pc names nothing.
 */
static __always_inline void record_leaf(__u32 g, struct task_struct *t,
					struct ignis_offcpu_task *st)
{
	__u32 zero = CPU_STATE_OFFCPU;
	struct ignis_sample_key key = {};
	struct cpu_state *cs = bpf_map_lookup_elem(&cpu_states, &zero);
	void *stacks = bpf_map_lookup_elem(&stacks_gen, &g);
	__u64 ns = st->owed_ns;

	st->owed_ns = 0;
	task_key(t, &key, st->owed_state);
	owed_kernel_stack(g, st, &key);
	if (cs && stacks && !(key.flags & SAMPLE_F_KTHREAD) && cfg.user_stacks && st->owed_ip &&
	    st->owed_exec_id == key.exec_id) {
		cs->stack.len = 1;
		cs->stack.flags = STACK_F_TABLES | STACK_F_TRUNCATED;
		cs->stack.ips[0] = st->owed_ip;
		if (store_stack(g, stacks, &cs->stack, &key.user_stack))
			key.flags |= SAMPLE_F_USTACK_ERR;
	}
	add_offcpu(g, &key, ns, STAT_OFFCPU_LEAF_NS);
	announce_task(g, t);
}

/* The user registers t entered the kernel with (t need not be current). */
static __always_inline void task_regs(struct task_struct *t, __u64 *ip, __u64 *sp)
{
	struct pt_regs *regs;

	if (bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs))
		regs = (struct pt_regs *)bpf_task_pt_regs(t);
	else
		regs = (struct pt_regs *)((__u64)BPF_CORE_READ(t, stack) + 16384 -
					  bpf_core_type_size(struct pt_regs));
	*ip = BPF_CORE_READ(regs, ip);
	*sp = BPF_CORE_READ(regs, sp);
}

static __always_inline int take_credit(__u64 now)
{
	__u32 zero = 0;
	struct ignis_offcpu_cpu *c;
	__u64 credit;

	if (!cfg.offcpu_cost_ns)
		return 1;
	c = bpf_map_lookup_elem(&offcpu_cpus, &zero);
	if (!c)
		return 0;
	credit = c->credit_ns + (now - c->last_ns);
	if (!c->last_ns || credit > cfg.offcpu_burst_ns)
		credit = cfg.offcpu_burst_ns;
	c->last_ns = now;
	if (credit < cfg.offcpu_cost_ns) {
		c->credit_ns = credit;
		return 0;
	}
	c->credit_ns = credit - cfg.offcpu_cost_ns;
	return 1;
}

/*
 * next owes a sample of ns in state: take its kernel stack and user registers now, while it
 * has not run (a kernel thread's sample is recorded at once: it has no user stack).
 */
static __always_inline void owe(__u32 g, struct task_struct *next, struct ignis_offcpu_task *st,
				__u32 state, __u64 ns)
{
	__u32 slot = CPU_STATE_OFFCPU;
	struct cpu_state *cs = bpf_map_lookup_elem(&cpu_states, &slot);
	void *stacks = bpf_map_lookup_elem(&stacks_gen, &g);
	struct ignis_stack_id none = {};
	long n = -1;

	st->owed_ns = ns;
	st->owed_state = state;
	st->owed_kstack = none;
	st->owed_kstack_lost = 0;
	st->owed_exec_id = (__u32)next->group_leader->self_exec_id;
	st->owed_ip = st->owed_sp = 0;
	if (cs && stacks && cfg.kernel_stacks) {
		n = bpf_get_task_stack(next, cs->stack.ips, sizeof(cs->stack.ips), 0);
		if (n > 0) {
			cs->stack.len = (__u32)n / sizeof(__u64);
			cs->stack.flags = 0;
			if (cs->stack.len > IGNIS_MAX_STACK_DEPTH)
				cs->stack.len = IGNIS_MAX_STACK_DEPTH;
			if (store_stack(g, stacks, &cs->stack, &st->owed_kstack))
				st->owed_kstack_lost = 1;
		} else if (n < 0) {
			stat_inc(g, STAT_KSTACK_ERR);
			st->owed_kstack_lost = 1;
		}
	}
	if (next->flags & PF_KTHREAD) {
		record_leaf(g, next, st);
		return;
	}
	task_regs(next, &st->owed_ip, &st->owed_sp);
}

/* next comes back on CPU after a switch-out this program saw at st->off_ns. */
static __always_inline void switched_in(__u32 g, __u64 now, struct task_struct *next,
					struct ignis_offcpu_task *st)
{
	__u64 start = st->off_ns, ns, acc;
	__u32 state = st->state;

	st->off_ns = 0;
	if (now <= start)
		return;
	stat_inc(g, STAT_OFFCPU_SWITCHES);
	ns = now - start;
	if (ns < cfg.offcpu_min_block_ns) {
		stat_add(g, STAT_OFFCPU_SHORT_NS, ns);
		return;
	}
	/* A wait is the window's in which it ends, whole: one that began in an earlier window
	 * is not cut (that window was shipped before its end was known), so that a thread's
	 * CPU and off-CPU time add up to its wall time over any run of windows. */
	if (state < IGNIS_STATE_SLEEPING || state > IGNIS_STATE_RUNNABLE)
		state = IGNIS_STATE_SLEEPING;
	acc = st->acc_ns[state & 3] + ns;
	if (acc < cfg.offcpu_period_ns) {
		st->acc_ns[state & 3] = acc;
		return;
	}
	st->acc_ns[state & 3] = 0;
	/* A sample owed and not walked: it did not wait in a system call. */
	if (st->owed_ns)
		record_leaf(g, next, st);
	if (!take_credit(now)) {
		struct ignis_sample_key key = {};

		task_key(next, &key, state);
		key.flags |= SAMPLE_F_OFFCPU_CAPPED;
		add_offcpu(g, &key, acc, STAT_OFFCPU_CAPPED_NS);
		announce_task(g, next);
		return;
	}
	owe(g, next, st, state, acc);
}

/*
 * Whether a thread's storage can be created in the scheduler. Before 6.4 it was allocated
 * with GFP_ATOMIC, which may wake kswapd: a wakeup, and an rq lock, under the rq lock
 * sched_switch holds. Since 6.4 it comes from BPF's own allocator (bpf_mem_alloc), which
 * takes no lock. Before, a thread's storage is created at its first system call's end.
 */
static __always_inline int create_in_scheduler(void)
{
	return bpf_core_field_exists(struct bpf_local_storage_map, selem_ma);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(ignis_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now = bpf_ktime_get_ns();
	struct ignis_offcpu_task *st;
	__u32 g = read_gen(), state, dead;

	if (tracked(prev)) {
		/* ctx[3] is prev_state (5.18+); read only where the agent found it. */
		state = switch_state(preempt, prev, cfg.switch_prev_state ? (__u32)ctx[3] : 0,
				     &dead);
		st = bpf_task_storage_get(
			&offcpu_tasks, prev, 0,
			create_in_scheduler() && !dead ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
		if (st && dead) {
			/* Its last switch: what it owes and its short waits, recorded now (nothing
			 * of it runs after this). */
			if (st->owed_ns)
				record_leaf(g, prev, st);
			flush_short(g, prev, st);
		} else if (st) {
			st->off_ns = now;
			st->state = state;
		} else if (create_in_scheduler() && !dead) {
			stat_inc(g, STAT_OFFCPU_NO_STATE);
		}
	}
	if (!next->pid)
		return 0;
	st = bpf_task_storage_get(&offcpu_tasks, next, 0, 0);
	if (st && st->off_ns)
		switched_in(g, now, next, st);
	return 0;
}

/* The end of a system call: walk the sample this thread owes if it waited in this one. */
SEC("tp_btf/sys_exit")
int BPF_PROG(ignis_offcpu)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 g, slot = CPU_STATE_OFFCPU, state;
	struct ignis_sample_key key = {};
	struct ignis_offcpu_task *st;
	void *stacks, *offcpu;
	struct task_info ti;
	struct cpu_state *cs;
	__u64 ns;

	st = bpf_task_storage_get(&offcpu_tasks, task, 0, 0);
	if (!st && !create_in_scheduler() && tracked(task)) {
		/* Before 6.4: the thread's first system call since the agent started. */
		if (!bpf_task_storage_get(&offcpu_tasks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE))
			stat_inc(read_gen(), STAT_OFFCPU_NO_STATE);
		return 0;
	}
	if (!st || !st->owed_ns)
		return 0;
	g = read_gen();
	cs = bpf_map_lookup_elem(&cpu_states, &slot);
	stacks = bpf_map_lookup_elem(&stacks_gen, &g);
	offcpu = bpf_map_lookup_elem(&offcpu_gen, &g);
	if (!cs || !stacks || !offcpu) {
		stat_inc(g, STAT_OFFCPU_DROPS);
		return 0;
	}
	if (task_user_regs(&cs->uw) || cs->uw.pc != st->owed_ip || cs->uw.sp != st->owed_sp) {
		record_leaf(g, task, st);
		return 0;
	}
	ns = st->owed_ns;
	state = st->owed_state;
	st->owed_ns = 0;

	read_task(&ti);
	key.tgid = task->tgid;
	key.pid = task->pid;
	key.start_time = ti.start_time;
	key.exec_id = ti.exec_id;
	key.flags = state << SAMPLE_F_STATE_SHIFT;
	bpf_get_current_comm(&key.comm, sizeof(key.comm));
	owed_kernel_stack(g, st, &key);
	announce_process(g, cs, key.tgid, &ti);
	if (cfg.user_stacks) {
		if ((!cfg.unwind_tables || !start_unwind(ctx, &offcpu_progs, CPU_STATE_OFFCPU, g,
							 cs, &key, 0, ns, ti.exec_vm)) &&
		    walk_stack(ctx, g, stacks, &cs->stack, BPF_F_USER_STACK, &key.user_stack,
			       STAT_USTACK_ERR))
			key.flags |= SAMPLE_F_USTACK_ERR;
	}
	add_offcpu(g, &key, ns, STAT_OFFCPU_WALKED_NS);
	return 0;
}
