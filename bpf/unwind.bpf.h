/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The table unwinder's logic (x86_64): its state, the binary searches of a process's mappings
 * and of a table, one step from a frame's registers to its caller's, and one program run's
 * walk of up to UNWIND_FRAMES_PER_RUN frames. The program around it (bpf/unwind.bpf.c) and
 * its start in the sampler (bpf/sampler.bpf.c) hold what only BPF can do: reading the
 * registers and the task, tail calls, storing the stack.
 *
 * This header compiles for BPF and natively, so that a unit test runs the very code the
 * kernel runs over a recorded stack and registers (tests/unit/test_unwind_step.c), as the
 * OpenTelemetry profiler tests its BPF C with TESTING_COREDUMP. Everything that touches the
 * world goes through six functions the includer defines:
 *
 *   lookup_mapping(idx)          unwind_maps[idx], or NULL
 *   lookup_row(idx)              unwind_rows[idx], or NULL
 *   read_user(dst, size, addr)   bpf_probe_read_user(): 0, or a negative errno with dst zeroed
 *   stat_inc(g, stat)            count a failure in generation g's counters
 *   lookup_file(uw, pc)          the mapping that holds pc found by its file (bpf_find_vma()
 *                                and unwind_exes), into uw's m_*: 0, -1 (not found), or -3
 *                                (the process has no mapping there at all)
 *   lookup_vdso(uw)              the table of the vDSO at uw->vdso_start, into uw's vdso_*
 *                                (unwind_exes' entry of no file), or vdso_nr_rows 0
 *
 * The BPF build defines them over the maps in bpf/maps.bpf.h; the unit test over arrays and a
 * byte buffer. Like bpf/profiler.h, this header includes nothing: the includer provides the
 * __u* types, bool and NULL (vmlinux.h and bpf_helpers.h, or <linux/types.h>, <stdbool.h> and
 * <stddef.h>), then bpf/profiler.h.
 *
 * The two binary searches are global functions in BPF (bpf/unwind.bpf.c defines them over
 * find_mapping() and find_row() here), so that the verifier checks each once rather than at
 * every frame of the walk; natively they are plain inline functions.
 */
#ifndef IGNIS_BPF_UNWIND_BPF_H
#define IGNIS_BPF_UNWIND_BPF_H

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#ifndef barrier_var
/* As bpf_helpers.h: keeps the compiler from dropping an operation on var it deems a no-op. */
#define barrier_var(var) asm volatile("" : "+r"(var))
#endif

/* Steps per program run (a native frame, or a Python frame in the place of an eval-loop
 * frame, or the end of an eval frame's Python frames); the unwinder tail-calls itself for
 * more: IGNIS_MAX_STACK_DEPTH frames take at most IGNIS_MAX_STACK_DEPTH / 16 + 1 runs, plus
 * one run per 16 eval frames, under the kernel's 33. */
#define UNWIND_FRAMES_PER_RUN 16

/* The walk's copy of the user stack: UNWIND_STACK_CHUNKS chunks of UNWIND_CHUNK_SIZE bytes
 * from the one that holds the sampled sp, each copied when the walk first reads it
 * (read_stack()). A chunk is aligned to its size, so it never spans two pages. */
#define UNWIND_CHUNK_SIZE	512
#define UNWIND_STACK_CHUNKS	16
#define UNWIND_STACK_COPY_WORDS (UNWIND_STACK_CHUNKS * UNWIND_CHUNK_SIZE / 8)

/* Hints of earlier walks on this CPU (of this kind: CPU samples or off-CPU time): where the
 * search of a table, or of a process's mappings, ended for a pc (see row_hint_slot() and
 * map_hint_slot()). */
#define UNWIND_ROW_HINTS 64
#define UNWIND_MAP_HINTS 16

#include "python.bpf.h"

/* Where the table unwinder is, kept across its tail calls (in struct cpu_state). */
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
	__u32 leaf;	/* pc is the sampled instruction: no step taken yet */
	__u32 pending;	/* the frame at pc is not in the stack yet */
	__u32 python;	/* the frame at pc is an eval frame: its Python frames go in */
	__u32 pad;
	__u64 offcpu_ns; /* 0: a CPU sample; else an off-CPU sample of this weight */
	/* The mapping of the last frame: consecutive frames are often in one object. */
	__u64 m_start, m_end; /* m_end 0: none */
	__u64 m_base;
	__u32 m_row_start, m_nr_rows;
	/* The one before it: a stack goes from the program into libc and back to its _start. */
	__u64 m2_start, m2_end;
	__u64 m2_base;
	__u32 m2_row_start, m2_nr_rows;
	__u32 by_file;	  /* the process is not published, or its executable memory changed */
			  /* since: a pc in no published mapping is looked up by its file */
			  /* (lookup_file) */
	__u32 file_tries; /* lookups by file this walk */
	/* The vDSO's code of a process not published yet, [vdso_start, vdso_end) from
	 * mm->context.vdso (0, 0: none): no file, so its frames need no lookup, and its table
	 * (lookup_vdso(), once a walk: vdso_seen) is kept here, out of the two cached mappings,
	 * which keep the program and the library that called into the vDSO. */
	__u64 vdso_start, vdso_end;
	__u64 vdso_base;
	__u32 vdso_row_start, vdso_nr_rows; /* vdso_nr_rows 0: frame pointers */
	__u32 vdso_seen;
	__u32 vdso_pad;
	/* The last row this walk found, and the pcs it covers, [rc_lo, rc_hi) from its table's
	 * base: a recursion, or a loop's frames, skip the binary search. rc_nr_rows 0: none. */
	struct ignis_unwind_row rc_row;
	__u32 rc_row_start, rc_nr_rows;
	__u32 rc_lo, rc_hi;
	struct ignis_sample_key key;
	struct uw_python py;
	/* Indexes the searches found for earlier pcs, kept from walk to walk (unwind_begin()
	 * leaves them): a hint is only a guess, checked against the entries it names, so an
	 * entry freed and reused since costs a search, never a wrong answer. On the test VM
	 * each probe of a search is a cache miss: ~0.3 us a search. */
	__u32 row_hints[UNWIND_ROW_HINTS];
	__u32 map_hints[UNWIND_MAP_HINTS];
	__u64 word;	  /* read_stack()'s */
	__u64 sigregs[7]; /* rbp .. rip of a signal frame's struct sigcontext */
	/* The copy of the stack's chunks from stack_base: bit i of stack_copied says chunk i
	 * is in stack_copy, of stack_unreadable that it could not be read. On the test VM a
	 * chunk's read costs ~0.4 us, a word's ~0.1 us, and a frame takes one or two words;
	 * a whole page's read cost 2.2 us, its part below sp cold. */
	__u64 stack_base;
	__u32 stack_copied;
	__u32 stack_unreadable;
	__u64 stack_copy[UNWIND_STACK_COPY_WORDS];
};

/* What one step of the unwinder concluded. */
enum step_result {
	STEP_CONTINUE = 0,
	STEP_COMPLETE,	/* the outermost frame: the stack is whole */
	STEP_END,	/* a frame-pointer chain ends (rbp 0): judged by its root later */
	STEP_TRUNCATED, /* stopped early; the reason is counted */
	STEP_UNMAPPED,	/* the sampled pc is in no mapping of the process: no user stack */
};

/* The world, as the includer defines it (see the top of this file). */
static __always_inline const struct ignis_unwind_mapping *lookup_mapping(__u32 idx);
static __always_inline const struct ignis_unwind_row *lookup_row(__u32 idx);
static __always_inline long read_user(void *dst, __u32 size, __u64 addr);
static __always_inline void stat_inc(__u32 g, enum ignis_stat stat);
static __always_inline int lookup_file(struct uw_state *uw, __u64 pc);
static __always_inline void lookup_vdso(struct uw_state *uw);

/* Lookups by file per walk: in an interrupt the kernel grants bpf_find_vma() once (its lock
 * is released by an irq_work, which the next call finds busy), so a second one is counted
 * busy and costs little; the off-CPU walk, in a system call, may take more. */
#define UNWIND_FILE_TRIES 4

/*
 * The 8-byte word of the user stack at addr into uw->word: from the walk's copy of the
 * stack when addr is in its chunks (copying a chunk the first time the walk reads from
 * it), else read_user(). 0, or a negative errno with the word zeroed, as read_user(). The
 * copy is taken while the task is stopped in the sample (or the system call), so it holds
 * what a read of the word would return. The word, like the signal frame's registers, is
 * in the walk's state rather than on the BPF stack, which the walk and the lookup by file
 * it may call share (512 bytes).
 */
static __always_inline long read_stack(struct uw_state *uw, __u64 addr)
{
	__u64 *dst = &uw->word;
	__u64 off = addr - uw->stack_base; /* below stack_base: past the copy, wrapped */
	__u32 chunk, bit;

	if ((addr & 7) || off >= UNWIND_STACK_CHUNKS * UNWIND_CHUNK_SIZE)
		return read_user(dst, sizeof(*dst), addr);
	chunk = (__u32)(off / UNWIND_CHUNK_SIZE);
	bit = 1U << chunk;
	if (!(uw->stack_copied & bit)) {
		if (uw->stack_unreadable & bit)
			return read_user(dst, sizeof(*dst), addr);
		if (read_user(&uw->stack_copy[(chunk & (UNWIND_STACK_CHUNKS - 1)) *
					      (UNWIND_CHUNK_SIZE / 8)],
			      UNWIND_CHUNK_SIZE,
			      uw->stack_base + (__u64)chunk * UNWIND_CHUNK_SIZE)) {
			uw->stack_unreadable |= bit;
			return read_user(dst, sizeof(*dst), addr);
		}
		uw->stack_copied |= bit;
	}
	*dst = uw->stack_copy[(off / 8) & (UNWIND_STACK_COPY_WORDS - 1)];
	return 0;
}

/* The slots of a pc's hints: a multiplicative hash of the table and the pc (rel from the
 * table's base), or of the process and the pc's megabyte (a mapping spans many pcs). */
static __always_inline __u32 row_hint_slot(__u32 row_start, __u32 rel)
{
	return ((rel ^ (row_start << 7)) * 0x9e3779b1U) >> (32 - 6) & (UNWIND_ROW_HINTS - 1);
}

static __always_inline __u32 map_hint_slot(__u32 tgid, __u64 pc)
{
	return (((__u32)(pc >> 20) ^ (tgid << 9)) * 0x9e3779b1U) >> (32 - 4) &
	       (UNWIND_MAP_HINTS - 1);
}

/* The mapping of unwind_maps[start, start + n) whose [start, end) holds pc: its index, or -1. */
static __always_inline int find_mapping(__u32 start, __u32 n, __u64 pc)
{
	__u32 lo = 0, hi = n, i, idx;
	const struct ignis_unwind_mapping *m;

	if (n > IGNIS_MAX_UNWIND_MAPS)
		return -1;
	/* The last mapping with m.start <= pc. */
	for (i = 0; i <= IGNIS_UNWIND_MAPS_LOG; i++) {
		__u32 mid;

		if (lo >= hi)
			break;
		mid = lo + (hi - lo) / 2;
		idx = start + mid;
		m = lookup_mapping(idx);
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
	m = lookup_mapping(idx);
	if (!m || pc >= m->end)
		return -1;
	return (int)idx;
}

/* The last row of unwind_rows[start, start + n) with row.pc <= rel: its index, or -1. */
static __always_inline int find_row(__u32 start, __u32 n, __u32 rel)
{
	__u32 lo = 0, hi = n, i, idx;
	const struct ignis_unwind_row *r;

	if (n > IGNIS_MAX_UNWIND_ROWS)
		return -1;
	for (i = 0; i <= IGNIS_UNWIND_ROWS_LOG; i++) {
		__u32 mid;

		if (lo >= hi)
			break;
		mid = lo + (hi - lo) / 2;
		idx = start + mid;
		r = lookup_row(idx);
		if (!r)
			return -1;
		if (r->pc <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? (int)(start + lo - 1) : -1;
}

#ifdef __bpf__
int unwind_find_mapping(__u32 start, __u32 n, __u64 pc);
int unwind_find_row(__u32 start, __u32 n, __u32 rel);
/* py_step() over this CPU's cpu_states entry (global functions take no map pointers). */
int unwind_python(__u32 zero);
#define UNWIND_PYTHON(uw, stack) unwind_python((uw)->py.slot)
#else
#define UNWIND_PYTHON(uw, stack) py_step(&(uw)->py, (stack), (uw)->gen, &(uw)->key)

static inline int unwind_find_mapping(__u32 start, __u32 n, __u64 pc)
{
	return find_mapping(start, n, pc);
}

static inline int unwind_find_row(__u32 start, __u32 n, __u32 rel)
{
	return find_row(start, n, rel);
}
#endif

/*
 * A frame with no usable row: its caller through the frame pointer. no_table: the pc lies in
 * no table the unwinder has (rather than in a table's gap without CFI, where the agent's
 * tables cannot tell either), so the caller is marked IGNIS_USER_IP_FP for the agent to check.
 */
static __always_inline int step_frame_pointer(struct uw_state *uw, bool no_table)
{
	__u64 ra;

	if (!uw->bp_valid) {
		stat_inc(uw->gen, STAT_UNWIND_LOST);
		return STEP_TRUNCATED;
	}
	if (!uw->bp)
		return STEP_END; /* the end of a frame-pointer chain: judged by its root */
	/* The return address, then the saved rbp below it. */
	if (read_stack(uw, uw->bp + 8)) {
		stat_inc(uw->gen, STAT_UNWIND_READ_FAULT);
		return STEP_TRUNCATED;
	}
	ra = uw->word;
	if (read_stack(uw, uw->bp)) {
		stat_inc(uw->gen, STAT_UNWIND_READ_FAULT);
		return STEP_TRUNCATED;
	}
	uw->sp = uw->bp + 16;
	uw->bp = uw->word;
	uw->pc = ra;
	uw->exact = 0;
	uw->fp = no_table;
	return uw->pc ? STEP_CONTINUE : STEP_END;
}

/* The cached mapping becomes the second one (see struct uw_state); not the vDSO, which is
 * kept apart. */
static __always_inline void keep_mapping(struct uw_state *uw)
{
	if (uw->vdso_end && uw->m_end && uw->m_start == uw->vdso_start)
		return;
	uw->m2_start = uw->m_start;
	uw->m2_end = uw->m_end;
	uw->m2_base = uw->m_base;
	uw->m2_row_start = uw->m_row_start;
	uw->m2_nr_rows = uw->m_nr_rows;
}

/* The two cached mappings change places. */
static __always_inline void swap_mappings(struct uw_state *uw)
{
	__u64 start = uw->m_start, end = uw->m_end, base = uw->m_base;
	__u32 row_start = uw->m_row_start, nr_rows = uw->m_nr_rows;

	uw->m_start = uw->m2_start;
	uw->m_end = uw->m2_end;
	uw->m_base = uw->m2_base;
	uw->m_row_start = uw->m2_row_start;
	uw->m_nr_rows = uw->m2_nr_rows;
	uw->m2_start = start;
	uw->m2_end = end;
	uw->m2_base = base;
	uw->m2_row_start = row_start;
	uw->m2_nr_rows = nr_rows;
}

/*
 * Make uw's mapping the one that holds pc: one of the two cached, else the process's
 * published mapping, else (by_file: this program may look up files, and the process is not
 * published or its executable memory changed since, uw->by_file) the one lookup_file()
 * finds; before publication, the vDSO from uw->vdso_*. Returns 0; -1 when pc is in none (counted by the
 * caller: a frame-pointer step); -2 when the published mappings changed under the walk
 * (counted here: the walk stops); -3 when the process has no mapping at pc at all.
 */
static __always_inline int find_pc_mapping(struct uw_state *uw, __u64 pc, bool by_file)
{
	const struct ignis_unwind_mapping *m;
	__u32 idx, slot;
	int mi;

	if (pc >= uw->m_start && pc < uw->m_end)
		return 0;
	if (pc >= uw->m2_start && pc < uw->m2_end) {
		swap_mappings(uw);
		return 0;
	}
	/* The hint: a mapping of this process's extent that holds pc is the one the search
	 * would find (the mappings do not overlap). */
	slot = map_hint_slot(uw->tgid, pc);
	idx = uw->map_hints[slot];
	m = idx - uw->map_start < uw->nr_maps ? lookup_mapping(idx) : NULL;
	if (m && pc >= m->start && pc < m->end) {
		mi = (int)idx;
	} else {
		mi = unwind_find_mapping(uw->map_start, uw->nr_maps, pc);
		if (mi >= 0)
			uw->map_hints[slot] = (__u32)mi;
	}
	if (mi < 0) {
		if (!uw->by_file)
			return -1;
		/* The vDSO, known without a lookup: the one an interrupt gets is left for the
		 * library that called it. */
		if (pc >= uw->vdso_start && pc < uw->vdso_end) {
			if (!uw->vdso_seen) {
				uw->vdso_seen = 1;
				lookup_vdso(uw);
			}
			keep_mapping(uw);
			uw->m_start = uw->vdso_start;
			uw->m_end = uw->vdso_end;
			uw->m_base = uw->vdso_base;
			uw->m_row_start = uw->vdso_row_start;
			uw->m_nr_rows = uw->vdso_nr_rows;
			return 0;
		}
		if (!by_file || uw->file_tries >= UNWIND_FILE_TRIES)
			return -1;
		uw->file_tries++;
		keep_mapping(uw);
		return lookup_file(uw, pc);
	}
	idx = (__u32)mi;
	m = lookup_mapping(idx);
	if (!m)
		return -2;
	if (m->tgid != uw->tgid || m->version != uw->version || m->exec_id != uw->key.exec_id) {
		stat_inc(uw->gen, STAT_UNWIND_STALE);
		return -2;
	}
	keep_mapping(uw);
	uw->m_start = m->start;
	uw->m_end = m->end;
	uw->m_base = m->base;
	uw->m_row_start = m->row_start;
	uw->m_nr_rows = m->nr_rows;
	return 0;
}

/*
 * Unwind one frame: from (pc, sp, bp) to the caller's. first: pc is the sampled
 * instruction; otherwise a return address, looked up at pc - 1 (the call), since a call
 * that never returns may be the last instruction of its function. by_file: this program
 * may look up a pc's file (see find_pc_mapping()).
 */
static __always_inline int step(struct uw_state *uw, bool first, bool by_file)
{
	const struct ignis_unwind_row *row, *next;
	__u64 pc = first || uw->exact ? uw->pc : uw->pc - 1, cfa, rel, ra;
	__u32 idx, slot, cfa_type, rbp_type;
	bool last;
	__s64 off;
	int mi, ri;

	mi = find_pc_mapping(uw, pc, by_file);
	if (mi == -2)
		return STEP_TRUNCATED;
	if (mi == -3 && first) {
		/* The registers are not this process image's: a sample inside execve(), past
		 * the point where the old image's mappings went (its pc is the old image's). */
		stat_inc(uw->gen, STAT_UNWIND_UNMAPPED);
		return STEP_UNMAPPED;
	}
	if (mi < 0) {
		stat_inc(uw->gen, STAT_UNWIND_FP_FRAMES);
		return step_frame_pointer(uw, true);
	}
	if (!uw->m_nr_rows) {
		stat_inc(uw->gen, STAT_UNWIND_FP_FRAMES);
		return step_frame_pointer(uw, true);
	}
	rel = pc - uw->m_base;
	row = NULL;
	if (rel >> 32) {
		/* past the table */
	} else if (uw->rc_nr_rows && uw->rc_row_start == uw->m_row_start &&
		   uw->rc_nr_rows == uw->m_nr_rows && (__u32)rel >= uw->rc_lo &&
		   (__u32)rel < uw->rc_hi) {
		row = &uw->rc_row;
	} else {
		/* The hint first: a row of this table whose range holds rel is the one the
		 * search would find. The next row's pc ends a row's range (the last row's: the
		 * table's). */
		slot = row_hint_slot(uw->m_row_start, (__u32)rel);
		idx = uw->row_hints[slot];
		row = idx - uw->m_row_start < uw->m_nr_rows ? lookup_row(idx) : NULL;
		last = idx + 1 - uw->m_row_start >= uw->m_nr_rows;
		next = row && !last ? lookup_row(idx + 1) : NULL;
		if (!row || row->pc > (__u32)rel || (!last && (!next || (__u32)rel >= next->pc))) {
			ri = unwind_find_row(uw->m_row_start, uw->m_nr_rows, (__u32)rel);
			idx = (__u32)ri;
			row = ri < 0 ? NULL : lookup_row(idx);
			last = idx + 1 - uw->m_row_start >= uw->m_nr_rows;
			next = row && !last ? lookup_row(idx + 1) : NULL;
			if (row)
				uw->row_hints[slot] = idx;
		}
		if (row) {
			/* A next row that cannot be read: an empty range, nothing cached. */
			uw->rc_row = *row;
			uw->rc_row_start = uw->m_row_start;
			uw->rc_nr_rows = uw->m_nr_rows;
			uw->rc_lo = row->pc;
			uw->rc_hi = next ? next->pc : last ? 0xffffffffU : row->pc;
			row = &uw->rc_row;
		}
	}
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
		if (read_user(uw->sigregs, sizeof(uw->sigregs), uw->sp + 120)) {
			stat_inc(uw->gen, STAT_UNWIND_READ_FAULT);
			return STEP_TRUNCATED;
		}
		uw->bp = uw->sigregs[0];
		uw->bp_valid = 1;
		uw->sp = uw->sigregs[5];
		uw->pc = uw->sigregs[6];
		uw->exact = 1;
		uw->fp = 0;
		return uw->pc ? STEP_CONTINUE : STEP_END;
	default:
		stat_inc(uw->gen, STAT_UNWIND_UNSUPPORTED);
		return STEP_TRUNCATED;
	}
	if (read_stack(uw, cfa - 8)) {
		stat_inc(uw->gen, STAT_UNWIND_READ_FAULT);
		return STEP_TRUNCATED;
	}
	ra = uw->word;
	if (rbp_type == UNWIND_RBP_AT_CFA && cfa_type != UNWIND_CFA_PLT) {
		if (read_stack(uw, cfa + (__s64)row->rbp_off * 8)) {
			stat_inc(uw->gen, STAT_UNWIND_READ_FAULT);
			return STEP_TRUNCATED;
		}
		uw->bp = uw->word;
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

/*
 * Set up a walk from the sample's user registers (uw->pc, sp, bp, set by the caller, as are
 * the process's mappings and its Python interpreter, uw->py): the sampled pc is the stack's
 * leaf, put in by the first run.
 */
static __always_inline void unwind_begin(struct uw_state *uw, struct ignis_stack *stack, __u32 g,
					 const struct ignis_sample_key *key)
{
	uw->gen = g;
	uw->bp_valid = 1;
	uw->exact = 0;
	uw->fp = 0;
	uw->leaf = 1;
	uw->pending = 1;
	uw->python = 0;
	uw->m2_start = uw->m2_end = 0;
	uw->file_tries = 0;
	uw->vdso_seen = 0;
	uw->rc_nr_rows = 0;
	uw->py.started = 0;
	uw->py.frame = 0;
	uw->py.total = 0;
	uw->py.drain = 0;
	uw->offcpu_ns = 0;
	uw->key = *key;
	uw->stack_base = uw->sp & ~(__u64)(UNWIND_CHUNK_SIZE - 1);
	uw->stack_copied = 0;
	uw->stack_unreadable = 0;
	stack->len = 0;
}

/*
 * One program run: up to UNWIND_FRAMES_PER_RUN steps, each putting in a frame: a native one,
 * its pc marked IGNIS_USER_IP_EXACT or IGNIS_USER_IP_FP as uw says, or, in the place of a
 * frame of the Python eval loop, the Python frames it runs (bpf/python.bpf.h). Returns
 * STEP_CONTINUE when a frame remains (the program tail-calls itself for it), or how the walk
 * ended. by_file: pcs in no published mapping may be looked up by their file
 * (lookup_file(); a constant, so that the program without it holds no call to it).
 */
static __always_inline int unwind_frames(struct uw_state *uw, struct ignis_stack *stack,
					 bool by_file)
{
	__u32 i, len, slot;
	__u64 pc;
	int r = STEP_CONTINUE, p;

	for (i = 0; i < UNWIND_FRAMES_PER_RUN; i++) {
		if (uw->py.drain) {
			/* The native walk was cut: the rest of the Python chain, then the end. */
			if (UNWIND_PYTHON(uw, stack) == PY_STEP_FRAME)
				continue;
			return STEP_TRUNCATED;
		}
		if (uw->python) {
			p = UNWIND_PYTHON(uw, stack);
			if (p == PY_STEP_FRAME)
				continue;
			if (p == PY_STEP_DEPTH)
				return STEP_TRUNCATED;
			uw->python = 0;
			if (p == PY_STEP_FAILED)
				uw->py.on = 0; /* native frames only from here */
			if (uw->py.emitted)
				continue;
			/* No Python frame for this eval frame: it stays as it is. */
		} else {
			if (!uw->pending) {
				r = step(uw, uw->leaf, by_file);
				uw->leaf = 0;
				if (r == STEP_TRUNCATED && uw->py.on &&
				    (uw->py.frame || !uw->py.started)) {
					uw->py.drain = 1;
					r = STEP_CONTINUE;
					continue;
				}
				if (r == STEP_UNMAPPED) {
					stack->len = 0;
					return STEP_END;
				}
				if (r != STEP_CONTINUE)
					break;
			}
			uw->pending = 0;
			pc = uw->leaf || uw->exact ? uw->pc : uw->pc - 1;
			if (py_in_eval(&uw->py, pc)) {
				uw->python = 1;
				uw->py.emitted = 0;
				continue;
			}
		}
		len = stack->len;
		/* A frame exists: past the last slot, the stack is cut short of it. */
		if (len >= IGNIS_MAX_STACK_DEPTH) {
			stat_inc(uw->gen, STAT_UNWIND_DEPTH);
			return STEP_TRUNCATED;
		}
		/* The mask bounds the index for the verifier, which may not tie the check above
		 * to the register the compiler indexes with; the barrier keeps the compiler from
		 * dropping the mask it knows to be a no-op. */
		slot = len;
		barrier_var(slot);
		slot &= IGNIS_MAX_STACK_DEPTH - 1;
		stack->ips[slot] = uw->pc | (uw->exact ? IGNIS_USER_IP_EXACT : 0) |
				   (uw->fp ? IGNIS_USER_IP_FP : 0);
		stack->len = len + 1;
	}
	return r;
}

/* The stack's STACK_F_* for how the walk ended (STEP_END: judged by its root, later). */
static __always_inline __u32 unwind_end_flags(int r)
{
	return r == STEP_COMPLETE ? STACK_F_COMPLETE : r == STEP_TRUNCATED ? STACK_F_TRUNCATED : 0;
}

#endif /* IGNIS_BPF_UNWIND_BPF_H */
