// SPDX-License-Identifier: Apache-2.0
/* grow_array() (agent/common/ignis.c) and sym_grow() (symbolizer/symtab.c) are two copies of one
 * helper, one on each side of the library boundary: they must behave alike. */
#include <errno.h>

#include "unit.h"

#include "../../symbolizer/symbolizer_internal.h"
#include "../../agent/common/ignis.h"

typedef int (*grow_fn)(void **arr, size_t *cap, size_t want, size_t elem_size);

struct outcome {
	int ret;
	size_t cap;
	bool moved_or_kept; /* the array is still usable up to cap */
};

static struct outcome grow(grow_fn fn, size_t cap0, size_t want, size_t elem)
{
	struct outcome r = { 0 };
	size_t cap = 0;
	char *arr = NULL;

	/* Start from an array of cap0 elements, as a caller would have grown it. */
	if (cap0) {
		assert_int_equal(fn((void **)&arr, &cap, cap0, elem), 0);
		assert_true(cap >= cap0);
	}
	r.cap = cap;
	r.ret = fn((void **)&arr, &r.cap, want, elem);
	if (!r.ret && r.cap)
		memset(arr, 0x5a, r.cap * elem); /* ASan: all of cap is ours */
	r.moved_or_kept = !cap || arr;
	free(arr);
	return r;
}

static void test_same_growth(void **state)
{
	static const struct {
		size_t cap0, want, elem;
	} cases[] = {
		{ 0, 0, 8 },	  { 0, 1, 8 },	 { 0, 16, 8 },	  { 0, 17, 8 },	 { 16, 16, 8 },
		{ 16, 33, 1 },	  { 32, 1000, 24 }, { 0, 4097, 1 }, { 64, 65, 3 },
		/* Doubling would overflow (before any allocation: ASan refuses huge ones). */
		{ 0, SIZE_MAX, 1 },
		{ 16, SIZE_MAX / 2 + 2, 1 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct outcome a = grow(grow_array, cases[i].cap0, cases[i].want, cases[i].elem);
		struct outcome b = grow(sym_grow, cases[i].cap0, cases[i].want, cases[i].elem);

		if (a.ret != b.ret || a.cap != b.cap || a.moved_or_kept != b.moved_or_kept)
			fail_msg("case %zu: grow_array %d cap %zu, sym_grow %d cap %zu", i, a.ret,
				 a.cap, b.ret, b.cap);
		/* And what both promise: enough room, or -ENOMEM with cap unchanged. */
		if (a.ret)
			assert_int_equal(a.ret, -ENOMEM);
		else
			assert_true(a.cap >= cases[i].want);
	}
}

UNIT_MAIN("ignis", cmocka_unit_test(test_same_growth))
