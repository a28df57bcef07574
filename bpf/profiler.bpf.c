// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * ignis sampler: a perf_event program run by the cpu-clock event of every CPU, and two
 * tracepoint programs that follow execve() and process exit.
 *
 * Per sample it records (thread, process image, user stack, kernel stack, thread comm) -> count
 * in the active generation of the maps, and announces process images the agent has not seen
 * yet over the ring buffer, so their mappings are captured while the process is alive.
 * The map layout and the generation flip are described in bpf/profiler.h.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "profiler.h"
#include "stack.bpf.h"

#ifndef EEXIST
#define EEXIST 17
#endif

#ifndef PF_KTHREAD
#define PF_KTHREAD 0x00200000
#endif

const volatile struct ignis_config cfg = {};

/* The generation the sampler writes; flipped by the agent (agent/sampler.c). */
__u32 gen = 0;

/* Inner map templates; the agent sizes every instance before load. */
struct stacks_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct ignis_stack_id);
	__type(value, struct ignis_stack);
};

struct counts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct ignis_sample_key);
	__type(value, __u64);
};

struct stacks_map stacks_0 SEC(".maps"), stacks_1 SEC(".maps");
struct counts_map counts_0 SEC(".maps"), counts_1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, IGNIS_NR_GENS);
	__type(key, __u32);
	__array(values, struct stacks_map);
} stacks_gen SEC(".maps") = {
	.values = { &stacks_0, &stacks_1 },
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, IGNIS_NR_GENS);
	__type(key, __u32);
	__array(values, struct counts_map);
} counts_gen SEC(".maps") = {
	.values = { &counts_0, &counts_1 },
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

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, IGNIS_NR_GENS *STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct ignis_proc_state);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8);
} pid_filter SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

/*
 * Per-CPU working state, one lookup per sample: room for one stack walk (too large for the
 * 512-byte BPF stack), and the process image this CPU last found announced and unchanged,
 * so that consecutive samples of one process skip the procs lookup.
 */
struct cpu_state {
	struct ignis_stack stack;
	__u64 last_start_time;
	__u64 last_exec_vm;
	__u32 last_tgid;
	__u32 last_exec_id;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_state);
} cpu_states SEC(".maps");

static __always_inline void stat_inc(__u32 g, enum ignis_stat stat)
{
	__u32 idx = g * STAT_NR + stat;
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	/* Atomic: a sample can interrupt a tracepoint program on the same CPU. */
	if (v)
		__sync_fetch_and_add(v, 1);
}

static __always_inline __u32 read_gen(void)
{
	return *(volatile __u32 *)&gen & 1;
}

static __always_inline void emit_event(__u32 g, __u32 type, __u32 tgid, __u64 start_time,
				       __u32 exec_id, struct task_struct *leader, long *err)
{
	struct ignis_proc_event ev = {};

	ev.type = type;
	ev.tgid = tgid;
	ev.start_time = start_time;
	ev.exec_id = exec_id;
	ev.exe_inode = BPF_CORE_READ(leader, mm, exe_file, f_inode, i_ino);
	BPF_CORE_READ_STR_INTO(&ev.comm, leader, comm);
	*err = bpf_ringbuf_output(&events, &ev, sizeof(ev), 0);
	if (*err)
		stat_inc(g, STAT_EVENTS_LOST);
}

/* What a sample needs to know of its process, read once. */
struct task_info {
	struct task_struct *leader;
	__u64 start_time;
	__u64 exec_vm;
	__u32 exec_id;
	__u32 kthread;
};

static __always_inline void read_task(struct task_info *ti)
{
	struct task_struct *task, *leader;
	struct mm_struct *mm;

	/* Since 5.11 the current task is a BTF pointer: plain loads, no helper calls, which
	 * on a VM is most of this function's cost. The branch not taken is dead code the
	 * verifier removes. Locals, not ti's fields, in BPF_CORE_READ chains: CO-RE relocates
	 * every access in them. */
	if (bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_get_current_task_btf)) {
		task = bpf_get_current_task_btf();
		leader = task->group_leader;
		mm = task->mm;
		ti->leader = leader;
		ti->start_time = leader->start_boottime;
		ti->exec_id = (__u32)leader->self_exec_id;
		ti->kthread = !!(task->flags & PF_KTHREAD);
		ti->exec_vm = mm ? mm->exec_vm : 0;
		return;
	}
	task = (struct task_struct *)bpf_get_current_task();
	leader = BPF_CORE_READ(task, group_leader);
	ti->leader = leader;
	ti->start_time = BPF_CORE_READ(leader, start_boottime);
	ti->exec_id = (__u32)BPF_CORE_READ(leader, self_exec_id);
	ti->kthread = !!(BPF_CORE_READ(task, flags) & PF_KTHREAD);
	mm = BPF_CORE_READ(task, mm);
	ti->exec_vm = mm ? BPF_CORE_READ(mm, exec_vm) : 0;
}

/*
 * Announce a process image on its first sample, and again when its executable mappings
 * grew or shrank (mm->exec_vm changed: dlopen, munmap of a library), at most once per
 * cfg.mmap_event_gap_ns. The procs entry is written only once the event is in the ring
 * buffer, so an event lost to a full buffer is retried on the next sample. Returns 1 when
 * the image is announced and unchanged.
 */
static __always_inline int track_process(__u32 g, __u32 tgid, const struct task_info *ti)
{
	struct ignis_proc_state *st, fresh = {};
	__u64 now;
	long err;

	st = bpf_map_lookup_elem(&procs, &tgid);
	if (st && st->start_time == ti->start_time && st->exec_id == ti->exec_id) {
		if (st->exec_vm == ti->exec_vm)
			return 1;
		now = bpf_ktime_get_ns();
		if (now - st->last_event_ns < cfg.mmap_event_gap_ns)
			return 0;
		emit_event(g, PROC_EVENT_MMAP, tgid, ti->start_time, ti->exec_id, ti->leader, &err);
		if (err)
			return 0;
		st->exec_vm = ti->exec_vm;
		st->last_event_ns = now;
		return 1;
	}

	emit_event(g, PROC_EVENT_NEW, tgid, ti->start_time, ti->exec_id, ti->leader, &err);
	if (err)
		return 0;
	fresh.start_time = ti->start_time;
	fresh.exec_id = ti->exec_id;
	fresh.exec_vm = ti->exec_vm;
	fresh.last_event_ns = bpf_ktime_get_ns();
	return !bpf_map_update_elem(&procs, &tgid, &fresh, BPF_ANY);
}

/*
 * Store the stack under its id in the generation's stacks map. Returns 0, or -1 after
 * counting why it could not be stored.
 */
static __always_inline int store_stack(__u32 g, void *stacks, struct ignis_stack *st,
				       struct ignis_stack_id *id)
{
	long err;

	stack_hash128(st->ips, st->len, id);
	if (bpf_map_lookup_elem(stacks, id))
		return 0;
	err = bpf_map_update_elem(stacks, id, st, BPF_NOEXIST);
	if (!err || err == -EEXIST) /* -EEXIST: another CPU stored it meanwhile */
		return 0;
	stat_inc(g, STAT_DROP_STACKS_FULL);
	id->lo = id->hi = 0;
	return -1;
}

/* Walk one stack into st and store it. Returns 0 or -1 when the walk failed. */
static __always_inline int walk_stack(void *ctx, __u32 g, void *stacks, struct ignis_stack *st,
				      __u64 flags, struct ignis_stack_id *id)
{
	long n;

	id->lo = id->hi = 0;
	n = bpf_get_stack(ctx, st->ips, sizeof(st->ips), flags);
	if (n < 0)
		return -1;
	st->len = (__u32)n / sizeof(__u64);
	if (st->len == 0)
		return 0;
	if (st->len > IGNIS_MAX_STACK_DEPTH)
		st->len = IGNIS_MAX_STACK_DEPTH;
	store_stack(g, stacks, st, id);
	return 0;
}

SEC("perf_event")
int ignis_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, g = read_gen(), zero = 0;
	struct ignis_sample_key key = {};
	struct task_info ti;
	struct cpu_state *cs;
	void *stacks, *counts;
	__u64 *count, one = 1;
	int err;

	stat_inc(g, STAT_SAMPLES);
	if (tgid == 0) {
		stat_inc(g, STAT_IDLE);
		return 0;
	}
	if (cfg.filter_pids && !bpf_map_lookup_elem(&pid_filter, &tgid)) {
		stat_inc(g, STAT_FILTERED);
		return 0;
	}
	stacks = bpf_map_lookup_elem(&stacks_gen, &g);
	counts = bpf_map_lookup_elem(&counts_gen, &g);
	cs = bpf_map_lookup_elem(&cpu_states, &zero);
	if (!stacks || !counts || !cs) {
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
	} else if (cs->last_tgid != tgid || cs->last_start_time != ti.start_time ||
		   cs->last_exec_id != ti.exec_id || cs->last_exec_vm != ti.exec_vm) {
		cs->last_tgid = 0;
		if (track_process(g, tgid, &ti)) {
			cs->last_tgid = tgid;
			cs->last_start_time = ti.start_time;
			cs->last_exec_id = ti.exec_id;
			cs->last_exec_vm = ti.exec_vm;
		}
	}

	if (!cfg.skip_walk) {
		if (cfg.user_stacks && !ti.kthread &&
		    walk_stack(ctx, g, stacks, &cs->stack, BPF_F_USER_STACK, &key.user_stack)) {
			key.flags |= SAMPLE_F_USTACK_ERR;
			stat_inc(g, STAT_USTACK_ERR);
		}
		if (cfg.kernel_stacks &&
		    walk_stack(ctx, g, stacks, &cs->stack, 0, &key.kernel_stack)) {
			key.flags |= SAMPLE_F_KSTACK_ERR;
			stat_inc(g, STAT_KSTACK_ERR);
		}
	}

	count = bpf_map_lookup_elem(counts, &key);
	if (count) {
		__sync_fetch_and_add(count, 1);
		return 0;
	}
	err = bpf_map_update_elem(counts, &key, &one, BPF_NOEXIST);
	if (err == -EEXIST) {
		count = bpf_map_lookup_elem(counts, &key);
		if (count)
			__sync_fetch_and_add(count, 1);
	} else if (err) {
		stat_inc(g, STAT_DROP_COUNTS_FULL);
	}
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

char LICENSE[] SEC("license") = "Dual BSD/GPL";
