/* SPDX-License-Identifier: Apache-2.0 */
/* Declarations shared by the files of libsymbolizer; not part of its interface. */
#ifndef IGNIS_SYMBOLIZER_INTERNAL_H
#define IGNIS_SYMBOLIZER_INTERNAL_H

#include <gelf.h>
#include <libelf.h>

#include "symbolizer.h"

/* Caps on hostile input. */
#define SYM_MAX_FILE_BYTES (4ULL << 30) /* objects larger than this are refused */
#define SYM_MAX_LOADS	   64		/* PT_LOAD headers kept per object */
#define SYM_MAX_SYMBOLS	   (8U << 20)	/* symbols kept per table */
#define SYM_MAX_NAME	   4096		/* longer names are cut */
#define SYM_MAX_BUILD_ID   64		/* longer build IDs are ignored */
#define SYM_MAX_SCRATCH	   64		/* frames one lookup may return */
#define SYM_PAGE_SIZE	   4096ULL	/* the unit the kernel maps segments in (x86_64) */

/* One loadable segment: file offsets [offset, offset + memsz) map to [vaddr, vaddr + memsz);
 * the first filesz bytes come from the file. */
struct sym_load {
	uint64_t offset;
	uint64_t vaddr;
	uint64_t filesz;
	uint64_t memsz;
	bool exec; /* PF_X */
};

/* Cache key of a symbol table: the build ID, or the file's identity when it has none. */
struct symtab_key {
	uint8_t kind; /* SYMTAB_KEY_* */
	uint8_t len;  /* bytes used in data */
	uint8_t data[SYM_MAX_BUILD_ID];
};

enum {
	SYMTAB_KEY_BUILD_ID = 1,
	SYMTAB_KEY_FILE = 2,   /* dev, ino, size, mtime */
	SYMTAB_KEY_MEMORY = 3, /* name, size, checksum of an in-memory image */
};

/* One function symbol: names [start, end). */
struct sym_entry {
	uint64_t start;
	uint64_t end;
	uint32_t name;	    /* offset in symtab.names */
	uint32_t demangled; /* offset in symtab.names of the demangled name, filled on first
			     * lookup; 0: not yet, SYM_NOT_MANGLED: the name is not mangled */
};

#define SYM_NOT_MANGLED UINT32_MAX

struct sym_dwarf;
struct sym_gopcln;
struct addr_cache;

/* A parsed, sorted symbol table, shared by every object with the same key. */
struct symtab {
	struct sym_dwarf *dwarf;  /* the object's DWARF, NULL if it has none */
	struct sym_gopcln *go;	  /* Go's pclntab, when neither symbols nor DWARF name it */
	struct addr_cache *cache; /* addresses resolved through DWARF */
	struct symtab_key key;
	struct sym_entry *syms;
	size_t nr_syms;
	char *names;
	size_t names_len;	 /* bytes used in names */
	size_t names_cap;	 /* bytes allocated for names */
	size_t bytes;		 /* what this table costs, counted against the budget */
	uint64_t used;		 /* the symbolizer's period when a lookup last used it */
	struct symtab *lru_prev; /* toward most recently used */
	struct symtab *lru_next;
};

struct sym_object {
	struct symbolizer *s;
	int refs;
	int fd;	     /* owned duplicate, or -1 for in-memory images */
	void *image; /* in-memory image (owned), or NULL */
	size_t image_size;
	dev_t dev;
	ino_t ino;
	char *name;
	uint8_t build_id[SYM_MAX_BUILD_ID];
	size_t build_id_len;
	uint64_t build_id_vaddr; /* ELF address of the build ID bytes, 0 if not loaded */
	struct sym_load loads[SYM_MAX_LOADS];
	size_t nr_loads;
	struct symtab_key key;
	struct symtab *symtab; /* cached lookup, valid while symtab_gen matches */
	uint64_t symtab_gen;
	int symtab_err;	 /* sticky error from loading the table, 0 if none */
	bool has_symtab; /* a .symtab with entries: built with symbols */
	bool has_dwarf;	 /* a .debug_info */
	char *debuglink; /* .gnu_debuglink file name, NULL if none */
	uint32_t debuglink_crc;
	struct sym_found *found; /* names sym_object__symbol() found (owned), newest last */
	size_t nr_found;
};

/* A name sym_object__symbol() found in an object, remembered (symlookup.c). */
struct sym_found {
	char *name;
	uint64_t vaddr, size;
};

/* Free what sym_object__symbol() remembered of o. */
void sym_object_forget_found(struct sym_object *o);

/* A kernel symbol from kallsyms: names [start, next symbol). */
/* A kernel symbol: 8 bytes for the ~120000 of a distribution kernel. The upper 32 bits of
 * its address and its module are its run's. */
struct ksym {
	uint32_t lo;   /* the address's lower 32 bits */
	uint32_t name; /* offset in kernel_names, 0 for a boundary (not a text symbol) */
};

/* A run of consecutive ksyms (by address) with the same upper address bits and module. */
struct ksym_run {
	uint64_t hi;	 /* the addresses' upper 32 bits, in place */
	uint32_t first;	 /* index of its first ksym */
	uint32_t module; /* offset in kernel_names of "[module]", 0 for the core */
};

struct symbolizer {
	struct symbolizer_opts opts;
	void *objects;		 /* tsearch tree of live objects by (dev, ino) */
	void *tables;		 /* tsearch tree of cached symbol tables by key */
	struct symtab *lru_head; /* most recently used */
	struct symtab *lru_tail;
	uint64_t evict_gen; /* bumped on every eviction */
	uint64_t period;    /* symbolizer__drop_idle() calls */
	struct symbolizer_stats stats;
	void *debug_files;		/* tsearch tree of struct debug_file by table key */
	char *scratch[SYM_MAX_SCRATCH]; /* names made by the last symbolize call (demangled) */
	int nr_scratch;

	struct ksym *ksyms; /* sorted by addr, text symbols and the ones bounding them */
	size_t nr_ksyms;
	struct ksym_run *ksym_runs; /* sorted by first */
	size_t nr_ksym_runs;
	char *kernel_names;
};

void sym_log(const struct symbolizer *s, enum sym_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* symtab.c: parse the function symbols of elf, and of extra when not NULL (MiniDebugInfo),
 * into a new table. NULL with errno on failure. */
struct symtab *symtab__build(Elf *elf, Elf *extra, const struct symtab_key *key);
/* minidebug.c: the ELF image inside .gnu_debugdata, decompressed (malloc'd). 0, -ENOENT when
 * there is none, -EINVAL when it does not decompress, -EFBIG over the cap, -ENOMEM. */
int sym_minidebug_image(Elf *elf, void **image, size_t *size);
void symtab__free(struct symtab *t);
/* The symbol whose extent covers addr, or NULL. */
const struct sym_entry *symtab__lookup(const struct symtab *t, uint64_t addr);

/* demangle.c: the demangled form of a C++ or Rust symbol name (malloc'd), or NULL when the
 * name is not mangled or cannot be demangled. */
char *sym_demangle(const char *name);

/* An accepted separate debug file, for every object of its key. */
struct debug_file {
	struct symtab_key key;
	int fd;
};

/* symbolizer.c: the table cache, for debugfile.c. */
int sym_cmp_table(const void *a, const void *b);
int sym_cmp_table_key(const struct symtab_key *x, const struct symtab_key *y);
void sym_table_drop(struct symbolizer *s, struct symtab *t);
/* debugfile.c: the debug file accepted for key, or -1. */
int sym_debug_fd(const struct symbolizer *s, const struct symtab_key *key);
void sym_debug_files_free(struct symbolizer *s);
/* object.c: take the NT_GNU_BUILD_ID note of data into o; true when found. vaddr: the ELF
 * address of data's first byte when it is loaded (an allocated note), else 0. */
bool sym_find_build_id(struct sym_object *o, Elf_Data *data, uint64_t vaddr);
/* dwarf.c: does elf carry DWARF (.debug_info)? */
bool sym_has_debug_info(Elf *elf);

/* dwarf.c: one frame of an address from DWARF; strings borrowed from the sym_dwarf. */
struct sym_dwarf_frame {
	const char *name;	  /* DW_AT_name, unqualified for C++ */
	const char *linkage_name; /* DW_AT_linkage_name (mangled), NULL if none */
	const char *file;	  /* source file, NULL if unknown */
	const char *comp_dir;	  /* the CU's DW_AT_comp_dir, for a relative file; or NULL */
	uint32_t line;		  /* 0 if unknown */
	uint64_t start;		  /* entry address of the function, 0 if unknown */
};

/* Scope indexes (function and inline ranges) one object's DWARF keeps at most, bytes. */
#define SYM_DWARF_MAX_SCOPE_BYTES (4UL << 20)

/* Open the DWARF of the ELF file behind fd (borrowed; duplicated). NULL when the file has no
 * usable DWARF (no .debug_info, malformed, no compilation unit with an address range), or
 * with errno E2BIG when its debug sections exceed max_bytes (0: no cap). The libdw handle
 * stays open until sym_dwarf__release(). */
struct sym_dwarf *sym_dwarf__open(int fd, size_t max_bytes);
void sym_dwarf__free(struct sym_dwarf *d);
/* Close the libdw handle (its sections and line tables), keeping the CU and scope indexes;
 * the next lookup opens it again. Strings of earlier lookups are invalid after it. Returns
 * the bytes it held by our count (0 when it was not open). */
size_t sym_dwarf__release(struct sym_dwarf *d);
/* Memory the DWARF holds now, bytes: the indexes, and the sections while the handle is open. */
size_t sym_dwarf__bytes(const struct sym_dwarf *d);
/* The frames of pc, innermost first, at most max: several when code was inlined. 0 when no
 * compilation unit covers pc. Strings are valid until the next sym_dwarf__release(). */
int sym_dwarf__lookup(struct sym_dwarf *d, uint64_t pc, struct sym_dwarf_frame *frames, int max);

/* addrcache.c: frames of resolved addresses, strings interned (valid for the cache's life). */
struct addr_cache *addr_cache__new(void);
void addr_cache__free(struct addr_cache *c);
size_t addr_cache__bytes(const struct addr_cache *c);
/* The cached frames of vaddr (at most max), or -ENOENT when vaddr was never stored. */
int addr_cache__get(const struct addr_cache *c, uint64_t vaddr, struct sym_frame *frames, int max);
/* Remember the n frames of vaddr (n may be 0). 0, -EINVAL or -ENOMEM. */
int addr_cache__put(struct addr_cache *c, uint64_t vaddr, const struct sym_frame *frames, int n);

/* symtab.c: the index of the first of nr entries sorted by start (entries of size bytes
 * whose first field is a uint64_t start) with a start above addr; nr when there is none. */
size_t sym_upper_bound(const void *entries, size_t nr, size_t size, uint64_t addr);

/* symtab.c: the next section after *scn (NULL: the first) that has contents in the file, with
 * its header and name; false after the last. */
bool sym_next_section(Elf *elf, Elf_Scn **scn, GElf_Shdr *shdr, const char **name);

/* Grow *arr (of *cap elements of elem_size bytes) to hold at least want; overflow-checked.
 * Keep in sync with grow_array() in agent/common/ignis.c: a copy, because the symbolizer links
 * nothing of the agent and the agent sees only symbolizer.h (STYLE.md section 1);
 * tests/unit/test_ignis.c holds the two to the same behaviour. */
int sym_grow(void **arr, size_t *cap, size_t want, size_t elem_size);

/* ---- gopclntab.c: Go's pclntab (Go 1.18 and later) ---- */

/*
 * Find and read the pclntab of a Go binary: by its section .gopclntab or, in a file without
 * section headers, by its header in a read-only segment confirmed by the runtime's
 * moduledata. The table and the function data before it (go:func.*, for inline trees) are
 * copied (sym_gopcln__bytes()). NULL with errno
 * ENOENT (no table: not Go, or Go stripped of its sections and moduledata not found),
 * ENOTSUP (a table of Go 1.2-1.17, or of a 32-bit target), EINVAL (malformed), E2BIG,
 * ENOMEM.
 */
struct sym_gopcln *sym_gopcln__open(Elf *elf);
void sym_gopcln__free(struct sym_gopcln *g);
/* Memory the table holds, bytes. */
size_t sym_gopcln__bytes(const struct sym_gopcln *g);
/* 118 for the Go 1.18-1.19 layout, 120 for Go 1.20 and later. */
uint32_t sym_gopcln__version(const struct sym_gopcln *g);
/* Were the inline trees found (moduledata located)? */
bool sym_gopcln__has_inline(const struct sym_gopcln *g);
/* Functions in the table. */
uint32_t sym_gopcln__count(const struct sym_gopcln *g);
/* Function i: [*entry, *end) in ELF addresses (up to the next function) and its name
 * (borrowed for g's life). 0 or -EINVAL. */
int sym_gopcln__func(const struct sym_gopcln *g, uint32_t i, uint64_t *entry, uint64_t *end,
		     const char **name);
/* The frames of pc, innermost first (inlined calls, then the function), at most max, with
 * file and line; strings borrowed for g's life. 0 when no function covers pc. */
int sym_gopcln__lookup(const struct sym_gopcln *g, uint64_t pc, struct sym_frame *frames, int max);
/*
 * Unwind rows from the functions' pcsp tables appended to t (unsorted: the caller compacts):
 * CFA = rsp + sp delta + 8, rbp saved at CFA - 16 once the prologue stored it; the
 * outermost frame for TOPFRAME functions (goexit, mstart, rt0_go); unsupported for SPWRITE
 * ones (they switch stacks). Functions whose table cannot be read get no rules, counted in
 * *errors. 0, -E2BIG or -ENOMEM.
 */
int sym_gopcln__unwind_rows(const struct sym_gopcln *g, Elf *elf, struct sym_unwind_table *t,
			    uint32_t *errors);

/* ---- cfi.c: call frame information decoded without running it ---- */

/* DW_EH_PE_* pointer encodings (LSB Core §10.5.1). */
#define DW_EH_PE_omit	  0xff
#define DW_EH_PE_absptr	  0x00
#define DW_EH_PE_uleb128  0x01
#define DW_EH_PE_udata2	  0x02
#define DW_EH_PE_udata4	  0x03
#define DW_EH_PE_udata8	  0x04
#define DW_EH_PE_sleb128  0x09
#define DW_EH_PE_sdata2	  0x0a
#define DW_EH_PE_sdata4	  0x0b
#define DW_EH_PE_sdata8	  0x0c
#define DW_EH_PE_pcrel	  0x10
#define DW_EH_PE_indirect 0x80

/* What sym_cfi_check_program() found in a CFA program. */
struct sym_cfi_program {
	uint64_t moves;	    /* instructions that move the location: rows after the first */
	uint64_t remembers; /* DW_CFA_remember_state */
	uint64_t max_regno; /* the highest register named */
};

/* A section's address and bytes, the base of pc-relative (DW_EH_PE_pcrel) pointers. */
struct sym_cfi_section {
	uint64_t addr;
	const uint8_t *start;
};

/*
 * Read one DW_EH_PE-encoded value at *p (advanced past it). With sec, pc-relative values get
 * the address of their field added (an FDE's initial location); without, a value is read as
 * is (an address range). Returns 0, or -EINVAL for an encoding this reader does not know
 * (indirect, datarel and the like: no x86_64 compiler emits them in an FDE) or a value past
 * end.
 */
int sym_cfi_read_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc,
			 const struct sym_cfi_section *sec, uint64_t *v);

/* Skip a DW_FORM_block operand (a ULEB128 length, then that many bytes). 0 or -EINVAL. */
int sym_cfi_skip_block(const uint8_t **p, const uint8_t *end);

/*
 * Decode a CFA program (DWARF 5 §6.4.2) without running it: 0 when every instruction is one
 * libdw knows, its operands lie within [p, end), every register it names is at most 255 and
 * remembered states nest at most 64 deep; -EINVAL otherwise. enc is the CIE's pointer
 * encoding, for DW_CFA_set_loc. What it found goes to *pr.
 */
int sym_cfi_check_program(uint8_t enc, const uint8_t *p, const uint8_t *end,
			  struct sym_cfi_program *pr);

#endif /* IGNIS_SYMBOLIZER_INTERNAL_H */
