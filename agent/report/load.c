// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "load.h"
#include "profile/pprof.h"
#include "profile/profile.h"
#include "report.h"

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

static bool is_profile_name(const char *name)
{
	return name[0] != '.' && (has_suffix(name, ".pb.gz") || has_suffix(name, ".pb") ||
				  has_suffix(name, ".pprof") || has_suffix(name, ".pprof.gz"));
}

/*
 * The start second and host of an agent's file name, "YYYYmmddTHHMMSSZ_<host>_w<seq>...".
 * Returns false for any other name.
 */
static bool parse_agent_name(const char *name, time_t *t, char *host, size_t size)
{
	struct tm tm = { 0 };
	const char *end;
	int i;

	for (i = 0; i < 15; i++)
		if (i == 8 ? name[i] != 'T' : !isdigit((unsigned char)name[i]))
			return false;
	if (name[15] != 'Z' || name[16] != '_' || !(end = strstr(name + 17, "_w")) ||
	    (size_t)(end - name - 17) >= size)
		return false;
	if (!strptime(name, "%Y%m%dT%H%M%SZ", &tm))
		return false;
	*t = timegm(&tm);
	snprintf(host, size, "%.*s", (int)(end - name - 17), name + 17);
	return true;
}

static bool host_selected(const struct report_select *sel, const char *host)
{
	size_t i;

	if (!sel->nr_hosts)
		return true;
	for (i = 0; i < sel->nr_hosts; i++)
		if (!fnmatch(sel->hosts[i], host, 0))
			return true;
	return false;
}

static bool time_selected(const struct report_select *sel, uint64_t t)
{
	return t >= sel->since_ns && (!sel->until_ns || t < sel->until_ns);
}

/* Read the whole file at dirfd/name into *buf. Returns 0 or -errno (-E2BIG past the cap). */
static int read_file(int dirfd, const char *name, uint8_t **buf, size_t *len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK), err = 0;
	size_t n = 0;
	struct stat st;
	ssize_t got;

	*buf = NULL;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -EISDIR;
		goto out;
	}
	if ((uint64_t)st.st_size > REPORT_MAX_FILE) {
		err = -E2BIG;
		goto out;
	}
	*buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!*buf) {
		err = -ENOMEM;
		goto out;
	}
	/* A file that grows while read is cut at its size when opened. */
	while (n < (size_t)st.st_size) {
		got = read(fd, *buf + n, (size_t)st.st_size - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			err = got < 0 ? -errno : 0;
			break;
		}
		n += (size_t)got;
	}
	*len = n;
out:
	if (err)
		zfree(buf);
	close(fd);
	return err;
}

/* Drop the last window added (outside the selection once read). */
static void drop_last(struct report *r)
{
	struct report_window *w = &r->windows[--r->nr_windows];

	r->nr_pairs = w->first_pair;
}

/* A file as read and decoded, off the main thread. */
struct decoded {
	bool done;
	bool unreadable; /* err is of reading the file, not of decoding it */
	int err;
	const char *why;
	struct profile *p;
};

static void decode_one(int dirfd, const char *name, struct decoded *out)
{
	uint8_t *buf = NULL;
	size_t len = 0;

	out->err = read_file(dirfd, name, &buf, &len);
	out->unreadable = out->err != 0;
	if (!out->err)
		out->err = pprof_decode(buf, len, &out->p, &out->why);
	free(buf);
}

/* Say and count a bad file, or add a good one (and merge it) when the selection keeps it.
 * Returns 0 or -ENOMEM. */
static int consume(struct report *r, struct decoded *d, const char *path,
		   const struct report_select *sel, uint32_t side, FILE *err,
		   struct report_load_stats *st)
{
	int ret = 0;

	st->files++;
	if (d->err == -ENOMEM)
		return -ENOMEM;
	if (d->unreadable) {
		fprintf(err, "ignis: %s: skipped: %s\n", path,
			d->err == -E2BIG ? "larger than 256 MiB" : strerror(-d->err));
		st->bad++;
		return 0;
	}
	if (d->err) {
		fprintf(err, "ignis: %s: skipped: %s%s%s\n", path,
			d->err == -EPROTONOSUPPORT ? "not a CPU or off-CPU profile" :
						     "not a valid pprof profile",
			d->why ? ": " : "", d->why ? d->why : "");
		if (d->err == -EPROTONOSUPPORT)
			st->foreign++;
		else
			st->bad++;
		return 0;
	}
	ret = report__add_profile(r, d->p, path, side);
	if (ret)
		goto out;
	if (!time_selected(sel, r->windows[r->nr_windows - 1].time_ns) ||
	    !host_selected(sel, r->windows[r->nr_windows - 1].host)) {
		drop_last(r);
		st->outside++;
		goto out;
	}
	ret = report__merge(r, d->p);
	st->windows++;
out:
	profile__free(d->p);
	d->p = NULL;
	return ret;
}

/*
 * Files are read and decoded (inflate, unpack, intern: nearly all of a report's time) by a
 * pool of threads, one per CPU up to LOAD_THREADS, while the main thread adds them to the
 * report in name order, so the report is the same whatever the threads did. At most
 * LOAD_AHEAD decoded files wait for the main thread, which bounds the memory.
 */
#define LOAD_THREADS 4
#define LOAD_AHEAD   8

struct pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int dirfd;
	char *const *names;
	struct decoded *out;
	size_t nr, next, consumed;
	bool stop;
};

static void *worker(void *arg)
{
	struct pool *pl = arg;
	size_t i;

	for (;;) {
		pthread_mutex_lock(&pl->lock);
		while (!pl->stop && pl->next < pl->nr && pl->next >= pl->consumed + LOAD_AHEAD)
			pthread_cond_wait(&pl->cond, &pl->lock);
		if (pl->stop || pl->next >= pl->nr) {
			pthread_mutex_unlock(&pl->lock);
			return NULL;
		}
		i = pl->next++;
		pthread_mutex_unlock(&pl->lock);
		decode_one(pl->dirfd, pl->names[i], &pl->out[i]);
		pthread_mutex_lock(&pl->lock);
		pl->out[i].done = true;
		pthread_cond_broadcast(&pl->cond);
		pthread_mutex_unlock(&pl->lock);
	}
}

/* The files names[] of dirfd (shown as prefix/name, or name without a prefix), in order. */
static int load_files(struct report *r, int dirfd, const char *prefix, char *const *names,
		      size_t nr, const struct report_select *sel, uint32_t side, FILE *err,
		      struct report_load_stats *st)
{
	struct pool pl = { .dirfd = dirfd, .names = names, .nr = nr };
	pthread_t threads[LOAD_THREADS];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t nr_threads = 0, i, want;
	char *path = NULL;
	int ret = 0;

	pl.out = calloc(nr ? nr : 1, sizeof(*pl.out));
	if (!pl.out)
		return -ENOMEM;
	want = cpus > LOAD_THREADS ? LOAD_THREADS : cpus > 1 ? (size_t)cpus : 1;
	pthread_mutex_init(&pl.lock, NULL);
	pthread_cond_init(&pl.cond, NULL);
	/* A thread that cannot start leaves its share to the others, or to this one. */
	while (nr > 1 && nr_threads < want &&
	       !pthread_create(&threads[nr_threads], NULL, worker, &pl))
		nr_threads++;
	for (i = 0; i < nr && !ret; i++) {
		if (nr_threads) {
			pthread_mutex_lock(&pl.lock);
			while (!pl.out[i].done)
				pthread_cond_wait(&pl.cond, &pl.lock);
			pthread_mutex_unlock(&pl.lock);
		} else {
			decode_one(dirfd, names[i], &pl.out[i]);
		}
		if (prefix && asprintf(&path, "%s/%s", prefix, names[i]) < 0) {
			path = NULL;
			ret = -ENOMEM;
			break;
		}
		ret = consume(r, &pl.out[i], prefix ? path : names[i], sel, side, err, st);
		zfree(&path);
		pthread_mutex_lock(&pl.lock);
		pl.consumed = i + 1;
		pthread_cond_broadcast(&pl.cond);
		pthread_mutex_unlock(&pl.lock);
	}
	pthread_mutex_lock(&pl.lock);
	pl.stop = true;
	pthread_cond_broadcast(&pl.cond);
	pthread_mutex_unlock(&pl.lock);
	while (nr_threads)
		pthread_join(threads[--nr_threads], NULL);
	for (i = 0; i < nr; i++) /* what an error left undone */
		profile__free(pl.out[i].p);
	pthread_cond_destroy(&pl.cond);
	pthread_mutex_destroy(&pl.lock);
	free(pl.out);
	return ret;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int load_dir(struct report *r, const char *dir, const struct report_select *sel,
		    uint32_t side, FILE *err, struct report_load_stats *st)
{
	char **names = NULL, host[256];
	size_t nr = 0, cap = 0, i;
	struct dirent *de;
	int fd, ret = 0;
	DIR *d;
	time_t t;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		ret = -errno;
		if (fd >= 0)
			close(fd);
		fprintf(err, "ignis: %s: %s\n", dir, strerror(-ret));
		return ret;
	}
	while ((de = readdir(d))) {
		if (!is_profile_name(de->d_name))
			continue;
		/* By name first: a day of windows is 8,640 files, most of them not asked for. */
		if (parse_agent_name(de->d_name, &t, host, sizeof(host))) {
			uint64_t start = (uint64_t)t * NSEC_PER_SEC;

			if ((sel->until_ns && start >= sel->until_ns) ||
			    start + NSEC_PER_SEC <= sel->since_ns || !host_selected(sel, host)) {
				st->files++;
				st->outside++;
				continue;
			}
		}
		ret = grow_array((void **)&names, &cap, nr + 1, sizeof(*names));
		if (ret || !(names[nr] = strdup(de->d_name))) {
			ret = -ENOMEM;
			break;
		}
		nr++;
	}
	if (nr)
		qsort(names, nr, sizeof(*names), cmp_name);
	if (!ret)
		ret = load_files(r, dirfd(d), dir, names, nr, sel, side, err, st);
	for (i = 0; i < nr; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return ret;
}

int report_load(struct report *r, char *const *paths, size_t nr_paths,
		const struct report_select *sel, uint32_t side, FILE *err,
		struct report_load_stats *st)
{
	struct stat sb;
	size_t i, files;
	int ret;

	for (i = 0; i < nr_paths; i += files ? files : 1) {
		/* A run of files is one batch for the pool; a folder is one of its own. */
		for (files = 0; i + files < nr_paths; files++) {
			if (stat(paths[i + files], &sb)) {
				ret = -errno;
				fprintf(err, "ignis: %s: %s\n", paths[i + files], strerror(-ret));
				return ret;
			}
			if (S_ISDIR(sb.st_mode))
				break;
		}
		if (files)
			ret = load_files(r, AT_FDCWD, NULL, paths + i, files, sel, side, err, st);
		else
			ret = load_dir(r, paths[i], sel, side, err, st);
		if (ret)
			return ret;
	}
	return 0;
}

int report_parse_duration(const char *s, uint64_t *out_ns)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = { { "ms", 1e6 },   { "s", 1e9 },	 { "m", 60e9 }, { "min", 60e9 },
		      { "h", 3600e9 }, { "d", 86400e9 }, { "", 1e9 } };
	char *end;
	double v;
	size_t i;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !(v >= 0) || v > 1e7 * 86400 || !isdigit((unsigned char)*s))
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(units); i++) {
		if (!strcmp(end, units[i].unit)) {
			*out_ns = (uint64_t)(v * units[i].ns);
			return 0;
		}
	}
	return -EINVAL;
}

/* "Z", "+hh:mm", "-hhmm", "+hh": the offset east of UTC in seconds. */
static int parse_zone(const char *s, long *offset)
{
	int hh = 0, mm = 0, n = 0;

	if (!strcmp(s, "Z") || !strcmp(s, "z")) {
		*offset = 0;
		return 0;
	}
	if ((s[0] != '+' && s[0] != '-') ||
	    (sscanf(s + 1, "%2d:%2d%n", &hh, &mm, &n) != 2 &&
	     sscanf(s + 1, "%2d%2d%n", &hh, &mm, &n) != 2 &&
	     sscanf(s + 1, "%2d%n", &hh, &n) != 1) ||
	    s[1 + n] || hh > 23 || mm > 59)
		return -EINVAL;
	*offset = (s[0] == '-' ? -1 : 1) * (hh * 3600L + mm * 60L);
	return 0;
}

int report_parse_time(const char *s, uint64_t now_ns, uint64_t *out_ns)
{
	struct tm tm = { 0 };
	const char *rest;
	uint64_t ago, frac_ns = 0;
	long offset = 0;
	bool zoned = false;
	char *end;
	time_t t;

	if (!strcmp(s, "now")) {
		*out_ns = now_ns;
		return 0;
	}
	if (!report_parse_duration(s[0] == '-' ? s + 1 : s, &ago)) {
		*out_ns = ago < now_ns ? now_ns - ago : 0;
		return 0;
	}
	if (s[0] == '@') {
		double v;

		errno = 0;
		v = strtod(s + 1, &end);
		if (errno || end == s + 1 || *end || !(v >= 0) || v > 4e9)
			return -EINVAL;
		*out_ns = (uint64_t)(v * 1e9);
		return 0;
	}
	rest = strptime(s, "%Y-%m-%d", &tm);
	if (!rest || tm.tm_year < 70)
		return -EINVAL;
	if (*rest == 'T' || *rest == ' ') {
		const char *r2 = strptime(rest + 1, "%H:%M", &tm);

		if (!r2)
			return -EINVAL;
		rest = r2;
		if (*rest == ':') {
			if (!(r2 = strptime(rest + 1, "%S", &tm)))
				return -EINVAL;
			rest = r2;
			if (*rest == '.' || *rest == ',') {
				double f = strtod(rest, &end);

				frac_ns = (uint64_t)(f * 1e9);
				rest = end;
			}
		}
	}
	if (*rest) {
		if (parse_zone(rest, &offset))
			return -EINVAL;
		zoned = true;
	}
	if (zoned) {
		t = timegm(&tm);
		t -= offset;
	} else {
		tm.tm_isdst = -1;
		t = mktime(&tm);
	}
	if (t < 0)
		return -EINVAL;
	*out_ns = (uint64_t)t * NSEC_PER_SEC + frac_ns;
	return 0;
}
