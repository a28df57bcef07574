/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes names for pods and containers, from the API server: the pods of this node are
 * listed once (GET /api/v1/pods?fieldSelector=spec.nodeName=NODE), then watched
 * (watch=1&resourceVersion=...), in a thread of their own with libcurl and json-c, and
 * listed again after an error (with exponential backoff) or a 410 Gone. Lookups read the
 * cache under a short lock: a slow or absent API server never delays a window, it only
 * leaves names out until it answers.
 *
 * API: https://kubernetes.io/docs/reference/using-api/api-concepts/ (list, watch, bookmarks).
 */
#ifndef IGNIS_KUBERNETES_H
#define IGNIS_KUBERNETES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ignis.h"

#define KUBE_MAX_POD_LABELS 16

struct kube_opts {
	const char *api_url;	/* https://host:port */
	const char *token_file; /* read again before every request (tokens rotate); NULL: the
				 * service account's */
	const char *ca_file;	/* NULL: the service account's */
	const char *node_name;
	char *const *pod_labels; /* label keys to report */
	size_t nr_pod_labels;
};

/* What a lookup copies out. Strings are "" when unknown. */
struct pod_meta {
	char namespace_[64];
	char pod[254];
	char container[64];
	char service_name[254]; /* the pyroscope.io/service_name annotation */
	size_t nr_labels;
	struct {
		char key[64]; /* the label key made a valid label name: [a-zA-Z_][a-zA-Z0-9_]* */
		char value[64];
	} labels[KUBE_MAX_POD_LABELS];
};

struct kube_stats {
	uint64_t pods;	       /* cached now */
	uint64_t lists;	       /* successful lists */
	uint64_t watch_events; /* ADDED/MODIFIED/DELETED applied */
	uint64_t errors;       /* failed requests */
	bool synced;	       /* a list has succeeded since the last error */
};

struct kube;

/* Where a pod finds its service account's token and CA (the in-cluster configuration). */
#define KUBE_SERVICE_ACCOUNT "/var/run/secrets/kubernetes.io/serviceaccount"

/*
 * The API server to use: flag (--kubernetes-api-url) when given, else the in-cluster service
 * (KUBERNETES_SERVICE_HOST and _PORT). Returns a malloc'd URL, or NULL after saying on
 * stderr what is missing (or with errno ENOMEM).
 */
char *kube_api_url(const char *flag);

/* Start the client thread. NULL with errno set if the options are unusable. */
struct kube *kube__new(const struct kube_opts *opts);
/* Stop the thread (aborting any request) and free the cache. NULL is fine. */
void kube__free(struct kube *k);

/*
 * Names of the pod with this UID and of its container with this id (hex, no runtime
 * prefix; may be ""). Returns true when the pod is known.
 */
bool kube__lookup(struct kube *k, const char *pod_uid, const char *container_id,
		  struct pod_meta *out);

void kube__stats(struct kube *k, struct kube_stats *stats);

/* Parse a pod (JSON object text) into the fields a lookup returns, for tests: uid into uid
 * (37 bytes), and the name of container_id. Returns 0 or -EINVAL. */
int kube_parse_pod(const char *json, const struct kube_opts *opts, const char *container_id,
		   char *uid, struct pod_meta *out) __must_check;

#endif /* IGNIS_KUBERNETES_H */
