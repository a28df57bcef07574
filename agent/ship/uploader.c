// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/hashmap.h"
#include "operate/log.h"
#include "spool.h"
#include "uploader.h"

/* A rejected target's server message is logged at most this often. */
#define REJECT_LOG_EVERY_NS (3600 * NSEC_PER_SEC)
/* Memory an entry takes beyond its pprof: the struct, its labels and key, roughly. */
#define ENTRY_OVERHEAD 512

/* One target's queue. */
struct tqueue {
	char *key;
	struct upload *head, *tail;
	bool in_flight;
	uint64_t rejected_logged_ns; /* CLOCK_MONOTONIC of the last logged rejection */
	uint64_t last_used_ns;
};

struct uploader {
	struct uploader_opts o;
	struct spool *spool;
	pthread_mutex_t lock;
	pthread_cond_t wake; /* work, a finished attempt, or stop */
	pthread_t *threads;
	unsigned int nr_threads;
	atomic_bool abort; /* aborts transfers in flight */
	bool closing;	   /* no more enqueues; finish what is queued */
	bool stop;	   /* workers exit */

	struct upload *head, *tail; /* every queued profile, oldest first */
	struct hashmap targets;	    /* key -> struct tqueue */
	uint64_t next_seq;
	uint64_t in_flight;

	uint64_t next_try_ns; /* CLOCK_MONOTONIC before which nothing is sent */
	uint64_t backoff_ns;  /* the next pause after a failure */
	uint64_t backoff_gen; /* bumped by each pause: failures of attempts started before it
			       * do not double it again */
	uint64_t prune_ns;

	struct uploader_stats st;
};

static uint64_t hash_key(const void *k)
{
	return hash_str(k);
}

static bool equal_key(const void *a, const void *b)
{
	return !strcmp(a, b);
}

static uint64_t entry_bytes(const struct upload *e)
{
	return e->data ? e->len + ENTRY_OVERHEAD : ENTRY_OVERHEAD;
}

/* ---- Queue (under the lock) ------------------------------------------------------------- */

static void unlink_entry(struct uploader *u, struct upload *e)
{
	struct tqueue *tq = e->tq;

	if (e->prev)
		e->prev->next = e->next;
	else
		u->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		u->tail = e->prev;
	if (e->tprev)
		e->tprev->tnext = e->tnext;
	else
		tq->head = e->tnext;
	if (e->tnext)
		e->tnext->tprev = e->tprev;
	else
		tq->tail = e->tprev;
	e->prev = e->next = e->tprev = e->tnext = NULL;
	u->st.queued--;
	u->st.queue_bytes -= e->mem_bytes;
	if (e->spool_name[0])
		u->st.spooled--;
}

/* Remove e for good: its spool file too. */
static void remove_entry(struct uploader *u, struct upload *e)
{
	unlink_entry(u, e);
	if (u->spool)
		spool__remove(u->spool, e);
	u->st.spool_bytes = u->spool ? spool__bytes(u->spool) : 0;
	upload_free(e);
}

static void drop_entry(struct uploader *u, struct upload *e, enum upload_drop why)
{
	u->st.dropped[why]++;
	remove_entry(u, e);
}

static struct tqueue *tqueue_of(struct uploader *u, const char *key)
{
	struct tqueue *tq = hashmap__find(&u->targets, key);

	if (tq)
		return tq;
	tq = calloc(1, sizeof(*tq));
	if (!tq)
		return NULL;
	tq->key = strdup(key);
	if (!tq->key || hashmap__insert(&u->targets, tq->key, tq)) {
		free(tq->key);
		free(tq);
		return NULL;
	}
	return tq;
}

/* Append e, whose seq orders it; entries loaded from the spool come in order too. */
static int append_entry(struct uploader *u, struct upload *e)
{
	struct tqueue *tq = tqueue_of(u, e->key);

	if (!tq)
		return -ENOMEM;
	e->tq = tq;
	e->prev = u->tail;
	e->next = NULL;
	if (u->tail)
		u->tail->next = e;
	else
		u->head = e;
	u->tail = e;
	e->tprev = tq->tail;
	e->tnext = NULL;
	if (tq->tail)
		tq->tail->tnext = e;
	else
		tq->head = e;
	tq->tail = e;
	tq->last_used_ns = now_mono_ns();
	/* Counted as it is now: a spooled entry's pprof read back for an attempt is not. */
	e->mem_bytes = entry_bytes(e);
	u->st.queued++;
	u->st.queue_bytes += e->mem_bytes;
	if (e->spool_name[0])
		u->st.spooled++;
	return 0;
}

/* The oldest entry not in flight, or NULL. */
static struct upload *oldest_idle(struct uploader *u)
{
	struct upload *e;

	for (e = u->head; e && e->in_flight; e = e->next)
		;
	return e;
}

static void drop_too_old(struct uploader *u)
{
	uint64_t now = now_real_ns(), n = 0;
	struct upload *e, *next;

	if (now < u->o.max_age_ns)
		return;
	/* Oldest first by arrival, which is window order up to a few seconds. */
	for (e = u->head; e; e = next) {
		next = e->next;
		if (e->time_ns + u->o.max_age_ns >= now)
			break;
		if (e->in_flight)
			continue;
		drop_entry(u, e, DROP_TOO_OLD);
		n++;
	}
	if (n)
		pr_warn_ratelimited(3, 600,
				    "upload: %" PRIu64 " profiles dropped: older than the "
				    "server's ingestion window (%" PRIu64 " s)",
				    n, u->o.max_age_ns / NSEC_PER_SEC);
}

/* Free targets that have been empty for an hour. */
static void prune_targets(struct uploader *u)
{
	uint64_t now = now_mono_ns();
	struct hashmap_entry *he;
	bool again = true;

	if (now - u->prune_ns < 60 * NSEC_PER_SEC)
		return;
	u->prune_ns = now;
	while (again) {
		again = false;
		hashmap__for_each(&u->targets, he) {
			struct tqueue *tq = he->value;

			if (tq->head || tq->in_flight ||
			    now - tq->last_used_ns < REJECT_LOG_EVERY_NS)
				continue;
			hashmap__delete(&u->targets, tq->key);
			free(tq->key);
			free(tq);
			again = true; /* the walk is void after a delete */
			break;
		}
	}
}

/* The next entry to send: the oldest head of a target with nothing in flight. */
static struct upload *pick(struct uploader *u)
{
	struct hashmap_entry *he;
	struct upload *best = NULL;

	hashmap__for_each(&u->targets, he) {
		struct tqueue *tq = he->value;

		if (tq->in_flight || !tq->head)
			continue;
		if (!best || tq->head->seq < best->seq)
			best = tq->head;
	}
	return best;
}

/* ---- Workers ----------------------------------------------------------------------------- */

static uint64_t jitter(uint64_t ns)
{
	/* 50-100 % of ns: many agents of a fleet must not retry in step. */
	return ns / 2 + (uint64_t)((double)(ns / 2) * ((double)rand() / RAND_MAX));
}

static void wait_until(struct uploader *u, uint64_t mono_ns)
{
	struct timespec ts;
	uint64_t now = now_mono_ns();

	if (!mono_ns) {
		pthread_cond_wait(&u->wake, &u->lock);
		return;
	}
	if (mono_ns <= now)
		return;
	/* The condition variable runs on CLOCK_MONOTONIC (set at init). */
	ts.tv_sec = (time_t)(mono_ns / NSEC_PER_SEC);
	ts.tv_nsec = (long)(mono_ns % NSEC_PER_SEC);
	pthread_cond_timedwait(&u->wake, &u->lock, &ts);
}

static void printable(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
			*s = ' ';
}

static const char *service_of(const struct upload *e)
{
	uint32_t i;

	for (i = 0; i < e->nr_labels; i++)
		if (!strcmp(e->labels[i].name, "service_name"))
			return e->labels[i].value;
	return "?";
}

/* Account for one finished attempt (under the lock). */
static void settle(struct uploader *u, struct upload *e, const struct send_result *r,
		   uint64_t attempt_gen)
{
	uint64_t now = now_mono_ns(), pause;

	e->in_flight = false;
	e->tq->in_flight = false;
	u->in_flight--;
	switch (r->outcome) {
	case SEND_OK:
		u->st.sent++;
		u->st.bytes_sent += r->bytes;
		u->backoff_ns = u->o.backoff_min_ns;
		/* A pause set by a failure after this attempt began stays. */
		if (attempt_gen == u->backoff_gen) {
			u->next_try_ns = 0;
			u->st.backoff_sec = 0;
		}
		remove_entry(u, e);
		break;
	case SEND_RETRY:
		u->st.retries++;
		u->st.errors[r->code]++;
		/* The first failure after a pause sets the next one; the others of the same
		 * burst (attempts already in flight) only keep it. */
		if (attempt_gen == u->backoff_gen) {
			pause = jitter(u->backoff_ns);
			if (r->retry_after_sec >= 0) {
				uint64_t ra = (uint64_t)(r->retry_after_sec * 1e9);

				pause = ra < u->o.backoff_max_ns ? ra : u->o.backoff_max_ns;
			}
			u->next_try_ns = now + pause;
			u->st.backoff_sec = (double)pause / 1e9;
			u->backoff_ns = u->backoff_ns * 2 < u->o.backoff_max_ns ?
						u->backoff_ns * 2 :
						u->o.backoff_max_ns;
			u->backoff_gen++;
			if (r->what[0])
				pr_warn_ratelimited(3, 300,
						    "upload of %s failed (%s: %s): retrying in "
						    "%.1f s, %" PRIu64 " profiles queued",
						    service_of(e), r->what, r->message,
						    (double)pause / 1e9, u->st.queued);
			else
				pr_warn_ratelimited(3, 300,
						    "upload of %s failed (%s%s%s): retrying in "
						    "%.1f s, %" PRIu64 " profiles queued",
						    service_of(e), r->status ? "HTTP " : "",
						    r->status ? "" : r->message,
						    r->status ? r->message : "",
						    (double)pause / 1e9, u->st.queued);
		}
		break;
	case SEND_DROP:
		u->st.errors[r->code]++;
		if (!e->tq->rejected_logged_ns ||
		    now - e->tq->rejected_logged_ns >= REJECT_LOG_EVERY_NS) {
			e->tq->rejected_logged_ns = now;
			if (r->what[0])
				pr_warn("upload of %s refused, %s: %s (profile dropped; not "
					"retried; logged once an hour per service)",
					service_of(e), r->what, r->message);
			else
				pr_warn("upload of %s refused, HTTP %ld: %s (profile dropped; not "
					"retried; logged once an hour per service)",
					service_of(e), r->status, r->message);
		}
		drop_entry(u, e, DROP_REJECTED);
		break;
	}
}

static void *worker(void *arg)
{
	struct uploader *u = arg;
	void *sender = u->o.sender.open(u->o.sender.ctx);

	if (!sender)
		pr_err("upload: cannot start a sender: %s", strerror(errno));
	pthread_mutex_lock(&u->lock);
	while (!u->stop) {
		struct send_result r;
		struct upload *e;
		uint64_t gen;
		bool loaded = false;
		int err;

		drop_too_old(u);
		prune_targets(u);
		if (u->next_try_ns > now_mono_ns()) {
			wait_until(u, u->next_try_ns);
			continue;
		}
		e = sender ? pick(u) : NULL;
		if (!e) {
			wait_until(u, now_mono_ns() + 5 * NSEC_PER_SEC);
			continue;
		}
		e->in_flight = e->tq->in_flight = true;
		u->in_flight++;
		gen = u->backoff_gen;
		pthread_mutex_unlock(&u->lock);

		memset(&r, 0, sizeof(r));
		r.retry_after_sec = -1;
		if (!e->data) {
			/* In the spool only: read it back for this attempt. */
			err = spool__read(u->spool, e, &e->data, &e->len);
			if (err) {
				pthread_mutex_lock(&u->lock);
				pr_warn_ratelimited(3, 60,
						    "spool: cannot read %s back: %s: dropped",
						    e->spool_name, strerror(-err));
				e->in_flight = e->tq->in_flight = false;
				u->in_flight--;
				drop_entry(u, e, DROP_SPOOL_ERROR);
				continue;
			}
			loaded = true;
		}
		u->o.sender.send(sender, e, &u->abort, &r);
		printable(r.message);

		pthread_mutex_lock(&u->lock);
		if (loaded && r.outcome == SEND_RETRY)
			zfree(&e->data); /* back to the spool only: memory stays bounded */
		settle(u, e, &r, gen);
		pthread_cond_broadcast(&u->wake);
	}
	pthread_mutex_unlock(&u->lock);
	if (sender)
		u->o.sender.close(sender);
	return NULL;
}

/* ---- Enqueue ----------------------------------------------------------------------------- */

/* Make room for an entry of bytes: spool or drop the oldest. Under the lock. Returns 0 when
 * it fits in memory, 1 when it must go to the spool, -ENOSPC when nothing can be freed. */
static int make_room(struct uploader *u, struct upload *e)
{
	for (;;) {
		struct upload *old;

		if (u->st.queue_bytes + entry_bytes(e) <= u->o.queue_max_bytes)
			return 0;
		if (u->spool && spool__bytes(u->spool) + e->len + 4096 <= u->o.spool_max_bytes)
			return 1;
		old = oldest_idle(u);
		if (!old)
			return -ENOSPC;
		pr_warn_ratelimited(3, 60,
				    "upload: queue%s full: dropped the oldest profile (%s); "
				    "%" PRIu64 " dropped so far",
				    u->spool ? " and spool" : "", service_of(old),
				    u->st.dropped[DROP_QUEUE_FULL] + 1);
		drop_entry(u, old, DROP_QUEUE_FULL);
	}
}

static struct upload *new_entry(const struct target *t, uint64_t time_ns, uint64_t duration_ns)
{
	struct upload *e = calloc(1, sizeof(*e));
	uint32_t i;

	if (!e)
		return NULL;
	e->time_ns = time_ns;
	e->duration_ns = duration_ns;
	e->key = strdup(t->key);
	e->labels = calloc(t->nr_labels + 1, sizeof(*e->labels));
	if (!e->key || !e->labels)
		goto nomem;
	for (i = 0; i < t->nr_labels; i++) {
		e->labels[i].name = strdup(t->labels[i].name);
		e->labels[i].value = strdup(t->labels[i].value);
		e->nr_labels++;
		if (!e->labels[i].name || !e->labels[i].value)
			goto nomem;
	}
	return e;
nomem:
	upload_free(e);
	return NULL;
}

int uploader__enqueue(struct uploader *u, const struct target *t, uint64_t time_ns,
		      uint64_t duration_ns, uint8_t *data, size_t len)
{
	struct upload *e = new_entry(t, time_ns, duration_ns);
	int err, where;

	if (!e) {
		free(data);
		pthread_mutex_lock(&u->lock);
		u->st.dropped[DROP_QUEUE_FULL]++;
		pthread_mutex_unlock(&u->lock);
		return -ENOMEM;
	}
	e->data = data;
	e->len = len;
	pthread_mutex_lock(&u->lock);
	e->seq = u->next_seq++;
	where = make_room(u, e);
	if (where == 1) {
		err = spool__write(u->spool, e, 0);
		if (!err) {
			zfree(&e->data);
		} else {
			pr_warn_ratelimited(3, 60, "spool: cannot write to it: %s", strerror(-err));
			/* Keep it in memory if it fits after dropping the oldest. */
			while (u->st.queue_bytes + entry_bytes(e) > u->o.queue_max_bytes &&
			       oldest_idle(u))
				drop_entry(u, oldest_idle(u), DROP_QUEUE_FULL);
			where = u->st.queue_bytes + entry_bytes(e) <= u->o.queue_max_bytes ?
					0 :
					-ENOSPC;
		}
	}
	if (where < 0) {
		u->st.dropped[DROP_QUEUE_FULL]++;
		pthread_mutex_unlock(&u->lock);
		upload_free(e);
		return 0;
	}
	err = append_entry(u, e);
	if (err) {
		u->st.dropped[DROP_QUEUE_FULL]++;
		if (u->spool)
			spool__remove(u->spool, e);
		upload_free(e);
	}
	u->st.spool_bytes = u->spool ? spool__bytes(u->spool) : 0;
	pthread_cond_broadcast(&u->wake);
	pthread_mutex_unlock(&u->lock);
	return err;
}

/* ---- Lifecycle --------------------------------------------------------------------------- */

static int load_one(void *ctx, struct upload *e)
{
	struct uploader *u = ctx;

	if (e->seq >= u->next_seq)
		u->next_seq = e->seq + 1;
	if (append_entry(u, e)) {
		upload_free(e);
		return -ENOMEM;
	}
	u->st.loaded++;
	return 0;
}

/* Files sort by window start; seqs of an earlier run may be reused by this one, so number
 * the loaded entries afresh, in file order. */
static void renumber(struct uploader *u)
{
	struct upload *e;
	uint64_t seq = 0;

	for (e = u->head; e; e = e->next)
		e->seq = seq++;
	u->next_seq = seq;
}

struct uploader *uploader__new(const struct uploader_opts *opts)
{
	struct uploader *u = calloc(1, sizeof(*u));
	pthread_condattr_t ca;
	unsigned int i;
	int err = -ENOMEM, n;

	if (!u)
		return NULL;
	u->o = *opts;
	if (!u->o.workers)
		u->o.workers = 1;
	u->backoff_ns = u->o.backoff_min_ns;
	pthread_mutex_init(&u->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&u->wake, &ca);
	pthread_condattr_destroy(&ca);
	hashmap__init(&u->targets, hash_key, equal_key);
	if (opts->spool_dir) {
		u->spool = spool__open(opts->spool_dir, opts->spool_max_bytes);
		if (!u->spool) {
			err = -errno;
			goto err_out;
		}
		n = spool__load(u->spool, load_one, u);
		if (n < 0) {
			err = n;
			goto err_out;
		}
		renumber(u);
		u->st.spool_bytes = spool__bytes(u->spool);
		u->st.dropped[DROP_SPOOL_ERROR] += (uint64_t)n;
		if (u->st.loaded)
			pr_info("spool: %" PRIu64 " profiles (%" PRIu64 " KiB) from an earlier run "
				"will be sent",
				u->st.loaded, u->st.spool_bytes >> 10);
	}
	u->threads = calloc(u->o.workers, sizeof(*u->threads));
	if (!u->threads)
		goto err_out;
	for (i = 0; i < u->o.workers; i++) {
		if (pthread_create(&u->threads[i], NULL, worker, u)) {
			err = -EAGAIN;
			goto err_out;
		}
		u->nr_threads++;
	}
	return u;
err_out:
	uploader__free(u, 0);
	errno = -err;
	return NULL;
}

/* Keep what is in memory in the spool, or count it lost. Under the lock, workers gone. */
static void persist(struct uploader *u)
{
	uint64_t kept = 0, lost = 0;
	struct upload *e, *next;

	for (e = u->head; e; e = next) {
		next = e->next;
		if (e->spool_name[0] && !e->data)
			continue;
		if (e->spool_name[0]) { /* read back for an attempt: the file is still there */
			zfree(&e->data);
			continue;
		}
		/* The memory queue's budget may join the spool's at exit. */
		if (u->spool && !spool__write(u->spool, e, u->o.queue_max_bytes)) {
			zfree(&e->data);
			kept++;
			continue;
		}
		u->st.dropped[DROP_SHUTDOWN]++;
		lost++;
	}
	if (kept)
		pr_info("spool: %" PRIu64 " queued profiles kept for the next run", kept);
	if (lost)
		pr_warn("upload: %" PRIu64 " queued profiles lost at exit (%s)", lost,
			u->spool ? "the spool is full" : "no --spool-dir to keep them");
}

void uploader__free(struct uploader *u, uint64_t flush_ns)
{
	uint64_t deadline = now_mono_ns() + flush_ns;
	struct hashmap_entry *he;
	struct upload *e, *next;
	unsigned int i;

	if (!u)
		return;
	pthread_mutex_lock(&u->lock);
	u->closing = true;
	while (u->nr_threads && u->head && now_mono_ns() < deadline && u->next_try_ns < deadline) {
		pthread_cond_broadcast(&u->wake);
		wait_until(u, deadline);
	}
	u->stop = true;
	atomic_store(&u->abort, true);
	pthread_cond_broadcast(&u->wake);
	pthread_mutex_unlock(&u->lock);
	for (i = 0; i < u->nr_threads; i++)
		pthread_join(u->threads[i], NULL);
	free(u->threads);

	pthread_mutex_lock(&u->lock);
	persist(u);
	for (e = u->head; e; e = next) {
		next = e->next;
		upload_free(e);
	}
	hashmap__for_each(&u->targets, he) {
		struct tqueue *tq = he->value;

		free(tq->key);
		free(tq);
	}
	hashmap__fini(&u->targets);
	pthread_mutex_unlock(&u->lock);
	spool__free(u->spool);
	pthread_cond_destroy(&u->wake);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

void uploader__stats(struct uploader *u, struct uploader_stats *stats)
{
	pthread_mutex_lock(&u->lock);
	*stats = u->st;
	if (u->next_try_ns <= now_mono_ns())
		stats->backoff_sec = 0;
	pthread_mutex_unlock(&u->lock);
}
