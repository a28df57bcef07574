// SPDX-License-Identifier: Apache-2.0
/*
 * Reading and clearing one idle generation of the maps (see bpf/profiler.h).
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

#include "drain.h"
#include "log.h"
#include "sampler.h"

/* Kernel-internal errno that bpf(2) leaks for unsupported operations. */
#ifndef ENOTSUPP
#define ENOTSUPP 524
#endif

#define COUNTS_CHUNK 1024
#define STACKS_CHUNK 256

static uint64_t hash_stack_id(const void *key)
{
	/* Already a good hash of the frames: fold it. */
	const struct ignis_stack_id *id = key;

	return id->lo ^ (id->hi * 0x9e3779b97f4a7c15ULL);
}

static bool equal_stack_id(const void *a, const void *b)
{
	const struct ignis_stack_id *x = a, *y = b;

	return x->lo == y->lo && x->hi == y->hi;
}

void drained_window__init(struct drained_window *w)
{
	memset(w, 0, sizeof(*w));
	hashmap__init(&w->stacks, hash_stack_id, equal_stack_id);
}

void drained_window__fini(struct drained_window *w)
{
	struct hashmap_entry *e;

	hashmap__for_each(&w->stacks, e)
		free(e->value);
	hashmap__fini(&w->stacks);
	free(w->samples);
	memset(w, 0, sizeof(*w));
}

const struct drained_stack *drained_window__stack(const struct drained_window *w,
						  const struct ignis_stack_id *id)
{
	if (!id->lo && !id->hi)
		return NULL;
	return hashmap__find(&w->stacks, id);
}

uint64_t drained_window__total(const struct drained_window *w)
{
	uint64_t total = 0;
	size_t i;

	for (i = 0; i < w->nr_samples; i++)
		total += w->samples[i].count;
	return total;
}

static int add_sample(struct drained_window *w, const struct ignis_sample_key *key, uint64_t count)
{
	int err = grow_array((void **)&w->samples, &w->cap_samples, w->nr_samples + 1,
			     sizeof(*w->samples));

	if (err)
		return err;
	w->samples[w->nr_samples].key = *key;
	w->samples[w->nr_samples].count = count;
	w->nr_samples++;
	return 0;
}

static int add_stack(struct drained_window *w, const struct ignis_stack_id *id,
		     const struct ignis_stack *st)
{
	uint32_t len = st->len > IGNIS_MAX_STACK_DEPTH ? IGNIS_MAX_STACK_DEPTH : st->len;
	struct drained_stack *ds;
	int err;

	ds = malloc(sizeof(*ds) + len * sizeof(ds->ips[0]));
	if (!ds)
		return -ENOMEM;
	ds->id = *id;
	ds->len = len;
	ds->flags = st->flags;
	memcpy(ds->ips, st->ips, len * sizeof(ds->ips[0]));
	err = hashmap__insert(&w->stacks, &ds->id, ds);
	if (err) {
		free(ds);
		/* The map is keyed by id: a duplicate cannot happen; keep the first. */
		return err == -EEXIST ? 0 : err;
	}
	w->nr_stack_frames += len;
	return 0;
}

typedef int (*drain_entry_fn)(struct drained_window *w, const void *key, const void *value);

static int counts_entry(struct drained_window *w, const void *key, const void *value)
{
	return add_sample(w, key, *(const uint64_t *)value);
}

static int stacks_entry(struct drained_window *w, const void *key, const void *value)
{
	return add_stack(w, key, value);
}

/* Walk with get_next_key: for kernels without batch operations on this map type. */
static int drain_slow(int fd, size_t key_size, size_t value_size, struct drained_window *w,
		      drain_entry_fn fn)
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
			err = fn(w, next, value);
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

static int drain_map(int fd, size_t key_size, size_t value_size, uint32_t chunk,
		     struct drained_window *w, drain_entry_fn fn)
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
				err = drain_slow(fd, key_size, value_size, w, fn);
				goto cleanup;
			} else {
				goto cleanup;
			}
		}
		for (i = 0; i < count; i++) {
			err = fn(w, (char *)keys + (size_t)i * key_size,
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
	uint64_t *values;
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
			w->stats[i] += values[cpu];
		memset(values, 0, (size_t)nr_cpus * sizeof(*values));
		if (bpf_map_update_elem(fd, &idx, values, BPF_ANY)) {
			err = -errno;
			break;
		}
	}
	free(values);
	return err;
}

int drain__read(struct sampler *s, unsigned int gen, struct drained_window *w)
{
	int err;

	err = drain_stats(sampler__stats_fd(s), gen, w);
	if (err) {
		pr_warn("drain: cannot read counters: %s", strerror(-err));
		return err;
	}
	err = drain_map(sampler__stacks_fd(s, gen), sizeof(struct ignis_stack_id),
			sizeof(struct ignis_stack), STACKS_CHUNK, w, stacks_entry);
	if (err) {
		pr_warn("drain: cannot read stacks: %s", strerror(-err));
		return err;
	}
	err = drain_map(sampler__counts_fd(s, gen), sizeof(struct ignis_sample_key),
			sizeof(uint64_t), COUNTS_CHUNK, w, counts_entry);
	if (err)
		pr_warn("drain: cannot read sample counts: %s", strerror(-err));
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
