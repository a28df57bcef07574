// SPDX-License-Identifier: Apache-2.0
/*
 * The debuginfod fetch thread. Requests and results are short lists under one mutex: the
 * drain thread appends a build ID and takes finished files, the fetch thread does the slow
 * part (libdebuginfod's HTTP transfer) without the lock.
 */
#include <elfutils/debuginfod.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../symbolizer/symbolizer.h"
#include "debuginfod.h"
#include "common/ignis.h"
#include "operate/log.h"

#define MAX_BUILD_ID	64
#define MAX_KNOWN	4096 /* build IDs remembered (asked, fetched or failed) */
#define RETRY_FAILED_NS (600ULL * NSEC_PER_SEC)

enum fetch_state { FETCH_QUEUED, FETCH_RUNNING, FETCH_DONE, FETCH_TAKEN, FETCH_FAILED };

struct fetch {
	uint8_t id[MAX_BUILD_ID];
	size_t len;
	enum fetch_state state;
	int fd;
	uint64_t failed_ns;
};

struct debuginfod_fetcher {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	atomic_bool quit;
	const atomic_bool *stop;
	struct fetch *fetches;
	size_t nr, cap;
	struct debuginfod_stats st;
};

static struct debuginfod_fetcher *progress_owner(debuginfod_client *c)
{
	return debuginfod_get_user_data(c);
}

/* Called by libdebuginfod during a transfer: a non-zero return cancels it. */
static int on_progress(debuginfod_client *c, long done, long total)
{
	struct debuginfod_fetcher *f = progress_owner(c);

	(void)done;
	(void)total;
	return (f->stop && atomic_load(f->stop)) || atomic_load(&f->quit);
}

static void hex_of(const struct fetch *x, char *buf)
{
	size_t i;

	for (i = 0; i < x->len; i++)
		sprintf(buf + 2 * i, "%02x", x->id[i]);
	buf[2 * x->len] = '\0';
}

static void *fetch_thread(void *arg)
{
	struct debuginfod_fetcher *f = arg;
	debuginfod_client *client = debuginfod_begin();
	char hex[2 * MAX_BUILD_ID + 1];

	if (!client) {
		pr_warn("debuginfod: cannot start a client: debug files will not be fetched");
		return NULL;
	}
	debuginfod_set_user_data(client, f);
	debuginfod_set_progressfn(client, on_progress);
	pthread_mutex_lock(&f->lock);
	while (!atomic_load(&f->quit)) {
		struct fetch *x = NULL, job;
		size_t i;
		int fd;

		for (i = 0; i < f->nr && !x; i++)
			if (f->fetches[i].state == FETCH_QUEUED)
				x = &f->fetches[i];
		if (!x) {
			pthread_cond_wait(&f->wake, &f->lock);
			continue;
		}
		x->state = FETCH_RUNNING;
		job = *x;
		pthread_mutex_unlock(&f->lock);

		fd = debuginfod_find_debuginfo(client, job.id, (int)job.len, NULL);
		hex_of(&job, hex);
		if (fd >= 0)
			pr_debug("debuginfod: fetched the debug file of %s", hex);
		else
			pr_debug("debuginfod: no debug file for %s: %s", hex, strerror(-fd));

		pthread_mutex_lock(&f->lock);
		/* The array may have moved: find the entry again. */
		for (i = 0; i < f->nr; i++) {
			x = &f->fetches[i];
			if (x->state == FETCH_RUNNING && x->len == job.len &&
			    !memcmp(x->id, job.id, job.len))
				break;
		}
		if (i == f->nr) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		if (fd >= 0) {
			x->state = FETCH_DONE;
			x->fd = fd;
			f->st.fetched++;
		} else {
			x->state = FETCH_FAILED;
			x->failed_ns = now_mono_ns();
			f->st.failed++;
		}
	}
	pthread_mutex_unlock(&f->lock);
	debuginfod_end(client);
	return NULL;
}

struct debuginfod_fetcher *debuginfod_fetcher__new(const char *urls, unsigned int timeout_sec,
						   const atomic_bool *stop)
{
	struct debuginfod_fetcher *f;
	char timeout[16];
	int err;

	/* libdebuginfod reads its settings from the environment. */
	if (setenv("DEBUGINFOD_URLS", urls, 1))
		return NULL;
	/* DEBUGINFOD_TIMEOUT bounds the wait for a server's first bytes, DEBUGINFOD_MAXTIME a
	 * whole download: both, so that one fetch never takes longer than timeout_sec. */
	snprintf(timeout, sizeof(timeout), "%u", timeout_sec);
	if (setenv("DEBUGINFOD_TIMEOUT", timeout, 1) || setenv("DEBUGINFOD_MAXTIME", timeout, 1))
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->stop = stop;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->wake, NULL);
	err = pthread_create(&f->thread, NULL, fetch_thread, f);
	if (err) {
		pthread_cond_destroy(&f->wake);
		pthread_mutex_destroy(&f->lock);
		free(f);
		errno = err;
		return NULL;
	}
	return f;
}

void debuginfod_fetcher__free(struct debuginfod_fetcher *f)
{
	size_t i;

	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	atomic_store(&f->quit, true);
	pthread_cond_signal(&f->wake);
	pthread_mutex_unlock(&f->lock);
	pthread_join(f->thread, NULL);
	for (i = 0; i < f->nr; i++)
		if (f->fetches[i].state == FETCH_DONE)
			close(f->fetches[i].fd);
	free(f->fetches);
	pthread_cond_destroy(&f->wake);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

void debuginfod_fetcher__request(struct debuginfod_fetcher *f, const uint8_t *build_id, size_t len)
{
	struct fetch *x;
	size_t i;

	if (!f || !len || len > MAX_BUILD_ID)
		return;
	pthread_mutex_lock(&f->lock);
	for (i = 0; i < f->nr; i++) {
		x = &f->fetches[i];
		if (x->len != len || memcmp(x->id, build_id, len))
			continue;
		if (x->state == FETCH_FAILED && now_mono_ns() - x->failed_ns > RETRY_FAILED_NS) {
			x->state = FETCH_QUEUED;
			f->st.requested++;
			pthread_cond_signal(&f->wake);
		}
		goto out;
	}
	if (f->nr >= MAX_KNOWN) {
		pr_warn_ratelimited(3, 600, "debuginfod: over %d build IDs asked for; no more",
				    MAX_KNOWN);
		goto out;
	}
	if (grow_array((void **)&f->fetches, &f->cap, f->nr + 1, sizeof(*f->fetches)))
		goto out;
	x = &f->fetches[f->nr++];
	memset(x, 0, sizeof(*x));
	memcpy(x->id, build_id, len);
	x->len = len;
	x->state = FETCH_QUEUED;
	x->fd = -1;
	f->st.requested++;
	pthread_cond_signal(&f->wake);
out:
	pthread_mutex_unlock(&f->lock);
}

void debuginfod_fetcher__take(struct debuginfod_fetcher *f,
			      void (*fn)(void *ctx, const uint8_t *build_id, size_t len, int fd),
			      void *ctx)
{
	struct fetch done[16];
	size_t i, n;

	if (!f)
		return;
	do {
		n = 0;
		pthread_mutex_lock(&f->lock);
		for (i = 0; i < f->nr && n < 16; i++) {
			if (f->fetches[i].state != FETCH_DONE)
				continue;
			done[n++] = f->fetches[i];
			f->fetches[i].state = FETCH_TAKEN;
			f->fetches[i].fd = -1;
		}
		pthread_mutex_unlock(&f->lock);
		for (i = 0; i < n; i++) {
			fn(ctx, done[i].id, done[i].len, done[i].fd);
			close(done[i].fd);
		}
	} while (n == 16);
}

void debuginfod_fetcher__stats(struct debuginfod_fetcher *f, struct debuginfod_stats *st)
{
	size_t i;

	memset(st, 0, sizeof(*st));
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	*st = f->st;
	for (i = 0; i < f->nr; i++)
		st->pending += f->fetches[i].state == FETCH_QUEUED ||
			       f->fetches[i].state == FETCH_RUNNING;
	pthread_mutex_unlock(&f->lock);
}

void debuginfod_fetcher_request_object(void *ctx, struct sym_object *obj)
{
	const uint8_t *id;
	size_t len = sym_object__build_id(obj, &id);

	if (len)
		debuginfod_fetcher__request(ctx, id, len);
}
