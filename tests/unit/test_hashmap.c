// SPDX-License-Identifier: Apache-2.0
#include <errno.h>

#include "unit.h"

#include "../../agent/common/hashmap.h"

static uint64_t bad_hash(const void *k)
{
	/* Everything collides: probing and backward-shift deletion do all the work. */
	return *(const uint64_t *)k & 3;
}

static bool equal_u64(const void *a, const void *b)
{
	return *(const uint64_t *)a == *(const uint64_t *)b;
}

static uint64_t good_hash(const void *k)
{
	return hash_u64(*(const uint64_t *)k);
}

static void exercise(hashmap_hash_fn hash)
{
	enum { N = 2000 };
	static uint64_t keys[N];
	struct hashmap m;
	struct hashmap_entry *e;
	size_t i, seen = 0;

	hashmap__init(&m, hash, equal_u64);
	for (i = 0; i < N; i++) {
		keys[i] = i * 7919;
		assert_int_equal(hashmap__insert(&m, &keys[i], &keys[i]), 0);
	}
	assert_int_equal(hashmap__insert(&m, &keys[5], &keys[5]), -EEXIST);
	assert_int_equal(hashmap__size(&m), N);
	/* Delete every third key, then check every key is where it should be. */
	for (i = 0; i < N; i += 3)
		assert_ptr_equal(hashmap__delete(&m, &keys[i]), &keys[i]);
	assert_null(hashmap__delete(&m, &keys[0]));
	for (i = 0; i < N; i++) {
		void *v = hashmap__find(&m, &keys[i]);

		if (i % 3 == 0)
			assert_null(v);
		else
			assert_ptr_equal(v, &keys[i]);
	}
	hashmap__for_each(&m, e)
		seen++;
	assert_int_equal(seen, hashmap__size(&m));
	assert_int_equal(seen, N - (N + 2) / 3);
	hashmap__clear(&m);
	assert_int_equal(hashmap__size(&m), 0);
	assert_null(hashmap__find(&m, &keys[1]));
	hashmap__fini(&m);
}

static void test_good_hash(void **state)
{
	(void)state;
	exercise(good_hash);
}

static void test_colliding_hash(void **state)
{
	(void)state;
	exercise(bad_hash);
}

/* reserve() makes room once: adding up to n moves no slot; add() finds what it added. */
static void test_reserve_and_add(void **state)
{
	static uint64_t keys[1000];
	struct hashmap m;
	struct hashmap_entry *slots;
	size_t i;

	(void)state;
	hashmap__init(&m, good_hash, equal_u64);
	assert_int_equal(hashmap__reserve(&m, 1000), 0);
	slots = m.slots;
	assert_true(m.cap * 3 >= 1000 * 4);
	for (i = 0; i < 1000; i++) {
		keys[i] = i * 7919;
		assert_int_equal(hashmap__add(&m, &keys[i], (void *)(uintptr_t)(i + 1)), 0);
	}
	assert_ptr_equal(m.slots, slots);
	assert_int_equal(hashmap__size(&m), 1000);
	for (i = 0; i < 1000; i++)
		assert_int_equal((uintptr_t)hashmap__find(&m, &keys[i]), i + 1);
	/* A smaller reservation keeps what is there. */
	assert_int_equal(hashmap__reserve(&m, 10), 0);
	assert_ptr_equal(m.slots, slots);
	hashmap__fini(&m);
}

static void test_hash_bytes(void **state)
{
	(void)state;
	assert_int_equal(hash_bytes("abc", 3, 0), hash_bytes("abc", 3, 0));
	assert_true(hash_bytes("abc", 3, 0) != hash_bytes("abd", 3, 0));
	assert_true(hash_bytes("abc", 3, 0) != hash_bytes("abc", 3, 1));
	assert_true(hash_bytes("abcdefgh1", 9, 0) != hash_bytes("abcdefgh2", 9, 0));
	assert_int_equal(hash_str("x"), hash_bytes("x", 1, 0));
}

UNIT_MAIN("hashmap", cmocka_unit_test(test_good_hash),
	  cmocka_unit_test(test_colliding_hash), cmocka_unit_test(test_reserve_and_add),
	  cmocka_unit_test(test_hash_bytes))
