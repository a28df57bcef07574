/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sink interface: one encoder per server protocol over the one uploader (uploader.h).
 * An encoder turns a queued profile (a target's labels and its window's gzip'd pprof, as the
 * queue and the spool keep it whatever the protocol) into its server's request, sends it
 * through http.c, and reads the answer into the uploader's outcome (sent, retried, dropped).
 * Each encoder is the only file that sees its protocol's generated protobuf-c header.
 *
 *   pyroscope.c  Grafana Pyroscope: push.v1.PusherService/Push (Connect) or /ingest
 *   parca.c      Parca: parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw (gRPC)
 *   otlp.c       OpenTelemetry profiles: POST /v1development/profiles (OTLP/HTTP, protobuf)
 *
 * Senders are per worker thread (libcurl handles are), so an encoder's open() makes one
 * client with its own connection.
 */
#ifndef IGNIS_ENCODER_H
#define IGNIS_ENCODER_H

#include <stdatomic.h>
#include <stdbool.h>

#include "http.h"
#include "uploader.h"

/* The server protocols (--server-protocol). */
enum server_protocol {
	SERVER_PYROSCOPE = 0,
	SERVER_PARCA,
	SERVER_OTLP,
	SERVER_PROTOCOLS,
};

/* What every encoder is made from; borrowed for the encoder's lifetime. */
struct encoder_opts {
	const char *url;	      /* base URL (a trailing / is fine) */
	bool pyroscope_ingest;	      /* Pyroscope only: the /ingest API instead of push */
	unsigned int timeout_ms;      /* one request's deadline (gRPC sends it as grpc-timeout) */
	const struct http_opts *http; /* TLS, credentials, headers */
};

struct encoder_ops {
	const char *name; /* "pyroscope", "parca", "otlp" */
	/* One client for one worker thread. NULL with errno set. */
	void *(*open)(const struct encoder_opts *opts);
	void (*close)(void *client); /* NULL is fine */
	/* Send u and classify the answer into r (r comes zeroed, retry_after_sec -1). */
	void (*send)(void *client, const struct upload *u, const atomic_bool *abort,
		     struct send_result *r);
};

/* Each encoder's ops are declared in its own header (pyroscope.h, parca.h, ...). */

#endif /* IGNIS_ENCODER_H */
