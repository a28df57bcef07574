// SPDX-License-Identifier: Apache-2.0
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "metrics.h"

static const double drain_bounds[METRICS_DRAIN_BUCKETS] = {
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

struct metrics {
	struct MHD_Daemon *daemon;
	pthread_mutex_t lock;
	struct metrics_snapshot snap;
	char version[64];
};

void metrics_observe_drain(struct metrics_snapshot *snap, double seconds)
{
	size_t i;

	for (i = 0; i < METRICS_DRAIN_BUCKETS; i++)
		if (seconds <= drain_bounds[i])
			snap->drain_buckets[i]++;
	snap->drain_count++;
	snap->drain_seconds_sum += seconds;
}

bool metrics_healthy(const struct metrics_snapshot *snap, uint64_t now_ns, char *reason,
		     size_t size)
{
	uint64_t deadline = 3 * snap->interval_ns + 10 * NSEC_PER_SEC;

	if (!snap->c.v[CNT_CPUS]) {
		snprintf(reason, size, "BPF is attached to no CPU");
		return false;
	}
	if (snap->c.v[CNT_CPUS_DETACHED]) {
		snprintf(reason, size, "the BPF link of %llu CPU(s) is gone",
			 (unsigned long long)snap->c.v[CNT_CPUS_DETACHED]);
		return false;
	}
	if (now_ns - snap->last_drain_ns > deadline) {
		snprintf(reason, size, "no window drained for %llu s",
			 (unsigned long long)((now_ns - snap->last_drain_ns) / NSEC_PER_SEC));
		return false;
	}
	snprintf(reason, size, "ok");
	return true;
}

/* The agent process's own figures, read at scrape time. */
struct self_stats {
	double cpu_seconds;
	uint64_t rss_bytes;
	double start_time;
	uint64_t open_fds;
	uint64_t max_fds;
};

static void read_self(struct self_stats *st)
{
	long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	unsigned long long utime = 0, stime = 0, start = 0, rss = 0;
	char buf[1024], *p;
	struct rlimit rl;
	struct dirent *de;
	FILE *f;
	DIR *d;

	memset(st, 0, sizeof(*st));
	f = fopen("/proc/self/stat", "re");
	if (f) {
		if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) &&
		    sscanf(p + 2,
			   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d "
			   "%*d %*d %*d %llu %*u %llu",
			   &utime, &stime, &start, &rss) == 4) {
			st->cpu_seconds = (double)(utime + stime) / (double)tck;
			st->rss_bytes = rss * (uint64_t)page;
			st->start_time = (double)start / (double)tck;
		}
		fclose(f);
	}
	/* start_time above is since boot: make it Unix time. */
	f = fopen("/proc/stat", "re");
	if (f) {
		while (fgets(buf, sizeof(buf), f))
			if (!strncmp(buf, "btime ", 6))
				st->start_time += strtod(buf + 6, NULL);
		fclose(f);
	}
	d = opendir("/proc/self/fd");
	if (d) {
		while ((de = readdir(d)))
			st->open_fds += de->d_name[0] != '.';
		closedir(d);
		st->open_fds--; /* the directory itself */
	}
	if (!getrlimit(RLIMIT_NOFILE, &rl))
		st->max_fds = rl.rlim_cur;
}

static void metric(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

#define U64(v) ((unsigned long long)(v))

/* One family of the counter table: its help and type once, then each of its rows. */
static void family(FILE *f, const struct counters *c, size_t first, bool *done)
{
	const struct stat_def *d = &stat_defs[first];
	bool counter = d->kind == STAT_KIND_SUM || d->kind == STAT_KIND_TOTAL;
	size_t i;

	metric(f, d->metric, counter ? "counter" : "gauge", d->help);
	for (i = first; i < CNT_NR; i++) {
		if (strcmp(stat_defs[i].metric, d->metric))
			continue;
		done[i] = true;
		fprintf(f, "%s%s%s%s ", d->metric, stat_defs[i].label[0] ? "{" : "",
			stat_defs[i].label, stat_defs[i].label[0] ? "}" : "");
		/* The table keeps time in nanoseconds; Prometheus's base unit is the second. */
		if (strstr(d->metric, "_seconds"))
			fprintf(f, "%.9f\n", (double)c->v[i] / 1e9);
		else
			fprintf(f, "%llu\n", U64(c->v[i]));
	}
}

long metrics_format(const struct metrics_snapshot *s, const char *version, char **out)
{
	struct self_stats self;
	bool done[CNT_NR] = { false };
	size_t len = 0;
	FILE *f;
	size_t i;

	*out = NULL;
	f = open_memstream(out, &len);
	if (!f)
		return -ENOMEM;
	read_self(&self);

	metric(f, "ignis_build_info", "gauge", "The running version of ignis.");
	fprintf(f, "ignis_build_info{version=\"%s\"} 1\n", version);
	for (i = 0; i < CNT_NR; i++)
		if (!done[i])
			family(f, &s->c, i, done);

	metric(f, "ignis_sampling_rate_hertz", "gauge",
	       "Samples per second per CPU in the last window.");
	fprintf(f, "ignis_sampling_rate_hertz %.3f\n", s->sampling_rate_hz);
	metric(f, "ignis_unwind_table_build_seconds_total", "counter",
	       "Time spent building unwind tables (on their own thread).");
	fprintf(f, "ignis_unwind_table_build_seconds_total %.6f\n", s->unwind_build_seconds);
	metric(f, "ignis_upload_backoff_seconds", "gauge",
	       "Pause before the next upload attempt after failures; 0 when none.");
	fprintf(f, "ignis_upload_backoff_seconds %.3f\n", s->upload_backoff_seconds);
	metric(f, "ignis_drain_duration_seconds", "histogram",
	       "Time to drain, symbolize, encode and write one window.");
	for (i = 0; i < METRICS_DRAIN_BUCKETS; i++)
		fprintf(f, "ignis_drain_duration_seconds_bucket{le=\"%g\"} %llu\n", drain_bounds[i],
			U64(s->drain_buckets[i]));
	fprintf(f, "ignis_drain_duration_seconds_bucket{le=\"+Inf\"} %llu\n", U64(s->drain_count));
	fprintf(f, "ignis_drain_duration_seconds_sum %.6f\n", s->drain_seconds_sum);
	fprintf(f, "ignis_drain_duration_seconds_count %llu\n", U64(s->drain_count));
	metric(f, "ignis_last_drain_age_seconds", "gauge",
	       "Time since the last window was drained.");
	fprintf(f, "ignis_last_drain_age_seconds %.3f\n",
		s->last_drain_ns ? (double)(now_mono_ns() - s->last_drain_ns) / 1e9 : 0.0);

	metric(f, "process_cpu_seconds_total", "counter", "User and system CPU time, seconds.");
	fprintf(f, "process_cpu_seconds_total %.2f\n", self.cpu_seconds);
	metric(f, "process_resident_memory_bytes", "gauge", "Resident memory, bytes.");
	fprintf(f, "process_resident_memory_bytes %llu\n", U64(self.rss_bytes));
	metric(f, "process_start_time_seconds", "gauge", "Start time, seconds since the epoch.");
	fprintf(f, "process_start_time_seconds %.2f\n", self.start_time);
	metric(f, "process_open_fds", "gauge", "Open file descriptors.");
	fprintf(f, "process_open_fds %llu\n", U64(self.open_fds));
	metric(f, "process_max_fds", "gauge", "The open-files limit.");
	fprintf(f, "process_max_fds %llu\n", U64(self.max_fds));

	if (fclose(f)) {
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	return (long)len;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status, char *body,
			     size_t len, const char *type)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", type);
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **con_cls)
{
	struct metrics *m = cls;
	struct metrics_snapshot snap;
	char reason[128], *body = NULL;
	long len;
	bool ok;

	(void)version, (void)upload_data, (void)con_cls;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, strdup("GET only\n"), 9,
			     "text/plain");
	if (*upload_data_size)
		return MHD_NO;
	pthread_mutex_lock(&m->lock);
	snap = m->snap;
	pthread_mutex_unlock(&m->lock);

	if (!strcmp(url, "/metrics")) {
		len = metrics_format(&snap, m->version, &body);
		if (len < 0)
			return MHD_NO;
		return reply(conn, MHD_HTTP_OK, body, (size_t)len,
			     "text/plain; version=0.0.4; charset=utf-8");
	}
	if (!strcmp(url, "/healthz")) {
		ok = metrics_healthy(&snap, now_mono_ns(), reason, sizeof(reason));
		if (asprintf(&body, "%s\n", reason) < 0)
			return MHD_NO;
		return reply(conn, ok ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, body,
			     strlen(body), "text/plain");
	}
	return reply(conn, MHD_HTTP_NOT_FOUND, strdup("try /metrics or /healthz\n"), 25,
		     "text/plain");
}

/* "HOST:PORT", "[V6]:PORT", ":PORT" to a socket address. */
static int resolve(const char *address, struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE | AI_NUMERICSERV,
				  .ai_socktype = SOCK_STREAM },
			*res = NULL;
	const char *colon = strrchr(address, ':');
	char host[256];
	size_t n;
	int err;

	if (!colon)
		return -EINVAL;
	n = (size_t)(colon - address);
	if (n >= sizeof(host))
		return -EINVAL;
	memcpy(host, address, n);
	host[n] = '\0';
	if (host[0] == '[' && n > 1 && host[n - 1] == ']') {
		memmove(host, host + 1, n - 2);
		host[n - 2] = '\0';
	}
	err = getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &res);
	if (err || !res)
		return -EINVAL;
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

struct metrics *metrics__new(const char *address, const char *version)
{
	struct metrics *m = calloc(1, sizeof(*m));
	struct sockaddr_storage ss;
	socklen_t sslen;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD;
	int err;

	if (!m)
		return NULL;
	pthread_mutex_init(&m->lock, NULL);
	snprintf(m->version, sizeof(m->version), "%s", version);
	m->snap.last_drain_ns = now_mono_ns();
	err = resolve(address, &ss, &sslen);
	if (err) {
		pr_err("--metrics-address %s: cannot resolve that address", address);
		goto err_out;
	}
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* libmicrohttpd binds at start: a taken port fails here, with errno set. */
	errno = 0;
	m->daemon = MHD_start_daemon(flags, 0, NULL, NULL, handle, m, MHD_OPTION_SOCK_ADDR, &ss,
				     MHD_OPTION_CONNECTION_LIMIT, 16U,
				     MHD_OPTION_CONNECTION_TIMEOUT, 10U, MHD_OPTION_END);
	if (!m->daemon) {
		err = errno ? -errno : -EADDRINUSE;
		pr_err("--metrics-address %s: cannot listen there: %s; pick another address",
		       address, strerror(-err));
		goto err_out;
	}
	return m;
err_out:
	pthread_mutex_destroy(&m->lock);
	free(m);
	errno = -err;
	return NULL;
}

void metrics__free(struct metrics *m)
{
	if (!m)
		return;
	if (m->daemon)
		MHD_stop_daemon(m->daemon);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

void metrics__publish(struct metrics *m, const struct metrics_snapshot *snap)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->snap = *snap;
	pthread_mutex_unlock(&m->lock);
}
