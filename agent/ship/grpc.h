/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unary gRPC calls over http.c (gRPC over HTTP/2, github.com/grpc/grpc
 * doc/PROTOCOL-HTTP2.md): the length-prefixed message framing, the request headers
 * (application/grpc, TE: trailers, grpc-timeout), the status from grpc-status and
 * grpc-message (trailers, or the headers of a trailers-only answer), and the mapping of a
 * status onto the uploader's retry rules. It knows no message type: the caller packs and
 * unpacks. HTTP/2 is required: cleartext with prior knowledge for http://, ALPN for https://.
 */
#ifndef IGNIS_GRPC_H
#define IGNIS_GRPC_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ignis.h"
#include "http.h"
#include "uploader.h"

/* gRPC status codes (grpc/include/grpcpp/support/status_code_enum.h, doc/statuscodes.md). */
enum grpc_code {
	GRPC_OK = 0,
	GRPC_CANCELLED = 1,
	GRPC_UNKNOWN = 2,
	GRPC_INVALID_ARGUMENT = 3,
	GRPC_DEADLINE_EXCEEDED = 4,
	GRPC_NOT_FOUND = 5,
	GRPC_ALREADY_EXISTS = 6,
	GRPC_PERMISSION_DENIED = 7,
	GRPC_RESOURCE_EXHAUSTED = 8,
	GRPC_FAILED_PRECONDITION = 9,
	GRPC_ABORTED = 10,
	GRPC_OUT_OF_RANGE = 11,
	GRPC_UNIMPLEMENTED = 12,
	GRPC_INTERNAL = 13,
	GRPC_UNAVAILABLE = 14,
	GRPC_DATA_LOSS = 15,
	GRPC_UNAUTHENTICATED = 16,
	GRPC_CODES,
};

/* "INVALID_ARGUMENT" and so on; "UNKNOWN" past the table. */
const char *grpc_code_name(int code);

/* What one call came to. */
struct grpc_result {
	int transport_err; /* 0, or http_client__perform()'s negative errno */
	long http_status;  /* 0 when the transfer failed */
	int code;	   /* grpc-status; -1 when the answer carried none */
	char message[256]; /* grpc-message, percent-decoded and printable; or the transport's */
	double retry_after_sec;
	size_t response_len; /* bytes of the response message (after its 5-byte prefix) */
};

/*
 * Call method (e.g. "/pkg.Service/Method") under base_url with the serialized request msg
 * (len bytes). A response message is read and discarded (its length kept); the call's
 * outcome is in r. Returns 0 when a status was read (whatever it is), -ENOMEM, or the
 * transport's negative errno (then also in r->transport_err).
 */
int grpc_unary(struct http_client *c, const char *base_url, const char *method, const uint8_t *msg,
	       size_t len, unsigned int timeout_ms, const atomic_bool *abort,
	       struct grpc_result *r) __must_check;

/*
 * The uploader's outcome of a call: OK sent; a transport failure, UNAVAILABLE,
 * RESOURCE_EXHAUSTED and DEADLINE_EXCEEDED retried with backoff (an answer without
 * grpc-status is read through the HTTP status as PROTOCOL-HTTP2.md's table does: 429,
 * 502, 503 and 504 are UNAVAILABLE); every other status dropped, counted under the HTTP
 * class of the code (INVALID_ARGUMENT as 400, UNAUTHENTICATED as 401, ...).
 */
void grpc_classify(const struct grpc_result *g, struct send_result *r);

/* Percent-decode a grpc-message value into out (size bytes), control bytes as spaces. */
void grpc_decode_message(const char *in, char *out, size_t size);

#endif /* IGNIS_GRPC_H */
