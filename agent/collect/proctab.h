/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process table: what the agent captured of each process image while it was alive
 * (DESIGN.md requirement 4).
 *
 * A process image is identified by (tgid, start time, exec id): tgids are reused, and
 * execve() keeps both tgid and start time. On its first sample (a PROC_EV_NEW from BPF)
 * the table captures the image's executable mappings and opens each mapped file, so that
 * its symbols stay readable after the process and its mount namespace are gone. It captures
 * again when the executable mappings change (PROC_EV_MMAP) or, rate-limited, when a
 * sample's address falls in no captured mapping. A process whose mappings the agent may not
 * read (permission denied: another user's, without CAP_SYS_PTRACE) is held all the same,
 * marked denied, with its name and cgroup and no mapping, so that its samples keep their
 * labels and are counted. Images of exited processes, and mappings
 * that a later capture no longer shows, live until the window that referenced them has
 * been drained.
 */
#ifndef IGNIS_PROCTAB_H
#define IGNIS_PROCTAB_H

#include <stdbool.h>
#include <stdint.h>

#include "common/hashmap.h"
#include "common/ignis.h"
#include "metadata.h"

struct proc_event;
struct symbolizer;
struct sym_object;

struct proc_id {
	uint32_t tgid;
	uint32_t exec_id;
	uint64_t start_time; /* start_boottime of the group leader, ns */
};

enum mapping_kind {
	MAPPING_FILE, /* a file; object set when it could be opened */
	MAPPING_VDSO, /* the kernel's vDSO image */
	MAPPING_ANON, /* anonymous executable memory (JIT), no file */
};

struct proc_mapping {
	uint64_t start;
	uint64_t end;
	uint64_t offset; /* file offset of start */
	uint64_t inode;	 /* of the mapped file as maps shows it, 0 if none */
	uint32_t dev;	 /* its device as maps shows it, in the kernel's encoding (major << 20 |
			  * minor, as BPF reads s_dev); 0 if none */
	bool from_bpf;	 /* announced by BPF (PROC_EV_MAPPING), not read from /proc */
	enum mapping_kind kind;
	struct sym_object *object; /* owned reference, or NULL */
	int open_error;		   /* MAPPING_FILE without object: why (-EACCES: refused) */
	char *name;		   /* path as the process sees it, "[vdso]", "[anon]" */
	uint64_t stale_window;	   /* gone from the last capture in this window, or
					 * UINT64_MAX while current */
};

struct proc_image {
	struct proc_id id;
	char comm[16];		   /* the process's name (its main thread's comm) */
	char exe[256];		   /* its executable as it sees it, "" if unreadable */
	uint64_t exe_inode;	   /* mm->exe_file's inode and device as BPF read them (the */
	uint32_t exe_dev;	   /* kernel's encoding); 0 if unknown */
	struct proc_meta meta;	   /* container, pod and unit from its cgroup */
	struct proc_mapping *maps; /* sorted by start; stale ones overlap no current one */
	size_t nr_maps;
	size_t cap_maps;
	uint64_t captured_ns;	     /* CLOCK_MONOTONIC of the last capture */
	uint64_t exec_vm;	     /* its mm->exec_vm (pages) as the last capture's maps show
				      * it, 0 if never captured */
	uint64_t exited_window;	     /* window in which it exited, UINT64_MAX while alive */
	bool incomplete;	     /* some mapped file could not be opened */
	bool denied;		     /* its mappings may not be read (no CAP_SYS_PTRACE): none
				      * held, its frames stay [unknown] with their addresses */
	uint32_t nspid;		     /* its process id in its own pid namespace (NSpid) */
	struct sym_perfmap *perfmap; /* its /tmp/perf-NSPID.map, NULL if none */
	uint64_t perfmap_size;	     /* size of the file when read */
	uint64_t perfmap_window;     /* window of the last check, UINT64_MAX: never */
};

/* Counters since proctab__new(). */
struct proctab_stats {
	uint64_t images;	       /* images held now */
	uint64_t captures;	       /* successful captures of mappings */
	uint64_t capture_errors;       /* captures that failed (process gone, exec'd, denied) */
	uint64_t files_opened;	       /* mapped files opened */
	uint64_t file_errors;	       /* mapped files that could not be opened or parsed */
	uint64_t debug_files;	       /* separate debug files found for stripped objects */
	uint64_t debug_misses;	       /* objects without DWARF for which none was found */
	uint64_t perfmaps_read;	       /* JIT maps (/tmp/perf-PID.map) read or re-read */
	uint64_t perfmap_malformed;    /* ... lines skipped as malformed */
	uint64_t exits_missed;	       /* exits found by the rescan, not by an event */
	uint64_t denied;	       /* images held now whose mappings may not be read */
	uint64_t uncaptured;	       /* images whose process was gone before its mappings were
				     * read: held with what BPF announced of them */
	uint64_t bpf_mappings;	       /* file mappings BPF announced that were added to an image */
	uint64_t bpf_mappings_known;   /* ... that a capture had already read */
	uint64_t bpf_mappings_no_file; /* ... whose file the agent held no object of */
	uint64_t bpf_mappings_no_image; /* ... of an image the agent did not hold */
	uint64_t lingering;		/* objects of released images kept open a while now */
};

struct proctab_opts {
	const char *proc_root; /* "/proc" */
	struct symbolizer *symbolizer;
	struct sym_object *vdso;   /* object for [vdso] mappings, or NULL */
	uint64_t min_recapture_ns; /* min time between two captures of one image for
					 * addresses outside every mapping */
	const char *debug_dir;	   /* host folder of debug files; NULL: /usr/lib/debug */
	/* Called for an object without DWARF whose debug file was found nowhere (e.g. to ask
	 * a debuginfod server); may be NULL. */
	void (*debug_missing)(void *ctx, struct sym_object *obj);
	void *debug_missing_ctx;
	/* Called after each successful capture of an image's mappings (first sample, mapping
	 * changes, a recapture for an address in no mapping); may be NULL. */
	void (*captured)(void *ctx, struct proc_image *img);
	void *captured_ctx;
};

struct proctab;

struct proctab *proctab__new(const struct proctab_opts *opts);
void proctab__free(struct proctab *pt);

/*
 * Apply one BPF process event while `window` is being recorded. Returns 0 or -errno.
 *
 * An image whose process is gone before its mappings could be read (a process of a few
 * milliseconds) is held all the same, exited in `window`, with the file mappings BPF
 * announces for it (PROC_EV_MAPPING): their files are the objects the agent holds for
 * that device and inode, open already for an earlier process (objects of released images
 * linger a few windows for that), never opened again per process.
 */
int proctab__handle_event(struct proctab *pt, const struct proc_event *ev, uint64_t window);

/* The image for id, or NULL when none was captured. Borrowed until proctab__release(). */
struct proc_image *proctab__find(struct proctab *pt, const struct proc_id *id);

/*
 * The JIT function covering runtime address addr of img, from the process's
 * /tmp/perf-PID.map (PID as the process knows itself: NSpid), read inside the process's
 * root and read again when it grew, checked at most once per window while the process
 * lives. The name is borrowed until the next call for img; NULL when none covers addr.
 */
const char *proctab__jit_symbol(struct proctab *pt, struct proc_image *img, uint64_t addr,
				uint64_t window);

/*
 * The mapping of img that contains addr. When none does, `recapture` is set and the process
 * still runs, captures again (at most once per min_recapture_ns) and retries: for addresses
 * that must be mapped, such as the instruction pointer of a sample. NULL when the address
 * lies in no mapping. Borrowed until proctab__release().
 */
const struct proc_mapping *proctab__mapping(struct proctab *pt, struct proc_image *img,
					    uint64_t addr, uint64_t window, bool recapture);

/*
 * Window `drained` has been drained: free the images that exited in it or before, and the
 * mappings gone stale in it or before.
 */
void proctab__release(struct proctab *pt, uint64_t drained);

/* Mark as exited the images whose process is gone, in case their exit event was lost.
 * Returns how many were found. */
int proctab__rescan(struct proctab *pt, uint64_t window);

/* Whether an image with this tgid, start time and exec id is held (for the BPF reconcile). */
bool proctab__knows(struct proctab *pt, uint32_t tgid, uint64_t start_time, uint32_t exec_id);

void proctab__stats(const struct proctab *pt, struct proctab_stats *stats);

#endif /* IGNIS_PROCTAB_H */
