// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit.h"

#include "../../agent/collect/procfs.h"

static void test_stat_start(void **state)
{
	uint64_t t;

	(void)state;
	assert_int_equal(procfs_parse_stat_start("1234 (bash) S 1 1234 1234 34816 1234 4194560 "
						 "2069 9768 0 0 3 1 12 7 20 0 1 0 987654 "
						 "9519104 1316\n",
						 &t),
			 0);
	assert_int_equal(t, 987654);
	/* A comm with spaces and parentheses, as a hostile process may choose. */
	assert_int_equal(procfs_parse_stat_start("77 (a) b (c) ) S 1 1 1 0 -1 4194560 0 0 0 0 0 0 "
						 "0 0 20 0 1 0 42 0 0",
						 &t),
			 0);
	assert_int_equal(t, 42);
	assert_int_equal(procfs_parse_stat_start("1 (x) S 1 2 3", &t), -EINVAL);
	assert_int_equal(procfs_parse_stat_start("no parenthesis", &t), -EINVAL);
	assert_int_equal(procfs_ns_to_ticks(1234567890123ULL), 123456);
}

static void test_notes_build_id(void **state)
{
	/* Two notes: an unrelated one, then NT_GNU_BUILD_ID with a 4-byte id. */
	static const uint8_t notes[] = {
		4, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 'X', 'e', 'n', 0, 9, 9, 9, 9,
		4, 0, 0, 0, 4, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0, 0xde, 0xad, 0xbe, 0xef,
	};
	char hex[64];

	(void)state;
	assert_int_equal(notes_build_id(notes, sizeof(notes), hex, sizeof(hex)), 0);
	assert_string_equal(hex, "deadbeef");
	assert_int_equal(notes_build_id(notes, 20, hex, sizeof(hex)), -ENOENT);
	assert_int_equal(notes_build_id(notes, sizeof(notes) - 2, hex, sizeof(hex)), -EINVAL);
	assert_int_equal(notes_build_id(notes, sizeof(notes), hex, 4), -E2BIG);
}

/* A symlink inside a container's root that points to an absolute path resolves inside that
 * root; ".." cannot climb out; /proc magic links are refused. */
static void test_open_in_root(void **state)
{
	char root[] = "/tmp/ignis-root-XXXXXX", path[512], buf[32];
	int root_fd, fd;
	ssize_t n;

	(void)state;
	assert_non_null(mkdtemp(root));
	snprintf(path, sizeof(path), "%s/etc", root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/etc/hostname", root);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	assert_int_equal(write(fd, "inside\n", 7), 7);
	close(fd);
	snprintf(path, sizeof(path), "%s/link", root);
	assert_int_equal(symlink("/etc", path), 0);
	snprintf(path, sizeof(path), "%s/self", root);
	assert_int_equal(symlink("/proc/self/root/etc", path), 0);

	root_fd = open(root, O_PATH | O_DIRECTORY);
	assert_true(root_fd >= 0);
	fd = procfs_open_in_root(root_fd, "/link/hostname");
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, "inside\n");
	close(fd);

	fd = procfs_open_in_root(root_fd, "/../../../../etc/hostname");
	assert_true(fd >= 0);	/* ".." stops at the root: the container's own file */
	n = read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	assert_string_equal(buf, "inside\n");
	close(fd);

	/* A link through /proc would leave the root: the host's /proc is not in it. */
	assert_true(procfs_open_in_root(root_fd, "/self/hostname") < 0);
	assert_int_equal(procfs_open_in_root(root_fd, "/missing"), -ENOENT);
	close(root_fd);

	snprintf(path, sizeof(path), "rm -rf %s", root);
	assert_int_equal(system(path), 0);
}

static void test_read_file_cap(void **state)
{
	char *text;
	long n;

	(void)state;
	n = procfs_read_file(AT_FDCWD, "/proc/self/stat", 4096, &text);
	assert_true(n > 0);
	assert_int_equal(strlen(text), (size_t)n);
	free(text);
	assert_int_equal(procfs_read_file(AT_FDCWD, "/proc/self/maps", 16, &text), -E2BIG);
	assert_null(text);
	assert_int_equal(procfs_read_file(AT_FDCWD, "/nonexistent", 16, &text), -ESRCH);
}

UNIT_MAIN("procfs", cmocka_unit_test(test_stat_start),
	  cmocka_unit_test(test_notes_build_id), cmocka_unit_test(test_open_in_root),
	  cmocka_unit_test(test_read_file_cap))
