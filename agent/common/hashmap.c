// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"

/* Grow when more than 3/4 full. */
#define LOAD_NUM 3
#define LOAD_DEN 4

void hashmap__init(struct hashmap *m, hashmap_hash_fn hash, hashmap_equal_fn equal)
{
	memset(m, 0, sizeof(*m));
	m->hash = hash;
	m->equal = equal;
}

void hashmap__fini(struct hashmap *m)
{
	free(m->slots);
	m->slots = NULL;
	m->cap = m->nr = 0;
}

void hashmap__clear(struct hashmap *m)
{
	if (m->slots)
		memset(m->slots, 0, m->cap * sizeof(*m->slots));
	m->nr = 0;
}

static struct hashmap_entry *lookup(const struct hashmap *m, const void *key, uint64_t h)
{
	size_t mask, i;

	if (!m->cap)
		return NULL;
	mask = m->cap - 1;
	for (i = h & mask;; i = (i + 1) & mask) {
		struct hashmap_entry *e = &m->slots[i];

		if (!e->key)
			return NULL;
		if (e->hash == h && m->equal(e->key, key))
			return e;
	}
}

void *hashmap__find(const struct hashmap *m, const void *key)
{
	struct hashmap_entry *e = lookup(m, key, m->hash(key));

	return e ? e->value : NULL;
}

static void place(struct hashmap_entry *slots, size_t cap, const struct hashmap_entry *src)
{
	size_t mask = cap - 1, i;

	for (i = src->hash & mask; slots[i].key; i = (i + 1) & mask)
		;
	slots[i] = *src;
}

static int resize(struct hashmap *m, size_t cap)
{
	struct hashmap_entry *slots = calloc(cap, sizeof(*slots));
	size_t i;

	if (!slots)
		return -ENOMEM;
	for (i = 0; i < m->cap; i++)
		if (m->slots[i].key)
			place(slots, cap, &m->slots[i]);
	free(m->slots);
	m->slots = slots;
	m->cap = cap;
	return 0;
}

int hashmap__reserve(struct hashmap *m, size_t n)
{
	size_t cap = m->cap ? m->cap : 16;

	while (n * LOAD_DEN > cap * LOAD_NUM) {
		if (cap > SIZE_MAX / 2 / sizeof(struct hashmap_entry))
			return -ENOMEM;
		cap *= 2;
	}
	return cap == m->cap ? 0 : resize(m, cap);
}

/* Place e, known absent, growing the slots as needed. */
static int add(struct hashmap *m, const struct hashmap_entry *e)
{
	int err;

	if ((m->nr + 1) * LOAD_DEN > m->cap * LOAD_NUM) {
		if (m->cap > SIZE_MAX / 2 / sizeof(e))
			return -ENOMEM;
		err = resize(m, m->cap ? m->cap * 2 : 16);
		if (err)
			return err;
	}
	place(m->slots, m->cap, e);
	m->nr++;
	return 0;
}

int hashmap__insert(struct hashmap *m, const void *key, void *value)
{
	struct hashmap_entry e = { .hash = m->hash(key), .key = key, .value = value };

	if (lookup(m, key, e.hash))
		return -EEXIST;
	return add(m, &e);
}

int hashmap__add(struct hashmap *m, const void *key, void *value)
{
	struct hashmap_entry e = { .hash = m->hash(key), .key = key, .value = value };

	return add(m, &e);
}

void *hashmap__delete(struct hashmap *m, const void *key)
{
	struct hashmap_entry *e = lookup(m, key, m->hash(key));
	size_t mask = m->cap - 1, hole, i, home;
	void *value;

	if (!e)
		return NULL;
	value = e->value;
	hole = (size_t)(e - m->slots);
	/* Backward-shift: move later entries of the cluster into the hole when their home
	 * slot does not lie cyclically in (hole, i]. */
	for (i = (hole + 1) & mask; m->slots[i].key; i = (i + 1) & mask) {
		home = m->slots[i].hash & mask;
		if (((i - home) & mask) >= ((i - hole) & mask)) {
			m->slots[hole] = m->slots[i];
			hole = i;
		}
	}
	memset(&m->slots[hole], 0, sizeof(m->slots[hole]));
	m->nr--;
	return value;
}

uint64_t hash_bytes(const void *p, size_t n, uint64_t seed)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ULL ^ seed;
	size_t i = 0;

	/* Eight bytes at a time, then the tail: FNV-1a over words, avalanched at the end. */
	for (; i + 8 <= n; i += 8) {
		uint64_t w;

		memcpy(&w, b + i, 8);
		h = (h ^ w) * 0x100000001b3ULL;
		h ^= h >> 29;
	}
	for (; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return hash_u64(h ^ n);
}

uint64_t hash_str(const char *s)
{
	return hash_bytes(s, strlen(s), 0);
}
