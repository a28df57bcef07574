// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "grpc.h"

/* The length prefix of a gRPC message: a compressed flag and a big-endian uint32. */
#define FRAME_PREFIX 5

static const char *const code_names[GRPC_CODES] = {
	"OK",
	"CANCELLED",
	"UNKNOWN",
	"INVALID_ARGUMENT",
	"DEADLINE_EXCEEDED",
	"NOT_FOUND",
	"ALREADY_EXISTS",
	"PERMISSION_DENIED",
	"RESOURCE_EXHAUSTED",
	"FAILED_PRECONDITION",
	"ABORTED",
	"OUT_OF_RANGE",
	"UNIMPLEMENTED",
	"INTERNAL",
	"UNAVAILABLE",
	"DATA_LOSS",
	"UNAUTHENTICATED",
};

const char *grpc_code_name(int code)
{
	return code >= 0 && code < GRPC_CODES ? code_names[code] : "UNKNOWN";
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

void grpc_decode_message(const char *in, char *out, size_t size)
{
	size_t o = 0;

	if (!size)
		return;
	while (*in && o + 1 < size) {
		unsigned char ch = (unsigned char)*in;

		if (ch == '%' && hexval(in[1]) >= 0 && hexval(in[2]) >= 0) {
			ch = (unsigned char)(hexval(in[1]) << 4 | hexval(in[2]));
			in += 3;
		} else {
			in++;
		}
		out[o++] = ch < 0x20 || ch == 0x7f ? ' ' : (char)ch;
	}
	out[o] = '\0';
}

/* The response as it streams in: the headers and trailers that matter, the message length. */
struct call {
	struct grpc_result *r;
	uint8_t prefix[FRAME_PREFIX];
	size_t got;	   /* body bytes seen */
	bool have_message; /* grpc-message seen */
	char raw_message[256];
};

static void on_header(void *ctx, const char *name, const char *value)
{
	struct call *c = ctx;
	char *end;
	long v;

	if (!strcasecmp(name, "grpc-status")) {
		v = strtol(value, &end, 10);
		c->r->code = *value && !*end && v >= 0 && v < 1000 ? (int)v : GRPC_UNKNOWN;
	} else if (!strcasecmp(name, "grpc-message")) {
		snprintf(c->raw_message, sizeof(c->raw_message), "%s", value);
		c->have_message = true;
	}
}

static bool on_body(void *ctx, const char *data, size_t len)
{
	struct call *c = ctx;
	size_t i;

	for (i = 0; i < len && c->got < FRAME_PREFIX; i++)
		c->prefix[c->got++] = (uint8_t)data[i];
	c->got += len - i;
	if (c->got >= FRAME_PREFIX)
		c->r->response_len = c->got - FRAME_PREFIX;
	return true; /* the message is read and dropped: a unary answer is small */
}

int grpc_unary(struct http_client *c, const char *base_url, const char *method, const uint8_t *msg,
	       size_t len, unsigned int timeout_ms, const atomic_bool *abort, struct grpc_result *r)
{
	char timeout[48], *url = NULL;
	const char *headers[] = { "TE: trailers", timeout, NULL };
	struct http_request req = {
		.method = "POST",
		.content_type = "application/grpc+proto",
		.headers = headers,
		.on_body = on_body,
		.abort = abort,
		.http2_only = true,
		.on_header = on_header,
	};
	struct http_response resp = { 0 };
	struct call call = { .r = r };
	uint8_t *frame = NULL;
	size_t n = strlen(base_url);
	int err;

	memset(r, 0, sizeof(*r));
	r->code = -1;
	r->retry_after_sec = -1;
	if (len > UINT32_MAX)
		return -E2BIG;
	while (n && base_url[n - 1] == '/')
		n--;
	frame = malloc(FRAME_PREFIX + len);
	if (!frame || asprintf(&url, "%.*s%s", (int)n, base_url, method) < 0) {
		free(frame);
		return -ENOMEM;
	}
	frame[0] = 0; /* not compressed: the pprof inside is gzip'd already */
	frame[1] = (uint8_t)(len >> 24);
	frame[2] = (uint8_t)(len >> 16);
	frame[3] = (uint8_t)(len >> 8);
	frame[4] = (uint8_t)len;
	if (len)
		memcpy(frame + FRAME_PREFIX, msg, len);
	/* The server's deadline a little short of ours, so that its answer can still come. */
	if (timeout_ms)
		snprintf(timeout, sizeof(timeout), "grpc-timeout: %um",
			 timeout_ms > 1000 ? timeout_ms - 500 : timeout_ms);
	else
		headers[1] = NULL;
	req.url = url;
	req.body = frame;
	req.len = FRAME_PREFIX + len;
	req.ctx = &call;
	req.header_ctx = &call;
	req.timeout_ms = timeout_ms;
	err = http_client__perform(c, &req, &resp);
	r->transport_err = err;
	r->http_status = resp.status;
	r->retry_after_sec = resp.retry_after_sec;
	if (err) {
		snprintf(r->message, sizeof(r->message), "%s", resp.error);
		r->code = -1;
	} else if (call.have_message) {
		grpc_decode_message(call.raw_message, r->message, sizeof(r->message));
	}
	http_response_fini(&resp);
	free(frame);
	free(url);
	return err;
}

/* PROTOCOL-HTTP2.md, "HTTP to gRPC Status Code Mapping", for an answer without grpc-status. */
static int code_of_http(long status)
{
	switch (status) {
	case 400:
		return GRPC_INTERNAL;
	case 401:
		return GRPC_UNAUTHENTICATED;
	case 403:
		return GRPC_PERMISSION_DENIED;
	case 404:
		return GRPC_UNIMPLEMENTED;
	case 429:
	case 502:
	case 503:
	case 504:
		return GRPC_UNAVAILABLE;
	default:
		return GRPC_UNKNOWN;
	}
}

/* The uploader's error class of a status that is not OK (its /metrics label). */
static enum upload_code class_of(int code, long http_status)
{
	switch (code) {
	case GRPC_INVALID_ARGUMENT:
	case GRPC_OUT_OF_RANGE:
	case GRPC_FAILED_PRECONDITION:
		return UPLOAD_ERR_400;
	case GRPC_UNAUTHENTICATED:
		return UPLOAD_ERR_401;
	case GRPC_DEADLINE_EXCEEDED:
		return UPLOAD_ERR_408;
	case GRPC_RESOURCE_EXHAUSTED:
		return UPLOAD_ERR_429;
	case GRPC_UNAVAILABLE:
	case GRPC_INTERNAL:
	case GRPC_UNKNOWN:
	case GRPC_DATA_LOSS:
		return http_status == 429 ? UPLOAD_ERR_429 : UPLOAD_ERR_5XX;
	default:
		return UPLOAD_ERR_4XX;
	}
}

void grpc_classify(const struct grpc_result *g, struct send_result *r)
{
	int code = g->code;

	r->status = g->http_status;
	r->retry_after_sec = g->retry_after_sec;
	snprintf(r->message, sizeof(r->message), "%s", g->message);
	if (g->transport_err || !g->http_status) {
		r->outcome = SEND_RETRY;
		r->code = UPLOAD_ERR_NETWORK;
		snprintf(r->what, sizeof(r->what), "network");
		return;
	}
	if (code < 0) /* no grpc-status: a proxy's answer, or not a gRPC server */
		code = g->http_status == 200 ? GRPC_UNKNOWN : code_of_http(g->http_status);
	if (code == GRPC_OK) {
		r->outcome = SEND_OK;
		return;
	}
	snprintf(r->what, sizeof(r->what), "gRPC %s", grpc_code_name(code));
	if (g->code < 0)
		snprintf(r->what, sizeof(r->what), "HTTP %ld, no grpc-status", g->http_status);
	r->code = class_of(code, g->http_status);
	r->outcome = code == GRPC_UNAVAILABLE || code == GRPC_RESOURCE_EXHAUSTED ||
				     code == GRPC_DEADLINE_EXCEEDED ?
			     SEND_RETRY :
			     SEND_DROP;
	if (!r->message[0])
		snprintf(r->message, sizeof(r->message), "(no message)");
}
