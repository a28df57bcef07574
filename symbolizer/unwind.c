// SPDX-License-Identifier: Apache-2.0
/*
 * Unwind tables from call frame information, x86_64; for Go binaries, which have none, from
 * the pcsp tables of their pclntab (gopclntab.c).
 *
 * The CFI of an object (.eh_frame, Linux Standard Base Core §10.6 "Exception Frames"; or
 * .debug_frame, DWARF 5 §6.4) describes, for every instruction, how to find the caller's
 * frame: the Canonical Frame Address (CFA) as a register plus an offset, and where the
 * caller's registers were saved. A BPF program cannot run the CFI's instructions, so this
 * file runs them once per object and keeps the result as a sorted table of rows, each valid
 * from its pc to the next row's:
 *
 *   CFA     = rsp + off | rbp + off | the PLT expression | a signal frame | outermost frame
 *             | no CFI | other
 *   rbp     = unchanged | saved at CFA + off | unknown
 *   the return address is at CFA - 8 (checked: a row that says otherwise is "other")
 *
 * The FDEs are enumerated with dwarf_next_cfi(); each FDE's rows come from libdw's CFI
 * interpreter (dwarf_cfi_addrframe() at the FDE's start, then at the end of each row the
 * interpreter reports), which also applies the ABI's initial rules. A pc covered by no FDE
 * gets a "no CFI" row, so the unwinder can tell code without CFI (hand-written assembly,
 * JIT code) from code it knows. Consecutive rows with the same rules are merged.
 *
 * libdw trusts the register numbers the CFI names: for each one it grows the frame state to
 * that many registers (up to 2^27 of 16 bytes, zeroed) on every lookup, so one hostile FDE
 * costs gigabytes and seconds per row (found by tests/fuzz/fuzz_unwind.c). Every CIE's and
 * FDE's instructions are therefore decoded here first (check_program()), and the walk stops
 * at the first entry that names a register beyond the psABI's or that cannot be decoded.
 * For that check to cover everything libdw reads, libdw is given a copy of the section in
 * an ELF image of its own (cfi_image_new()): no .eh_frame_hdr table that could send it to
 * other offsets, no second section of the same name; it then reads the entries in the same
 * order as walk_fdes().
 *
 * libdw also runs an FDE's program from its start for every row, so an FDE costs its rows
 * times its length: the FDEs are evaluated once all are known (eval_fdes()), within a budget
 * of work for the object, and without those that overlap another (libdw would answer for
 * both from the first, at the first one's cost).
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolizer_internal.h"

/* DWARF register numbers of the x86_64 psABI (§3.6.2, "DWARF Register Number Mapping"). */
#define X86_64_RBP 6
#define X86_64_RSP 7
#define X86_64_RA  16

/* Caps on hostile input: FDEs and rows beyond these are not read (the rest of the object
 * then has no rows, as if it had no CFI there). */
#define MAX_FDES     (4U << 20)
#define MAX_ROWS     (16U << 20)
#define MAX_CIES     65536
#define MAX_FDE_ROWS 65536 /* rows of one FDE */
/*
 * The work libdw may do for one object, in instruction bytes run (each lookup runs the FDE's
 * program from its start; a remembered state counts its registers, plus 64): at most about
 * 2 s (twice this took 4 s for an input the fuzzer made, one 60 KB FDE). The largest object
 * measured, gcc's lto-dump (2 MB of .eh_frame, one function of 6677 rows), needs 2.2e8.
 */
#define MAX_WORK (1ULL << 30)

struct cie_enc {
	Dwarf_Off offset;
	uint8_t enc; /* DW_EH_PE_* of the FDEs' initial_location and address_range */
	bool sized;  /* 'z': the FDEs have augmentation data (a ULEB128 length, then bytes) */
	bool ok;     /* the augmentation was understood and the instructions checked */
	uint16_t max_regno; /* the highest register its initial instructions name */
};

/* An FDE to evaluate, as walk_fdes() found it. */
struct fde_todo {
	uint64_t lo, hi;
	uint64_t lookups; /* the rows its program can describe: its location moves, plus one */
	uint64_t cost;	  /* of one lookup (see MAX_WORK) */
	bool overlaps;	  /* another FDE covers part of [lo, hi) */
};

struct builder {
	struct sym_unwind_table *t;
	Dwarf_CFI *cfi;
	const Elf_Data *data; /* the section's bytes */
	uint64_t sh_addr;     /* the section's address, base of pc-relative pointers */
	bool eh_frame;
	struct cie_enc *cies;
	size_t nr_cies, cap_cies;
	struct fde_todo *todo;
	size_t nr_todo, cap_todo;
	uint64_t work; /* spent so far, against MAX_WORK */
	size_t cap_rows;
};

/* The FDE pointer encoding a CIE's augmentation sets ('R'); absptr when it sets none. */
static int remember_cie(struct builder *b, Dwarf_Off offset, const Dwarf_CIE *cie)
{
	struct cie_enc ce = { .offset = offset, .enc = DW_EH_PE_absptr, .ok = true };
	const char *aug = cie->augmentation;
	int err;

	if (b->eh_frame && aug && aug[0] == 'z') {
		ce.sized = true;
		const uint8_t *p = cie->augmentation_data;
		const uint8_t *end = p ? p + cie->augmentation_data_size : NULL;

		for (aug++; *aug && ce.ok; aug++) {
			uint64_t ignored;

			switch (*aug) {
			case 'L': /* LSDA encoding */
				ce.ok = p && p < end;
				if (ce.ok)
					p++;
				break;
			case 'P': /* personality encoding + pointer */
				ce.ok = p && p < end;
				if (ce.ok) {
					uint8_t enc = *p++;

					ce.ok = !sym_cfi_read_encoded(
						&p, end, enc & ~DW_EH_PE_indirect, NULL, &ignored);
				}
				break;
			case 'R':
				ce.ok = p && p < end;
				if (ce.ok)
					ce.enc = *p++;
				break;
			case 'S': /* signal frame */
			case 'B': /* AArch64 BTI */
				break;
			default:
				ce.ok = false;
			}
		}
	} else if (aug && aug[0]) {
		/* The pre-'z' "eh" augmentation: not produced for x86_64; none in .debug_frame. */
		ce.ok = false;
	}
	if (ce.ok) {
		struct sym_cfi_program pr;

		ce.ok = !sym_cfi_check_program(ce.enc, cie->initial_instructions,
					       cie->initial_instructions_end, &pr);
		ce.max_regno = (uint16_t)pr.max_regno;
	}
	if (b->nr_cies >= MAX_CIES)
		return -E2BIG;
	err = sym_grow((void **)&b->cies, &b->cap_cies, b->nr_cies + 1, sizeof(*b->cies));
	if (err)
		return err;
	b->cies[b->nr_cies++] = ce;
	return 0;
}

static const struct cie_enc *find_cie(const struct builder *b, Dwarf_Off offset)
{
	size_t lo = 0, hi = b->nr_cies;

	/* CIEs are remembered in section order, so by offset. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->cies[mid].offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < b->nr_cies && b->cies[lo].offset == offset ? &b->cies[lo] : NULL;
}

static int push_row(struct builder *b, const struct sym_unwind_row *row)
{
	struct sym_unwind_table *t = b->t;
	int err;

	if (t->nr_rows >= MAX_ROWS)
		return -E2BIG;
	err = sym_grow((void **)&t->rows, &b->cap_rows, t->nr_rows + 1, sizeof(*t->rows));
	if (err)
		return err;
	t->rows[t->nr_rows++] = *row;
	return 0;
}

static bool op_is(const Dwarf_Op *op, uint8_t atom, Dwarf_Word number)
{
	return op->atom == atom && op->number == number;
}

/*
 * The CFA expression of the lazy-binding PLT (binutils' elf_x86_64_eh_frame_plt):
 *   DW_OP_breg7 (rsp) N; DW_OP_breg16 (rip) 0; DW_OP_lit15; DW_OP_and; DW_OP_litK; DW_OP_ge;
 *   DW_OP_lit3; DW_OP_shl; DW_OP_plus
 * i.e. CFA = rsp + N + ((rip & 15) >= K ? 8 : 0): the stub pushes one word at offset K.
 */
static bool is_plt_expression(const Dwarf_Op *ops, size_t nops, int32_t *off, uint8_t *threshold)
{
	if (nops != 9 || ops[0].atom != DW_OP_breg7 || !op_is(&ops[1], DW_OP_breg16, 0) ||
	    ops[2].atom != DW_OP_lit15 || ops[3].atom != DW_OP_and || ops[4].atom < DW_OP_lit0 ||
	    ops[4].atom > DW_OP_lit15 || ops[5].atom != DW_OP_ge || ops[6].atom != DW_OP_lit3 ||
	    ops[7].atom != DW_OP_shl || ops[8].atom != DW_OP_plus)
		return false;
	if ((int64_t)ops[0].number < INT32_MIN || (int64_t)ops[0].number > INT32_MAX)
		return false;
	*off = (int32_t)(int64_t)ops[0].number;
	*threshold = (uint8_t)(ops[4].atom - DW_OP_lit0);
	return true;
}

/* The CFA rule of a frame state, as a row. */
static void classify_cfa(Dwarf_Frame *f, struct sym_unwind_row *row)
{
	Dwarf_Op *ops;
	size_t nops;
	int64_t reg, off;

	row->cfa_rule = SYM_CFA_UNSUPPORTED;
	if (dwarf_frame_cfa(f, &ops, &nops) || !nops)
		return;
	if (is_plt_expression(ops, nops, &row->cfa_off, &row->plt_threshold)) {
		row->cfa_rule = SYM_CFA_PLT;
		return;
	}
	if (nops != 1)
		return;
	if (ops[0].atom == DW_OP_bregx) { /* libdw's form of DW_CFA_def_cfa */
		reg = (int64_t)ops[0].number;
		off = (int64_t)ops[0].number2;
	} else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		reg = ops[0].atom - DW_OP_breg0;
		off = (int64_t)ops[0].number;
	} else {
		return;
	}
	if (off < INT32_MIN || off > INT32_MAX)
		return;
	row->cfa_off = (int32_t)off;
	if (reg == X86_64_RSP)
		row->cfa_rule = SYM_CFA_RSP;
	else if (reg == X86_64_RBP)
		row->cfa_rule = SYM_CFA_RBP;
}

/*
 * Where a register of the caller was saved: 1 with *off when at CFA + off, 0 when unchanged
 * (same value), -1 when undefined or held in a way the unwinder does not follow.
 */
static int saved_at(Dwarf_Frame *f, int regno, int32_t *off)
{
	Dwarf_Op mem[3], *ops = NULL;
	size_t nops = 0;

	if (dwarf_frame_register(f, regno, mem, &ops, &nops))
		return -1;
	if (!nops)
		return ops ? -1 : 0; /* undefined : same value */
	if (ops[0].atom != DW_OP_call_frame_cfa)
		return -1;
	if (nops == 1) {
		*off = 0;
		return 1;
	}
	if (nops == 2 && ops[1].atom == DW_OP_plus_uconst) {
		int64_t v = (int64_t)ops[1].number; /* libdw stores a signed offset here */

		if (v < INT32_MIN || v > INT32_MAX)
			return -1;
		*off = (int32_t)v;
		return 1;
	}
	return -1;
}

/* The row of the frame state f. */
static void classify(Dwarf_Frame *f, struct sym_unwind_row *row)
{
	Dwarf_Op mem[3], *ops = NULL;
	size_t nops = 0;
	int32_t off = 0;
	int r;

	/* An undefined return address marks the outermost frame (_start, a new thread). */
	if (!dwarf_frame_register(f, X86_64_RA, mem, &ops, &nops) && !nops && ops) {
		row->cfa_rule = SYM_CFA_OUTERMOST;
		return;
	}
	classify_cfa(f, row);
	if (row->cfa_rule == SYM_CFA_UNSUPPORTED)
		return;
	if (saved_at(f, X86_64_RA, &off) != 1 || off != -8) {
		row->cfa_rule = SYM_CFA_UNSUPPORTED;
		row->cfa_off = 0;
		return;
	}
	r = saved_at(f, X86_64_RBP, &off);
	if (r == 1 && off >= INT16_MIN && off <= INT16_MAX) {
		row->rbp_rule = SYM_RBP_AT_CFA;
		row->rbp_off = off;
	} else if (r == 0) {
		row->rbp_rule = SYM_RBP_SAME;
	} else {
		row->rbp_rule = SYM_RBP_UNDEFINED;
	}
}

/*
 * Does the rule of register regno say "at rsp + off" (DW_CFA_expression: DW_OP_breg7 off)?
 * libdw gives such a rule with the DW_OP_call_frame_cfa that DWARF pushes before evaluating
 * it (DWARF 5 §6.4.2.3); the expression leaves its own result on top.
 */
static bool saved_at_rsp(Dwarf_Frame *f, int regno, Dwarf_Word off)
{
	Dwarf_Op mem[3], *ops = NULL;
	size_t nops = 0;

	if (dwarf_frame_register(f, regno, mem, &ops, &nops) || !nops)
		return false;
	if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa) {
		ops++;
		nops--;
	}
	return nops == 1 && op_is(&ops[0], DW_OP_breg7, off);
}

/*
 * A signal frame (the 'S' augmentation: glibc's __restore_rt). The interrupted registers are
 * in the ucontext the kernel pushed (struct rt_sigframe, arch/x86/include/asm/sigframe.h),
 * at rsp + 40 + 8 * their index in struct sigcontext: rbp at 120, rsp at 160, rip at 168. The
 * CFI says the same with expressions; a frame whose CFI says anything else is unsupported.
 */
static void classify_signal(Dwarf_Frame *f, struct sym_unwind_row *row)
{
	Dwarf_Op *ops;
	size_t nops;

	row->cfa_rule = SYM_CFA_UNSUPPORTED;
	if (dwarf_frame_cfa(f, &ops, &nops) || nops != 2 || !op_is(&ops[0], DW_OP_breg7, 160) ||
	    ops[1].atom != DW_OP_deref)
		return;
	if (!saved_at_rsp(f, X86_64_RA, 168) || !saved_at_rsp(f, X86_64_RBP, 120))
		return;
	row->cfa_rule = SYM_CFA_SIGNAL;
}

/* The rows of one FDE covering [lo, hi), at most max of them, then a "no CFI" row at hi. */
static int add_fde(struct builder *b, uint64_t lo, uint64_t hi, uint64_t max)
{
	struct sym_unwind_row end = { .pc = hi, .cfa_rule = SYM_CFA_NONE };
	uint64_t addr = lo, n;
	int err;

	for (n = 0; addr < hi && n < max && n < MAX_FDE_ROWS; n++) {
		struct sym_unwind_row row = { .pc = addr };
		Dwarf_Frame *f = NULL;
		Dwarf_Addr start, stop;
		bool signal;

		if (dwarf_cfi_addrframe(b->cfi, addr, &f) || !f) {
			b->t->fde_errors++;
			break;
		}
		if (dwarf_frame_info(f, &start, &stop, &signal) < 0 || stop <= addr) {
			free(f);
			b->t->fde_errors++;
			break;
		}
		if (signal)
			classify_signal(f, &row);
		else
			classify(f, &row);
		free(f);
		err = push_row(b, &row);
		if (err)
			return err;
		addr = stop;
	}
	/* What could not be read keeps no rule: from addr on, as if there were no CFI. */
	if (addr < hi) {
		end.pc = addr;
		err = push_row(b, &end);
		if (err)
			return err;
		end.pc = hi;
	}
	return push_row(b, &end);
}

static int walk_fdes(struct builder *b, Elf *elf)
{
	Dwarf_Off off = 0, next;
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	Elf_Data *data = (Elf_Data *)b->data;
	const struct sym_cfi_section sec = { .addr = b->sh_addr, .start = data->d_buf };
	int err;

	if (!ident)
		return -EINVAL;
	for (;;) {
		Dwarf_CFI_Entry e;
		const struct cie_enc *cie;
		const uint8_t *p, *end;
		struct sym_cfi_program pr;
		uint64_t lo, len;
		int r = dwarf_next_cfi(ident, data, b->eh_frame, off, &next, &e);

		if (r > 0)
			break; /* the end */
		if (r < 0 || next <= off)
			return b->t->fdes ? 0 : -EINVAL; /* keep what was read */
		if (dwarf_cfi_cie_p(&e)) {
			err = remember_cie(b, off, &e.cie);
			if (err)
				return err;
			off = next;
			continue;
		}
		off = next;
		if (b->t->fdes >= MAX_FDES)
			return -E2BIG;
		b->t->fdes++;
		cie = find_cie(b, e.fde.CIE_pointer);
		p = e.fde.start;
		end = e.fde.end;
		/*
		 * An FDE whose instructions could not be checked stops the walk: libdw, which
		 * finds FDEs by address, could pick it for an address of a later one. What was
		 * read is kept; the rest of the object has no rules.
		 */
		if (!cie || !cie->ok) {
			b->t->fde_errors++;
			return 0;
		}
		if (b->eh_frame) {
			if (sym_cfi_read_encoded(&p, end, cie->enc, &sec, &lo) ||
			    sym_cfi_read_encoded(&p, end, cie->enc & 0x0f, NULL, &len)) {
				b->t->fde_errors++;
				return 0;
			}
		} else {
			if (end - p < 16) {
				b->t->fde_errors++;
				return 0;
			}
			memcpy(&lo, p, 8);
			memcpy(&len, p + 8, 8);
			p += 16;
		}
		if (!len || lo + len < lo)
			continue; /* empty (a discarded function's leftover) or wrapping: libdw too */
		if ((cie->sized && sym_cfi_skip_block(&p, end)) ||
		    sym_cfi_check_program(cie->enc, p, end, &pr)) {
			b->t->fde_errors++;
			return 0;
		}
		err = sym_grow((void **)&b->todo, &b->cap_todo, b->nr_todo + 1, sizeof(*b->todo));
		if (err)
			return err;
		/* libdw's frame state holds every register up to the highest named (the CIE's
		 * initial instructions count, and the return address column at least). */
		if (pr.max_regno < cie->max_regno)
			pr.max_regno = cie->max_regno;
		if (pr.max_regno < X86_64_RA)
			pr.max_regno = X86_64_RA;
		b->todo[b->nr_todo++] = (struct fde_todo){
			.lo = lo,
			.hi = lo + len,
			.lookups = pr.moves + 1,
			.cost = (uint64_t)(end - p) + pr.remembers * (pr.max_regno + 1 + 64),
		};
	}
	return 0;
}

static int cmp_todo(const void *a, const void *b)
{
	const struct fde_todo *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/*
 * Evaluate the FDEs walk_fdes() found, by address. libdw ignores an FDE that overlaps one
 * before it in the section and answers for both from the first, so FDEs that overlap are
 * left without rules (compilers emit none). Each FDE costs its lookups (a row each) times
 * the cost of one; past MAX_WORK in all, the rest of the object has no rules.
 */
static int eval_fdes(struct builder *b)
{
	struct fde_todo *d = b->todo;
	uint64_t max_hi = 0;
	size_t i;
	int err;

	if (!b->nr_todo)
		return 0;
	qsort(d, b->nr_todo, sizeof(*d), cmp_todo);
	for (i = 0; i < b->nr_todo; i++) {
		/* Sorted by lo: d[i] overlaps an earlier one iff it starts below their ends,
		 * and a later one iff the next one starts below its end. */
		d[i].overlaps = (i && d[i].lo < max_hi) ||
				(i + 1 < b->nr_todo && d[i + 1].lo < d[i].hi);
		if (d[i].hi > max_hi)
			max_hi = d[i].hi;
	}
	for (i = 0; i < b->nr_todo; i++) {
		if (d[i].overlaps) {
			b->t->fde_errors++;
			continue;
		}
		if (d[i].cost > (MAX_WORK - b->work) / d[i].lookups) {
			b->t->fde_errors += (uint32_t)(b->nr_todo - i);
			break;
		}
		b->work += d[i].lookups * d[i].cost;
		err = add_fde(b, d[i].lo, d[i].hi, d[i].lookups);
		if (err)
			return err;
	}
	return 0;
}

static int cmp_row(const void *a, const void *b)
{
	const struct sym_unwind_row *x = a, *y = b;

	if (x->pc != y->pc)
		return x->pc < y->pc ? -1 : 1;
	/* At one pc, a rule beats the "no CFI" end of the FDE before it. */
	return (x->cfa_rule == SYM_CFA_NONE) - (y->cfa_rule == SYM_CFA_NONE);
}

static bool same_rule(const struct sym_unwind_row *a, const struct sym_unwind_row *b)
{
	return a->cfa_rule == b->cfa_rule && a->cfa_off == b->cfa_off &&
	       a->rbp_rule == b->rbp_rule && a->rbp_off == b->rbp_off &&
	       a->plt_threshold == b->plt_threshold;
}

/* Sort, keep one row per pc, merge neighbours with the same rule. */
static void compact(struct sym_unwind_table *t)
{
	uint64_t last_pc = 0;
	size_t i, n = 0;

	if (!t->nr_rows)
		return;
	qsort(t->rows, t->nr_rows, sizeof(t->rows[0]), cmp_row);
	for (i = 0; i < t->nr_rows; i++) {
		const struct sym_unwind_row *r = &t->rows[i];

		if (i && r->pc == last_pc)
			continue; /* the first at a pc wins (see cmp_row) */
		last_pc = r->pc;
		if (n && same_rule(&t->rows[n - 1], r))
			continue;
		if (!n && r->cfa_rule == SYM_CFA_NONE)
			continue; /* nothing before the first rule needs saying */
		t->rows[n++] = *r;
	}
	t->nr_rows = n;
}

static Elf_Scn *find_section(Elf *elf, const char *want, GElf_Shdr *shdr)
{
	Elf_Scn *scn = NULL;
	const char *name;

	while (sym_next_section(elf, &scn, shdr, &name))
		if (!strcmp(name, want))
			return scn;
	return NULL;
}

/*
 * What libdw is given (see the top of this file): an ELF image holding a copy of the CFI
 * section, at its address (so pc-relative pointers keep their values), and the names. The
 * section's bytes follow the struct.
 */
struct cfi_image {
	Elf64_Ehdr ehdr;
	Elf64_Shdr shdr[3]; /* none, the CFI, the section names */
	char names[32];	    /* "", the CFI section's name, ".shstrtab" */
};

static struct cfi_image *cfi_image_new(const char *name, const GElf_Shdr *shdr,
				       const Elf_Data *data)
{
	size_t name_len = strlen(name); /* ".eh_frame" or ".debug_frame" */
	struct cfi_image *h = calloc(1, sizeof(*h) + data->d_size);

	if (!h)
		return NULL;
	memcpy(h->ehdr.e_ident, ELFMAG, SELFMAG);
	h->ehdr.e_ident[EI_CLASS] = ELFCLASS64;
	h->ehdr.e_ident[EI_DATA] = ELFDATA2LSB;
	h->ehdr.e_ident[EI_VERSION] = EV_CURRENT;
	h->ehdr.e_type = ET_DYN;
	h->ehdr.e_machine = EM_X86_64;
	h->ehdr.e_version = EV_CURRENT;
	h->ehdr.e_shoff = offsetof(struct cfi_image, shdr);
	h->ehdr.e_ehsize = sizeof(h->ehdr);
	h->ehdr.e_shentsize = sizeof(h->shdr[0]);
	h->ehdr.e_shnum = 3;
	h->ehdr.e_shstrndx = 2;
	h->shdr[1].sh_name = 1;
	h->shdr[1].sh_type = SHT_PROGBITS;
	h->shdr[1].sh_flags = shdr->sh_flags & SHF_ALLOC;
	h->shdr[1].sh_addr = shdr->sh_addr;
	h->shdr[1].sh_offset = sizeof(*h);
	h->shdr[1].sh_size = data->d_size;
	h->shdr[1].sh_addralign = 1;
	h->shdr[2].sh_name = (Elf64_Word)name_len + 2;
	h->shdr[2].sh_type = SHT_STRTAB;
	h->shdr[2].sh_offset = offsetof(struct cfi_image, names);
	h->shdr[2].sh_size = sizeof(h->names);
	h->shdr[2].sh_addralign = 1;
	memcpy(h->names + 1, name, name_len);
	memcpy(h->names + name_len + 2, ".shstrtab", sizeof(".shstrtab"));
	memcpy(h + 1, data->d_buf, data->d_size);
	return h;
}

/*
 * The rows of a Go binary from its pclntab (gopclntab.c). -ENOENT when it has none that can
 * be read, so that .debug_frame is looked for instead.
 */
static int go_rows(Elf *elf, struct sym_unwind_table *t)
{
	struct sym_gopcln *g = sym_gopcln__open(elf);
	int err;

	if (!g)
		return errno == ENOMEM || errno == E2BIG ? -errno : -ENOENT;
	t->gopclntab = true;
	t->cfi_bytes = sym_gopcln__bytes(g);
	err = sym_gopcln__unwind_rows(g, elf, t, &t->fde_errors);
	sym_gopcln__free(g);
	if (!err)
		compact(t);
	else
		sym_unwind_table__fini(t);
	return err;
}

/* The rule of a sorted table at pc, from row *i on (advanced): NULL before its first row. */
static const struct sym_unwind_row *rule_at(const struct sym_unwind_table *t, size_t *i,
					    uint64_t pc)
{
	while (*i < t->nr_rows && t->rows[*i].pc <= pc)
		(*i)++;
	return *i ? &t->rows[*i - 1] : NULL;
}

/*
 * A cgo binary: .eh_frame describes its C code, the pclntab its Go code. Where a Go function
 * has rules they apply, elsewhere the CFI's: one sweep over the two tables' row addresses.
 * 0 (the object is not Go, or its table cannot be read: the CFI's rows stay as they are),
 * -E2BIG or -ENOMEM.
 */
static int add_go_rows(Elf *elf, struct sym_unwind_table *t)
{
	struct sym_unwind_table go = { 0 }, out = { 0 };
	struct sym_gopcln *g = sym_gopcln__open(elf);
	size_t i = 0, j = 0, gi = 0, ei = 0, cap = 0;
	int err;

	if (!g)
		return errno == ENOMEM ? -ENOMEM : 0;
	err = sym_gopcln__unwind_rows(g, elf, &go, &t->fde_errors);
	t->cfi_bytes += sym_gopcln__bytes(g);
	sym_gopcln__free(g);
	if (err)
		goto out;
	compact(&go);
	if (!go.nr_rows)
		goto out;
	while (i < t->nr_rows || j < go.nr_rows) {
		const struct sym_unwind_row *e, *r;
		uint64_t pc;

		if (j >= go.nr_rows || (i < t->nr_rows && t->rows[i].pc < go.rows[j].pc))
			pc = t->rows[i++].pc;
		else
			pc = go.rows[j++].pc;
		if (i < t->nr_rows && t->rows[i].pc == pc)
			i++;
		if (j < go.nr_rows && go.rows[j].pc == pc)
			j++;
		r = rule_at(&go, &gi, pc);
		e = rule_at(t, &ei, pc);
		if (!r || r->cfa_rule == SYM_CFA_NONE)
			r = e;
		err = out.nr_rows >= MAX_ROWS ? -E2BIG :
						sym_grow((void **)&out.rows, &cap, out.nr_rows + 1,
							 sizeof(*out.rows));
		if (err)
			goto out;
		if (r)
			out.rows[out.nr_rows] = *r;
		else
			out.rows[out.nr_rows] = (struct sym_unwind_row){ .cfa_rule = SYM_CFA_NONE };
		out.rows[out.nr_rows++].pc = pc;
	}
	free(t->rows);
	t->rows = out.rows;
	t->nr_rows = out.nr_rows;
	out.rows = NULL;
	t->gopclntab = true;
	t->fdes += go.fdes;
	compact(t);
out:
	free(go.rows);
	free(out.rows);
	return err;
}

static int build(Elf *elf, struct sym_unwind_table *t)
{
	struct builder b = { .t = t };
	struct cfi_image *image = NULL;
	Elf *cfi_elf = NULL;
	Elf_Data *data;
	GElf_Ehdr ehdr;
	GElf_Shdr shdr;
	Elf_Scn *scn;
	Dwarf *dw = NULL;
	int err;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr))
		return -EINVAL;
	if (ehdr.e_ident[EI_CLASS] != ELFCLASS64 || ehdr.e_machine != EM_X86_64 ||
	    ehdr.e_ident[EI_DATA] != ELFDATA2LSB)
		return -ENOTSUP;
	scn = find_section(elf, ".eh_frame", &shdr);
	if (scn && shdr.sh_size) {
		b.eh_frame = true;
	} else {
		/* Go's own tables: a Go binary has no .eh_frame, and the .debug_frame that -w
		 * drops says no more than pcsp does. */
		err = go_rows(elf, t);
		if (err != -ENOENT)
			return err;
		/* .debug_frame only (some static or hand-built objects). */
		scn = find_section(elf, ".debug_frame", &shdr);
		if (!scn || !shdr.sh_size)
			return -ENODATA;
		if (shdr.sh_flags & SHF_COMPRESSED)
			return -ENOTSUP;
		t->debug_frame = true;
	}
	data = elf_getdata(scn, NULL);
	if (!data || !data->d_buf || data->d_size != shdr.sh_size)
		return -EINVAL;
	image = cfi_image_new(b.eh_frame ? ".eh_frame" : ".debug_frame", &shdr, data);
	cfi_elf = image ? elf_memory((char *)image, sizeof(*image) + data->d_size) : NULL;
	if (!cfi_elf) {
		err = -ENOMEM;
		goto out;
	}
	if (b.eh_frame) {
		b.cfi = dwarf_getcfi_elf(cfi_elf);
	} else {
		dw = dwarf_begin_elf(cfi_elf, DWARF_C_READ, NULL);
		b.cfi = dw ? dwarf_getcfi(dw) : NULL;
	}
	b.data = elf_getdata(elf_getscn(cfi_elf, 1), NULL);
	if (!b.cfi || !b.data) {
		err = -ENODATA;
		goto out;
	}
	b.sh_addr = shdr.sh_addr;
	t->cfi_bytes = shdr.sh_size;
	err = walk_fdes(&b, cfi_elf);
	if (!err)
		err = eval_fdes(&b);
	if (!err)
		compact(t);
	if (!err && b.eh_frame)
		err = add_go_rows(elf, t);
out:
	if (b.cfi && b.eh_frame)
		dwarf_cfi_end(b.cfi);
	if (dw)
		dwarf_end(dw);
	elf_end(cfi_elf);
	free(image);
	free(b.cies);
	free(b.todo);
	if (err)
		sym_unwind_table__fini(t);
	return err;
}

int sym_unwind_table__build(int fd, const void *image, size_t size, struct sym_unwind_table *t)
{
	Elf *elf;
	int err;

	memset(t, 0, sizeof(*t));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	/* The image is only read: libelf's ELF_C_READ never writes through the pointer. */
	elf = image ? elf_memory((char *)(uintptr_t)image, size) : elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return -EINVAL;
	err = build(elf, t);
	elf_end(elf);
	return err;
}

int sym_object__unwind_table(const struct sym_object *o, struct sym_unwind_table *t)
{
	return sym_unwind_table__build(o->fd, o->image, o->image_size, t);
}

void sym_unwind_table__fini(struct sym_unwind_table *t)
{
	free(t->rows);
	t->rows = NULL;
	t->nr_rows = 0;
}

const struct sym_unwind_row *sym_unwind_table__find(const struct sym_unwind_table *t, uint64_t pc)
{
	size_t n = sym_upper_bound(t->rows, t->nr_rows, sizeof(t->rows[0]), pc);

	return n ? &t->rows[n - 1] : NULL;
}
