/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Debug files from debuginfod servers (sourceware.org/elfutils/Debuginfod.html), fetched by
 * libdebuginfod on a thread of their own: the drain asks for a build ID and carries on; a
 * later window takes what arrived. A server that is slow or down delays no window.
 */
#ifndef IGNIS_DEBUGINFOD_H
#define IGNIS_DEBUGINFOD_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct debuginfod_fetcher;

struct debuginfod_stats {
	uint64_t requested; /* build IDs asked for */
	uint64_t fetched;   /* debug files received */
	uint64_t failed;    /* not found, or the server failed or timed out */
	uint64_t pending;   /* waiting or in flight now */
};

/*
 * Start the fetch thread for the servers in urls (space-separated, as DEBUGINFOD_URLS),
 * each fetch giving up after timeout_sec; files are cached by libdebuginfod
 * ($DEBUGINFOD_CACHE_PATH, else its default). stop (borrowed) cancels transfers at exit.
 * Returns NULL with errno set (ENOMEM, or what the thread's creation says).
 */
struct debuginfod_fetcher *debuginfod_fetcher__new(const char *urls, unsigned int timeout_sec,
						   const atomic_bool *stop);
void debuginfod_fetcher__free(struct debuginfod_fetcher *f);

/* Ask for the debug file of a build ID; a build ID asked for before is not asked again
 * (a failed one after 10 minutes). Never blocks on the network. */
void debuginfod_fetcher__request(struct debuginfod_fetcher *f, const uint8_t *build_id, size_t len);

struct sym_object;

/* The same for an object (its build ID, if it has one), in the shape of the process table's
 * debug_missing callback (struct proctab_opts): ctx is the fetcher. */
void debuginfod_fetcher_request_object(void *ctx, struct sym_object *obj);

/* Hand each debug file fetched since the last call to fn (fd borrowed: closed after fn
 * returns). */
void debuginfod_fetcher__take(struct debuginfod_fetcher *f,
			      void (*fn)(void *ctx, const uint8_t *build_id, size_t len, int fd),
			      void *ctx);

void debuginfod_fetcher__stats(struct debuginfod_fetcher *f, struct debuginfod_stats *st);

#endif /* IGNIS_DEBUGINFOD_H */
