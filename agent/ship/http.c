// SPDX-License-Identifier: Apache-2.0
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "http.h"
#include "operate/log.h"

#define KEEP_BODY_BYTES (64U << 10)
#define MAX_TOKEN_BYTES 16384

struct http_client {
	CURL *curl;
	struct http_opts o;
	char *ca_file, *cert_file, *key_file, *basic_user, *password, *token_file;
	struct curl_slist *base_headers; /* tenant and --header lines */
	char errbuf[CURL_ERROR_SIZE];
};

/* One transfer's state for the callbacks. */
struct transfer {
	const struct http_request *req;
	struct http_response *resp;
	size_t cap;
	bool aborted_by_body;
};

static void wipe_free(char *s)
{
	if (!s)
		return;
	memset(s, 0, strlen(s));
	free(s);
}

static bool readable(const char *path)
{
	return !path || !access(path, R_OK);
}

struct http_client *http_client__new(const struct http_opts *opts)
{
	struct http_client *c = calloc(1, sizeof(*c));
	const char *bad = NULL;
	size_t i;

	if (!c)
		return NULL;
	c->o = *opts;
	if (!readable(opts->ca_file))
		bad = opts->ca_file;
	else if (!readable(opts->cert_file))
		bad = opts->cert_file;
	else if (!readable(opts->key_file))
		bad = opts->key_file;
	else if (!readable(opts->bearer_token_file))
		bad = opts->bearer_token_file;
	if (bad) {
		pr_err("%s: cannot read it: %s", bad, strerror(errno));
		free(c);
		errno = EINVAL;
		return NULL;
	}
#define DUP(field, src)                                \
	do {                                           \
		if ((src) && !((field) = strdup(src))) \
			goto nomem;                    \
	} while (0)
	DUP(c->ca_file, opts->ca_file);
	DUP(c->cert_file, opts->cert_file);
	DUP(c->key_file, opts->key_file);
	DUP(c->basic_user, opts->basic_user);
	DUP(c->password, opts->basic_password);
	DUP(c->token_file, opts->bearer_token_file);
#undef DUP
	if (opts->tenant_id) {
		char line[512];

		snprintf(line, sizeof(line), "X-Scope-OrgID: %s", opts->tenant_id);
		c->base_headers = curl_slist_append(c->base_headers, line);
		if (!c->base_headers)
			goto nomem;
	}
	for (i = 0; i < opts->nr_headers; i++) {
		struct curl_slist *l = curl_slist_append(c->base_headers, opts->headers[i]);

		if (!l)
			goto nomem;
		c->base_headers = l;
	}
	c->curl = curl_easy_init();
	if (!c->curl)
		goto nomem;
	return c;
nomem:
	http_client__free(c);
	errno = ENOMEM;
	return NULL;
}

void http_client__free(struct http_client *c)
{
	if (!c)
		return;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	curl_slist_free_all(c->base_headers);
	free(c->ca_file);
	free(c->cert_file);
	free(c->key_file);
	free(c->basic_user);
	wipe_free(c->password);
	free(c->token_file);
	free(c);
}

void http_response_fini(struct http_response *resp)
{
	free(resp->body);
	memset(resp, 0, sizeof(*resp));
}

static size_t on_write(char *data, size_t size, size_t n, void *ctx)
{
	struct transfer *t = ctx;
	struct http_response *r = t->resp;
	size_t len = size * n, keep;

	if (t->req->on_body) {
		if (t->req->on_body(t->req->ctx, data, len))
			return len;
		t->aborted_by_body = true;
		return 0;
	}
	keep = r->len < KEEP_BODY_BYTES ? KEEP_BODY_BYTES - r->len : 0;
	if (keep > len)
		keep = len;
	if (keep) {
		if (r->len + keep + 1 > t->cap) {
			char *b = realloc(r->body, r->len + keep + 1);

			if (!b)
				return 0;
			r->body = b;
			t->cap = r->len + keep + 1;
		}
		memcpy(r->body + r->len, data, keep);
		r->len += keep;
		r->body[r->len] = '\0';
	}
	return len; /* the rest is read and dropped */
}

double http_parse_retry_after(const char *value, time_t now)
{
	struct tm tm;
	const char *end;
	char *e;
	double v;

	while (*value == ' ')
		value++;
	if (*value >= '0' && *value <= '9') {
		v = strtod(value, &e);
		return (*e == '\0' || *e == '\r' || *e == '\n' || *e == ' ') && v >= 0 ? v : -1;
	}
	memset(&tm, 0, sizeof(tm));
	end = strptime(value, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	if (!end)
		return -1;
	v = difftime(timegm(&tm), now);
	return v > 0 ? v : 0;
}

/* Split one header line "Name: value\r\n" for the caller's callback. */
static void pass_header(const struct http_request *req, const char *data, size_t len)
{
	char line[8192], *colon, *v, *end;

	if (!req->on_header || len >= sizeof(line))
		return;
	memcpy(line, data, len);
	line[len] = '\0';
	colon = strchr(line, ':');
	if (!colon || colon == line)
		return; /* the status line, or the blank line that ends a block */
	*colon = '\0';
	for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
		;
	end = v + strlen(v);
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	req->on_header(req->header_ctx, line, v);
}

static size_t on_header(char *data, size_t size, size_t n, void *ctx)
{
	struct transfer *t = ctx;
	size_t len = size * n;
	char line[256];

	if (len > 12 && len < sizeof(line) && !strncasecmp(data, "Retry-After:", 12)) {
		memcpy(line, data + 12, len - 12);
		line[len - 12] = '\0';
		t->resp->retry_after_sec = http_parse_retry_after(line, time(NULL));
	}
	pass_header(t->req, data, len);
	return len;
}

static int on_progress(void *ctx, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	const struct transfer *t = ctx;

	(void)dt, (void)dn, (void)ut, (void)un;
	return t->req->abort && atomic_load(t->req->abort);
}

static char *read_token(const char *path)
{
	char buf[MAX_TOKEN_BYTES];
	size_t n;
	FILE *f = fopen(path, "re");

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	n = strlen(buf);
	while (n && (buf[n - 1] == ' ' || buf[n - 1] == '\t'))
		buf[--n] = '\0';
	if (!n)
		return NULL;
	return strdup(buf);
}

/*
 * libcurl before 8.0 fails the second request on a reused cleartext HTTP/2 connection made
 * with prior knowledge ("Error in the HTTP2 framing layer": curl/curl#10634, fixed by
 * curl/curl#10643 in 8.0.0; Debian 12 ships 7.88.1). There, each such request opens a fresh
 * connection. TLS connections (ALPN) are reused.
 */
static bool prior_knowledge_reuse_broken(void)
{
	const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);

	return !v || v->version_num < 0x080000;
}

static int map_error(CURLcode rc)
{
	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return -EHOSTUNREACH;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
		return -EPROTO;
	case CURLE_ABORTED_BY_CALLBACK:
		return -ECANCELED;
	default:
		return -EIO;
	}
}

int http_client__perform(struct http_client *c, const struct http_request *req,
			 struct http_response *resp)
{
	struct transfer t = { .req = req, .resp = resp };
	struct curl_slist *headers = NULL, *l;
	char *token = NULL, *auth = NULL, ctype[256];
	const char *const *h;
	CURL *e = c->curl;
	CURLcode rc;
	int err = 0;

	memset(resp, 0, sizeof(*resp));
	resp->retry_after_sec = -1;
	for (l = c->base_headers; l; l = l->next)
		headers = curl_slist_append(headers, l->data);
	for (h = req->headers; h && *h; h++)
		headers = curl_slist_append(headers, *h);
	if (req->content_type) {
		snprintf(ctype, sizeof(ctype), "Content-Type: %s", req->content_type);
		headers = curl_slist_append(headers, ctype);
	}
	/* libcurl's default "Expect: 100-continue" costs a round trip per upload. */
	headers = curl_slist_append(headers, "Expect:");
	if (c->token_file) {
		token = read_token(c->token_file);
		if (token && asprintf(&auth, "Authorization: Bearer %s", token) > 0)
			headers = curl_slist_append(headers, auth);
	}

	/* Reset options only: the connection cache of the handle survives. */
	curl_easy_reset(e);
	c->errbuf[0] = '\0';
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->errbuf);
	curl_easy_setopt(e, CURLOPT_URL, req->url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https,http");
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	/* Prior knowledge means h2 without Upgrade for http://; https:// still negotiates by
	 * ALPN, and a server that picks HTTP/1.1 there is refused below. */
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION,
			 (long)(req->http2_only ? CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE :
						  CURL_HTTP_VERSION_2TLS));
	if (req->http2_only && !strncmp(req->url, "http://", 7) && prior_knowledge_reuse_broken())
		curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)c->o.connect_timeout_ms);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
			 (long)(req->timeout_ms ? req->timeout_ms : c->o.timeout_ms));
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "ignis/" IGNIS_VERSION_SHORT);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, &t);
	curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(e, CURLOPT_XFERINFODATA, &t);
	if (c->ca_file)
		curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file);
	if (c->cert_file)
		curl_easy_setopt(e, CURLOPT_SSLCERT, c->cert_file);
	if (c->key_file)
		curl_easy_setopt(e, CURLOPT_SSLKEY, c->key_file);
	if (c->o.insecure) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (c->basic_user) {
		curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(e, CURLOPT_USERNAME, c->basic_user);
		curl_easy_setopt(e, CURLOPT_PASSWORD, c->password ? c->password : "");
	}
	if (!strcmp(req->method, "POST")) {
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->len);
	}

	rc = curl_easy_perform(e);
	if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && t.aborted_by_body)) {
		long version = 0;

		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &resp->status);
		curl_easy_getinfo(e, CURLINFO_HTTP_VERSION, &version);
		if (req->http2_only && version != CURL_HTTP_VERSION_2_0) {
			err = -EPROTO;
			resp->status = 0;
			snprintf(resp->error, sizeof(resp->error),
				 "the server answered in HTTP/1.x, not HTTP/2");
		}
	} else {
		err = map_error(rc);
		snprintf(resp->error, sizeof(resp->error), "%s",
			 c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc));
	}
	/* The password must not stay in the handle between requests. */
	curl_easy_setopt(e, CURLOPT_PASSWORD, "");
	curl_slist_free_all(headers);
	wipe_free(auth);
	wipe_free(token);
	return err;
}

char *http_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t len = strlen(s), i, o = 0;
	char *out = malloc(3 * len + 1);

	if (!out)
		return NULL;
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];

		if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		    (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_' || ch == '~') {
			out[o++] = (char)ch;
		} else {
			out[o++] = '%';
			out[o++] = hex[ch >> 4];
			out[o++] = hex[ch & 15];
		}
	}
	out[o] = '\0';
	return out;
}
