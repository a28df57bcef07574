/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Delivery of profiles to a server, off the drain path (DESIGN.md requirement 10).
 *
 * The main loop enqueues one gzip'd pprof per target per window and returns at once; worker
 * threads (one per request in flight) send them through a sender (one of the encoders of
 * encoder.h: pyroscope.c, parca.c, otlp.c) and keep:
 *
 *  - at-least-once delivery with per-target order: a target's profiles go one at a time,
 *    oldest first, and one stays queued until the server accepted it (a duplicate only
 *    when a response was lost after the server stored the request);
 *  - a bounded memory queue (queue_max_bytes), then a bounded spool folder (spool.c) that
 *    survives a restart; past both, the oldest profiles are dropped, counted;
 *  - retries of network errors, 408, 429 and 5xx with exponential backoff and jitter, for
 *    the whole server (one failure pauses every worker), honouring Retry-After; other
 *    answers drop the profile, counted, the server's words logged once per target per hour;
 *  - profiles older than max_age (the server's ingestion window) are dropped, counted.
 *
 * Locking: one mutex guards the queue; senders run without it.
 */
#ifndef IGNIS_UPLOADER_H
#define IGNIS_UPLOADER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ignis.h"
#include "profile/targets.h"

/* One profile of one target, as queued. */
struct upload {
	uint64_t seq;	      /* order of arrival; a target's order follows it */
	uint64_t time_ns;     /* window start, Unix ns */
	uint64_t duration_ns; /* window length */
	char *key;	      /* the target's identity (label text) */
	uint32_t nr_labels;
	struct target_label *labels; /* series labels, owned */
	uint8_t *data;		     /* gzip'd pprof, or NULL while only in the spool */
	size_t len;		     /* bytes of the pprof */
	char spool_name[48];	     /* its spool file, "" if none */
	uint64_t spool_bytes;	     /* bytes of that file */

	/* The queue's, while queued. */
	struct upload *prev, *next;   /* all, oldest first */
	struct upload *tprev, *tnext; /* its target's */
	struct tqueue *tq;
	uint64_t mem_bytes; /* what it counts in the queue's memory */
	bool in_flight;
};

/* What a send came to. */
enum send_outcome {
	SEND_OK,
	SEND_RETRY, /* network error, 408, 429, 5xx */
	SEND_DROP,  /* any other answer: sending again cannot help */
};

/* Upload error classes (index into uploader_stats.errors; Prometheus label code="..."). */
enum upload_code {
	UPLOAD_ERR_NETWORK = 0, /* connection refused, DNS, TLS, timeout */
	UPLOAD_ERR_4XX,		/* other client errors: not retried */
	UPLOAD_ERR_400,
	UPLOAD_ERR_401,
	UPLOAD_ERR_408,
	UPLOAD_ERR_413,
	UPLOAD_ERR_429,
	UPLOAD_ERR_5XX,
	UPLOAD_CODES,
};

/* Why profiles were given up (index into uploader_stats.dropped). */
enum upload_drop {
	DROP_QUEUE_FULL = 0, /* memory queue and spool full: the oldest went */
	DROP_TOO_OLD,	     /* older than the server's ingestion window */
	DROP_REJECTED,	     /* the server refused it (4xx other than 408/429) */
	DROP_SHUTDOWN,	     /* still queued at exit, with no spool to keep it */
	DROP_SPOOL_ERROR,    /* its spool file could not be written or read back */
	UPLOAD_DROP_REASONS,
};

struct send_result {
	enum send_outcome outcome;
	enum upload_code code;	/* the failure's class */
	long status;		/* HTTP status, 0 for a transport failure */
	double retry_after_sec; /* the server's Retry-After, or -1 */
	size_t bytes;		/* request body bytes */
	char message[256];	/* the server's or the transport's words, printable */
	char what[48]; /* the answer as the protocol names it ("gRPC UNAVAILABLE"), or "": the
			* HTTP status is logged */
};

/* A sender: one per worker thread (libcurl handles are per thread). */
struct sender_ops {
	void *(*open)(void *ctx); /* NULL on failure, errno set */
	void (*close)(void *sender);
	void (*send)(void *sender, const struct upload *u, const atomic_bool *abort,
		     struct send_result *r);
	void *ctx;
};

struct uploader_opts {
	unsigned int workers;	  /* requests in flight, >= 1 */
	uint64_t queue_max_bytes; /* memory for queued profiles */
	const char *spool_dir;	  /* or NULL */
	uint64_t spool_max_bytes;
	uint64_t max_age_ns;	 /* drop profiles older than this (window start) */
	uint64_t backoff_min_ns; /* first retry delay; doubled per failure, with jitter */
	uint64_t backoff_max_ns;
	struct sender_ops sender;
};

struct uploader_stats {
	uint64_t sent;	     /* profiles the server accepted */
	uint64_t bytes_sent; /* their request bytes */
	uint64_t retries;    /* failed attempts that will be retried */
	uint64_t errors[UPLOAD_CODES];
	uint64_t dropped[UPLOAD_DROP_REASONS];
	uint64_t queued;      /* profiles queued now (memory and spool) */
	uint64_t queue_bytes; /* memory they take */
	uint64_t spooled;     /* of which in the spool */
	uint64_t spool_bytes; /* spool files' bytes */
	uint64_t loaded;      /* profiles found in the spool at start */
	double backoff_sec;   /* current pause before the next attempt, 0 if none */
};

struct uploader;

/*
 * Start the workers; with a spool folder, take its lock and queue what an earlier run left
 * there. NULL with errno set: EBUSY when another process holds the spool, or the spool's or
 * a sender's error.
 */
struct uploader *uploader__new(const struct uploader_opts *opts);

/*
 * Queue one profile of the target t (labels and key copied) for the window starting at
 * time_ns. Takes ownership of data (malloc'd) in every case. Never blocks on the network;
 * may write to the spool. Returns 0, or -ENOMEM (the profile is dropped, counted).
 */
int uploader__enqueue(struct uploader *u, const struct target *t, uint64_t time_ns,
		      uint64_t duration_ns, uint8_t *data, size_t len);

/*
 * Stop: keep sending until the queue is empty or flush_ns has passed (not while the server
 * is in backoff), then abort transfers in flight, join the workers, write what is left in
 * memory to the spool (or count it dropped), and free everything. NULL is fine.
 */
void uploader__free(struct uploader *u, uint64_t flush_ns);

void uploader__stats(struct uploader *u, struct uploader_stats *stats);

#endif /* IGNIS_UPLOADER_H */
