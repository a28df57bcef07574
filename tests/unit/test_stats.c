// SPDX-License-Identifier: Apache-2.0
/*
 * The counter table (agent/operate/stats.h): the window's debug line made of it, and the BPF rows in
 * the BPF enum's order.
 */
#include <linux/types.h>

#include "unit.h"

#include "../../agent/operate/stats.h"
#include "../../bpf/profiler.h"

/* Keys of the window's debug line are unique, and the ones the integration tests read are
 * there (tests/integration: w["samples"], w["idle"], ...). */
static void test_window_line(void **state)
{
	static const char *const wanted[] = { "samples",  "idle",	  "filtered", "profiled",
					       "processes", "no_image",	  "cap_dropped",
					       "kthread",   "truncated",  "stacks" };
	struct counters c = { 0 };
	char buf[4096], key[64];
	size_t i, j, len;

	(void)state;
	for (i = 0; i < CNT_NR; i++) {
		c.v[i] = i + 1;
		for (j = i + 1; j < CNT_NR; j++)
			if (stat_defs[i].key && stat_defs[j].key)
				assert_string_not_equal(stat_defs[i].key, stat_defs[j].key);
	}
	len = counters_format_window(&c, 0, buf, sizeof(buf));
	assert_int_equal(len, strlen(buf));
	for (i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++) {
		snprintf(key, sizeof(key), " %s=", wanted[i]);
		assert_non_null(strstr(buf, key));
	}
	snprintf(key, sizeof(key), " samples=%d ", CNT_SAMPLES + 1);
	assert_non_null(strstr(buf, key));
	/* Only the figures of a window: no TOTAL or GAUGE row. */
	assert_null(strstr(buf, "processes_tracked"));
	/* Zeros left out on request; a short buffer still counts what it needed. */
	memset(&c, 0, sizeof(c));
	c.v[CNT_TRUNCATED] = 7;
	counters_format_window(&c, 1, buf, sizeof(buf));
	assert_string_equal(buf, " truncated=7");
	assert_int_equal(counters_format_window(&c, 1, buf, 4), strlen(" truncated=7"));
	assert_int_equal(strlen(buf), 3);
}

/* The drain copies BPF's counters by name; the accounting's identity needs all drop reasons. */
static void test_bpf_rows(void **state)
{
	struct counters c = { 0 };

	(void)state;
	assert_int_equal(STAT_NR, CNT_PROFILED); /* the BPF rows come first, in order */
	assert_int_equal(CNT_DROP_COUNTS_FULL, STAT_DROP_COUNTS_FULL);
	assert_true(stat_defs[CNT_UNWIND_EXE_ONLY].bpf);
	assert_false(stat_defs[CNT_PROFILED].bpf);
	c.v[CNT_DROP_NO_GEN] = 1;
	c.v[CNT_STACKS_LOST] = 10; /* recorded without a stack: not a drop */
	c.v[CNT_DROP_COUNTS_FULL] = 100;
	c.v[CNT_CAP_DROPPED] = 1000; /* dropped after recording: not BPF's */
	c.v[CNT_SAMPLES] = 10000;
	assert_int_equal(counters_bpf_drops(&c), 101);
}

UNIT_MAIN("stats", cmocka_unit_test(test_window_line), cmocka_unit_test(test_bpf_rows))
