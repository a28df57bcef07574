// SPDX-License-Identifier: Apache-2.0
/*
 * Function, file, line and inline frames from DWARF (DWARF 4 and 5, dwarfstd.org) through
 * elfutils' libdw.
 *
 * An address is looked up in the compilation unit whose ranges cover it (an index built once
 * from every CU's DW_AT_ranges/low_pc/high_pc, since compilers no longer emit
 * .debug_aranges by default); dwarf_getscopes() finds the innermost function scope there and
 * dwarf_getscopes_die() the concrete scopes around it, innermost first. Each
 * DW_TAG_inlined_subroutine among them is a frame of its own: the
 * innermost frame's line is the address's row of the line table; each outer frame's line is
 * the call site recorded in the inlined scope it contains (DW_AT_call_file/call_line). The
 * last frame is the DW_TAG_subprogram the code was inlined into.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolizer_internal.h"

struct cu_range {
	uint64_t lo, hi; /* [lo, hi) */
	Dwarf_Off cu;	 /* offset of the CU's DIE */
};

struct sym_dwarf {
	Elf *elf;
	Dwarf *dw;
	int fd;
	struct cu_range *ranges;
	size_t nr_ranges;
	size_t bytes;
};

static int cmp_range(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

static int index_units(struct sym_dwarf *d)
{
	Dwarf_Off off = 0, next;
	size_t hsize, cap = 0;
	Dwarf_Die cudie;
	int err;

	while (dwarf_next_unit(d->dw, off, &next, &hsize, NULL, NULL, NULL, NULL, NULL, NULL) ==
	       0) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t it = 0;

		if (dwarf_offdie(d->dw, off + hsize, &cudie)) {
			while ((it = dwarf_ranges(&cudie, it, &base, &lo, &hi)) > 0) {
				if (hi <= lo)
					continue;
				if (d->nr_ranges >= SYM_MAX_SYMBOLS)
					break;
				err = sym_grow((void **)&d->ranges, &cap, d->nr_ranges + 1,
					       sizeof(*d->ranges));
				if (err)
					return err;
				d->ranges[d->nr_ranges++] =
					(struct cu_range){ lo, hi, dwarf_dieoffset(&cudie) };
			}
		}
		if (next <= off)
			break;
		off = next;
	}
	if (d->nr_ranges)
		qsort(d->ranges, d->nr_ranges, sizeof(*d->ranges), cmp_range);
	return 0;
}

static bool has_debug_info(Elf *elf)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	const char *name;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (name && (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")))
			return shdr.sh_size > 0;
	}
	return false;
}

/* Bytes of the sections libdw reads into memory, as the cost of keeping it open. */
static size_t debug_bytes(Elf *elf)
{
	size_t shstrndx, total = 0;
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	const char *name;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (name && (!strncmp(name, ".debug_", 7) || !strncmp(name, ".zdebug_", 8)))
			total += shdr.sh_size;
	}
	return total;
}

struct sym_dwarf *sym_dwarf__open(int fd)
{
	struct sym_dwarf *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->fd = dup(fd);
	if (d->fd < 0)
		goto err_out;
	d->elf = elf_begin(d->fd, ELF_C_READ, NULL);
	if (!d->elf || elf_kind(d->elf) != ELF_K_ELF || !has_debug_info(d->elf))
		goto err_out;
	d->dw = dwarf_begin_elf(d->elf, DWARF_C_READ, NULL);
	if (!d->dw)
		goto err_out;
	if (index_units(d) || !d->nr_ranges)
		goto err_out;
	d->bytes = sizeof(*d) + d->nr_ranges * sizeof(*d->ranges) + debug_bytes(d->elf);
	return d;

err_out:
	sym_dwarf__free(d);
	return NULL;
}

void sym_dwarf__free(struct sym_dwarf *d)
{
	if (!d)
		return;
	if (d->dw)
		dwarf_end(d->dw);
	if (d->elf)
		elf_end(d->elf);
	if (d->fd >= 0)
		close(d->fd);
	free(d->ranges);
	free(d);
}

size_t sym_dwarf__bytes(const struct sym_dwarf *d)
{
	return d ? d->bytes : 0;
}

/* The CU whose range covers pc: the last range starting at or below pc that contains it. */
static bool find_cu(const struct sym_dwarf *d, uint64_t pc, Dwarf_Die *cudie)
{
	size_t lo = 0, hi = d->nr_ranges, k;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->ranges[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Ranges rarely nest (a CU of assembly inside another's range); look back a few. */
	for (k = 0; k < 8 && lo > k; k++) {
		const struct cu_range *r = &d->ranges[lo - 1 - k];

		if (pc < r->hi)
			return dwarf_offdie(d->dw, r->cu, cudie) != NULL;
	}
	return false;
}

static const char *linkage_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *s;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr)) {
		s = dwarf_formstring(&attr);
		if (s && *s)
			return s;
	}
	return NULL;
}

static const char *call_file(Dwarf_Die *die, Dwarf_Files *files, size_t nr_files)
{
	Dwarf_Attribute attr;
	Dwarf_Word idx;

	if (!files || !dwarf_attr(die, DW_AT_call_file, &attr) || dwarf_formudata(&attr, &idx))
		return NULL;
	if (idx >= nr_files)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

static uint32_t call_line(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	Dwarf_Word line;

	if (!dwarf_attr(die, DW_AT_call_line, &attr) || dwarf_formudata(&attr, &line))
		return 0;
	return line > UINT32_MAX ? 0 : (uint32_t)line;
}

int sym_dwarf__lookup(struct sym_dwarf *d, uint64_t pc, struct sym_dwarf_frame *frames, int max)
{
	Dwarf_Die cudie, *scopes = NULL, *chain = NULL, innermost;
	Dwarf_Attribute attr;
	const char *comp_dir;
	Dwarf_Files *files = NULL;
	size_t nr_files = 0;
	Dwarf_Line *row;
	const char *file = NULL;
	uint32_t line = 0;
	int nr_scopes, nr_chain, i, n = 0, lineno;

	if (!find_cu(d, pc, &cudie))
		return 0;
	/* The innermost function scope of pc (past lexical blocks)... */
	nr_scopes = dwarf_getscopes(&cudie, pc, &scopes);
	for (i = 0; i < nr_scopes; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram)
			break;
	}
	if (i >= nr_scopes) {
		free(scopes);
		return 0;
	}
	innermost = scopes[i];
	free(scopes);
	/* ...and the concrete scopes it sits in: the functions it was inlined into. (The
	 * scopes dwarf_getscopes() lists past an inlined instance are its abstract origin's.) */
	nr_chain = dwarf_getscopes_die(&innermost, &chain);
	if (nr_chain <= 0) {
		free(chain);
		return 0;
	}
	if (dwarf_getsrcfiles(&cudie, &files, &nr_files))
		files = NULL;
	comp_dir = dwarf_formstring(dwarf_attr(&cudie, DW_AT_comp_dir, &attr));
	row = dwarf_getsrc_die(&cudie, pc);
	if (row) {
		file = dwarf_linesrc(row, NULL, NULL);
		if (!dwarf_lineno(row, &lineno) && lineno > 0)
			line = (uint32_t)lineno;
	}
	for (i = 0; i < nr_chain && n < max; i++) {
		Dwarf_Die *die = &chain[i];
		int tag = dwarf_tag(die);
		Dwarf_Addr entry = 0;

		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue; /* lexical blocks */
		frames[n].name = dwarf_diename(die);
		frames[n].linkage_name = linkage_name(die);
		frames[n].file = file;
		frames[n].comp_dir = comp_dir;
		frames[n].line = line;
		frames[n].start = dwarf_entrypc(die, &entry) ? 0 : entry;
		if (!frames[n].name && !frames[n].linkage_name)
			frames[n].name = "??";
		n++;
		if (tag == DW_TAG_subprogram)
			break;
		/* The enclosing frame is at this inlined call's site. */
		file = call_file(die, files, nr_files);
		line = call_line(die);
	}
	free(chain);
	return n;
}
