/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HTTP over libcurl, the agent's only user of it: one client per thread (libcurl easy
 * handles are not shared), reusing its connection between requests, HTTP/1.1 or h2 as
 * negotiated, TLS verified unless told otherwise. The transport moves bytes: it knows no
 * protobuf and no server. libcurl's codes stop here and become errno values.
 *
 * Secrets (passwords, tokens) are read from files or the environment, handed to libcurl and
 * wiped; they are never logged. libcurl's verbose output stays off.
 */
#ifndef IGNIS_HTTP_H
#define IGNIS_HTTP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/ignis.h"

struct http_opts {
	unsigned int connect_timeout_ms;
	unsigned int timeout_ms; /* whole request; 0: none (streams) */
	const char *ca_file;	 /* extra trust anchors (PEM), or NULL: the system's */
	const char *cert_file;	 /* client certificate (mTLS), or NULL */
	const char *key_file;
	bool insecure;		       /* skip TLS verification (warned about by the caller) */
	const char *basic_user;	       /* basic auth, with basic_password */
	const char *basic_password;    /* copied, wiped on free */
	const char *bearer_token_file; /* read again for every request: tokens rotate */
	const char *tenant_id;	       /* X-Scope-OrgID */
	char *const *headers;	       /* "Name: value" lines */
	size_t nr_headers;
};

/* Called with each chunk of the response body; return false to abort the transfer. */
typedef bool (*http_body_fn)(void *ctx, const char *data, size_t len);

/*
 * Called with each response header and trailer (HTTP/2 trailers come after the body, through
 * the same call): the name as sent, the value without surrounding blanks, both NUL-terminated
 * and borrowed for the call only. Lines longer than 8 KiB are not passed.
 */
typedef void (*http_header_fn)(void *ctx, const char *name, const char *value);

struct http_request {
	const char *method; /* "GET" or "POST" */
	const char *url;
	const char *content_type; /* for a body, or NULL */
	const void *body;
	size_t len;
	const char *const *headers; /* more "Name: value" lines, NULL-terminated, or NULL */
	http_body_fn on_body;	    /* stream the response to it instead of keeping it */
	void *ctx;
	unsigned int timeout_ms;  /* 0: the client's */
	const atomic_bool *abort; /* a flag that aborts the transfer when set, or NULL */
	/* HTTP/2 only (gRPC): cleartext with prior knowledge (RFC 9113 3.3), over TLS by ALPN;
	 * a server that does not answer in HTTP/2 fails the request with -EPROTO. */
	bool http2_only;
	http_header_fn on_header; /* every response header and trailer, or NULL */
	void *header_ctx;
};

struct http_response {
	long status; /* 0 when the transfer itself failed */
	char *body;  /* the first 64 KiB of the body, NUL-terminated, or NULL */
	size_t len;
	double retry_after_sec; /* from a Retry-After header, -1 if none */
	char error[256];	/* why the transfer failed: no secret in it */
};

struct http_client;

/* NULL with errno set: EINVAL when a certificate or token file cannot be read. */
struct http_client *http_client__new(const struct http_opts *opts);
void http_client__free(struct http_client *c);

/*
 * Perform one request. Returns 0 when a response arrived (whatever its status), or
 * -ETIMEDOUT, -ECONNREFUSED, -EHOSTUNREACH, -EPROTO (TLS), -ECANCELED (aborted), -EIO for
 * other transport failures, with resp->error saying more. Free the response with
 * http_response_fini().
 */
int http_client__perform(struct http_client *c, const struct http_request *req,
			 struct http_response *resp) __must_check;

void http_response_fini(struct http_response *resp);

/* Percent-encode s (RFC 3986 unreserved characters kept). Returns malloc'd text or NULL. */
char *http_escape(const char *s);

/* Parse a Retry-After value: delay-seconds or an HTTP-date (RFC 9110 10.2.3). Returns the
 * delay in seconds from now, or -1. */
double http_parse_retry_after(const char *value, time_t now);

#endif /* IGNIS_HTTP_H */
