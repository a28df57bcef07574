// SPDX-License-Identifier: Apache-2.0
/*
 * Publishing: the unwinder's writes into the BPF maps — tables into unwind_rows, each
 * process's mappings into unwind_maps and its entry into unwind_procs, executables into
 * unwind_exes — in the order bpf/profiler.h requires (data first, then the entry pointing
 * to it; extents an entry stopped pointing to are reused after a grace period).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "common/ignis.h"
#include "operate/log.h"
#include "unwinder_internal.h"

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
 * unwind_exes: the files (as mm->exe_file or a VMA's file shows them to BPF) that a process
 * ran or mapped this table's object from, for the samples of later processes of those files
 * before they are published.
 * One build may sit at several keys (copies, one image in several containers); one key has
 * one table, the latest build seen there (a file rewritten in place). Best effort: a full
 * map leaves those first samples to frame pointers, and the next capture tries again.
 */
static void exe_write(struct unwinder *u, struct unwind_table *t, struct unwind_exe_ref *r)
{
	struct ignis_unwind_exe e = { 0 };

	if (r->in_map || !t->exe_layout || t->state != UNWIND_TABLE_READY)
		return;
	e.key = r->key;
	e.text_vaddr = t->text_vaddr;
	e.text_offset = t->text_offset;
	e.text_size = t->text_size;
	e.base = t->base;
	e.build_id_vaddr = t->build_id_vaddr;
	e.row_start = t->row_start;
	e.nr_rows = t->nr_rows;
	memcpy(e.build_id, t->build_id, t->build_id_len);
	e.build_id_len = t->build_id_len;
	e.size = r->size;
	e.mtime_sec = r->mtime_sec;
	e.mtime_nsec = r->mtime_nsec;
	if (bpf_map_update_elem(u->opts.exes_fd, &r->key, &e, BPF_ANY)) {
		pr_debug("unwinder: cannot enter executable %s: %s", t->key, strerror(errno));
		return;
	}
	r->in_map = true;
	u->st.executables++;
}

/* Write t's keys that wait for it to be ready. */
static void exe_write_all(struct unwinder *u, struct unwind_table *t)
{
	size_t i;

	for (i = 0; i < t->nr_exe_refs; i++)
		exe_write(u, t, &t->exe_refs[i]);
}

/* Delete unwind_exes[key] if r says it is written for t. */
static void exe_delete(struct unwinder *u, const struct unwind_table *t,
		       const struct unwind_exe_ref *r)
{
	if (!r->in_map)
		return;
	if (bpf_map_delete_elem(u->opts.exes_fd, &r->key) && errno != ENOENT)
		pr_warn("unwinder: cannot remove executable %s: %s", t->key, strerror(errno));
	u->st.executables--;
}

/* Remove t's entries: before its rows may be freed. */
static void exe_remove_all(struct unwinder *u, struct unwind_table *t)
{
	size_t i;

	for (i = 0; i < t->nr_exe_refs; i++)
		exe_delete(u, t, &t->exe_refs[i]);
	free(t->exe_refs);
	t->exe_refs = NULL;
	t->nr_exe_refs = t->cap_exe_refs = 0;
}

void unwinder__want_exe(struct unwinder *u, struct unwind_table *t,
			const struct ignis_unwind_exe_key *key, const struct sym_object *file)
{
	struct unwind_exe_ref ref = { .key = *key };
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
	unwind_cache__for_each(&u->cache, he) {
		struct unwind_table *o = he->value;

		for (i = 0; o != t && i < o->nr_exe_refs; i++) {
			if (memcmp(&o->exe_refs[i].key, key, sizeof(*key)))
				continue;
			exe_delete(u, o, &o->exe_refs[i]);
			o->exe_refs[i] = o->exe_refs[--o->nr_exe_refs];
			break;
		}
	}
	if (grow_array((void **)&t->exe_refs, &t->cap_exe_refs, t->nr_exe_refs + 1,
		       sizeof(*t->exe_refs)))
		return;
	if (sym_object__file_stamp(file, &ref.size, &ref.mtime_sec, &ref.mtime_nsec))
		ref.size = 0; /* no stamp: the build ID in memory only */
	t->exe_refs[t->nr_exe_refs] = ref;
	exe_write(u, t, &t->exe_refs[t->nr_exe_refs++]);
}

void unwinder__unload_table(void *ctx, struct unwind_table *t)
{
	struct unwinder *u = ctx;

	exe_remove_all(u, t);
	defer(&u->rows, t->row_start, t->nr_rows);
	u->st.tables--;
	u->st.rows -= t->nr_rows;
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

/*
 * Write n packed rows at index start of unwind_rows through a shared mapping of just the
 * pages they cover (the map is BPF_F_MMAPABLE): a memcpy instead of the per-element copy and
 * checks of bpf_map_update_batch() (a fifth of the agent's CPU under process churn, taking
 * on new binaries), and the pages leave the agent's address space (and RSS) at once.
 * -ENOTSUP: the map cannot be mapped (created without the flag): the caller uploads.
 */
static int write_mapped(int fd, uint32_t start, const struct sym_unwind_row *src, uint64_t base,
			uint32_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), rs = sizeof(struct ignis_unwind_row);
	size_t first = (size_t)start * rs / page * page, end = ((size_t)start + n) * rs;
	size_t len = (end - first + page - 1) / page * page;
	struct ignis_unwind_row *dst;
	void *mem;
	uint32_t i;

	mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)first);
	if (mem == MAP_FAILED)
		return -ENOTSUP;
	dst = (struct ignis_unwind_row *)((char *)mem + ((size_t)start * rs - first));
	for (i = 0; i < n; i++)
		dst[i] = pack_row(&src[i], base);
	/* The rows before the entries that point to them (bpf/profiler.h), on weakly ordered
	 * CPUs too: the syscalls that publish them are not barriers there. */
	atomic_thread_fence(memory_order_release);
	munmap(mem, len);
	return 0;
}

int unwinder__upload_table(struct unwinder *u, struct unwind_table *t)
{
	const struct sym_unwind_table *b = &t->built;
	struct ignis_unwind_row rows[UPLOAD_CHUNK];
	uint32_t n = (uint32_t)b->nr_rows, done, i;
	int64_t start;
	bool large;
	int err = 0;

	if (b->nr_rows > IGNIS_MAX_UNWIND_ROWS || b->nr_rows > u->opts.max_rows ||
	    b->rows[b->nr_rows - 1].pc - b->rows[0].pc > UINT32_MAX)
		return -E2BIG;
	/* Large tables from the top of the map, small ones from the bottom: the small ones
	 * then do not split the room a large one needs. Without a run that long, the tables
	 * inside the cheapest window of its size are evicted (unwinder__make_room()); their
	 * rows come free only after the next grace period, so the table waits for it. */
	large = n >= u->opts.max_rows / 16;
	start = large ? extents__alloc_high(&u->rows, n) : extents__alloc(&u->rows, n);
	if (start < 0) {
		/* A table no process uses (they went while it was built) displaces none: it
		 * waits, and the caller drops it. */
		if (!t->users)
			return -EAGAIN;
		/* -ENOMEM: tried again at the next grace period, like a wait (-EAGAIN). */
		err = unwinder__make_room(u, t);
		return err == -ENOSPC ? -ENOSPC : -EAGAIN;
	}
	t->base = b->rows[0].pc;
	err = write_mapped(u->opts.rows_fd, (uint32_t)start, b->rows, t->base, n);
	if (err == -ENOTSUP) {
		for (err = 0, done = 0; done < n && !err; done += i) {
			for (i = 0; i < UPLOAD_CHUNK && done + i < n; i++)
				rows[i] = pack_row(&b->rows[done + i], t->base);
			err = upload(u->opts.rows_fd, (uint32_t)start + done, rows, sizeof(rows[0]),
				     i);
		}
	}
	if (err) {
		release(&u->rows, (uint32_t)start, n);
		return err;
	}
	t->row_start = (uint32_t)start;
	t->nr_rows = n;
	t->state = UNWIND_TABLE_READY;
	t->retries = 0;
	unwind_table__release_built(t);
	u->st.tables++;
	u->st.rows += t->nr_rows;
	exe_write_all(u, t);
	return 0;
}

void unwinder__unpublish(struct unwinder *u, struct unwind_process *p)
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

/* p's mappings whose tables are ready, in ms (room for p->nr_maps). Returns how many. */
static uint32_t ready_mappings(const struct unwind_process *p, struct ignis_unwind_mapping *ms)
{
	uint32_t n = 0;
	size_t i;

	for (i = 0; i < p->nr_maps && n < IGNIS_MAX_UNWIND_MAPS; i++) {
		const struct unwind_pmap *m = &p->maps[i];

		if (!m->table || m->table->state != UNWIND_TABLE_READY)
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
	return n;
}

/* Publication failed for want of room (or memory): none is better than an outdated set. */
static void publish_failed(struct unwinder *u, struct unwind_process *p)
{
	u->st.processes_no_room++;
	unwinder__unpublish(u, p);
	p->dirty = true; /* retried after the next window */
}

void unwinder__publish(struct unwinder *u, struct unwind_process *p)
{
	struct ignis_unwind_mapping *ms;
	struct ignis_unwind_proc entry = { 0 };
	uint32_t n, key = p->tgid, old_start = p->map_start, old_nr = p->nr_published;
	int64_t start;

	p->dirty = false;
	ms = calloc(p->nr_maps ? p->nr_maps : 1, sizeof(*ms));
	if (!ms) {
		/* The published set may be out of date: none is better than a wrong one. */
		unwinder__unpublish(u, p);
		p->dirty = true; /* retried after the next window */
		return;
	}
	p->version = ++u->next_version;
	n = ready_mappings(p, ms);
	if (!n) {
		/* Nothing to unwind with tables: frame pointers (bpf_get_stack) do it. */
		unwinder__unpublish(u, p);
		free(ms);
		return;
	}
	start = extents__alloc(&u->maps, n);
	if (start < 0 || upload(u->opts.maps_fd, (uint32_t)start, ms, sizeof(*ms), n)) {
		if (start >= 0)
			release(&u->maps, (uint32_t)start, n);
		publish_failed(u, p);
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
		.exec_vm = (uint32_t)p->exec_vm,
	};
	if (bpf_map_update_elem(u->opts.procs_fd, &key, &entry, BPF_ANY)) {
		release(&u->maps, (uint32_t)start, n);
		publish_failed(u, p);
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
