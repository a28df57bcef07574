/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The server sink: each window's profile, split into one pprof per target (targets.c,
 * split.c), queued for a profiling server (uploader.c) and sent by the encoder of its
 * protocol (encoder.h: Grafana Pyroscope, Parca or OpenTelemetry profiles) over http.c. It owns the
 * targets table the window builder resolves into. It knows no configuration: the settings
 * that only make sense together (credentials, TLS files) are checked with the others when
 * the configuration is loaded (config_check()), so that a mistake is a config error, not a
 * stream of failed uploads.
 */
#ifndef IGNIS_SINK_SERVER_H
#define IGNIS_SINK_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ignis.h"
#include "encoder.h"
#include "uploader.h"

struct profile;
struct targets;

/* What one window sent. */
struct server_window_stats {
	uint64_t profiles; /* queued, one or more per target */
	uint64_t targets;
	uint64_t bytes; /* gzip'd pprof bytes queued */
	uint64_t split; /* targets split by process */
	uint64_t folded;
};

struct server_sink;

/*
 * What the sink needs, in libbpf's opts habit: set sz = sizeof(struct server_sink_opts)
 * (OPTS_VALID, ignis.h). Strings and lists are borrowed for the sink's lifetime, except
 * basic_auth_password, which is copied and wiped at free. Zero means the default where one
 * is named.
 */
struct server_sink_opts {
	size_t sz;
	const char *url; /* http:// or https:// base URL, e.g. http://pyroscope:4040 */
	bool ingest;	 /* Pyroscope's /ingest API instead of push */
	enum server_protocol protocol; /* the encoder; 0: Pyroscope */
	const char *hostname;	       /* the hostname label; NULL: "localhost" */
	/* Naming (targets.h), as targets_check_rule() and targets_check_label() accept them. */
	char *const *service_name_rules; /* "exe:GLOB=NAME", "comm:GLOB=NAME" */
	size_t nr_service_name_rules;
	char *const *labels; /* "name=value" series labels */
	size_t nr_labels;
	/* Splitting (split.h). */
	char *const *sample_labels; /* string sample labels kept: "comm", "thread_name" */
	size_t nr_sample_labels;
	uint64_t max_profile_bytes;   /* encoded; 0: SPLIT_MAX_BYTES */
	uint64_t max_profile_samples; /* 0: SPLIT_MAX_SAMPLES */
	/* Requests (http.h). */
	unsigned int connect_timeout_sec;
	unsigned int timeout_sec;
	const char *tls_ca_file;   /* NULL: the system's trust anchors */
	const char *tls_cert_file; /* client certificate, with tls_key_file, or NULL */
	const char *tls_key_file;
	bool tls_insecure;
	const char *basic_auth_user;	 /* with basic_auth_password, or NULL */
	const char *basic_auth_password; /* the secret itself: copied */
	const char *bearer_token_file;	 /* re-read for every request, or NULL */
	const char *tenant_id;		 /* X-Scope-OrgID, or NULL */
	char *const *headers;		 /* "Name: value" */
	size_t nr_headers;
	/* Queueing (uploader.h). */
	unsigned int workers; /* requests in flight; 0: one */
	uint64_t queue_max_bytes;
	const char *spool_dir; /* NULL: no spool */
	uint64_t spool_max_bytes;
	uint64_t max_age_sec; /* drop profiles not sent within this long */
};

/*
 * Start the uploads. NULL with errno set: EINVAL for opts it cannot work with (no sz, no
 * http(s) URL, a certificate without its key, a basic auth user without a password), said
 * nowhere: the configuration checks them first. Starting the uploader (the spool) logs why
 * it failed.
 */
struct server_sink *server_sink__new(const struct server_sink_opts *opts);

/* Flush for up to flush_ns, keep what is left in the spool, free. NULL is fine. */
void server_sink__free(struct server_sink *s, uint64_t flush_ns);

/* The targets the window builder resolves samples into, per window (targets.h). Borrowed. */
struct targets *server_sink__targets(struct server_sink *s);

/*
 * Split p of window seq (whose sample groups are that window's targets) and queue its parts,
 * for the window that started at p->opts.time_ns (Unix ns) and lasted p->opts.duration_ns.
 * Never blocks on the network. Returns 0 or -errno (the window's server profiles are then
 * lost, counted by the caller).
 */
int server_sink__send(struct server_sink *s, const struct profile *p, uint64_t seq,
		      struct server_window_stats *stats) __must_check;

/* The sink's figures: the uploader's (queue, spool, results by class) and the splits. */
struct server_sink_stats {
	struct uploader_stats upload;
	uint64_t profiles_split; /* targets split by process to fit the server's limits */
	uint64_t samples_folded; /* samples folded into [other stacks] for the same */
};

void server_sink__stats(struct server_sink *s, struct server_sink_stats *stats);

#endif /* IGNIS_SINK_SERVER_H */
