// SPDX-License-Identifier: Apache-2.0
/*
 * Go's own symbol table, the pclntab: names, file:line, inlined frames and stack deltas of
 * every Go function, present in every Go binary because the runtime needs it (tracebacks,
 * the garbage collector's stack scans), so also in those linked with -ldflags='-s -w', which
 * drop .symtab and DWARF.
 *
 * The format is Go's, described by its users, not by a specification: the runtime's
 * src/runtime/symtab.go (pcHeader, moduledata, pcvalue(), step(), funcdata()) and
 * runtime2.go (_func), the linker's src/cmd/link/internal/ld/pcln.go, and debug/gosym. Two
 * layouts are read, little endian with 8-byte pointers:
 *
 *   magic 0xfffffff0  Go 1.18 and 1.19: _func is 40 bytes, an inlined call 20
 *   magic 0xfffffff1  Go 1.20 and later: _func gained startLine (44 bytes), an inlined call
 *                     is 16 bytes; moduledata gained covctrs/ecovctrs before gofunc
 *
 * Older tables (0xfffffffb Go 1.2-1.15, 0xfffffffa Go 1.16-1.17) are refused with -ENOTSUP.
 *
 * The table (pcHeader, then funcnametab, cutab, filetab, pctab and the functab with the _func
 * records) is found by its section, .gopclntab, or, in a file without section headers, by
 * its header in a read-only segment, confirmed by the runtime's moduledata (in a writable
 * segment) pointing to it. Inline trees (FUNCDATA_InlTree) are not in the table: they are
 * offsets from moduledata.gofunc (go:func.*, in .rodata), so they are read when moduledata
 * is found; the bytes from there on are copied as well.
 *
 * A pc-value table (pcsp, pcfile, pcln, pcdata) is a sequence of (value delta, pc delta)
 * pairs of varints, the value delta zig-zag encoded, starting from value -1 at the entry;
 * each value holds up to the pc reached by its pair. A 0 value delta ends the table (except
 * in the first pair).
 *
 * Every byte is hostile: every offset is checked against the region it must lie in, every
 * string must end within its table, decoding loops are bounded by the function's extent.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer_internal.h"

#define GO118_MAGIC 0xfffffff0u
#define GO120_MAGIC 0xfffffff1u
#define GO116_MAGIC 0xfffffffau
#define GO12_MAGIC  0xfffffffbu

#define HEADER_SIZE   72	   /* magic, pads, minLC, ptrSize, then 8 words */
#define MAX_FUNCS     (4U << 20)   /* functions read per table */
#define MAX_SEGMENT   (1ULL << 30) /* bytes of a segment copied */
#define MAX_PC_STEPS  (1U << 20)   /* pairs decoded per pc-value table */
#define MAX_INLINE    32	   /* inlined frames followed per pc */
#define FUNC_FLAG_TOP 1		   /* funcFlag_TOPFRAME: the outermost frame */
#define FUNC_FLAG_SPW 2		   /* funcFlag_SPWRITE: writes SP, cannot be unwound */
#define FUNC_FLAG_ASM 4		   /* funcFlag_ASM: written in assembly */
#define PCDATA_INL    2		   /* _PCDATA_InlTreeIndex */
#define FUNCDATA_INL  3		   /* _FUNCDATA_InlTree */

/* A part of the copied segment: [off, off + len) of sym_gopcln.seg. */
struct region {
	size_t off, len;
};

struct sym_gopcln {
	uint8_t *seg;	    /* the read-only segment holding the table (file bytes, copied) */
	size_t seg_size;    /* bytes in seg */
	uint64_t seg_vaddr; /* ELF address of seg[0] */
	uint32_t magic;
	uint8_t min_lc; /* pc quantum */
	uint32_t nfunc;
	uint64_t text_start; /* entry offsets are from here */
	struct region tab, funcname, cutab, filetab, pctab, pcln;
	uint64_t gofunc; /* ELF address of go:func.*, 0 when unknown */
	uint8_t *fdata;	 /* its bytes (copied) up to the end of its segment or the table */
	size_t fdata_size;
	size_t func_size; /* of a _func record without its pcdata and funcdata */
	size_t inl_size;  /* of an inlinedCall */
	size_t inl_name;  /* offset of nameOff in an inlinedCall */
	size_t inl_ppc;	  /* offset of parentPc in an inlinedCall */
	size_t md_gofunc; /* offset of gofunc in moduledata */
};

/* One _func record, its fields read and checked. */
struct gofunc {
	uint64_t entry, end; /* ELF addresses, [entry, end) */
	int32_t nameoff;
	uint32_t pcsp, pcfile, pcln, npcdata, cu_offset;
	uint8_t flag, nfuncdata;
	size_t rec; /* offset of the record in seg */
};

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

/* The u32 at byte off of region r, or false when it does not fit. */
static bool rd32(const struct sym_gopcln *g, const struct region *r, uint64_t off, uint32_t *v)
{
	if (off > r->len || r->len - off < 4)
		return false;
	*v = get32(g->seg + r->off + off);
	return true;
}

/* The NUL-terminated string at byte off of region r, or NULL. */
static const char *cstr(const struct sym_gopcln *g, const struct region *r, uint64_t off)
{
	const char *s;

	if (off >= r->len)
		return NULL;
	s = (const char *)g->seg + r->off + off;
	return memchr(s, 0, r->len - off) ? s : NULL;
}

/* ---- locating the table ---- */

/* A copy of the file bytes of the PT_LOAD segment covering vaddr. */
static int copy_segment(Elf *elf, uint64_t vaddr, struct sym_gopcln *g)
{
	size_t nr = 0, i;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &nr))
		return -EINVAL;
	for (i = 0; i < nr; i++) {
		Elf_Data *d;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr < ph.p_vaddr || vaddr - ph.p_vaddr >= ph.p_filesz)
			continue;
		if (ph.p_filesz > MAX_SEGMENT)
			return -E2BIG;
		d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_BYTE);
		if (!d || !d->d_buf || d->d_size != ph.p_filesz)
			return -EINVAL;
		g->seg = malloc(d->d_size);
		if (!g->seg)
			return -ENOMEM;
		memcpy(g->seg, d->d_buf, d->d_size);
		g->seg_size = d->d_size;
		g->seg_vaddr = ph.p_vaddr;
		return 0;
	}
	return -ENOENT;
}

/* Read and check the header at seg offset off, with at most avail bytes of table. */
static int parse_header(struct sym_gopcln *g, size_t off, size_t avail)
{
	const uint8_t *h = g->seg + off;
	uint64_t w[8], prev;
	int i;

	if (avail < HEADER_SIZE)
		return -EINVAL;
	g->magic = get32(h);
	if (g->magic == GO12_MAGIC || g->magic == GO116_MAGIC)
		return -ENOTSUP; /* Go 1.2 to 1.17 */
	if (g->magic != GO118_MAGIC && g->magic != GO120_MAGIC)
		return -EINVAL;
	if (h[4] || h[5] || (h[6] != 1 && h[6] != 2 && h[6] != 4))
		return -EINVAL;
	if (h[7] != 8)
		return -ENOTSUP; /* 32-bit */
	g->min_lc = h[6];
	for (i = 0; i < 8; i++)
		w[i] = get64(h + 8 + 8 * i);
	/* nfunc, nfiles, textStart, then the offsets of funcnametab, cutab, filetab, pctab and
	 * the functab, in that order in the table. */
	if (!w[0] || w[0] > MAX_FUNCS)
		return -EINVAL;
	prev = HEADER_SIZE;
	for (i = 3; i < 8; i++) {
		if (w[i] < prev || w[i] > avail)
			return -EINVAL;
		prev = w[i];
	}
	g->nfunc = (uint32_t)w[0];
	g->text_start = w[2];
	g->tab = (struct region){ off, avail };
	g->funcname = (struct region){ off + w[3], w[4] - w[3] };
	g->cutab = (struct region){ off + w[4], w[5] - w[4] };
	g->filetab = (struct region){ off + w[5], w[6] - w[5] };
	g->pctab = (struct region){ off + w[6], w[7] - w[6] };
	g->pcln = (struct region){ off + w[7], avail - w[7] };
	/* The functab: nfunc + 1 (entry offset, record offset) pairs, the last the end. */
	if (g->pcln.len / 8 < (uint64_t)g->nfunc + 1)
		return -EINVAL;
	if (g->magic == GO118_MAGIC) {
		g->func_size = 40;
		g->inl_size = 20;
		g->inl_name = 12;
		g->inl_ppc = 16;
		g->md_gofunc = 304;
	} else {
		g->func_size = 44;
		g->inl_size = 16;
		g->inl_name = 4;
		g->inl_ppc = 8;
		g->md_gofunc = 320;
	}
	return 0;
}

/*
 * Find the runtime's moduledata for the table at tab_vaddr in the writable segments: its
 * first word points to the table, its funcnametab to the table's, its ftab has nfunc + 1
 * entries and its text is the table's textStart. Sets g->gofunc. 0 or -ENOENT.
 */
static int find_moduledata(Elf *elf, struct sym_gopcln *g, uint64_t tab_vaddr)
{
	size_t nr = 0, i, off;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &nr))
		return -ENOENT;
	for (i = 0; i < nr; i++) {
		const uint8_t *p;
		Elf_Data *d;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_W) || !ph.p_filesz || ph.p_filesz > MAX_SEGMENT)
			continue;
		d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_BYTE);
		if (!d || !d->d_buf || d->d_size != ph.p_filesz)
			continue;
		p = d->d_buf;
		for (off = 0; off + g->md_gofunc + 8 <= d->d_size; off += 8) {
			uint64_t gofunc;

			if (get64(p + off) != tab_vaddr ||
			    get64(p + off + 8) != tab_vaddr + (g->funcname.off - g->tab.off) ||
			    get64(p + off + 136) != (uint64_t)g->nfunc + 1 ||
			    get64(p + off + 176) != g->text_start)
				continue;
			gofunc = get64(p + off + g->md_gofunc);
			g->gofunc = gofunc;
			return 0;
		}
	}
	return -ENOENT;
}

static const char *section_name(Elf *elf, Elf_Scn *scn, GElf_Shdr *shdr)
{
	size_t shstrndx;

	if (!gelf_getshdr(scn, shdr) || elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	return elf_strptr(elf, shstrndx, shdr->sh_name);
}

/* The table by its section; -ENOENT when there is none. */
static int open_by_section(Elf *elf, struct sym_gopcln *g, uint64_t *tab_vaddr)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	const char *name;
	int err;

	while ((scn = elf_nextscn(elf, scn))) {
		name = section_name(elf, scn, &shdr);
		/* .data.rel.ro.gopclntab in position-independent builds. */
		if (!name || (strcmp(name, ".gopclntab") && strcmp(name, ".data.rel.ro.gopclntab")))
			continue;
		if (shdr.sh_type == SHT_NOBITS || !(shdr.sh_flags & SHF_ALLOC) || !shdr.sh_size)
			return -EINVAL;
		err = copy_segment(elf, shdr.sh_addr, g);
		if (err)
			return err == -ENOENT ? -EINVAL : err;
		if (shdr.sh_size > g->seg_size - (shdr.sh_addr - g->seg_vaddr))
			return -EINVAL;
		*tab_vaddr = shdr.sh_addr;
		return parse_header(g, shdr.sh_addr - g->seg_vaddr, shdr.sh_size);
	}
	return -ENOENT;
}

/*
 * A file without section headers: look for a table header in each read-only segment that
 * the runtime's moduledata points to (peers search the same way: the OpenTelemetry
 * profiler's pclntab lookup in its Go support, for one).
 */
static int open_by_scan(Elf *elf, struct sym_gopcln *g, uint64_t *tab_vaddr)
{
	size_t nr = 0, i, off;
	int err, best = -ENOENT;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &nr))
		return -EINVAL;
	for (i = 0; i < nr; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    (ph.p_flags & (PF_W | PF_X)) || !ph.p_filesz)
			continue;
		free(g->seg);
		g->seg = NULL;
		err = copy_segment(elf, ph.p_vaddr, g);
		if (err)
			return err;
		for (off = 0; off + HEADER_SIZE <= g->seg_size; off += 8) {
			uint32_t m = get32(g->seg + off);

			if ((m & 0xfffffff0u) != 0xfffffff0u || g->seg[off + 4] || g->seg[off + 5])
				continue;
			err = parse_header(g, off, g->seg_size - off);
			if (err) {
				if (err == -ENOTSUP)
					best = err;
				continue;
			}
			*tab_vaddr = g->seg_vaddr + off;
			if (!find_moduledata(elf, g, *tab_vaddr))
				return 0;
		}
	}
	return best;
}

static void gopcln_free(struct sym_gopcln *g)
{
	if (!g)
		return;
	free(g->fdata);
	free(g->seg);
	free(g);
}

/* ---- functions ---- */

/* Function i: its record, checked. */
static int read_func(const struct sym_gopcln *g, uint32_t i, struct gofunc *f)
{
	uint32_t entryoff, funcoff, next, rec_entry, u;
	const struct region *r = &g->pcln;
	const uint8_t *p;
	size_t rec;

	if (i >= g->nfunc || !rd32(g, r, 8ULL * i, &entryoff) ||
	    !rd32(g, r, 8ULL * i + 4, &funcoff) || !rd32(g, r, 8ULL * (i + 1), &next))
		return -EINVAL;
	if (next < entryoff || funcoff > r->len || r->len - funcoff < g->func_size)
		return -EINVAL;
	rec = r->off + funcoff;
	p = g->seg + rec;
	rec_entry = get32(p);
	if (rec_entry != entryoff)
		return -EINVAL;
	f->entry = g->text_start + entryoff;
	f->end = g->text_start + next;
	f->nameoff = (int32_t)get32(p + 4);
	f->pcsp = get32(p + 16);
	f->pcfile = get32(p + 20);
	f->pcln = get32(p + 24);
	f->npcdata = get32(p + 28);
	f->cu_offset = get32(p + 32);
	u = (uint32_t)g->func_size - 4; /* funcID, flag, pad, nfuncdata */
	f->flag = p[u + 1];
	f->nfuncdata = p[u + 3];
	f->rec = rec;
	if (f->npcdata > 256 ||
	    r->len - funcoff - g->func_size < 4ULL * (f->npcdata + f->nfuncdata))
		return -EINVAL;
	return 0;
}

/* Index of the function whose [entry, next entry) covers addr, or -ENOENT. */
static int find_func(const struct sym_gopcln *g, uint64_t addr, struct gofunc *f)
{
	uint32_t lo = 0, hi = g->nfunc, v;

	if (addr < g->text_start || addr - g->text_start > UINT32_MAX)
		return -ENOENT;
	v = (uint32_t)(addr - g->text_start);
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2, e;

		if (!rd32(g, &g->pcln, 8ULL * mid, &e))
			return -EINVAL;
		if (e <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -ENOENT;
	if (read_func(g, lo - 1, f))
		return -EINVAL;
	return addr < f->end ? 0 : -ENOENT;
}

/* The name at nameoff in funcnametab, or NULL. (The first function's name is at 0.) */
static const char *func_name(const struct sym_gopcln *g, int32_t nameoff)
{
	if (nameoff < 0)
		return NULL;
	return cstr(g, &g->funcname, (uint32_t)nameoff);
}

/* Read a varint (at most 5 bytes) at *p within [*p, end). */
static bool varint(const uint8_t **p, const uint8_t *end, uint32_t *v)
{
	uint32_t x = 0;
	int shift;

	for (shift = 0; shift < 35 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;

		x |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return true;
		}
	}
	return false;
}

/*
 * Walk the pc-value table at pctab offset off for function f: calls fn(ctx, value, lo, hi)
 * for each run [lo, hi) of one value (ELF addresses, within f), stopping when fn returns
 * non-zero (that is returned). 0 at the end, -EINVAL on a malformed table. off 0: no table.
 */
typedef int (*pcrun_fn)(void *ctx, int32_t value, uint64_t lo, uint64_t hi);

static int pc_runs(const struct sym_gopcln *g, const struct gofunc *f, uint32_t off, pcrun_fn fn,
		   void *ctx)
{
	const uint8_t *p, *end;
	uint64_t pc = f->entry;
	int32_t val = -1;
	uint32_t n;

	if (!off || off >= g->pctab.len)
		return -EINVAL;
	p = g->seg + g->pctab.off + off;
	end = g->seg + g->pctab.off + g->pctab.len;
	for (n = 0; n < MAX_PC_STEPS && pc < f->end; n++) {
		uint32_t uv, pcd;
		uint64_t next;
		int r;

		if (!varint(&p, end, &uv))
			return -EINVAL;
		if (!uv && n)
			return 0;
		if (!varint(&p, end, &pcd))
			return -EINVAL;
		/* Zig-zag; the sum wraps as Go's int32 does (a hostile table may overflow). */
		val = (int32_t)((uint32_t)val + (-(uv & 1) ^ (uv >> 1)));
		next = pc + (uint64_t)pcd * g->min_lc;
		if (next > f->end)
			next = f->end;
		if (next > pc) {
			r = fn(ctx, val, pc, next);
			if (r)
				return r;
		}
		pc = next;
	}
	return 0;
}

struct value_at {
	uint64_t pc;
	int32_t value;
	bool found;
};

static int take_value(void *ctx, int32_t value, uint64_t lo, uint64_t hi)
{
	struct value_at *v = ctx;

	if (v->pc < lo || v->pc >= hi)
		return 0;
	v->value = value;
	v->found = true;
	return 1;
}

/* The value of table off at pc, or -1 when it has none there. */
static int32_t pc_value(const struct sym_gopcln *g, const struct gofunc *f, uint32_t off,
			uint64_t pc)
{
	struct value_at v = { .pc = pc };

	if (pc_runs(g, f, off, take_value, &v) < 0 || !v.found)
		return -1;
	return v.value;
}

/* The pcdata table i of f, 0 when it has none. */
static uint32_t pcdata_off(const struct sym_gopcln *g, const struct gofunc *f, uint32_t i)
{
	if (i >= f->npcdata)
		return 0;
	return get32(g->seg + f->rec + g->func_size + 4 * i);
}

/* The file and line of pc in f (NULL, 0 when unknown). */
static void file_line(const struct sym_gopcln *g, const struct gofunc *f, uint64_t pc,
		      const char **file, uint32_t *line)
{
	int32_t fileno, ln;
	uint32_t foff;

	*file = NULL;
	*line = 0;
	ln = pc_value(g, f, f->pcln, pc);
	if (ln > 0)
		*line = (uint32_t)ln;
	fileno = pc_value(g, f, f->pcfile, pc);
	if (fileno < 0)
		return;
	if (!rd32(g, &g->cutab, 4ULL * ((uint64_t)f->cu_offset + (uint32_t)fileno), &foff) ||
	    foff == UINT32_MAX)
		return;
	*file = cstr(g, &g->filetab, foff);
}

/* The inlined call ix of f's inline tree: its name offset and parent pc. */
static bool inlined_call(const struct sym_gopcln *g, const struct gofunc *f, int32_t ix,
			 int32_t *nameoff, int32_t *parent_pc)
{
	uint32_t off;
	uint64_t at;

	if (!g->fdata || ix < 0 || f->nfuncdata <= FUNCDATA_INL)
		return false;
	off = get32(g->seg + f->rec + g->func_size + 4 * (f->npcdata + FUNCDATA_INL));
	if (off == UINT32_MAX)
		return false;
	at = off + (uint64_t)ix * g->inl_size;
	if (at > g->fdata_size || g->fdata_size - at < g->inl_size)
		return false;
	*nameoff = (int32_t)get32(g->fdata + at + g->inl_name);
	*parent_pc = (int32_t)get32(g->fdata + at + g->inl_ppc);
	return true;
}

/*
 * Copy the function data from go:func.* on (the inline trees), to the end of its segment's
 * file bytes or to the table if that follows in the same segment. No inline trees when
 * that cannot be read.
 */
static void copy_funcdata(Elf *elf, struct sym_gopcln *g, uint64_t tab_vaddr)
{
	size_t nr = 0, i;
	GElf_Phdr ph;

	if (!g->gofunc || elf_getphdrnum(elf, &nr))
		goto none;
	for (i = 0; i < nr; i++) {
		uint64_t end;
		Elf_Data *d;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    g->gofunc < ph.p_vaddr || g->gofunc - ph.p_vaddr >= ph.p_filesz)
			continue;
		end = ph.p_vaddr + ph.p_filesz;
		if (tab_vaddr > g->gofunc && tab_vaddr < end)
			end = tab_vaddr;
		if (end - g->gofunc > MAX_SEGMENT)
			goto none;
		d = elf_getdata_rawchunk(elf, (int64_t)(ph.p_offset + (g->gofunc - ph.p_vaddr)),
					 end - g->gofunc, ELF_T_BYTE);
		if (!d || !d->d_buf || d->d_size != end - g->gofunc)
			goto none;
		g->fdata = malloc(d->d_size);
		if (!g->fdata)
			goto none;
		memcpy(g->fdata, d->d_buf, d->d_size);
		g->fdata_size = d->d_size;
		return;
	}
none:
	g->gofunc = 0;
}

/* Keep of the copied segment only the table. */
static int trim(struct sym_gopcln *g)
{
	size_t lo = g->tab.off, hi = g->tab.off + g->tab.len;
	struct region *r[] = { &g->tab, &g->funcname, &g->cutab, &g->filetab, &g->pctab, &g->pcln };
	uint8_t *keep;
	size_t i;

	if (!lo && hi == g->seg_size)
		return 0;
	keep = malloc(hi - lo);
	if (!keep)
		return -ENOMEM;
	memcpy(keep, g->seg + lo, hi - lo);
	free(g->seg);
	g->seg = keep;
	g->seg_size = hi - lo;
	g->seg_vaddr += lo;
	for (i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		r[i]->off -= lo;
	return 0;
}

/* The functab's entries never go down (lookups search it by halves). */
static int check_sorted(const struct sym_gopcln *g)
{
	uint32_t i, prev = 0, e;

	for (i = 0; i <= g->nfunc; i++) {
		if (!rd32(g, &g->pcln, 8ULL * i, &e) || e < prev)
			return -EINVAL;
		prev = e;
	}
	return 0;
}

/* ---- the interface (symbolizer_internal.h) ---- */

struct sym_gopcln *sym_gopcln__open(Elf *elf)
{
	struct sym_gopcln *g = calloc(1, sizeof(*g));
	uint64_t tab_vaddr = 0;
	size_t shnum = 0;
	GElf_Ehdr ehdr;
	int err;

	if (!g)
		return NULL;
	if (!gelf_getehdr(elf, &ehdr) || ehdr.e_ident[EI_DATA] != ELFDATA2LSB) {
		err = -EINVAL;
		goto err_out;
	}
	if (ehdr.e_ident[EI_CLASS] != ELFCLASS64) {
		err = -ENOTSUP;
		goto err_out;
	}
	err = open_by_section(elf, g, &tab_vaddr);
	if (err == -ENOENT && !elf_getshdrnum(elf, &shnum) && shnum == 0)
		err = open_by_scan(elf, g, &tab_vaddr);
	else if (!err && find_moduledata(elf, g, tab_vaddr))
		g->gofunc = 0; /* names, files and lines; no inline trees */
	if (err)
		goto err_out;
	err = check_sorted(g);
	if (!err)
		err = trim(g);
	if (err)
		goto err_out;
	copy_funcdata(elf, g, tab_vaddr);
	/* A position-independent build leaves textStart to a relocation: take .text's place,
	 * the lowest executable segment, which is where the linker starts the text. */
	if (!g->text_start) {
		size_t nr = 0, i;
		GElf_Phdr ph;

		if (elf_getphdrnum(elf, &nr))
			nr = 0;
		for (i = 0; i < nr; i++)
			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    (ph.p_flags & PF_X) && (!g->text_start || ph.p_vaddr < g->text_start))
				g->text_start = ph.p_vaddr;
		if (!g->text_start) {
			err = -EINVAL;
			goto err_out;
		}
	}
	return g;

err_out:
	gopcln_free(g);
	errno = -err;
	return NULL;
}

void sym_gopcln__free(struct sym_gopcln *g)
{
	gopcln_free(g);
}

size_t sym_gopcln__bytes(const struct sym_gopcln *g)
{
	return g ? sizeof(*g) + g->seg_size + g->fdata_size : 0;
}

uint32_t sym_gopcln__version(const struct sym_gopcln *g)
{
	return g->magic == GO118_MAGIC ? 118 : 120;
}

bool sym_gopcln__has_inline(const struct sym_gopcln *g)
{
	return g->fdata != NULL;
}

uint32_t sym_gopcln__count(const struct sym_gopcln *g)
{
	return g->nfunc;
}

int sym_gopcln__func(const struct sym_gopcln *g, uint32_t i, uint64_t *entry, uint64_t *end,
		     const char **name)
{
	struct gofunc f;
	int err = read_func(g, i, &f);

	if (err)
		return err;
	*entry = f.entry;
	*end = f.end;
	*name = func_name(g, f.nameoff);
	return *name ? 0 : -EINVAL;
}

int sym_gopcln__lookup(const struct sym_gopcln *g, uint64_t pc, struct sym_frame *frames, int max)
{
	struct gofunc f;
	uint64_t at = pc;
	int32_t ix, nameoff, ppc;
	const char *name;
	int n = 0, err;

	if (max <= 0)
		return -EINVAL;
	err = find_func(g, pc, &f);
	if (err)
		return err == -ENOENT ? 0 : err;
	name = func_name(g, f.nameoff);
	if (!name)
		return 0;
	/* Innermost first: each inlined call at the position of the code, then, at its call
	 * site (its parent pc), the function it was inlined into. */
	ix = pc_value(g, &f, pcdata_off(g, &f, PCDATA_INL), at);
	while (n < max - 1 && n < MAX_INLINE && inlined_call(g, &f, ix, &nameoff, &ppc)) {
		const char *inl = func_name(g, nameoff);

		if (!inl || ppc < 0 || (uint64_t)ppc >= f.end - f.entry)
			break;
		memset(&frames[n], 0, sizeof(frames[n]));
		frames[n].name = frames[n].system_name = inl;
		file_line(g, &f, at, &frames[n].file, &frames[n].line);
		n++;
		at = f.entry + (uint32_t)ppc;
		ix = pc_value(g, &f, pcdata_off(g, &f, PCDATA_INL), at);
	}
	memset(&frames[n], 0, sizeof(frames[n]));
	frames[n].name = frames[n].system_name = name;
	file_line(g, &f, at, &frames[n].file, &frames[n].line);
	frames[n].start = f.entry;
	return n + 1;
}

/* ---- unwind rows from pcsp ---- */

struct rows {
	struct sym_unwind_table *t;
	size_t cap;
	const struct sym_gopcln *g;
	const uint8_t *text; /* the executable segment's bytes */
	uint64_t text_vaddr;
	size_t text_size;
	uint64_t bp_saved; /* from here (in the current function) rbp is at CFA - 16 */
	uint64_t bp_set;   /* from here rbp is the frame pointer (in full frames) */
	int32_t fs;	   /* the full frame's sp delta (rbp stored, not pushed) */
	bool pushed;	   /* rbp was pushed (PUSHQ BP), not stored */
	bool asm_func;	   /* written in assembly: rbp may be used otherwise */
	int err;
};

static int push(struct rows *r, uint64_t pc, uint8_t cfa, int32_t cfa_off, uint8_t rbp)
{
	struct sym_unwind_row row = {
		.pc = pc, .cfa_rule = cfa, .cfa_off = cfa_off, .rbp_rule = rbp
	};
	int err;

	if (rbp == SYM_RBP_AT_CFA)
		row.rbp_off = -16;
	if (r->t->nr_rows >= (16U << 20))
		return -E2BIG;
	err = sym_grow((void **)&r->t->rows, &r->cap, r->t->nr_rows + 1, sizeof(row));
	if (err)
		return err;
	r->t->rows[r->t->nr_rows++] = row;
	return 0;
}

/* The text bytes [pc, pc + len), or NULL when they are not in the executable segment. */
static const uint8_t *text_at(const struct rows *r, uint64_t pc, size_t len)
{
	if (!r->text || pc < r->text_vaddr || pc - r->text_vaddr > r->text_size ||
	    r->text_size - (pc - r->text_vaddr) < len)
		return NULL;
	return r->text + (pc - r->text_vaddr);
}

/*
 * The length of the instruction at pc if it is `op BP, d(SP)`-shaped: REX.W, op (0x89 MOVQ
 * BP to memory, 0x8b MOVQ memory to BP, 0x8d LEAQ), a ModRM naming rbp and an SIB for rsp,
 * with no, an 8-bit or a 32-bit displacement as the assembler picks for d. 0 otherwise.
 */
static size_t bp_sp_insn(const struct rows *r, uint64_t pc, uint8_t op, int32_t d)
{
	const uint8_t *b;

	if (!d && (b = text_at(r, pc, 4)) && b[0] == 0x48 && b[1] == op && b[2] == 0x2c &&
	    b[3] == 0x24)
		return 4;
	if (d > 0 && d < 128 && (b = text_at(r, pc, 5)) && b[0] == 0x48 && b[1] == op &&
	    b[2] == 0x6c && b[3] == 0x24 && b[4] == d)
		return 5;
	if (d >= 128 && (b = text_at(r, pc, 8)) && b[0] == 0x48 && b[1] == op && b[2] == 0xac &&
	    b[3] == 0x24 && (int32_t)get32(b + 4) == d)
		return 8;
	return 0;
}

/*
 * The amd64 prologue's save of rbp (cmd/internal/obj/x86/obj6.go), at pc, the first pc with
 * a frame of sp delta sp: either pushed (PUSHQ BP, then MOVQ SP, BP: the frame 8 bytes so
 * far; seen in Go 1.23 and 1.24) or stored at the top of the frame just reserved (SUBQ $fs,
 * SP; MOVQ BP, fs-8(SP); LEAQ fs-8(SP), BP; Go 1.19). Sets where rbp is saved from and, for compiled
 * code, where it becomes the frame pointer; neither when the code is not one of those.
 */
static void find_prologue(struct rows *r, uint64_t pc, int32_t sp)
{
	const uint8_t *b;
	size_t n;

	if (sp == 8 && (b = text_at(r, pc - 1, 1)) && b[0] == 0x55) {
		r->bp_saved = pc;
		r->pushed = true;
		if (!r->asm_func && (b = text_at(r, pc, 3)) && b[0] == 0x48 && b[1] == 0x89 &&
		    b[2] == 0xe5)
			r->bp_set = pc + 3;
		return;
	}
	n = bp_sp_insn(r, pc, 0x89, sp - 8);
	if (!n)
		return;
	r->bp_saved = pc + n;
	r->fs = sp;
	if (!r->asm_func && (n = bp_sp_insn(r, r->bp_saved, 0x8d, sp - 8)))
		r->bp_set = r->bp_saved + n;
}

/*
 * Up to where, in a run [lo, hi) of the full frame fs of a stored (not pushed) rbp, rbp is
 * the frame pointer: the epilogue MOVQ fs-8(SP), BP; ADDQ $fs, SP ending at hi restores the
 * caller's rbp first. hi when no epilogue ends the run; lo when an ADDQ ends it without
 * that restore (claim nothing then).
 */
static uint64_t fp_end(const struct rows *r, uint64_t lo, uint64_t hi, int32_t fs)
{
	static const size_t lens[] = { 4, 5, 8 };
	const uint8_t *b;
	uint64_t at;
	size_t i;

	if (fs < 128 && hi - lo >= 4 && (b = text_at(r, hi - 4, 4)) && b[0] == 0x48 &&
	    b[1] == 0x83 && b[2] == 0xc4 && b[3] == fs)
		at = hi - 4;
	else if (hi - lo >= 7 && (b = text_at(r, hi - 7, 7)) && b[0] == 0x48 && b[1] == 0x81 &&
		 b[2] == 0xc4 && (int32_t)get32(b + 3) == fs)
		at = hi - 7;
	else
		return hi;
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		if (at - lo >= lens[i] && bp_sp_insn(r, at - lens[i], 0x8b, fs - 8) == lens[i])
			return at - lens[i];
	return lo;
}

/*
 * The rows of one run [lo, hi) of sp delta sp. Before the prologue stored rbp, the caller's
 * is in rbp; after, at CFA - 16. In a compiled (not assembly) function's full frame, from
 * where rbp is set up to where the epilogue restores it, the CFA is given as rbp + 16, the
 * frame-pointer rule: the same address as rsp + sp + 8 there, and it tells a check of a
 * frame-pointer walk that this frame's rbp is a frame pointer (agent/unwind/unwinder.c).
 */
static int sp_run(void *ctx, int32_t sp, uint64_t lo, uint64_t hi)
{
	struct rows *r = ctx;
	uint64_t cut[4], end = lo;
	size_t n = 0, i;

	if (sp < 0 || sp > (1 << 20) || sp % 8) {
		r->err = push(r, lo, SYM_CFA_UNSUPPORTED, 0, SYM_RBP_UNDEFINED);
		return r->err ? r->err : 1; /* the rest of the function stays unsupported */
	}
	if (!sp) {
		r->err = push(r, lo, SYM_CFA_RSP, 8, SYM_RBP_SAME);
		return r->err;
	}
	if (!r->bp_saved)
		find_prologue(r, lo, sp);
	if (r->bp_set && r->pushed) /* rbp is the frame pointer until POPQ BP (sp 0 after) */
		end = hi;
	else if (r->bp_set && sp == r->fs)
		end = fp_end(r, lo, hi, sp);
	cut[n++] = lo;
	if (r->bp_saved > lo && r->bp_saved < hi)
		cut[n++] = r->bp_saved;
	if (r->bp_set > lo && r->bp_set < hi && r->bp_set < end)
		cut[n++] = r->bp_set;
	if (end > lo && end < hi)
		cut[n++] = end;
	for (i = 0; i < n && !r->err; i++) {
		uint64_t pc = cut[i];

		if (!r->bp_saved)
			r->err = push(r, pc, SYM_CFA_RSP, sp + 8, SYM_RBP_UNDEFINED);
		else if (pc < r->bp_saved)
			r->err =
				push(r, pc, SYM_CFA_RSP, sp + 8, SYM_RBP_SAME); /* not stored yet */
		else if (r->bp_set && pc >= r->bp_set && pc < end)
			r->err = push(r, pc, SYM_CFA_RBP, 16, SYM_RBP_AT_CFA);
		else
			r->err = push(r, pc, SYM_CFA_RSP, sp + 8, SYM_RBP_AT_CFA);
	}
	return r->err;
}

int sym_gopcln__unwind_rows(const struct sym_gopcln *g, Elf *elf, struct sym_unwind_table *t,
			    uint32_t *errors)
{
	struct rows r = { .t = t, .g = g };
	uint64_t last_end = 0;
	size_t nr = 0, i;
	GElf_Phdr ph;
	uint32_t fi;
	int err;

	/* The executable segment, for the prologues' instructions. */
	if (!elf_getphdrnum(elf, &nr)) {
		for (i = 0; i < nr; i++) {
			Elf_Data *d;

			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
			    !(ph.p_flags & PF_X) || g->text_start < ph.p_vaddr ||
			    g->text_start - ph.p_vaddr >= ph.p_filesz)
				continue;
			d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
						 ELF_T_BYTE);
			if (d && d->d_buf && d->d_size == ph.p_filesz) {
				r.text = d->d_buf;
				r.text_vaddr = ph.p_vaddr;
				r.text_size = d->d_size;
			}
			break;
		}
	}
	for (fi = 0; fi < g->nfunc; fi++) {
		struct gofunc f;

		if (read_func(g, fi, &f)) {
			(*errors)++;
			continue;
		}
		t->fdes++;
		if (f.entry == f.end)
			continue;
		if (f.entry < last_end) { /* not sorted: no rules for it */
			(*errors)++;
			continue;
		}
		if (f.entry > last_end && last_end) {
			err = push(&r, last_end, SYM_CFA_NONE, 0, SYM_RBP_SAME);
			if (err)
				return err;
		}
		last_end = f.end;
		if (f.flag & FUNC_FLAG_TOP) {
			err = push(&r, f.entry, SYM_CFA_OUTERMOST, 0, SYM_RBP_SAME);
		} else if (f.flag & FUNC_FLAG_SPW) {
			/* Go's own traceback stops here too (runtime/symtab.go, SPWRITE). */
			err = push(&r, f.entry, SYM_CFA_UNSUPPORTED, 0, SYM_RBP_UNDEFINED);
		} else if (!f.pcsp) {
			/* No table: a linker's marker (go:textfipsstart), no code of its own. */
			err = push(&r, f.entry, SYM_CFA_NONE, 0, SYM_RBP_SAME);
		} else {
			size_t before = t->nr_rows;

			r.bp_saved = r.bp_set = 0;
			r.fs = 0;
			r.pushed = false;
			r.asm_func = f.flag & FUNC_FLAG_ASM;
			r.err = 0;
			err = pc_runs(g, &f, f.pcsp, sp_run, &r);
			if (r.err)
				return r.err;
			if (err < 0 || t->nr_rows == before || t->rows[before].pc != f.entry) {
				/* No usable table: no rules for this function. */
				(*errors)++;
				t->nr_rows = before;
				err = push(&r, f.entry, SYM_CFA_NONE, 0, SYM_RBP_SAME);
			} else {
				err = 0;
			}
		}
		if (err)
			return err;
	}
	if (last_end)
		return push(&r, last_end, SYM_CFA_NONE, 0, SYM_RBP_SAME);
	return 0;
}
