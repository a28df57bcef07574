// SPDX-License-Identifier: Apache-2.0
/*
 * Unwind tables for the BPF unwinder: built off the main thread, cached by build ID in the
 * row map, published per process image (see unwinder.h and bpf/profiler.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <malloc.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include <linux/types.h>
#include <bpf/bpf.h>

#include "../bpf/profiler.h"
#include "../symbolizer/symbolizer.h"
#include "extent.h"
#include "hashmap.h"
#include "ignis.h"
#include "log.h"
#include "proctab.h"
#include "unwinder.h"

_Static_assert(UNWIND_CFA_NONE == SYM_CFA_NONE && UNWIND_CFA_RSP == SYM_CFA_RSP &&
		       UNWIND_CFA_RBP == SYM_CFA_RBP && UNWIND_CFA_PLT == SYM_CFA_PLT &&
		       UNWIND_CFA_OUTERMOST == SYM_CFA_OUTERMOST &&
		       UNWIND_CFA_UNSUPPORTED == SYM_CFA_UNSUPPORTED &&
		       UNWIND_CFA_SIGNAL == SYM_CFA_SIGNAL,
	       "CFA rules of bpf/profiler.h and symbolizer.h");
_Static_assert(UNWIND_RBP_SAME == SYM_RBP_SAME && UNWIND_RBP_AT_CFA == SYM_RBP_AT_CFA &&
		       UNWIND_RBP_UNDEFINED == SYM_RBP_UNDEFINED,
	       "rbp rules of bpf/profiler.h and symbolizer.h");

/* Entries written per bpf_map_update_batch() call. */
#define UPLOAD_CHUNK 4096
/* After building a table from more CFI than this, return freed memory to the system. */
#define TRIM_AFTER_CFI_BYTES (256 * 1024)
/*
 * Builds go newest first: a process that just started is the likeliest to be short-lived,
 * and its tables are useful only if they arrive while it runs (a host's start-up backlog
 * must not delay them); a long-running process loses little by waiting. A table that has
 * waited longer than this goes first instead, so that an overloaded thread turns fair
 * (oldest first) rather than starve anyone.
 */
#define BUILD_MAX_WAIT_NS (1000 * NSEC_PER_MSEC)

#define LOST_FMT "unwinder: out of memory: %u map entries are lost until restart"

/* Free an extent an entry pointed to, after the next grace period. */
static void defer(struct extents *x, uint32_t start, uint32_t len)
{
	if (extents__defer(x, start, len))
		pr_warn(LOST_FMT, len);
}

/* Give back at once an extent no entry pointed to (its upload failed). */
static void release(struct extents *x, uint32_t start, uint32_t len)
{
	if (extents__release(x, start, len))
		pr_warn(LOST_FMT, len);
}

static void grace_period(struct extents *x)
{
	uint64_t lost = extents__grace_period(x);

	if (lost)
		pr_warn("unwinder: out of memory: %llu map entries are lost until restart",
			(unsigned long long)lost);
}

/* ---- Tables ---- */

/* A file a process ran a table's object from, as BPF sees mm->exe_file. */
struct exe_ref {
	struct ignis_unwind_exe_key key;
	bool in_map; /* unwind_exes[key] is written */
};

enum table_state {
	TABLE_BUILDING, /* queued or on the build thread */
	TABLE_WAITING,	/* built, waiting for room in the row map (rows held in built) */
	TABLE_READY,	/* in the row map */
	TABLE_NONE,	/* no table: no CFI, unreadable, or too large */
};

struct table {
	char key[2 * 64 + 24]; /* build ID in hex, or "object:<address>" for objects without */
	bool by_build_id;      /* cached past its last user */
	enum table_state state;
	uint32_t users;	    /* processes referencing it */
	uint64_t last_used; /* unwinder tick of the last reference */
	uint32_t row_start, nr_rows;
	uint64_t base;		       /* ELF address of row pc 0 */
	struct sym_object *obj;	       /* reference held while building */
	struct sym_unwind_table built; /* from the build thread, until uploaded */
	int build_err;
	uint64_t build_ns;
	struct table *next_job, *prev_job; /* build queue (newest at the head) / done list */
	uint64_t queued_ns;		   /* CLOCK_MONOTONIC when queued */
	bool fresh;			   /* just uploaded after waiting for room */
	/* As a process's main executable (unwind_exes), for the samples before the process
	 * is published: what identifies it in memory, taken while the object was held. */
	bool exe_layout; /* text_vaddr, build_id_vaddr and build_id are known */
	uint64_t text_vaddr, build_id_vaddr;
	uint8_t build_id[20];
	uint32_t build_id_len;
	struct exe_ref *exe_refs; /* keys of unwind_exes that are this table */
	size_t nr_exe_refs, cap_exe_refs;
};

/* One executable mapping of a process, as published. */
struct pmap {
	uint64_t start, end;
	uint64_t bias; /* runtime address - ELF address */
	struct table *table;
};

struct process {
	uint32_t tgid;
	uint32_t exec_id;
	uint64_t start_time;
	uint32_t version;
	uint32_t map_start, nr_published; /* extent in unwind_maps, nr 0: not published */
	bool dirty;			  /* to publish */
	struct pmap *maps;
	size_t nr_maps;
};

struct unwinder {
	struct unwinder_opts opts;
	struct hashmap tables;	  /* key string -> struct table */
	struct hashmap processes; /* tgid -> struct process */
	struct extents rows, maps;
	uint64_t tick;
	uint32_t next_version;
	struct unwinder_stats st;

	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	struct table *queue, *queue_tail; /* under lock; newest at the head */
	struct table *done;		  /* under lock */
	int done_fd;			  /* eventfd: readable when done is not empty */
};

static uint64_t hash_key(const void *k)
{
	return hash_str(k);
}

static bool equal_key(const void *a, const void *b)
{
	return !strcmp(a, b);
}

static uint64_t hash_tgid(const void *k)
{
	return hash_u64((uintptr_t)k);
}

static bool equal_tgid(const void *a, const void *b)
{
	return a == b;
}

/* Under lock: the next table to build (see BUILD_MAX_WAIT_NS), off the queue. */
static struct table *dequeue(struct unwinder *u)
{
	struct table *t = u->queue;

	if (now_mono_ns() - u->queue_tail->queued_ns > BUILD_MAX_WAIT_NS)
		t = u->queue_tail;
	if (t->prev_job)
		t->prev_job->next_job = t->next_job;
	else
		u->queue = t->next_job;
	if (t->next_job)
		t->next_job->prev_job = t->prev_job;
	else
		u->queue_tail = t->prev_job;
	t->next_job = t->prev_job = NULL;
	return t;
}

static void *build_thread(void *arg)
{
	static const uint64_t one = 1;
	struct unwinder *u = arg;

	pthread_mutex_lock(&u->lock);
	for (;;) {
		struct table *t;
		uint64_t t0;
		bool last;

		while (!u->queue && !u->stop)
			pthread_cond_wait(&u->cond, &u->lock);
		if (u->stop)
			break;
		t = dequeue(u);
		last = !u->queue;
		pthread_mutex_unlock(&u->lock);

		t0 = now_mono_ns();
		t->build_err = sym_object__unwind_table(t->obj, &t->built);
		t->build_ns = now_mono_ns() - t0;
		/* libdw's CFI caches are many small blocks in this thread's arena: give them
		 * back to the system after a large object, and when a burst of builds (a host's
		 * processes at start) is over, rather than keep the peak. */
		if (t->built.cfi_bytes > TRIM_AFTER_CFI_BYTES || last)
			malloc_trim(0);

		pthread_mutex_lock(&u->lock);
		t->next_job = u->done;
		u->done = t;
		/* Cannot fail but by overflowing the counter (2^64 - 1 wakeups unread). */
		if (write(u->done_fd, &one, sizeof(one)) < 0)
			pr_debug("unwinder: cannot wake the main loop: %s", strerror(errno));
	}
	pthread_mutex_unlock(&u->lock);
	return NULL;
}

struct unwinder *unwinder__new(const struct unwinder_opts *opts)
{
	struct unwinder *u = calloc(1, sizeof(*u));
	int err;

	if (!u)
		return NULL;
	u->opts = *opts;
	hashmap__init(&u->tables, hash_key, equal_key);
	hashmap__init(&u->processes, hash_tgid, equal_tgid);
	u->done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (u->done_fd < 0) {
		free(u);
		return NULL;
	}
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->cond, NULL);
	if (extents__init(&u->rows, opts->max_rows) || extents__init(&u->maps, opts->max_maps)) {
		unwinder__free(u);
		errno = ENOMEM;
		return NULL;
	}
	err = pthread_create(&u->thread, NULL, build_thread, u);
	if (err) {
		unwinder__free(u);
		errno = err;
		return NULL;
	}
	u->thread_started = true;
	return u;
}

static void free_table(struct table *t)
{
	free(t->exe_refs);
	sym_unwind_table__fini(&t->built);
	sym_object__put(t->obj);
	free(t);
}

void unwinder__free(struct unwinder *u)
{
	struct hashmap_entry *e;

	if (!u)
		return;
	if (u->thread_started) {
		pthread_mutex_lock(&u->lock);
		u->stop = true;
		pthread_cond_signal(&u->cond);
		pthread_mutex_unlock(&u->lock);
		pthread_join(u->thread, NULL);
	}
	/* Tables still queued or done are in the table map too. */
	hashmap__for_each(&u->tables, e)
		free_table(e->value);
	hashmap__for_each(&u->processes, e) {
		struct process *p = e->value;

		free(p->maps);
		free(p);
	}
	hashmap__fini(&u->tables);
	hashmap__fini(&u->processes);
	extents__fini(&u->rows);
	extents__fini(&u->maps);
	pthread_mutex_destroy(&u->lock);
	pthread_cond_destroy(&u->cond);
	close(u->done_fd);
	free(u);
}

/* Write n values of value_size bytes at consecutive indexes of an ARRAY map. */
static int upload(int fd, uint32_t start, const void *values, size_t value_size, uint32_t n)
{
	uint32_t keys[UPLOAD_CHUNK], done = 0;

	while (done < n) {
		uint32_t want = n - done < UPLOAD_CHUNK ? n - done : UPLOAD_CHUNK, count = want, i;

		for (i = 0; i < want; i++)
			keys[i] = start + done + i;
		if (bpf_map_update_batch(fd, keys, (const char *)values + (size_t)done * value_size,
					 &count, NULL)) {
			count = want; /* the kernel wrote back how many it did: redo them all */
			/* Kernels without batch ops on arrays: one at a time. */
			for (i = 0; i < count; i++)
				if (bpf_map_update_elem(fd, &keys[i],
							(const char *)values +
								(size_t)(done + i) * value_size,
							BPF_ANY))
					return -errno;
		}
		done += count;
	}
	return 0;
}

/*
 * unwind_exes: the files (as mm->exe_file shows them to BPF) that a process ran this table's
 * object from, for the samples of later processes of those files before they are published.
 * One build may sit at several keys (copies, one image in several containers); one key has
 * one table, the latest build seen there (a file rewritten in place). Best effort: a full
 * map leaves those first samples to frame pointers, and the next capture tries again.
 */
static void exe_write(struct unwinder *u, struct table *t, struct exe_ref *r)
{
	struct ignis_unwind_exe e = { 0 };

	if (r->in_map || !t->exe_layout || t->state != TABLE_READY)
		return;
	e.key = r->key;
	e.text_vaddr = t->text_vaddr;
	e.base = t->base;
	e.build_id_vaddr = t->build_id_vaddr;
	e.row_start = t->row_start;
	e.nr_rows = t->nr_rows;
	memcpy(e.build_id, t->build_id, t->build_id_len);
	e.build_id_len = t->build_id_len;
	if (bpf_map_update_elem(u->opts.exes_fd, &r->key, &e, BPF_ANY)) {
		pr_debug("unwinder: cannot enter executable %s: %s", t->key, strerror(errno));
		return;
	}
	r->in_map = true;
	u->st.executables++;
}

/* Write t's keys that wait for it to be ready. */
static void exe_write_all(struct unwinder *u, struct table *t)
{
	size_t i;

	for (i = 0; i < t->nr_exe_refs; i++)
		exe_write(u, t, &t->exe_refs[i]);
}

/* Remove t's entries: before its rows may be freed. */
static void exe_remove_all(struct unwinder *u, struct table *t)
{
	size_t i;

	for (i = 0; i < t->nr_exe_refs; i++) {
		if (!t->exe_refs[i].in_map)
			continue;
		if (bpf_map_delete_elem(u->opts.exes_fd, &t->exe_refs[i].key) && errno != ENOENT)
			pr_warn("unwinder: cannot remove executable %s: %s", t->key,
				strerror(errno));
		u->st.executables--;
	}
	free(t->exe_refs);
	t->exe_refs = NULL;
	t->nr_exe_refs = t->cap_exe_refs = 0;
}

/* A process runs t's object as its main executable, which BPF sees at key. */
static void want_exe(struct unwinder *u, struct table *t, const struct ignis_unwind_exe_key *key)
{
	struct hashmap_entry *he;
	size_t i;

	for (i = 0; i < t->nr_exe_refs; i++) {
		if (!memcmp(&t->exe_refs[i].key, key, sizeof(*key))) {
			exe_write(u, t, &t->exe_refs[i]); /* again, if it failed */
			return;
		}
	}
	/* Another build seen at this key before (the file was rewritten in place): its entry
	 * goes now, since its rows go with that table, which no longer owns the key. */
	hashmap__for_each(&u->tables, he) {
		struct table *o = he->value;

		for (i = 0; o != t && i < o->nr_exe_refs; i++) {
			if (memcmp(&o->exe_refs[i].key, key, sizeof(*key)))
				continue;
			if (o->exe_refs[i].in_map) {
				if (bpf_map_delete_elem(u->opts.exes_fd, key) && errno != ENOENT)
					pr_warn("unwinder: cannot remove executable %s: %s", o->key,
						strerror(errno));
				u->st.executables--;
			}
			o->exe_refs[i] = o->exe_refs[--o->nr_exe_refs];
			break;
		}
	}
	if (grow_array((void **)&t->exe_refs, &t->cap_exe_refs, t->nr_exe_refs + 1,
		       sizeof(*t->exe_refs)))
		return;
	t->exe_refs[t->nr_exe_refs] = (struct exe_ref){ .key = *key };
	exe_write(u, t, &t->exe_refs[t->nr_exe_refs++]);
}

/* Drop the least recently used table no process uses. Returns false if there is none. */
static bool evict_one(struct unwinder *u)
{
	struct hashmap_entry *e;
	struct table *victim = NULL;

	hashmap__for_each(&u->tables, e) {
		struct table *t = e->value;

		if (t->state == TABLE_READY && !t->users &&
		    (!victim || t->last_used < victim->last_used))
			victim = t;
	}
	if (!victim)
		return false;
	hashmap__delete(&u->tables, victim->key);
	exe_remove_all(u, victim);
	defer(&u->rows, victim->row_start, victim->nr_rows);
	u->st.tables--;
	u->st.rows -= victim->nr_rows;
	u->st.tables_evicted++;
	free_table(victim);
	return true;
}

/* Free the rows of a built table (the row map has them now, or they are not used). */
static void release_built(struct table *t)
{
	bool large = t->built.cfi_bytes > TRIM_AFTER_CFI_BYTES;

	sym_unwind_table__fini(&t->built);
	/* A large table's rows were one big block: give it back to the system, or the heap
	 * keeps the peak (glibc raises its mmap threshold after such a free). */
	if (large)
		malloc_trim(0);
}

/*
 * One row in the BPF form: offsets in 8-byte units (a rule outside the row's range, or not a
 * multiple of 8, is unsupported), rules packed into one byte.
 */
static struct ignis_unwind_row pack_row(const struct sym_unwind_row *r, uint64_t base)
{
	struct ignis_unwind_row row = { .pc = (uint32_t)(r->pc - base) };
	uint8_t cfa = r->cfa_rule, rbp = r->rbp_rule;

	if (cfa == SYM_CFA_RSP || cfa == SYM_CFA_RBP || cfa == SYM_CFA_PLT) {
		if (r->cfa_off % 8 || r->cfa_off / 8 < INT16_MIN || r->cfa_off / 8 > INT16_MAX)
			cfa = SYM_CFA_UNSUPPORTED;
		else
			row.cfa_off = (int16_t)(r->cfa_off / 8);
	}
	if (cfa == SYM_CFA_PLT) {
		row.rbp_off = (int8_t)r->plt_threshold;
		rbp = SYM_RBP_SAME;
	} else if (rbp == SYM_RBP_AT_CFA) {
		if (r->rbp_off % 8 || r->rbp_off / 8 < INT8_MIN || r->rbp_off / 8 > INT8_MAX)
			rbp = SYM_RBP_UNDEFINED;
		else
			row.rbp_off = (int8_t)(r->rbp_off / 8);
	}
	row.type = (uint8_t)(cfa | rbp << 4);
	return row;
}

/* Put a built table into the row map. 0, -ENOSPC (waits for room) or -errno. */
static int upload_table(struct unwinder *u, struct table *t)
{
	const struct sym_unwind_table *b = &t->built;
	struct ignis_unwind_row rows[UPLOAD_CHUNK];
	uint32_t n = (uint32_t)b->nr_rows, done, i;
	int64_t start;
	int err = 0;

	if (b->nr_rows > IGNIS_MAX_UNWIND_ROWS || b->nr_rows > u->opts.max_rows ||
	    b->rows[b->nr_rows - 1].pc - b->rows[0].pc > UINT32_MAX)
		return -E2BIG;
	/* Evicted tables' rows come free only after the next grace period: evict no more than
	 * what could make room then, and wait for it. */
	while ((start = extents__alloc(&u->rows, n)) < 0)
		if (extents__deferred(&u->rows) >= n || !evict_one(u))
			return -ENOSPC;
	t->base = b->rows[0].pc;
	for (done = 0; done < n && !err; done += i) {
		for (i = 0; i < UPLOAD_CHUNK && done + i < n; i++)
			rows[i] = pack_row(&b->rows[done + i], t->base);
		err = upload(u->opts.rows_fd, (uint32_t)start + done, rows, sizeof(rows[0]), i);
	}
	if (err) {
		release(&u->rows, (uint32_t)start, n);
		return err;
	}
	t->row_start = (uint32_t)start;
	t->nr_rows = n;
	t->state = TABLE_READY;
	release_built(t);
	u->st.tables++;
	u->st.rows += t->nr_rows;
	exe_write_all(u, t);
	return 0;
}

/* A built table (or its failure) arrived from the build thread. */
static void table_built(struct unwinder *u, struct table *t)
{
	int err = t->build_err;

	pr_debug("unwinder: table of %s (%s): %zu rows from %llu bytes of CFI in %.1f ms%s%s",
		 sym_object__name(t->obj), t->key, t->built.nr_rows,
		 (unsigned long long)t->built.cfi_bytes, (double)t->build_ns / 1e6, err ? ": " : "",
		 err ? strerror(-err) : "");
	if (!err && t->by_build_id &&
	    !sym_object__exe_layout(t->obj, &t->text_vaddr, &t->build_id_vaddr)) {
		const uint8_t *id;
		size_t n = sym_object__build_id(t->obj, &id);

		t->build_id_len = (uint32_t)(n < sizeof(t->build_id) ? n : sizeof(t->build_id));
		memcpy(t->build_id, id, t->build_id_len);
		t->exe_layout = true;
	}
	if (t->by_build_id) { /* the key does not need the object alive */
		sym_object__put(t->obj);
		t->obj = NULL;
	}
	u->st.build_ns += t->build_ns;
	if (err == -ENODATA || (!err && !t->built.nr_rows)) {
		u->st.tables_no_cfi++;
		t->state = TABLE_NONE;
		sym_unwind_table__fini(&t->built);
		return;
	}
	if (err) {
		u->st.table_errors++;
		pr_debug("unwinder: no table for %s: %s", t->key, strerror(-err));
		t->state = TABLE_NONE;
		return;
	}
	u->st.tables_built++;
	err = upload_table(u, t);
	if (err == -ENOSPC) {
		t->state = TABLE_WAITING;
		return;
	}
	if (err) {
		if (err == -E2BIG)
			u->st.tables_no_room++;
		else
			pr_warn("unwinder: cannot upload the table of %s: %s", t->key,
				strerror(-err));
		t->state = TABLE_NONE;
		release_built(t);
	}
}

static void table_put(struct unwinder *u, struct table *t)
{
	if (!t || --t->users)
		return;
	if (t->by_build_id && t->state == TABLE_READY)
		return; /* cached for the next process of this build */
	if (t->state == TABLE_BUILDING)
		return; /* the build thread owns it until done; dropped in unwinder__poll */
	hashmap__delete(&u->tables, t->key);
	if (t->state == TABLE_READY) {
		exe_remove_all(u, t);
		defer(&u->rows, t->row_start, t->nr_rows);
		u->st.tables--;
		u->st.rows -= t->nr_rows;
	}
	free_table(t);
}

/* The cache key of an object's table: its build ID, else the object itself (whose table
 * keeps a reference to it, so that the address is not reused by another object). */
static void table_key(const struct sym_object *obj, char *key, size_t size)
{
	const uint8_t *id;

	if (sym_object__build_id(obj, &id)) {
		memcpy(key, "b:", 2);
		sym_object__build_id_hex(obj, key + 2, size - 2);
	} else {
		snprintf(key, size, "o:%p", (const void *)obj);
	}
}

/* The table of an object: found, or created and queued for the build thread. */
static struct table *table_get(struct unwinder *u, struct sym_object *obj)
{
	struct table *t, probe;

	table_key(obj, probe.key, sizeof(probe.key));
	t = hashmap__find(&u->tables, probe.key);
	if (t) {
		t->users++;
		t->last_used = u->tick;
		return t;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	memcpy(t->key, probe.key, sizeof(t->key));
	t->by_build_id = probe.key[0] == 'b';
	t->users = 1;
	t->last_used = u->tick;
	t->state = TABLE_BUILDING;
	t->obj = sym_object__get(obj);
	if (hashmap__insert(&u->tables, t->key, t)) {
		sym_object__put(t->obj);
		free(t);
		return NULL;
	}
	t->queued_ns = now_mono_ns();
	pthread_mutex_lock(&u->lock);
	t->next_job = u->queue;
	if (u->queue)
		u->queue->prev_job = t;
	else
		u->queue_tail = t;
	u->queue = t;
	pthread_cond_signal(&u->cond);
	pthread_mutex_unlock(&u->lock);
	return t;
}

static void unpublish(struct unwinder *u, struct process *p)
{
	uint32_t key = p->tgid;

	if (!p->nr_published)
		return;
	if (bpf_map_delete_elem(u->opts.procs_fd, &key) && errno != ENOENT)
		pr_debug("unwinder: pid %u: cannot remove: %s", p->tgid, strerror(errno));
	defer(&u->maps, p->map_start, p->nr_published);
	p->nr_published = 0;
	u->st.processes--;
}

/* Write a process's mappings whose tables are ready, and then its entry. */
static void publish(struct unwinder *u, struct process *p)
{
	struct ignis_unwind_mapping *ms;
	struct ignis_unwind_proc entry = { 0 };
	uint32_t n = 0, key = p->tgid, old_start = p->map_start, old_nr = p->nr_published;
	int64_t start;
	size_t i;

	p->dirty = false;
	ms = calloc(p->nr_maps ? p->nr_maps : 1, sizeof(*ms));
	if (!ms) {
		/* The published set may be out of date: none is better than a wrong one. */
		unpublish(u, p);
		p->dirty = true; /* retried after the next window */
		return;
	}
	p->version = ++u->next_version;
	for (i = 0; i < p->nr_maps && n < IGNIS_MAX_UNWIND_MAPS; i++) {
		const struct pmap *m = &p->maps[i];

		if (!m->table || m->table->state != TABLE_READY)
			continue;
		ms[n++] = (struct ignis_unwind_mapping){
			.start = m->start,
			.end = m->end,
			.base = m->bias + m->table->base,
			.row_start = m->table->row_start,
			.nr_rows = m->table->nr_rows,
			.tgid = p->tgid,
			.version = p->version,
			.exec_id = p->exec_id,
		};
	}
	if (!n) {
		/* Nothing to unwind with tables: frame pointers (bpf_get_stack) do it. */
		unpublish(u, p);
		free(ms);
		return;
	}
	start = extents__alloc(&u->maps, n);
	if (start < 0 || upload(u->opts.maps_fd, (uint32_t)start, ms, sizeof(*ms), n)) {
		if (start >= 0)
			release(&u->maps, (uint32_t)start, n);
		u->st.processes_no_room++;
		unpublish(u, p);
		p->dirty = true;
		free(ms);
		return;
	}
	free(ms);
	entry = (struct ignis_unwind_proc){
		.tgid = p->tgid,
		.version = p->version,
		.map_start = (uint32_t)start,
		.nr_maps = n,
		.start_time = p->start_time,
		.exec_id = p->exec_id,
	};
	if (bpf_map_update_elem(u->opts.procs_fd, &key, &entry, BPF_ANY)) {
		u->st.processes_no_room++;
		release(&u->maps, (uint32_t)start, n);
		unpublish(u, p);
		p->dirty = true;
		return;
	}
	if (old_nr)
		defer(&u->maps, old_start, old_nr);
	else
		u->st.processes++;
	p->map_start = (uint32_t)start;
	p->nr_published = n;
	u->st.processes_published++;
}

static void drop_maps(struct unwinder *u, struct process *p)
{
	size_t i;

	for (i = 0; i < p->nr_maps; i++)
		table_put(u, p->maps[i].table);
	free(p->maps);
	p->maps = NULL;
	p->nr_maps = 0;
}

static void remove_process(struct unwinder *u, struct process *p)
{
	unpublish(u, p);
	drop_maps(u, p);
	hashmap__delete(&u->processes, (void *)(uintptr_t)p->tgid);
	free(p);
}

int unwinder__add_process(struct unwinder *u, const struct proc_image *img)
{
	struct process *p = hashmap__find(&u->processes, (void *)(uintptr_t)img->id.tgid);
	struct pmap *maps;
	size_t i, n = 0;
	int err;

	u->tick++;
	maps = calloc(img->nr_maps ? img->nr_maps : 1, sizeof(*maps));
	if (!maps)
		return -ENOMEM;
	for (i = 0; i < img->nr_maps; i++) {
		const struct proc_mapping *m = &img->maps[i];
		uint64_t vaddr;

		if (m->stale_window != UINT64_MAX || !m->object)
			continue;
		if (sym_object__mapping_vaddr(m->object, m->offset, &vaddr))
			continue;
		maps[n] =
			(struct pmap){ .start = m->start, .end = m->end, .bias = m->start - vaddr };
		maps[n].table = table_get(u, m->object);
		if (!maps[n].table) {
			while (n--)
				table_put(u, maps[n].table);
			free(maps);
			return -ENOMEM;
		}
		/* The executable's mapping. By inode alone: on overlayfs the mapping shows the
		 * backing file's device, mm->exe_file the overlay's (the inode number is the
		 * same). A wrong match costs nothing: BPF checks the build ID in memory. */
		if (m->inode && m->inode == img->exe_inode && img->exe_dev) {
			struct ignis_unwind_exe_key key = { .ino = img->exe_inode,
							    .dev = img->exe_dev };

			want_exe(u, maps[n].table, &key);
		}
		n++;
	}
	if (p && (p->start_time != img->id.start_time || p->exec_id != img->id.exec_id)) {
		remove_process(u, p); /* another image under this tgid */
		p = NULL;
	}
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p) {
			err = -ENOMEM;
			goto err_maps;
		}
		p->tgid = img->id.tgid;
		p->start_time = img->id.start_time;
		p->exec_id = img->id.exec_id;
		err = hashmap__insert(&u->processes, (void *)(uintptr_t)p->tgid, p);
		if (err) {
			free(p);
			goto err_maps;
		}
	}
	drop_maps(u, p);
	p->maps = maps;
	p->nr_maps = n;
	/* At once, with the tables that are ready: the mappings it had may be gone, and their
	 * tables must not be applied to what replaced them. Those still being built are
	 * walked with frame pointers until they are ready (unwinder__poll publishes again). */
	publish(u, p);
	return 0;

err_maps:
	for (i = 0; i < n; i++)
		table_put(u, maps[i].table);
	free(maps);
	return err;
}

void unwinder__remove_process(struct unwinder *u, uint32_t tgid, uint64_t start_time,
			      const uint32_t *keep_exec_id)
{
	struct process *p = hashmap__find(&u->processes, (void *)(uintptr_t)tgid);

	if (!p || p->start_time != start_time || (keep_exec_id && p->exec_id == *keep_exec_id))
		return;
	remove_process(u, p);
}

void unwinder__reconcile(struct unwinder *u,
			 bool (*known)(void *ctx, uint32_t tgid, uint64_t start_time,
				       uint32_t exec_id),
			 void *ctx)
{
	struct hashmap_entry *e;
	struct process **gone = NULL;
	size_t n = 0, cap = 0, i;

	hashmap__for_each(&u->processes, e) {
		struct process *p = e->value;

		if (known(ctx, p->tgid, p->start_time, p->exec_id))
			continue;
		if (grow_array((void **)&gone, &cap, n + 1, sizeof(*gone)))
			break; /* the rest on the next window */
		gone[n++] = p;
	}
	for (i = 0; i < n; i++)
		remove_process(u, gone[i]);
	free(gone);
}

/* Publish again the processes that use a table that just became ready, and those whose
 * last publication failed; then clear the marks. */
static void publish_fresh(struct unwinder *u)
{
	struct hashmap_entry *e;

	hashmap__for_each(&u->processes, e) {
		struct process *p = e->value;
		size_t i;

		for (i = 0; i < p->nr_maps && !p->dirty; i++)
			p->dirty = p->maps[i].table && p->maps[i].table->fresh;
		if (p->dirty)
			publish(u, p);
	}
	hashmap__for_each(&u->tables, e)
		((struct table *)e->value)->fresh = false;
}

void unwinder__poll(struct unwinder *u)
{
	struct table *done, *next;
	bool any = false;
	uint64_t wakeups;

	/* The build thread fills done and writes the eventfd under the lock: taking both under
	 * it, an empty list means nothing to reset either (no system call on every wakeup). */
	pthread_mutex_lock(&u->lock);
	done = u->done;
	u->done = NULL;
	if (done && read(u->done_fd, &wakeups, sizeof(wakeups)) < 0)
		pr_debug("unwinder: cannot read its eventfd: %s", strerror(errno));
	pthread_mutex_unlock(&u->lock);
	for (; done; done = next) {
		next = done->next_job;
		done->next_job = NULL;
		if (!done->users) {
			/* Every process that wanted it went meanwhile. */
			hashmap__delete(&u->tables, done->key);
			free_table(done);
			continue;
		}
		table_built(u, done);
		done->fresh = done->state == TABLE_READY;
		any |= done->fresh;
	}
	if (any)
		publish_fresh(u);
}

int unwinder__wake_fd(const struct unwinder *u)
{
	return u->done_fd;
}

void unwinder__grace_period(struct unwinder *u)
{
	struct hashmap_entry *e;
	struct table **waiting = NULL;
	size_t n = 0, cap = 0, i;

	grace_period(&u->rows);
	grace_period(&u->maps);
	/* Room may have come free for tables that waited for it (collected first: making
	 * room evicts, which changes the table map). */
	hashmap__for_each(&u->tables, e) {
		struct table *t = e->value;

		if (t->state != TABLE_WAITING)
			continue;
		if (grow_array((void **)&waiting, &cap, n + 1, sizeof(*waiting)))
			break; /* the rest after the next window */
		waiting[n++] = t;
	}
	for (i = 0; i < n; i++) {
		struct table *t = waiting[i];
		int err = upload_table(u, t);

		if (err == -ENOSPC)
			continue;
		if (err) {
			t->state = TABLE_NONE;
			release_built(t);
			continue;
		}
		t->fresh = true;
	}
	free(waiting);
	publish_fresh(u);
}

void unwinder__stats(const struct unwinder *u, struct unwinder_stats *stats)
{
	struct hashmap_entry *e;

	*stats = u->st;
	stats->pending = 0;
	hashmap__for_each(&u->processes, e) {
		const struct process *p = e->value;
		size_t i;

		for (i = 0; i < p->nr_maps; i++)
			if (p->maps[i].table && p->maps[i].table->state == TABLE_BUILDING) {
				stats->pending++;
				break;
			}
	}
}

bool unwinder__fp_step_ok(const struct unwinder *u, const struct sym_object *obj, uint64_t vaddr)
{
	struct ignis_unwind_row r;
	const struct table *t;
	char key[sizeof(t->key)];
	uint64_t rel;
	uint32_t lo = 0, hi, idx;
	int type;

	if (!obj)
		return true;
	table_key(obj, key, sizeof(key));
	t = hashmap__find(&u->tables, key);
	if (!t || t->state != TABLE_READY || vaddr < t->base || vaddr - t->base > UINT32_MAX)
		return true;
	rel = vaddr - t->base;
	/* The rows live only in the kernel: a binary search by lookups, for the few stacks a
	 * window gets from frame pointers (once per distinct stack). */
	hi = t->nr_rows;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		idx = t->row_start + mid;
		if (bpf_map_lookup_elem(u->opts.rows_fd, &idx, &r))
			return true;
		if (r.pc <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	idx = t->row_start + lo - 1;
	if (!lo || bpf_map_lookup_elem(u->opts.rows_fd, &idx, &r))
		return true;
	type = r.type & 15;
	if (type == UNWIND_CFA_RSP || type == UNWIND_CFA_PLT)
		return false;	    /* no frame pointer set up here */
	if (type == UNWIND_CFA_RBP) /* the standard frame: rbp at the saved rbp, then the RA */
		return r.cfa_off == 2 && r.type >> 4 == UNWIND_RBP_AT_CFA && r.rbp_off == -2;
	return true; /* no CFI, outermost, signal, unsupported: the table cannot tell */
}
