/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The local sink: one gzip'd pprof per window in a folder, named so that names sort by time
 * and say host and window: 20261129T181450Z_HOST_w000042.pb.gz. Files are written under a
 * temporary name and renamed, so a reader never sees half a profile. After each write the
 * oldest profiles go until the folder is within --output-max-bytes and --output-max-age;
 * other files in the folder are never touched.
 */
#ifndef IGNIS_SINK_FILE_H
#define IGNIS_SINK_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "common/ignis.h"

/* libbpf's opts habit: set sz = sizeof(struct file_sink_opts) (OPTS_VALID, ignis.h). */
struct file_sink_opts {
	size_t sz;
	const char *dir;      /* copied */
	const char *hostname; /* sanitized into the names; NULL: "localhost" */
	uint64_t max_bytes;   /* total size of our files, bytes */
	uint64_t max_age_sec; /* age of our oldest file */
};

struct file_sink;

/* Create the folder if needed (mode 0750) and check it is writable. NULL + errno on failure
 * (EINVAL: no sz or no dir); the caller logs. */
struct file_sink *file_sink__new(const struct file_sink_opts *opts);
void file_sink__free(struct file_sink *fs);

/*
 * Write one profile of the window starting at time_ns (Unix ns) with sequence number seq.
 * On success copies the file's path into path (size bytes) and returns 0; -errno otherwise.
 */
int file_sink__write(struct file_sink *fs, uint64_t time_ns, uint64_t seq, const void *data,
		     size_t len, char *path, size_t size) __must_check;

/* Apply the size and age caps. Returns the number of files removed or -errno. */
int file_sink__prune(struct file_sink *fs);

#endif /* IGNIS_SINK_FILE_H */
