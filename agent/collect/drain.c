// SPDX-License-Identifier: Apache-2.0
/*
 * Reading and clearing one idle generation of the maps (see bpf/profiler.h), converted into
 * the agent's plain data (samples.h).
 *
 * Hash maps are read with BPF_MAP_LOOKUP_AND_DELETE_BATCH (Linux 5.6) in fixed-size chunks,
 * so memory stays bounded whatever the map size; kernels or maps that refuse it are walked
 * with get_next_key, lookup and delete.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "../../bpf/profiler.h"

#include "drain.h"
#include "drain_internal.h"
#include "operate/log.h"
#include "sampler.h"

/* Kernel-internal errno that bpf(2) leaks for unsupported operations. */
#ifndef ENOTSUPP
#define ENOTSUPP 524
#endif

#define COUNTS_CHUNK 1024
#define STACKS_CHUNK 256
#define LOG_CHUNK    1024

/* The plain data of samples.h copies BPF's flags and marks: they must be the same bits. */
_Static_assert(SAMPLE_KTHREAD == SAMPLE_F_KTHREAD && SAMPLE_USTACK_ERR == SAMPLE_F_USTACK_ERR &&
		       SAMPLE_KSTACK_ERR == SAMPLE_F_KSTACK_ERR &&
		       SAMPLE_OFFCPU_CAPPED == SAMPLE_F_OFFCPU_CAPPED &&
		       SAMPLE_OFFCPU_EXITED == SAMPLE_F_OFFCPU_EXITED &&
		       SAMPLE_STATE_SHIFT == SAMPLE_F_STATE_SHIFT &&
		       THREAD_SLEEPING == IGNIS_STATE_SLEEPING && THREAD_DISK == IGNIS_STATE_DISK &&
		       THREAD_RUNNABLE == IGNIS_STATE_RUNNABLE,
	       "sample flags of samples.h and bpf/profiler.h");
_Static_assert(STACK_COMPLETE == STACK_F_COMPLETE && STACK_TRUNCATED == STACK_F_TRUNCATED &&
		       STACK_TABLES == STACK_F_TABLES,
	       "stack flags of samples.h and bpf/profiler.h");
_Static_assert(FRAME_PY == IGNIS_USER_IP_PY && FRAME_PY_LASTI_SHIFT == IGNIS_PY_LASTI_SHIFT &&
		       FRAME_PY_LASTI_MASK == IGNIS_PY_LASTI_MASK &&
		       FRAME_PY_LASTI_NONE == IGNIS_PY_LASTI_NONE &&
		       FRAME_PY_SERIAL_MASK == IGNIS_PY_SERIAL_MASK,
	       "Python frame marks of samples.h and bpf/profiler.h");
_Static_assert(FRAME_EXACT == IGNIS_USER_IP_EXACT && FRAME_BY_FP == IGNIS_USER_IP_FP,
	       "frame marks of samples.h and bpf/profiler.h");
_Static_assert(PY_EVENT_NAME == IGNIS_PY_EVENT_NAME && PY_EVENT_FILE == IGNIS_PY_EVENT_FILE,
	       "Python event names of samples.h and bpf/profiler.h");
_Static_assert(STACK_MAX_DEPTH == IGNIS_MAX_STACK_DEPTH && COMM_LEN == IGNIS_COMM_LEN,
	       "sizes of samples.h and bpf/profiler.h");

static struct stack_id stack_id_of(const struct ignis_stack_id *id)
{
	return (struct stack_id){ .lo = id->lo, .hi = id->hi };
}

/* ctx: the window, or for the stacks map struct stacks_read. */
typedef int (*drain_entry_fn)(void *ctx, const void *key, const void *value);

void drain_sample_of(const struct ignis_sample_key *k, uint64_t count, struct drained_sample *s)
{
	*s = (struct drained_sample){
		.tgid = k->tgid,
		.pid = k->pid,
		.start_time = k->start_time,
		.exec_id = k->exec_id,
		.flags = k->flags,
		.user_stack = stack_id_of(&k->user_stack),
		.kernel_stack = stack_id_of(&k->kernel_stack),
		.count = count,
	};
	memcpy(s->comm, k->comm, sizeof(s->comm));
	s->comm[sizeof(s->comm) - 1] = '\0';
}

void drain_counters_of(const uint64_t *stats, struct counters *c)
{
#define BPF_ROW(id, ...) c->v[CNT_##id] = stats[STAT_##id];
	IGNIS_BPF_STATS(BPF_ROW)
#undef BPF_ROW
}

static int counts_entry(void *ctx, const void *key, const void *value)
{
	struct drained_window *w = ctx;
	struct drained_sample s;

	drain_sample_of(key, *(const uint64_t *)value, &s);
	return drained_window__add_sample(w, &s);
}

static int offcpu_entry(void *ctx, const void *key, const void *value)
{
	struct drained_window *w = ctx;
	struct drained_sample s;

	drain_sample_of(key, 0, &s);
	s.offcpu_ns = *(const uint64_t *)value;
	/* Only the off-CPU programs write this map, always with a state: check, as the
	 * window builder tells the two kinds apart by it. */
	if (!sample_thread_state(s.flags) || !s.offcpu_ns)
		return 0;
	return drained_window__add_sample(w, &s);
}

#define PART_FRAMES IGNIS_STACK_PART_FRAMES

/* A part kept until its stack's parts are all read. */
struct stack_part_rec {
	struct stack_id id;
	uint32_t part;
	uint32_t len;	/* part 0's */
	uint32_t flags; /* part 0's */
	uint64_t ips[PART_FRAMES];
};

void stack_parts__init(struct stack_parts *p)
{
	memset(p, 0, sizeof(*p));
}

void stack_parts__fini(struct stack_parts *p)
{
	free(p->v);
	p->v = NULL;
	p->n = p->cap = 0;
}

int stack_parts__add(struct stack_parts *p, const struct ignis_stack_part_key *k,
		     const struct ignis_stack_part *v, struct drained_window *w)
{
	struct stack_id id = stack_id_of(&k->id);
	struct stack_part_rec *r;
	uint32_t len = v->len < STACK_MAX_DEPTH ? v->len : STACK_MAX_DEPTH;

	if (k->part >= IGNIS_STACK_PARTS)
		return 0; /* no part BPF writes */
	if (k->part == 0 && len <= PART_FRAMES)
		return drained_window__add_stack(w, &id, v->flags, (const uint64_t *)v->ips, len);
	if (grow_array((void **)&p->v, &p->cap, p->n + 1, sizeof(*p->v)))
		return -ENOMEM;
	r = &p->v[p->n++];
	r->id = id;
	r->part = k->part;
	r->len = k->part ? 0 : len;
	r->flags = k->part ? 0 : v->flags;
	memcpy(r->ips, v->ips, sizeof(r->ips));
	return 0;
}

static int part_cmp(const void *a, const void *b)
{
	const struct stack_part_rec *x = a, *y = b;

	if (x->id.lo != y->id.lo)
		return x->id.lo < y->id.lo ? -1 : 1;
	if (x->id.hi != y->id.hi)
		return x->id.hi < y->id.hi ? -1 : 1;
	return x->part < y->part ? -1 : x->part > y->part;
}

int stack_parts__finish(struct stack_parts *p, struct drained_window *w)
{
	uint64_t ips[STACK_MAX_DEPTH];
	size_t i = 0, j;
	int err = 0;

	if (p->n) /* qsort() must not be given NULL, even for 0 elements */
		qsort(p->v, p->n, sizeof(*p->v), part_cmp);
	while (i < p->n && !err) {
		const struct stack_part_rec *head = &p->v[i];
		uint32_t len = head->len, flags = head->flags, want = 1;

		/* The group of this id: its parts in order, part 0 first if it is there. */
		for (j = i + 1;
		     j < p->n && p->v[j].id.lo == head->id.lo && p->v[j].id.hi == head->id.hi; j++)
			;
		if (head->part == 0) {
			memcpy(ips, head->ips, sizeof(head->ips));
			for (i++; i < j && want * PART_FRAMES < len; i++, want++) {
				if (p->v[i].part != want)
					break;
				memcpy(ips + want * PART_FRAMES, p->v[i].ips, sizeof(p->v[i].ips));
			}
			if (want * PART_FRAMES < len) {
				len = want * PART_FRAMES;
				flags |= STACK_TRUNCATED;
				p->cut++;
			}
			err = drained_window__add_stack(w, &head->id, flags, ips, len);
		}
		i = j;
	}
	stack_parts__fini(p);
	return err;
}

struct stacks_read {
	struct drained_window *w;
	struct stack_parts parts;
};

/* An entry of the stacks map: a stack's part 0, under its id. */
static int stacks_entry(void *ctx, const void *key, const void *value)
{
	struct ignis_stack_part_key k = { .id = *(const struct ignis_stack_id *)key };
	struct stacks_read *r = ctx;

	return stack_parts__add(&r->parts, &k, value, r->w);
}

/* An entry of the tails map: a part >= 1. */
static int tails_entry(void *ctx, const void *key, const void *value)
{
	const struct ignis_stack_part_key *k = key;
	struct stacks_read *r = ctx;

	if (!k->part)
		return 0; /* BPF writes no part 0 here */
	return stack_parts__add(&r->parts, k, value, r->w);
}

/* Walk with get_next_key: for kernels without batch operations on this map type. */
static int drain_slow(int fd, size_t key_size, size_t value_size, void *ctx, drain_entry_fn fn)
{
	void *key = calloc(1, key_size), *next = calloc(1, key_size), *value = malloc(value_size);
	int err = 0;

	if (!key || !next || !value) {
		err = -ENOMEM;
		goto cleanup;
	}
	/* Deleting as we go: always restart from the first key. */
	while (!bpf_map_get_next_key(fd, NULL, next)) {
		if (!bpf_map_lookup_elem(fd, next, value)) {
			err = fn(ctx, next, value);
			if (err)
				break;
		}
		if (bpf_map_delete_elem(fd, next) && errno != ENOENT) {
			err = -errno;
			break;
		}
	}
cleanup:
	free(key);
	free(next);
	free(value);
	return err;
}

static int drain_map(int fd, size_t key_size, size_t value_size, uint32_t chunk, void *ctx,
		     drain_entry_fn fn)
{
	size_t token_size = key_size > sizeof(uint64_t) ? key_size : sizeof(uint64_t);
	void *keys = calloc(chunk, key_size), *values = calloc(chunk, value_size);
	void *in = calloc(1, token_size), *out = calloc(1, token_size);
	bool first = true, done = false;
	uint32_t count, i;
	int err = 0, ret;

	if (!keys || !values || !in || !out) {
		err = -ENOMEM;
		goto cleanup;
	}
	while (!done) {
		count = chunk;
		ret = bpf_map_lookup_and_delete_batch(fd, first ? NULL : in, out, keys, values,
						      &count, NULL);
		if (ret) {
			err = -errno;
			if (err == -ENOENT) {
				done = true; /* the last chunk may still hold entries */
				err = 0;
			} else if (first &&
				   (err == -EINVAL || err == -EOPNOTSUPP || err == -ENOTSUPP)) {
				err = drain_slow(fd, key_size, value_size, ctx, fn);
				goto cleanup;
			} else {
				goto cleanup;
			}
		}
		for (i = 0; i < count; i++) {
			err = fn(ctx, (char *)keys + (size_t)i * key_size,
				 (char *)values + (size_t)i * value_size);
			if (err)
				goto cleanup;
		}
		memcpy(in, out, token_size);
		first = false;
	}
cleanup:
	free(keys);
	free(values);
	free(in);
	free(out);
	return err;
}

static int drain_stats(int fd, unsigned int gen, struct drained_window *w)
{
	int nr_cpus = libbpf_num_possible_cpus(), cpu, i;
	uint64_t *values, sums[STAT_NR] = { 0 };
	int err = 0;

	if (nr_cpus <= 0)
		return -EINVAL;
	values = calloc((size_t)nr_cpus, sizeof(*values));
	if (!values)
		return -ENOMEM;
	for (i = 0; i < STAT_NR; i++) {
		uint32_t idx = gen * STAT_NR + (uint32_t)i;

		if (bpf_map_lookup_elem(fd, &idx, values)) {
			err = -errno;
			break;
		}
		for (cpu = 0; cpu < nr_cpus; cpu++)
			sums[i] += values[cpu];
		memset(values, 0, (size_t)nr_cpus * sizeof(*values));
		if (bpf_map_update_elem(fd, &idx, values, BPF_ANY)) {
			err = -errno;
			break;
		}
	}
	free(values);
	drain_counters_of(sums, &w->counters);
	return err;
}

/* Read n records of the sample log from index first into out: in batches (Linux 5.6), else
 * one by one. Returns 0 or a negative errno. */
static int read_records(int fd, uint32_t first, uint32_t n, struct ignis_sample_key *out)
{
	uint32_t *keys = calloc(LOG_CHUNK, sizeof(*keys)), done = 0, count, in, outk, i;
	int err = 0;

	if (!keys)
		return -ENOMEM;
	while (done < n) {
		count = n - done < LOG_CHUNK ? n - done : LOG_CHUNK;
		in = first + done - 1; /* the batch starts after in_batch */
		if (!bpf_map_lookup_batch(fd, first + done ? &in : NULL, &outk, keys, out + done,
					  &count, NULL) ||
		    (errno == ENOENT && count)) {
			done += count;
			continue;
		}
		err = -errno;
		if (err != -EINVAL && err != -EOPNOTSUPP && err != -ENOTSUPP)
			break;
		err = 0;
		for (i = done; i < n && !err; i++) {
			in = first + i;
			if (bpf_map_lookup_elem(fd, &in, out + i))
				err = -errno;
		}
		done = n;
	}
	free(keys);
	return err;
}

static int cmp_sample_key(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct ignis_sample_key));
}

int drain_log_records(struct ignis_sample_key *recs, size_t n, struct drained_window *w)
{
	struct drained_sample ds;
	size_t i, j;
	int err = 0;

	qsort(recs, n, sizeof(*recs), cmp_sample_key);
	for (i = 0; i < n && !err; i = j) {
		for (j = i + 1; j < n && !cmp_sample_key(&recs[i], &recs[j]); j++)
			;
		drain_sample_of(&recs[i], j - i, &ds);
		err = drained_window__add_sample(w, &ds);
	}
	return err;
}

/* Zero a generation's cpu_windows: its samples and its runs of the log start empty again.
 * Returns 0 or a negative errno. */
static int clear_cpu_windows(struct sampler *s, unsigned int gen)
{
	int nr_cpus = libbpf_num_possible_cpus(), err = 0;
	struct ignis_cpu_window *cws;
	uint32_t key = gen & 1;

	if (nr_cpus <= 0)
		return -EINVAL;
	cws = calloc((size_t)nr_cpus, sizeof(*cws));
	if (!cws)
		return -ENOMEM;
	if (bpf_map_update_elem(sampler__cpu_windows_fd(s), &key, cws, BPF_ANY))
		err = -errno;
	free(cws);
	return err;
}

/*
 * The CPU samples of a generation: each CPU's count of samples taken added to the window's
 * counter (after drain_stats()), and every CPU's run of the sample log read, sorted, and
 * each run of equal keys added as one sample with its count. The CPUs' figures are zeroed
 * even when a read fails, so no record is counted twice. Returns 0 or a negative errno.
 */
static int drain_log(struct sampler *s, unsigned int gen, struct drained_window *w)
{
	int nr_cpus = libbpf_num_possible_cpus(), cw_fd = sampler__cpu_windows_fd(s), cpu, err, ret;
	uint32_t cap = sampler__log_cap(s), key = gen & 1;
	struct ignis_sample_key *recs = NULL;
	struct ignis_cpu_window *cws;
	size_t total = 0;

	if (nr_cpus <= 0)
		return -EINVAL;
	cws = calloc((size_t)nr_cpus, sizeof(*cws));
	if (!cws)
		return -ENOMEM;
	if (bpf_map_lookup_elem(cw_fd, &key, cws)) {
		err = -errno;
		goto out;
	}
	for (cpu = 0; cpu < nr_cpus; cpu++) {
		w->counters.v[CNT_SAMPLES] += cws[cpu].samples;
		if (cws[cpu].logged > cap) /* not the programs' doing: read no more than a run */
			cws[cpu].logged = cap;
		total += cws[cpu].logged;
	}
	recs = malloc((total ? total : 1) * sizeof(*recs));
	if (!recs) {
		err = -ENOMEM;
		goto zero;
	}
	for (cpu = 0, total = 0; cpu < nr_cpus; cpu++) {
		err = read_records(sampler__log_fd(s), ((uint32_t)key * nr_cpus + cpu) * cap,
				   (uint32_t)cws[cpu].logged, recs + total);
		if (err)
			goto zero;
		total += cws[cpu].logged;
	}
	err = drain_log_records(recs, total, w);
zero:
	ret = clear_cpu_windows(s, gen);
	if (!err)
		err = ret;
out:
	free(recs);
	free(cws);
	return err;
}

int drain__read(struct sampler *s, unsigned int gen, struct drained_window *w)
{
	struct stacks_read sr;
	int err;

	err = drain_stats(sampler__stats_fd(s), gen, w);
	if (err) {
		pr_warn("drain: cannot read counters: %s", strerror(-err));
		/* The window is lost: its CPU samples must not join the generation's next. */
		clear_cpu_windows(s, gen);
		return err;
	}
	sr.w = w;
	stack_parts__init(&sr.parts);
	err = drain_map(sampler__stacks_fd(s, gen), sizeof(struct ignis_stack_id),
			sizeof(struct ignis_stack_part), STACKS_CHUNK, &sr, stacks_entry);
	if (!err)
		err = drain_map(sampler__tails_fd(s, gen), sizeof(struct ignis_stack_part_key),
				sizeof(struct ignis_stack_part), STACKS_CHUNK, &sr, tails_entry);
	if (!err)
		err = stack_parts__finish(&sr.parts, w);
	stack_parts__fini(&sr.parts);
	if (err) {
		pr_warn("drain: cannot read stacks: %s", strerror(-err));
		clear_cpu_windows(s, gen);
		return err;
	}
	if (sr.parts.cut)
		pr_warn("drain: %llu stacks had a part missing: cut before it, [truncated]",
			(unsigned long long)sr.parts.cut);
	err = drain_log(s, gen, w);
	if (err) {
		pr_warn("drain: cannot read the CPU samples' log: %s", strerror(-err));
		return err;
	}
	err = drain_map(sampler__counts_fd(s, gen), sizeof(struct ignis_sample_key),
			sizeof(uint64_t), COUNTS_CHUNK, w, counts_entry);
	if (err) {
		pr_warn("drain: cannot read sample counts: %s", strerror(-err));
		return err;
	}
	if (!sampler__offcpu(s))
		return 0;
	err = drain_map(sampler__offcpu_fd(s, gen), sizeof(struct ignis_sample_key),
			sizeof(uint64_t), COUNTS_CHUNK, w, offcpu_entry);
	if (err)
		pr_warn("drain: cannot read off-CPU samples: %s", strerror(-err));
	return err;
}

int drain__reconcile_procs(struct sampler *s,
			   bool (*known)(void *ctx, uint32_t tgid, uint64_t start_time,
					 uint32_t exec_id),
			   void *ctx)
{
	int fd = sampler__procs_fd(s), nr = 0;
	uint32_t key, next, *prev = NULL, *stale = NULL;
	struct ignis_proc_state st;
	size_t nr_stale = 0, cap = 0, i;

	/* Collect first: deleting while walking with get_next_key restarts the walk. */
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &st) ||
		    known(ctx, key, st.start_time, st.exec_id))
			continue;
		if (grow_array((void **)&stale, &cap, nr_stale + 1, sizeof(*stale)))
			break;
		stale[nr_stale++] = key;
	}
	for (i = 0; i < nr_stale; i++)
		if (!bpf_map_delete_elem(fd, &stale[i]))
			nr++;
	free(stale);
	return nr;
}
