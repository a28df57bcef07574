/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The unwinder's build thread: turns queued objects' CFI into unwind tables
 * (sym_object__unwind_table()) off the main thread, and wakes the main loop through an
 * eventfd when finished tables wait to be taken.
 *
 * Order: newest first — a process that just started is the likeliest to be short-lived, and
 * its tables help only if they arrive while it runs, not after a host's start-up backlog; a
 * table that has waited longer than UNWIND_BUILD_MAX_WAIT_NS goes first instead, so that an
 * overloaded thread turns fair (oldest first) rather than starve anyone. A queued table
 * that another process asks for (libc, wanted by every new process while the agent's
 * start-up backlog is built) moves to a second queue, built before the first (newest first,
 * with the same fairness rule); while the first has a table waiting that long, the two take
 * turns, so neither starves.
 *
 * While a table is queued or being built, the build thread owns its obj, built, build_err
 * and build_ns fields; the job links and build_queue are under the builder's lock (the main
 * thread moves a queued table between the queues); everything else in it stays the main
 * thread's.
 */
#ifndef IGNIS_UNWIND_BUILD_H
#define IGNIS_UNWIND_BUILD_H

#include "common/ignis.h"
#include "unwind_cache.h"

/* A queued table that has waited longer than this (ns) is built before newer ones. */
#define UNWIND_BUILD_MAX_WAIT_NS (1000 * NSEC_PER_MSEC)

struct unwind_builder;

/* Start the build thread. Returns NULL with errno set (ENOMEM, EMFILE, or the thread's
 * error). */
struct unwind_builder *unwind_builder__new(void);
/* Stop the thread, waiting for the table it builds; accepts NULL. Tables still queued or
 * done are not freed (the cache owns them) and are never built. */
void unwind_builder__free(struct unwind_builder *b);
/* Build nothing more: the thread ends after the table it builds, without waiting for it
 * (the agent is stopping); unwind_builder__free() joins it. Accepts NULL. */
void unwind_builder__stop(struct unwind_builder *b);

/* Queue t (state BUILDING, t->obj held) for building, ahead of every older request. */
void unwind_builder__queue(struct unwind_builder *b, struct unwind_table *t);

/* Another process wants t (state BUILDING): if it still waits in the queue, it moves to the
 * shared queue, built first. A no-op once its build has started. */
void unwind_builder__want(struct unwind_builder *b, struct unwind_table *t);

/*
 * Take the tables built since the last call, a list linked by next_job (NULL if none), each
 * with its rows in built or its failure in build_err (negative errno, -ENODATA: no CFI);
 * they are the main thread's again. Resets the wake descriptor.
 */
struct unwind_table *unwind_builder__take_done(struct unwind_builder *b);

/* A descriptor that turns readable when built tables wait for unwind_builder__take_done();
 * owned by b. */
int unwind_builder__wake_fd(const struct unwind_builder *b);

#endif /* IGNIS_UNWIND_BUILD_H */
