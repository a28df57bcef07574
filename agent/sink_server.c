// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http.h"
#include "log.h"
#include "metrics.h"
#include "options.h"
#include "profile.h"
#include "pyroscope.h"
#include "sink_server.h"
#include "split.h"
#include "targets.h"
#include "uploader.h"

#define MAX_SECRET_BYTES 4096
#define GZIP_LEVEL	 6
/* Backoff between 0.5 s and 5 min, as Grafana Alloy's pyroscope.write does. */
#define BACKOFF_MIN_NS (500 * NSEC_PER_MSEC)
#define BACKOFF_MAX_NS (300 * NSEC_PER_SEC)

struct server_sink {
	struct targets *targets;
	struct uploader *uploader;
	struct http_opts http;
	struct pyroscope_opts pyro;
	struct split_opts split;
	char *password; /* wiped at free */
	uint64_t profiles_split, samples_folded;
};

static void *sender_open(void *ctx)
{
	return pyroscope__new(ctx);
}

static void sender_close(void *sender)
{
	pyroscope__free(sender);
}

static void sender_send(void *sender, const struct upload *u, const atomic_bool *abort,
			struct send_result *r)
{
	pyroscope__send(sender, u, abort, r);
}

/* A secret from a file: one line, at most MAX_SECRET_BYTES. NULL after printing why. */
static char *read_secret(const char *path, const char *what)
{
	char buf[MAX_SECRET_BYTES + 1];
	struct stat st;
	ssize_t n;
	size_t len;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "ignis: %s %s: cannot read it: %s\n", what, path, strerror(errno));
		return NULL;
	}
	if (!fstat(fd, &st) && (st.st_mode & S_IROTH))
		pr_warn("%s %s is readable by every user: make it 0600 or 0640", what, path);
	n = read(fd, buf, MAX_SECRET_BYTES + 1);
	close(fd);
	if (n < 0 || n > MAX_SECRET_BYTES) {
		fprintf(stderr, "ignis: %s %s: %s\n", what, path,
			n < 0 ? strerror(errno) : "longer than 4096 bytes");
		return NULL;
	}
	buf[n] = '\0';
	len = strcspn(buf, "\r\n");
	buf[len] = '\0';
	if (!len) {
		fprintf(stderr, "ignis: %s %s is empty\n", what, path);
		return NULL;
	}
	return strdup(buf);
}

static bool readable_file(const char *path, const char *flag)
{
	if (!path || !access(path, R_OK))
		return true;
	fprintf(stderr, "ignis: --%s %s: cannot read it: %s\n", flag, path, strerror(errno));
	return false;
}

/* Settings that only make sense together. Prints what to fix; returns false. */
static bool check(const struct agent_config *cfg)
{
	if (!readable_file(cfg->tls_ca_file, "tls-ca-file") ||
	    !readable_file(cfg->tls_cert_file, "tls-cert-file") ||
	    !readable_file(cfg->tls_key_file, "tls-key-file") ||
	    !readable_file(cfg->bearer_token_file, "bearer-token-file"))
		return false;
	if (!cfg->tls_cert_file != !cfg->tls_key_file) {
		fprintf(stderr, "ignis: --tls-cert-file and --tls-key-file go together\n");
		return false;
	}
	if ((cfg->basic_auth_password || cfg->basic_auth_password_file) && !cfg->basic_auth_user) {
		fprintf(stderr, "ignis: a basic auth password needs --basic-auth-user\n");
		return false;
	}
	if (cfg->basic_auth_password && cfg->basic_auth_password_file) {
		fprintf(stderr, "ignis: give the basic auth password once: either "
				"--basic-auth-password-file or basic_auth_password\n");
		return false;
	}
	if (cfg->basic_auth_user && !cfg->basic_auth_password && !cfg->basic_auth_password_file) {
		fprintf(stderr, "ignis: --basic-auth-user needs a password: "
				"--basic-auth-password-file FILE or IGNIS_BASIC_AUTH_PASSWORD\n");
		return false;
	}
	if (cfg->basic_auth_user && cfg->bearer_token_file) {
		fprintf(stderr, "ignis: choose basic auth or --bearer-token-file, not both\n");
		return false;
	}
	if ((cfg->tls_ca_file || cfg->tls_cert_file || cfg->tls_insecure) &&
	    strncmp(cfg->server_url, "https://", 8)) {
		fprintf(stderr, "ignis: TLS settings given, but --server-url %s is not https://\n",
			cfg->server_url);
		return false;
	}
	return true;
}

struct server_sink *server_sink__new(const struct agent_config *cfg, const char *hostname)
{
	struct server_sink *s = calloc(1, sizeof(*s));
	struct targets_opts to = {
		.hostname = hostname,
		.rules = cfg->service_name_rules,
		.nr_rules = cfg->nr_service_name_rules,
		.labels = cfg->labels,
		.nr_labels = cfg->nr_labels,
	};
	struct uploader_opts uo = { 0 };
	int err = EINVAL;

	if (!s)
		return NULL;
	if (!check(cfg))
		goto err_out;
	if (cfg->basic_auth_password_file) {
		s->password =
			read_secret(cfg->basic_auth_password_file, "--basic-auth-password-file");
		if (!s->password)
			goto err_out;
	} else if (cfg->basic_auth_password) {
		s->password = strdup(cfg->basic_auth_password);
		if (!s->password) {
			err = ENOMEM;
			goto err_out;
		}
	}
	if (cfg->tls_insecure)
		pr_warn("TLS VERIFICATION IS OFF (--tls-insecure-skip-verify): anyone between this "
			"host and %s can read and change the profiles and the credentials sent",
			cfg->server_url);
	if ((s->password || cfg->bearer_token_file) && !strncmp(cfg->server_url, "http://", 7))
		pr_warn("credentials go to %s in clear text: use https://", cfg->server_url);

	s->targets = targets__new(&to);
	if (!s->targets) {
		err = errno;
		goto err_out;
	}
	s->http.connect_timeout_ms = cfg->upload_connect_timeout_sec * 1000;
	s->http.timeout_ms = cfg->upload_timeout_sec * 1000;
	s->http.ca_file = cfg->tls_ca_file;
	s->http.cert_file = cfg->tls_cert_file;
	s->http.key_file = cfg->tls_key_file;
	s->http.insecure = cfg->tls_insecure;
	s->http.basic_user = cfg->basic_auth_user;
	s->http.basic_password = s->password;
	s->http.bearer_token_file = cfg->bearer_token_file;
	s->http.tenant_id = cfg->tenant_id;
	s->http.headers = cfg->headers;
	s->http.nr_headers = cfg->nr_headers;
	s->pyro.url = cfg->server_url;
	s->pyro.api = cfg->pyroscope_ingest ? PYROSCOPE_INGEST : PYROSCOPE_PUSH;
	s->pyro.http = &s->http;
	s->split.sample_labels = (const char *const *)cfg->sample_labels;
	s->split.nr_sample_labels = cfg->nr_sample_labels;
	s->split.max_samples = cfg->upload_max_samples;
	s->split.max_bytes = cfg->upload_max_bytes;
	s->split.gzip_level = GZIP_LEVEL;

	uo.workers = cfg->upload_concurrency;
	uo.queue_max_bytes = cfg->queue_max_bytes;
	uo.spool_dir = cfg->spool_dir;
	uo.spool_max_bytes = cfg->spool_max_bytes;
	uo.max_age_ns = cfg->upload_max_age_sec * NSEC_PER_SEC;
	uo.backoff_min_ns = BACKOFF_MIN_NS;
	uo.backoff_max_ns = BACKOFF_MAX_NS;
	uo.sender = (struct sender_ops){ sender_open, sender_close, sender_send, &s->pyro };
	s->uploader = uploader__new(&uo);
	if (!s->uploader) {
		err = errno;
		if (err == EBUSY)
			fprintf(stderr,
				"ignis: --spool-dir %s is in use by another ignis: give each "
				"agent its own\n",
				cfg->spool_dir);
		else
			fprintf(stderr, "ignis: cannot start uploads%s%s: %s\n",
				cfg->spool_dir ? " with --spool-dir " : "",
				cfg->spool_dir ? cfg->spool_dir : "", strerror(err));
		goto err_out;
	}
	pr_info("sending profiles to %s (%s API)%s%s", cfg->server_url,
		cfg->pyroscope_ingest ? "ingest" : "push", cfg->spool_dir ? ", spool in " : "",
		cfg->spool_dir ? cfg->spool_dir : "");
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

void server_sink__account(struct server_sink *s, struct metrics_snapshot *snap)
{
	struct uploader_stats st;

	uploader__stats(s->uploader, &st);
	snap->profiles_sent = st.sent;
	snap->profile_bytes_sent = st.bytes_sent;
	memcpy(snap->upload_errors, st.errors, sizeof(snap->upload_errors));
	memcpy(snap->profiles_dropped, st.dropped, sizeof(snap->profiles_dropped));
	snap->upload_retries = st.retries;
	snap->upload_backoff_seconds = st.backoff_sec;
	snap->queue_profiles = st.queued;
	snap->queue_bytes = st.queue_bytes;
	snap->spool_bytes = st.spool_bytes;
	snap->profiles_split = s->profiles_split;
	snap->samples_folded = s->samples_folded;
}
