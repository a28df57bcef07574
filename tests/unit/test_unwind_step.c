// SPDX-License-Identifier: Apache-2.0
/*
 * The table unwinder's logic (bpf/unwind.bpf.h), compiled natively and run over a recorded
 * stack: the same step(), binary searches and per-run walk the kernel runs, with the maps as
 * arrays, user memory as one byte buffer and the counters as an array (the four functions the
 * header asks its includer for). A process has an executable and a library with tables and
 * a JIT region without; each test lays out the frames in memory, walks them as ignis_unwind
 * does (one unwind_frames() per program run, "tail-calling" while it returns STEP_CONTINUE)
 * and checks the exact pcs with their IGNIS_USER_IP_* marks, the stack's flags and which
 * counter the walk bumped. Links nothing: no BPF, no root.
 */
#include <linux/types.h>
#include <stdbool.h>

#include "unit.h"

#include "../../bpf/profiler.h"
#include "../../bpf/unwind.bpf.h"

/* ---- The world the unwinder sees ------------------------------------------------------------- */

#define MEM_BASE 0x7ffe00000000ULL /* user memory: the stack, at MEM_BASE + [0, MEM_SIZE) */
#define MEM_SIZE 16384
#define S	 MEM_BASE

#define TGID	42
#define VERSION 7
#define EXEC_ID 3

/* unwind_maps: [0] another process's; the process's extent is [1, 4). */
#define MAP_START 1
#define NR_MAPS	  3
#define EXE	  0x400000ULL	    /* [EXE, EXE + 0x1000), table pc 0 at EXE */
#define LIB_BASE  0x7f0000000000ULL /* table pc 0; the mapping is [LIB_BASE + 0x1000, + 0x2000) */
#define LIB	  (LIB_BASE + 0x1000)
#define JIT	  0x7f1000000000ULL /* [JIT, JIT + 0x1000): no table */
#define VDSO	  0x7ff000000000ULL /* [VDSO, VDSO + 0x2000): the library's rows, pc 0 at VDSO */

/* unwind_rows: [0, 2) another table's, then the executable's, then the library's. */
#define EXE_ROWS 2
#define LIB_ROWS 14

static struct {
	bool synthetic; /* the maps hold entry idx at [idx * 4 KiB, + 4 KiB), row idx at pc idx */
	struct ignis_unwind_mapping maps[4];
	struct ignis_unwind_row rows[17];
	__u8 mem[MEM_SIZE];
	__u64 stats[IGNIS_NR_GENS * STAT_NR];
	/* What lookups by file find (bpf_find_vma() and unwind_exes, in BPF): the process's
	 * mappings as the kernel has them, whatever is published. */
	struct ignis_unwind_mapping vmas[4];
	int nr_vmas;
	int file_grants; /* lookups the kernel grants; the rest are refused (busy) */
	int file_lookups;
	/* The vDSO's table as unwind_exes' entry of no file gives it (base, rows), or nr_rows
	 * 0 (none entered, or another image's build ID). */
	struct ignis_unwind_mapping vdso;
	int vdso_lookups;
	int reads;	 /* read_user() calls */
	int row_lookups; /* lookup_row() calls */
	int map_lookups; /* lookup_mapping() calls */
} w;

static struct ignis_unwind_mapping synthetic_map;
static struct ignis_unwind_row synthetic_row;

static inline const struct ignis_unwind_mapping *lookup_mapping(__u32 idx)
{
	w.map_lookups++;
	if (w.synthetic) {
		synthetic_map.start = (__u64)idx << 12;
		synthetic_map.end = synthetic_map.start + 4096;
		return &synthetic_map;
	}
	return idx < sizeof(w.maps) / sizeof(w.maps[0]) ? &w.maps[idx] : NULL;
}

static inline const struct ignis_unwind_row *lookup_row(__u32 idx)
{
	w.row_lookups++;
	if (w.synthetic) {
		synthetic_row.pc = idx;
		return &synthetic_row;
	}
	return idx < sizeof(w.rows) / sizeof(w.rows[0]) ? &w.rows[idx] : NULL;
}

/* As bpf_probe_read_user(): all or nothing, the destination zeroed on a fault. */
static inline long read_user(void *dst, __u32 size, __u64 addr)
{
	w.reads++;
	if (addr < MEM_BASE || addr - MEM_BASE > MEM_SIZE || size > MEM_SIZE - (addr - MEM_BASE)) {
		memset(dst, 0, size);
		return -EFAULT;
	}
	memcpy(dst, w.mem + (addr - MEM_BASE), size);
	return 0;
}

static inline void stat_inc(__u32 g, enum ignis_stat stat)
{
	w.stats[g * STAT_NR + stat]++;
}

/* As unwind_find_file() in bpf/unwind.bpf.c: the VMA holding pc, with its file's table or
 * without rows; -1 when the lookup is refused, -3 when no VMA holds pc. */
static inline int lookup_file(struct uw_state *uw, __u64 pc)
{
	int i;

	w.file_lookups++;
	if (w.file_lookups > w.file_grants) {
		stat_inc(uw->gen, STAT_UNWIND_FILE_BUSY);
		return -1;
	}
	for (i = 0; i < w.nr_vmas; i++) {
		const struct ignis_unwind_mapping *m = &w.vmas[i];

		if (pc < m->start || pc >= m->end)
			continue;
		uw->m_start = m->start;
		uw->m_end = m->end;
		uw->m_base = m->base;
		uw->m_row_start = m->row_start;
		uw->m_nr_rows = m->nr_rows;
		stat_inc(uw->gen, m->nr_rows ? STAT_UNWIND_FILE_TABLE : STAT_UNWIND_FILE_NONE);
		return 0;
	}
	return -3;
}

/* As unwind_find_vdso() in bpf/unwind.bpf.c: the vDSO's table, or none (nr_rows 0). */
static inline void lookup_vdso(struct uw_state *uw)
{
	w.vdso_lookups++;
	uw->vdso_base = w.vdso.base;
	uw->vdso_row_start = w.vdso.row_start;
	uw->vdso_nr_rows = w.vdso.nr_rows;
	stat_inc(uw->gen, w.vdso.nr_rows ? STAT_UNWIND_VDSO_TABLE : STAT_UNWIND_VDSO_NONE);
}

/* The Python walker's world: a thread's fs base, serials in the order met. */
#define FSBASE (S + 0x1800)
static struct ignis_py_code_key py_codes_met[8];
static unsigned int nr_py_codes;

static inline __u64 py_fsbase(void)
{
	return FSBASE;
}

static inline __u64 py_code_serial(const struct ignis_py_code_key *key, struct uw_python *py,
				   __s32 firstlineno)
{
	(void)py;
	(void)firstlineno;
	unsigned int i;

	for (i = 0; i < nr_py_codes; i++)
		if (!memcmp(&py_codes_met[i], key, sizeof(*key)))
			return i + 1;
	if (nr_py_codes == sizeof(py_codes_met) / sizeof(py_codes_met[0]))
		return 0;
	py_codes_met[nr_py_codes++] = *key;
	return nr_py_codes;
}

static void poke(__u64 addr, __u64 value)
{
	assert_true(addr >= MEM_BASE && addr + 8 <= MEM_BASE + MEM_SIZE);
	memcpy(w.mem + (addr - MEM_BASE), &value, 8);
}

static struct ignis_unwind_row mkrow(__u32 pc, __u8 cfa, int cfa_bytes, __u8 rbp, int rbp_bytes)
{
	struct ignis_unwind_row r = { .pc = pc, .type = (__u8)(cfa | rbp << 4) };

	r.cfa_off = (__s16)(cfa_bytes / 8);
	r.rbp_off = (__s8)(cfa == UNWIND_CFA_PLT ? rbp_bytes : rbp_bytes / 8);
	return r;
}

static struct ignis_unwind_mapping mkmap(__u64 start, __u64 end, __u64 base, __u32 row_start,
					 __u32 nr_rows)
{
	struct ignis_unwind_mapping m = { .start = start,
					  .end = end,
					  .base = base,
					  .row_start = row_start,
					  .nr_rows = nr_rows,
					  .tgid = TGID,
					  .version = VERSION,
					  .exec_id = EXEC_ID };
	return m;
}

/* The executable's rows (pcs relative to EXE), which the tests' frames land in. */
#define R_ENTRY	    0x000 /* CFA = rsp + 8 */
#define R_FP_BODY   0x100 /* CFA = rbp + 16, rbp at CFA - 16 */
#define R_NOFP_BODY 0x200 /* CFA = rsp + 16 */
#define R_PLT	    0x300 /* CFA = rsp + 8 + ((pc & 15) >= 11 ? 8 : 0) */
#define R_OUTERMOST 0x400
#define R_NO_CFI    0x500
#define R_UNSUPP    0x600
#define R_SIGNAL    0x6f0 /* glibc's __restore_rt, its FDE starting a byte early */
#define R_RBP_LOST  0x710 /* CFA = rsp + 8, rbp undefined from here on */
#define R_PUSHES    0x800 /* CFA = rsp + 24, rbp at CFA - 16 */

static void world_init(void)
{
	memset(&w, 0, sizeof(w));
	w.maps[0] = mkmap(EXE, EXE + 0x1000, EXE, 0, 2);
	w.maps[0].tgid = 999;
	w.maps[1] = mkmap(EXE, EXE + 0x1000, EXE, EXE_ROWS, 12);
	w.maps[2] = mkmap(LIB, LIB + 0x1000, LIB_BASE, LIB_ROWS, 3);
	w.maps[3] = mkmap(JIT, JIT + 0x1000, JIT, 0, 0);
	/* Another table's rows: a walk that ignores row_start finds these. */
	w.rows[0] = mkrow(0x000, UNWIND_CFA_UNSUPPORTED, 0, UNWIND_RBP_SAME, 0);
	w.rows[1] = mkrow(0x800, UNWIND_CFA_UNSUPPORTED, 0, UNWIND_RBP_SAME, 0);

	w.rows[EXE_ROWS + 0] = mkrow(R_ENTRY, UNWIND_CFA_RSP, 8, UNWIND_RBP_SAME, 0);
	w.rows[EXE_ROWS + 1] = mkrow(R_FP_BODY, UNWIND_CFA_RBP, 16, UNWIND_RBP_AT_CFA, -16);
	w.rows[EXE_ROWS + 2] = mkrow(R_NOFP_BODY, UNWIND_CFA_RSP, 16, UNWIND_RBP_SAME, 0);
	w.rows[EXE_ROWS + 3] = mkrow(R_PLT, UNWIND_CFA_PLT, 8, UNWIND_RBP_SAME, 11);
	w.rows[EXE_ROWS + 4] = mkrow(0x310, UNWIND_CFA_RSP, 8, UNWIND_RBP_SAME, 0);
	w.rows[EXE_ROWS + 5] = mkrow(R_OUTERMOST, UNWIND_CFA_OUTERMOST, 0, UNWIND_RBP_SAME, 0);
	w.rows[EXE_ROWS + 6] = mkrow(R_NO_CFI, UNWIND_CFA_NONE, 0, UNWIND_RBP_SAME, 0);
	w.rows[EXE_ROWS + 7] = mkrow(R_UNSUPP, UNWIND_CFA_UNSUPPORTED, 0, UNWIND_RBP_SAME, 0);
	w.rows[EXE_ROWS + 8] = mkrow(R_SIGNAL, UNWIND_CFA_SIGNAL, 0, UNWIND_RBP_SAME, 0);
	w.rows[EXE_ROWS + 9] = mkrow(R_RBP_LOST, UNWIND_CFA_RSP, 8, UNWIND_RBP_UNDEFINED, 0);
	w.rows[EXE_ROWS + 10] = mkrow(R_PUSHES, UNWIND_CFA_RSP, 24, UNWIND_RBP_AT_CFA, -16);
	w.rows[EXE_ROWS + 11] = mkrow(0x900, UNWIND_CFA_NONE, 0, UNWIND_RBP_SAME, 0);

	/* The library's rows are relative to LIB_BASE; its code starts at pc 0x1000. */
	w.rows[LIB_ROWS + 0] = mkrow(0x1000, UNWIND_CFA_RSP, 8, UNWIND_RBP_SAME, 0);
	w.rows[LIB_ROWS + 1] = mkrow(0x1100, UNWIND_CFA_RSP, 16, UNWIND_RBP_SAME, 0);
	w.rows[LIB_ROWS + 2] = mkrow(0x1200, UNWIND_CFA_NONE, 0, UNWIND_RBP_SAME, 0);
}

/* ---- A walk, as ignis_sample starts it and ignis_unwind runs it ------------------------------ */

struct walk {
	struct uw_state uw;
	struct ignis_stack st;
	int runs;    /* program runs: the first and each tail call */
	int end;     /* the last run's enum step_result */
	__u32 flags; /* STACK_F_* */
};

/* The program runs: the first, then one per tail call while a caller remains (the kernel
 * allows 33 in all). */
static void walk_run(struct walk *wk)
{
	do {
		wk->end = unwind_frames(&wk->uw, &wk->st, true);
		wk->runs++;
	} while (wk->end == STEP_CONTINUE && wk->runs < 33);
	wk->flags = unwind_end_flags(wk->end);
}

/* The state start_unwind() leaves for a published process: its mappings, the registers. */
static void walk_begin(struct walk *wk, __u32 g, __u64 pc, __u64 sp, __u64 bp)
{
	struct ignis_sample_key key = { .tgid = TGID, .pid = TGID, .exec_id = EXEC_ID };

	memset(wk, 0, sizeof(*wk));
	wk->uw.tgid = TGID;
	wk->uw.version = VERSION;
	wk->uw.map_start = MAP_START;
	wk->uw.nr_maps = NR_MAPS;
	wk->uw.pc = pc;
	wk->uw.sp = sp;
	wk->uw.bp = bp;
	unwind_begin(&wk->uw, &wk->st, g, &key);
}

static void walk_from(struct walk *wk, __u32 g, __u64 pc, __u64 sp, __u64 bp)
{
	walk_begin(wk, g, pc, sp, bp);
	walk_run(wk);
}

static void walk(struct walk *wk, __u64 pc, __u64 sp, __u64 bp)
{
	walk_from(wk, 0, pc, sp, bp);
}

static void check_ips(const struct walk *wk, const __u64 *ips, __u32 n)
{
	__u32 i;

	for (i = 0; i < n && i < wk->st.len; i++)
		if (wk->st.ips[i] != ips[i])
			fail_msg("frame %u: 0x%llx, expected 0x%llx", i,
				 (unsigned long long)wk->st.ips[i], (unsigned long long)ips[i]);
	assert_int_equal(wk->st.len, n);
}

/* Every counter of both generations is zero but stat1 and stat2 of generation g, which are
 * n1 and n2 (STAT_NR: none). */
static void check_stats2(__u32 g, enum ignis_stat stat1, __u64 n1, enum ignis_stat stat2, __u64 n2)
{
	__u32 i;

	for (i = 0; i < IGNIS_NR_GENS * STAT_NR; i++) {
		__u64 want = i == g * STAT_NR + stat1 ? n1 : i == g * STAT_NR + stat2 ? n2 : 0;

		if (w.stats[i] != want)
			fail_msg("counter %u of generation %u: %llu, expected %llu", i % STAT_NR,
				 i / STAT_NR, (unsigned long long)w.stats[i],
				 (unsigned long long)want);
	}
}

static void check_stats(__u32 g, enum ignis_stat stat, __u64 n)
{
	check_stats2(g, stat, n, STAT_NR, 0);
}

#define CHECK_IPS(wk, ...)                                              \
	do {                                                            \
		const __u64 want_[] = { __VA_ARGS__ };                  \
		check_ips(wk, want_, sizeof(want_) / sizeof(want_[0])); \
	} while (0)

/* ---- Tests ----------------------------------------------------------------------------------- */

/*
 * A library leaf without a frame pointer, a frame-pointer function, a return address at the
 * first byte of the next row (its call is the function's last instruction), and the
 * outermost frame. The leaf is looked up at its pc, the return addresses at pc - 1: each
 * wrong choice would take the decoy slot.
 */
static void test_tables_walk_to_the_outermost_frame(void **state)
{
	struct walk wk;

	(void)state;
	world_init();
	/* Leaf at the library row 0x1100 (CFA = rsp + 16); at pc - 1 it would be rsp + 8. */
	poke(S + 0x100, LIB + 0x1234); /* decoy: rsp + 8 - 8 */
	poke(S + 0x108, EXE + 0x150);  /* return address at CFA - 8 */
	/* EXE + 0x150: CFA = rbp + 16 = S + 0x190, rbp saved at CFA - 16. */
	poke(S + 0x180, S + 0x1c0);
	poke(S + 0x188, EXE + R_NOFP_BODY);
	/* EXE + 0x200 returns into the fp body (looked up at 0x1ff): CFA = rbp + 16. Looked up
	 * at 0x200 it would be rsp + 16 = S + 0x1a0, with the decoy below. */
	poke(S + 0x198, EXE + R_NO_CFI + 0x10);
	poke(S + 0x1c0, 0);
	poke(S + 0x1c8, EXE + R_OUTERMOST + 0xa);

	walk(&wk, LIB + 0x100, S + 0x100, S + 0x180);
	CHECK_IPS(&wk, LIB + 0x100, EXE + 0x150, EXE + R_NOFP_BODY, EXE + R_OUTERMOST + 0xa);
	assert_int_equal(wk.end, STEP_COMPLETE);
	assert_int_equal(wk.flags, STACK_F_COMPLETE);
	assert_int_equal(wk.runs, 1);
	assert_int_equal(wk.uw.sp, S + 0x1d0);
	check_stats(0, STAT_NR, 0);
}

/* The lazy PLT's CFA depends on the pc's low bits: 8 more from the threshold on. Its
 * rbp_off is the threshold, never an rbp offset, whatever the rbp bits say. */
static void test_plt_cfa_follows_the_pc_threshold(void **state)
{
	__u64 sp = S + MEM_SIZE - 16; /* rbp at CFA + 11 * 8 would be past the memory */
	struct walk wk;

	(void)state;
	world_init();
	w.rows[EXE_ROWS + 3].type = UNWIND_CFA_PLT | UNWIND_RBP_AT_CFA << 4;
	poke(sp, EXE + R_OUTERMOST + 1);
	poke(sp + 8, EXE + R_OUTERMOST + 2);

	walk(&wk, EXE + R_PLT + 10, sp, 0);
	CHECK_IPS(&wk, EXE + R_PLT + 10, EXE + R_OUTERMOST + 1);
	assert_int_equal(wk.flags, STACK_F_COMPLETE);

	walk(&wk, EXE + R_PLT + 11, sp, 0);
	CHECK_IPS(&wk, EXE + R_PLT + 11, EXE + R_OUTERMOST + 2);
	assert_int_equal(wk.flags, STACK_F_COMPLETE);
	assert_int_equal(wk.uw.sp, sp + 16);
	check_stats(0, STAT_NR, 0);
}

/* A caller's rbp saved at CFA - 16 under an rsp-based CFA: the next frame's CFA uses it. */
static void test_rbp_restored_from_an_rsp_frame(void **state)
{
	struct walk wk;

	(void)state;
	world_init();
	poke(S + 0x108, S + 0x200); /* saved rbp: CFA (S + 0x118) - 16 */
	poke(S + 0x110, EXE + 0x150);
	poke(S + 0x208, EXE + R_OUTERMOST + 3); /* the fp body's return address: rbp + 8 */

	walk(&wk, EXE + R_PUSHES + 4, S + 0x100, 0x1111);
	CHECK_IPS(&wk, EXE + R_PUSHES + 4, EXE + 0x150, EXE + R_OUTERMOST + 3);
	assert_int_equal(wk.flags, STACK_F_COMPLETE);
	check_stats(0, STAT_NR, 0);
}

/*
 * A SIGPROF handler's frames: the handler returns into __restore_rt, whose row makes the
 * walk continue with the registers in the kernel's sigcontext (rbp, rsp, rip at sp + 120,
 * 160, 168). The interrupted pc is exact: marked, and looked up at itself (here the first
 * byte of an rsp-based row, which at pc - 1 would be the rbp-based one before it); its
 * caller uses the interrupted rbp.
 */
static void test_signal_frame_continues_at_the_interrupted_pc(void **state)
{
	__u64 tramp_sp = S + 0x210;
	struct walk wk;

	(void)state;
	world_init();
	poke(S + 0x208, EXE + R_SIGNAL + 0x10);	 /* __restore_rt, at pc - 1 still its row */
	poke(tramp_sp + 120, S + 0x3c0);	 /* rbp */
	poke(tramp_sp + 160, S + 0x300);	 /* rsp */
	poke(tramp_sp + 168, EXE + R_NOFP_BODY); /* rip */
	poke(S + 0x308, EXE + 0x150);		 /* CFA = rsp + 16 */
	poke(S + 0x3c0, 0);			 /* the fp body's frame at the interrupted rbp */
	poke(S + 0x3c8, EXE + R_OUTERMOST + 4);

	walk(&wk, EXE + R_NOFP_BODY + 0x10, S + 0x200, 0x1234);
	CHECK_IPS(&wk, EXE + R_NOFP_BODY + 0x10, EXE + R_SIGNAL + 0x10,
		  (EXE + R_NOFP_BODY) | IGNIS_USER_IP_EXACT, EXE + 0x150, EXE + R_OUTERMOST + 4);
	assert_int_equal(wk.flags, STACK_F_COMPLETE);
	check_stats(0, STAT_NR, 0);
}

/*
 * Code in no table: JIT code in a mapping without rows, and an address in no mapping at
 * all. Each is left through its frame pointer, counted, and its caller marked for the agent
 * to check; a return address found through CFI is not.
 */
static void test_frame_pointer_through_code_without_a_table(void **state)
{
	struct walk wk;

	(void)state;
	world_init();
	poke(S + 0x140, S + 0x180); /* JIT frame: saved rbp, return address */
	poke(S + 0x148, EXE + 0x150);
	poke(S + 0x180, S + 0x1c0); /* the fp body: CFA = rbp + 16 */
	poke(S + 0x188, 0x10000);   /* returns into no mapping */
	poke(S + 0x1c0, 0);
	poke(S + 0x1c8, EXE + R_OUTERMOST + 5);

	walk(&wk, JIT + 0x10, S + 0x100, S + 0x140);
	CHECK_IPS(&wk, JIT + 0x10, (EXE + 0x150) | IGNIS_USER_IP_FP, 0x10000,
		  (EXE + R_OUTERMOST + 5) | IGNIS_USER_IP_FP);
	assert_int_equal(wk.flags, STACK_F_COMPLETE);
	check_stats(0, STAT_UNWIND_FP_FRAMES, 2);
}

/* A frame-pointer chain that ends (rbp 0) is neither complete nor truncated. */
static void test_frame_pointer_chain_end_is_judged_later(void **state)
{
	struct walk wk;

	(void)state;
	world_init();
	walk(&wk, JIT + 0x10, S + 0x100, 0);
	CHECK_IPS(&wk, JIT + 0x10);
	assert_int_equal(wk.end, STEP_END);
	assert_int_equal(wk.flags, 0);
	check_stats(0, STAT_UNWIND_FP_FRAMES, 1);

	/* A return address of 0 through the frame pointer ends the chain as well. */
	world_init();
	poke(S + 0x140, S + 0x180);
	poke(S + 0x148, 0);
	walk(&wk, JIT + 0x10, S + 0x100, S + 0x140);
	CHECK_IPS(&wk, JIT + 0x10);
	assert_int_equal(wk.end, STEP_END);
	check_stats(0, STAT_UNWIND_FP_FRAMES, 1);
}

/* A gap of a table (code without CFI): frame pointer, counted apart, caller not marked. */
static void test_gap_without_cfi_uses_the_frame_pointer_unmarked(void **state)
{
	struct walk wk;

	(void)state;
	world_init();
	poke(S + 0x140, 0); /* saved rbp, return address; the caller's sp is rbp + 16 */
	poke(S + 0x148, EXE + R_NOFP_BODY + 0x20);
	poke(S + 0x158, EXE + R_OUTERMOST + 6); /* the caller's CFA: sp + 16 */
	walk(&wk, EXE + R_NO_CFI + 0x10, S + 0x100, S + 0x140);
	CHECK_IPS(&wk, EXE + R_NO_CFI + 0x10, EXE + R_NOFP_BODY + 0x20, EXE + R_OUTERMOST + 6);
	assert_int_equal(wk.flags, STACK_F_COMPLETE);
	check_stats(0, STAT_UNWIND_NO_CFI, 1);

	/* A pc before the first row of its table is in a gap too. */
	world_init();
	w.rows[LIB_ROWS].pc = 0x1080;
	poke(S + 0x140, 0);
	poke(S + 0x148, EXE + R_OUTERMOST + 6);
	walk(&wk, LIB + 0x10, S + 0x100, S + 0x140);
	CHECK_IPS(&wk, LIB + 0x10, EXE + R_OUTERMOST + 6);
	check_stats(0, STAT_UNWIND_NO_CFI, 1);
}

/* Before a process is published: the executable's table alone (as start_exe_only() sets it
 * up, no mappings to search), frame pointers elsewhere; counted in the sample's generation. */
static void test_executable_only_walk_in_generation_one(void **state)
{
	struct ignis_sample_key key = { .tgid = TGID, .pid = TGID, .exec_id = EXEC_ID };
	struct walk wk;

	(void)state;
	world_init();
	poke(S + 0x108, LIB + 0x110); /* the library has a table, but it is not published */
	poke(S + 0x140, 0);
	poke(S + 0x148, EXE + R_OUTERMOST + 7);
	memset(&wk, 0, sizeof(wk));
	wk.uw.tgid = TGID;
	wk.uw.m_start = EXE;
	wk.uw.m_end = EXE + 0x1000;
	wk.uw.m_base = EXE;
	wk.uw.m_row_start = EXE_ROWS;
	wk.uw.m_nr_rows = 12;
	wk.uw.pc = EXE + R_NOFP_BODY + 4;
	wk.uw.sp = S + 0x100;
	wk.uw.bp = S + 0x140;
	unwind_begin(&wk.uw, &wk.st, 1, &key);
	walk_run(&wk);
	CHECK_IPS(&wk, EXE + R_NOFP_BODY + 4, LIB + 0x110,
		  (EXE + R_OUTERMOST + 7) | IGNIS_USER_IP_FP);
	assert_int_equal(wk.flags, STACK_F_COMPLETE);
	check_stats(1, STAT_UNWIND_FP_FRAMES, 1);
}

/* An unpublished process as start_exe_only() sets it up: the executable's table from its
 * file, nothing published, lookups by file allowed (ignis_unwind_files). */
static void walk_unpublished(struct walk *wk, __u64 pc, __u64 sp, __u64 bp)
{
	struct ignis_sample_key key = { .tgid = TGID, .pid = TGID, .exec_id = EXEC_ID };

	memset(wk, 0, sizeof(*wk));
	wk->uw.tgid = TGID;
	wk->uw.m_start = EXE;
	wk->uw.m_end = EXE + 0x1000;
	wk->uw.m_base = EXE;
	wk->uw.m_row_start = EXE_ROWS;
	wk->uw.m_nr_rows = 12;
	wk->uw.by_file = 1;
	wk->uw.vdso_start = VDSO; /* start_vdso() */
	wk->uw.vdso_end = VDSO + 0x2000;
	wk->uw.pc = pc;
	wk->uw.sp = sp;
	wk->uw.bp = bp;
	unwind_begin(&wk->uw, &wk->st, 0, &key);
	walk_run(wk);
}

/*
 * Before a process is published, where the kernel has bpf_find_vma(): a pc in no mapping the
 * walk knows is looked up by its file, once: the library's frames are unwound with its table
 * (no frame-pointer mark: nothing for the agent to check), and the walk comes back into the
 * executable through the second cached mapping, without another lookup (an interrupt gets
 * one). Here the program's frames keep no frame pointer: rbp is garbage all along.
 */
static void test_unpublished_library_unwound_by_its_file(void **state)
{
	struct walk wk;

	(void)state;
	world_init();
	w.vmas[0] = w.maps[2]; /* the library, as the kernel maps it */
	w.nr_vmas = 1;
	w.file_grants = 1;
	poke(S + 0x108, LIB + 0x110);		/* exe row 0x200: CFA = rsp + 16 */
	poke(S + 0x118, EXE + R_PUSHES + 4);	/* library row 0x1100: CFA = rsp + 16 */
	poke(S + 0x128, 0xdead);		/* exe row 0x800: CFA = rsp + 24, rbp at */
	poke(S + 0x130, EXE + R_OUTERMOST + 7); /* CFA - 16 (garbage) */

	walk_unpublished(&wk, EXE + R_NOFP_BODY + 4, S + 0x100, 0x5555);
	CHECK_IPS(&wk, EXE + R_NOFP_BODY + 4, LIB + 0x110, EXE + R_PUSHES + 4,
		  EXE + R_OUTERMOST + 7);
	assert_int_equal(wk.flags, STACK_F_COMPLETE);
	assert_int_equal(w.file_lookups, 1);
	check_stats(0, STAT_UNWIND_FILE_TABLE, 1);

	/* The same where the kernel refuses the lookup (its one per interrupt used, or the mm
	 * being changed): the library is left by its frame pointer, marked for the agent. */
	world_init();
	w.vmas[0] = w.maps[2];
	w.nr_vmas = 1;
	w.file_grants = 0;
	poke(S + 0x108, LIB + 0x110);
	poke(S + 0x140, 0);
	poke(S + 0x148, EXE + R_OUTERMOST + 7);
	walk_unpublished(&wk, EXE + R_NOFP_BODY + 4, S + 0x100, S + 0x140);
	CHECK_IPS(&wk, EXE + R_NOFP_BODY + 4, LIB + 0x110,
		  (EXE + R_OUTERMOST + 7) | IGNIS_USER_IP_FP);
	check_stats2(0, STAT_UNWIND_FILE_BUSY, 1, STAT_UNWIND_FP_FRAMES, 1);

	/* A published process whose executable memory is as published never looks up by
	 * file: its mappings are all it has. */
	world_init();
	w.vmas[0] = w.maps[2];
	w.nr_vmas = 1;
	w.file_grants = 1;
	w.maps[2].end = LIB + 0x10; /* the library's code at LIB + 0x10f is not published */
	poke(S + 0x108, LIB + 0x110);
	poke(S + 0x140, 0);
	poke(S + 0x148, EXE + R_OUTERMOST + 7);
	walk(&wk, EXE + R_NOFP_BODY + 4, S + 0x100, S + 0x140);
	CHECK_IPS(&wk, EXE + R_NOFP_BODY + 4, LIB + 0x110,
		  (EXE + R_OUTERMOST + 7) | IGNIS_USER_IP_FP);
	assert_int_equal(w.file_lookups, 0);
	check_stats(0, STAT_UNWIND_FP_FRAMES, 1);

	/* One whose executable memory changed since (start_unwind() saw another mm->exec_vm:
	 * a dlopen()) looks up what is not published: the library's frames by its table. */
	world_init();
	w.vmas[0] = w.maps[2];
	w.nr_vmas = 1;
	w.file_grants = 1;
	w.maps[2].end = LIB + 0x10;
	poke(S + 0x108, LIB + 0x110);
	poke(S + 0x118, EXE + R_PUSHES + 4);
	poke(S + 0x128, 0xdead);
	poke(S + 0x130, EXE + R_OUTERMOST + 7);
	walk_begin(&wk, 0, EXE + R_NOFP_BODY + 4, S + 0x100, 0x5555);
	wk.uw.by_file = 1;
	walk_run(&wk);
	CHECK_IPS(&wk, EXE + R_NOFP_BODY + 4, LIB + 0x110, EXE + R_PUSHES + 4,
		  EXE + R_OUTERMOST + 7);
	assert_int_equal(wk.flags, STACK_F_COMPLETE);
	assert_int_equal(w.file_lookups, 1);
	check_stats(0, STAT_UNWIND_FILE_TABLE, 1);
}

/*
 * Before a process is published, its vDSO is known from mm->context.vdso: a sample in it (a
 * clock read, or the system call under it) is unwound with the vDSO's table without a lookup,
 * which is left for the library that called it; and the vDSO does not push the program out of
 * the two cached mappings, so the walk comes back to it without a second lookup. Without the
 * vDSO's table, its frame is left by frame pointer, marked, and still costs no lookup.
 */
static void test_unpublished_vdso_costs_no_lookup(void **state)
{
	struct walk wk;

	(void)state;
	world_init();
	w.vmas[0] = w.maps[2]; /* the library, as the kernel maps it */
	w.nr_vmas = 1;
	w.file_grants = 1;
	w.vdso = mkmap(VDSO + 0x1000, VDSO + 0x2000, VDSO, LIB_ROWS, 3);
	poke(S + 0x108, LIB + 0x110);	     /* vDSO row 0x1100: CFA = rsp + 16 */
	poke(S + 0x118, EXE + R_PUSHES + 4); /* library row 0x1100: CFA = rsp + 16 */
	poke(S + 0x128, 0xdead);	     /* exe row 0x800: CFA = rsp + 24 */
	poke(S + 0x130, EXE + R_OUTERMOST + 7);
	walk_unpublished(&wk, VDSO + 0x1104, S + 0x100, 0x5555);
	CHECK_IPS(&wk, VDSO + 0x1104, LIB + 0x110, EXE + R_PUSHES + 4, EXE + R_OUTERMOST + 7);
	assert_int_equal(wk.flags, STACK_F_COMPLETE);
	assert_int_equal(w.file_lookups, 1);
	assert_int_equal(w.vdso_lookups, 1);
	check_stats2(0, STAT_UNWIND_VDSO_TABLE, 1, STAT_UNWIND_FILE_TABLE, 1);

	/* No vDSO table: its frame by frame pointer, the library still by its table. */
	world_init();
	w.vmas[0] = w.maps[2];
	w.nr_vmas = 1;
	w.file_grants = 1;
	poke(S + 0x140, S + 0x150); /* the vDSO's frame: saved rbp, return address */
	poke(S + 0x148, LIB + 0x110);
	poke(S + 0x158, EXE + R_PUSHES + 4); /* library row 0x1100: CFA = sp + 16 */
	poke(S + 0x168, 0xdead);
	poke(S + 0x170, EXE + R_OUTERMOST + 7);
	walk_unpublished(&wk, VDSO + 0x1104, S + 0x140, S + 0x140);
	CHECK_IPS(&wk, VDSO + 0x1104, (LIB + 0x110) | IGNIS_USER_IP_FP, EXE + R_PUSHES + 4,
		  EXE + R_OUTERMOST + 7);
	assert_int_equal(wk.flags, STACK_F_COMPLETE);
	assert_int_equal(w.file_lookups, 1);
	assert_int_equal(w.vdso_lookups, 1);
	assert_int_equal(w.stats[STAT_UNWIND_VDSO_NONE], 1);
	assert_int_equal(w.stats[STAT_UNWIND_FILE_TABLE], 1);

	/* A published process has its vDSO among its mappings: no vDSO range is set. */
	world_init();
	w.vdso = mkmap(VDSO + 0x1000, VDSO + 0x2000, VDSO, LIB_ROWS, 3);
	poke(S + 0x140, 0);
	poke(S + 0x148, EXE + R_OUTERMOST + 7);
	walk(&wk, VDSO + 0x1104, S + 0x100, S + 0x140);
	assert_int_equal(w.vdso_lookups, 0);
}

/* A VMA without a table (anonymous code, or a file the agent has none for): one lookup,
 * then its frames are walked with the frame pointer without looking again. */
static void test_unpublished_code_without_table_is_looked_up_once(void **state)
{
	struct walk wk;

	(void)state;
	world_init();
	w.vmas[0] = w.maps[3]; /* JIT: no rows */
	w.nr_vmas = 1;
	w.file_grants = 4;
	poke(S + 0x140, S + 0x180); /* JIT frame -> JIT frame -> outermost of the exe */
	poke(S + 0x148, JIT + 0x20);
	poke(S + 0x180, 0);
	poke(S + 0x188, EXE + R_OUTERMOST + 8);
	walk_unpublished(&wk, JIT + 0x10, S + 0x100, S + 0x140);
	CHECK_IPS(&wk, JIT + 0x10, (JIT + 0x20) | IGNIS_USER_IP_FP,
		  (EXE + R_OUTERMOST + 8) | IGNIS_USER_IP_FP);
	assert_int_equal(wk.flags, STACK_F_COMPLETE);
	assert_int_equal(w.file_lookups, 1);
	assert_int_equal(w.stats[STAT_UNWIND_FILE_NONE], 1);
	assert_int_equal(w.stats[STAT_UNWIND_FP_FRAMES], 2);
}

/* A sample inside execve(): the registers are the old image's, whose mappings are gone. The
 * sampled pc is in no VMA: no user stack at all. A return address in none is a broken chain
 * (walked by frame pointer, for the agent to judge), not a reason to drop the stack. */
static void test_unpublished_pc_in_no_mapping_leaves_no_user_stack(void **state)
{
	struct walk wk;

	(void)state;
	world_init();
	w.nr_vmas = 0;
	w.file_grants = 1;
	walk_unpublished(&wk, 0x7f6300001000ULL, S + 0x100, S + 0x140);
	assert_int_equal(wk.st.len, 0);
	assert_int_equal(wk.end, STEP_END);
	check_stats(0, STAT_UNWIND_UNMAPPED, 1);

	world_init();
	w.file_grants = 1;
	poke(S + 0x108, 0x7f6300001000ULL); /* a return address in no mapping */
	poke(S + 0x140, 0);
	poke(S + 0x148, EXE + R_OUTERMOST + 9);
	walk_unpublished(&wk, EXE + R_NOFP_BODY + 4, S + 0x100, S + 0x140);
	CHECK_IPS(&wk, EXE + R_NOFP_BODY + 4, 0x7f6300001000ULL,
		  (EXE + R_OUTERMOST + 9) | IGNIS_USER_IP_FP);
	check_stats(0, STAT_UNWIND_FP_FRAMES, 1);
}

/* Each way a walk stops early: the stack is truncated and exactly one reason counted. */
static void test_failures_truncate_and_count_their_reason(void **state)
{
	struct walk wk;

	(void)state;
	/* The return address cannot be read (CFA past the end of the stack). */
	world_init();
	walk(&wk, EXE + R_NOFP_BODY + 4, S + MEM_SIZE - 8, 0);
	CHECK_IPS(&wk, EXE + R_NOFP_BODY + 4);
	assert_int_equal(wk.flags, STACK_F_TRUNCATED);
	check_stats(0, STAT_UNWIND_READ_FAULT, 1);

	/* The saved rbp cannot be read: CFA - 8 is the stack's first slot, CFA - 16 before it. */
	world_init();
	poke(S, EXE + R_OUTERMOST);
	walk(&wk, EXE + R_PUSHES + 4, S - 16, 0);
	CHECK_IPS(&wk, EXE + R_PUSHES + 4);
	assert_int_equal(wk.flags, STACK_F_TRUNCATED);
	check_stats(0, STAT_UNWIND_READ_FAULT, 1);

	/* The frame pointer points nowhere readable. */
	world_init();
	walk(&wk, JIT + 0x10, S + 0x100, 0x1000);
	CHECK_IPS(&wk, JIT + 0x10);
	assert_int_equal(wk.flags, STACK_F_TRUNCATED);
	check_stats2(0, STAT_UNWIND_READ_FAULT, 1, STAT_UNWIND_FP_FRAMES, 1);

	/* The sigcontext cannot be read. */
	world_init();
	poke(S + MEM_SIZE - 16, EXE + R_SIGNAL + 1);
	walk(&wk, EXE + R_NOFP_BODY, S + MEM_SIZE - 24, 0);
	CHECK_IPS(&wk, EXE + R_NOFP_BODY, EXE + R_SIGNAL + 1);
	assert_int_equal(wk.flags, STACK_F_TRUNCATED);
	check_stats(0, STAT_UNWIND_READ_FAULT, 1);

	/* A rule the unwinder does not follow. */
	world_init();
	walk(&wk, EXE + R_UNSUPP + 4, S + 0x100, 0);
	CHECK_IPS(&wk, EXE + R_UNSUPP + 4);
	assert_int_equal(wk.flags, STACK_F_TRUNCATED);
	check_stats(0, STAT_UNWIND_UNSUPPORTED, 1);

	/* An rbp-based CFA after a frame that clobbered rbp. */
	world_init();
	poke(S + 0x100, EXE + 0x150);
	walk(&wk, EXE + R_RBP_LOST + 4, S + 0x100, S + 0x180);
	CHECK_IPS(&wk, EXE + R_RBP_LOST + 4, EXE + 0x150);
	assert_int_equal(wk.flags, STACK_F_TRUNCATED);
	check_stats(0, STAT_UNWIND_UNSUPPORTED, 1);

	/* No CFI and no frame pointer to follow: the chain is lost. */
	world_init();
	poke(S + 0x100, JIT + 0x20);
	walk(&wk, EXE + R_RBP_LOST + 4, S + 0x100, S + 0x180);
	CHECK_IPS(&wk, EXE + R_RBP_LOST + 4, JIT + 0x20);
	assert_int_equal(wk.flags, STACK_F_TRUNCATED);
	check_stats2(0, STAT_UNWIND_LOST, 1, STAT_UNWIND_FP_FRAMES, 1);

	/* A return address of 0 where the CFI promised a caller. */
	world_init();
	poke(S + 0x108, 0);
	walk(&wk, EXE + R_NOFP_BODY + 4, S + 0x100, 0);
	CHECK_IPS(&wk, EXE + R_NOFP_BODY + 4);
	assert_int_equal(wk.flags, STACK_F_TRUNCATED);
	check_stats(0, STAT_UNWIND_LOST, 1);
}

/* A recursion deeper than IGNIS_MAX_STACK_DEPTH from sp (16-byte frames), walked: the walk
 * keeps IGNIS_MAX_STACK_DEPTH frames. */
static void deep_recursion(struct walk *wk, __u64 sp)
{
	__u32 i;

	world_init();
	for (i = 0; i < IGNIS_MAX_STACK_DEPTH + 8; i++)
		poke(sp + 16 * i + 8, EXE + R_NOFP_BODY + 0x20);
	walk(wk, EXE + R_NOFP_BODY + 0x20, sp, 0);
	assert_int_equal(wk->st.len, IGNIS_MAX_STACK_DEPTH);
}

/* The next walk on the same CPU: the state the last one left (its hints, its copy of the
 * stack), begun as start_unwind() begins it. */
static void walk_again(struct walk *wk, __u64 pc, __u64 sp, __u64 bp)
{
	struct ignis_sample_key key = { .tgid = TGID, .pid = TGID, .exec_id = EXEC_ID };

	wk->uw.pc = pc;
	wk->uw.sp = sp;
	wk->uw.bp = bp;
	wk->runs = 0;
	unwind_begin(&wk->uw, &wk->st, 0, &key);
	walk_run(wk);
}

/* The tables walk of test_tables_walk_to_the_outermost_frame(), in its world; again: on
 * wk as the last walk left it, else from a cleared state. */
static void outermost_walk(struct walk *wk, bool again)
{
	world_init();
	poke(S + 0x100, LIB + 0x1234);
	poke(S + 0x108, EXE + 0x150);
	poke(S + 0x180, S + 0x1c0);
	poke(S + 0x188, EXE + R_NOFP_BODY);
	poke(S + 0x198, EXE + R_NO_CFI + 0x10);
	poke(S + 0x1c0, 0);
	poke(S + 0x1c8, EXE + R_OUTERMOST + 0xa);
	if (again)
		walk_again(wk, LIB + 0x100, S + 0x100, S + 0x180);
	else
		walk_from(wk, 0, LIB + 0x100, S + 0x100, S + 0x180);
	CHECK_IPS(wk, LIB + 0x100, EXE + 0x150, EXE + R_NOFP_BODY, EXE + R_OUTERMOST + 0xa);
	assert_int_equal(wk->flags, STACK_F_COMPLETE);
	assert_int_equal(wk->uw.sp, S + 0x1d0);
	check_stats(0, STAT_NR, 0);
}

/*
 * The hints a walk leaves spare the next walk's searches (unwind_begin() keeps them), and a
 * hint is only a guess: whatever index it holds (another table's row, a row past the
 * table, another process's mapping, one freed and reused since), the walk is the same.
 */
static void test_hints_spare_searches_and_never_change_a_walk(void **state)
{
	int rows_searched, maps_searched;
	struct walk wk;
	__u32 junk, i;

	(void)state;
	outermost_walk(&wk, false);
	rows_searched = w.row_lookups;
	maps_searched = w.map_lookups;
	outermost_walk(&wk, true);
	/* Each row or mapping found again costs its check, not a search. */
	if (w.row_lookups >= rows_searched || w.map_lookups >= maps_searched)
		fail_msg("%d row and %d mapping lookups with the hints, %d and %d without",
			 w.row_lookups, w.map_lookups, rows_searched, maps_searched);

	for (junk = 0; junk < 20; junk++) {
		for (i = 0; i < UNWIND_ROW_HINTS; i++)
			wk.uw.row_hints[i] = junk;
		for (i = 0; i < UNWIND_MAP_HINTS; i++)
			wk.uw.map_hints[i] = junk;
		outermost_walk(&wk, true);
	}
	for (i = 0; i < UNWIND_ROW_HINTS; i++)
		wk.uw.row_hints[i] = 0xffffffffU - i;
	outermost_walk(&wk, true);
}

/*
 * The walk copies the stack a chunk at a time, each chunk once: IGNIS_MAX_STACK_DEPTH
 * frames of 16 bytes (4 KiB from sp) take one read per chunk, not one per frame. A chunk
 * that cannot be read (past the end of the stack) leaves its words to read_user(), which
 * fails as before. The next walk copies the stack again, and a word beyond the copy is
 * read alone.
 */
static void test_stack_copy_reads_each_chunk_once(void **state)
{
	__u64 sp = S + 0x100;
	struct walk wk;

	(void)state;
	deep_recursion(&wk, sp);
	/* [S + 0x100, S + 0x100 + 16 * IGNIS_MAX_STACK_DEPTH) lies in chunks 0 to 8 from S. */
	assert_int_equal(w.reads, (0x100 + 16 * IGNIS_MAX_STACK_DEPTH) / UNWIND_CHUNK_SIZE + 1);
	assert_int_equal(wk.uw.stack_copied, (1U << w.reads) - 1);

	/* The next sample, same sp, another caller: read from the stack, not the old copy. */
	poke(sp + 8, EXE + R_OUTERMOST + 1);
	w.reads = 0;
	walk_again(&wk, EXE + R_NOFP_BODY + 0x20, sp, 0);
	CHECK_IPS(&wk, EXE + R_NOFP_BODY + 0x20, EXE + R_OUTERMOST + 1);
	assert_int_equal(wk.flags, STACK_F_COMPLETE);
	assert_int_equal(w.reads, 1);

	/* The last chunk of the stack: its next one is past the end, and so is the return
	 * address read there. */
	world_init();
	poke(S + MEM_SIZE - 8, EXE + R_NOFP_BODY + 4);
	walk(&wk, EXE + R_NOFP_BODY + 4, S + MEM_SIZE - 16, 0);
	CHECK_IPS(&wk, EXE + R_NOFP_BODY + 4, EXE + R_NOFP_BODY + 4);
	assert_int_equal(wk.flags, STACK_F_TRUNCATED);
	check_stats(0, STAT_UNWIND_READ_FAULT, 1);
	assert_int_equal(wk.uw.stack_copied, 1);
	assert_int_equal(wk.uw.stack_unreadable, 2);

	/* A frame pointer 12 KiB above sp, past the copy's 8 KiB: its words are read alone. */
	world_init();
	poke(S + 0x140, S + 0x3100); /* JIT frame: saved rbp, return address */
	poke(S + 0x148, EXE + 0x150);
	poke(S + 0x3100, 0); /* the fp body: CFA = rbp + 16 */
	poke(S + 0x3108, EXE + R_OUTERMOST + 5);
	walk(&wk, JIT + 0x10, S + 0x100, S + 0x140);
	CHECK_IPS(&wk, JIT + 0x10, (EXE + 0x150) | IGNIS_USER_IP_FP, EXE + R_OUTERMOST + 5);
	assert_int_equal(wk.flags, STACK_F_COMPLETE);
	assert_int_equal(wk.uw.stack_copied, 1);
	assert_int_equal(w.reads, 3); /* the chunk at sp, then two words */

	/* A frame pointer 2^41 bytes past the copy's words: no word of the copy is taken for
	 * it (its chunk's number would wrap in 32 bits), the read fails. */
	world_init();
	poke(S + 0x148, EXE + 0x150);
	walk(&wk, JIT + 0x10, S + 0x100, S + 0x140 + (1ULL << 41));
	CHECK_IPS(&wk, JIT + 0x10);
	assert_int_equal(wk.flags, STACK_F_TRUNCATED);
	check_stats2(0, STAT_UNWIND_READ_FAULT, 1, STAT_UNWIND_FP_FRAMES, 1);
}

/* A mapping rewritten under the walk (another version, another process, another image). */
static void test_changed_tables_are_noticed(void **state)
{
	struct walk wk;
	int i;

	(void)state;
	for (i = 0; i < 3; i++) {
		world_init();
		if (i == 0)
			w.maps[2].version = VERSION + 1;
		else if (i == 1)
			w.maps[2].tgid = TGID + 1;
		else
			w.maps[2].exec_id = EXEC_ID + 1;
		poke(S + 0x108, EXE + R_OUTERMOST);
		walk(&wk, LIB + 0x100, S + 0x100, 0);
		CHECK_IPS(&wk, LIB + 0x100);
		assert_int_equal(wk.flags, STACK_F_TRUNCATED);
		check_stats(0, STAT_UNWIND_STALE, 1);
	}
}

/* A deep recursion: IGNIS_MAX_STACK_DEPTH frames over 16 program runs, then cut, counted. */
static void test_depth_limit_cuts_the_stack(void **state)
{
	__u64 sp = S + 0x100;
	struct walk wk;
	__u32 i;

	(void)state;
	deep_recursion(&wk, sp);
	assert_int_equal(wk.uw.sp, sp + 16 * IGNIS_MAX_STACK_DEPTH);
	for (i = 0; i < IGNIS_MAX_STACK_DEPTH; i++)
		assert_int_equal(wk.st.ips[i], EXE + R_NOFP_BODY + 0x20);
	assert_int_equal(wk.runs, IGNIS_MAX_STACK_DEPTH / UNWIND_FRAMES_PER_RUN + 1);
	assert_int_equal(wk.flags, STACK_F_TRUNCATED);
	check_stats(0, STAT_UNWIND_DEPTH, 1);

	/* One run: the leaf and UNWIND_FRAMES_PER_RUN - 1 callers, then a tail call. */
	world_init();
	for (i = 0; i < IGNIS_MAX_STACK_DEPTH + 8; i++)
		poke(sp + 16 * i + 8, EXE + R_NOFP_BODY + 0x20);
	walk_begin(&wk, 0, EXE + R_NOFP_BODY + 0x20, sp, 0);
	assert_int_equal(unwind_frames(&wk.uw, &wk.st, true), STEP_CONTINUE);
	assert_int_equal(wk.st.len, UNWIND_FRAMES_PER_RUN);
}

/* ---- Python frames in the place of eval-loop frames (bpf/python.bpf.h) --------------------- */

#define CODE_TYPE   0x7f5500001000ULL
#define PY_CODE(i)  (S + 0x1100 + 0x100 * (i)) /* code objects: 256 bytes read */
#define PY_FRAME(i) (S + 0x1400 + 0x80 * (i))  /* frames: 128 bytes read */
#define PY_NAME(i)  (S + 0x1600 + 0x80 * (i))  /* their names */
#define PY_TSTATE   (S + 0x1780)

/* A layout of its own (3.11's kinds): frame { previous, code, instr, is_entry }, code
 * { ..., ob_type at 8, name 16, firstlineno 24, bytecode at 64 }, str { length 16, state 32,
 * characters 40 }; the thread state's frame at 8; the TSS slot at fs base + 0x10 + 16 key. */
static void python_on(struct uw_python *py, __u8 entry_kind)
{
	memset(py, 0, sizeof(*py));
	py->on = 1;
	py->eval_start[0] = EXE + 0x100; /* the frame-pointer function: EXE + 0x150 */
	py->eval_end[0] = EXE + 0x180;
	py->tss_data_off = 0x10;
	py->tss_key = 1;
	py->l = (struct ignis_py_layout){ .tstate_frame = 8,
					  .cframe_frame = IGNIS_PY_NONE,
					  .frame_previous = 0,
					  .frame_code = 8,
					  .frame_lasti = 16,
					  .frame_entry = 24,
					  .code_name = 16,
					  .code_firstlineno = 24,
					  .code_code = 64,
					  .unicode_length = 16,
					  .unicode_data = 40,
					  .unicode_state = 32,
					  .lasti_kind = PY_LASTI_PTR,
					  .entry_kind = entry_kind,
					  .code_type = CODE_TYPE };
}

/* Python frame i runs code i (named name, first line 10 i) at instruction 3 i + 1. */
static void py_frame(int i, const char *name, __u64 previous, bool entry)
{
	size_t len = strlen(name);

	poke(PY_FRAME(i), previous);
	poke(PY_FRAME(i) + 8, PY_CODE(i));
	poke(PY_FRAME(i) + 16, PY_CODE(i) + 64 + 2 * (3 * i + 1));
	poke(PY_FRAME(i) + 24, entry);
	poke(PY_CODE(i) + 8, CODE_TYPE);
	poke(PY_CODE(i) + 16, PY_NAME(i));
	poke(PY_CODE(i) + 24, 10 * i);
	poke(PY_NAME(i) + 16, len);
	poke(PY_NAME(i) + 32, 3 << 5); /* compact, ascii */
	memcpy(w.mem + (PY_NAME(i) + 40 - MEM_BASE), name, len);
}

static __u64 py_word(int i, __u64 serial)
{
	return IGNIS_USER_IP_PY | (__u64)(3 * i + 1) << IGNIS_PY_LASTI_SHIFT | serial;
}

/* The stack of the first test: a library leaf called by EXE + 0x150, here the eval loop. */
static void python_stack(void)
{
	world_init();
	nr_py_codes = 0;
	poke(S + 0x108, EXE + 0x150);
	poke(S + 0x180, S + 0x1c0);
	poke(S + 0x188, EXE + R_NOFP_BODY);
	poke(S + 0x198, EXE + R_NO_CFI + 0x10);
	poke(S + 0x1c0, 0);
	poke(S + 0x1c8, EXE + R_OUTERMOST + 0xa);
	poke(FSBASE + 0x10 + 16, PY_TSTATE);
	poke(PY_TSTATE + 8, PY_FRAME(0));
}

/*
 * C called from Python called from C: the eval-loop frame's place takes the Python frames it
 * runs, leaf first, between the C code they called and the C code that called them: one
 * (3.8-3.10), up to the entry frame (3.11), up to the eval call's marker (3.12+). Each
 * carries its code's serial and instruction; the identities hash the names as the agent will.
 */
static void test_python_frames_replace_the_eval_frame(void **state)
{
	struct walk wk;

	(void)state;
	python_stack();
	py_frame(0, "inner", PY_FRAME(1), false);
	py_frame(1, "Outer.method", PY_FRAME(2), true);
	py_frame(2, "<module>", 0, true);

	/* 3.11: inner and Outer.method (the entry frame) run in this eval call; <module> is
	 * left for an eval frame further out, which this stack does not have. */
	walk_begin(&wk, 0, LIB + 0x100, S + 0x100, S + 0x180);
	python_on(&wk.uw.py, PY_ENTRY_FLAG);
	walk_run(&wk);
	CHECK_IPS(&wk, LIB + 0x100, py_word(0, 1), py_word(1, 2), EXE + R_NOFP_BODY,
		  EXE + R_OUTERMOST + 0xa);
	assert_int_equal(wk.end, STEP_COMPLETE);
	assert_int_equal(wk.uw.py.frame, PY_FRAME(2));
	assert_int_equal(nr_py_codes, 2);
	assert_int_equal(py_codes_met[0].code, PY_CODE(0));
	assert_int_equal(py_codes_met[0].tgid, TGID);
	assert_int_equal(py_codes_met[0].identity,
			 ignis_py_identity((const __u8 *)"inner", 5, 1, 0));
	assert_int_equal(py_codes_met[1].identity,
			 ignis_py_identity((const __u8 *)"Outer.method", 12, 1, 10));
	check_stats(0, STAT_PY_FRAMES, 2);

	/* 3.8-3.10: one Python frame per eval call. */
	python_stack();
	py_frame(0, "inner", PY_FRAME(1), false);
	py_frame(1, "Outer.method", PY_FRAME(2), false);
	walk_begin(&wk, 0, LIB + 0x100, S + 0x100, S + 0x180);
	python_on(&wk.uw.py, PY_ENTRY_EVAL);
	walk_run(&wk);
	CHECK_IPS(&wk, LIB + 0x100, py_word(0, 1), EXE + R_NOFP_BODY, EXE + R_OUTERMOST + 0xa);
	assert_int_equal(wk.uw.py.frame, PY_FRAME(1));

	/* 3.12+: up to the marker frame (owner 3 at frame_entry), which is no Python frame. */
	python_stack();
	py_frame(0, "inner", PY_FRAME(1), false);
	py_frame(1, "Outer.method", PY_FRAME(2), false);
	poke(PY_FRAME(2), 0);
	poke(PY_FRAME(2) + 24, 3);
	walk_begin(&wk, 0, LIB + 0x100, S + 0x100, S + 0x180);
	python_on(&wk.uw.py, PY_ENTRY_OWNER);
	wk.uw.py.l.owner_cstack = 3;
	walk_run(&wk);
	CHECK_IPS(&wk, LIB + 0x100, py_word(0, 1), py_word(1, 2), EXE + R_NOFP_BODY,
		  EXE + R_OUTERMOST + 0xa);
	assert_int_equal(wk.uw.py.frame, 0);

	/* The sampled pc itself in the eval loop: the Python frames are the leaf. */
	python_stack();
	py_frame(0, "inner", 0, true);
	poke(S + 0x180, 0);
	poke(S + 0x188, EXE + R_OUTERMOST + 0xa);
	walk_begin(&wk, 0, EXE + 0x150, S + 0x170, S + 0x180);
	python_on(&wk.uw.py, PY_ENTRY_FLAG);
	walk_run(&wk);
	CHECK_IPS(&wk, py_word(0, 1), EXE + R_OUTERMOST + 0xa);
}

/*
 * A native walk cut short past an eval frame (a rule it cannot follow): the Python frames
 * not put in yet follow the native ones, in order, and the stack ends truncated. Cut before
 * any eval frame, the whole chain follows.
 */
static void test_python_chain_survives_a_cut_native_walk(void **state)
{
	struct walk wk;

	(void)state;
	python_stack();
	py_frame(0, "inner", PY_FRAME(1), false);
	py_frame(1, "Outer.method", PY_FRAME(2), true);
	py_frame(2, "<module>", 0, true);
	poke(S + 0x1c8, EXE + R_UNSUPP + 0x10); /* the outermost frame's place */
	walk_begin(&wk, 0, LIB + 0x100, S + 0x100, S + 0x180);
	python_on(&wk.uw.py, PY_ENTRY_FLAG);
	walk_run(&wk);
	CHECK_IPS(&wk, LIB + 0x100, py_word(0, 1), py_word(1, 2), EXE + R_NOFP_BODY,
		  EXE + R_UNSUPP + 0x10, py_word(2, 3));
	assert_int_equal(wk.flags, STACK_F_TRUNCATED);
	check_stats2(0, STAT_UNWIND_UNSUPPORTED, 1, STAT_PY_FRAMES, 3);

	/* Cut at the leaf's caller, before the eval frame: every Python frame follows. */
	python_stack();
	py_frame(0, "inner", PY_FRAME(1), false);
	py_frame(1, "Outer.method", PY_FRAME(2), true);
	py_frame(2, "<module>", 0, true);
	poke(S + 0x108, EXE + R_UNSUPP + 0x10);
	walk_begin(&wk, 0, LIB + 0x100, S + 0x100, S + 0x180);
	python_on(&wk.uw.py, PY_ENTRY_FLAG);
	walk_run(&wk);
	CHECK_IPS(&wk, LIB + 0x100, EXE + R_UNSUPP + 0x10, py_word(0, 1), py_word(1, 2),
		  py_word(2, 3));
	assert_int_equal(wk.flags, STACK_F_TRUNCATED);
}

/* Memory that is no code object: the eval frame stays as it is, counted, native from there. */
static void test_python_walk_stops_at_a_bad_code_object(void **state)
{
	struct walk wk;

	(void)state;
	python_stack();
	py_frame(0, "inner", PY_FRAME(1), true);
	poke(PY_CODE(0) + 8, CODE_TYPE + 16);
	walk_begin(&wk, 0, LIB + 0x100, S + 0x100, S + 0x180);
	python_on(&wk.uw.py, PY_ENTRY_FLAG);
	walk_run(&wk);
	CHECK_IPS(&wk, LIB + 0x100, EXE + 0x150, EXE + R_NOFP_BODY, EXE + R_OUTERMOST + 0xa);
	assert_int_equal(wk.uw.py.on, 0);
	check_stats(0, STAT_PY_BAD_CODE, 1);

	/* A thread whose TSS slot is empty: no Python frames, the eval frame stays. */
	python_stack();
	poke(FSBASE + 0x10 + 16, 0);
	walk_begin(&wk, 0, LIB + 0x100, S + 0x100, S + 0x180);
	python_on(&wk.uw.py, PY_ENTRY_FLAG);
	walk_run(&wk);
	CHECK_IPS(&wk, LIB + 0x100, EXE + 0x150, EXE + R_NOFP_BODY, EXE + R_OUTERMOST + 0xa);
	check_stats(0, STAT_PY_NO_THREAD_STATE, 1);

	/* A frame chain into unmapped memory: a read fault, counted, native frames go on. */
	python_stack();
	poke(PY_TSTATE + 8, MEM_BASE + 2 * MEM_SIZE);
	walk_begin(&wk, 0, LIB + 0x100, S + 0x100, S + 0x180);
	python_on(&wk.uw.py, PY_ENTRY_FLAG);
	walk_run(&wk);
	CHECK_IPS(&wk, LIB + 0x100, EXE + 0x150, EXE + R_NOFP_BODY, EXE + R_OUTERMOST + 0xa);
	check_stats(0, STAT_PY_READ_FAULT, 1);
}

/* The binary searches at their edges. */
static void test_searches_find_the_covering_entry(void **state)
{
	(void)state;
	world_init();
	assert_int_equal(unwind_find_mapping(MAP_START, NR_MAPS, EXE), 1);
	assert_int_equal(unwind_find_mapping(MAP_START, NR_MAPS, EXE + 0xfff), 1);
	assert_int_equal(unwind_find_mapping(MAP_START, NR_MAPS, EXE + 0x1000), -1);
	assert_int_equal(unwind_find_mapping(MAP_START, NR_MAPS, EXE - 1), -1);
	assert_int_equal(unwind_find_mapping(MAP_START, NR_MAPS, LIB + 0x800), 2);
	assert_int_equal(unwind_find_mapping(MAP_START, NR_MAPS, JIT), 3);
	assert_int_equal(unwind_find_mapping(MAP_START, NR_MAPS, JIT + 0x1000), -1);
	assert_int_equal(unwind_find_mapping(MAP_START, 0, EXE), -1);
	assert_int_equal(unwind_find_mapping(MAP_START, IGNIS_MAX_UNWIND_MAPS + 1, EXE), -1);
	/* An extent running past the map's end: a failed lookup ends the search. */
	assert_int_equal(unwind_find_mapping(MAP_START, 8, EXE), -1);

	assert_int_equal(unwind_find_row(EXE_ROWS, 12, 0), EXE_ROWS);
	assert_int_equal(unwind_find_row(EXE_ROWS, 12, R_FP_BODY - 1), EXE_ROWS);
	assert_int_equal(unwind_find_row(EXE_ROWS, 12, R_FP_BODY), EXE_ROWS + 1);
	assert_int_equal(unwind_find_row(EXE_ROWS, 12, R_SIGNAL + 0x1f), EXE_ROWS + 8);
	assert_int_equal(unwind_find_row(EXE_ROWS, 12, 0xffffffff), EXE_ROWS + 11);
	assert_int_equal(unwind_find_row(LIB_ROWS, 3, 0xfff), -1);
	assert_int_equal(unwind_find_row(LIB_ROWS, 3, 0x1000), LIB_ROWS);
	assert_int_equal(unwind_find_row(LIB_ROWS, 0, 0x1000), -1);

	/* The largest extents are searched to their ends within the bounded loops; one more
	 * entry is refused. */
	w.synthetic = true;
	assert_int_equal(unwind_find_mapping(0, IGNIS_MAX_UNWIND_MAPS, 0x800), 0);
	assert_int_equal(unwind_find_mapping(0, IGNIS_MAX_UNWIND_MAPS, 5 << 12), 5);
	assert_int_equal(unwind_find_mapping(0, IGNIS_MAX_UNWIND_MAPS,
					     ((__u64)IGNIS_MAX_UNWIND_MAPS << 12) - 1),
			 IGNIS_MAX_UNWIND_MAPS - 1);
	assert_int_equal(unwind_find_mapping(0, IGNIS_MAX_UNWIND_MAPS + 1, 5 << 12), -1);
	assert_int_equal(unwind_find_row(0, IGNIS_MAX_UNWIND_ROWS, 0), 0);
	assert_int_equal(unwind_find_row(0, IGNIS_MAX_UNWIND_ROWS, 12345), 12345);
	assert_int_equal(unwind_find_row(0, IGNIS_MAX_UNWIND_ROWS, 0xffffffff),
			 IGNIS_MAX_UNWIND_ROWS - 1);
	assert_int_equal(unwind_find_row(0, IGNIS_MAX_UNWIND_ROWS + 1, 12345), -1);
}

UNIT_MAIN("unwind_step", cmocka_unit_test(test_tables_walk_to_the_outermost_frame),
	  cmocka_unit_test(test_plt_cfa_follows_the_pc_threshold),
	  cmocka_unit_test(test_rbp_restored_from_an_rsp_frame),
	  cmocka_unit_test(test_signal_frame_continues_at_the_interrupted_pc),
	  cmocka_unit_test(test_frame_pointer_through_code_without_a_table),
	  cmocka_unit_test(test_frame_pointer_chain_end_is_judged_later),
	  cmocka_unit_test(test_gap_without_cfi_uses_the_frame_pointer_unmarked),
	  cmocka_unit_test(test_executable_only_walk_in_generation_one),
	  cmocka_unit_test(test_unpublished_library_unwound_by_its_file),
	  cmocka_unit_test(test_unpublished_vdso_costs_no_lookup),
	  cmocka_unit_test(test_unpublished_code_without_table_is_looked_up_once),
	  cmocka_unit_test(test_unpublished_pc_in_no_mapping_leaves_no_user_stack),
	  cmocka_unit_test(test_failures_truncate_and_count_their_reason),
	  cmocka_unit_test(test_changed_tables_are_noticed),
	  cmocka_unit_test(test_hints_spare_searches_and_never_change_a_walk),
	  cmocka_unit_test(test_stack_copy_reads_each_chunk_once),
	  cmocka_unit_test(test_depth_limit_cuts_the_stack),
	  cmocka_unit_test(test_python_frames_replace_the_eval_frame),
	  cmocka_unit_test(test_python_walk_stops_at_a_bad_code_object),
	  cmocka_unit_test(test_python_chain_survives_a_cut_native_walk),
	  cmocka_unit_test(test_searches_find_the_covering_entry))
