// SPDX-License-Identifier: Apache-2.0
#include "unit.h"

#include "../../symbolizer/symbolizer.h"

static void parse(const char *text, struct procmaps_entry *e, char *buf, size_t size)
{
	snprintf(buf, size, "%s", text);
	assert_int_equal(procmaps_parse_line(buf, e), 0);
}

static void test_file_mapping(void **state)
{
	struct procmaps_entry e;
	char buf[512];

	(void)state;
	parse("7f2c1e428000-7f2c1e5bd000 r-xp 00028000 fd:01 1054866                    "
	      "/usr/lib/x86_64-linux-gnu/libc.so.6\n",
	      &e, buf, sizeof(buf));
	assert_int_equal(e.start, 0x7f2c1e428000ULL);
	assert_int_equal(e.end, 0x7f2c1e5bd000ULL);
	assert_int_equal(e.offset, 0x28000);
	assert_int_equal(e.dev_major, 0xfd);
	assert_int_equal(e.dev_minor, 1);
	assert_int_equal(e.inode, 1054866);
	assert_true(e.read && e.exec && !e.write && !e.shared);
	assert_false(e.deleted);
	assert_string_equal(e.path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
}

static void test_spaces_and_deleted(void **state)
{
	struct procmaps_entry e;
	char buf[512];

	(void)state;
	parse("55d0c0a00000-55d0c0a21000 r-xp 00001000 08:02 42   /opt/my app/bin/a b (deleted)",
	      &e, buf, sizeof(buf));
	assert_string_equal(e.path, "/opt/my app/bin/a b");
	assert_true(e.deleted);

	/* A file that is literally named "(deleted)" with spaces before it. */
	parse("1000-2000 r-xp 00000000 08:02 43 /tmp/x  (deleted) (deleted)", &e, buf,
	      sizeof(buf));
	assert_string_equal(e.path, "/tmp/x  (deleted)");
	assert_true(e.deleted);
}

static void test_special(void **state)
{
	struct procmaps_entry e;
	char buf[512];

	(void)state;
	parse("7ffd6b1f2000-7ffd6b1f4000 r-xp 00000000 00:00 0                          [vdso]",
	      &e, buf, sizeof(buf));
	assert_string_equal(e.path, "[vdso]");
	assert_int_equal(e.inode, 0);

	parse("7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n", &e, buf, sizeof(buf));
	assert_string_equal(e.path, "");
	assert_false(e.exec);

	/* Anonymous with no trailing padding at all. */
	parse("7f0000000000-7f0000021000 rwxp 00000000 00:00 0", &e, buf, sizeof(buf));
	assert_string_equal(e.path, "");
	assert_true(e.exec && e.write);

	parse("7f0000000000-7f0000021000 r-xs 00000000 00:05 1234 /memfd:jit (deleted)", &e, buf,
	      sizeof(buf));
	assert_true(e.shared && e.deleted);
	assert_string_equal(e.path, "/memfd:jit");
}

static void test_huge_values(void **state)
{
	struct procmaps_entry e;
	char buf[512];

	(void)state;
	parse("ffffffffff600000-ffffffffff601000 --xp fffffffffffff000 103:7ff 18446744073709551615 "
	      "[vsyscall]",
	      &e, buf, sizeof(buf));
	assert_int_equal(e.start, 0xffffffffff600000ULL);
	assert_int_equal(e.offset, 0xfffffffffffff000ULL);
	assert_int_equal(e.dev_major, 0x103);
	assert_int_equal(e.dev_minor, 0x7ff);
	assert_int_equal(e.inode, UINT64_MAX);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
		"",
		"garbage",
		"1000 r-xp 00000000 08:02 1 /x",
		"2000-1000 r-xp 00000000 08:02 1 /x",		/* end before start */
		"1000-2000 rxp 00000000 08:02 1 /x",
		"1000-2000 r-xq 00000000 08:02 1 /x",
		"1000-2000 r-xp zz 08:02 1 /x",
		"1000-2000 r-xp 00000000 0802 1 /x",
		"1000-2000 r-xp 00000000 08:02 /x",
		"1000-2000 r-xp 00000000 08:02 -1 /x",
		"-1000-2000 r-xp 00000000 08:02 1 /x",
		"1000-2000 r-xp 00000000 08:02 1x /x",
		"10000000000000000000-2000 r-xp 00000000 08:02 1 /x",
	};
	struct procmaps_entry e;
	char buf[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(buf, sizeof(buf), "%s", bad[i]);
		if (procmaps_parse_line(buf, &e) != -EINVAL)
			fail_msg("accepted: \"%s\"", bad[i]);
	}
}

UNIT_MAIN("procmaps", cmocka_unit_test(test_file_mapping),
	  cmocka_unit_test(test_spaces_and_deleted), cmocka_unit_test(test_special),
	  cmocka_unit_test(test_huge_values), cmocka_unit_test(test_malformed))
