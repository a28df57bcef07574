/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libsymbolizer: turns (object, address) into frames.
 *
 * An object is an ELF file handed over as an open file descriptor (or an in-memory image such
 * as the vDSO). The library parses what it is handed; it never opens paths of other
 * processes, never reads /proc/PID, knows nothing of BPF or of the agent, and never prints:
 * diagnostics go to the print callback of its options. Every input is treated as hostile.
 *
 * Addresses are ELF virtual addresses (what `nm` prints), never runtime addresses: the
 * caller turns a runtime address into a file offset with its mapping, and
 * sym_object__vaddr() turns that into a virtual address with the program headers.
 *
 * Errors follow libbpf: functions returning int give 0 or a count on success and a negative
 * errno on failure; constructors return NULL with errno set. Not thread-safe: one
 * symbolizer per thread.
 */
#ifndef IGNIS_SYMBOLIZER_H
#define IGNIS_SYMBOLIZER_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#ifndef SYM_WARN_UNUSED
#define SYM_WARN_UNUSED __attribute__((warn_unused_result))
#endif

struct symbolizer;
struct sym_object;

/* Levels passed to the print callback, syslog numbering as the agent's logger. */
enum sym_log_level {
	SYM_LOG_WARN = 4,
	SYM_LOG_INFO = 6,
	SYM_LOG_DEBUG = 7,
};

typedef void (*symbolizer_print_fn)(enum sym_log_level level, const char *fmt, va_list ap);

/* Default symbol-table cache budget: 64 MiB. */
#define SYMBOLIZER_DEFAULT_CACHE_BYTES (64UL << 20)

struct symbolizer_opts {
	size_t sz;		   /* sizeof(struct symbolizer_opts) */
	size_t cache_max_bytes;	   /* budget for cached symbol tables, bytes; 0: default; one
				    * object's DWARF may take half of it (larger: not used) */
	symbolizer_print_fn print; /* diagnostics; NULL: discarded */
};

/* Counters since symbolizer__new(). */
struct symbolizer_stats {
	uint64_t lookups;	      /* symbolizer__symbolize() calls */
	uint64_t hits;		      /* ... that named the address */
	uint64_t misses;	      /* ... where no symbol covers the address */
	uint64_t errors;	      /* ... where the object's symbols could not be read */
	uint64_t tables_loaded;	      /* symbol tables parsed (cache misses) */
	uint64_t tables_evicted;      /* symbol tables dropped to stay within the budget */
	uint64_t tables_expired;      /* ... dropped by symbolizer__drop_idle() */
	uint64_t tables;	      /* symbol tables cached now */
	uint64_t cache_bytes;	      /* bytes held by cached symbol tables now */
	uint64_t objects;	      /* live objects now */
	uint64_t kernel_symbols;      /* symbols loaded from kallsyms */
	uint64_t addr_hits;	      /* lookups answered from resolved addresses (DWARF) */
	uint64_t debug_files;	      /* separate debug files accepted */
	uint64_t debug_files_refused; /* ... refused: another build ID or a wrong CRC */
	uint64_t dwarf_released;      /* DWARF handles closed by symbolizer__release_dwarf() */
};

/* Create a symbolizer. Returns NULL with errno set (EINVAL, ENOMEM). */
struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts);

/* Free a symbolizer. Objects still referenced by the caller must be put first. NULL is fine. */
void symbolizer__free(struct symbolizer *s);

void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *stats);

/*
 * Close every open DWARF handle: the debug sections libdw holds in memory (decompressed
 * whole: 10-14 MiB for libc6-dbg's libc) and the line tables it read. The indexes and the
 * resolved addresses stay cached; an object's handle is opened again on its next lookup of
 * an address not resolved before. Call it when a batch of lookups is done (the agent: after
 * each window). Frames returned before are invalid after it. Returns the bytes released by
 * the cache's count (the caller may give them back to the system with malloc_trim()).
 */
size_t symbolizer__release_dwarf(struct symbolizer *s);

/*
 * End a period of use (the agent: a window) and drop the symbol tables that no lookup used
 * in the last `max_idle` periods, this one included: the tables of binaries that ran once
 * and exited would otherwise stay until the budget needs their room, memory a host that
 * runs a burst of distinct binaries (a build, a test suite) never gets back. An object of a
 * dropped table parses it again on its next lookup. max_idle 0 keeps every table. Returns
 * the bytes released by the cache's count (see symbolizer__release_dwarf() for giving them
 * back to the system).
 */
size_t symbolizer__drop_idle(struct symbolizer *s, unsigned int max_idle);

/*
 * Objects.
 *
 * symbolizer__open_fd() reads the ELF headers of the regular file behind fd (borrowed; the
 * object keeps its own duplicate, so the file stays readable after the process that mapped
 * it and its mount namespace are gone). The object is indexed under the identity (dev, ino)
 * the caller names, e.g. the device and inode a process's maps show for the mapping, which
 * symbolizer__find() looks up without opening anything; pass 0, 0 to use the descriptor's
 * own (fstat). The object's descriptor pins the inode, so the identity cannot be reused by
 * another file while the object lives. Opening an identity already indexed returns that
 * object. `name` is the path shown to users (it is copied). Each returned object holds a
 * reference the caller drops with sym_object__put(). Errors: NULL with errno EINVAL (not an
 * ELF file, malformed headers, not a regular file), EFBIG (over the size cap), ENOMEM.
 */
struct sym_object *symbolizer__open_fd(struct symbolizer *s, int fd, const char *name, dev_t dev,
				       ino_t ino);
struct sym_object *symbolizer__find(struct symbolizer *s, dev_t dev, ino_t ino);

/* An object from an ELF image in memory (the vDSO); the image is copied. As open_fd. */
struct sym_object *symbolizer__open_memory(struct symbolizer *s, const void *image, size_t size,
					   const char *name);

struct sym_object *sym_object__get(struct sym_object *o);
void sym_object__put(struct sym_object *o);

/* The name given at open time; borrowed for the object's lifetime. */
const char *sym_object__name(const struct sym_object *o);

/* The GNU build ID (NT_GNU_BUILD_ID note): its length in bytes and *id (borrowed), or 0. */
size_t sym_object__build_id(const struct sym_object *o, const uint8_t **id);

/* The build ID as lowercase hex into buf (2 * len + 1 bytes); "" if there is none. */
void sym_object__build_id_hex(const struct sym_object *o, char *buf, size_t size);

/*
 * Translate an offset in the file (runtime address - mapping start + mapping offset) into
 * the ELF virtual address through the PT_LOAD program headers. Returns 0, or -ENOENT when
 * no loadable segment covers the offset.
 */
int sym_object__vaddr(const struct sym_object *o, uint64_t file_offset,
		      uint64_t *vaddr) SYM_WARN_UNUSED;

/*
 * The ELF virtual address at which an executable mapping of the object that starts at file
 * offset map_offset (page-aligned, as /proc/PID/maps shows it) begins, so that runtime
 * start - this is the mapping's load bias: the executable segment mapped from that page.
 * Unlike sym_object__vaddr(map_offset), right also when the page holds other segments too
 * (lld's packed layout). Returns 0, or -ENOENT when no loadable segment is mapped there.
 */
int sym_object__mapping_vaddr(const struct sym_object *o, uint64_t map_offset,
			      uint64_t *vaddr) SYM_WARN_UNUSED;

/*
 * What recognises the object as a process's main executable from the kernel's side: the
 * lowest ELF address of its executable segments (mm->start_code minus the load bias, as
 * load_elf_binary() in fs/binfmt_elf.c computes it) and the ELF address of its build ID
 * bytes, which must lie in the file-backed part of a loadable segment (so that they are in
 * the process's memory). Returns 0, or -ENOENT when it has no executable segment, no build
 * ID, or a build ID that is not loaded.
 */
int sym_object__exe_layout(const struct sym_object *o, uint64_t *text_vaddr,
			   uint64_t *build_id_vaddr) SYM_WARN_UNUSED;

/*
 * The executable segment at the lowest ELF address (the one sym_object__exe_layout() names):
 * its file offset, ELF address and bytes in the file, so that an address in a mapping of the
 * object can be placed from the mapping's file offset alone. Returns 0, or -ENOENT when the
 * object has no executable segment.
 */
int sym_object__text_segment(const struct sym_object *o, uint64_t *offset, uint64_t *vaddr,
			     uint64_t *filesz) SYM_WARN_UNUSED;

/* The size and modification time of the file the object holds open (fstat now). Returns 0,
 * or -ENOENT for an object from memory, or fstat's -errno. */
int sym_object__file_stamp(const struct sym_object *o, uint64_t *size, int64_t *mtime_sec,
			   uint32_t *mtime_nsec) SYM_WARN_UNUSED;

/*
 * Separate debug files. An object without DWARF (stripped, or built without -g) needs one:
 * the caller looks
 * for it (by build ID under a debug root's .build-id/xx/rest.debug, or by the debuglink name
 * beside the binary, in its .debug/ folder, or under a debug root), opens it and hands it to
 * symbolizer__set_debug_file(), which reads nothing from it before checking that it belongs
 * to the object: the same build ID, or, for an object without one, the CRC-32 its
 * .gnu_debuglink records. An accepted file serves every object of that build.
 */
bool sym_object__needs_debug_file(const struct sym_object *o);

/* The .gnu_debuglink file name (a plain name, no '/'; borrowed) and its CRC-32, or NULL. */
const char *sym_object__debuglink(const struct sym_object *o, uint32_t *crc);

/*
 * Use the ELF file behind fd (borrowed; the symbolizer keeps its own duplicate) as o's
 * debug file. Returns 0, -ENOKEY when it belongs to another build (counted as refused),
 * -ENODATA when it has neither symbols nor DWARF, -EINVAL when it is not ELF, -EFBIG over
 * the size cap, -EALREADY when o needs none, or another negative errno.
 */
int symbolizer__set_debug_file(struct symbolizer *s, struct sym_object *o, int fd) SYM_WARN_UNUSED;

/*
 * As symbolizer__set_debug_file(), for every object of a build ID, present or future (a file
 * fetched from debuginfod while the objects come and go). The file's build ID must be this
 * one: -ENOKEY otherwise.
 */
int symbolizer__add_debug_file(struct symbolizer *s, const uint8_t *build_id, size_t len,
			       int fd) SYM_WARN_UNUSED;

/*
 * Where object o defines the symbol called exactly `name`: a function or a variable
 * (STT_FUNC, STT_GNU_IFUNC, STT_OBJECT, STT_NOTYPE; never STT_TLS, whose value is no
 * address), global, weak or local (a local such as gcc's "f.cold" is found where a .symtab
 * has it). Looks in o's accepted debug file, then o's .symtab, its .dynsym and its
 * MiniDebugInfo; the first that defines the name answers, a global definition over a weak
 * one over a local one. *vaddr gets the ELF virtual address (st_value), *size (may be NULL)
 * st_size in bytes. What it finds is remembered in o (up to 16 names): an interpreter's
 * attach asks for the same few names again while it starts; a name not found is looked for
 * again each time (a debug file found later may define it).
 * Returns 0, -ENOENT when nothing defines name, -ENOTUNIQ when only local symbols do, at
 * different addresses, -EINVAL when name is empty or the file is not ELF.
 */
int sym_object__symbol(struct symbolizer *s, struct sym_object *o, const char *name,
		       uint64_t *vaddr, uint64_t *size) SYM_WARN_UNUSED;

/* As sym_object__symbol(), in o's .dynsym only: what the object exports, cheap to search
 * (a cheap first look for an interpreter in every executable a host runs). */
int sym_object__dynamic_symbol(struct sym_object *o, const char *name, uint64_t *vaddr,
			       uint64_t *size) SYM_WARN_UNUSED;

/* One frame of a resolved address. Strings are borrowed: valid until the next call on s. */
struct sym_frame {
	const char *name;	 /* function name, as users read it */
	const char *system_name; /* the name in the symbol table (e.g. mangled) */
	const char *file;	 /* source file, NULL if unknown */
	uint32_t line;		 /* source line, 0 if unknown */
	uint64_t start;		 /* virtual address where the function starts */
};

/*
 * Resolve the virtual address vaddr of object o into frames, innermost first, at most max.
 * A symbol names only addresses inside its extent: its st_size, or for an unsized symbol up
 * to the next symbol or the end of its section. Returns the number of frames (0: no symbol
 * covers vaddr, e.g. internal code of a stripped library) or a negative errno when the
 * object's symbols cannot be read (-EINVAL malformed, -EIO read error, -ENOMEM).
 */
int symbolizer__symbolize(struct symbolizer *s, struct sym_object *o, uint64_t vaddr,
			  struct sym_frame *frames, int max) SYM_WARN_UNUSED;

/*
 * Resolve the virtual addresses vaddrs[0..n) of object o ahead of the symbolizer__symbolize()
 * calls that will ask for them, then close o's DWARF handle. For an object with DWARF each
 * address not resolved before is looked up once and kept in the address cache, so the calls
 * that follow are cache hits; without DWARF there is nothing to do ahead. A caller with the
 * addresses of a whole batch (the agent: a window's stacks) groups them by object: each
 * object's debug sections are then read once per batch and only one object's are in memory
 * at a time, where lookups interleaving objects would reopen the DWARF handles the cache
 * budget closed (decompressing every debug section each time). Returns 0, or a negative
 * errno when the object's symbols cannot be read (as symbolizer__symbolize()), which the
 * calls that follow will return too.
 */
int symbolizer__prefetch(struct symbolizer *s, struct sym_object *o, const uint64_t *vaddrs,
			 size_t n);

/*
 * Kernel symbols from /proc/kallsyms text, read from f (borrowed), replacing any loaded
 * before. Returns the number of text symbols, -EINVAL on a malformed file, or -EPERM when
 * every address reads as zero (kernel.kptr_restrict hides them from this process).
 */
int symbolizer__load_kallsyms(struct symbolizer *s, FILE *f) SYM_WARN_UNUSED;

/*
 * Resolve a kernel address. Fills *frame (name; module in file as "[module]", NULL for the
 * core kernel) and returns 1, or 0 when no kernel text symbol covers addr.
 */
int symbolizer__symbolize_kernel(struct symbolizer *s, uint64_t addr, struct sym_frame *frame);

/*
 * JIT symbol maps (/tmp/perf-PID.map, "START SIZE NAME" lines in hex; Linux
 * tools/perf/Documentation/jit-interface.txt). The text is the caller's to read; the map
 * keeps its own copy of the names. Returns NULL with errno ENOMEM; malformed lines are
 * skipped and counted.
 */
struct sym_perfmap;
struct sym_perfmap *sym_perfmap__parse(const char *text, size_t len);
void sym_perfmap__free(struct sym_perfmap *m);
/* Memory the map holds, bytes. */
size_t sym_perfmap__bytes(const struct sym_perfmap *m);
/* Entries kept, and lines skipped as malformed into *malformed (may be NULL). */
size_t sym_perfmap__count(const struct sym_perfmap *m, uint64_t *malformed);
/* The name of the function covering runtime address addr (the latest line wins), borrowed
 * for the map's lifetime, and its start into *start (may be NULL); NULL if none. */
const char *sym_perfmap__lookup(const struct sym_perfmap *m, uint64_t addr, uint64_t *start);

/*
 * Unwind tables, x86_64 (symbolizer/unwind.c): the call frame information of an object
 * (.eh_frame, LSB Core §10.6; or .debug_frame, DWARF 5 §6.4) evaluated into sorted rows,
 * each valid from its pc (an ELF virtual address) up to the next row's. The caller's
 * return address is always at CFA - 8: a row whose CFI says otherwise is unsupported.
 */
enum sym_cfa_rule {
	SYM_CFA_NONE = 0,    /* no CFI covers this pc: hand-written code, or past the last FDE */
	SYM_CFA_RSP,	     /* CFA = rsp + cfa_off */
	SYM_CFA_RBP,	     /* CFA = rbp + cfa_off */
	SYM_CFA_PLT,	     /* CFA = rsp + cfa_off + ((rip & 15) >= plt_threshold ? 8 : 0) */
	SYM_CFA_OUTERMOST,   /* the return address is undefined: the outermost frame */
	SYM_CFA_UNSUPPORTED, /* another register or a DWARF expression */
	SYM_CFA_SIGNAL,	     /* a signal trampoline: the interrupted rip, rsp and rbp are in
			      * the kernel's signal frame at rsp + 168, 160, 120 */
};

enum sym_rbp_rule {
	SYM_RBP_SAME = 0,  /* the caller's rbp is this frame's */
	SYM_RBP_AT_CFA,	   /* saved at CFA + rbp_off */
	SYM_RBP_UNDEFINED, /* not recoverable here (clobbered, or a rule not followed) */
};

struct sym_unwind_row {
	uint64_t pc;	       /* first ELF virtual address the row covers */
	int32_t cfa_off;       /* bytes */
	int32_t rbp_off;       /* bytes, for SYM_RBP_AT_CFA; fits in 16 bits */
	uint8_t cfa_rule;      /* enum sym_cfa_rule */
	uint8_t rbp_rule;      /* enum sym_rbp_rule */
	uint8_t plt_threshold; /* for SYM_CFA_PLT */
};

struct sym_unwind_table {
	struct sym_unwind_row *rows; /* sorted by pc, distinct pcs; malloc'd */
	size_t nr_rows;
	uint64_t cfi_bytes;  /* size of the section the rows come from */
	uint32_t fdes;	     /* FDEs read */
	uint32_t fde_errors; /* FDEs (or their tails) that could not be evaluated: no rule */
	bool debug_frame;    /* from .debug_frame (the object has no .eh_frame) */
	bool gopclntab;	     /* from Go's pcsp tables (a Go binary without .eh_frame);
			      * fdes and fde_errors then count functions */
};

/*
 * Build the unwind table of the ELF file behind fd (borrowed; read with pread), or of the
 * in-memory image when image is not NULL. A Go binary without .eh_frame gets rows from its
 * pclntab's pcsp tables (Go 1.18 and later): CFA = rsp + the function's sp delta + 8, rbp
 * at CFA - 16 once its prologue saved it, the outermost frame at goexit/mstart/rt0_go. On success *t owns its rows: release them with
 * sym_unwind_table__fini(). Returns 0, -ENODATA when the object has no CFI, -ENOTSUP when it
 * is not x86_64 (or its .debug_frame is compressed), -EINVAL when it is not ELF or its CFI
 * is unreadable, -E2BIG past the caps on FDEs and rows, or -ENOMEM. CFI that cannot be
 * used leaves code without rules ("no CFI" rows, counted in fde_errors), never wrong ones:
 * an FDE that cannot be evaluated, or that overlaps another; from the first entry whose
 * program cannot be decoded, or once the work budget for the object is spent, the rest.
 */
int sym_unwind_table__build(int fd, const void *image, size_t size,
			    struct sym_unwind_table *t) SYM_WARN_UNUSED;
/* As sym_unwind_table__build(), for an opened object; safe on any thread while o lives. */
int sym_object__unwind_table(const struct sym_object *o,
			     struct sym_unwind_table *t) SYM_WARN_UNUSED;
void sym_unwind_table__fini(struct sym_unwind_table *t);
/* The row covering pc, or NULL when pc is below the first row. Borrowed from t. */
const struct sym_unwind_row *sym_unwind_table__find(const struct sym_unwind_table *t, uint64_t pc);

/* One line of /proc/PID/maps (proc(5)). */
struct procmaps_entry {
	uint64_t start;	 /* first address of the mapping */
	uint64_t end;	 /* one past its last address */
	uint64_t offset; /* file offset of start */
	uint32_t dev_major;
	uint32_t dev_minor;
	uint64_t inode; /* 0 for anonymous and special mappings */
	bool read, write, exec, shared;
	bool deleted;	  /* the path ended in " (deleted)", now stripped */
	const char *path; /* into the parsed line: a file path, "[vdso]", "" ... */
};

/*
 * Parse one line of /proc/PID/maps, modified in place (the path is cut at its end; a
 * trailing newline is removed). The path may contain spaces. Returns 0 or -EINVAL.
 */
int procmaps_parse_line(char *line, struct procmaps_entry *e) SYM_WARN_UNUSED;

#endif /* IGNIS_SYMBOLIZER_H */
