// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: an ELF image in memory whose call frame information (.eh_frame, or
 * .debug_frame alone) is evaluated into an unwind table (symbolizer/unwind.c). Besides the
 * sanitizers, the table's contract (symbolizer.h, "Unwind tables") is checked; a violation
 * traps:
 *   - a failure returns one of the documented errors and leaves no rows;
 *   - rows are sorted by strictly increasing pc, within the caps, with rules in range, the
 *     first row is a rule (not "no CFI"), and neighbours differ (they were merged);
 *   - an rbp saved at CFA + off has off within 16 bits; a PLT threshold is a 4-bit literal;
 *   - sym_unwind_table__find() returns the row a pc falls in: each row for its own pc, and
 *     for pcs taken from the input, the last row at or below it (NULL below the first);
 *   - sym_unwind_table__fini() leaves an empty table (and frees: ASan's leak check).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "../../symbolizer/symbolizer.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* symbolizer/unwind.c's caps: FDEs read, rows in a table, rows from one FDE. */
#define MAX_FDES     (4U << 20)
#define MAX_ROWS     (16U << 20)
#define MAX_FDE_ROWS 65536

#define check(cond)                       \
	do {                              \
		if (!(cond))              \
			__builtin_trap(); \
	} while (0)

static bool same_rule(const struct sym_unwind_row *a, const struct sym_unwind_row *b)
{
	return a->cfa_rule == b->cfa_rule && a->cfa_off == b->cfa_off &&
	       a->rbp_rule == b->rbp_rule && a->rbp_off == b->rbp_off &&
	       a->plt_threshold == b->plt_threshold;
}

static void check_rows(const struct sym_unwind_table *t)
{
	size_t i;

	check(t->nr_rows <= MAX_ROWS);
	/* Each FDE yields at most its rows, a "no CFI" row where reading stopped, one at its end. */
	check(t->nr_rows <= (size_t)t->fdes * (MAX_FDE_ROWS + 2));
	check(t->fdes <= MAX_FDES && t->fde_errors <= t->fdes);
	check(!t->nr_rows || t->rows);
	for (i = 0; i < t->nr_rows; i++) {
		const struct sym_unwind_row *r = &t->rows[i];

		check(r->cfa_rule <= SYM_CFA_SIGNAL);
		check(r->rbp_rule <= SYM_RBP_UNDEFINED);
		if (r->rbp_rule == SYM_RBP_AT_CFA)
			check(r->rbp_off >= INT16_MIN && r->rbp_off <= INT16_MAX);
		if (r->cfa_rule == SYM_CFA_PLT)
			check(r->plt_threshold <= 15);
		if (i) {
			check(r->pc > t->rows[i - 1].pc);
			check(!same_rule(r, &t->rows[i - 1]));
		} else {
			check(r->cfa_rule != SYM_CFA_NONE);
		}
		check(sym_unwind_table__find(t, r->pc) == r);
	}
}

/* Whether r is the row covering pc: the last at or below it, NULL when pc is below them all. */
static bool covers(const struct sym_unwind_table *t, const struct sym_unwind_row *r, uint64_t pc)
{
	if (!t->nr_rows || pc < t->rows[0].pc)
		return !r;
	if (!r || r < t->rows || r >= t->rows + t->nr_rows || r->pc > pc)
		return false;
	return r == &t->rows[t->nr_rows - 1] || r[1].pc > pc;
}

/* Lookups at pcs taken from the input, near the rows (within a page) and anywhere. */
static void check_find(const struct sym_unwind_table *t, const unsigned char *data, size_t size)
{
	uint64_t v, pc;
	size_t i;

	for (i = 0; i + 8 <= size && i < 512; i += 8) {
		memcpy(&v, data + i, 8);
		pc = t->nr_rows ? t->rows[v % t->nr_rows].pc + (int64_t)(int16_t)(v >> 32) : v;
		check(covers(t, sym_unwind_table__find(t, pc), pc));
		check(covers(t, sym_unwind_table__find(t, v), v));
	}
	if (t->nr_rows && t->rows[0].pc)
		check(!sym_unwind_table__find(t, t->rows[0].pc - 1));
	if (t->nr_rows)
		check(sym_unwind_table__find(t, UINT64_MAX) == &t->rows[t->nr_rows - 1]);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct sym_unwind_table t;
	int err;

	err = sym_unwind_table__build(-1, data, size, &t);
	if (err) {
		check(err == -ENODATA || err == -ENOTSUP || err == -EINVAL || err == -E2BIG ||
		      err == -ENOMEM);
		check(!t.rows && !t.nr_rows);
		return 0;
	}
	check_rows(&t);
	check_find(&t, data, size);
	sym_unwind_table__fini(&t);
	check(!t.rows && !t.nr_rows);
	return 0;
}
