// SPDX-License-Identifier: Apache-2.0
/*
 * The table cache: unwind tables by build ID or object, referenced by processes (see
 * unwind_cache.h).
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unwind_cache.h"

static uint64_t hash_key(const void *k)
{
	return hash_str(k);
}

static bool equal_key(const void *a, const void *b)
{
	return !strcmp(a, b);
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

static void free_table(struct unwind_table *t)
{
	free(t->exe_refs);
	sym_unwind_table__fini(&t->built);
	sym_object__put(t->obj);
	free(t);
}

void unwind_cache__init(struct unwind_cache *c, unwind_table_unload_fn unload, void *ctx)
{
	memset(c, 0, sizeof(*c));
	hashmap__init(&c->tables, hash_key, equal_key);
	c->unload = unload;
	c->ctx = ctx;
}

void unwind_cache__fini(struct unwind_cache *c)
{
	struct hashmap_entry *e;

	hashmap__for_each(&c->tables, e)
		free_table(e->value);
	hashmap__fini(&c->tables);
}

struct unwind_table *unwind_cache__get(struct unwind_cache *c, struct sym_object *obj,
				       bool *created)
{
	struct unwind_table *t, probe;
	const char *name;

	*created = false;
	table_key(obj, probe.key, sizeof(probe.key));
	t = hashmap__find(&c->tables, probe.key);
	if (t) {
		t->users++;
		return t;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	memcpy(t->key, probe.key, sizeof(t->key));
	t->by_build_id = probe.key[0] == 'b';
	t->users = 1;
	t->state = UNWIND_TABLE_BUILDING;
	t->obj = sym_object__get(obj);
	name = strrchr(sym_object__name(obj), '/');
	snprintf(t->name, sizeof(t->name), "%s", name ? name + 1 : sym_object__name(obj));
	if (hashmap__insert(&c->tables, t->key, t)) {
		sym_object__put(t->obj);
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	*created = true;
	return t;
}

const struct unwind_table *unwind_cache__find(const struct unwind_cache *c,
					      const struct sym_object *obj)
{
	char key[sizeof(((struct unwind_table *)0)->key)];

	table_key(obj, key, sizeof(key));
	return hashmap__find(&c->tables, key);
}

struct unwind_table *unwind_cache__find_mut(struct unwind_cache *c, const struct sym_object *obj)
{
	return (struct unwind_table *)unwind_cache__find(c, obj);
}

void unwind_cache__remove(struct unwind_cache *c, struct unwind_table *t)
{
	hashmap__delete(&c->tables, t->key);
	if (t->state == UNWIND_TABLE_READY && c->unload)
		c->unload(c->ctx, t);
	free_table(t);
}

void unwind_cache__put(struct unwind_cache *c, struct unwind_table *t)
{
	if (!t || --t->users)
		return;
	if (t->by_build_id && (t->state == UNWIND_TABLE_READY || t->no_room))
		return; /* cached for the next process of this build */
	if (t->state == UNWIND_TABLE_BUILDING)
		return; /* the build thread owns it until done; removed when it is handed back */
	unwind_cache__remove(c, t);
}

void unwind_table__release_built(struct unwind_table *t)
{
	bool large = t->built.cfi_bytes > UNWIND_TRIM_AFTER_CFI_BYTES;

	sym_unwind_table__fini(&t->built);
	/* A large table's rows were one big block: give it back to the system, or the heap
	 * keeps the peak (glibc raises its mmap threshold after such a free). */
	if (large)
		malloc_trim(0);
}
