// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit.h"

#include "../../agent/ship/sink_file.h"

static int count_files(const char *dir, const char *suffix)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name), s = strlen(suffix);

		if (de->d_name[0] != '.' && l >= s && !strcmp(de->d_name + l - s, suffix))
			n++;
	}
	closedir(d);
	return n;
}

static void test_write_and_prune(void **state)
{
	char dir[] = "/tmp/ignis-sink-XXXXXX", sub[300], path[512], other[512];
	struct file_sink_opts o = { .sz = sizeof(o), .hostname = "web-1/../evil",
				    .max_bytes = 3000, .max_age_sec = 3600 };
	static char data[1000];
	struct file_sink *fs;
	struct timespec old[2] = { { .tv_sec = 1000 }, { .tv_sec = 1000 } };
	uint64_t t = 1764441290ULL * 1000000000ULL;
	int i, fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/a/b", dir);
	o.dir = sub;
	fs = file_sink__new(&o);	/* creates missing folders */
	assert_non_null(fs);

	/* Not ours: a stranger, another host's profile, a name that only looks like ours. */
	snprintf(other, sizeof(other), "%s/notes.pb.gz", sub);
	fd = open(other, O_WRONLY | O_CREAT, 0644);
	close(fd);
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", sub,
			 i ? "20200101T000000Z_web-2_w000001.pb.gz" :
			     "20200101T000000Z_web-1_.._evil_notes.pb.gz");
		fd = open(path, O_WRONLY | O_CREAT, 0644);
		assert_int_equal(futimens(fd, old), 0);
		close(fd);
	}

	for (i = 0; i < 5; i++) {
		assert_int_equal(file_sink__write(fs, t + (uint64_t)i * 10000000000ULL,
						  (uint64_t)i, data, sizeof(data), path,
						  sizeof(path)),
				 0);
		assert_true(file_sink__prune(fs) >= 0);
	}
	/* Host names cannot smuggle a path into the name; sortable time first. */
	assert_string_equal(strrchr(path, '/') + 1, "20251129T183530Z_web-1_.._evil_w000004.pb.gz");
	/* 3000 bytes hold three profiles; the strangers are left alone. */
	assert_int_equal(count_files(sub, ".pb.gz"), 6);
	assert_int_equal(access(other, F_OK), 0);
	snprintf(path, sizeof(path), "%s/20251129T183450Z_web-1_.._evil_w000000.pb.gz", sub);
	assert_int_equal(access(path, F_OK), -1);

	/* Age: make the oldest two ancient. */
	snprintf(path, sizeof(path), "%s/20251129T183510Z_web-1_.._evil_w000002.pb.gz", sub);
	assert_int_equal(utimensat(AT_FDCWD, path, old, 0), 0);
	snprintf(path, sizeof(path), "%s/20251129T183520Z_web-1_.._evil_w000003.pb.gz", sub);
	assert_int_equal(utimensat(AT_FDCWD, path, old, 0), 0);
	assert_int_equal(file_sink__prune(fs), 2);
	assert_int_equal(count_files(sub, ".pb.gz"), 4);
	/* No temporary files left behind. */
	assert_int_equal(count_files(sub, ".tmp"), 0);
	file_sink__free(fs);

	/* A folder that cannot be created. */
	o.dir = "/proc/ignis-cannot-exist";
	assert_null(file_sink__new(&o));
	/* Options it cannot take: no folder, no sz, none at all. */
	o.dir = NULL;
	errno = 0;
	assert_null(file_sink__new(&o));
	assert_int_equal(errno, EINVAL);
	o.dir = sub;
	o.sz = 0;
	errno = 0;
	assert_null(file_sink__new(&o));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(file_sink__new(NULL));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(count_files(sub, ".pb.gz"), 4); /* the refusals touched nothing */
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	assert_int_equal(system(path), 0);
}

UNIT_MAIN("sink", cmocka_unit_test(test_write_and_prune))
