// SPDX-License-Identifier: Apache-2.0
/*
 * Symbols by name: where an object defines a function or a variable (System V gABI, "Symbol
 * Table"; ELF(5)). The cached tables of symtab.c keep functions by address only; a lookup
 * by name is rare (attaching to an interpreter: _PyRuntime, PyCode_Type, the eval loop), so
 * it reads the symbol sections again instead of holding every name of every object.
 *
 * Where it looks, in order: the separate debug file accepted for the object, the object's
 * .symtab, its .dynsym, and its MiniDebugInfo. The first file and table with a definition
 * of the name answers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer_internal.h"

/* Symbols read per table at most: a hostile table must not make a lookup unbounded. */
#define LOOKUP_MAX_SYMBOLS (8U << 20)

struct found {
	uint64_t vaddr;
	uint64_t size;
	int bind_rank;	/* 0 global, 1 weak, 2 local; 3: none found yet */
	bool ambiguous; /* local definitions at different addresses, no global */
};

static bool is_definition(const GElf_Sym *sym)
{
	int type = GELF_ST_TYPE(sym->st_info);

	if (sym->st_shndx == SHN_UNDEF || sym->st_shndx == SHN_ABS || !sym->st_value)
		return false;
	/* TLS symbols' values are offsets in the TLS block, not addresses. */
	return type == STT_FUNC || type == STT_GNU_IFUNC || type == STT_OBJECT ||
	       type == STT_NOTYPE || type == STT_COMMON;
}

static void consider(struct found *f, const GElf_Sym *sym)
{
	int bind = GELF_ST_BIND(sym->st_info);
	int rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;

	if (rank > f->bind_rank)
		return;
	if (rank == f->bind_rank) {
		/* The same symbol twice (.symtab lists exported ones as well) is one. */
		if (sym->st_value != f->vaddr)
			f->ambiguous = true;
		if (sym->st_size > f->size)
			f->size = sym->st_size;
		return;
	}
	f->vaddr = sym->st_value;
	f->size = sym->st_size;
	f->bind_rank = rank;
	f->ambiguous = false;
}

/* Search the table of type `type` (SHT_SYMTAB or SHT_DYNSYM) of elf for name. */
static int search_table(Elf *elf, Elf32_Word type, const char *name, struct found *f)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	size_t count, i;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		GElf_Sym sym;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != type || !shdr.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			return -EINVAL;
		count = shdr.sh_size / shdr.sh_entsize;
		if (count > LOOKUP_MAX_SYMBOLS)
			count = LOOKUP_MAX_SYMBOLS;
		for (i = 0; i < count; i++) {
			const char *n;

			if (!gelf_getsym(data, (int)i, &sym))
				break;
			if (!is_definition(&sym))
				continue;
			n = elf_strptr(elf, shdr.sh_link, sym.st_name);
			if (n && !strcmp(n, name))
				consider(f, &sym);
		}
	}
	return 0;
}

/* 0 when elf's table of `type` defines name (into *f), -ENOENT, or -ENOTUNIQ. */
static int search(Elf *elf, Elf32_Word type, const char *name, struct found *f)
{
	int err;

	f->bind_rank = 3;
	f->ambiguous = false;
	err = search_table(elf, type, name, f);
	if (err)
		return err;
	if (f->bind_rank == 3)
		return -ENOENT;
	return f->ambiguous ? -ENOTUNIQ : 0;
}

static Elf *open_elf(const struct sym_object *o, int fd)
{
	Elf *elf;

	if (fd < 0)
		elf = elf_memory(o->image, o->image_size);
	else
		elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		elf = NULL;
	}
	return elf;
}

/* At most this many names found are remembered per object, the oldest dropped first. */
#define FOUND_MAX 16

void sym_object_forget_found(struct sym_object *o)
{
	size_t i;

	for (i = 0; i < o->nr_found; i++)
		free(o->found[i].name);
	free(o->found);
	o->found = NULL;
	o->nr_found = 0;
}

static const struct sym_found *found_before(const struct sym_object *o, const char *name)
{
	size_t i;

	for (i = 0; i < o->nr_found; i++)
		if (!strcmp(o->found[i].name, name))
			return &o->found[i];
	return NULL;
}

/* Remember a name found. Only what was found: a debug file accepted later (debuginfod)
 * may define a name the object lacked, never move one it has. Out of memory, forget. */
static void remember_found(struct sym_object *o, const char *name, uint64_t vaddr, uint64_t size)
{
	char *copy = strdup(name);

	if (!copy)
		return;
	if (!o->found) {
		o->found = calloc(FOUND_MAX, sizeof(*o->found));
		if (!o->found) {
			free(copy);
			return;
		}
	}
	if (o->nr_found == FOUND_MAX) {
		free(o->found[0].name);
		memmove(&o->found[0], &o->found[1], (FOUND_MAX - 1) * sizeof(*o->found));
		o->nr_found--;
	}
	o->found[o->nr_found++] = (struct sym_found){ copy, vaddr, size };
}

static int symbol_uncached(struct symbolizer *s, struct sym_object *o, const char *name,
			   uint64_t *vaddr, uint64_t *size);

int sym_object__symbol(struct symbolizer *s, struct sym_object *o, const char *name,
		       uint64_t *vaddr, uint64_t *size)
{
	const struct sym_found *f;
	uint64_t sz = 0;
	int err;

	if (!name || !*name)
		return -EINVAL;
	f = found_before(o, name);
	if (f) {
		*vaddr = f->vaddr;
		if (size)
			*size = f->size;
		return 0;
	}
	err = symbol_uncached(s, o, name, vaddr, &sz);
	if (err)
		return err;
	remember_found(o, name, *vaddr, sz);
	if (size)
		*size = sz;
	return 0;
}

static int symbol_uncached(struct symbolizer *s, struct sym_object *o, const char *name,
			   uint64_t *vaddr, uint64_t *size)
{
	struct found f = { 0 };
	Elf *elf = NULL, *mini_elf = NULL;
	void *mini = NULL;
	size_t mini_size = 0;
	int err = -ENOENT, debug_fd;

	if (!name || !*name)
		return -EINVAL;
	/* A debug file accepted for this build has the full .symtab. */
	debug_fd = o->image ? -1 : sym_debug_fd(s, &o->key);
	if (debug_fd >= 0) {
		elf = elf_begin(debug_fd, ELF_C_READ, NULL);
		if (elf && elf_kind(elf) == ELF_K_ELF)
			err = search(elf, SHT_SYMTAB, name, &f);
		if (elf)
			elf_end(elf);
		elf = NULL;
		if (err != -ENOENT)
			goto out;
	}
	elf = open_elf(o, o->image ? -1 : o->fd);
	if (!elf)
		return -EINVAL;
	err = search(elf, SHT_SYMTAB, name, &f);
	if (err == -ENOENT)
		err = search(elf, SHT_DYNSYM, name, &f);
	if (err == -ENOENT && !o->has_symtab && !sym_minidebug_image(elf, &mini, &mini_size)) {
		mini_elf = elf_memory(mini, mini_size);
		if (mini_elf && elf_kind(mini_elf) == ELF_K_ELF)
			err = search(mini_elf, SHT_SYMTAB, name, &f);
		if (mini_elf)
			elf_end(mini_elf);
		free(mini);
	}
	elf_end(elf);
out:
	if (!err) {
		*vaddr = f.vaddr;
		if (size)
			*size = f.size;
	}
	return err;
}

int sym_object__dynamic_symbol(struct sym_object *o, const char *name, uint64_t *vaddr,
			       uint64_t *size)
{
	struct found f = { 0 };
	Elf *elf;
	int err;

	if (!name || !*name)
		return -EINVAL;
	elf = open_elf(o, o->image ? -1 : o->fd);
	if (!elf)
		return -EINVAL;
	err = search(elf, SHT_DYNSYM, name, &f);
	elf_end(elf);
	if (!err) {
		*vaddr = f.vaddr;
		if (size)
			*size = f.size;
	}
	return err;
}
