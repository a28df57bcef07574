/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which window profiles a report reads: files, or folders of them (the agent's local output
 * folder), selected by time and host. Every file is untrusted input: a truncated, corrupt or
 * foreign file is reported on the error stream and skipped, never fatal.
 */
#ifndef IGNIS_REPORT_LOAD_H
#define IGNIS_REPORT_LOAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/ignis.h"

struct report;

/* Largest profile file read (bytes, as stored). */
#define REPORT_MAX_FILE (256u << 20)

struct report_select {
	uint64_t since_ns;  /* windows starting at or after, Unix ns; 0: no bound */
	uint64_t until_ns;  /* windows starting before; 0: no bound */
	char *const *hosts; /* fnmatch(3) globs on the window's host; borrowed */
	size_t nr_hosts;
};

struct report_load_stats {
	size_t files;	/* profile files seen */
	size_t windows; /* added to the report */
	size_t outside; /* left out by time or host */
	size_t bad;	/* unreadable, truncated or corrupt */
	size_t foreign; /* valid pprof, but no CPU or off-CPU values */
};

/*
 * Read the profiles of paths (files, or folders whose *.pb.gz, *.pb, *.pprof files are read;
 * names starting with '.' are not) into r on side, in name order. Files named as the agent
 * names them (YYYYmmddTHHMMSSZ_<host>_w<seq>.pb.gz) are passed over by name when outside
 * sel, without being read. Adds to *st. Returns 0, or -errno when a path cannot be read at
 * all (-ENOENT, -EACCES; said on err) or the report is out of memory.
 */
int report_load(struct report *r, char *const *paths, size_t nr_paths,
		const struct report_select *sel, uint32_t side, FILE *err,
		struct report_load_stats *st) __must_check;

/*
 * A point in time, into *out_ns (Unix ns): "now"; a duration ago ("15m", "-2h", "1d", "90s",
 * "500ms"); "@UNIX_SECONDS"; or an ISO 8601 date and time, "YYYY-mm-dd[THH:MM[:SS[.frac]]]"
 * (a space may stand for the T) with "Z" or "+hh:mm"/"-hh:mm", local time without one.
 * Returns 0 or -EINVAL.
 */
int report_parse_time(const char *s, uint64_t now_ns, uint64_t *out_ns) __must_check;

/* A duration ("15m", "2h", "1d", "90s", "500ms"; a bare number is seconds) into *out_ns.
 * Returns 0 or -EINVAL. */
int report_parse_duration(const char *s, uint64_t *out_ns) __must_check;

#endif /* IGNIS_REPORT_LOAD_H */
