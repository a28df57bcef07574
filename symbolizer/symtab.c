// SPDX-License-Identifier: Apache-2.0
/*
 * Function symbol tables from ELF .symtab or, when a file has none, .dynsym
 * (System V gABI, "Symbol Table"; ELF(5)).
 *
 * A table is a sorted array of [start, end) extents, one per address with a function symbol.
 * The extent is the symbol's st_size; an unsized symbol (hand-written assembly, some PLT
 * stubs) extends to the next symbol or to the end of its section. Addresses outside every
 * extent stay unnamed: a stripped library's internal functions are not in .dynsym, and
 * naming them after the nearest exported symbol would be a lie.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer_internal.h"

struct candidate {
	uint64_t start;
	uint64_t size;
	uint64_t section_end; /* end of the symbol's section, 0 if unknown */
	const char *name;
	int rank; /* lower is preferred among aliases */
};

/* Keep in sync with grow_array() in agent/common/ignis.c (see symbolizer_internal.h). */
int sym_grow(void **arr, size_t *cap, size_t want, size_t elem_size)
{
	size_t n = *cap ? *cap : 16;
	void *p;

	if (want <= *cap)
		return 0;
	while (n < want) {
		if (n > SIZE_MAX / 2)
			return -ENOMEM;
		n *= 2;
	}
	p = reallocarray(*arr, n, elem_size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = n;
	return 0;
}

size_t sym_upper_bound(const void *entries, size_t nr, size_t size, uint64_t addr)
{
	size_t lo = 0, hi = nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t start;

		memcpy(&start, (const char *)entries + mid * size, sizeof(start));
		if (start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool sym_next_section(Elf *elf, Elf_Scn **scn, GElf_Shdr *shdr, const char **name)
{
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((*scn = elf_nextscn(elf, *scn))) {
		if (!gelf_getshdr(*scn, shdr) || shdr->sh_type == SHT_NOBITS)
			continue;
		*name = elf_strptr(elf, shstrndx, shdr->sh_name);
		if (*name)
			return true;
	}
	return false;
}

/* Preference among symbols at one address: global, then weak, then local; then fewer
 * leading underscores ("malloc" over "__libc_malloc"); then the shorter name. */
static int rank_of(const GElf_Sym *sym, const char *name)
{
	int bind = GELF_ST_BIND(sym->st_info);
	int rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
	size_t under = strspn(name, "_");

	if (GELF_ST_TYPE(sym->st_info) == STT_NOTYPE)
		rank += 3; /* a label, after every function at its address */
	return rank * 64 + (under > 7 ? 7 : (int)under) * 8;
}

static int cmp_candidate(const void *a, const void *b)
{
	const struct candidate *x = a, *y = b;
	size_t lx, ly;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	lx = strlen(x->name);
	ly = strlen(y->name);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x->name, y->name);
}

/*
 * Functions, and the labels assembly code gives its entry points without a type (STT_NOTYPE
 * with no size, in an executable section: the dynamic loader's _start and _dl_start_user,
 * the outermost frames of every process's start-up). A label names up to the next symbol;
 * at one address a function wins over it (rank_of()).
 */
static bool is_function(Elf *elf, const GElf_Sym *sym, const char *name)
{
	int type = GELF_ST_TYPE(sym->st_info);
	Elf_Scn *scn;
	GElf_Shdr shdr;

	if (sym->st_shndx == SHN_UNDEF || sym->st_shndx == SHN_ABS || sym->st_value == 0)
		return false;
	if (type == STT_FUNC || type == STT_GNU_IFUNC)
		return true;
	if (type != STT_NOTYPE || sym->st_size || sym->st_shndx >= SHN_LORESERVE || !name ||
	    !*name || name[0] == '.' || name[0] == '$')
		return false;
	scn = elf_getscn(elf, sym->st_shndx);
	/* NOBITS too: a separate debug file keeps the section headers, not the code. */
	return scn && gelf_getshdr(scn, &shdr) && (shdr.sh_flags & SHF_EXECINSTR);
}

/* Find the symbol table to use: .symtab when it has functions, else .dynsym. */
static Elf_Scn *pick_table(Elf *elf, GElf_Shdr *out)
{
	Elf_Scn *scn = NULL, *dynsym = NULL;
	GElf_Shdr shdr, dynshdr;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr))
			continue;
		if (shdr.sh_type == SHT_SYMTAB && shdr.sh_size > 0) {
			*out = shdr;
			return scn;
		}
		if (shdr.sh_type == SHT_DYNSYM && shdr.sh_size > 0) {
			dynsym = scn;
			dynshdr = shdr;
		}
	}
	if (dynsym)
		*out = dynshdr;
	return dynsym;
}

static uint64_t section_end(Elf *elf, size_t shndx)
{
	Elf_Scn *scn = elf_getscn(elf, shndx);
	GElf_Shdr shdr;

	if (!scn || !gelf_getshdr(scn, &shdr) || !(shdr.sh_flags & SHF_ALLOC))
		return 0;
	if (shdr.sh_addr > UINT64_MAX - shdr.sh_size)
		return 0;
	return shdr.sh_addr + shdr.sh_size;
}

static int collect(Elf *elf, Elf_Scn *scn, const GElf_Shdr *shdr, struct candidate **out,
		   size_t *nr_out)
{
	struct candidate *c = NULL;
	size_t nr = 0, cap = 0, i, count;
	Elf_Data *data = elf_getdata(scn, NULL);
	GElf_Sym sym;
	const char *name;
	int err;

	if (!data || !shdr->sh_entsize)
		return -EINVAL;
	count = shdr->sh_size / shdr->sh_entsize;
	for (i = 0; i < count; i++) {
		if (!gelf_getsym(data, (int)i, &sym))
			break;
		if (GELF_ST_TYPE(sym.st_info) != STT_FUNC &&
		    GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC &&
		    GELF_ST_TYPE(sym.st_info) != STT_NOTYPE)
			continue;
		name = elf_strptr(elf, shdr->sh_link, sym.st_name);
		if (!name || !*name || !is_function(elf, &sym, name))
			continue;
		if (nr >= SYM_MAX_SYMBOLS)
			break;
		err = sym_grow((void **)&c, &cap, nr + 1, sizeof(*c));
		if (err) {
			free(c);
			return err;
		}
		c[nr].start = sym.st_value;
		c[nr].size = sym.st_size;
		c[nr].section_end = sym.st_shndx < SHN_LORESERVE ? section_end(elf, sym.st_shndx) :
								   0;
		c[nr].name = name;
		c[nr].rank = rank_of(&sym, name);
		nr++;
	}
	*out = c;
	*nr_out = nr;
	return 0;
}

struct symtab *symtab__build(Elf *elf, Elf *extra, const struct symtab_key *key)
{
	struct candidate *c = NULL;
	struct symtab *t = NULL;
	size_t nr = 0, i, j, n = 0, names_len = 0, len;
	GElf_Shdr shdr;
	Elf_Scn *scn;
	int err = 0;

	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->key = *key;

	scn = pick_table(elf, &shdr);
	if (scn) {
		err = collect(elf, scn, &shdr, &c, &nr);
		if (err)
			goto err_out;
	}
	/* Symbols from a second file (MiniDebugInfo) join the first file's. */
	scn = extra ? pick_table(extra, &shdr) : NULL;
	if (scn) {
		struct candidate *more = NULL, *all;
		size_t nr_more = 0;

		err = collect(extra, scn, &shdr, &more, &nr_more);
		if (err)
			goto err_out;
		all = nr_more ? reallocarray(c, nr + nr_more, sizeof(*c)) : c;
		if (!all) {
			free(more);
			err = -ENOMEM;
			goto err_out;
		}
		if (nr_more)
			memcpy(all + nr, more, nr_more * sizeof(*more));
		c = all;
		nr += nr_more;
		free(more);
	}
	if (nr)
		qsort(c, nr, sizeof(*c), cmp_candidate);

	/* Count the bytes of the names we keep: one per distinct address. */
	for (i = 0; i < nr; i = j) {
		for (j = i + 1; j < nr && c[j].start == c[i].start; j++)
			;
		len = strnlen(c[i].name, SYM_MAX_NAME - 1);
		names_len += len + 1;
		n++;
	}

	t->syms = calloc(n ? n : 1, sizeof(*t->syms));
	t->names = malloc(names_len + 1);
	if (!t->syms || !t->names) {
		err = -ENOMEM;
		goto err_out;
	}

	names_len = 0;
	t->names[names_len++] = '\0'; /* offset 0 is the empty name */
	for (i = 0, n = 0; i < nr; i = j) {
		struct sym_entry *e = &t->syms[n];
		uint64_t size = 0, sec_end = 0, next;

		for (j = i; j < nr && c[j].start == c[i].start; j++) {
			/* The extent of an address is the largest among its aliases. */
			if (c[j].size > size)
				size = c[j].size;
			if (c[j].section_end > sec_end)
				sec_end = c[j].section_end;
		}
		next = j < nr ? c[j].start : UINT64_MAX;
		e->start = c[i].start;
		if (size)
			e->end = e->start + size < e->start ? UINT64_MAX : e->start + size;
		else if (sec_end > e->start)
			e->end = next < sec_end ? next : sec_end;
		else
			e->end = next == UINT64_MAX ? e->start + 1 : next;

		len = strnlen(c[i].name, SYM_MAX_NAME - 1);
		memcpy(t->names + names_len, c[i].name, len);
		t->names[names_len + len] = '\0';
		e->name = (uint32_t)names_len;
		names_len += len + 1;
		n++;
	}
	t->nr_syms = n;
	t->names_len = names_len;
	t->names_cap = names_len + 1;
	t->bytes = sizeof(*t) + n * sizeof(*t->syms) + t->names_cap;
	free(c);
	return t;

err_out:
	free(c);
	symtab__free(t);
	errno = -err;
	return NULL;
}

void symtab__free(struct symtab *t)
{
	if (!t)
		return;
	sym_dwarf__free(t->dwarf);
	sym_gopcln__free(t->go);
	addr_cache__free(t->cache);
	free(t->syms);
	free(t->names);
	free(t);
}

/* How many entries before the candidate to check for a symbol that encloses a smaller one. */
#define ENCLOSING_LOOKBACK 8

const struct sym_entry *symtab__lookup(const struct symtab *t, uint64_t addr)
{
	size_t lo, k;

	lo = sym_upper_bound(t->syms, t->nr_syms, sizeof(*t->syms), addr);
	for (k = 0; k < ENCLOSING_LOOKBACK && lo > k; k++) {
		const struct sym_entry *e = &t->syms[lo - 1 - k];

		if (addr < e->end)
			return e;
	}
	return NULL;
}
