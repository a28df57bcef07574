/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The table unwinder's userspace half: builds each object's unwind table (from .eh_frame,
 * symbolizer/unwind.c) on a thread of its own, uploads it into the BPF row map once per
 * build ID, and publishes each process's executable mappings with their tables. The layout
 * of the maps and the update protocol are described in bpf/profiler.h.
 *
 * Tables live in the row map itself, which is the cache: a table no process uses stays
 * there until its space is needed (unwinder__make_room()). Extents that a published
 * entry stopped pointing to are reused only after unwinder__grace_period() — called after
 * the generation flip, whose RCU grace period guarantees that no program still reads them.
 *
 * Everything but the build thread runs on the caller's (main) thread.
 */
#ifndef IGNIS_UNWINDER_H
#define IGNIS_UNWINDER_H

#include <stdbool.h>
#include <stdint.h>

struct proc_image;
struct sym_object;
struct unwinder;

struct unwinder_opts {
	int rows_fd; /* unwind_rows, unwind_maps, unwind_procs, unwind_exes (borrowed) */
	int maps_fd;
	int procs_fd;
	int exes_fd;
	uint32_t max_rows; /* entries of each map */
	uint32_t max_maps;
	uint32_t max_procs;
};

/* Counters since unwinder__new(), and what is held now. */
struct unwinder_stats {
	uint64_t tables_built;	      /* tables built from CFI */
	uint64_t table_errors;	      /* objects whose CFI could not be read (no table: fp) */
	uint64_t tables_no_cfi;	      /* objects with no CFI at all */
	uint64_t tables_evicted;      /* unused tables dropped to make room */
	uint64_t tables_evicted_cold; /* tables in use dropped to make room: cold ones (no
				       * frame in a stack for UNWIND_COLD_WINDOWS windows), or
				       * hot ones in a large table's way */
	uint64_t tables_rebuilt;      /* tables built again for room after no_room or eviction */
	uint64_t tables_no_room;      /* tables that did not fit in the row map even after
				       * eviction (their frames are walked with frame pointers,
				       * and stacks through them end in [truncated]) */
	uint64_t build_ns;	      /* time spent building tables, ns */
	uint64_t processes_published; /* process mapping sets written */
	uint64_t processes_no_room;   /* publications that failed: a map was full (retried after
				       * each window) */
	uint64_t tables;	      /* tables in the row map now */
	uint64_t rows;		      /* rows they hold */
	uint64_t processes;	      /* processes published now */
	uint64_t executables;	      /* main executables in unwind_exes now */
	uint64_t pending;	      /* processes with a table being built */
};

/* Returns NULL with errno set (ENOMEM, or the thread's error). */
struct unwinder *unwinder__new(const struct unwinder_opts *opts);
/* Stops the build thread (waiting for the table it builds) and frees everything. */
void unwinder__free(struct unwinder *u);
/* The agent is stopping: the build thread takes no more tables (a churning host's queue
 * would otherwise be built while the last window is written, for nothing). Accepts NULL. */
void unwinder__stop_building(struct unwinder *u);

/*
 * (Re)publish a captured process image's executable mappings at once, with the tables
 * already built; missing ones are queued for the build thread, and the image is published
 * again as they arrive (unwinder__poll). The image is read now and not kept. Returns 0 or
 * -errno (-ENOMEM; a full map is counted, not an error).
 */
int unwinder__add_process(struct unwinder *u, const struct proc_image *img);

/*
 * Unpublish the image of tgid that started at start_time (an exit), or on execve() the
 * image that is not keep_exec_id (the new image may have been published already). Unknown
 * tgids and other images are left alone.
 */
void unwinder__remove_process(struct unwinder *u, uint32_t tgid, uint64_t start_time,
			      const uint32_t *keep_exec_id);

/* Unpublish every process for which known() is false (its exit was missed). */
void unwinder__reconcile(struct unwinder *u,
			 bool (*known)(void *ctx, uint32_t tgid, uint64_t start_time,
				       uint32_t exec_id),
			 void *ctx);

/* Take finished tables from the build thread and publish the processes waiting for them. */
void unwinder__poll(struct unwinder *u);

/* A descriptor that turns readable when built tables wait for unwinder__poll() (which
 * resets it); owned by u. */
int unwinder__wake_fd(const struct unwinder *u);

/* Called after a generation flip: extents freed before it may be reused. */
void unwinder__grace_period(struct unwinder *u);

void unwinder__stats(const struct unwinder *u, struct unwinder_stats *stats);

/*
 * Check one step of a frame-pointer walk against the object's table: could the caller of
 * the frame at ELF address vaddr (the sampled pc, or a return address - 1) of obj be found
 * through rbp? False when the table says that function keeps no frame pointer there (its
 * CFA is rsp-based: a leaf without a frame, a prologue, code built without frame pointers),
 * so a frame-pointer walk skipped its caller or read garbage; and when obj's table is not in
 * the map (see unwinder__fp_end_ok()). True when it does, or when obj has no table to have
 * (no CFI; cached tables are used even after their processes exited).
 * Reads the rows from the kernel (a few map lookups).
 */
bool unwinder__fp_step_ok(const struct unwinder *u, const struct sym_object *obj, uint64_t vaddr);

/*
 * A walk that did not reach the outermost frame ended in obj's code: false when obj's table
 * is not in the map (being built, waiting for room, too large, no room, evicted), so the
 * walk by frame pointer may have lost its way there and the stack must end in [truncated].
 * True otherwise. unwinder__fp_step_ok() is false in those cases too.
 */
bool unwinder__fp_end_ok(const struct unwinder *u, const struct sym_object *obj);

/*
 * obj had a frame in a stack of the window being built: its table is in use (eviction by
 * use keeps it), and a table that was not loaded for room is queued to be built again when
 * room can be made for it (at most once per window).
 */
void unwinder__note_use(struct unwinder *u, struct sym_object *obj);

#endif /* IGNIS_UNWINDER_H */
