// SPDX-License-Identifier: Apache-2.0
/*
 * Function, file, line and inline frames from DWARF (DWARF 4 and 5, dwarfstd.org) through
 * elfutils' libdw.
 *
 * An address is looked up in the compilation unit whose ranges cover it (an index built once
 * from every CU's DW_AT_ranges/low_pc/high_pc, since compilers no longer emit
 * .debug_aranges by default); on a CU's first lookup one walk of its DIE tree indexes the pc
 * ranges of its functions and inlined functions with their nesting, and each lookup then
 * finds the innermost scope by binary search and follows the nesting outward. Each
 * DW_TAG_inlined_subroutine on the way is a frame of its own: the
 * innermost frame's line is the address's row of the line table; each outer frame's line is
 * the call site recorded in the inlined scope it contains (DW_AT_call_file/call_line). The
 * last frame is the DW_TAG_subprogram the code was inlined into.
 *
 * Memory. libdw reads every debug section it knows into memory when the file is opened (a
 * compressed section, as Debian's -dbg and -dbgsym files have them, decompressed whole),
 * and keeps each CU's line table and abbreviations once read: libc6-dbg's libc costs 10-14
 * MiB that way, plus the 3 MiB of its compressed sections, which libelf keeps while open.
 * What a library's DWARF costs between lookups is what we index ourselves: the CU ranges
 * (kept) and the scope index of each CU looked up (on demand, at most
 * SYM_DWARF_MAX_SCOPE_BYTES per object, least recently used CUs dropped first). The libdw
 * handle with its sections and line tables is opened on demand and closed by
 * sym_dwarf__release(), which the symbolizer's user calls once a batch of lookups is done
 * (the agent: after each window); resolved addresses stay in the address cache, so a library
 * is opened again only for addresses not seen before.
 *
 * Time. Opening libc6-dbg's libc is mostly inflating its zlib-compressed sections (ELF gABI,
 * "Section Compression"; zlib format, RFC 1950): libelf does it with zlib's inflate as libdw
 * asks. We inflate them first with libdeflate, about twice as fast on whole buffers, and
 * hand libdw the result as the sections' data (see inflate_sections()).
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolizer_internal.h"

struct cu_range {
	uint64_t lo, hi; /* [lo, hi) */
	Dwarf_Off cu;	 /* offset of the CU's DIE */
	uint32_t unit;	 /* index in sym_dwarf.units */
};

/* One pc range of a function or inlined-function DIE of a CU. */
struct scope {
	uint64_t lo, hi;
	Dwarf_Off die;
	int32_t parent; /* index of a range of the enclosing function scope, -1 for none */
	uint32_t depth;
	uint32_t id; /* index before sorting */
};

/* The function scopes of one CU, sorted by lo, built on the CU's first lookup: one walk of
 * its DIE tree instead of one per address (dwarf_getscopes walks it every time). */
struct unit_index {
	struct scope *scopes;
	size_t nr, cap;
	uint64_t last_used; /* lookup tick */
	bool built;
};

struct sym_dwarf {
	Elf *elf; /* with dw: the libdw handle, NULL while released */
	Dwarf *dw;
	int fd;
	bool unusable; /* opening it again failed: no more lookups */
	struct cu_range *ranges;
	size_t nr_ranges;
	struct unit_index *units;
	size_t nr_units;
	size_t section_bytes; /* debug sections, as libdw holds them while open */
	size_t max_bytes;     /* cap on section_bytes, 0 for none */
	void **inflated;      /* while open: the sections' data we inflated (ours to free) */
	size_t nr_inflated;
	size_t compressed_bytes; /* while open: their compressed bytes, which libelf keeps */
	size_t scope_bytes;	 /* the built scope indexes */
	uint64_t tick;
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
		bool any = false;

		if (d->nr_units < SYM_MAX_SYMBOLS && dwarf_offdie(d->dw, off + hsize, &cudie)) {
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
					(struct cu_range){ lo, hi, dwarf_dieoffset(&cudie),
							   (uint32_t)d->nr_units };
				any = true;
			}
			if (any)
				d->nr_units++;
		}
		if (next <= off)
			break;
		off = next;
	}
	if (d->nr_ranges)
		qsort(d->ranges, d->nr_ranges, sizeof(*d->ranges), cmp_range);
	d->units = calloc(d->nr_units ? d->nr_units : 1, sizeof(*d->units));
	return d->units ? 0 : -ENOMEM;
}

bool sym_has_debug_info(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	const char *name;

	while (sym_next_section(elf, &scn, &shdr, &name))
		if (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info"))
			return shdr.sh_size > 0;
	return false;
}

/*
 * Debug sections this file never asks libdw for: location lists (variables), macros, the
 * CFI of .debug_frame (unwinding reads it through its own handle, symbolizer/unwind.c) and
 * the name indexes. libdw 0.188 reads -- and decompresses, when compressed -- every DWARF
 * section it recognizes as the handle is opened (dwarf_begin_elf.c, check_section()); the
 * location lists alone are a fifth of libpython's DWARF and of libc6-dbg's libc.
 */
static const char *const unread_sections[] = {
	"loc",	    "loclists", "macro",	"macinfo",	"frame",
	"pubnames", "pubtypes", "gnu_pubnames", "gnu_pubtypes",
};

static bool is_unread_section(const char *name)
{
	if (!strncmp(name, ".debug_", 7))
		name += 7;
	else if (!strncmp(name, ".zdebug_", 8))
		name += 8;
	else
		return false;
	for (size_t i = 0; i < sizeof(unread_sections) / sizeof(unread_sections[0]); i++)
		if (!strcmp(name, unread_sections[i]))
			return true;
	return false;
}

/*
 * Hide the unread sections from libdw in this handle's copy of the section headers: it skips
 * SHT_NOBITS sections (check_section() in every version since 0.1xx), so they are neither
 * read nor decompressed. The file is open read-only; only libelf's memory changes.
 */
static void hide_unread_sections(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	const char *name;

	while (sym_next_section(elf, &scn, &shdr, &name)) {
		if (shdr.sh_type == SHT_NOBITS || !is_unread_section(name))
			continue;
		shdr.sh_type = SHT_NOBITS;
		gelf_update_shdr(scn, &shdr); /* if it fails, libdw reads the section: no harm */
	}
}

/* Bytes of the sections libdw reads into memory, as the cost of keeping it open. */
static size_t debug_bytes(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	const char *name;
	size_t total = 0;

	while (sym_next_section(elf, &scn, &shdr, &name))
		if (shdr.sh_type != SHT_NOBITS &&
		    (!strncmp(name, ".debug_", 7) || !strncmp(name, ".zdebug_", 8)))
			total += shdr.sh_size;
	return total;
}

/*
 * libdw (0.188) reads the strings of .debug_str and .debug_line_str with strlen(): a section
 * that does not end in a NUL (truncated, or hostile) makes it read past its buffer (found by
 * fuzzing). Such DWARF is not used; the symbol table still names the code.
 */
static bool string_sections_terminated(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	const char *name;

	while (sym_next_section(elf, &scn, &shdr, &name)) {
		Elf_Data *data;

		if (strcmp(name, ".debug_str") && strcmp(name, ".debug_line_str"))
			continue;
		/* Read it as libdw will: decompressed (libdw does the same in place). */
		if ((shdr.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
			return false;
		data = elf_getdata(scn, NULL);
		if (!data)
			return false;
		if (data->d_size && (!data->d_buf || ((const char *)data->d_buf)[data->d_size - 1]))
			return false;
	}
	return true;
}

/* Deflate expands at most 1032:1 (RFC 1951: a 258-byte match in as little as 2 bits). */
#define DEFLATE_MAX_RATIO 1032

/*
 * Inflate one SHF_COMPRESSED section: on success its libelf data describes our buffer (an
 * application may point an Elf_Data at memory of its own: libelf frees only what it
 * allocated) and its header no longer says compressed, so libdw takes it as it is. The
 * compressed bytes libelf read stay until elf_end(). Returns the inflated size, 0 to leave
 * the section to libelf (not zlib), or a negative errno (-EINVAL: corrupt).
 */
static ssize_t inflate_section(struct sym_dwarf *d, struct libdeflate_decompressor *dec,
			       Elf_Scn *scn, GElf_Shdr *shdr, size_t budget)
{
	size_t chdr_size = gelf_getclass(d->elf) == ELFCLASS64 ? sizeof(Elf64_Chdr) :
								 sizeof(Elf32_Chdr);
	Elf_Data *data = elf_getdata(scn, NULL);
	GElf_Chdr chdr;
	void *out, **slot;

	if (!data || !gelf_getchdr(scn, &chdr) || data->d_size < chdr_size)
		return -EINVAL;
	if (chdr.ch_type != ELFCOMPRESS_ZLIB)
		return 0;
	if (!chdr.ch_size || chdr.ch_size / DEFLATE_MAX_RATIO > data->d_size - chdr_size)
		return -EINVAL;
	if (budget && chdr.ch_size > budget)
		return -E2BIG;
	slot = realloc(d->inflated, (d->nr_inflated + 1) * sizeof(*d->inflated));
	if (!slot)
		return -ENOMEM;
	d->inflated = slot;
	out = malloc(chdr.ch_size);
	if (!out)
		return -ENOMEM;
	/* Without an actual-size argument, success means exactly ch_size bytes came out. */
	if (libdeflate_zlib_decompress(dec, (const char *)data->d_buf + chdr_size,
				       data->d_size - chdr_size, out, chdr.ch_size,
				       NULL) != LIBDEFLATE_SUCCESS) {
		free(out);
		return -EINVAL;
	}
	d->inflated[d->nr_inflated++] = out;
	d->compressed_bytes += data->d_size;
	data->d_buf = out;
	data->d_size = chdr.ch_size;
	data->d_type = ELF_T_BYTE;
	data->d_align = chdr.ch_addralign ? chdr.ch_addralign : 1;
	shdr->sh_flags &= ~(GElf_Xword)SHF_COMPRESSED;
	shdr->sh_size = chdr.ch_size;
	shdr->sh_addralign = data->d_align;
	if (!gelf_update_shdr(scn, shdr))
		return -EINVAL;
	return chdr.ch_size;
}

/*
 * Inflate the zlib-compressed debug sections libdw will read, at most max_bytes of them in
 * all (0: no limit). A corrupt section is hidden, as libdw skips one libelf cannot inflate.
 * Returns 0, -E2BIG (over max_bytes) or -ENOMEM.
 */
static int inflate_sections(struct sym_dwarf *d, size_t max_bytes)
{
	struct libdeflate_decompressor *dec = NULL;
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	const char *name;
	size_t total = 0;
	int err = 0;

	while (sym_next_section(d->elf, &scn, &shdr, &name)) {
		ssize_t n;

		if (shdr.sh_type == SHT_NOBITS || !(shdr.sh_flags & SHF_COMPRESSED) ||
		    strncmp(name, ".debug_", 7))
			continue;
		if (!dec && !(dec = libdeflate_alloc_decompressor())) {
			err = -ENOMEM;
			break;
		}
		n = inflate_section(d, dec, scn, &shdr,
				    max_bytes ? (max_bytes > total ? max_bytes - total : 1) : 0);
		if (n == -EINVAL) {
			shdr.sh_type = SHT_NOBITS;
			gelf_update_shdr(scn, &shdr);
		} else if (n < 0) {
			err = (int)n;
			break;
		} else {
			total += (size_t)n;
		}
	}
	if (dec)
		libdeflate_free_decompressor(dec);
	return err;
}

/* Close the libdw handle and free what it read. */
static void close_handle(struct sym_dwarf *d)
{
	if (d->dw)
		dwarf_end(d->dw);
	if (d->elf)
		elf_end(d->elf);
	d->dw = NULL;
	d->elf = NULL;
	for (size_t i = 0; i < d->nr_inflated; i++)
		free(d->inflated[i]);
	free(d->inflated);
	d->inflated = NULL;
	d->nr_inflated = 0;
	d->compressed_bytes = 0;
}

/*
 * Open the libdw handle (again), with at most max_bytes of compressed sections inflated (0:
 * no limit). Returns 0, -E2BIG, -ENOMEM or -EINVAL (not DWARF we can read).
 */
static int open_handle(struct sym_dwarf *d, size_t max_bytes)
{
	int err = -EINVAL;

	d->elf = elf_begin(d->fd, ELF_C_READ, NULL);
	if (!d->elf || elf_kind(d->elf) != ELF_K_ELF || !sym_has_debug_info(d->elf))
		goto err_out;
	hide_unread_sections(d->elf);
	err = inflate_sections(d, max_bytes);
	if (err)
		goto err_out;
	err = -EINVAL;
	if (!string_sections_terminated(d->elf))
		goto err_out;
	d->dw = dwarf_begin_elf(d->elf, DWARF_C_READ, NULL);
	if (!d->dw)
		goto err_out;
	return 0;

err_out:
	close_handle(d);
	return err;
}

struct sym_dwarf *sym_dwarf__open(int fd, size_t max_bytes)
{
	struct sym_dwarf *d = calloc(1, sizeof(*d));
	int err = -EINVAL;

	if (!d)
		return NULL;
	d->max_bytes = max_bytes;
	d->fd = dup(fd);
	if (d->fd < 0) {
		err = -errno;
		goto err_out;
	}
	err = open_handle(d, max_bytes);
	if (err)
		goto err_out;
	d->section_bytes = debug_bytes(d->elf) + d->compressed_bytes;
	if (max_bytes && d->section_bytes > max_bytes) {
		err = -E2BIG;
		goto err_out;
	}
	err = -EINVAL;
	if (index_units(d) || !d->nr_ranges)
		goto err_out;
	return d;

err_out:
	sym_dwarf__free(d);
	errno = -err;
	return NULL;
}

size_t sym_dwarf__release(struct sym_dwarf *d)
{
	if (!d || !d->dw)
		return 0;
	close_handle(d);
	return d->section_bytes;
}

void sym_dwarf__free(struct sym_dwarf *d)
{
	if (!d)
		return;
	sym_dwarf__release(d);
	if (d->fd >= 0)
		close(d->fd);
	for (size_t i = 0; d->units && i < d->nr_units; i++)
		free(d->units[i].scopes);
	free(d->units);
	free(d->ranges);
	free(d);
}

size_t sym_dwarf__bytes(const struct sym_dwarf *d)
{
	if (!d)
		return 0;
	return sizeof(*d) + d->nr_ranges * sizeof(*d->ranges) + d->nr_units * sizeof(*d->units) +
	       d->scope_bytes + (d->dw ? d->section_bytes : 0);
}

/* Drop the scope index of unit u. */
static void drop_unit(struct sym_dwarf *d, struct unit_index *u)
{
	d->scope_bytes -= u->cap * sizeof(*u->scopes);
	free(u->scopes);
	u->scopes = NULL;
	u->nr = u->cap = 0;
	u->built = false;
}

/* Keep the scope indexes within SYM_DWARF_MAX_SCOPE_BYTES, dropping the least recently used
 * first, never keep (the one just built). */
static void trim_units(struct sym_dwarf *d, const struct unit_index *keep)
{
	while (d->scope_bytes > SYM_DWARF_MAX_SCOPE_BYTES) {
		struct unit_index *victim = NULL;
		size_t i;

		for (i = 0; i < d->nr_units; i++) {
			struct unit_index *u = &d->units[i];

			if (u != keep && u->cap && (!victim || u->last_used < victim->last_used))
				victim = u;
		}
		if (!victim)
			return;
		drop_unit(d, victim);
	}
}

/* The CU whose range covers pc: the last range starting at or below pc that contains it. */
static const struct cu_range *find_cu(const struct sym_dwarf *d, uint64_t pc, Dwarf_Die *cudie)
{
	size_t lo, k;

	lo = sym_upper_bound(d->ranges, d->nr_ranges, sizeof(*d->ranges), pc);
	/* Ranges rarely nest (a CU of assembly inside another's range); look back a few. */
	for (k = 0; k < 8 && lo > k; k++) {
		const struct cu_range *r = &d->ranges[lo - 1 - k];

		if (pc < r->hi)
			return dwarf_offdie(d->dw, r->cu, cudie) ? r : NULL;
	}
	return NULL;
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

static int cmp_scope(const void *a, const void *b)
{
	const struct scope *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	/* At one start, the outer scope first: the inner one is found first looking back. */
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

struct walk {
	struct unit_index *u;
	int err;
};

/* Collect the function scopes under die (its children and below), depth-first. */
static void walk_scopes(struct walk *w, Dwarf_Die *die, int32_t parent, uint32_t depth)
{
	Dwarf_Die child;

	if (depth > 256 || w->err || dwarf_child(die, &child))
		return;
	do {
		int tag = dwarf_tag(&child);
		int32_t self = parent;

		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
			Dwarf_Addr base, lo, hi;
			ptrdiff_t it = 0;

			while ((it = dwarf_ranges(&child, it, &base, &lo, &hi)) > 0) {
				if (hi <= lo)
					continue;
				if (w->u->nr >= SYM_MAX_SYMBOLS ||
				    sym_grow((void **)&w->u->scopes, &w->u->cap, w->u->nr + 1,
					     sizeof(*w->u->scopes))) {
					w->err = -ENOMEM;
					return;
				}
				if (self == parent)
					self = (int32_t)w->u->nr;
				w->u->scopes[w->u->nr] =
					(struct scope){ lo,	hi,    dwarf_dieoffset(&child),
							parent, depth, (uint32_t)w->u->nr };
				w->u->nr++;
			}
		}
		/* Lexical blocks, classes and namespaces may hold functions too. */
		if (tag != DW_TAG_formal_parameter && tag != DW_TAG_variable &&
		    tag != DW_TAG_base_type && tag != DW_TAG_member)
			walk_scopes(w, &child, self, depth + 1);
	} while (!w->err && dwarf_siblingof(&child, &child) == 0);
}

static int build_unit(struct sym_dwarf *d, struct unit_index *u, Dwarf_Die *cudie)
{
	struct walk w = { .u = u };
	int32_t *where;
	size_t i;

	u->built = true;
	walk_scopes(&w, cudie, -1, 0);
	d->scope_bytes += u->cap * sizeof(*u->scopes);
	if (w.err) {
		drop_unit(d, u);
		return w.err;
	}
	if (!u->nr)
		return 0;
	/* Sort, then point parents at their new places. */
	where = malloc(u->nr * sizeof(*where));
	if (!where) {
		drop_unit(d, u);
		return -ENOMEM;
	}
	qsort(u->scopes, u->nr, sizeof(*u->scopes), cmp_scope);
	for (i = 0; i < u->nr; i++)
		where[u->scopes[i].id] = (int32_t)i;
	for (i = 0; i < u->nr; i++)
		if (u->scopes[i].parent >= 0)
			u->scopes[i].parent = where[u->scopes[i].parent];
	free(where);
	trim_units(d, u);
	return 0;
}

/* The innermost function scope containing pc: the one with the largest start (deepest on
 * ties) among those containing it, since scopes nest. */
static const struct scope *innermost_scope(const struct unit_index *u, uint64_t pc)
{
	size_t lo, k;

	lo = sym_upper_bound(u->scopes, u->nr, sizeof(*u->scopes), pc);
	/* Looking back past siblings that ended before pc, to the first scope around it. */
	for (k = lo; k-- > 0;)
		if (pc < u->scopes[k].hi)
			return &u->scopes[k];
	return NULL;
}

int sym_dwarf__lookup(struct sym_dwarf *d, uint64_t pc, struct sym_dwarf_frame *frames, int max)
{
	const struct cu_range *r;
	const struct scope *sc;
	struct unit_index *u;
	Dwarf_Die cudie, die;
	Dwarf_Attribute attr;
	const char *comp_dir, *file = NULL;
	Dwarf_Files *files = NULL;
	size_t nr_files = 0;
	Dwarf_Line *row;
	uint32_t line = 0;
	int n = 0, lineno;

	if (d->unusable)
		return 0;
	if (!d->dw && open_handle(d, d->max_bytes)) {
		d->unusable = true; /* the file changed under its descriptor? */
		return 0;
	}
	r = find_cu(d, pc, &cudie);
	if (!r)
		return 0;
	u = &d->units[r->unit];
	u->last_used = ++d->tick;
	if (!u->built && build_unit(d, u, &cudie))
		return 0;
	sc = innermost_scope(u, pc);
	if (!sc)
		return 0;
	if (dwarf_getsrcfiles(&cudie, &files, &nr_files))
		files = NULL;
	comp_dir = dwarf_formstring(dwarf_attr(&cudie, DW_AT_comp_dir, &attr));
	row = dwarf_getsrc_die(&cudie, pc);
	if (row) {
		file = dwarf_linesrc(row, NULL, NULL);
		if (!dwarf_lineno(row, &lineno) && lineno > 0)
			line = (uint32_t)lineno;
	}
	while (sc && n < max) {
		Dwarf_Addr entry = 0;
		int tag;

		if (!dwarf_offdie(d->dw, sc->die, &die))
			break;
		tag = dwarf_tag(&die);
		frames[n].name = dwarf_diename(&die);
		frames[n].linkage_name = linkage_name(&die);
		frames[n].file = file;
		frames[n].comp_dir = comp_dir;
		frames[n].line = line;
		frames[n].start = dwarf_entrypc(&die, &entry) ? 0 : entry;
		if (!frames[n].name && !frames[n].linkage_name)
			frames[n].name = "??";
		n++;
		if (tag != DW_TAG_inlined_subroutine)
			break;
		/* The enclosing frame is at this inlined call's site. */
		file = call_file(&die, files, nr_files);
		line = call_line(&die);
		sc = sc->parent >= 0 ? &u->scopes[sc->parent] : NULL;
	}
	return n;
}
