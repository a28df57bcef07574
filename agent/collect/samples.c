// SPDX-License-Identifier: Apache-2.0
/*
 * A window's samples and stacks in memory (see samples.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "samples.h"

static uint64_t hash_stack_id(const void *key)
{
	/* Already a good hash of the frames: fold it. */
	const struct stack_id *id = key;

	return id->lo ^ (id->hi * 0x9e3779b97f4a7c15ULL);
}

static bool equal_stack_id(const void *a, const void *b)
{
	const struct stack_id *x = a, *y = b;

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
						  const struct stack_id *id)
{
	if (!id->lo && !id->hi)
		return NULL;
	return hashmap__find(&w->stacks, id);
}

int drained_window__add_sample(struct drained_window *w, const struct drained_sample *s)
{
	int err = grow_array((void **)&w->samples, &w->cap_samples, w->nr_samples + 1,
			     sizeof(*w->samples));

	if (err)
		return err;
	w->samples[w->nr_samples++] = *s;
	w->nr_counted += s->count;
	w->offcpu_ns += s->offcpu_ns;
	return 0;
}

int drained_window__add_stack(struct drained_window *w, const struct stack_id *id, uint32_t flags,
			      const uint64_t *ips, uint32_t len)
{
	struct drained_stack *ds;
	int err;

	if (len > STACK_MAX_DEPTH)
		len = STACK_MAX_DEPTH;
	ds = malloc(sizeof(*ds) + len * sizeof(ds->ips[0]));
	if (!ds)
		return -ENOMEM;
	ds->id = *id;
	ds->len = len;
	ds->flags = flags;
	memcpy(ds->ips, ips, len * sizeof(ds->ips[0]));
	err = hashmap__insert(&w->stacks, &ds->id, ds);
	if (err) {
		free(ds);
		/* The map is keyed by id: a duplicate cannot happen; keep the first. */
		return err == -EEXIST ? 0 : err;
	}
	w->nr_stack_frames += len;
	return 0;
}
