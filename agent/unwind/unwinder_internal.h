/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Declarations shared by the unwinder's files, not by its users: the unwinder object itself,
 * the processes it publishes, and publishing (unwind_publish.c), which unwinder.c calls.
 *
 *   unwinder.c        the facade of unwinder.h: processes, polling, grace periods
 *   unwind_cache.c    tables by build ID or object, references, eviction
 *   unwind_build.c    the build thread and its queue
 *   unwind_publish.c  the BPF maps: rows, mappings, unwind_procs, unwind_exes
 *   extent.c          the extents of the array maps
 *
 * Everything here runs on the main thread.
 */
#ifndef IGNIS_UNWINDER_INTERNAL_H
#define IGNIS_UNWINDER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "extent.h"
#include "common/hashmap.h"
#include "unwind_build.h"
#include "unwind_cache.h"
#include "unwinder.h"

/* One executable mapping of a process, as published. */
struct unwind_pmap {
	uint64_t start, end;
	uint64_t bias; /* runtime address - ELF address */
	struct unwind_table *table;
};

struct unwind_process {
	uint32_t tgid;
	uint32_t exec_id;
	uint64_t start_time;
	uint32_t version;
	uint32_t map_start, nr_published; /* extent in unwind_maps, nr 0: not published */
	uint64_t exec_vm;		  /* of the capture its mappings come from */
	bool dirty;			  /* to publish */
	struct unwind_pmap *maps;
	size_t nr_maps;
};

struct unwinder {
	struct unwinder_opts opts;
	struct unwind_cache cache;
	struct hashmap processes;  /* tgid -> struct unwind_process */
	struct extents rows, maps; /* of unwind_rows and unwind_maps */
	/* Free rows inside the windows unwinder__make_room() cleared, held out of the free
	 * list until the next grace period frees the rest of each window: a table placed
	 * first fit meanwhile would split it. */
	struct extent *held;
	size_t nr_held, cap_held;
	/* The windows cleared since the last grace period, each for the table that asked:
	 * another table looks elsewhere (it would find one free but for deferred rows). */
	struct extent *claims;
	size_t nr_claims, cap_claims;
	uint32_t next_version;
	uint64_t window; /* grace periods so far: the window count, for use by window */
	struct unwinder_stats st;
	struct unwind_builder *builder;
};

/*
 * Put a built table's rows into unwind_rows, then its waiting unwind_exes entries; on success
 * it is READY and its built rows are freed. Without a run of rows that long it makes room
 * (unwinder__make_room(); a table no process uses displaces none). Returns 0, -EAGAIN (room
 * comes free at the next grace period, or room could not be made for lack of memory: it
 * waits; or t has no user), -ENOSPC (no room even after evicting), -E2BIG (too large for
 * the map), or the map update's -errno.
 */
int unwinder__upload_table(struct unwinder *u, struct unwind_table *t);

/*
 * t found no run of t->want_rows rows: evict the tables inside the window of that size that
 * costs least, counting free and deferred rows as free (the deferred come free after the
 * next grace period), among those that overlap no window cleared for another table since
 * then. The window's free rows are held until the grace period, when the waiting tables
 * are placed largest first (a larger one may still take it: t then makes room again). Cost, in this order: rows of tables sampled in the last
 * UNWIND_COLD_WINDOWS windows (none for a small table, at most a quarter of t's rows for a
 * large one), rows of cold tables in use, rows of unused ones; ties go to the highest window for a large table, the
 * lowest for a small one. Evicted tables in use are published again without their rows and
 * rebuilt when sampled; unused ones leave the cache. Returns 0 (room after the next grace
 * period, unless a larger table takes it first), -EAGAIN (every window overlaps one cleared
 * for another table: tried again after the grace period), -ENOSPC (no such window) or
 * -ENOMEM.
 */
int unwinder__make_room(struct unwinder *u, const struct unwind_table *t);

/* The unload callback of u's cache: remove t's unwind_exes entries, defer its rows. */
void unwinder__unload_table(void *ctx, struct unwind_table *t);

/* A process runs or maps t's object from file (an object the caller holds), which BPF sees
 * at key: enter the key in unwind_exes (now if t is ready, else when it is), taking it from
 * another table. Best effort: failures leave the first samples to frame pointers. */
void unwinder__want_exe(struct unwinder *u, struct unwind_table *t,
			const struct ignis_unwind_exe_key *key, const struct sym_object *file);

/* Write p's mappings whose tables are ready into unwind_maps, then its unwind_procs entry;
 * unpublish it when none is ready. A full map or an allocation failure unpublishes it and
 * marks it dirty (retried after the next window), and is counted, not returned. */
void unwinder__publish(struct unwinder *u, struct unwind_process *p);

/* Remove p's unwind_procs entry and defer its mappings' extent; no-op if not published. */
void unwinder__unpublish(struct unwinder *u, struct unwind_process *p);

#endif /* IGNIS_UNWINDER_INTERNAL_H */
