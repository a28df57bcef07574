// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "operate/log.h"
#include "sink_file.h"

#define SUFFIX ".pb.gz"

struct file_sink {
	struct file_sink_opts opts;
	char *dir;
	char host[64];
	int dir_fd;
};

struct sink_file {
	char *name;
	uint64_t size;
	time_t mtime;
};

/* mkdir -p, one level at a time. */
static int make_dirs(const char *path)
{
	char *copy = strdup(path), *p;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	for (p = copy + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(copy, 0750) && errno != EEXIST) {
			err = -errno;
			break;
		}
		*p = '/';
	}
	if (!err && mkdir(copy, 0750) && errno != EEXIST)
		err = -errno;
	free(copy);
	return err;
}

struct file_sink *file_sink__new(const struct file_sink_opts *opts)
{
	struct file_sink *fs;
	const char *h;
	size_t i;
	int err;

	if (!OPTS_VALID(opts) || !opts->dir) {
		errno = EINVAL;
		return NULL;
	}
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return NULL;
	h = opts->hostname && *opts->hostname ? opts->hostname : "localhost";
	fs->opts = *opts;
	fs->dir_fd = -1;
	fs->dir = strdup(opts->dir);
	if (!fs->dir) {
		err = -ENOMEM;
		goto err_out;
	}
	/* Host names are [A-Za-z0-9.-]; anything else must not reach a file name. */
	for (i = 0; h[i] && i < sizeof(fs->host) - 1; i++) {
		char c = h[i];

		fs->host[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
					      (c >= '0' && c <= '9') || c == '-' || c == '.' ?
				      c :
				      '_';
	}
	fs->host[i] = '\0';
	err = make_dirs(fs->dir);
	if (err)
		goto err_out;
	fs->dir_fd = open(fs->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fs->dir_fd < 0) {
		err = -errno;
		goto err_out;
	}
	if (faccessat(fs->dir_fd, ".", W_OK, AT_EACCESS)) {
		err = -errno;
		goto err_out;
	}
	return fs;
err_out:
	file_sink__free(fs);
	errno = -err;
	return NULL;
}

void file_sink__free(struct file_sink *fs)
{
	if (!fs)
		return;
	if (fs->dir_fd >= 0)
		close(fs->dir_fd);
	free(fs->dir);
	free(fs);
}

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int file_sink__write(struct file_sink *fs, uint64_t time_ns, uint64_t seq, const void *data,
		     size_t len, char *path, size_t size)
{
	char name[160], tmp[180], stamp[32];
	time_t t = (time_t)(time_ns / NSEC_PER_SEC);
	struct tm tm;
	int fd, err;

	gmtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(name, sizeof(name), "%s_%s_w%06llu" SUFFIX, stamp, fs->host,
		 (unsigned long long)seq);
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);

	fd = openat(fs->dir_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd < 0)
		return -errno;
	err = write_all(fd, data, len);
	if (close(fd) && !err)
		err = -errno;
	if (!err && renameat(fs->dir_fd, tmp, fs->dir_fd, name))
		err = -errno;
	if (err) {
		unlinkat(fs->dir_fd, tmp, 0);
		return err;
	}
	snprintf(path, size, "%s/%s", fs->dir, name);
	return 0;
}

/* Ours: "YYYYmmddTHHMMSSZ_<host>_w<digits>.pb.gz" with this host's name, nothing else: a
 * folder shared by several hosts keeps each host's caps to its own files. */
static bool is_ours(const struct file_sink *fs, const char *name)
{
	size_t len = strlen(name), host = strlen(fs->host), i;
	const char *p;

	if (len < 16 + 1 + host + 2 + sizeof(SUFFIX) - 1 ||
	    strcmp(name + len - (sizeof(SUFFIX) - 1), SUFFIX))
		return false;
	for (i = 0; i < 15; i++) {
		if (i == 8 ? name[i] != 'T' : (name[i] < '0' || name[i] > '9'))
			return false;
	}
	if (name[15] != 'Z' || name[16] != '_' || strncmp(name + 17, fs->host, host) ||
	    strncmp(name + 17 + host, "_w", 2))
		return false;
	for (p = name + 17 + host + 2; p < name + len - (sizeof(SUFFIX) - 1); p++)
		if (*p < '0' || *p > '9')
			return false;
	return p > name + 17 + host + 2;
}

static int cmp_file(const void *a, const void *b)
{
	return strcmp(((const struct sink_file *)a)->name, ((const struct sink_file *)b)->name);
}

int file_sink__prune(struct file_sink *fs)
{
	struct sink_file *files = NULL;
	size_t nr = 0, cap = 0, i;
	uint64_t total = 0;
	time_t now = time(NULL);
	struct dirent *de;
	struct stat st;
	int removed = 0, fd, err = 0;
	DIR *d;

	fd = dup(fs->dir_fd);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		err = -errno;
		close(fd);
		return err;
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		if (!is_ours(fs, de->d_name) ||
		    fstatat(fs->dir_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		err = grow_array((void **)&files, &cap, nr + 1, sizeof(*files));
		if (err)
			break;
		files[nr].name = strdup(de->d_name);
		if (!files[nr].name) {
			err = -ENOMEM;
			break;
		}
		files[nr].size = (uint64_t)st.st_size;
		files[nr].mtime = st.st_mtime;
		total += files[nr].size;
		nr++;
	}
	closedir(d);
	if (!err) {
		/* Oldest first: the names sort by time. */
		if (nr > 1)
			qsort(files, nr, sizeof(*files), cmp_file);
		for (i = 0; i < nr; i++) {
			bool too_big = total > fs->opts.max_bytes;
			bool too_old = now - files[i].mtime > (time_t)fs->opts.max_age_sec;

			/* Never remove the newest file: it is the one just written. */
			if ((!too_big && !too_old) || i + 1 == nr)
				break;
			if (unlinkat(fs->dir_fd, files[i].name, 0) && errno != ENOENT) {
				pr_warn_ratelimited(3, 100, "%s/%s: cannot remove: %s", fs->dir,
						    files[i].name, strerror(errno));
				continue;
			}
			total -= files[i].size;
			removed++;
		}
	}
	for (i = 0; i < nr; i++)
		free(files[i].name);
	free(files);
	return err ? err : removed;
}
