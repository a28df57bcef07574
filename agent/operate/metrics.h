/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Self-metrics: a Prometheus text endpoint (/metrics) and a health check (/healthz) served by
 * libmicrohttpd from its own thread. The main loop publishes a snapshot of its counters
 * after every window; requests read the last snapshot under a lock and never touch the
 * agent's own structures. The only file that sees libmicrohttpd.
 *
 * Exposition format: https://prometheus.io/docs/instrumenting/exposition_formats/ (text
 * 0.0.4); names follow Prometheus conventions (ignis_ prefix, _total counters, base units).
 */
#ifndef IGNIS_METRICS_H
#define IGNIS_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ignis.h"
#include "stats.h"

/* Drain-duration histogram bucket upper bounds, seconds. */
#define METRICS_DRAIN_BUCKETS 11

/*
 * What /metrics shows: the counter table's values (stats.h; totals since start, gauges as
 * last seen) and the figures that are not whole numbers.
 */
struct metrics_snapshot {
	struct counters c;
	double sampling_rate_hz;       /* last window, per CPU */
	double upload_backoff_seconds; /* the pause before the next upload attempt */
	double unwind_build_seconds;   /* building unwind tables, total */
	uint64_t drain_buckets[METRICS_DRAIN_BUCKETS]; /* cumulative counts per bucket */
	uint64_t drain_count;
	double drain_seconds_sum;
	uint64_t last_drain_ns; /* CLOCK_MONOTONIC of the last finished drain */
	uint64_t interval_ns;	/* the window length */
};

struct metrics;

/*
 * Serve /metrics and /healthz on address ("HOST:PORT", "[IPV6]:PORT", ":PORT"). Returns NULL
 * with errno set (EADDRINUSE, EACCES, EINVAL for an address that does not resolve) after
 * logging why.
 */
struct metrics *metrics__new(const char *address, const char *version);
void metrics__free(struct metrics *m);

/* Publish the main loop's figures (copied). */
void metrics__publish(struct metrics *m, const struct metrics_snapshot *snap);

/* Record one drain's duration into the snapshot's histogram, seconds. */
void metrics_observe_drain(struct metrics_snapshot *snap, double seconds);

/*
 * Healthy: BPF attached on at least one CPU (CNT_CPUS), no event lost its link, and the last drain
 * finished within three window lengths plus 10 s. Returns true or false and says why in
 * reason (size bytes).
 */
bool metrics_healthy(const struct metrics_snapshot *snap, uint64_t now_ns, char *reason,
		     size_t size);

/*
 * Write the Prometheus text of snap, plus the process's own CPU, memory and descriptors, into
 * a malloc'd buffer (*out, the caller frees). Returns its length or -ENOMEM.
 */
long metrics_format(const struct metrics_snapshot *snap, const char *version,
		    char **out) __must_check;

#endif /* IGNIS_METRICS_H */
