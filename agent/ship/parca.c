// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc.h"
#include "parca.h"
#include "parca.pb-c.h"

struct parca {
	const struct encoder_opts *o;
	struct http_client *http;
};

/* A Prometheus label name: [a-zA-Z_][a-zA-Z0-9_]*; "__name__" and the like pass as they are. */
static char *label_name(const char *in)
{
	char *s = strdup(in), *c;

	if (!s)
		return NULL;
	for (c = s; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_' ||
		      (c > s && *c >= '0' && *c <= '9')))
			*c = '_';
	return s;
}

static int by_name(const void *a, const void *b)
{
	const Parca__Profilestore__V1alpha1__Label *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

int parca_write_raw_body(const struct upload *u, uint8_t **out, size_t *len)
{
	Parca__Profilestore__V1alpha1__WriteRawRequest req =
		PARCA__PROFILESTORE__V1ALPHA1__WRITE_RAW_REQUEST__INIT;
	Parca__Profilestore__V1alpha1__RawProfileSeries series =
		PARCA__PROFILESTORE__V1ALPHA1__RAW_PROFILE_SERIES__INIT;
	Parca__Profilestore__V1alpha1__LabelSet set =
		PARCA__PROFILESTORE__V1ALPHA1__LABEL_SET__INIT;
	Parca__Profilestore__V1alpha1__RawSample sample =
		PARCA__PROFILESTORE__V1ALPHA1__RAW_SAMPLE__INIT;
	Parca__Profilestore__V1alpha1__RawProfileSeries *series_list[1] = { &series };
	Parca__Profilestore__V1alpha1__RawSample *sample_list[1] = { &sample };
	Parca__Profilestore__V1alpha1__Label *labels = calloc(u->nr_labels + 1, sizeof(*labels));
	Parca__Profilestore__V1alpha1__Label **list = calloc(u->nr_labels + 1, sizeof(*list));
	uint32_t i, n = 0;
	int err = -ENOMEM;

	*out = NULL;
	if (!labels || !list)
		goto out;
	for (i = 0; i < u->nr_labels; i++) {
		parca__profilestore__v1alpha1__label__init(&labels[n]);
		labels[n].name = label_name(u->labels[i].name);
		labels[n].value = u->labels[i].value;
		if (!labels[n].name)
			goto out;
		list[n] = &labels[n];
		n++;
	}
	qsort(list, n, sizeof(*list), by_name);
	set.n_labels = n;
	set.labels = list;
	sample.raw_profile.data = u->data;
	sample.raw_profile.len = u->len;
	series.labels = &set;
	series.n_samples = 1;
	series.samples = sample_list;
	req.n_series = 1;
	req.series = series_list;
	*len = parca__profilestore__v1alpha1__write_raw_request__get_packed_size(&req);
	*out = malloc(*len + 1);
	if (!*out)
		goto out;
	parca__profilestore__v1alpha1__write_raw_request__pack(&req, *out);
	err = 0;
out:
	for (i = 0; labels && i < n; i++)
		free(labels[i].name);
	free(labels);
	free(list);
	return err;
}

static void *parca_open(const struct encoder_opts *o)
{
	struct parca *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->o = o;
	p->http = http_client__new(o->http);
	if (!p->http) {
		int err = errno;

		free(p);
		errno = err;
		return NULL;
	}
	return p;
}

static void parca_close(void *client)
{
	struct parca *p = client;

	if (!p)
		return;
	http_client__free(p->http);
	free(p);
}

static void parca_send(void *client, const struct upload *u, const atomic_bool *abort,
		       struct send_result *r)
{
	struct parca *p = client;
	struct grpc_result g;
	uint8_t *body = NULL;
	size_t len = 0;
	int err = parca_write_raw_body(u, &body, &len);

	if (err) {
		/* Out of memory here is transient: try again later. */
		r->outcome = SEND_RETRY;
		r->code = UPLOAD_ERR_NETWORK;
		snprintf(r->message, sizeof(r->message), "out of memory");
		return;
	}
	err = grpc_unary(p->http, p->o->url, PARCA_WRITE_RAW, body, len, p->o->timeout_ms, abort,
			 &g);
	if (err == -ENOMEM || err == -E2BIG) {
		r->outcome = err == -ENOMEM ? SEND_RETRY : SEND_DROP;
		r->code = err == -ENOMEM ? UPLOAD_ERR_NETWORK : UPLOAD_ERR_413;
		snprintf(r->message, sizeof(r->message), "%s", strerror(-err));
	} else {
		grpc_classify(&g, r);
	}
	r->bytes = len;
	free(body);
}

const struct encoder_ops parca_encoder = {
	.name = "parca",
	.open = parca_open,
	.close = parca_close,
	.send = parca_send,
};
