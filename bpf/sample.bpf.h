/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What the two programs that record a stack share: the CPU sampler (bpf/sampler.bpf.c, on
 * the cpu-clock event) and the off-CPU walk (bpf/offcpu.bpf.c, at the end of a system
 * call). Reading the current task, announcing process images to the agent, walking a
 * stack with frame pointers, and starting the table unwinder. Included after maps.bpf.h.
 */
#ifndef IGNIS_BPF_SAMPLE_BPF_H
#define IGNIS_BPF_SAMPLE_BPF_H

#ifndef PF_KTHREAD
#define PF_KTHREAD 0x00200000
#endif

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
	*err = bpf_ringbuf_output(&events, &ev, sizeof(ev), events_flags());
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
 * track_process() unless this CPU found the image announced and unchanged earlier in this
 * window (cs->seen; a window bounds how long an entry the agent deleted from procs, to have
 * the image announced again, goes unnoticed).
 */
static __always_inline void announce_process(__u32 g, struct cpu_state *cs, __u32 tgid,
					     const struct task_info *ti)
{
	struct image_seen *e;

	if (cs->seen_gen != g) {
		cs->seen_gen = g;
		cs->seen_epoch++;
	}
	e = &cs->seen[tgid & (IMAGES_SEEN - 1)];
	if (e->tgid == tgid && e->epoch == cs->seen_epoch && e->start_time == ti->start_time &&
	    e->exec_id == ti->exec_id && e->exec_vm == ti->exec_vm)
		return;
	e->tgid = 0;
	if (track_process(g, tgid, ti)) {
		e->tgid = tgid;
		e->epoch = cs->seen_epoch;
		e->start_time = ti->start_time;
		e->exec_id = ti->exec_id;
		e->exec_vm = ti->exec_vm;
	}
}

/*
 * Walk one stack into st and store it under *id (zero: no frames). Returns 0, or -1 when the
 * sample goes without it: the walk failed (counted as walk_err) or the stack could not be
 * stored (counted by store_stack()).
 */
static __always_inline int walk_stack(void *ctx, __u32 g, void *stacks, struct ignis_stack *st,
				      __u64 flags, struct ignis_stack_id *id,
				      enum ignis_stat walk_err)
{
	long n;

	id->lo = id->hi = 0;
	n = bpf_get_stack(ctx, st->ips, sizeof(st->ips), flags);
	if (n < 0) {
		stat_inc(g, walk_err);
		return -1;
	}
	st->len = (__u32)n / sizeof(__u64);
	st->flags = 0;
	if (st->len == 0)
		return 0;
	if (st->len > IGNIS_MAX_STACK_DEPTH)
		st->len = IGNIS_MAX_STACK_DEPTH;
	return store_stack(g, stacks, st, id);
}

/* ---- Starting the table unwinder ------------------------------------------------------------- */

/* The user registers the current task entered the kernel with. Returns 0 or -1. */
static __always_inline int task_user_regs(struct uw_state *uw)
{
	struct pt_regs *regs;
	struct task_struct *task;

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
 * the executable's code, with no other mapping (frame pointers there, or lookups by file),
 * and tells the agent the file of that code (announce_mapping()). Returns 0, -1, or -2 when
 * the process image has no code yet (execve() is loading it: mm->start_code is set last, and
 * the registers are still the old image's).
 */
static __always_inline int start_exe_only(__u32 g, struct cpu_state *cs,
					  const struct ignis_sample_key *key)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct uw_state *uw = &cs->uw;
	struct ignis_unwind_exe_key k = {};
	struct ignis_unwind_exe *e, c;
	struct file_stamp stamp;
	__u64 start, end, bias;
	struct inode *inode;

	inode = BPF_CORE_READ(task, mm, exe_file, f_inode);
	k.ino = BPF_CORE_READ(inode, i_ino);
	k.dev = BPF_CORE_READ(inode, i_sb, s_dev);
	e = bpf_map_lookup_elem(&unwind_exes, &k);
	if (!e)
		return -1;
	/* Copy, then check that the copy is still this key's (see struct ignis_unwind_exe). */
	__builtin_memcpy(&c, e, sizeof(c));
	barrier();
	if (c.key.ino != k.ino || c.key.dev != k.dev)
		return -1;
	start = BPF_CORE_READ(task, mm, start_code);
	end = BPF_CORE_READ(task, mm, end_code);
	bias = start - c.text_vaddr;
	if (!start && !end)
		return -2;
	if (end <= start)
		return -1;
	read_stamp(inode, &stamp);
	if (!same_file(bias + c.build_id_vaddr, &c, &stamp))
		return -1;
	uw->m_start = start;
	uw->m_end = end;
	uw->m_base = bias + c.base;
	uw->m_row_start = c.row_start;
	uw->m_nr_rows = c.nr_rows;
	uw->map_start = 0;
	uw->nr_maps = 0;
	/* start_code is text_vaddr's runtime address (load_elf_binary()). */
	announce_mapping(g, cs, key, k.dev, k.ino, start, end, c.text_offset);
	return 0;
}

/* Where the vDSO's code is in the current process (x86's mm->context; the text VMA is the
 * image's size from there), for the walk of a process not published yet. */
static __always_inline void start_vdso(struct uw_state *uw)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 start = (__u64)BPF_CORE_READ(task, mm, context.vdso);
	__u64 size = BPF_CORE_READ(task, mm, context.vdso_image, size);

	if (start && size && size <= (1 << 20)) {
		uw->vdso_start = start;
		uw->vdso_end = start + size;
	}
}

/*
 * The Python interpreter of the sample's process image, if the agent attached it: copied
 * into the walk's state, then checked to be this image's (a reused element is seen in the
 * copy, as for unwind_procs).
 */
static __always_inline void start_python(struct uw_python *py, const struct ignis_sample_key *key)
{
	struct ignis_py_proc *pp;
	__u32 tgid = key->tgid;

	py->on = 0;
	if (!cfg.python)
		return;
	pp = bpf_map_lookup_elem(&py_procs, &tgid);
	if (!pp)
		return;
	__builtin_memcpy(py->eval_start, pp->eval_start, sizeof(py->eval_start));
	__builtin_memcpy(py->eval_end, pp->eval_end, sizeof(py->eval_end));
	py->tss_data_off = pp->tss_data_off;
	py->tss_key = pp->tss_key;
	__builtin_memcpy(&py->l, &pp->layout, sizeof(py->l));
	barrier();
	if (pp->tgid != tgid || pp->start_time != key->start_time || pp->exec_id != key->exec_id)
		return;
	py->on = 1;
}

/*
 * Start the table unwinder for this sample when its process has tables (or, before it is
 * published, its executable has), with the user registers already in cs->uw (regs_err: they
 * could not be read; unwind_begin() keeps them): it records the sample itself, tail-calling prog_array's unwinder
 * with ctx, and never returns. 0: walk with frame pointers instead; 1: record the sample
 * without a user stack (its registers are not this image's). offcpu_ns: 0 for a CPU sample,
 * else the off-CPU sample's weight. exec_vm: the process's mm->exec_vm now.
 */
static __always_inline int start_unwind(void *ctx, void *prog_array, __u32 slot, __u32 g,
					struct cpu_state *cs, const struct ignis_sample_key *key,
					int regs_err, __u64 offcpu_ns, __u64 exec_vm)
{
	struct uw_state *uw = &cs->uw;
	struct ignis_unwind_proc *p;
	__u32 tgid = key->tgid, published_vm = 0;
	int err;

	p = bpf_map_lookup_elem(&unwind_procs, &tgid);
	if (p) {
		uw->tgid = p->tgid;
		uw->version = p->version;
		uw->map_start = p->map_start;
		uw->nr_maps = p->nr_maps;
		published_vm = p->exec_vm;
		uw->m_start = uw->m_end = 0;
		/* Read into uw first: a reused element is seen in the copy (see the maps). */
		if (uw->tgid != tgid || p->start_time != key->start_time ||
		    p->exec_id != key->exec_id)
			p = NULL;
	}
	/* Code mapped since the capture the published mappings come from (a dlopen(), until
	 * the agent publishes the process again): a pc in no published mapping is looked up
	 * by its file, as in a process not published yet. */
	uw->by_file = !p || published_vm != (__u32)exec_vm;
	uw->vdso_start = uw->vdso_end = 0;
	if (!p) {
		err = start_exe_only(g, cs, key);
		if (err == -2) {
			stat_inc(g, STAT_UNWIND_UNMAPPED);
			return 1;
		}
		if (err) {
			stat_inc(g, STAT_UNWIND_NO_TABLES);
			return 0;
		}
		uw->tgid = tgid;
		uw->version = 0;
		start_vdso(uw);
	}
	if (regs_err || !uw->pc) {
		stat_inc(g, STAT_UNWIND_NO_TABLES);
		return 0;
	}
	if (!p)
		stat_inc(g, STAT_UNWIND_EXE_ONLY);
	start_python(&uw->py, key);
	uw->py.slot = slot;
	unwind_begin(uw, &cs->stack, g, key);
	uw->offcpu_ns = offcpu_ns;
	bpf_tail_call(ctx, prog_array, IGNIS_PROG_UNWIND);
	stat_inc(g, STAT_UNWIND_TAIL_CALL);
	return 0;
}

#endif /* IGNIS_BPF_SAMPLE_BPF_H */
