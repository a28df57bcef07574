/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Grafana Pyroscope sink: turns a queued profile into a request and the server's answer
 * into an outcome (../shared/design/PROTOCOLS.md sections 1, 2 and 7). The only file that
 * sees the protobuf-c code generated from agent/proto/push.proto.
 *
 *  push (default): POST {url}/push.v1.PusherService/Push, Connect unary, application/proto,
 *        Connect-Protocol-Version: 1; a PushRequest with one series (the target's labels)
 *        and one sample (the gzip'd pprof).
 *  ingest:  POST {url}/ingest?name=SERVICE{k=v,...}&from=S&until=S&spyName=ebpfspy&format=pprof
 *        with the gzip'd pprof as the raw body, no Content-Encoding.
 *
 * Outcomes (section 2.4, 1.6, rule 9): 2xx sent; network errors, 408, 429 and 5xx retried
 * (an old server's 422 "resource_exhausted" counts as 429); any other status dropped.
 */
#ifndef IGNIS_PYROSCOPE_H
#define IGNIS_PYROSCOPE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "encoder.h"
#include "http.h"
#include "common/ignis.h"
#include "uploader.h"

enum pyroscope_api {
	PYROSCOPE_PUSH = 0,
	PYROSCOPE_INGEST,
};

struct pyroscope_opts {
	const char *url; /* base URL, e.g. http://pyroscope:4040 (a trailing / is fine) */
	enum pyroscope_api api;
	const struct http_opts *http;
};

struct pyroscope;

/* One client (one connection) for one worker thread. NULL with errno set. */
struct pyroscope *pyroscope__new(const struct pyroscope_opts *opts);
void pyroscope__free(struct pyroscope *p);

/* Send u and classify the answer into r (sender_ops.send). */
void pyroscope__send(struct pyroscope *p, const struct upload *u, const atomic_bool *abort,
		     struct send_result *r);

/* The PushRequest bytes for u: *out malloc'd. Returns 0 or -ENOMEM. */
int pyroscope_push_body(const struct upload *u, uint8_t **out, size_t *len) __must_check;

/* The /ingest URL for u under base. Returns malloc'd text or NULL. */
char *pyroscope_ingest_url(const char *base, const struct upload *u);

/* Classify a response: status (0: transport failure err, a negative errno) and body. */
void pyroscope_classify(long status, int err, const char *body, struct send_result *r);

/* The encoder (encoder.h): push, or /ingest with encoder_opts.pyroscope_ingest. */
extern const struct encoder_ops pyroscope_encoder;

#endif /* IGNIS_PYROSCOPE_H */
