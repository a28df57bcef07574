// SPDX-License-Identifier: Apache-2.0
/*
 * The build thread: a queue of tables to build, newest first with a fairness rule, and an
 * eventfd that wakes the main loop (see unwind_build.h).
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "operate/log.h"
#include "unwind_build.h"

struct unwind_builder {
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;				   /* under lock */
	struct unwind_table *queue, *queue_tail;   /* under lock; newest at the head */
	struct unwind_table *shared, *shared_tail; /* under lock: asked for again; built first */
	bool took_shared;	   /* under lock: the last build came from the shared queue */
	struct unwind_table *done; /* under lock */
	int done_fd;		   /* eventfd: readable when done is not empty */
};

/* Under lock: take t off the list whose head and tail are *head and *tail. */
static void unlink_job(struct unwind_table **head, struct unwind_table **tail,
		       struct unwind_table *t)
{
	if (t->prev_job)
		t->prev_job->next_job = t->next_job;
	else
		*head = t->next_job;
	if (t->next_job)
		t->next_job->prev_job = t->prev_job;
	else
		*tail = t->prev_job;
	t->next_job = t->prev_job = NULL;
	t->build_queue = 0;
}

/* Under lock: put t at the head of a list. */
static void push_job(struct unwind_table **head, struct unwind_table **tail, struct unwind_table *t,
		     uint8_t which)
{
	t->prev_job = NULL;
	t->next_job = *head;
	if (*head)
		(*head)->prev_job = t;
	else
		*tail = t;
	*head = t;
	t->build_queue = which;
}

/* Under lock: a queue's next table (see UNWIND_BUILD_MAX_WAIT_NS), off it. */
static struct unwind_table *take_job(struct unwind_table **head, struct unwind_table **tail,
				     uint64_t now)
{
	struct unwind_table *t = *head;

	if (now - (*tail)->queued_ns > UNWIND_BUILD_MAX_WAIT_NS)
		t = *tail;
	unlink_job(head, tail, t);
	return t;
}

/* Under lock: the next table to build. The shared queue first; but while the other queue
 * has a table late (waited UNWIND_BUILD_MAX_WAIT_NS), the two take turns. */
static struct unwind_table *dequeue(struct unwind_builder *b)
{
	uint64_t now = now_mono_ns();
	bool late = b->queue && now - b->queue_tail->queued_ns > UNWIND_BUILD_MAX_WAIT_NS;

	b->took_shared = b->shared && !(late && b->took_shared);
	if (b->took_shared)
		return take_job(&b->shared, &b->shared_tail, now);
	return take_job(&b->queue, &b->queue_tail, now);
}

static void *build_thread(void *arg)
{
	static const uint64_t one = 1;
	struct unwind_builder *b = arg;

	pthread_mutex_lock(&b->lock);
	for (;;) {
		struct unwind_table *t;
		uint64_t t0;
		bool last;

		while (!b->queue && !b->shared && !b->stop)
			pthread_cond_wait(&b->cond, &b->lock);
		if (b->stop)
			break;
		t = dequeue(b);
		last = !b->queue && !b->shared;
		pthread_mutex_unlock(&b->lock);

		t0 = now_mono_ns();
		t->build_err = sym_object__unwind_table(t->obj, &t->built);
		t->build_ns = now_mono_ns() - t0;
		/* libdw's CFI caches are many small blocks in this thread's arena: give them
		 * back to the system after a large object, and when a burst of builds (a host's
		 * processes at start) is over, rather than keep the peak. */
		if (t->built.cfi_bytes > UNWIND_TRIM_AFTER_CFI_BYTES || last)
			malloc_trim(0);

		pthread_mutex_lock(&b->lock);
		t->next_job = b->done;
		b->done = t;
		/* Cannot fail but by overflowing the counter (2^64 - 1 wakeups unread). */
		if (write(b->done_fd, &one, sizeof(one)) < 0)
			pr_debug("unwinder: cannot wake the main loop: %s", strerror(errno));
	}
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

struct unwind_builder *unwind_builder__new(void)
{
	struct unwind_builder *b = calloc(1, sizeof(*b));
	int err;

	if (!b)
		return NULL;
	b->done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (b->done_fd < 0) {
		free(b);
		return NULL;
	}
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	err = pthread_create(&b->thread, NULL, build_thread, b);
	if (err) {
		unwind_builder__free(b);
		errno = err;
		return NULL;
	}
	b->thread_started = true;
	return b;
}

void unwind_builder__stop(struct unwind_builder *b)
{
	if (!b || !b->thread_started)
		return;
	pthread_mutex_lock(&b->lock);
	b->stop = true;
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

void unwind_builder__free(struct unwind_builder *b)
{
	if (!b)
		return;
	if (b->thread_started) {
		pthread_mutex_lock(&b->lock);
		b->stop = true;
		pthread_cond_signal(&b->cond);
		pthread_mutex_unlock(&b->lock);
		pthread_join(b->thread, NULL);
	}
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->cond);
	close(b->done_fd);
	free(b);
}

void unwind_builder__queue(struct unwind_builder *b, struct unwind_table *t)
{
	t->queued_ns = now_mono_ns();
	pthread_mutex_lock(&b->lock);
	push_job(&b->queue, &b->queue_tail, t, 1);
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

void unwind_builder__want(struct unwind_builder *b, struct unwind_table *t)
{
	pthread_mutex_lock(&b->lock);
	if (t->build_queue == 1) {
		unlink_job(&b->queue, &b->queue_tail, t);
		push_job(&b->shared, &b->shared_tail, t, 2);
	}
	pthread_mutex_unlock(&b->lock);
}

struct unwind_table *unwind_builder__take_done(struct unwind_builder *b)
{
	struct unwind_table *done;
	uint64_t wakeups;

	/* The build thread fills done and writes the eventfd under the lock: taking both under
	 * it, an empty list means nothing to reset either (no system call on every wakeup). */
	pthread_mutex_lock(&b->lock);
	done = b->done;
	b->done = NULL;
	if (done && read(b->done_fd, &wakeups, sizeof(wakeups)) < 0)
		pr_debug("unwinder: cannot read its eventfd: %s", strerror(errno));
	pthread_mutex_unlock(&b->lock);
	return done;
}

int unwind_builder__wake_fd(const struct unwind_builder *b)
{
	return b->done_fd;
}
