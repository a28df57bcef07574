// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "operate/log.h"
#include "profile/profile.h"
#include "encoder.h"
#include "otlp.h"
#include "parca.h"
#include "pyroscope.h"
#include "sink_server.h"
#include "profile/split.h"
#include "profile/targets.h"
#include "uploader.h"

#define GZIP_LEVEL 6
/* Backoff between 0.5 s and 5 min, as Grafana Alloy's pyroscope.write does. */
#define BACKOFF_MIN_NS (500 * NSEC_PER_MSEC)
#define BACKOFF_MAX_NS (300 * NSEC_PER_SEC)

struct server_sink {
	struct targets *targets;
	struct uploader *uploader;
	struct http_opts http;
	const struct encoder_ops *encoder;
	struct encoder_opts enc;
	struct split_opts split;
	char *password; /* wiped at free */
	uint64_t profiles_split, samples_folded;
};

static const struct encoder_ops *const encoders[SERVER_PROTOCOLS] = {
	[SERVER_PYROSCOPE] = &pyroscope_encoder,
	[SERVER_PARCA] = &parca_encoder,
	[SERVER_OTLP] = &otlp_encoder,
};

/* The uploader's sender over the chosen encoder: one client per worker. */
struct sender {
	const struct encoder_ops *ops;
	void *client;
};

static void *sender_open(void *ctx)
{
	const struct server_sink *s = ctx;
	struct sender *snd = calloc(1, sizeof(*snd));

	if (!snd)
		return NULL;
	snd->ops = s->encoder;
	snd->client = s->encoder->open(&s->enc);
	if (!snd->client) {
		int err = errno;

		free(snd);
		errno = err;
		return NULL;
	}
	return snd;
}

static void sender_close(void *sender)
{
	struct sender *snd = sender;

	if (!snd)
		return;
	snd->ops->close(snd->client);
	free(snd);
}

static void sender_send(void *sender, const struct upload *u, const atomic_bool *abort,
			struct send_result *r)
{
	struct sender *snd = sender;

	snd->ops->send(snd->client, u, abort, r);
}

/* What the sink cannot work with; the configuration said what to fix before. */
static bool opts_usable(const struct server_sink_opts *o)
{
	return OPTS_VALID(o) && o->url && (unsigned int)o->protocol < SERVER_PROTOCOLS &&
	       (!strncmp(o->url, "http://", 7) || !strncmp(o->url, "https://", 8)) &&
	       !o->tls_cert_file == !o->tls_key_file &&
	       (!o->basic_auth_user || o->basic_auth_password);
}

static void set_up(struct server_sink *s, const struct server_sink_opts *o)
{
	s->http.connect_timeout_ms = o->connect_timeout_sec * 1000;
	s->http.timeout_ms = o->timeout_sec * 1000;
	s->http.ca_file = o->tls_ca_file;
	s->http.cert_file = o->tls_cert_file;
	s->http.key_file = o->tls_key_file;
	s->http.insecure = o->tls_insecure;
	s->http.basic_user = o->basic_auth_user;
	s->http.basic_password = s->password;
	s->http.bearer_token_file = o->bearer_token_file;
	s->http.tenant_id = o->tenant_id;
	s->http.headers = o->headers;
	s->http.nr_headers = o->nr_headers;
	s->encoder = encoders[o->protocol];
	s->enc.url = o->url;
	s->enc.pyroscope_ingest = o->ingest;
	s->enc.timeout_ms = s->http.timeout_ms;
	s->enc.http = &s->http;
	s->split.sample_labels = (const char *const *)o->sample_labels;
	s->split.nr_sample_labels = o->nr_sample_labels;
	s->split.max_samples = o->max_profile_samples;
	s->split.max_bytes = o->max_profile_bytes;
	s->split.gzip_level = GZIP_LEVEL;
}

struct server_sink *server_sink__new(const struct server_sink_opts *opts)
{
	struct server_sink *s;
	struct targets_opts to = { 0 };
	struct uploader_opts uo = { 0 };
	int err = ENOMEM;

	if (!opts_usable(opts)) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (opts->basic_auth_password) {
		s->password = strdup(opts->basic_auth_password);
		if (!s->password)
			goto err_out;
	}
	to.hostname = opts->hostname;
	to.rules = opts->service_name_rules;
	to.nr_rules = opts->nr_service_name_rules;
	to.labels = opts->labels;
	to.nr_labels = opts->nr_labels;
	to.container_id = opts->protocol == SERVER_OTLP;   /* container.id, a resource attribute */
	to.names_as_given = opts->protocol == SERVER_OTLP; /* attributes keep OTel's dots */
	s->targets = targets__new(&to);
	if (!s->targets) {
		err = errno;
		goto err_out;
	}
	set_up(s, opts);

	uo.workers = opts->workers;
	uo.queue_max_bytes = opts->queue_max_bytes;
	uo.spool_dir = opts->spool_dir;
	uo.spool_max_bytes = opts->spool_max_bytes;
	uo.max_age_ns = opts->max_age_sec * NSEC_PER_SEC;
	uo.backoff_min_ns = BACKOFF_MIN_NS;
	uo.backoff_max_ns = BACKOFF_MAX_NS;
	uo.sender = (struct sender_ops){ sender_open, sender_close, sender_send, s };
	s->uploader = uploader__new(&uo);
	if (!s->uploader) {
		err = errno;
		/* Not a setting's fault but the spool's state: said here, where it is known. */
		if (err == EBUSY)
			fprintf(stderr,
				"ignis: --spool-dir %s is in use by another ignis: give each "
				"agent its own\n",
				opts->spool_dir);
		else
			fprintf(stderr, "ignis: cannot start uploads%s%s: %s\n",
				opts->spool_dir ? " with --spool-dir " : "",
				opts->spool_dir ? opts->spool_dir : "", strerror(err));
		goto err_out;
	}
	if (opts->protocol == SERVER_OTLP)
		pr_warn("--server-protocol otlp is experimental: OpenTelemetry profiles are in "
			"development, sent as opentelemetry-proto " OTLP_PROTO_RELEASE
			" defines them; a Collector built for a release before v1.10.0 "
			"misreads or refuses them");
	pr_info("sending profiles to %s (%s%s)%s%s", opts->url, s->encoder->name,
		opts->protocol != SERVER_PYROSCOPE ? "" :
		opts->ingest			   ? ", ingest API" :
						     ", push API",
		opts->spool_dir ? ", spool in " : "", opts->spool_dir ? opts->spool_dir : "");
	return s;
err_out:
	server_sink__free(s, 0);
	errno = err;
	return NULL;
}

void server_sink__free(struct server_sink *s, uint64_t flush_ns)
{
	if (!s)
		return;
	uploader__free(s->uploader, flush_ns);
	targets__free(s->targets);
	if (s->password) {
		memset(s->password, 0, strlen(s->password));
		free(s->password);
	}
	free(s);
}

struct targets *server_sink__targets(struct server_sink *s)
{
	return s->targets;
}

int server_sink__send(struct server_sink *s, const struct profile *p, uint64_t seq,
		      struct server_window_stats *stats)
{
	struct split_result r = { 0 };
	size_t i;
	int err;

	memset(stats, 0, sizeof(*stats));
	err = profile_split(p, (uint32_t)targets__count(s->targets, seq), &s->split, &r);
	for (i = 0; i < r.nr; i++) {
		struct split_part *part = &r.parts[i];
		const struct target *t = targets__get(s->targets, seq, part->group);

		pr_debug("window %" PRIu64 ": %s: %" PRIu64 " samples, %zu bytes (%zu raw)%s", seq,
			 t->service_name, part->samples, part->len, part->raw_len,
			 part->folded ? ", some folded into [other stacks]" : "");
		stats->profiles++;
		stats->bytes += part->len;
		if (!i || part->group != r.parts[i - 1].group)
			stats->targets++;
		/* The queue takes the data whatever happens. */
		if (uploader__enqueue(s->uploader, t, p->opts.time_ns, p->opts.duration_ns,
				      part->data, part->len))
			pr_warn_ratelimited(3, 60, "window %" PRIu64 ": out of memory queueing %s",
					    seq, t->service_name);
		part->data = NULL;
	}
	stats->split = r.split_groups;
	stats->folded = r.folded_samples;
	s->profiles_split += r.split_groups;
	s->samples_folded += r.folded_samples;
	if (r.folded_samples)
		pr_warn_ratelimited(3, 300,
				    "window %" PRIu64 ": %" PRIu64 " samples folded into [other "
				    "stacks] to stay under the server's limits",
				    seq, r.folded_samples);
	split_result_fini(&r);
	return err;
}

void server_sink__stats(struct server_sink *s, struct server_sink_stats *stats)
{
	uploader__stats(s->uploader, &stats->upload);
	stats->profiles_split = s->profiles_split;
	stats->samples_folded = s->samples_folded;
}
