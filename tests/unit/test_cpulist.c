// SPDX-License-Identifier: Apache-2.0
#include <errno.h>

#include "unit.h"

#include "../../agent/collect/sampler.h"

static void test_cpulist(void **state)
{
	uint8_t bm[8];

	(void)state;
	assert_int_equal(cpulist_parse("0-1\n", bm, 64), 2);
	assert_int_equal(bm[0], 3);
	assert_int_equal(cpulist_parse("0,2-4,7", bm, 64), 5);
	assert_int_equal(bm[0], 0x9d);
	assert_int_equal(cpulist_parse("63", bm, 64), 1);
	assert_int_equal(bm[7], 0x80);
	assert_int_equal(cpulist_parse("", bm, 64), 0);
	assert_int_equal(cpulist_parse("64", bm, 64), -EINVAL);
	assert_int_equal(cpulist_parse("3-1", bm, 64), -EINVAL);
	assert_int_equal(cpulist_parse("1,,2", bm, 64), -EINVAL);
	assert_int_equal(cpulist_parse("a", bm, 64), -EINVAL);
	assert_int_equal(cpulist_parse("1-", bm, 64), -EINVAL);
}

UNIT_MAIN("cpulist", cmocka_unit_test(test_cpulist))
