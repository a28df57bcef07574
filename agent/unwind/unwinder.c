// SPDX-License-Identifier: Apache-2.0
/*
 * The unwinder's facade (unwinder.h): the processes it knows, what their mappings reference
 * in the table cache, tables handed back by the build thread, grace periods, and the
 * frame-pointer check against the rows. Its parts are listed in unwinder_internal.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>
#include <bpf/bpf.h>

#include "../../bpf/profiler.h"
#include "../../symbolizer/symbolizer.h"
#include "common/hashmap.h"
#include "common/ignis.h"
#include "operate/log.h"
#include "collect/proctab.h"
#include "unwinder_internal.h"

static uint64_t hash_tgid(const void *k)
{
	return hash_u64((uintptr_t)k);
}

static bool equal_tgid(const void *a, const void *b)
{
	return a == b;
}

struct unwinder *unwinder__new(const struct unwinder_opts *opts)
{
	struct unwinder *u = calloc(1, sizeof(*u));
	int err;

	if (!u)
		return NULL;
	u->opts = *opts;
	unwind_cache__init(&u->cache, unwinder__unload_table, u);
	hashmap__init(&u->processes, hash_tgid, equal_tgid);
	if (extents__init(&u->rows, opts->max_rows) || extents__init(&u->maps, opts->max_maps)) {
		unwinder__free(u);
		errno = ENOMEM;
		return NULL;
	}
	u->builder = unwind_builder__new();
	if (!u->builder) {
		err = errno;
		unwinder__free(u);
		errno = err;
		return NULL;
	}
	return u;
}

void unwinder__stop_building(struct unwinder *u)
{
	if (u)
		unwind_builder__stop(u->builder);
}

void unwinder__free(struct unwinder *u)
{
	struct hashmap_entry *e;

	if (!u)
		return;
	/* First: the build thread may be using a table. Tables still queued or done are in
	 * the cache too. */
	unwind_builder__free(u->builder);
	unwind_cache__fini(&u->cache);
	hashmap__for_each(&u->processes, e) {
		struct unwind_process *p = e->value;

		free(p->maps);
		free(p);
	}
	hashmap__fini(&u->processes);
	extents__fini(&u->rows);
	free(u->held);
	free(u->claims);
	extents__fini(&u->maps);
	free(u);
}

/* Keep what identifies t's object in a process's memory (unwind_exes), while the object is
 * held; then drop the object if the key does not need it alive. */
static void keep_exe_layout(struct unwind_table *t, int err)
{
	if (!err && t->by_build_id &&
	    !sym_object__exe_layout(t->obj, &t->text_vaddr, &t->build_id_vaddr) &&
	    !sym_object__text_segment(t->obj, &t->text_offset, &t->text_vaddr, &t->text_size)) {
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
}

/* Rows, as MiB of --unwind-table-size, rounded up. */
static unsigned int rows_mib(uint64_t rows)
{
	return (unsigned int)((rows * sizeof(struct ignis_unwind_row) + (1 << 20) - 1) >> 20);
}

/*
 * t's rows cannot be placed (-E2BIG: larger than the map; -ENOSPC: no window of its size
 * that evictions could clear, unwinder__make_room()): it stays without rows, its frames are walked by frame
 * pointer and cut there ([truncated]), and it is rebuilt when room can be made. Logged once
 * per table, with what to raise.
 */
static void no_room(struct unwinder *u, struct unwind_table *t, int err)
{
	uint64_t want = t->built.nr_rows ? t->built.nr_rows : t->want_rows;
	uint32_t longest = 0;
	size_t i;

	for (i = 0; i < u->rows.nr_free; i++)
		longest = u->rows.free[i].len > longest ? u->rows.free[i].len : longest;
	pr_debug("unwinder: no room for the table of %s (%llu rows): %llu rows free, the longest "
		 "run %u, %llu deferred, %llu in %llu tables",
		 t->name, (unsigned long long)want,
		 (unsigned long long)extents__free_entries(&u->rows), longest,
		 (unsigned long long)extents__deferred(&u->rows), (unsigned long long)u->st.rows,
		 (unsigned long long)u->st.tables);
	t->state = UNWIND_TABLE_NONE;
	t->no_room = true;
	t->want_rows = (uint32_t)(want < UINT32_MAX ? want : UINT32_MAX);
	u->st.tables_no_room++;
	unwind_table__release_built(t);
	if (t->logged)
		return;
	t->logged = true;
	/* What would hold it and every table loaded now, with a quarter to spare. */
	pr_warn("unwinder: the unwind table of %s (%llu rows, %u MiB) %s the row map "
		"(--unwind-table-size %u MiB, %u MiB held by the tables of running processes): "
		"its frames are walked by frame pointer and stacks through them end in "
		"[truncated]; raise --unwind-table-size to %u MiB or more",
		t->name, (unsigned long long)want, rows_mib(want),
		err == -E2BIG ? "is larger than" : "finds no room in", rows_mib(u->opts.max_rows),
		rows_mib(u->st.rows), rows_mib((u->st.rows + want) * 5 / 4));
}

/* A built table (or its failure) arrived from the build thread. */
static void table_built(struct unwinder *u, struct unwind_table *t)
{
	int err = t->build_err;

	pr_debug("unwinder: table of %s (%s): %zu rows from %llu bytes of CFI in %.1f ms%s%s",
		 sym_object__name(t->obj), t->key, t->built.nr_rows,
		 (unsigned long long)t->built.cfi_bytes, (double)t->build_ns / 1e6, err ? ": " : "",
		 err ? strerror(-err) : "");
	keep_exe_layout(t, err);
	u->st.build_ns += t->build_ns;
	if (err == -ENODATA || (!err && !t->built.nr_rows)) {
		u->st.tables_no_cfi++;
		t->state = UNWIND_TABLE_NONE;
		sym_unwind_table__fini(&t->built);
		return;
	}
	if (err) {
		u->st.table_errors++;
		pr_debug("unwinder: no table for %s: %s", t->key, strerror(-err));
		t->state = UNWIND_TABLE_NONE;
		return;
	}
	u->st.tables_built++;
	t->want_rows = (uint32_t)(t->built.nr_rows < UINT32_MAX ? t->built.nr_rows : UINT32_MAX);
	err = unwinder__upload_table(u, t);
	if (err == -EAGAIN) {
		t->state = UNWIND_TABLE_WAITING;
		return;
	}
	if (err == -E2BIG || err == -ENOSPC) {
		no_room(u, t, err);
		return;
	}
	if (err) {
		pr_warn("unwinder: cannot upload the table of %s: %s", t->key, strerror(-err));
		t->state = UNWIND_TABLE_NONE;
		unwind_table__release_built(t);
	}
}

/* The table of an object, with a reference: cached, or created and queued for building. */
static struct unwind_table *table_get(struct unwinder *u, struct sym_object *obj, bool *created)
{
	struct unwind_table *t = unwind_cache__get(&u->cache, obj, created);

	if (t && *created) {
		t->last_sampled = u->window; /* new: not cold before it had a chance */
		unwind_builder__queue(u->builder, t);
	}
	return t;
}

/* Whether one of maps[0, n) references t. */
static bool maps_hold(const struct unwind_pmap *maps, size_t n, const struct unwind_table *t)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (maps[i].table == t)
			return true;
	return false;
}

static void drop_maps(struct unwinder *u, struct unwind_process *p)
{
	size_t i;

	for (i = 0; i < p->nr_maps; i++)
		unwind_cache__put(&u->cache, p->maps[i].table);
	free(p->maps);
	p->maps = NULL;
	p->nr_maps = 0;
}

static void remove_process(struct unwinder *u, struct unwind_process *p)
{
	unwinder__unpublish(u, p);
	drop_maps(u, p);
	hashmap__delete(&u->processes, (void *)(uintptr_t)p->tgid);
	free(p);
}

/*
 * The executable mappings of img with their tables (references taken), into maps (room for
 * img->nr_maps); old: the same image's entry as published before (a capture again after
 * dlopen), or NULL. Returns how many, or -ENOMEM (then no reference is held).
 */
static int image_mappings(struct unwinder *u, const struct proc_image *img,
			  const struct unwind_process *old, struct unwind_pmap *maps)
{
	size_t i;
	int n = 0;
	bool created;

	for (i = 0; i < img->nr_maps; i++) {
		const struct proc_mapping *m = &img->maps[i];
		uint64_t vaddr;

		if (m->stale_window != UINT64_MAX || !m->object)
			continue;
		if (sym_object__mapping_vaddr(m->object, m->offset, &vaddr))
			continue;
		maps[n] = (struct unwind_pmap){ .start = m->start,
						.end = m->end,
						.bias = m->start - vaddr };
		maps[n].table = table_get(u, m->object, &created);
		if (!maps[n].table) {
			while (n--)
				unwind_cache__put(&u->cache, maps[n].table);
			return -ENOMEM;
		}
		/* Queued for another process already: this one waits for it too. */
		if (!created && maps[n].table->state == UNWIND_TABLE_BUILDING &&
		    !maps_hold(maps, (size_t)n, maps[n].table) &&
		    !(old && maps_hold(old->maps, old->nr_maps, maps[n].table)))
			unwind_builder__want(u->builder, maps[n].table);
		/* The executable's mapping. By inode alone: on overlayfs the mapping shows the
		 * backing file's device, mm->exe_file the overlay's (the inode number is the
		 * same). A wrong match costs nothing: BPF checks the build ID in memory. */
		if (m->inode && m->inode == img->exe_inode && img->exe_dev) {
			struct ignis_unwind_exe_key key = { .ino = img->exe_inode,
							    .dev = img->exe_dev };

			unwinder__want_exe(u, maps[n].table, &key, m->object);
		}
		/* Every mapped file, as the VMA's file shows it to BPF (bpf_find_vma()), for
		 * the next process's samples before it is published. */
		if (m->inode && m->dev && (m->inode != img->exe_inode || m->dev != img->exe_dev)) {
			struct ignis_unwind_exe_key key = { .ino = m->inode, .dev = m->dev };

			unwinder__want_exe(u, maps[n].table, &key, m->object);
		}
		/* The vDSO, which BPF finds from mm->context.vdso under the key of no file. */
		if (m->kind == MAPPING_VDSO) {
			struct ignis_unwind_exe_key key = { .ino = 0, .dev = 0 };

			unwinder__want_exe(u, maps[n].table, &key, m->object);
		}
		n++;
	}
	return n;
}

int unwinder__add_process(struct unwinder *u, const struct proc_image *img)
{
	struct unwind_process *p = hashmap__find(&u->processes, (void *)(uintptr_t)img->id.tgid);
	struct unwind_pmap *maps;
	int i, n, err;

	maps = calloc(img->nr_maps ? img->nr_maps : 1, sizeof(*maps));
	if (!maps)
		return -ENOMEM;
	n = image_mappings(
		u, img,
		p && p->start_time == img->id.start_time && p->exec_id == img->id.exec_id ? p :
											    NULL,
		maps);
	if (n < 0) {
		free(maps);
		return n;
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
	p->nr_maps = (size_t)n;
	p->exec_vm = img->exec_vm;
	/* At once, with the tables that are ready: the mappings it had may be gone, and their
	 * tables must not be applied to what replaced them. Those still being built are
	 * walked with frame pointers until they are ready (unwinder__poll publishes again). */
	unwinder__publish(u, p);
	return 0;

err_maps:
	for (i = 0; i < n; i++)
		unwind_cache__put(&u->cache, maps[i].table);
	free(maps);
	return err;
}

void unwinder__remove_process(struct unwinder *u, uint32_t tgid, uint64_t start_time,
			      const uint32_t *keep_exec_id)
{
	struct unwind_process *p = hashmap__find(&u->processes, (void *)(uintptr_t)tgid);

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
	struct unwind_process **gone = NULL;
	size_t n = 0, cap = 0, i;

	hashmap__for_each(&u->processes, e) {
		struct unwind_process *p = e->value;

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
		struct unwind_process *p = e->value;
		size_t i;

		for (i = 0; i < p->nr_maps && !p->dirty; i++)
			p->dirty = p->maps[i].table && p->maps[i].table->fresh;
		if (p->dirty)
			unwinder__publish(u, p);
	}
	unwind_cache__for_each(&u->cache, e)
		((struct unwind_table *)e->value)->fresh = false;
}

void unwinder__poll(struct unwinder *u)
{
	struct unwind_table *done, *next;
	bool any = false;

	for (done = unwind_builder__take_done(u->builder); done; done = next) {
		next = done->next_job;
		done->next_job = NULL;
		if (!done->users && !done->by_build_id) {
			/* Every process that wanted it went meanwhile. */
			unwind_cache__remove(&u->cache, done);
			continue;
		}
		table_built(u, done);
		/* Kept too: a table that does not fit, remembered (not built and logged again
		 * for the next process of the file). */
		if (!done->users && done->state != UNWIND_TABLE_READY && !done->no_room) {
			unwind_cache__remove(&u->cache, done);
			continue;
		}
		/* A table with a build ID is kept even when its processes went while it was
		 * built, as after its last user, if it fits without evicting another (READY,
		 * then evicted by use): the next process of the file (a compiler, run again and
		 * again for a fraction of a second each) finds it, also before it is published,
		 * rather than having it built again. */
		done->fresh = done->state == UNWIND_TABLE_READY;
		any |= done->fresh;
	}
	if (any)
		publish_fresh(u);
}

int unwinder__wake_fd(const struct unwinder *u)
{
	return unwind_builder__wake_fd(u->builder);
}

static void grace_period(struct extents *x)
{
	uint64_t lost = extents__grace_period(x);

	if (lost)
		pr_warn("unwinder: out of memory: %llu map entries are lost until restart",
			(unsigned long long)lost);
}

static int cmp_want_rows_desc(const void *a, const void *b)
{
	const struct unwind_table *x = *(struct unwind_table *const *)a;
	const struct unwind_table *y = *(struct unwind_table *const *)b;

	return x->want_rows > y->want_rows ? -1 : x->want_rows < y->want_rows;
}

void unwinder__grace_period(struct unwinder *u)
{
	struct hashmap_entry *e;
	struct unwind_table **waiting = NULL;
	size_t n = 0, cap = 0, i;

	u->window++;
	grace_period(&u->rows);
	/* The held rows join the evicted ones: each cleared window is whole again, for the
	 * waiting tables placed next. */
	for (i = 0; i < u->nr_held; i++)
		if (extents__release(&u->rows, u->held[i].start, u->held[i].len))
			pr_warn("unwinder: out of memory: %u rows are lost until restart",
				u->held[i].len);
	u->nr_held = 0;
	u->nr_claims = 0;
	grace_period(&u->maps);
	/* Room may have come free for tables that waited for it (collected first: making
	 * room evicts, which changes the cache). */
	unwind_cache__for_each(&u->cache, e) {
		struct unwind_table *t = e->value;

		if (t->state != UNWIND_TABLE_WAITING)
			continue;
		if (grow_array((void **)&waiting, &cap, n + 1, sizeof(*waiting)))
			break; /* the rest after the next window */
		waiting[n++] = t;
	}
	/* Largest first: the room that came free is often one a large table was evicted for,
	 * and a small table placed first fit would split it. */
	if (n > 1)
		qsort(waiting, n, sizeof(*waiting), cmp_want_rows_desc);
	for (i = 0; i < n; i++) {
		struct unwind_table *t = waiting[i];
		int err = unwinder__upload_table(u, t);

		if (err == -EAGAIN)
			continue;
		if (err == -E2BIG || err == -ENOSPC) {
			no_room(u, t, err);
			continue;
		}
		if (err) {
			t->state = UNWIND_TABLE_NONE;
			unwind_table__release_built(t);
			continue;
		}
		t->fresh = true;
	}
	free(waiting);
	publish_fresh(u);
}

/* Is t cold: in use, but its object in no stack for UNWIND_COLD_WINDOWS windows? */
static bool cold(const struct unwinder *u, const struct unwind_table *t)
{
	return t->state == UNWIND_TABLE_READY && t->last_sampled + UNWIND_COLD_WINDOWS <= u->window;
}

static void evict_in_use(struct unwinder *u, struct unwind_table *victim);

/* Tables this large are placed from the top of the row map (unwind_publish.c). */
static bool large(const struct unwinder *u, uint32_t rows)
{
	return rows >= u->opts.max_rows / 16;
}

/* Evict a READY table that processes use: they are published again without it, its rows
 * are freed after the next grace period, and it is rebuilt when its object is sampled. */
static void evict_in_use(struct unwinder *u, struct unwind_table *victim)
{
	struct hashmap_entry *e;

	victim->want_rows = victim->nr_rows;
	/* Its processes first, without it (their old mappings are freed after the next grace
	 * period, like the rows). */
	victim->state = UNWIND_TABLE_NONE;
	victim->evicted = true;
	hashmap__for_each(&u->processes, e) {
		struct unwind_process *p = e->value;
		size_t i;

		for (i = 0; i < p->nr_maps; i++) {
			if (p->maps[i].table == victim) {
				unwinder__publish(u, p);
				break;
			}
		}
	}
	unwinder__unload_table(u, victim);
	victim->nr_rows = 0;
	u->st.tables_evicted_cold++;
}

static int cmp_table_start(const void *a, const void *b)
{
	const struct unwind_table *x = *(struct unwind_table *const *)a;
	const struct unwind_table *y = *(struct unwind_table *const *)b;

	return x->row_start < y->row_start ? -1 : x->row_start > y->row_start;
}

/* What evicting a window's tables costs, compared in this order: rows of tables sampled
 * lately (their stacks are cut until they are rebuilt), rows of cold tables in use (rebuilt
 * when next sampled), rows of unused ones (kept only in case their file runs again). */
struct window_cost {
	uint64_t hot, cold, unused;
};

static int cmp_cost(const struct window_cost *x, const struct window_cost *y)
{
	if (x->hot != y->hot)
		return x->hot < y->hot ? -1 : 1;
	if (x->cold != y->cold)
		return x->cold < y->cold ? -1 : 1;
	if (x->unused != y->unused)
		return x->unused < y->unused ? -1 : 1;
	return 0;
}

static uint64_t table_end(const struct unwind_table *o)
{
	return (uint64_t)o->row_start + o->nr_rows;
}

/* The cost of evicting ts[from...] that overlap [a, a + n); *end: one past the last. */
static struct window_cost window_cost(const struct unwinder *u, struct unwind_table **ts, size_t nr,
				      size_t from, uint64_t a, uint64_t n, size_t *end)
{
	struct window_cost c = { 0, 0, 0 };
	size_t j;

	for (j = from; j < nr && ts[j]->row_start < a + n; j++) {
		const struct unwind_table *o = ts[j];

		if (table_end(o) <= a)
			continue;
		if (!o->users)
			c.unused += o->nr_rows;
		else if (cold(u, o))
			c.cold += o->nr_rows;
		else
			c.hot += o->nr_rows;
	}
	*end = j;
	return c;
}

static void evict_for(struct unwinder *u, struct unwind_table *victim, const struct unwind_table *t)
{
	char why[64];

	if (!victim->users)
		snprintf(why, sizeof(why), "unused");
	else if (cold(u, victim))
		snprintf(why, sizeof(why), "no frame in a stack for %llu windows",
			 (unsigned long long)(u->window - victim->last_sampled));
	else
		snprintf(why, sizeof(why), "in use");
	pr_debug("unwinder: evicting the table of %s (%u rows, %s): it is in the room the table "
		 "of %s (%u rows) needs",
		 victim->name, victim->nr_rows, why, t->name, t->want_rows);
	if (victim->users) {
		evict_in_use(u, victim);
	} else {
		unwind_cache__remove(&u->cache, victim);
		u->st.tables_evicted++;
	}
}

/* Take the free rows of [a, a + n) out of the free list until the next grace period. Best
 * effort: without memory for the list they stay free. */
static void hold_free_rows(struct unwinder *u, uint64_t a, uint64_t n)
{
	size_t i = 0;

	while (i < u->rows.nr_free) {
		const struct extent *e = &u->rows.free[i];
		uint64_t s = e->start > a ? e->start : a;
		uint64_t end = (uint64_t)e->start + e->len < a + n ? (uint64_t)e->start + e->len :
								     a + n;

		if (e->start >= a + n)
			break;
		if (end <= s) {
			i++;
			continue;
		}
		if (grow_array((void **)&u->held, &u->cap_held, u->nr_held + 1, sizeof(*u->held)) ||
		    extents__take(&u->rows, (uint32_t)s, (uint32_t)(end - s)))
			return;
		u->held[u->nr_held++] =
			(struct extent){ .start = (uint32_t)s, .len = (uint32_t)(end - s) };
		/* The run shrank from its start or was removed: look at index i again. */
	}
}

/* Whether [a, a + n) overlaps a window cleared for another table since the grace period. */
static bool claimed(const struct unwinder *u, uint64_t a, uint64_t n)
{
	size_t i;

	for (i = 0; i < u->nr_claims; i++)
		if (a < (uint64_t)u->claims[i].start + u->claims[i].len &&
		    u->claims[i].start < a + n)
			return true;
	return false;
}

/* Whether deferred rows (free after the next grace period) lie in [a, a + n). */
static bool deferred_in(const struct unwinder *u, uint64_t a, uint64_t n)
{
	size_t i;

	for (i = 0; i < u->rows.nr_deferred; i++)
		if (a < (uint64_t)u->rows.deferred[i].start + u->rows.deferred[i].len &&
		    u->rows.deferred[i].start < a + n)
			return true;
	return false;
}

/* The first of ts (sorted, not overlapping) that ends after a. */
static size_t first_after(struct unwind_table **ts, size_t nr, uint64_t a)
{
	size_t lo = 0, hi = nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (table_end(ts[mid]) <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int unwinder__make_room(struct unwinder *u, const struct unwind_table *t)
{
	struct hashmap_entry *e;
	struct unwind_table **ts = NULL;
	size_t nr = 0, cap = 0, c, j, from, end, best_from = 0;
	uint64_t n = t->want_rows, max = u->opts.max_rows, a, best_a = 0;
	bool is_large = large(u, t->want_rows), found = false, blocked = false;
	struct window_cost best = { 0, 0, 0 }, cost;
	int ret = -ENOSPC;

	if (n > max)
		return -ENOSPC;
	unwind_cache__for_each(&u->cache, e) {
		struct unwind_table *o = e->value;

		if (o == t || o->state != UNWIND_TABLE_READY)
			continue;
		if (grow_array((void **)&ts, &cap, nr + 1, sizeof(*ts))) {
			free(ts);
			return -ENOMEM;
		}
		ts[nr++] = o;
	}
	if (nr > 1)
		qsort(ts, nr, sizeof(*ts), cmp_table_start);
	/* Windows starting at 0, at the end of a table or of another's window, or ending at
	 * the top of the map: every run that evictions could free starts or ends at one of
	 * those. */
	for (c = 0; c <= nr + 1 + u->nr_claims; c++) {
		if (c == 0)
			a = 0;
		else if (c <= nr)
			a = table_end(ts[c - 1]);
		else if (c == nr + 1)
			a = max - n;
		else
			a = (uint64_t)u->claims[c - nr - 2].start + u->claims[c - nr - 2].len;
		if (a + n > max)
			continue;
		if (claimed(u, a, n)) {
			blocked = true;
			continue;
		}
		from = first_after(ts, nr, a);
		cost = window_cost(u, ts, nr, from, a, n, &end);
		/* Large tables: hot tables holding up to a quarter of its rows may give way (they
		 * are rebuilt at the bottom); small ones displace no hot table. Ties: the highest
		 * window for a large table, the lowest for a small one, as they are placed. */
		if (cost.hot > (is_large ? n / 4 : 0))
			continue;
		if (!found || cmp_cost(&cost, &best) < 0 ||
		    (is_large && !cmp_cost(&cost, &best) && a > best_a)) {
			found = true;
			best = cost;
			best_a = a;
			best_from = from;
		}
	}
	/* Only windows cleared for others: after the grace period, room may be left. */
	if (!found && blocked)
		ret = -EAGAIN;
	if (found) {
		bool evicted = false;

		(void)window_cost(u, ts, nr, best_from, best_a, n, &end);
		for (j = best_from; j < end; j++) {
			if (table_end(ts[j]) > best_a) {
				evict_for(u, ts[j], t);
				evicted = true;
			}
		}
		/* Nothing to evict: the window is free but for deferred rows. */
		ret = evicted || deferred_in(u, best_a, n) ? 0 : -ENOSPC;
		if (!ret) {
			if (!grow_array((void **)&u->claims, &u->cap_claims, u->nr_claims + 1,
					sizeof(*u->claims)))
				u->claims[u->nr_claims++] =
					(struct extent){ .start = (uint32_t)best_a,
							 .len = (uint32_t)n };
			hold_free_rows(u, best_a, n);
		}
	}
	free(ts);
	return ret;
}

/* Rows that could be had for t now or after the next grace period: free, deferred, held
 * for a window (u->held), and those of unused or cold tables. In all, not in one run: a
 * rough test before a rebuild, which unwinder__make_room() settles. */
static uint64_t room_for(const struct unwinder *u, const struct unwind_table *t)
{
	struct hashmap_entry *e;
	uint64_t n = extents__free_entries(&u->rows) + extents__deferred(&u->rows);
	size_t i;

	for (i = 0; i < u->nr_held; i++)
		n += u->held[i].len;

	unwind_cache__for_each(&u->cache, e) {
		const struct unwind_table *o = e->value;

		if (o != t && o->state == UNWIND_TABLE_READY && (!o->users || cold(u, o)))
			n += o->nr_rows;
	}
	return n;
}

void unwinder__note_use(struct unwinder *u, struct sym_object *obj)
{
	struct unwind_table *t;

	if (!obj)
		return;
	t = unwind_cache__find_mut(&u->cache, obj);
	if (!t)
		return;
	t->last_sampled = u->window;
	if (t->state != UNWIND_TABLE_NONE || !(t->no_room || t->evicted) || !t->users ||
	    u->window < t->retry_window + (1ULL << (t->retries < 6 ? t->retries : 6)) ||
	    t->want_rows > u->opts.max_rows || room_for(u, t) < t->want_rows)
		return;
	/* Built again (the rows were not kept): queued like a new table. */
	t->retry_window = u->window;
	t->retries++;
	t->no_room = t->evicted = false;
	if (!t->obj)
		t->obj = sym_object__get(obj);
	t->state = UNWIND_TABLE_BUILDING;
	u->st.tables_rebuilt++;
	unwind_builder__queue(u->builder, t);
}

void unwinder__stats(const struct unwinder *u, struct unwinder_stats *stats)
{
	struct hashmap_entry *e;

	*stats = u->st;
	stats->pending = 0;
	hashmap__for_each(&u->processes, e) {
		const struct unwind_process *p = e->value;
		size_t i;

		for (i = 0; i < p->nr_maps; i++)
			if (p->maps[i].table && p->maps[i].table->state == UNWIND_TABLE_BUILDING) {
				stats->pending++;
				break;
			}
	}
}

/*
 * Whether t's object is as the BPF unwinder sees it: its table in the map, or no table to
 * have (no CFI, unreadable). Not when its table is still being built or waits for room
 * (large tables: libLLVM's takes a second), or found none (no_room, evicted): a
 * frame-pointer walk through its code then cannot be trusted. By the time a window is
 * symbolized, most new tables are loaded.
 */
static bool table_loaded(const struct unwind_table *t)
{
	if (t->state == UNWIND_TABLE_BUILDING || t->state == UNWIND_TABLE_WAITING)
		return false;
	return t->state == UNWIND_TABLE_READY || !(t->no_room || t->evicted);
}

bool unwinder__fp_step_ok(const struct unwinder *u, const struct sym_object *obj, uint64_t vaddr)
{
	struct ignis_unwind_row r;
	const struct unwind_table *t;
	uint64_t rel;
	uint32_t lo = 0, hi, idx;
	int type;

	if (!obj)
		return true;
	t = unwind_cache__find(&u->cache, obj);
	if (t && !table_loaded(t))
		return false; /* CFI without rows in the map: the walk cannot be trusted here */
	if (!t || t->state != UNWIND_TABLE_READY || vaddr < t->base || vaddr - t->base > UINT32_MAX)
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

bool unwinder__fp_end_ok(const struct unwinder *u, const struct sym_object *obj)
{
	const struct unwind_table *t = obj ? unwind_cache__find(&u->cache, obj) : NULL;

	return !t || table_loaded(t);
}
