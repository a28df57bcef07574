/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The server sink: each window's profile, split into one pprof per target (targets.c,
 * split.c), queued for Grafana Pyroscope (uploader.c, pyroscope.c, http.c). It checks the
 * settings that only make sense together (credentials, TLS files) once at start, so that a
 * mistake is a config error, not a stream of failed uploads.
 */
#ifndef IGNIS_SINK_SERVER_H
#define IGNIS_SINK_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "ignis.h"

struct agent_config;
struct metrics_snapshot;
struct profile;
struct targets;

/* What one window sent. */
struct server_window_stats {
	uint64_t profiles; /* queued, one or more per target */
	uint64_t targets;
	uint64_t bytes; /* gzip'd pprof bytes queued */
	uint64_t split; /* targets split by process */
	uint64_t folded;
};

struct server_sink;

/*
 * Set up from cfg (server_url set). On a settings error prints what to fix to stderr and
 * returns NULL with errno EINVAL; other failures are logged (errno set).
 */
struct server_sink *server_sink__new(const struct agent_config *cfg, const char *hostname);

/* Flush for up to flush_ns, keep what is left in the spool, free. NULL is fine. */
void server_sink__free(struct server_sink *s, uint64_t flush_ns);

/* The targets the window builder resolves samples into, per window (targets.h). Borrowed. */
struct targets *server_sink__targets(struct server_sink *s);

/*
 * Split p of window seq (whose sample groups are that window's targets) and queue its parts,
 * for the window that started at p->opts.time_ns (Unix ns) and lasted p->opts.duration_ns.
 * Never blocks on the network. Returns 0 or -errno (the window's server profiles are then
 * lost, counted by the caller).
 */
int server_sink__send(struct server_sink *s, const struct profile *p, uint64_t seq,
		      struct server_window_stats *stats) __must_check;

/* Copy the delivery counters into the metrics snapshot. */
void server_sink__account(struct server_sink *s, struct metrics_snapshot *snap);

#endif /* IGNIS_SINK_SERVER_H */
