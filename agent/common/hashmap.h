/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An open-addressing hash map of borrowed keys to values, with linear probing and
 * backward-shift deletion (no tombstones). Keys are pointers the caller keeps alive, usually
 * into the value itself; the map never copies or frees keys or values.
 */
#ifndef IGNIS_HASHMAP_H
#define IGNIS_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint64_t (*hashmap_hash_fn)(const void *key);
typedef bool (*hashmap_equal_fn)(const void *a, const void *b);

struct hashmap_entry {
	uint64_t hash;
	const void *key; /* NULL: empty slot */
	void *value;
};

struct hashmap {
	hashmap_hash_fn hash;
	hashmap_equal_fn equal;
	struct hashmap_entry *slots;
	size_t cap; /* power of two, or 0 */
	size_t nr;
};

void hashmap__init(struct hashmap *m, hashmap_hash_fn hash, hashmap_equal_fn equal);
/* Free the slots; keys and values are the caller's. */
void hashmap__fini(struct hashmap *m);
/* Remove every entry, keeping the slots allocated. */
void hashmap__clear(struct hashmap *m);

/* The value stored under key, or NULL. */
void *hashmap__find(const struct hashmap *m, const void *key);
/* Add key -> value. Returns 0, -EEXIST if key is present, or -ENOMEM. */
int hashmap__insert(struct hashmap *m, const void *key, void *value)
	__attribute__((warn_unused_result));
/* hashmap__insert() of a key the caller knows is absent (a find just missed it), without
 * looking for it again. Returns 0 or -ENOMEM. */
int hashmap__add(struct hashmap *m, const void *key, void *value)
	__attribute__((warn_unused_result));
/* Make room for n entries in all, so that adding up to n grows nothing. Returns 0 or
 * -ENOMEM. */
int hashmap__reserve(struct hashmap *m, size_t n) __attribute__((warn_unused_result));
/* Remove key; returns its value, or NULL if absent. */
void *hashmap__delete(struct hashmap *m, const void *key);

static inline size_t hashmap__size(const struct hashmap *m)
{
	return m->nr;
}

/* Iterate over the entries; the map must not change during the walk. */
#define hashmap__for_each(m, e)                                                  \
	for ((e) = (m)->slots; (m)->slots && (e) < (m)->slots + (m)->cap; (e)++) \
		if ((e)->key)

/* 64-bit hash of n bytes (FNV-1a with a final avalanche). */
uint64_t hash_bytes(const void *p, size_t n, uint64_t seed);
uint64_t hash_str(const char *s);
static inline uint64_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

#endif /* IGNIS_HASHMAP_H */
