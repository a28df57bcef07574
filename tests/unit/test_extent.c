// SPDX-License-Identifier: Apache-2.0
/*
 * The extent allocator on its own (agent/unwind/extent.c): first fit, coalescing, frees deferred to
 * the next grace period, exhaustion and fragmentation; and a long random run checked entry
 * by entry against a model of the map.
 */
#include <stdbool.h>

#include "unit.h"

#include "../../agent/unwind/extent.h"

/*
 * Fault injection: extent.c grows its lists with reallocarray(), which this definition
 * replaces in the test binary (the executable's symbol comes first); fail_next makes the
 * next call fail as glibc's does.
 */
static bool fail_next;

void *reallocarray(void *p, size_t n, size_t size)
{
	if (fail_next || (size && n > SIZE_MAX / size)) {
		fail_next = false;
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, n * size);
}

/* The free list is sorted, its runs are not empty, not adjacent and inside [0, size). */
static void assert_free_list_sane(const struct extents *x, uint32_t size)
{
	size_t i;

	for (i = 0; i < x->nr_free; i++) {
		assert_true(x->free[i].len > 0);
		assert_true((uint64_t)x->free[i].start + x->free[i].len <= size);
		if (i)
			assert_true((uint64_t)x->free[i - 1].start + x->free[i - 1].len <
				    x->free[i].start);
	}
}

static void test_whole_map_then_exhausted(void **state)
{
	struct extents x;

	(void)state;
	assert_int_equal(extents__init(&x, 100), 0);
	assert_int_equal(extents__free_entries(&x), 100);
	assert_int_equal(extents__alloc(&x, 101), -ENOSPC);
	assert_int_equal(extents__alloc(&x, 100), 0);
	assert_int_equal(x.nr_free, 0);
	assert_int_equal(extents__free_entries(&x), 0);
	assert_int_equal(extents__alloc(&x, 1), -ENOSPC);
	extents__fini(&x);

	/* Free entries count every run, however short; deferred ones only after the grace
	 * period. */
	assert_int_equal(extents__init(&x, 100), 0);
	assert_int_equal(extents__alloc(&x, 100), 0);
	assert_int_equal(extents__release(&x, 10, 5), 0);
	assert_int_equal(extents__release(&x, 50, 7), 0);
	assert_int_equal(extents__defer(&x, 80, 3), 0);
	assert_int_equal(extents__free_entries(&x), 12);
	assert_int_equal(extents__deferred(&x), 3);
	assert_int_equal(extents__grace_period(&x), 0);
	assert_int_equal(extents__free_entries(&x), 15);
	extents__fini(&x);

	/* A map of no entries has nothing to give. */
	assert_int_equal(extents__init(&x, 0), 0);
	assert_int_equal(extents__alloc(&x, 1), -ENOSPC);
	extents__fini(&x);
}

/* Large extents from the top, small ones from the bottom: the room between stays whole. */
static void test_alloc_high(void **state)
{
	struct extents x;

	(void)state;
	assert_int_equal(extents__init(&x, 100), 0);
	assert_int_equal(extents__alloc_high(&x, 30), 70);
	assert_int_equal(extents__alloc(&x, 5), 0);
	assert_int_equal(extents__alloc_high(&x, 20), 50);
	assert_int_equal(extents__alloc(&x, 5), 5);
	assert_int_equal(extents__release(&x, 70, 30), 0); /* the top run is free again */
	assert_int_equal(extents__alloc_high(&x, 41), -ENOSPC);
	assert_int_equal(extents__alloc_high(&x, 30), 70);
	assert_int_equal(extents__alloc_high(&x, 40), 10); /* the whole of [10, 50) */
	assert_int_equal(x.nr_free, 0);
	assert_int_equal(extents__alloc_high(&x, 1), -ENOSPC);
	assert_free_list_sane(&x, 100);
	extents__fini(&x);
}

/* extents__take(): exactly the range asked, from one free run, whichever part of it. */
static void test_take(void **state)
{
	struct extents x;

	(void)state;
	assert_int_equal(extents__init(&x, 100), 0);
	assert_int_equal(extents__take(&x, 40, 10), 0); /* the middle: [0, 40) and [50, 100) */
	assert_int_equal(x.nr_free, 2);
	assert_int_equal(x.free[0].start, 0);
	assert_int_equal(x.free[0].len, 40);
	assert_int_equal(x.free[1].start, 50);
	assert_int_equal(x.free[1].len, 50);
	assert_int_equal(extents__take(&x, 45, 1), -ENOENT);  /* taken already */
	assert_int_equal(extents__take(&x, 35, 10), -ENOENT); /* straddles the taken part */
	assert_int_equal(extents__take(&x, 0, 5), 0);	      /* a run's start */
	assert_int_equal(extents__take(&x, 90, 10), 0);	      /* a run's end */
	assert_int_equal(extents__take(&x, 5, 35), 0);	      /* a whole run */
	assert_int_equal(x.nr_free, 1);
	assert_int_equal(x.free[0].start, 50);
	assert_int_equal(x.free[0].len, 40);
	assert_int_equal(extents__alloc(&x, 41), -ENOSPC);
	assert_int_equal(extents__release(&x, 40, 10), 0); /* joins [50, 90) */
	assert_int_equal(extents__alloc(&x, 50), 40);
	assert_free_list_sane(&x, 100);
	extents__fini(&x);

	/* A split with runs after it: they move up by one, in order. */
	assert_int_equal(extents__init(&x, 100), 0);
	assert_int_equal(extents__take(&x, 50, 10), 0); /* [0, 50) [60, 100) */
	assert_int_equal(extents__take(&x, 80, 5), 0);	/* [0, 50) [60, 80) [85, 100) */
	assert_int_equal(extents__take(&x, 20, 10), 0); /* [0, 20) [30, 50) [60, 80) [85, 100) */
	assert_int_equal(x.nr_free, 4);
	assert_int_equal(x.free[1].start, 30);
	assert_int_equal(x.free[1].len, 20);
	assert_int_equal(x.free[2].start, 60);
	assert_int_equal(x.free[2].len, 20);
	assert_int_equal(x.free[3].start, 85);
	assert_int_equal(x.free[3].len, 15);
	assert_free_list_sane(&x, 100);
	extents__fini(&x);
}

static void test_consecutive_allocations(void **state)
{
	struct extents x;

	(void)state;
	assert_int_equal(extents__init(&x, 100), 0);
	assert_int_equal(extents__alloc(&x, 10), 0);
	assert_int_equal(extents__alloc(&x, 25), 10);
	assert_int_equal(extents__alloc(&x, 1), 35);
	assert_int_equal(extents__alloc(&x, 64), 36);
	assert_int_equal(extents__alloc(&x, 1), -ENOSPC);
	extents__fini(&x);
}

/* The lowest run that is long enough, not the best-fitting one. */
static void test_first_fit_not_best_fit(void **state)
{
	struct extents x;

	(void)state;
	assert_int_equal(extents__init(&x, 100), 0);
	assert_int_equal(extents__alloc(&x, 20), 0);  /* a */
	assert_int_equal(extents__alloc(&x, 30), 20); /* b */
	assert_int_equal(extents__alloc(&x, 5), 50);  /* c */
	assert_int_equal(extents__alloc(&x, 45), 55); /* d: full */
	assert_int_equal(extents__release(&x, 0, 20), 0);
	assert_int_equal(extents__release(&x, 50, 5), 0);
	assert_int_equal(x.nr_free, 2);
	/* [50, 55) would fit exactly; first fit takes the front of [0, 20). */
	assert_int_equal(extents__alloc(&x, 5), 0);
	/* A run too short is passed over for a later one. */
	assert_int_equal(extents__alloc(&x, 16), -ENOSPC);
	assert_int_equal(extents__alloc(&x, 15), 5);
	assert_int_equal(extents__alloc(&x, 5), 50);
	assert_int_equal(x.nr_free, 0);
	assert_int_equal(extents__alloc(&x, 1), -ENOSPC);
	extents__fini(&x);
}

/* Fill a map of 10 * n with n extents of 10. */
static void fill_tens(struct extents *x, uint32_t n)
{
	uint32_t i;

	assert_int_equal(extents__init(x, 10 * n), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(extents__alloc(x, 10), 10 * i);
}

static void test_release_coalesces(void **state)
{
	struct extents x;

	(void)state;
	fill_tens(&x, 6);
	/* Alone: a run of its own. */
	assert_int_equal(extents__release(&x, 10, 10), 0);
	assert_int_equal(extents__release(&x, 40, 10), 0);
	assert_int_equal(x.nr_free, 2);
	/* Next to the run on its left: that run grows. */
	assert_int_equal(extents__release(&x, 50, 10), 0);
	assert_int_equal(x.nr_free, 2);
	assert_int_equal(x.free[1].start, 40);
	assert_int_equal(x.free[1].len, 20);
	/* Next to the run on its right: that run starts earlier. */
	assert_int_equal(extents__release(&x, 0, 10), 0);
	assert_int_equal(x.nr_free, 2);
	assert_int_equal(x.free[0].start, 0);
	assert_int_equal(x.free[0].len, 20);
	/* Between two runs: the three become one. */
	assert_int_equal(extents__release(&x, 30, 10), 0);
	assert_int_equal(x.nr_free, 2);
	assert_int_equal(extents__release(&x, 20, 10), 0);
	assert_int_equal(x.nr_free, 1);
	assert_int_equal(x.free[0].start, 0);
	assert_int_equal(x.free[0].len, 60);
	assert_free_list_sane(&x, 60);
	assert_int_equal(extents__alloc(&x, 60), 0);
	extents__fini(&x);
}

static void test_fragmentation(void **state)
{
	struct extents x;
	uint32_t i;

	(void)state;
	fill_tens(&x, 10);
	for (i = 0; i < 10; i += 2)
		assert_int_equal(extents__release(&x, 10 * i, 10), 0);
	/* Half the map is free, in five holes of 10: nothing longer fits. */
	assert_int_equal(x.nr_free, 5);
	assert_int_equal(extents__alloc(&x, 11), -ENOSPC);
	assert_int_equal(x.nr_free, 5); /* a failed allocation changes nothing */
	/* Freeing what lies between two holes joins them. */
	assert_int_equal(extents__release(&x, 30, 10), 0);
	assert_int_equal(x.nr_free, 4);
	assert_int_equal(extents__alloc(&x, 30), 20);
	/* The holes fill from the lowest. */
	assert_int_equal(extents__alloc(&x, 10), 0);
	assert_int_equal(extents__alloc(&x, 10), 60);
	assert_int_equal(extents__alloc(&x, 10), 80);
	assert_int_equal(extents__alloc(&x, 1), -ENOSPC);
	extents__fini(&x);
}

/* Many holes: the free list grows past its first allocation, and merges back to one. */
static void test_many_holes(void **state)
{
	enum { N = 5000 };
	struct extents x;
	uint32_t i;

	(void)state;
	assert_int_equal(extents__init(&x, 2 * N), 0);
	for (i = 0; i < N; i++) {
		assert_int_equal(extents__alloc(&x, 1), 2 * i);
		assert_int_equal(extents__alloc(&x, 1), 2 * i + 1);
	}
	for (i = N; i-- > 0;)
		assert_int_equal(extents__release(&x, 2 * i, 1), 0);
	assert_int_equal(x.nr_free, N);
	assert_free_list_sane(&x, 2 * N);
	assert_int_equal(extents__alloc(&x, 2), -ENOSPC);
	for (i = 0; i < N; i++)
		assert_int_equal(extents__release(&x, 2 * i + 1, 1), 0);
	assert_int_equal(x.nr_free, 1);
	assert_int_equal(extents__alloc(&x, 2 * N), 0);
	extents__fini(&x);
}

/* Indexes up to the largest a u32 map has, returned whole (not as negative values). */
static void test_largest_map(void **state)
{
	struct extents x;

	(void)state;
	assert_int_equal(extents__init(&x, UINT32_MAX), 0);
	assert_int_equal(extents__alloc(&x, UINT32_MAX - 1), 0);
	assert_true(extents__alloc(&x, 1) == (int64_t)UINT32_MAX - 1);
	assert_int_equal(extents__alloc(&x, 1), -ENOSPC);
	assert_int_equal(extents__release(&x, 0, UINT32_MAX - 1), 0);
	assert_int_equal(extents__alloc(&x, UINT32_MAX), -ENOSPC);
	assert_true(extents__alloc(&x, UINT32_MAX - 1) == 0);
	extents__fini(&x);
}

static void test_deferred_free_waits_for_the_grace_period(void **state)
{
	struct extents x;

	(void)state;
	fill_tens(&x, 4);
	assert_int_equal(extents__defer(&x, 10, 10), 0);
	assert_int_equal(extents__defer(&x, 20, 10), 0);
	assert_int_equal(extents__deferred(&x), 20);
	/* Not reused, not even partly, before the grace period. */
	assert_int_equal(x.nr_free, 0);
	assert_int_equal(extents__alloc(&x, 1), -ENOSPC);
	/* Deferring nothing is nothing (not an empty run after the grace period). */
	assert_int_equal(extents__defer(&x, 35, 0), 0);
	assert_int_equal(x.nr_deferred, 2);
	assert_int_equal(extents__deferred(&x), 20);

	assert_int_equal(extents__grace_period(&x), 0);
	assert_int_equal(extents__deferred(&x), 0);
	/* Both came back, as one run. */
	assert_int_equal(x.nr_free, 1);
	assert_int_equal(x.free[0].start, 10);
	assert_int_equal(x.free[0].len, 20);
	assert_int_equal(extents__alloc(&x, 20), 10);
	/* A second grace period has nothing left to free. */
	assert_int_equal(extents__grace_period(&x), 0);
	assert_int_equal(extents__alloc(&x, 1), -ENOSPC);
	extents__fini(&x);
}

/* Freed after an allocation that reused the space the grace period returned: deferred
 * again, it does not come back twice. */
static void test_deferred_then_reused(void **state)
{
	struct extents x;

	(void)state;
	fill_tens(&x, 3);
	assert_int_equal(extents__defer(&x, 0, 10), 0);
	assert_int_equal(extents__grace_period(&x), 0);
	assert_int_equal(extents__alloc(&x, 10), 0);
	assert_int_equal(extents__defer(&x, 0, 10), 0);
	assert_int_equal(extents__defer(&x, 20, 10), 0);
	assert_int_equal(extents__alloc(&x, 1), -ENOSPC);
	assert_int_equal(extents__grace_period(&x), 0);
	assert_int_equal(x.nr_free, 2);
	assert_int_equal(extents__alloc(&x, 11), -ENOSPC);
	assert_int_equal(extents__alloc(&x, 10), 0);
	assert_int_equal(extents__alloc(&x, 10), 20);
	extents__fini(&x);
}

/* Out of memory: the documented -ENOMEM, and the lists as they were. */
static void test_out_of_memory(void **state)
{
	struct extents x;
	uint32_t i;

	(void)state;
	fail_next = true;
	assert_int_equal(extents__init(&x, 10), -ENOMEM);
	extents__fini(&x);

	/* 33 extents of 2; every other one of the first 32 freed: 16 runs, the list's first
	 * allocation full. [62, 64) is in use, so the last extent is no free run's neighbour. */
	assert_int_equal(extents__init(&x, 66), 0);
	for (i = 0; i < 33; i++)
		assert_int_equal(extents__alloc(&x, 2), 2 * i);
	for (i = 0; i < 32; i += 2)
		assert_int_equal(extents__release(&x, 2 * i, 2), 0);
	assert_int_equal(x.nr_free, 16);
	assert_int_equal(x.cap_free, 16);

	/* A deferred free that cannot be recorded. */
	fail_next = true;
	assert_int_equal(extents__defer(&x, 64, 2), -ENOMEM);
	assert_int_equal(extents__deferred(&x), 0);

	/* A run of its own, with no room to record it: the list is unchanged. */
	fail_next = true;
	assert_int_equal(extents__release(&x, 64, 2), -ENOMEM);
	assert_int_equal(x.nr_free, 16);
	assert_free_list_sane(&x, 66);

	/* The same at a grace period: those entries are reported lost. */
	assert_int_equal(extents__defer(&x, 64, 2), 0);
	fail_next = true;
	assert_int_equal(extents__grace_period(&x), 2);
	assert_int_equal(extents__deferred(&x), 0);
	assert_int_equal(x.nr_free, 16);
	assert_int_equal(extents__alloc(&x, 3), -ENOSPC);
	extents__fini(&x);
}

/* ---- A random run against a model: one state per entry. */

enum { MODEL_SIZE = 512, MODEL_STEPS = 20000, MODEL_MAX_LIVE = 64 };

enum entry_state { ENTRY_FREE, ENTRY_USED, ENTRY_DEFERRED };

struct model {
	uint8_t entry[MODEL_SIZE];
	struct extent live[MODEL_MAX_LIVE]; /* allocated, not freed */
	size_t nr_live;
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint32_t rng(uint32_t bound)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % bound);
}

/* First fit in the model: the lowest start of len free entries, or -1. */
static int64_t model_first_fit(const struct model *m, uint32_t len)
{
	uint32_t s, run = 0;

	for (s = 0; s < MODEL_SIZE; s++) {
		run = m->entry[s] == ENTRY_FREE ? run + 1 : 0;
		if (run == len)
			return s + 1 - len;
	}
	return -1;
}

static void model_set(struct model *m, struct extent e, uint8_t st)
{
	uint32_t i;

	for (i = 0; i < e.len; i++)
		m->entry[e.start + i] = st;
}

/* The allocator's free list is exactly the model's free entries, in maximal runs. */
static void model_check(const struct model *m, const struct extents *x)
{
	uint8_t is_free[MODEL_SIZE] = { 0 };
	uint64_t deferred = 0;
	size_t i;
	uint32_t j;

	assert_free_list_sane(x, MODEL_SIZE);
	for (i = 0; i < x->nr_free; i++)
		for (j = 0; j < x->free[i].len; j++)
			is_free[x->free[i].start + j] = 1;
	for (j = 0; j < MODEL_SIZE; j++) {
		assert_int_equal(is_free[j], m->entry[j] == ENTRY_FREE);
		deferred += m->entry[j] == ENTRY_DEFERRED;
	}
	assert_int_equal(extents__deferred(x), deferred);
}

static void random_step(struct model *m, struct extents *x)
{
	uint32_t op = rng(10), i;

	if (op < 5 && m->nr_live < MODEL_MAX_LIVE) {
		uint32_t len = 1 + rng(rng(4) ? 16 : 128);
		int64_t want = model_first_fit(m, len), got = extents__alloc(x, len);

		assert_true(got == (want < 0 ? -ENOSPC : want));
		if (got < 0)
			return;
		m->live[m->nr_live] = (struct extent){ .start = (uint32_t)got, .len = len };
		model_set(m, m->live[m->nr_live++], ENTRY_USED);
	} else if (op < 9 && m->nr_live) {
		size_t k = rng((uint32_t)m->nr_live);
		struct extent e = m->live[k];

		m->live[k] = m->live[--m->nr_live];
		/* Mostly deferred (a published extent), sometimes released at once. */
		if (rng(4)) {
			assert_int_equal(extents__defer(x, e.start, e.len), 0);
			model_set(m, e, ENTRY_DEFERRED);
		} else {
			assert_int_equal(extents__release(x, e.start, e.len), 0);
			model_set(m, e, ENTRY_FREE);
		}
	} else {
		assert_int_equal(extents__grace_period(x), 0);
		for (i = 0; i < MODEL_SIZE; i++)
			if (m->entry[i] == ENTRY_DEFERRED)
				m->entry[i] = ENTRY_FREE;
	}
}

static void test_random_against_model(void **state)
{
	static struct model m;
	struct extents x;
	uint32_t step;

	(void)state;
	assert_int_equal(extents__init(&x, MODEL_SIZE), 0);
	for (step = 0; step < MODEL_STEPS; step++) {
		random_step(&m, &x);
		model_check(&m, &x);
	}
	extents__fini(&x);
}

UNIT_MAIN("extent", cmocka_unit_test(test_whole_map_then_exhausted),
	  cmocka_unit_test(test_consecutive_allocations), cmocka_unit_test(test_alloc_high),
	  cmocka_unit_test(test_take), cmocka_unit_test(test_first_fit_not_best_fit),
	  cmocka_unit_test(test_release_coalesces), cmocka_unit_test(test_fragmentation),
	  cmocka_unit_test(test_many_holes), cmocka_unit_test(test_largest_map),
	  cmocka_unit_test(test_deferred_free_waits_for_the_grace_period),
	  cmocka_unit_test(test_deferred_then_reused), cmocka_unit_test(test_out_of_memory),
	  cmocka_unit_test(test_random_against_model))
