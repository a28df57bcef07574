// SPDX-License-Identifier: Apache-2.0
/*
 * The unwinder's table cache (agent/unwind/unwind_cache.c) without BPF or threads: tables shared by
 * build ID, objects without one keyed by themselves, references, when a table outlives its
 * last user, and the unload callback that stands for the BPF
 * side. Objects are the ELF fixtures, opened under identities of the test's choosing.
 */
#include <fcntl.h>
#include <unistd.h>

#include "unit.h"

#include "../../agent/unwind/unwind_cache.h"

/* What the unload callback saw. */
struct unloads {
	struct unwind_cache *cache;
	unsigned int calls;
	char last_key[sizeof(((struct unwind_table *)0)->key)];
};

static void record_unload(void *ctx, struct unwind_table *t)
{
	struct unloads *u = ctx;

	/* Out of the cache already, and READY (the only state with rows to release). */
	assert_null(hashmap__find(&u->cache->tables, t->key));
	assert_int_equal(t->state, UNWIND_TABLE_READY);
	u->calls++;
	memcpy(u->last_key, t->key, sizeof(u->last_key));
}

struct fixture {
	struct symbolizer *sym;
	struct unwind_cache cache;
	struct unloads unloads;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	f->sym = symbolizer__new(NULL);
	if (!f->sym) {
		free(f);
		return -1;
	}
	f->unloads.cache = &f->cache;
	unwind_cache__init(&f->cache, record_unload, &f->unloads);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	/* Frees every table left, in use or not, and puts their objects (ASan: no leak). */
	unwind_cache__fini(&f->cache);
	symbolizer__free(f->sym);
	free(f);
	return 0;
}

/* Open fixture `name` as the object of identity (1, ino): the same file under two
 * identities is two objects with one build ID. The caller puts it. */
static struct sym_object *open_object(struct fixture *f, const char *name, ino_t ino)
{
	struct sym_object *o;
	int fd = open(name, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	o = symbolizer__open_fd(f->sym, fd, name, 1, ino);
	close(fd);
	assert_non_null(o);
	return o;
}

static struct unwind_table *get(struct fixture *f, struct sym_object *o, bool want_created)
{
	bool created = !want_created;
	struct unwind_table *t = unwind_cache__get(&f->cache, o, &created);

	assert_non_null(t);
	assert_int_equal(created, want_created);
	return t;
}

static void test_one_table_per_build_id(void **state)
{
	struct fixture *f = *state;
	struct sym_object *a = open_object(f, FIXTURE("fixture-pie"), 1);
	struct sym_object *a2 = open_object(f, FIXTURE("fixture-pie"), 2);
	struct sym_object *b = open_object(f, FIXTURE("fixture-nopie"), 3);
	struct unwind_table *ta, *ta2, *tb;
	char id[64], key[80];

	assert_ptr_not_equal(a, a2);
	ta = get(f, a, true);
	assert_int_equal(ta->state, UNWIND_TABLE_BUILDING);
	assert_int_equal(ta->users, 1);
	assert_true(ta->by_build_id);
	assert_ptr_equal(ta->obj, a); /* held for the build */
	fixture_build_id(FIXTURE("fixture-pie"), id, sizeof(id));
	snprintf(key, sizeof(key), "b:%s", id);
	assert_string_equal(ta->key, key);

	/* Another object of the same build: the same table, one more user, nothing to build. */
	ta2 = get(f, a2, false);
	assert_ptr_equal(ta2, ta);
	assert_int_equal(ta->users, 2);
	assert_ptr_equal(ta->obj, a); /* the first object's, not replaced */

	tb = get(f, b, true);
	assert_ptr_not_equal(tb, ta);
	assert_int_equal(hashmap__size(&f->cache.tables), 2);

	/* find() takes no reference. */
	assert_ptr_equal(unwind_cache__find(&f->cache, a2), ta);
	assert_int_equal(ta->users, 2);

	unwind_cache__put(&f->cache, ta);
	unwind_cache__put(&f->cache, ta2);
	unwind_cache__put(&f->cache, tb);
	unwind_cache__put(&f->cache, NULL);
	sym_object__put(a);
	sym_object__put(a2);
	sym_object__put(b);
}

static void test_no_build_id_keyed_by_object(void **state)
{
	struct fixture *f = *state;
	struct sym_object *n1 = open_object(f, FIXTURE("fixture-nobuildid"), 1);
	struct sym_object *n2 = open_object(f, FIXTURE("fixture-nobuildid"), 2);
	struct unwind_table *t1 = get(f, n1, true), *t2 = get(f, n2, true);
	char key[64];

	/* The same file under two identities shares nothing: no build ID says they match. */
	assert_ptr_not_equal(t1, t2);
	assert_false(t1->by_build_id);
	snprintf(key, sizeof(key), "o:%p", (void *)n1);
	assert_string_equal(t1->key, key);
	assert_ptr_equal(get(f, n1, false), t1);
	assert_int_equal(t1->users, 2);

	/* READY and unused: dropped at once, with its rows unloaded. */
	t1->state = UNWIND_TABLE_READY;
	unwind_cache__put(&f->cache, t1);
	assert_int_equal(f->unloads.calls, 0);
	unwind_cache__put(&f->cache, t1);
	assert_int_equal(f->unloads.calls, 1);
	assert_string_equal(f->unloads.last_key, key);
	assert_null(unwind_cache__find(&f->cache, n1));
	assert_ptr_equal(unwind_cache__find(&f->cache, n2), t2);

	sym_object__put(n1);
	sym_object__put(n2);
}

/* What happens at the last reference, by state. */
static void test_last_put_by_state(void **state)
{
	struct fixture *f = *state;
	struct sym_object *ready = open_object(f, FIXTURE("fixture-pie"), 1);
	struct sym_object *building = open_object(f, FIXTURE("fixture-nopie"), 2);
	struct sym_object *none = open_object(f, FIXTURE("libfixture.so"), 3);
	struct sym_object *waiting = open_object(f, FIXTURE("inline"), 4);
	struct unwind_table *t;

	/* READY with a build ID: stays cached for the next process of the build. */
	t = get(f, ready, true);
	t->state = UNWIND_TABLE_READY;
	unwind_cache__put(&f->cache, t);
	assert_ptr_equal(unwind_cache__find(&f->cache, ready), t);
	assert_int_equal(t->users, 0);
	assert_ptr_equal(get(f, ready, false), t); /* found again, not rebuilt */
	unwind_cache__put(&f->cache, t);

	/* BUILDING: the build thread still has it; it stays until removed. */
	t = get(f, building, true);
	unwind_cache__put(&f->cache, t);
	assert_ptr_equal(unwind_cache__find(&f->cache, building), t);
	unwind_cache__remove(&f->cache, t);
	assert_null(unwind_cache__find(&f->cache, building));

	/* NONE and WAITING: freed, with nothing in the maps to unload. */
	t = get(f, none, true);
	t->state = UNWIND_TABLE_NONE;
	unwind_cache__put(&f->cache, t);
	assert_null(unwind_cache__find(&f->cache, none));
	t = get(f, waiting, true);
	t->state = UNWIND_TABLE_WAITING;
	assert_int_equal(sym_object__unwind_table(t->obj, &t->built), 0);
	assert_true(t->built.nr_rows > 0);
	unwind_cache__put(&f->cache, t); /* its built rows go too (ASan: no leak) */
	assert_null(unwind_cache__find(&f->cache, waiting));

	assert_int_equal(f->unloads.calls, 0);
	assert_int_equal(hashmap__size(&f->cache.tables), 1);
	sym_object__put(ready);
	sym_object__put(building);
	sym_object__put(none);
	sym_object__put(waiting);
}

/* A table that found no room in the row map is remembered past its last user (not built and
 * logged again for every process of that build); one evicted for being cold is not. Both
 * carry the object's file name for the log. */
static void test_no_room_stays_cached(void **state)
{
	struct fixture *f = *state;
	struct sym_object *big = open_object(f, FIXTURE("fixture-pie"), 1);
	struct sym_object *cold = open_object(f, FIXTURE("libfixture.so"), 2);
	struct unwind_table *t;

	t = get(f, big, true);
	assert_string_equal(t->name, "fixture-pie");
	t->state = UNWIND_TABLE_NONE;
	t->no_room = true;
	unwind_cache__put(&f->cache, t);
	assert_ptr_equal(unwind_cache__find(&f->cache, big), t);
	assert_ptr_equal(get(f, big, false), t); /* the next process finds it */
	assert_true(t->no_room);
	unwind_cache__put(&f->cache, t);

	t = get(f, cold, true);
	assert_string_equal(t->name, "libfixture.so");
	t->state = UNWIND_TABLE_NONE;
	t->evicted = true;
	assert_ptr_equal(unwind_cache__find_mut(&f->cache, cold), t);
	unwind_cache__put(&f->cache, t);
	assert_null(unwind_cache__find(&f->cache, cold));
	assert_int_equal(f->unloads.calls, 0);
	sym_object__put(big);
	sym_object__put(cold);
}

/* Teardown frees tables still referenced, and unloads nothing (the maps go with them). */
static void test_fini_frees_tables_in_use(void **state)
{
	struct fixture *f = *state;
	struct sym_object *a = open_object(f, FIXTURE("fixture-pie"), 1);
	struct unwind_table *t = get(f, a, true);

	t->state = UNWIND_TABLE_READY;
	sym_object__put(a); /* the table's own reference keeps it */
	assert_string_equal(sym_object__name(t->obj), FIXTURE("fixture-pie"));
	unwind_cache__fini(&f->cache);
	assert_int_equal(f->unloads.calls, 0);
	unwind_cache__init(&f->cache, record_unload, &f->unloads); /* for teardown */
}

static void test_release_built(void **state)
{
	struct fixture *f = *state;
	struct sym_object *a = open_object(f, FIXTURE("inline"), 1);
	struct unwind_table *t = get(f, a, true);

	assert_int_equal(sym_object__unwind_table(t->obj, &t->built), 0);
	assert_non_null(t->built.rows);
	unwind_table__release_built(t);
	assert_null(t->built.rows);
	assert_int_equal(t->built.nr_rows, 0);
	unwind_cache__put(&f->cache, t);
	unwind_cache__remove(&f->cache, t); /* BUILDING: the caller removes it */
	assert_null(unwind_cache__find(&f->cache, a));
	sym_object__put(a);
}

UNIT_MAIN("unwind_cache",
	  cmocka_unit_test_setup_teardown(test_one_table_per_build_id, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_no_build_id_keyed_by_object, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_last_put_by_state, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_fini_frees_tables_in_use, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_release_built, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_no_room_stays_cached, setup, teardown))
