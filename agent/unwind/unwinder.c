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
	err = unwinder__upload_table(u, t);
	if (err == -ENOSPC) {
		t->state = UNWIND_TABLE_WAITING;
		return;
	}
	if (err) {
		if (err == -E2BIG)
			u->st.tables_no_room++;
		else
			pr_warn("unwinder: cannot upload the table of %s: %s", t->key,
				strerror(-err));
		t->state = UNWIND_TABLE_NONE;
		unwind_table__release_built(t);
	}
}

/* The table of an object, with a reference: cached, or created and queued for building. */
static struct unwind_table *table_get(struct unwinder *u, struct sym_object *obj)
{
	bool created;
	struct unwind_table *t = unwind_cache__get(&u->cache, obj, &created);

	if (t && created)
		unwind_builder__queue(u->builder, t);
	return t;
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
 * img->nr_maps). Returns how many, or -ENOMEM (then no reference is held).
 */
static int image_mappings(struct unwinder *u, const struct proc_image *img,
			  struct unwind_pmap *maps)
{
	size_t i;
	int n = 0;

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
		maps[n].table = table_get(u, m->object);
		if (!maps[n].table) {
			while (n--)
				unwind_cache__put(&u->cache, maps[n].table);
			return -ENOMEM;
		}
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
		n++;
	}
	return n;
}

int unwinder__add_process(struct unwinder *u, const struct proc_image *img)
{
	struct unwind_process *p = hashmap__find(&u->processes, (void *)(uintptr_t)img->id.tgid);
	struct unwind_pmap *maps;
	int i, n, err;

	unwind_cache__tick(&u->cache);
	maps = calloc(img->nr_maps ? img->nr_maps : 1, sizeof(*maps));
	if (!maps)
		return -ENOMEM;
	n = image_mappings(u, img, maps);
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
		if (!done->users && done->state != UNWIND_TABLE_READY) {
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

void unwinder__grace_period(struct unwinder *u)
{
	struct hashmap_entry *e;
	struct unwind_table **waiting = NULL;
	size_t n = 0, cap = 0, i;

	grace_period(&u->rows);
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
	for (i = 0; i < n; i++) {
		struct unwind_table *t = waiting[i];
		int err = unwinder__upload_table(u, t);

		if (err == -ENOSPC)
			continue;
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
