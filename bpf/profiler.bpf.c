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

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* sized by the agent (--unwind-table-size) */
	__type(key, __u32);
	__type(value, struct ignis_unwind_row);
} unwind_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* sized by the agent */
	__type(key, __u32);
	__type(value, struct ignis_unwind_mapping);
} unwind_maps SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by the agent */
	__type(key, __u32);
	__type(value, struct ignis_unwind_proc);
} unwind_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by the agent */
	__type(key, struct ignis_unwind_exe_key);
	__type(value, struct ignis_unwind_exe);
} unwind_exes SEC(".maps");

/* Filled by the agent after load (a program it did not load leaves its slot empty). */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} progs SEC(".maps");

/* Where the table unwinder is, kept across its tail calls. */
struct uw_state {
	__u64 pc, sp, bp; /* the registers of the frame being unwound */
	__u32 tgid;
	__u32 version; /* of the process's unwind_procs entry */
	__u32 map_start;
	__u32 nr_maps;
	__u32 gen;	/* the generation ignis_sample read */
	__u32 bp_valid; /* 0: rbp is unknown (a row said it was clobbered) */
	__u32 exact;	/* pc is an interrupted instruction, not a return address */
	__u32 fp;	/* pc was found through the frame pointer */
	/* The mapping of the last frame: consecutive frames are often in one object. */
	__u64 m_start, m_end; /* m_end 0: none */
	__u64 m_base;
	__u32 m_row_start, m_nr_rows;
	struct ignis_sample_key key;
};

/*
 * Per-CPU working state, one lookup per sample: room for one stack walk (too large for the
 * 512-byte BPF stack), the table unwinder's state, and the process image this CPU last
 * found announced and unchanged, so that consecutive samples of one process skip the procs
 * lookup.
 */
struct cpu_state {
	struct ignis_stack stack;
	struct uw_state uw;
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
	ev.exe_dev = BPF_CORE_READ(leader, mm, exe_file, f_inode, i_sb, s_dev);
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
 * cfg.mmap_event_gap_ns -- or per quarter of the process's age if that is shorter: a first
 * sample often lands while the dynamic loader is still mapping the libraries, and what it
 * maps next must be announced within a few samples (its tables, its symbols), not after a
 * gap that is long for a young process (its age counts from fork, so a process that execs
 * late keeps the full gap). Each event then comes at an age at least 4/3 of the one before:
 * about 25-30 more events for a first sample at 1 ms, until the age reaches four gaps. The
 * procs entry is written only once the event is in the ring buffer, so an event lost to a
 * full buffer is retried on the next sample. Returns 1 when the
 * image is announced and unchanged.
 */
static __always_inline int track_process(__u32 g, __u32 tgid, const struct task_info *ti)
{
	struct ignis_proc_state *st, fresh = {};
	__u64 now, gap, age;
	long err;

	st = bpf_map_lookup_elem(&procs, &tgid);
	if (st && st->start_time == ti->start_time && st->exec_id == ti->exec_id) {
		if (st->exec_vm == ti->exec_vm)
			return 1;
		now = bpf_ktime_get_ns();
		gap = cfg.mmap_event_gap_ns;
		age = bpf_ktime_get_boot_ns() - ti->start_time; /* start_boottime's clock */
		if (age / 4 < gap)
			gap = age / 4;
		if (now - st->last_event_ns < gap)
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

	stack_hash128(st->ips, st->len, st->flags, id);
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
	st->flags = 0;
	if (st->len == 0)
		return 0;
	if (st->len > IGNIS_MAX_STACK_DEPTH)
		st->len = IGNIS_MAX_STACK_DEPTH;
	store_stack(g, stacks, st, id);
	return 0;
}

/* Count the sample under its key in the generation's counts map. */
static __always_inline void record(__u32 g, void *counts, struct ignis_sample_key *key)
{
	__u64 *count, one = 1;
	long err;

	count = bpf_map_lookup_elem(counts, key);
	if (count) {
		__sync_fetch_and_add(count, 1);
		return;
	}
	err = bpf_map_update_elem(counts, key, &one, BPF_NOEXIST);
	if (err == -EEXIST) {
		count = bpf_map_lookup_elem(counts, key);
		if (count)
			__sync_fetch_and_add(count, 1);
	} else if (err) {
		stat_inc(g, STAT_DROP_COUNTS_FULL);
	}
}

/* ---- The table unwinder ----------------------------------------------------------------- */

/* Frames unwound per program run; the unwinder tail-calls itself for more (at most
 * IGNIS_MAX_STACK_DEPTH / UNWIND_FRAMES_PER_RUN + 1 runs, well under the kernel's 33). */
#define UNWIND_FRAMES_PER_RUN 16

/* What one step of the unwinder concluded. */
enum step_result {
	STEP_CONTINUE = 0,
	STEP_COMPLETE,	/* the outermost frame: the stack is whole */
	STEP_END,	/* a frame-pointer chain ends (rbp 0): judged by its root later */
	STEP_TRUNCATED, /* stopped early; the reason is counted */
};

/*
 * The mapping of unwind_maps[start, start + n) whose [start, end) holds pc: its index, or -1.
 * A global function, so the verifier checks it once, not at every frame of the walk.
 */
__noinline int unwind_find_mapping(__u32 start, __u32 n, __u64 pc)
{
	__u32 lo = 0, hi = n, i, idx;
	struct ignis_unwind_mapping *m;

	if (n > IGNIS_MAX_UNWIND_MAPS)
		return -1;
	/* The last mapping with m.start <= pc. */
	for (i = 0; i <= IGNIS_UNWIND_MAPS_LOG; i++) {
		__u32 mid;

		if (lo >= hi)
			break;
		mid = lo + (hi - lo) / 2;
		idx = start + mid;
		m = bpf_map_lookup_elem(&unwind_maps, &idx);
		if (!m)
			return -1;
		if (m->start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	idx = start + lo - 1;
	m = bpf_map_lookup_elem(&unwind_maps, &idx);
	if (!m || pc >= m->end)
		return -1;
	return (int)idx;
}

/* The last row of unwind_rows[start, start + n) with row.pc <= rel: its index, or -1. */
__noinline int unwind_find_row(__u32 start, __u32 n, __u32 rel)
{
	__u32 lo = 0, hi = n, i, idx;
	struct ignis_unwind_row *r;

	if (n > IGNIS_MAX_UNWIND_ROWS)
		return -1;
	for (i = 0; i <= IGNIS_UNWIND_ROWS_LOG; i++) {
		__u32 mid;

		if (lo >= hi)
			break;
		mid = lo + (hi - lo) / 2;
		idx = start + mid;
		r = bpf_map_lookup_elem(&unwind_rows, &idx);
		if (!r)
			return -1;
		if (r->pc <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? (int)(start + lo - 1) : -1;
}

/*
 * A frame with no usable row: its caller through the frame pointer. no_table: the pc lies in
 * no table the unwinder has (rather than in a table's gap without CFI, where the agent's
 * tables cannot tell either), so the caller is marked IGNIS_USER_IP_FP for the agent to check.
 */
static __always_inline int step_frame_pointer(struct uw_state *uw, bool no_table)
{
	__u64 frame[2]; /* saved rbp, return address */

	if (!uw->bp_valid) {
		stat_inc(uw->gen, STAT_UNWIND_LOST);
		return STEP_TRUNCATED;
	}
	if (!uw->bp)
		return STEP_END; /* the end of a frame-pointer chain: judged by its root */
	if (bpf_probe_read_user(frame, sizeof(frame), (void *)uw->bp)) {
		stat_inc(uw->gen, STAT_UNWIND_READ_FAULT);
		return STEP_TRUNCATED;
	}
	uw->sp = uw->bp + 16;
	uw->bp = frame[0];
	uw->pc = frame[1];
	uw->exact = 0;
	uw->fp = no_table;
	return uw->pc ? STEP_CONTINUE : STEP_END;
}

/*
 * Unwind one frame: from (pc, sp, bp) to the caller's. first: pc is the sampled
 * instruction; otherwise a return address, looked up at pc - 1 (the call), since a call
 * that never returns may be the last instruction of its function.
 */
static __always_inline int step(struct uw_state *uw, bool first)
{
	struct ignis_unwind_mapping *m;
	struct ignis_unwind_row *row;
	__u64 pc = first || uw->exact ? uw->pc : uw->pc - 1, cfa, rel, ra;
	__u64 sigregs[7]; /* rbp .. rip of the signal frame's struct sigcontext */
	__u32 idx, cfa_type, rbp_type;
	__s64 off;
	int mi, ri;

	if (pc < uw->m_start || pc >= uw->m_end) {
		mi = unwind_find_mapping(uw->map_start, uw->nr_maps, pc);
		if (mi < 0) {
			stat_inc(uw->gen, STAT_UNWIND_FP_FRAMES);
			return step_frame_pointer(uw, true);
		}
		idx = (__u32)mi;
		m = bpf_map_lookup_elem(&unwind_maps, &idx);
		if (!m)
			return STEP_TRUNCATED;
		if (m->tgid != uw->tgid || m->version != uw->version ||
		    m->exec_id != uw->key.exec_id) {
			stat_inc(uw->gen, STAT_UNWIND_STALE);
			return STEP_TRUNCATED;
		}
		uw->m_start = m->start;
		uw->m_end = m->end;
		uw->m_base = m->base;
		uw->m_row_start = m->row_start;
		uw->m_nr_rows = m->nr_rows;
	}
	if (!uw->m_nr_rows) {
		stat_inc(uw->gen, STAT_UNWIND_FP_FRAMES);
		return step_frame_pointer(uw, true);
	}
	rel = pc - uw->m_base;
	ri = rel >> 32 ? -1 : unwind_find_row(uw->m_row_start, uw->m_nr_rows, (__u32)rel);
	idx = (__u32)ri;
	row = ri < 0 ? NULL : bpf_map_lookup_elem(&unwind_rows, &idx);
	if (!row || (row->type & 15) == UNWIND_CFA_NONE) {
		stat_inc(uw->gen, STAT_UNWIND_NO_CFI);
		return step_frame_pointer(uw, false);
	}
	cfa_type = row->type & 15;
	rbp_type = row->type >> 4;
	off = (__s64)row->cfa_off * 8;
	switch (cfa_type) {
	case UNWIND_CFA_RSP:
		cfa = uw->sp + off;
		break;
	case UNWIND_CFA_RBP:
		if (!uw->bp_valid) {
			stat_inc(uw->gen, STAT_UNWIND_UNSUPPORTED);
			return STEP_TRUNCATED;
		}
		cfa = uw->bp + off;
		break;
	case UNWIND_CFA_PLT:
		cfa = uw->sp + off + ((uw->pc & 15) >= (__u64)(__u8)row->rbp_off ? 8 : 0);
		break;
	case UNWIND_CFA_OUTERMOST:
		return STEP_COMPLETE;
	case UNWIND_CFA_SIGNAL:
		/* sigcontext from rbp (rsp + 120) to rip (rsp + 168). */
		if (bpf_probe_read_user(sigregs, sizeof(sigregs), (void *)(uw->sp + 120))) {
			stat_inc(uw->gen, STAT_UNWIND_READ_FAULT);
			return STEP_TRUNCATED;
		}
		uw->bp = sigregs[0];
		uw->bp_valid = 1;
		uw->sp = sigregs[5];
		uw->pc = sigregs[6];
		uw->exact = 1;
		uw->fp = 0;
		return uw->pc ? STEP_CONTINUE : STEP_END;
	default:
		stat_inc(uw->gen, STAT_UNWIND_UNSUPPORTED);
		return STEP_TRUNCATED;
	}
	if (bpf_probe_read_user(&ra, sizeof(ra), (void *)(cfa - 8))) {
		stat_inc(uw->gen, STAT_UNWIND_READ_FAULT);
		return STEP_TRUNCATED;
	}
	if (rbp_type == UNWIND_RBP_AT_CFA && cfa_type != UNWIND_CFA_PLT) {
		if (bpf_probe_read_user(&uw->bp, sizeof(uw->bp),
					(void *)(cfa + (__s64)row->rbp_off * 8))) {
			stat_inc(uw->gen, STAT_UNWIND_READ_FAULT);
			return STEP_TRUNCATED;
		}
		uw->bp_valid = 1;
	} else if (rbp_type == UNWIND_RBP_UNDEFINED) {
		uw->bp_valid = 0;
	}
	uw->sp = cfa;
	uw->pc = ra;
	uw->exact = 0;
	uw->fp = 0;
	if (!ra) {
		/* The CFI said there is a caller (the outermost frame says otherwise). */
		stat_inc(uw->gen, STAT_UNWIND_LOST);
		return STEP_TRUNCATED;
	}
	return STEP_CONTINUE;
}

/* Store the unwound user stack and count the sample: the end of every table walk. */
static __always_inline void unwind_finish(struct cpu_state *cs, __u32 flags)
{
	struct uw_state *uw = &cs->uw;
	__u32 g = uw->gen;
	void *stacks = bpf_map_lookup_elem(&stacks_gen, &g);
	void *counts = bpf_map_lookup_elem(&counts_gen, &g);

	if (!stacks || !counts) {
		stat_inc(g, STAT_DROP_NO_GEN);
		return;
	}
	cs->stack.flags = flags | STACK_F_TABLES;
	stat_inc(g, STAT_UNWIND_SAMPLES);
	store_stack(g, stacks, &cs->stack, &uw->key.user_stack);
	record(g, counts, &uw->key);
}

/* Unwind up to UNWIND_FRAMES_PER_RUN frames, then tail-call itself or finish. */
SEC("perf_event")
int ignis_unwind(struct bpf_perf_event_data *ctx)
{
	__u32 zero = 0, i, len, slot;
	struct cpu_state *cs = bpf_map_lookup_elem(&cpu_states, &zero);
	int r = STEP_CONTINUE;

	if (!cs)
		return 0;
	for (i = 0; i < UNWIND_FRAMES_PER_RUN; i++) {
		len = cs->stack.len;
		r = step(&cs->uw, len == 1);
		if (r != STEP_CONTINUE)
			break;
		/* A caller exists: past the last slot, the stack is cut short of it. */
		if (len >= IGNIS_MAX_STACK_DEPTH) {
			stat_inc(cs->uw.gen, STAT_UNWIND_DEPTH);
			r = STEP_TRUNCATED;
			break;
		}
		/* The mask bounds the index for the verifier, which may not tie the check above
		 * to the register the compiler indexes with; the barrier keeps the compiler from
		 * dropping the mask it knows to be a no-op (len < 127 here; index 127 would
		 * still lie inside cpu_state). */
		slot = len;
		barrier_var(slot);
		slot &= 127;
		cs->stack.ips[slot] = cs->uw.pc | (cs->uw.exact ? IGNIS_USER_IP_EXACT : 0) |
				      (cs->uw.fp ? IGNIS_USER_IP_FP : 0);
		cs->stack.len = len + 1;
	}
	if (r == STEP_CONTINUE) {
		bpf_tail_call(ctx, &progs, IGNIS_PROG_UNWIND);
		stat_inc(cs->uw.gen, STAT_UNWIND_TAIL_CALL);
		r = STEP_TRUNCATED;
	}
	unwind_finish(cs, r == STEP_COMPLETE  ? STACK_F_COMPLETE :
			  r == STEP_TRUNCATED ? STACK_F_TRUNCATED :
						0);
	return 0;
}

/* The user registers at the sample: the interrupted ones, or, when the sample hit the
 * kernel, the ones the task entered the kernel with. Returns 0 or -1. */
static __always_inline int user_regs(struct bpf_perf_event_data *ctx, struct uw_state *uw)
{
	struct pt_regs *regs;
	struct task_struct *task;
	/* The context allows only whole 8-byte loads of the registers; cs's place is fixed by
	 * the UAPI struct pt_regs. The low bits of cs hold the privilege level: 3 is user. */
	__u64 cs =
		*(const __u64 *)((const char *)&ctx->regs + __builtin_offsetof(struct pt_regs, cs));

	if ((cs & 3) == 3) {
		uw->pc = ctx->regs.ip;
		uw->sp = ctx->regs.sp;
		uw->bp = ctx->regs.bp;
		return 0;
	}
	if (bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs)) {
		regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
		if (!regs)
			return -1;
		uw->pc = BPF_CORE_READ(regs, ip);
		uw->sp = BPF_CORE_READ(regs, sp);
		uw->bp = BPF_CORE_READ(regs, bp);
		return 0;
	}
	/* Before 5.15: the user registers sit at the top of the task's kernel stack
	 * (task_pt_regs() on x86_64: THREAD_SIZE 16 KiB, no padding). */
	task = (struct task_struct *)bpf_get_current_task();
	regs = (struct pt_regs *)((__u64)BPF_CORE_READ(task, stack) + 16384 -
				  bpf_core_type_size(struct pt_regs));
	uw->pc = BPF_CORE_READ(regs, ip);
	uw->sp = BPF_CORE_READ(regs, sp);
	uw->bp = BPF_CORE_READ(regs, bp);
	return 0;
}

/*
 * A process not published yet: its main executable's table, if unwind_exes has the file
 * and the build ID mapped where that table expects it matches. Sets uw's mapping cache to
 * the executable's code, with no other mapping (frame pointers there). Returns 0 or -1.
 */
static __always_inline int start_exe_only(struct uw_state *uw)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct ignis_unwind_exe_key k = {};
	struct ignis_unwind_exe *e;
	__u64 start, end, bias, text_vaddr, base, id_vaddr;
	__u32 i, len, row_start, nr_rows;
	__u8 id[20], mem[20];

	k.ino = BPF_CORE_READ(task, mm, exe_file, f_inode, i_ino);
	k.dev = BPF_CORE_READ(task, mm, exe_file, f_inode, i_sb, s_dev);
	e = bpf_map_lookup_elem(&unwind_exes, &k);
	if (!e)
		return -1;
	/* Copy, then check that the copy is still this key's (see struct ignis_unwind_exe). */
	text_vaddr = e->text_vaddr;
	base = e->base;
	id_vaddr = e->build_id_vaddr;
	row_start = e->row_start;
	nr_rows = e->nr_rows;
	len = e->build_id_len;
	__builtin_memcpy(id, e->build_id, sizeof(id));
	barrier();
	if (e->key.ino != k.ino || e->key.dev != k.dev)
		return -1;
	start = BPF_CORE_READ(task, mm, start_code);
	end = BPF_CORE_READ(task, mm, end_code);
	bias = start - text_vaddr;
	if (!len || len > sizeof(mem) || end <= start)
		return -1;
	/* The verifier bounds the size by the register passed, which clang may not be the one
	 * it checked: the barrier keeps a mask the verifier sees. */
	barrier_var(len);
	len &= 31;
	if (len > sizeof(mem) || bpf_probe_read_user(mem, len, (void *)(bias + id_vaddr)))
		return -1;
	for (i = 0; i < sizeof(id); i++)
		if (i < len && mem[i] != id[i])
			return -1;
	uw->m_start = start;
	uw->m_end = end;
	uw->m_base = bias + base;
	uw->m_row_start = row_start;
	uw->m_nr_rows = nr_rows;
	uw->map_start = 0;
	uw->nr_maps = 0;
	return 0;
}

/*
 * Start the table unwinder for this sample when its process has tables (or, before it is
 * published, its executable has): it records the sample itself, and this returns 1.
 * 0: walk with frame pointers instead.
 */
static __always_inline int start_unwind(struct bpf_perf_event_data *ctx, __u32 g,
					struct cpu_state *cs, const struct ignis_sample_key *key)
{
	struct uw_state *uw = &cs->uw;
	struct ignis_unwind_proc *p;
	__u32 tgid = key->tgid;

	p = bpf_map_lookup_elem(&unwind_procs, &tgid);
	if (p) {
		uw->tgid = p->tgid;
		uw->version = p->version;
		uw->map_start = p->map_start;
		uw->nr_maps = p->nr_maps;
		uw->m_start = uw->m_end = 0;
		/* Read into uw first: a reused element is seen in the copy (see the maps). */
		if (uw->tgid != tgid || p->start_time != key->start_time ||
		    p->exec_id != key->exec_id)
			p = NULL;
	}
	if (!p) {
		if (start_exe_only(uw)) {
			stat_inc(g, STAT_UNWIND_NO_TABLES);
			return 0;
		}
		uw->tgid = tgid;
		uw->version = 0;
	}
	if (user_regs(ctx, uw) || !uw->pc) {
		stat_inc(g, STAT_UNWIND_NO_TABLES);
		return 0;
	}
	if (!p)
		stat_inc(g, STAT_UNWIND_EXE_ONLY);
	uw->gen = g;
	uw->bp_valid = 1;
	uw->exact = 0;
	uw->fp = 0;
	uw->key = *key;
	cs->stack.ips[0] = uw->pc;
	cs->stack.len = 1;
	bpf_tail_call(ctx, &progs, IGNIS_PROG_UNWIND);
	stat_inc(g, STAT_UNWIND_TAIL_CALL);
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
		/* The kernel stack first: the table unwinder records the sample itself. */
		if (cfg.kernel_stacks &&
		    walk_stack(ctx, g, stacks, &cs->stack, 0, &key.kernel_stack)) {
			key.flags |= SAMPLE_F_KSTACK_ERR;
			stat_inc(g, STAT_KSTACK_ERR);
		}
		if (cfg.user_stacks && !ti.kthread) {
			if (cfg.unwind_tables && start_unwind(ctx, g, cs, &key))
				return 0;
			if (walk_stack(ctx, g, stacks, &cs->stack, BPF_F_USER_STACK,
				       &key.user_stack)) {
				key.flags |= SAMPLE_F_USTACK_ERR;
				stat_inc(g, STAT_USTACK_ERR);
			}
		}
	}
	record(g, counts, &key);
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
