// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: Go's pclntab (symbolizer/gopclntab.c). The input is a table (pcHeader,
 * funcnametab, cutab, filetab, pctab, functab and _func records); the target wraps it in an
 * ELF image as a Go linker lays one out: a read-only segment holding it (its .gopclntab
 * section), the same bytes as the executable segment at the header's textStart (so the
 * prologues the unwind rows look for are fuzzed too), and a writable segment with the
 * runtime's moduledata pointing to the table, its gofunc at an offset the input's last four
 * bytes choose (so inline trees are read from the input as well). Then every function,
 * lookups at pcs the input names, and the unwind rows; the same image with an .eh_frame
 * for its first bytes of text (a cgo binary's C code); and without section headers, for the
 * search by header and moduledata.
 */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "../../symbolizer/symbolizer_internal.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

#define TAB_VADDR 0x500000ULL
#define MD_VADDR  0x600000ULL
#define MD_SIZE	  336

#define EH_VADDR 0x700000ULL

struct head {
	Elf64_Ehdr ehdr;
	Elf64_Phdr phdr[3];
	Elf64_Shdr shdr[4];
	char names[48];
	uint8_t md[MD_SIZE];
	uint8_t eh[48]; /* a CIE and an FDE for the first 16 bytes of the text, a terminator */
};

/* .eh_frame (LSB Core 10.6) for [text, text + 16): CFA rsp + 8, then rsp + 16 from the
 * second byte, as a C function pushing a register would have. */
static void put_eh_frame(uint8_t *eh, uint64_t text)
{
	static const uint8_t cie[24] = { 20, 0,	   0,  0, 0,	0,    0, 0, 1,	  'z', 'R', 0,
					 1,  0x78, 16, 1, 0x1b, 0x0c, 7, 8, 0x90, 1,   0,   0 };
	int32_t rel = (int32_t)(text - (EH_VADDR + 24 + 8));
	uint32_t len = 16, cie_ptr = 28, range = 16;

	memcpy(eh, cie, sizeof(cie));
	memcpy(eh + 24, &len, 4);
	memcpy(eh + 28, &cie_ptr, 4);
	memcpy(eh + 32, &rel, 4);
	memcpy(eh + 36, &range, 4);
	eh[40] = 0;    /* no augmentation data */
	eh[41] = 0x41; /* DW_CFA_advance_loc 1 */
	eh[42] = 0x0e; /* DW_CFA_def_cfa_offset 16 */
	eh[43] = 16;
	memset(eh + 44, 0, 4); /* the terminator */
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static void exercise(uint8_t *image, size_t size, const unsigned char *data, size_t n)
{
	Elf *elf = elf_memory((char *)image, size);
	struct sym_unwind_table t;
	struct sym_gopcln *g;
	uint32_t i, errors = 0;

	if (!elf)
		return;
	g = sym_gopcln__open(elf);
	if (g) {
		struct sym_frame f[16];
		uint64_t e, z, pc;
		const char *name;
		size_t k;

		for (i = 0; i < sym_gopcln__count(g) && i < 4096; i++)
			if (!sym_gopcln__func(g, i, &e, &z, &name)) {
				if (!name)
					abort();
				for (pc = e; pc < z && pc < e + 32; pc += 5)
					(void)sym_gopcln__lookup(g, pc, f, 16);
			}
		for (k = 0; k + 8 <= n && k < 256; k += 8)
			(void)sym_gopcln__lookup(g, get64(data + k), f, 16);
		memset(&t, 0, sizeof(t));
		if (!sym_gopcln__unwind_rows(g, elf, &t, &errors))
			sym_unwind_table__fini(&t);
		else
			free(t.rows);
		sym_gopcln__free(g);
	}
	elf_end(elf);
	if (!sym_unwind_table__build(-1, image, size, &t))
		sym_unwind_table__fini(&t);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	size_t total = sizeof(struct head) + size;
	uint64_t text = size >= 32 ? get64(data + 24) : 0x401000, nfunc, fname, gofunc = 0;
	struct head *h;
	uint8_t *image;

	if (elf_version(EV_CURRENT) == EV_NONE || size < 8)
		return 0;
	image = calloc(1, total);
	if (!image)
		return 0;
	h = (struct head *)image;
	memcpy(h->ehdr.e_ident, ELFMAG, SELFMAG);
	h->ehdr.e_ident[EI_CLASS] = ELFCLASS64;
	h->ehdr.e_ident[EI_DATA] = ELFDATA2LSB;
	h->ehdr.e_ident[EI_VERSION] = EV_CURRENT;
	h->ehdr.e_type = ET_EXEC;
	h->ehdr.e_machine = EM_X86_64;
	h->ehdr.e_version = EV_CURRENT;
	h->ehdr.e_phoff = offsetof(struct head, phdr);
	h->ehdr.e_shoff = offsetof(struct head, shdr);
	h->ehdr.e_ehsize = sizeof(h->ehdr);
	h->ehdr.e_phentsize = sizeof(h->phdr[0]);
	h->ehdr.e_phnum = 3;
	h->ehdr.e_shentsize = sizeof(h->shdr[0]);
	h->ehdr.e_shnum = 3;
	h->ehdr.e_shstrndx = 2;
	/* The table, read-only; the same bytes as text; the moduledata, writable. */
	h->phdr[0] = (Elf64_Phdr){ .p_type = PT_LOAD,
				   .p_flags = PF_R,
				   .p_offset = sizeof(*h),
				   .p_vaddr = TAB_VADDR,
				   .p_filesz = size,
				   .p_memsz = size };
	h->phdr[1] = (Elf64_Phdr){ .p_type = PT_LOAD,
				   .p_flags = PF_R | PF_X,
				   .p_offset = sizeof(*h),
				   .p_vaddr = text,
				   .p_filesz = size,
				   .p_memsz = size };
	h->phdr[2] = (Elf64_Phdr){ .p_type = PT_LOAD,
				   .p_flags = PF_R | PF_W,
				   .p_offset = offsetof(struct head, md),
				   .p_vaddr = MD_VADDR,
				   .p_filesz = MD_SIZE,
				   .p_memsz = MD_SIZE };
	memcpy(h->names, "\0.gopclntab\0.shstrtab\0.eh_frame",
	       sizeof("\0.gopclntab\0.shstrtab\0.eh_frame"));
	h->shdr[1] = (Elf64_Shdr){ .sh_name = 1,
				   .sh_type = SHT_PROGBITS,
				   .sh_flags = SHF_ALLOC,
				   .sh_addr = TAB_VADDR,
				   .sh_offset = sizeof(*h),
				   .sh_size = size };
	h->shdr[2] = (Elf64_Shdr){ .sh_name = 12,
				   .sh_type = SHT_STRTAB,
				   .sh_offset = offsetof(struct head, names),
				   .sh_size = sizeof(h->names) };
	/* moduledata (runtime/symtab.go): pcHeader, funcnametab, ftab's length, text, gofunc
	 * at the Go 1.18 and the Go 1.20 offsets (the table's magic picks one). */
	nfunc = size >= 16 ? get64(data + 8) : 0;
	fname = size >= 40 ? get64(data + 32) : 0;
	if (size >= 12) {
		uint32_t off;

		memcpy(&off, data + size - 4, 4);
		gofunc = TAB_VADDR + off % size;
	}
	put64(h->md, TAB_VADDR);
	put64(h->md + 8, TAB_VADDR + fname);
	put64(h->md + 136, nfunc + 1);
	put64(h->md + 176, text);
	put64(h->md + 304, gofunc);
	put64(h->md + 320, gofunc);
	put_eh_frame(h->eh, text);
	h->shdr[3] = (Elf64_Shdr){ .sh_name = 22,
				   .sh_type = SHT_PROGBITS,
				   .sh_flags = SHF_ALLOC,
				   .sh_addr = EH_VADDR,
				   .sh_offset = offsetof(struct head, eh),
				   .sh_size = sizeof(h->eh) };
	memcpy(image + sizeof(*h), data, size);
	exercise(image, total, data, size);
	/* With the .eh_frame of some C code: a cgo binary's rows combine both. */
	h->ehdr.e_shnum = 4;
	exercise(image, total, data, size);
	/* Without section headers: found by its header and the moduledata. */
	h->ehdr.e_shoff = 0;
	h->ehdr.e_shnum = 0;
	h->ehdr.e_shstrndx = 0;
	exercise(image, total, data, size);
	free(image);
	return 0;
}
