// SPDX-License-Identifier: Apache-2.0
/*
 * Reading call frame information without running it: DW_EH_PE-encoded pointers (LSB Core
 * §10.5.1) and CFA programs (DWARF 5 §6.4.2) decoded and checked before libdw's interpreter
 * sees them (see symbolizer/unwind.c for why: libdw trusts what they say).
 */
#include <dwarf.h>
#include <errno.h>
#include <string.h>

#include "symbolizer_internal.h"

/* The highest register number the CFI may name: the psABI's table ends below 130. */
#define MAX_REGNO 255
/* libdw reads a LEB128 number in at most this many bytes. */
#define MAX_LEB_BYTES 10
/* Nesting of DW_CFA_remember_state (each keeps a copy of the frame state); compilers nest 1. */
#define MAX_STATE_DEPTH 64

static int read_uleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned int shift = 0;

	*v = 0;
	while (*p < end) {
		uint8_t b = *(*p)++;

		if (shift < 64)
			*v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return 0;
	}
	return -EINVAL;
}

static int read_sleb(const uint8_t **p, const uint8_t *end, int64_t *v)
{
	unsigned int shift = 0;
	uint64_t u = 0;
	uint8_t b = 0;

	while (*p < end) {
		b = *(*p)++;
		if (shift < 64)
			u |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
				u |= ~0ULL << shift;
			*v = (int64_t)u;
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * Read one DW_EH_PE-encoded value at *p (advanced past it). With apply, pc-relative values get
 * the address of their field added (the initial location); the address range is a plain
 * length. Returns 0, or -EINVAL for an encoding this reader does not know (indirect,
 * datarel and the like: no x86_64 compiler emits them in an FDE) or a value past end.
 */
int sym_cfi_read_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc,
			 const struct sym_cfi_section *sec, uint64_t *v)
{
	const uint8_t *field = *p;
	uint64_t u = 0;
	int64_t s;
	size_t size = 0;

	if (enc == DW_EH_PE_omit || (enc & DW_EH_PE_indirect))
		return -EINVAL;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		size = 8;
		break;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		size = 4;
		break;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		size = 2;
		break;
	case DW_EH_PE_uleb128:
		if (read_uleb(p, end, &u))
			return -EINVAL;
		break;
	case DW_EH_PE_sleb128:
		if (read_sleb(p, end, &s))
			return -EINVAL;
		u = (uint64_t)s;
		break;
	default:
		return -EINVAL;
	}
	if (size) {
		if ((size_t)(end - *p) < size)
			return -EINVAL;
		/* Little-endian: the only byte order of x86_64. */
		for (size_t i = 0; i < size; i++)
			u |= (uint64_t)(*p)[i] << (8 * i);
		*p += size;
		if ((enc & 0x08) && size < 8 && (u >> (8 * size - 1)) & 1) /* sdataN */
			u |= ~0ULL << (8 * size);
	}
	switch (enc & 0x70) {
	case 0:
		break;
	case DW_EH_PE_pcrel:
		if (sec)
			u += sec->addr + (uint64_t)(field - sec->start);
		break;
	default:
		return -EINVAL;
	}
	*v = u;
	return 0;
}

/*
 * A LEB128 operand as libdw reads it (at most MAX_LEB_BYTES). With regno, a register number:
 * at most MAX_REGNO, the highest so far kept in *regno.
 */
static int skip_leb(const uint8_t **p, const uint8_t *end, bool is_signed, uint64_t *regno)
{
	const uint8_t *start = *p;
	uint64_t u = 0;
	int64_t s;

	if (is_signed ? read_sleb(p, end, &s) : read_uleb(p, end, &u))
		return -EINVAL;
	if (*p - start > MAX_LEB_BYTES || (regno && u > MAX_REGNO))
		return -EINVAL;
	if (regno && u > *regno)
		*regno = u;
	return 0;
}

static void note_regno(uint64_t *max, uint64_t regno)
{
	if (regno > *max)
		*max = regno;
}

/* A DW_FORM_block operand: a ULEB128 length, then that many bytes. */
int sym_cfi_skip_block(const uint8_t **p, const uint8_t *end)
{
	const uint8_t *start = *p;
	uint64_t len;

	if (read_uleb(p, end, &len) || *p - start > MAX_LEB_BYTES || len > (uint64_t)(end - *p))
		return -EINVAL;
	*p += len;
	return 0;
}

/*
 * Decode a CFA program (DWARF 5 §6.4.2) without running it: 0 when every instruction is one
 * libdw knows, its operands lie within [p, end), every register it names is at most
 * MAX_REGNO and remembered states nest at most MAX_STATE_DEPTH deep; -EINVAL otherwise.
 * enc is the CIE's pointer encoding, for DW_CFA_set_loc. What it found goes to *pr.
 */
int sym_cfi_check_program(uint8_t enc, const uint8_t *p, const uint8_t *end,
			  struct sym_cfi_program *pr)
{
	uint64_t len, *reg = &pr->max_regno;
	unsigned int depth = 0;
	int err = 0;

	memset(pr, 0, sizeof(*pr));
	while (p < end && !err) {
		uint8_t op = *p++;

		switch (op & 0xc0) {
		case DW_CFA_advance_loc:
			pr->moves++;
			continue;
		case DW_CFA_restore: /* the register is in the low 6 bits */
			note_regno(reg, op & 0x3f);
			continue;
		case DW_CFA_offset:
			note_regno(reg, op & 0x3f);
			err = skip_leb(&p, end, false, NULL);
			continue;
		}
		switch (op) {
		case DW_CFA_nop:
			break;
		case DW_CFA_remember_state:
			pr->remembers++;
			err = ++depth > MAX_STATE_DEPTH ? -EINVAL : 0;
			break;
		case DW_CFA_restore_state:
			err = depth-- ? 0 : -EINVAL;
			break;
		case DW_CFA_GNU_window_save: /* SPARC's shorthand: libdw sets registers 8 to 31 */
			note_regno(reg, 31);
			break;
		case DW_CFA_set_loc:
			pr->moves++;
			err = sym_cfi_read_encoded(&p, end, enc, NULL, &len);
			break;
		case DW_CFA_advance_loc1:
		case DW_CFA_advance_loc2:
		case DW_CFA_advance_loc4:
		case DW_CFA_MIPS_advance_loc8:
			pr->moves++;
			len = op == DW_CFA_MIPS_advance_loc8 ? 8 : 1U << (op - DW_CFA_advance_loc1);
			err = (uint64_t)(end - p) < len ? -EINVAL : 0;
			p += err ? 0 : len;
			break;
		case DW_CFA_restore_extended:
		case DW_CFA_undefined:
		case DW_CFA_same_value:
			err = skip_leb(&p, end, false, reg);
			break;
		case DW_CFA_offset_extended:
		case DW_CFA_val_offset:
		case DW_CFA_GNU_negative_offset_extended:
		case DW_CFA_register:
			err = skip_leb(&p, end, false, reg) ?: skip_leb(&p, end, false, NULL);
			break;
		case DW_CFA_offset_extended_sf:
		case DW_CFA_val_offset_sf:
			err = skip_leb(&p, end, false, reg) ?: skip_leb(&p, end, true, NULL);
			break;
		case DW_CFA_def_cfa: /* the CFA register is a number libdw only stores */
			err = skip_leb(&p, end, false, NULL) ?: skip_leb(&p, end, false, NULL);
			break;
		case DW_CFA_def_cfa_sf:
			err = skip_leb(&p, end, false, NULL) ?: skip_leb(&p, end, true, NULL);
			break;
		case DW_CFA_def_cfa_register:
		case DW_CFA_def_cfa_offset:
		case DW_CFA_GNU_args_size:
			err = skip_leb(&p, end, false, NULL);
			break;
		case DW_CFA_def_cfa_offset_sf:
			err = skip_leb(&p, end, true, NULL);
			break;
		case DW_CFA_expression:
		case DW_CFA_val_expression:
			err = skip_leb(&p, end, false, reg) ?: sym_cfi_skip_block(&p, end);
			break;
		case DW_CFA_def_cfa_expression:
			err = sym_cfi_skip_block(&p, end);
			break;
		default:
			err = -EINVAL;
		}
	}
	return err;
}
