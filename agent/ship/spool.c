// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "operate/log.h"
#include "spool.h"
#include "uploader.h"

#define MAGIC	      "IGNSPOOL"
#define VERSION	      1
#define SUFFIX	      ".spool"
#define TMP_PREFIX    ".tmp-"
#define MAX_FILE      (64U << 20) /* no profile of ours comes near: a bigger file is bad */
#define MAX_LABEL_LEN 4096

struct spool {
	char *dir;
	int dirfd;
	int lockfd;
	uint64_t max_bytes;
	uint64_t bytes;
};

void upload_free(struct upload *u)
{
	uint32_t i;

	if (!u)
		return;
	for (i = 0; i < u->nr_labels; i++) {
		free(u->labels[i].name);
		free(u->labels[i].value);
	}
	free(u->labels);
	free(u->key);
	free(u->data);
	free(u);
}

struct spool *spool__open(const char *dir, uint64_t max_bytes)
{
	struct spool *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return NULL;
	s->dirfd = s->lockfd = -1;
	s->max_bytes = max_bytes;
	s->dir = strdup(dir);
	if (!s->dir) {
		err = -ENOMEM;
		goto err_out;
	}
	if (mkdir(dir, 0700) && errno != EEXIST) {
		err = -errno;
		goto err_out;
	}
	s->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (s->dirfd < 0) {
		err = -errno;
		goto err_out;
	}
	s->lockfd = openat(s->dirfd, ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (s->lockfd < 0) {
		err = -errno;
		goto err_out;
	}
	if (flock(s->lockfd, LOCK_EX | LOCK_NB)) {
		err = errno == EWOULDBLOCK ? -EBUSY : -errno;
		goto err_out;
	}
	return s;
err_out:
	spool__free(s);
	errno = -err;
	return NULL;
}

void spool__free(struct spool *s)
{
	if (!s)
		return;
	zclose(&s->lockfd); /* releases the lock */
	zclose(&s->dirfd);
	free(s->dir);
	free(s);
}

uint64_t spool__bytes(const struct spool *s)
{
	return s->bytes;
}

/* ---- Encoding ---------------------------------------------------------------------------- */

struct buf {
	uint8_t *p;
	size_t len, cap;
	bool failed;
};

static void put(struct buf *b, const void *data, size_t len)
{
	if (b->failed || grow_array((void **)&b->p, &b->cap, b->len + len, 1)) {
		b->failed = true;
		return;
	}
	memcpy(b->p + b->len, data, len);
	b->len += len;
}

static void put_u16(struct buf *b, uint16_t v)
{
	put(b, &v, sizeof(v));
}

static void put_u32(struct buf *b, uint32_t v)
{
	put(b, &v, sizeof(v));
}

static void put_u64(struct buf *b, uint64_t v)
{
	put(b, &v, sizeof(v));
}

static void put_str16(struct buf *b, const char *s)
{
	size_t n = strlen(s);

	if (n > MAX_LABEL_LEN)
		n = MAX_LABEL_LEN;
	put_u16(b, (uint16_t)n);
	put(b, s, n);
}

int spool__write(struct spool *s, struct upload *u, uint64_t slack)
{
	struct buf b = { 0 };
	char name[sizeof(u->spool_name)], tmp[sizeof(name) + 8];
	uint32_t i;
	ssize_t n;
	int fd = -1, err = 0;

	put(&b, MAGIC, 8);
	put_u32(&b, VERSION);
	put_u64(&b, u->seq);
	put_u64(&b, u->time_ns);
	put_u64(&b, u->duration_ns);
	put_u32(&b, (uint32_t)strlen(u->key));
	put(&b, u->key, strlen(u->key));
	put_u32(&b, u->nr_labels);
	for (i = 0; i < u->nr_labels; i++) {
		put_str16(&b, u->labels[i].name);
		put_str16(&b, u->labels[i].value);
	}
	put_u32(&b, (uint32_t)u->len);
	put(&b, u->data, u->len);
	if (b.failed) {
		err = -ENOMEM;
		goto out;
	}
	put_u32(&b, (uint32_t)crc32(0, b.p, (uInt)b.len));
	if (b.failed) {
		err = -ENOMEM;
		goto out;
	}
	if (s->bytes + b.len > s->max_bytes + slack) {
		err = -ENOSPC;
		goto out;
	}
	snprintf(name, sizeof(name), "%016" PRIx64 "-%016" PRIx64 SUFFIX, u->time_ns, u->seq);
	snprintf(tmp, sizeof(tmp), TMP_PREFIX "%s", name);
	fd = openat(s->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	n = write(fd, b.p, b.len);
	if (n != (ssize_t)b.len) {
		err = n < 0 ? -errno : -ENOSPC;
		goto out;
	}
	if (close(fd)) {
		fd = -1;
		err = -errno;
		goto out;
	}
	fd = -1;
	/* No fsync: the spool guards against outages and restarts, not power loss, and a
	 * torn file is caught by its CRC. */
	if (renameat(s->dirfd, tmp, s->dirfd, name)) {
		err = -errno;
		goto out;
	}
	memcpy(u->spool_name, name, sizeof(name));
	u->spool_bytes = b.len;
	s->bytes += b.len;
out:
	if (fd >= 0)
		close(fd);
	if (err && err != -ENOSPC && err != -ENOMEM)
		unlinkat(s->dirfd, tmp, 0);
	free(b.p);
	return err;
}

void spool__remove(struct spool *s, struct upload *u)
{
	if (!u->spool_name[0])
		return;
	if (unlinkat(s->dirfd, u->spool_name, 0) && errno != ENOENT)
		pr_warn_ratelimited(3, 60, "spool: cannot remove %s/%s: %s", s->dir, u->spool_name,
				    strerror(errno));
	s->bytes -= s->bytes >= u->spool_bytes ? u->spool_bytes : s->bytes;
	u->spool_name[0] = '\0';
	u->spool_bytes = 0;
}

/* ---- Decoding ---------------------------------------------------------------------------- */

struct reader {
	const uint8_t *p;
	size_t len, off;
	bool bad;
};

static const void *take(struct reader *r, size_t n)
{
	const void *at = r->p + r->off;

	if (r->bad || n > r->len - r->off) {
		r->bad = true;
		return NULL;
	}
	r->off += n;
	return at;
}

#define GET(r, type)                                       \
	({                                                 \
		type v_ = 0;                               \
		const void *at_ = take((r), sizeof(type)); \
		if (at_)                                   \
			memcpy(&v_, at_, sizeof(type));    \
		v_;                                        \
	})

static char *get_str(struct reader *r, size_t n)
{
	const char *at = take(r, n);
	char *s;

	if (!at)
		return NULL;
	if (memchr(at, '\0', n)) {
		r->bad = true;
		return NULL;
	}
	s = strndup(at, n);
	if (!s)
		r->bad = true;
	return s;
}

static int read_file(struct spool *s, const char *name, uint8_t **out, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	ssize_t n;
	int fd = openat(s->dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > MAX_FILE) {
		close(fd);
		return -EBADMSG;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	n = pread(fd, buf, (size_t)st.st_size, 0);
	close(fd);
	if (n != st.st_size) {
		free(buf);
		return n < 0 ? -errno : -EBADMSG;
	}
	*out = buf;
	*len = (size_t)n;
	return 0;
}

/* Parse a whole file into u (data included when want_data). */
static int parse(const uint8_t *p, size_t len, struct upload *u, bool want_data)
{
	struct reader r = { .p = p, .len = len };
	uint32_t crc, i, n, data_len;
	const void *data;

	if (len < 12 || memcmp(p, MAGIC, 8))
		return -EBADMSG;
	memcpy(&crc, p + len - 4, 4);
	if (crc != (uint32_t)crc32(0, p, (uInt)(len - 4)))
		return -EBADMSG;
	r.len = len - 4;
	take(&r, 8);
	if (GET(&r, uint32_t) != VERSION)
		return -EBADMSG;
	u->seq = GET(&r, uint64_t);
	u->time_ns = GET(&r, uint64_t);
	u->duration_ns = GET(&r, uint64_t);
	n = GET(&r, uint32_t);
	u->key = n <= MAX_LABEL_LEN * 64 ? get_str(&r, n) : NULL;
	n = GET(&r, uint32_t);
	if (r.bad || !u->key || n > TARGET_MAX_LABELS)
		return -EBADMSG;
	u->labels = calloc(n + 1, sizeof(*u->labels));
	if (!u->labels)
		return -ENOMEM;
	for (i = 0; i < n && !r.bad; i++) {
		u->labels[i].name = get_str(&r, GET(&r, uint16_t));
		u->labels[i].value = get_str(&r, GET(&r, uint16_t));
		u->nr_labels++;
	}
	data_len = GET(&r, uint32_t);
	data = take(&r, data_len);
	if (r.bad || r.off != r.len || !u->nr_labels)
		return -EBADMSG;
	u->len = data_len;
	if (want_data) {
		u->data = malloc(data_len + 1);
		if (!u->data)
			return -ENOMEM;
		memcpy(u->data, data, data_len);
	}
	return 0;
}

int spool__read(struct spool *s, const struct upload *u, uint8_t **data, size_t *len)
{
	struct upload *copy = calloc(1, sizeof(*copy));
	uint8_t *file = NULL;
	size_t file_len = 0;
	int err;

	if (!copy)
		return -ENOMEM;
	err = read_file(s, u->spool_name, &file, &file_len);
	if (!err)
		err = parse(file, file_len, copy, true);
	/* Seqs are renumbered at load; the window start must match. */
	if (!err && copy->time_ns != u->time_ns)
		err = -EBADMSG;
	if (!err) {
		*data = copy->data;
		*len = copy->len;
		copy->data = NULL;
	}
	free(file);
	upload_free(copy);
	return err;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int spool__load(struct spool *s, spool_entry_fn fn, void *ctx)
{
	DIR *d;
	struct dirent *e;
	char **names = NULL;
	size_t nr = 0, cap = 0, i;
	int dfd = dup(s->dirfd), err = 0, damaged = 0;

	if (dfd < 0)
		return -errno;
	d = fdopendir(dfd);
	if (!d) {
		err = -errno;
		close(dfd);
		return err;
	}
	rewinddir(d);
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);

		if (!strncmp(e->d_name, TMP_PREFIX, strlen(TMP_PREFIX))) {
			unlinkat(s->dirfd, e->d_name, 0); /* an interrupted write */
			continue;
		}
		if (n <= strlen(SUFFIX) || strcmp(e->d_name + n - strlen(SUFFIX), SUFFIX) ||
		    n >= sizeof(((struct upload *)0)->spool_name))
			continue;
		err = grow_array((void **)&names, &cap, nr + 1, sizeof(*names));
		if (err || !(names[nr] = strdup(e->d_name))) {
			err = -ENOMEM;
			break;
		}
		nr++;
	}
	closedir(d);
	if (nr)
		qsort(names, nr, sizeof(*names), cmp_names);
	for (i = 0; i < nr && !err; i++) {
		struct upload *u = calloc(1, sizeof(*u));
		uint8_t *file = NULL;
		size_t len = 0;
		int ret;

		if (!u) {
			err = -ENOMEM;
			break;
		}
		ret = read_file(s, names[i], &file, &len);
		if (!ret)
			ret = parse(file, len, u, false);
		free(file);
		if (ret == -ENOMEM) {
			upload_free(u);
			err = ret;
			break;
		}
		if (ret) {
			pr_warn("spool: %s/%s is damaged (%s): deleted", s->dir, names[i],
				strerror(-ret));
			unlinkat(s->dirfd, names[i], 0);
			upload_free(u);
			damaged++;
			continue;
		}
		snprintf(u->spool_name, sizeof(u->spool_name), "%s", names[i]);
		u->spool_bytes = len;
		s->bytes += len;
		err = fn(ctx, u);
	}
	for (i = 0; i < nr; i++)
		free(names[i]);
	free(names);
	return err ? err : damaged;
}
