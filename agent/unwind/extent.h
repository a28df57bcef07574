/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Extents of a BPF array map: contiguous runs of entries [start, start + len), handed out
 * first fit (the lowest free run that is long enough) and coalesced with their free
 * neighbours when they come back. Indexes and lengths count map entries, not bytes.
 *
 * An extent that a published map entry pointed to may still be read by a BPF program, so it
 * is not freed at once: extents__defer() holds it until extents__grace_period(), which the
 * caller invokes once an RCU grace period has passed since (after the generation flip).
 * Only an extent nothing ever pointed to (a failed upload) goes back at once, with
 * extents__release().
 *
 * Pure bookkeeping: no BPF, no locks (one thread), no logging. The cap is the map's size:
 * the free and deferred lists never hold more runs than the map has entries.
 */
#ifndef IGNIS_EXTENT_H
#define IGNIS_EXTENT_H

#include <stddef.h>
#include <stdint.h>

struct extent {
	uint32_t start, len;
};

/* Embedded in its owner: extents__init() / extents__fini(). */
struct extents {
	struct extent *free; /* sorted by start, never adjacent, none empty */
	size_t nr_free, cap_free;
	struct extent *deferred; /* freed, reusable after the next grace period */
	size_t nr_deferred, cap_deferred;
};

/* All of [0, size) free. Returns 0 or -ENOMEM (then x needs only extents__fini()). */
int extents__init(struct extents *x, uint32_t size) __attribute__((warn_unused_result));
/* Free the lists; x may be zeroed or half-initialised. */
void extents__fini(struct extents *x);

/*
 * Take len entries from the first free run that holds them. Returns the extent's start (a
 * non-negative index), or -ENOSPC when no single free run is that long (fragmentation counts:
 * deferred entries do not). len must be above 0.
 */
int64_t extents__alloc(struct extents *x, uint32_t len);

/*
 * The same from the other end: the top len entries of the highest free run that holds them.
 * Large extents taken this way and small ones first fit keep the small ones from splitting
 * the room the large ones need.
 */
int64_t extents__alloc_high(struct extents *x, uint32_t len);

/*
 * Take exactly [start, start + len), which must lie inside one free run (splitting it when
 * the range is in its middle). len must be above 0. Returns 0, -ENOENT (not all free in one
 * run) or -ENOMEM (a split run could not be recorded; nothing changed).
 */
int extents__take(struct extents *x, uint32_t start, uint32_t len)
	__attribute__((warn_unused_result));

/*
 * Give back [start, start + len) at once, merging it with the free runs around it: only for
 * an extent of extents__alloc() that no published entry ever pointed to. Returns 0 or
 * -ENOMEM (the entries are lost until extents__fini()).
 */
int extents__release(struct extents *x, uint32_t start, uint32_t len)
	__attribute__((warn_unused_result));

/*
 * Free an extent that a published entry pointed to: it is reused only after the next
 * extents__grace_period(). len 0 is a no-op. Returns 0 or -ENOMEM (the entries are lost
 * until extents__fini()).
 */
int extents__defer(struct extents *x, uint32_t start, uint32_t len)
	__attribute__((warn_unused_result));

/* Entries freed by extents__defer() since the last grace period. */
uint64_t extents__deferred(const struct extents *x);

/* Entries free now, in runs of any length. */
uint64_t extents__free_entries(const struct extents *x);

/*
 * A grace period has passed: every deferred extent becomes free. Returns the number of
 * entries that could not be given back for lack of memory (0 normally; they are lost until
 * extents__fini()).
 */
uint64_t extents__grace_period(struct extents *x);

#endif /* IGNIS_EXTENT_H */
