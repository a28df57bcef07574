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
#include <bpf/bpf_core_read.h>

#include "maps.bpf.h"

#ifndef ENOENT
#define ENOENT 2
#endif

/* Global functions, so the verifier checks each once, not at every frame of the walk. */
__noinline int unwind_find_mapping(__u32 start, __u32 n, __u64 pc)
{
	return find_mapping(start, n, pc);
}

__noinline int unwind_find_row(__u32 start, __u32 n, __u32 rel)
{
	return find_row(start, n, rel);
}

/* What bpf_find_vma() showed of the VMA that holds an address. */
struct vma_seen {
	__u64 start, end, pgoff, ino;
	__u32 dev;
	__u32 file; /* 1: a file mapping (ino, dev, stamp valid) */
	struct file_stamp stamp;
	__u32 vdso; /* 1: the vDSO's code */
	__u32 pad;
};

static long see_vma(struct task_struct *task, struct vm_area_struct *vma, struct vma_seen *v)
{
	struct file *file = vma->vm_file;

	v->start = vma->vm_start;
	v->end = vma->vm_end;
	v->pgoff = vma->vm_pgoff;
	v->vdso = v->start == (__u64)BPF_CORE_READ(vma, vm_mm, context.vdso);
	if (file) {
		struct inode *inode = BPF_CORE_READ(file, f_inode);

		v->ino = BPF_CORE_READ(inode, i_ino);
		v->dev = BPF_CORE_READ(inode, i_sb, s_dev);
		read_stamp(inode, &v->stamp);
		v->file = 1;
	}
	return 0;
}

/*
 * The mapping that holds pc in a process not published yet (or whose executable memory
 * changed since: uw.by_file), found by its file: the VMA from
 * bpf_find_vma() (5.17; only ignis_unwind_files calls this), its file's table from
 * unwind_exes (struct ignis_unwind_exe), checked by the build ID in memory. Sets this CPU's
 * walk's mapping (slot: CPU_STATE_*) to it, or, when the file has no table there, to the VMA
 * without rows (frame pointers, and no second lookup for its next frames). The agent is told
 * of the file mapping either way (announce_mapping()). Returns 0, -1 when the lookup
 * failed, or -3 when no VMA holds pc.
 */
__noinline int unwind_find_file(__u32 slot, __u64 pc)
{
	struct cpu_state *cs = bpf_map_lookup_elem(&cpu_states, &slot);
	struct ignis_unwind_exe_key k = {};
	struct ignis_unwind_exe *e, c;
	struct vma_seen v = {};
	__u64 seg, lo, hi, bias;
	long err;
	__u32 g;

	if (!cs)
		return -1;
	g = cs->uw.gen;
	err = bpf_find_vma(bpf_get_current_task_btf(), pc, see_vma, &v, 0);
	if (err == -ENOENT)
		return -3; /* no VMA holds pc */
	if (err || v.end <= v.start) {
		stat_inc(g, STAT_UNWIND_FILE_BUSY);
		return -1;
	}
	cs->uw.m_start = v.start;
	cs->uw.m_end = v.end;
	cs->uw.m_nr_rows = 0;
	if (!v.file) {
		if (v.vdso) /* no file: dev and ino 0 */
			announce_mapping(g, cs, &cs->uw.key, 0, 0, v.start, v.end, 0);
		stat_inc(g, STAT_UNWIND_FILE_NONE);
		return 0;
	}
	announce_mapping(g, cs, &cs->uw.key, v.dev, v.ino, v.start, v.end, v.pgoff << 12);
	k.ino = v.ino;
	k.dev = v.dev;
	e = bpf_map_lookup_elem(&unwind_exes, &k);
	if (!e) {
		stat_inc(g, STAT_UNWIND_FILE_NONE);
		return 0;
	}
	__builtin_memcpy(&c, e, sizeof(c));
	barrier();
	if (c.key.ino != k.ino || c.key.dev != k.dev) {
		stat_inc(g, STAT_UNWIND_FILE_NONE);
		return 0;
	}
	/* The executable segment's runtime start, and the part of it in this VMA. */
	seg = v.start - (v.pgoff << 12) + c.text_offset;
	lo = seg > v.start ? seg : v.start;
	hi = seg + c.text_size < v.end ? seg + c.text_size : v.end;
	bias = seg - c.text_vaddr;
	if (pc < lo || pc >= hi) {
		stat_inc(g, STAT_UNWIND_FILE_NONE);
		return 0;
	}
	if (!same_file(bias + c.build_id_vaddr, &c, &v.stamp)) {
		stat_inc(g, STAT_UNWIND_FILE_BUILD_ID);
		return 0;
	}
	cs->uw.m_start = lo;
	cs->uw.m_end = hi;
	cs->uw.m_base = bias + c.base;
	cs->uw.m_row_start = c.row_start;
	cs->uw.m_nr_rows = c.nr_rows;
	stat_inc(g, STAT_UNWIND_FILE_TABLE);
	return 0;
}

/*
 * The table of the vDSO's code in a process not published yet (uw.vdso_start..vdso_end, from
 * mm->context.vdso): the kernel's image, the same in every process of this ABI, which the
 * agent enters once under the key of no file (dev 0, inode 0), so no bpf_find_vma() is spent
 * on it. Its build ID in memory must be the table's (a 32-bit process's vDSO is another
 * image), with no file to fall back on. Into this CPU's walk's vdso_* (slot: CPU_STATE_*),
 * vdso_nr_rows 0 without a table (frame pointers); the agent is told of the mapping either
 * way. Returns 0, or -1 without a state.
 */
__noinline int unwind_find_vdso(__u32 slot)
{
	struct cpu_state *cs = bpf_map_lookup_elem(&cpu_states, &slot);
	struct ignis_unwind_exe_key k = {};
	struct file_stamp no_file = {};
	struct ignis_unwind_exe *e, c;
	__u64 start, end, seg;
	__u32 g;

	if (!cs)
		return -1;
	g = cs->uw.gen;
	start = cs->uw.vdso_start;
	end = cs->uw.vdso_end;
	cs->uw.vdso_nr_rows = 0;
	announce_mapping(g, cs, &cs->uw.key, 0, 0, start, end, 0);
	e = bpf_map_lookup_elem(&unwind_exes, &k);
	if (!e)
		goto no_table;
	__builtin_memcpy(&c, e, sizeof(c));
	barrier();
	seg = start + c.text_offset; /* the image is mapped whole, from its first byte */
	if (c.key.ino || c.key.dev || seg + c.text_size > end ||
	    !same_file(seg - c.text_vaddr + c.build_id_vaddr, &c, &no_file))
		goto no_table;
	cs->uw.vdso_base = seg - c.text_vaddr + c.base;
	cs->uw.vdso_row_start = c.row_start;
	cs->uw.vdso_nr_rows = c.nr_rows;
	stat_inc(g, STAT_UNWIND_VDSO_TABLE);
	return 0;
no_table:
	stat_inc(g, STAT_UNWIND_VDSO_NONE);
	return 0;
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
 * every table walk. slot (a constant): the CPU sampler's walk, whose samples only it and
 * the sampler record (see record()), or the off-CPU programs'. */
static __always_inline void unwind_finish(struct cpu_state *cs, __u32 flags, __u32 slot)
{
	struct uw_state *uw = &cs->uw;
	__u32 g = uw->gen;
	void *stacks = bpf_map_lookup_elem(&stacks_gen, &g), *offcpu;

	if (!stacks) {
		/* Off-CPU time is not in the CPU samples' accounting. */
		stat_inc(g, uw->offcpu_ns ? STAT_OFFCPU_DROPS : STAT_DROP_NO_GEN);
		return;
	}
	cs->stack.flags = flags | STACK_F_TABLES;
	if (!cs->stack.len)
		uw->key.user_stack.lo = uw->key.user_stack.hi = 0; /* none (not mapped) */
	else if (store_stack(g, stacks, &cs->stack, &uw->key.user_stack))
		uw->key.flags |= SAMPLE_F_USTACK_ERR; /* not stored: its root shows as cut */
	stat_inc(g, STAT_UNWIND_SAMPLES);
	if (uw->py.total)
		stat_inc(g, STAT_PY_SAMPLES);
	/* A whole native stack with Python frames left: eval frames and Python frames did not
	 * pair up (a part of the eval loop outside its known ranges). */
	if (uw->py.on && uw->py.frame && !(flags & STACK_F_TRUNCATED))
		stat_inc(g, STAT_PY_UNMATCHED);
	if (slot == CPU_STATE_SAMPLE) {
		record(g, &uw->key);
		return;
	}
	offcpu = bpf_map_lookup_elem(&offcpu_gen, &g);
	if (!offcpu) {
		stat_inc(g, STAT_OFFCPU_DROPS);
		return;
	}
	if (!record_ns(g, offcpu, &uw->key, uw->offcpu_ns)) {
		stat_inc(g, STAT_OFFCPU_SAMPLES);
		stat_add(g, STAT_OFFCPU_WALKED_NS, uw->offcpu_ns);
	}
}

/* Unwind up to UNWIND_FRAMES_PER_RUN frames, then tail-call prog_array's copy of this
 * program (ctx's program type) or finish. by_file: look up by their files the pcs of
 * processes not published yet, or changed since (uw.by_file), in no published mapping (a
 * constant). */
static __always_inline int unwind_run(void *ctx, void *prog_array, __u32 slot, bool by_file)
{
	struct cpu_state *cs = bpf_map_lookup_elem(&cpu_states, &slot);
	int r;

	if (!cs)
		return 0;
	r = unwind_frames(&cs->uw, &cs->stack, by_file);
	if (r == STEP_CONTINUE) {
		bpf_tail_call(ctx, prog_array, IGNIS_PROG_UNWIND);
		stat_inc(cs->uw.gen, STAT_UNWIND_TAIL_CALL);
		r = STEP_TRUNCATED;
	}
	unwind_finish(cs, unwind_end_flags(r), slot);
	return 0;
}

SEC("perf_event")
int ignis_unwind(struct bpf_perf_event_data *ctx)
{
	return unwind_run(ctx, &progs, CPU_STATE_SAMPLE, false);
}

/*
 * The same, where the kernel has bpf_find_vma() (5.17): a pc of a process not published yet
 * (or whose executable memory changed since) that lies in none of its mappings the unwinder
 * knows is looked up by its file, so that libraries are unwound with their tables from a
 * process's first sample, and from a dlopen() on. The agent loads
 * one of the two (agent/collect/sampler.c): before 5.17 this one would not load.
 */
SEC("perf_event")
int ignis_unwind_files(struct bpf_perf_event_data *ctx)
{
	return unwind_run(ctx, &progs, CPU_STATE_SAMPLE, true);
}

/*
 * The same for the off-CPU walk (bpf/offcpu.bpf.c), which a tail call can reach only in a
 * program of its own type and attach point: loaded, never attached.
 */
SEC("tp_btf/sys_exit")
int ignis_offcpu_unwind(void *ctx)
{
	return unwind_run(ctx, &offcpu_progs, CPU_STATE_OFFCPU, false);
}

/* The same with lookups by file (5.17), as ignis_unwind_files: at the end of a system call
 * the kernel grants as many as the walk asks for (UNWIND_FILE_TRIES). */
SEC("tp_btf/sys_exit")
int ignis_offcpu_unwind_files(void *ctx)
{
	return unwind_run(ctx, &offcpu_progs, CPU_STATE_OFFCPU, true);
}
