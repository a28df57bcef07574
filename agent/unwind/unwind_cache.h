/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The unwinder's table cache: one unwind table per object identity — its build ID, or for
 * an object without one the object itself — shared by every process that maps it, counted
 * by references. What gives way when the row map is full is the unwinder's choice
 * (unwinder__make_room(): the tables inside the cheapest window of the room needed).
 *
 * A table with a build ID stays cached after its last user while its rows are in the row
 * map (the row map is the cache's storage: a later process of the same build finds it
 * there); one without is dropped with its last user. The cache decides when a table goes;
 * what its rows and map entries are (BPF) is the owner's business, done in the unload
 * callback. No BPF, no threads: everything runs on the caller's thread.
 */
#ifndef IGNIS_UNWIND_CACHE_H
#define IGNIS_UNWIND_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "../../bpf/profiler.h"
#include "../../symbolizer/symbolizer.h"
#include "common/hashmap.h"

/* After building a table from more CFI than this (bytes), return freed memory to the system. */
#define UNWIND_TRIM_AFTER_CFI_BYTES (256 * 1024)

enum unwind_table_state {
	UNWIND_TABLE_BUILDING, /* queued or on the build thread */
	UNWIND_TABLE_WAITING,  /* built, waiting for room in the row map (rows held in built) */
	UNWIND_TABLE_READY,    /* in the row map */
	UNWIND_TABLE_NONE,     /* no table: no CFI, unreadable, or not loaded (no_room, evicted) */
};

/* A table in use whose object had no frame in the stacks of this many windows is cold: its
 * rows may be evicted to make room for another table. */
#define UNWIND_COLD_WINDOWS 2

/* A file a process ran or mapped a table's object from, as BPF sees mm->exe_file or a
 * VMA's file. */
struct unwind_exe_ref {
	struct ignis_unwind_exe_key key;
	bool in_map; /* unwind_exes[key] is written */
	/* The file at key as the agent holds it (0 when unknown): BPF's check where the build
	 * ID is not in memory yet (struct ignis_unwind_exe). */
	uint64_t size;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
};

struct unwind_table {
	/* The cache's (unwind_cache.c). */
	char key[2 * 64 + 24]; /* "b:" and the build ID in hex, or "o:<address>" without one */
	bool by_build_id;      /* cached past its last user */
	enum unwind_table_state state;
	uint32_t users;		/* processes referencing it */
	struct sym_object *obj; /* reference held while building, or for good without build ID */
	char name[64];		/* the object's file name (its last component), for logs */

	/* Use and room (unwinder.c, unwind_publish.c). A NONE table with no_room or evicted has
	 * CFI but no rows in the map: a frame-pointer walk out of its code cannot be trusted
	 * (unwinder__fp_step_ok() says so), and it is built again when its object is sampled
	 * and room can be made. */
	uint64_t last_sampled; /* window its object last had a frame in a stack */
	uint64_t retry_window; /* window of the last rebuild for room */
	uint32_t retries;      /* rebuilds for room since it was last loaded: the next waits
				* 2^retries windows (at most 64), so a table that keeps failing
				* to find room is not rebuilt every window */
	uint32_t want_rows;    /* rows of its last build */
	bool no_room;	       /* did not fit: larger than the map, or no room even after
				* evicting (unwinder__make_room()) */
	bool evicted;	       /* its rows were evicted while processes used it */
	bool logged;	       /* its no-room line was logged (once per table) */

	/* The build thread's while BUILDING (unwind_build.c), then the main thread's. */
	struct sym_unwind_table built; /* rows, until uploaded */
	int build_err;
	uint64_t build_ns;
	struct unwind_table *next_job, *prev_job; /* build queue (newest at the head) / done list */
	uint64_t queued_ns;			  /* CLOCK_MONOTONIC when queued */
	uint8_t build_queue; /* under the builder's lock: 0 none, 1 the queue, 2 shared */

	/* Publishing's (unwind_publish.c): where the rows are, and unwind_exes. */
	uint32_t row_start, nr_rows;
	uint64_t base; /* ELF address of row pc 0 */
	bool fresh;    /* just uploaded: its processes are published again */
	/* As a file a process runs or maps (unwind_exes), for the samples before the process
	 * is published: what identifies it in memory, taken while the object was held. */
	bool exe_layout; /* text_*, build_id_vaddr and build_id are known */
	uint64_t text_vaddr, text_offset, text_size, build_id_vaddr;
	uint8_t build_id[20];
	uint32_t build_id_len;
	struct unwind_exe_ref *exe_refs; /* keys of unwind_exes that are this table */
	size_t nr_exe_refs, cap_exe_refs;
};

/* Called for a READY table just before the cache frees it (its last user went, or it was
 * evicted): release its rows and map entries. t is already out of the cache. */
typedef void (*unwind_table_unload_fn)(void *ctx, struct unwind_table *t);

/* Embedded in its owner: unwind_cache__init() / unwind_cache__fini(). */
struct unwind_cache {
	struct hashmap tables; /* key string -> struct unwind_table */
	unwind_table_unload_fn unload;
	void *ctx;
};

void unwind_cache__init(struct unwind_cache *c, unwind_table_unload_fn unload, void *ctx);
/* Free every table, whatever its references, without unloading (the maps go with their
 * owner). Tables on the build queue must be off it (the build thread stopped). */
void unwind_cache__fini(struct unwind_cache *c);

/*
 * The table of obj, with one more reference (dropped with unwind_cache__put()): the cached
 * one, or a new one in state BUILDING holding a reference to obj, with *created set, which
 * the caller queues for building. Returns NULL (errno ENOMEM) when it cannot be created.
 */
struct unwind_table *unwind_cache__get(struct unwind_cache *c, struct sym_object *obj,
				       bool *created);

/* The table of obj without taking a reference, or NULL; borrowed until the cache changes. */
const struct unwind_table *unwind_cache__find(const struct unwind_cache *c,
					      const struct sym_object *obj);

/* The table of obj without taking a reference, or NULL; for marking its use. */
struct unwind_table *unwind_cache__find_mut(struct unwind_cache *c, const struct sym_object *obj);

/*
 * Drop a reference (t may be NULL). At the last one, a READY table with a build ID stays
 * cached, and so does a no_room one (its state is remembered: not built and logged again
 * for every process), a BUILDING one stays until the build thread hands it back (the caller then
 * removes it), any other is unloaded (if READY) and freed.
 */
void unwind_cache__put(struct unwind_cache *c, struct unwind_table *t);

/* Take t out of the cache, unload it if READY, and free it. */
void unwind_cache__remove(struct unwind_cache *c, struct unwind_table *t);

/* Iterate over the cached tables ((struct unwind_table *)e->value); the cache must not
 * change during the walk. */
#define unwind_cache__for_each(c, e) hashmap__for_each(&(c)->tables, e)

/* Free the built rows (uploaded, or of no use), giving a large table's memory back to the
 * system. */
void unwind_table__release_built(struct unwind_table *t);

#endif /* IGNIS_UNWIND_CACHE_H */
