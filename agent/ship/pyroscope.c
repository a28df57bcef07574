// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "push.pb-c.h"
#include "pyroscope.h"

#define PUSH_PATH   "/push.v1.PusherService/Push"
#define INGEST_PATH "/ingest"

struct pyroscope {
	char *url; /* without a trailing / */
	enum pyroscope_api api;
	struct http_client *http;
};

struct pyroscope *pyroscope__new(const struct pyroscope_opts *opts)
{
	struct pyroscope *p = calloc(1, sizeof(*p));
	size_t n;

	if (!p)
		return NULL;
	p->api = opts->api;
	p->url = strdup(opts->url);
	if (!p->url) {
		free(p);
		errno = ENOMEM;
		return NULL;
	}
	n = strlen(p->url);
	while (n && p->url[n - 1] == '/')
		p->url[--n] = '\0';
	p->http = http_client__new(opts->http);
	if (!p->http) {
		int err = errno;

		free(p->url);
		free(p);
		errno = err;
		return NULL;
	}
	return p;
}

void pyroscope__free(struct pyroscope *p)
{
	if (!p)
		return;
	http_client__free(p->http);
	free(p->url);
	free(p);
}

int pyroscope_push_body(const struct upload *u, uint8_t **out, size_t *len)
{
	Push__V1__PushRequest req = PUSH__V1__PUSH_REQUEST__INIT;
	Push__V1__RawProfileSeries series = PUSH__V1__RAW_PROFILE_SERIES__INIT;
	Push__V1__RawSample sample = PUSH__V1__RAW_SAMPLE__INIT;
	Push__V1__RawProfileSeries *series_list[1] = { &series };
	Push__V1__RawSample *sample_list[1] = { &sample };
	Push__V1__LabelPair *pairs = calloc(u->nr_labels + 1, sizeof(*pairs));
	Push__V1__LabelPair **pair_list = calloc(u->nr_labels + 1, sizeof(*pair_list));
	uint32_t i;
	int err = -ENOMEM;

	if (!pairs || !pair_list)
		goto out;
	for (i = 0; i < u->nr_labels; i++) {
		push__v1__label_pair__init(&pairs[i]);
		pairs[i].name = u->labels[i].name;
		pairs[i].value = u->labels[i].value;
		pair_list[i] = &pairs[i];
	}
	sample.raw_profile.data = u->data;
	sample.raw_profile.len = u->len;
	series.n_labels = u->nr_labels;
	series.labels = pair_list;
	series.n_samples = 1;
	series.samples = sample_list;
	req.n_series = 1;
	req.series = series_list;
	*len = push__v1__push_request__get_packed_size(&req);
	*out = malloc(*len + 1);
	if (!*out)
		goto out;
	push__v1__push_request__pack(&req, *out);
	err = 0;
out:
	free(pairs);
	free(pair_list);
	return err;
}

/* Append s to buf (size bytes, *n used), escaped; values lose ',' and '}', which the
 * /ingest name syntax cannot carry (PROTOCOLS.md 1.2). */
static bool append(char *buf, size_t size, size_t *n, const char *s)
{
	size_t len = strlen(s);

	if (*n + len + 1 > size)
		return false;
	memcpy(buf + *n, s, len + 1);
	*n += len;
	return true;
}

char *pyroscope_ingest_url(const char *base, const struct upload *u)
{
	char name[8192], *escaped, *url = NULL;
	const char *service = "unknown";
	size_t n = 0;
	uint32_t i;
	bool ok = true, first = true;

	for (i = 0; i < u->nr_labels; i++)
		if (!strcmp(u->labels[i].name, "service_name"))
			service = u->labels[i].value;
	ok = append(name, sizeof(name), &n, service) && append(name, sizeof(name), &n, "{");
	for (i = 0; ok && i < u->nr_labels; i++) {
		const char *k = u->labels[i].name;
		char *v;

		if (!strcmp(k, "service_name") || !strncmp(k, "__", 2))
			continue;
		v = strdup(u->labels[i].value);
		if (!v)
			return NULL;
		for (char *c = v; *c; c++)
			if (*c == ',' || *c == '}')
				*c = '_';
		ok = append(name, sizeof(name), &n, first ? "" : ",") &&
		     append(name, sizeof(name), &n, k) && append(name, sizeof(name), &n, "=") &&
		     append(name, sizeof(name), &n, v);
		free(v);
		first = false;
	}
	if (!ok || !append(name, sizeof(name), &n, "}"))
		return NULL;
	escaped = http_escape(name);
	if (!escaped)
		return NULL;
	if (asprintf(&url,
		     "%s" INGEST_PATH "?name=%s&from=%" PRIu64 "&until=%" PRIu64
		     "&spyName=ebpfspy&format=pprof",
		     base, escaped, u->time_ns / NSEC_PER_SEC,
		     (u->time_ns + u->duration_ns) / NSEC_PER_SEC) < 0)
		url = NULL;
	free(escaped);
	return url;
}

static enum upload_code code_of(long status)
{
	switch (status) {
	case 400:
		return UPLOAD_ERR_400;
	case 401:
		return UPLOAD_ERR_401;
	case 408:
		return UPLOAD_ERR_408;
	case 413:
		return UPLOAD_ERR_413;
	case 429:
		return UPLOAD_ERR_429;
	default:
		return status >= 500 ? UPLOAD_ERR_5XX : UPLOAD_ERR_4XX;
	}
}

void pyroscope_classify(long status, int err, const char *body, struct send_result *r)
{
	r->status = status;
	r->message[0] = '\0';
	if (err || !status) {
		r->outcome = SEND_RETRY;
		r->code = UPLOAD_ERR_NETWORK;
		return;
	}
	if (body)
		snprintf(r->message, sizeof(r->message), "%s", body);
	if (status >= 200 && status < 300) {
		r->outcome = SEND_OK;
		return;
	}
	/* Servers before grafana/pyroscope#5372 answered rate limits with 422 on /ingest. */
	if (status == 422 && body && strstr(body, "resource_exhausted"))
		status = 429;
	r->code = code_of(status);
	r->outcome = status == 408 || status == 429 || status >= 500 ? SEND_RETRY : SEND_DROP;
	if (!r->message[0])
		snprintf(r->message, sizeof(r->message), "(no message)");
}

void pyroscope__send(struct pyroscope *p, const struct upload *u, const atomic_bool *abort,
		     struct send_result *r)
{
	static const char *const push_headers[] = { "Connect-Protocol-Version: 1", NULL };
	struct http_request req = { .method = "POST", .abort = abort };
	struct http_response resp = { 0 };
	uint8_t *body = NULL;
	char *url = NULL;
	size_t len = 0;
	int err;

	if (p->api == PYROSCOPE_PUSH) {
		err = pyroscope_push_body(u, &body, &len);
		if (!err && asprintf(&url, "%s" PUSH_PATH, p->url) < 0) {
			url = NULL;
			err = -ENOMEM;
		}
		req.content_type = "application/proto";
		req.headers = push_headers;
		req.body = body;
		req.len = len;
	} else {
		url = pyroscope_ingest_url(p->url, u);
		err = url ? 0 : -ENOMEM;
		req.content_type = "application/octet-stream";
		req.body = u->data;
		req.len = u->len;
	}
	if (err) {
		/* Out of memory here is transient: try again later. */
		r->outcome = SEND_RETRY;
		r->code = UPLOAD_ERR_NETWORK;
		snprintf(r->message, sizeof(r->message), "out of memory");
		goto out;
	}
	req.url = url;
	err = http_client__perform(p->http, &req, &resp);
	pyroscope_classify(resp.status, err, resp.body, r);
	if (err)
		snprintf(r->message, sizeof(r->message), "%s", resp.error);
	r->retry_after_sec = resp.retry_after_sec;
	r->bytes = req.len;
	http_response_fini(&resp);
out:
	free(body);
	free(url);
}

/* ---- The encoder (encoder.h) ------------------------------------------------------------- */

static void *encoder_open(const struct encoder_opts *o)
{
	struct pyroscope_opts po = {
		.url = o->url,
		.api = o->pyroscope_ingest ? PYROSCOPE_INGEST : PYROSCOPE_PUSH,
		.http = o->http,
	};

	return pyroscope__new(&po);
}

static void encoder_close(void *client)
{
	pyroscope__free(client);
}

static void encoder_send(void *client, const struct upload *u, const atomic_bool *abort,
			 struct send_result *r)
{
	pyroscope__send(client, u, abort, r);
}

const struct encoder_ops pyroscope_encoder = {
	.name = "pyroscope",
	.open = encoder_open,
	.close = encoder_close,
	.send = encoder_send,
};
