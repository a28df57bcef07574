// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/hashmap.h"
#include "ship/http.h"
#include "kubernetes.h"
#include "operate/log.h"

#define MAX_PODS		10000
#define MAX_CONTAINERS		64
#define MAX_LIST_BYTES		(64UL << 20)
#define MAX_EVENT_BYTES		(4UL << 20)
#define BACKOFF_MIN_SEC		1
#define BACKOFF_MAX_SEC		60
#define WATCH_TIMEOUT_SEC	300
#define SERVICE_NAME_ANNOTATION "pyroscope.io/service_name"

struct kpod {
	char uid[37];
	struct pod_meta meta; /* container left "" */
	size_t nr_containers;
	struct {
		char id[65];
		char name[64];
	} containers[MAX_CONTAINERS];
};

struct kube {
	char *api_url, *token_file, *ca_file, *node_name;
	char **pod_labels;
	size_t nr_pod_labels;
	struct kube_opts opts; /* pointing at the copies above */

	pthread_t thread;
	bool started;
	atomic_bool stop;
	pthread_mutex_t lock; /* pods, stats */
	pthread_cond_t wake;
	struct hashmap pods; /* uid -> struct kpod */
	struct kube_stats stats;

	/* Used by the client thread only. */
	struct http_client *http;
	char resource_version[128];
	char *buf;
	size_t len, cap, max;
	bool gone;	/* the watch said 410 Gone: list again */
	bool bad_event; /* an event did not parse */
};

/* ---- Parsing ------------------------------------------------------------------------------ */

static const char *str_at(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static void copy_str(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ? src : "");
}

/* A label key as a label name: [a-zA-Z_][a-zA-Z0-9_]* (Prometheus and Pyroscope rules). */
static void label_name(char *dst, size_t size, const char *key)
{
	size_t i;

	for (i = 0; key[i] && i + 1 < size; i++) {
		char c = key[i];

		dst[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
					 (i && c >= '0' && c <= '9') ?
				 c :
				 '_';
	}
	dst[i] = '\0';
}

/* "containerd://<64 hex>" (or cri-o://, docker://) to the hex id. */
static bool container_hex(const char *id, char out[65])
{
	const char *p = id ? strstr(id, "://") : NULL;
	size_t i;

	p = p ? p + 3 : id;
	if (!p || strlen(p) != 64)
		return false;
	for (i = 0; i < 64; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return false;
	memcpy(out, p, 65);
	return true;
}

static int parse_pod_object(struct json_object *pod, const struct kube_opts *o, struct kpod *out)
{
	static const char *const lists[] = { "containerStatuses", "initContainerStatuses",
					     "ephemeralContainerStatuses" };
	struct json_object *meta, *labels = NULL, *annotations = NULL, *status, *arr;
	const char *uid, *name, *ns, *v;
	size_t i, j;

	memset(out, 0, sizeof(*out));
	if (!json_object_object_get_ex(pod, "metadata", &meta))
		return -EINVAL;
	uid = str_at(meta, "uid");
	name = str_at(meta, "name");
	ns = str_at(meta, "namespace");
	if (!uid || strlen(uid) != 36 || !name || !ns)
		return -EINVAL;
	memcpy(out->uid, uid, 37);
	copy_str(out->meta.namespace_, sizeof(out->meta.namespace_), ns);
	copy_str(out->meta.pod, sizeof(out->meta.pod), name);
	json_object_object_get_ex(meta, "labels", &labels);
	json_object_object_get_ex(meta, "annotations", &annotations);
	copy_str(out->meta.service_name, sizeof(out->meta.service_name),
		 str_at(annotations, SERVICE_NAME_ANNOTATION));
	for (i = 0; i < o->nr_pod_labels && out->meta.nr_labels < KUBE_MAX_POD_LABELS; i++) {
		v = str_at(labels, o->pod_labels[i]);
		if (!v)
			continue;
		label_name(out->meta.labels[out->meta.nr_labels].key,
			   sizeof(out->meta.labels[0].key), o->pod_labels[i]);
		copy_str(out->meta.labels[out->meta.nr_labels].value,
			 sizeof(out->meta.labels[0].value), v);
		out->meta.nr_labels++;
	}
	if (!json_object_object_get_ex(pod, "status", &status))
		return 0;
	for (i = 0; i < ARRAY_SIZE(lists); i++) {
		if (!json_object_object_get_ex(status, lists[i], &arr) ||
		    !json_object_is_type(arr, json_type_array))
			continue;
		for (j = 0; j < json_object_array_length(arr); j++) {
			struct json_object *c = json_object_array_get_idx(arr, j);
			const char *cname = str_at(c, "name");

			if (out->nr_containers >= MAX_CONTAINERS || !cname ||
			    !container_hex(str_at(c, "containerID"),
					   out->containers[out->nr_containers].id))
				continue;
			copy_str(out->containers[out->nr_containers].name,
				 sizeof(out->containers[0].name), cname);
			out->nr_containers++;
		}
	}
	return 0;
}

static void fill_lookup(const struct kpod *p, const char *container_id, struct pod_meta *out)
{
	size_t i;

	*out = p->meta;
	for (i = 0; container_id && i < p->nr_containers; i++)
		if (!strcmp(p->containers[i].id, container_id))
			copy_str(out->container, sizeof(out->container), p->containers[i].name);
}

int kube_parse_pod(const char *json, const struct kube_opts *opts, const char *container_id,
		   char *uid, struct pod_meta *out)
{
	struct json_object *o = json_tokener_parse(json);
	struct kpod *p = calloc(1, sizeof(*p));
	int err = -EINVAL;

	if (o && p && !parse_pod_object(o, opts, p)) {
		memcpy(uid, p->uid, 37);
		fill_lookup(p, container_id, out);
		err = 0;
	}
	json_object_put(o);
	free(p);
	return err;
}

/* ---- The cache ------------------------------------------------------------------------------ */

static uint64_t hash_uid(const void *k)
{
	return hash_str(k);
}

static bool equal_uid(const void *a, const void *b)
{
	return !strcmp(a, b);
}

static void cache_clear(struct kube *k)
{
	struct hashmap_entry *e;

	hashmap__for_each(&k->pods, e)
		free(e->value);
	hashmap__clear(&k->pods);
}

/* Insert or replace; takes p. Caller holds the lock. */
static void cache_put(struct kube *k, struct kpod *p)
{
	struct kpod *old = hashmap__delete(&k->pods, p->uid);

	free(old);
	if (hashmap__size(&k->pods) >= MAX_PODS || hashmap__insert(&k->pods, p->uid, p)) {
		pr_warn_ratelimited(3, 1000, "kubernetes: pod cache full (%d pods)", MAX_PODS);
		free(p);
	}
}

static void cache_del(struct kube *k, const char *uid)
{
	free(hashmap__delete(&k->pods, uid));
}

bool kube__lookup(struct kube *k, const char *pod_uid, const char *container_id,
		  struct pod_meta *out)
{
	struct kpod *p;

	if (!k || !pod_uid || !*pod_uid)
		return false;
	pthread_mutex_lock(&k->lock);
	p = hashmap__find(&k->pods, pod_uid);
	if (p)
		fill_lookup(p, container_id, out);
	pthread_mutex_unlock(&k->lock);
	return p != NULL;
}

void kube__stats(struct kube *k, struct kube_stats *stats)
{
	memset(stats, 0, sizeof(*stats));
	if (!k)
		return;
	pthread_mutex_lock(&k->lock);
	*stats = k->stats;
	stats->pods = hashmap__size(&k->pods);
	pthread_mutex_unlock(&k->lock);
}

/* ---- HTTP ------------------------------------------------------------------------------------- */

static bool collect(void *ctx, const char *data, size_t len)
{
	struct kube *k = ctx;

	if (k->len + len + 1 > k->max)
		return false; /* aborts the transfer */
	if (k->len + len + 1 > k->cap && grow_array((void **)&k->buf, &k->cap, k->len + len + 1, 1))
		return false;
	memcpy(k->buf + k->len, data, len);
	k->len += len;
	k->buf[k->len] = '\0';
	return true;
}

/*
 * GET path (appended to the API URL) into the handler. Returns the HTTP status, or -1 for a
 * transport error (logged at debug; the token never is).
 */
static long get(struct kube *k, const char *query, unsigned int timeout_sec, http_body_fn on_body)
{
	static const char *const accept[] = { "Accept: application/json", NULL };
	struct http_request req = {
		.method = "GET",
		.headers = accept,
		.on_body = on_body,
		.ctx = k,
		.timeout_ms = timeout_sec * 1000,
		.abort = &k->stop,
	};
	struct http_response resp;
	char url[2048];
	long status = -1;

	snprintf(url, sizeof(url), "%s/api/v1/pods?%s", k->api_url, query);
	req.url = url;
	if (!http_client__perform(k->http, &req, &resp))
		status = resp.status;
	else if (!atomic_load(&k->stop))
		pr_debug("kubernetes: GET %s: %s", url, resp.error);
	http_response_fini(&resp);
	return status;
}

/* ---- List and watch ------------------------------------------------------------------------------ */

static int list(struct kube *k)
{
	struct json_object *o = NULL, *items, *meta;
	char query[512], *node = http_escape(k->node_name);
	const char *rv;
	long status;
	size_t i;
	int err = -EIO;

	snprintf(query, sizeof(query), "fieldSelector=spec.nodeName%%3D%s", node ? node : "");
	free(node);
	k->len = 0;
	k->max = MAX_LIST_BYTES;
	status = get(k, query, 60, collect);
	if (status != 200) {
		if (status > 0)
			pr_warn_ratelimited(3, 60, "kubernetes: listing pods: HTTP %ld%s", status,
					    status == 401 || status == 403 ?
						    " (check the service account's token and its "
						    "RBAC: get/list/watch pods)" :
						    "");
		return -EIO;
	}
	o = k->buf ? json_tokener_parse(k->buf) : NULL;
	if (!o || !json_object_object_get_ex(o, "items", &items) ||
	    !json_object_is_type(items, json_type_array)) {
		pr_warn_ratelimited(3, 60, "kubernetes: the pod list is not a PodList");
		goto out;
	}
	pthread_mutex_lock(&k->lock);
	cache_clear(k);
	for (i = 0; i < json_object_array_length(items); i++) {
		struct kpod *p = malloc(sizeof(*p));

		if (p && !parse_pod_object(json_object_array_get_idx(items, i), &k->opts, p))
			cache_put(k, p);
		else
			free(p);
	}
	k->stats.lists++;
	k->stats.synced = true;
	pthread_mutex_unlock(&k->lock);
	rv = json_object_object_get_ex(o, "metadata", &meta) ? str_at(meta, "resourceVersion") :
							       NULL;
	copy_str(k->resource_version, sizeof(k->resource_version), rv);
	pr_debug("kubernetes: %zu pods on %s (resourceVersion %s)", json_object_array_length(items),
		 k->node_name, k->resource_version);
	err = 0;
out:
	json_object_put(o);
	return err;
}

static void apply_event(struct kube *k, const char *line)
{
	struct json_object *ev = json_tokener_parse(line), *obj = NULL, *meta;
	const char *type = str_at(ev, "type"), *rv;
	struct kpod *p;

	if (!ev || !type || !json_object_object_get_ex(ev, "object", &obj)) {
		k->bad_event = true;
		goto out;
	}
	if (!strcmp(type, "ERROR")) {
		struct json_object *code;

		/* A Status: 410 Gone means our resourceVersion is too old. */
		if (json_object_object_get_ex(obj, "code", &code) &&
		    json_object_get_int(code) == 410)
			k->gone = true;
		else
			k->bad_event = true;
		goto out;
	}
	if (json_object_object_get_ex(obj, "metadata", &meta)) {
		rv = str_at(meta, "resourceVersion");
		if (rv)
			copy_str(k->resource_version, sizeof(k->resource_version), rv);
	}
	if (!strcmp(type, "BOOKMARK"))
		goto out;
	p = malloc(sizeof(*p));
	if (!p || parse_pod_object(obj, &k->opts, p)) {
		free(p);
		k->bad_event = true;
		goto out;
	}
	pthread_mutex_lock(&k->lock);
	if (!strcmp(type, "DELETED")) {
		cache_del(k, p->uid);
		free(p);
	} else {
		cache_put(k, p);
	}
	k->stats.watch_events++;
	pthread_mutex_unlock(&k->lock);
out:
	json_object_put(ev);
}

/* Watch events arrive as one JSON object per line. */
static bool stream(void *ctx, const char *data, size_t len)
{
	struct kube *k = ctx;
	char *nl;

	if (!collect(ctx, data, len))
		return false;
	while ((nl = memchr(k->buf, '\n', k->len))) {
		*nl = '\0';
		if (nl > k->buf)
			apply_event(k, k->buf);
		k->len -= (size_t)(nl + 1 - k->buf);
		memmove(k->buf, nl + 1, k->len + 1);
		if (k->gone)
			return false;
	}
	return true;
}

static int watch(struct kube *k)
{
	char query[768], *node = http_escape(k->node_name), *rv = http_escape(k->resource_version);
	long status;

	snprintf(query, sizeof(query),
		 "fieldSelector=spec.nodeName%%3D%s&watch=1&allowWatchBookmarks=true&"
		 "resourceVersion=%s&timeoutSeconds=%d",
		 node ? node : "", rv ? rv : "", WATCH_TIMEOUT_SEC);
	free(node);
	free(rv);
	k->len = 0;
	k->max = MAX_EVENT_BYTES;
	k->gone = false;
	k->bad_event = false;
	status = get(k, query, WATCH_TIMEOUT_SEC + 30, stream);
	if (k->gone) {
		pr_debug("kubernetes: watch expired (410 Gone): listing again");
		return -EAGAIN;
	}
	if (k->bad_event)
		pr_warn_ratelimited(3, 60, "kubernetes: an event of the pod watch did not parse");
	return status == 200 ? 0 : -EIO;
}

/* Sleep up to sec seconds, or until told to stop. */
static void pause_for(struct kube *k, unsigned int sec)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += sec;
	pthread_mutex_lock(&k->lock);
	while (!atomic_load(&k->stop) &&
	       pthread_cond_timedwait(&k->wake, &k->lock, &ts) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&k->lock);
}

static void *run(void *arg)
{
	struct kube *k = arg;
	unsigned int backoff = BACKOFF_MIN_SEC;

	while (!atomic_load(&k->stop)) {
		if (list(k)) {
			pthread_mutex_lock(&k->lock);
			k->stats.errors++;
			k->stats.synced = false;
			pthread_mutex_unlock(&k->lock);
			/* Jitter: many agents of a cluster must not retry in step. */
			pause_for(k, backoff + (unsigned int)(rand() % (backoff + 1)) / 2);
			backoff = backoff * 2 > BACKOFF_MAX_SEC ? BACKOFF_MAX_SEC : backoff * 2;
			continue;
		}
		backoff = BACKOFF_MIN_SEC;
		while (!atomic_load(&k->stop)) {
			int err = watch(k);

			if (err == -EAGAIN)
				break;
			if (err) {
				pthread_mutex_lock(&k->lock);
				k->stats.errors++;
				pthread_mutex_unlock(&k->lock);
				pause_for(k, BACKOFF_MIN_SEC);
				break;
			}
		}
	}
	return NULL;
}

/* ---- Lifecycle ------------------------------------------------------------------------------------- */

struct kube *kube__new(const struct kube_opts *opts)
{
	struct http_opts ho = { 0 };
	struct kube *k = calloc(1, sizeof(*k));
	size_t i;
	int err = -ENOMEM;

	if (!k)
		return NULL;
	pthread_mutex_init(&k->lock, NULL);
	pthread_cond_init(&k->wake, NULL);
	hashmap__init(&k->pods, hash_uid, equal_uid);
	if (!opts->api_url || !opts->node_name) {
		err = -EINVAL;
		goto err_out;
	}
	k->api_url = strdup(opts->api_url);
	k->token_file = strdup(opts->token_file ? opts->token_file : KUBE_SERVICE_ACCOUNT "/token");
	k->ca_file = strdup(opts->ca_file ? opts->ca_file : KUBE_SERVICE_ACCOUNT "/ca.crt");
	k->node_name = strdup(opts->node_name);
	k->pod_labels = calloc(opts->nr_pod_labels + 1, sizeof(*k->pod_labels));
	if (!k->api_url || !k->token_file || !k->node_name || !k->pod_labels || !k->ca_file)
		goto err_out;
	for (i = 0; i < opts->nr_pod_labels; i++) {
		k->pod_labels[i] = strdup(opts->pod_labels[i]);
		if (!k->pod_labels[i])
			goto err_out;
		k->nr_pod_labels++;
	}
	k->opts = (struct kube_opts){ k->api_url,   k->token_file, k->ca_file,
				      k->node_name, k->pod_labels, k->nr_pod_labels };
	ho.connect_timeout_ms = 5000;
	ho.ca_file = k->ca_file;
	ho.bearer_token_file = k->token_file;
	k->http = http_client__new(&ho);
	if (!k->http) {
		err = -errno;
		goto err_out;
	}
	if (pthread_create(&k->thread, NULL, run, k)) {
		err = -EAGAIN;
		goto err_out;
	}
	k->started = true;
	return k;
err_out:
	kube__free(k);
	errno = -err;
	return NULL;
}

void kube__free(struct kube *k)
{
	size_t i;

	if (!k)
		return;
	if (k->started) {
		atomic_store(&k->stop, true);
		pthread_mutex_lock(&k->lock);
		pthread_cond_broadcast(&k->wake);
		pthread_mutex_unlock(&k->lock);
		pthread_join(k->thread, NULL);
	}
	http_client__free(k->http);
	cache_clear(k);
	hashmap__fini(&k->pods);
	for (i = 0; i < k->nr_pod_labels; i++)
		free(k->pod_labels[i]);
	free(k->pod_labels);
	free(k->api_url);
	free(k->token_file);
	free(k->ca_file);
	free(k->node_name);
	free(k->buf);
	pthread_cond_destroy(&k->wake);
	pthread_mutex_destroy(&k->lock);
	free(k);
}

char *kube_api_url(const char *flag)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	char *url = NULL;

	if (flag)
		return strdup(flag);
	if (!host || !port) {
		fprintf(stderr, "ignis: --kubernetes: no API server: not in a pod "
				"(KUBERNETES_SERVICE_HOST unset); give --kubernetes-api-url\n");
		return NULL;
	}
	if (asprintf(&url, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port) < 0)
		return NULL;
	return url;
}
