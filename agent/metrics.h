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

#include "ignis.h"

/* Drain-duration histogram bucket upper bounds, seconds. */
#define METRICS_DRAIN_BUCKETS 11

/* Upload error classes counted by the sinks (Prometheus label code="..."). */
#define METRICS_UPLOAD_CODES 8

/* Why profiles were given up (index into profiles_dropped). */
enum upload_drop {
	DROP_QUEUE_FULL = 0, /* memory queue and spool full: the oldest went */
	DROP_TOO_OLD,	     /* older than the server's ingestion window */
	DROP_REJECTED,	     /* the server refused it (4xx other than 408/429) */
	DROP_SHUTDOWN,	     /* still queued at exit, with no spool to keep it */
	DROP_SPOOL_ERROR,    /* its spool file could not be written or read back */
	METRICS_DROP_REASONS,
};

/* "queue_full", "too_old", ... for logs and metrics. */
const char *upload_drop_name(enum upload_drop reason);

/* Counters are totals since start; gauges are the last window's values. */
struct metrics_snapshot {
	/* Sampling (BPF counters). */
	uint64_t samples;
	uint64_t samples_idle;
	uint64_t samples_filtered;
	uint64_t samples_profiled;
	uint64_t dropped_stacks_full;
	uint64_t dropped_counts_full;
	uint64_t dropped_no_generation;
	uint64_t dropped_profile_cap;
	uint64_t user_walk_errors;
	uint64_t kernel_walk_errors;
	uint64_t process_events_lost;
	uint64_t stacks_truncated; /* samples */
	uint64_t frames_unknown;
	uint64_t samples_without_mappings;
	double sampling_rate_hz;    /* last window, per CPU */
	uint64_t unique_stacks;	    /* last window */
	unsigned int cpus;	    /* CPUs with an attached event */
	unsigned int cpus_detached; /* events whose BPF link disappeared */
	uint64_t bpf_map_bytes;
	/* Processes and symbols. */
	uint64_t processes_tracked;
	uint64_t captures;
	uint64_t capture_errors;
	uint64_t symbol_hits;
	uint64_t symbol_misses;
	uint64_t symbol_errors;
	uint64_t symbol_cache_bytes;
	uint64_t symbol_tables_loaded;
	uint64_t symbol_tables_evicted;
	uint64_t symbol_addr_hits;	  /* answered from resolved addresses (DWARF) */
	uint64_t debug_files_found;	  /* separate debug files used */
	uint64_t debug_files_missing;	  /* objects without DWARF and no debug file */
	uint64_t debug_files_refused;	  /* candidates of another build */
	uint64_t jit_maps_read;		  /* /tmp/perf-PID.map reads */
	uint64_t jit_map_lines_malformed; /* ... lines skipped */
	/* The table unwinder (BPF counters, then the agent's tables). */
	uint64_t unwind_samples;	/* user stacks unwound with tables */
	uint64_t unwind_no_tables;	/* samples of processes without tables: fp */
	uint64_t unwind_exe_only;	/* ... not published yet: their executable's table */
	uint64_t unwind_fp_frames;	/* frames in no table (JIT): fp */
	uint64_t unwind_no_cfi_frames;	/* frames in a table's gap: fp */
	uint64_t unwind_cut[6];		/* read fault, depth, unsupported, stale, tail call, lost */
	uint64_t unwind_tables;		/* in the row map now */
	uint64_t unwind_rows;		/* rows they hold */
	uint64_t unwind_row_capacity;	/* rows the map holds at most */
	uint64_t unwind_tables_built;	/* built from CFI */
	uint64_t unwind_table_errors;	/* unreadable CFI, too large, no room */
	uint64_t unwind_tables_evicted; /* dropped from the row map (unused) */
	uint64_t unwind_processes;	/* published now */
	uint64_t unwind_executables;	/* main executables recognised unpublished */
	double unwind_build_seconds;	/* building tables, total */
	/* Windows and sinks. */
	uint64_t windows;
	uint64_t profiles_written;
	uint64_t profile_bytes_written;
	uint64_t profile_write_errors;
	uint64_t profiles_sent;
	uint64_t profile_bytes_sent;
	uint64_t upload_errors[METRICS_UPLOAD_CODES]; /* by class, see metrics.c */
	uint64_t profiles_dropped[METRICS_DROP_REASONS];
	uint64_t upload_retries;
	double upload_backoff_seconds; /* the pause before the next attempt */
	uint64_t profiles_split;       /* targets split by process to fit the server's limits */
	uint64_t samples_folded;       /* samples folded into [other stacks] for the same */
	uint64_t queue_profiles;
	uint64_t queue_bytes;
	uint64_t spool_bytes;
	uint64_t drain_buckets[METRICS_DRAIN_BUCKETS]; /* cumulative counts per bucket */
	uint64_t drain_count;
	double drain_seconds_sum;
	uint64_t last_drain_ns; /* CLOCK_MONOTONIC of the last finished drain */
	uint64_t interval_ns;	/* the window length */
};

/* Upload error classes (index into upload_errors). */
enum metrics_upload_code {
	UPLOAD_ERR_NETWORK = 0, /* connection refused, DNS, TLS, timeout */
	UPLOAD_ERR_4XX,		/* other client errors: not retried */
	UPLOAD_ERR_400,
	UPLOAD_ERR_401,
	UPLOAD_ERR_408,
	UPLOAD_ERR_413,
	UPLOAD_ERR_429,
	UPLOAD_ERR_5XX,
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
 * Healthy: BPF attached on at least one CPU, no event lost its link, and the last drain
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
