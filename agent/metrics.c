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

static const char *const upload_codes[METRICS_UPLOAD_CODES] = {
	[UPLOAD_ERR_NETWORK] = "network", [UPLOAD_ERR_4XX] = "4xx", [UPLOAD_ERR_400] = "400",
	[UPLOAD_ERR_401] = "401",	  [UPLOAD_ERR_408] = "408", [UPLOAD_ERR_413] = "413",
	[UPLOAD_ERR_429] = "429",	  [UPLOAD_ERR_5XX] = "5xx",
};

const char *upload_drop_name(enum upload_drop reason)
{
	static const char *const names[METRICS_DROP_REASONS] = {
		[DROP_QUEUE_FULL] = "queue_full",   [DROP_TOO_OLD] = "too_old",
		[DROP_REJECTED] = "rejected",	    [DROP_SHUTDOWN] = "shutdown",
		[DROP_SPOOL_ERROR] = "spool_error",
	};

	return reason < METRICS_DROP_REASONS ? names[reason] : "unknown";
}

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

	if (!snap->cpus) {
		snprintf(reason, size, "BPF is attached to no CPU");
		return false;
	}
	if (snap->cpus_detached) {
		snprintf(reason, size, "the BPF link of %u CPU(s) is gone", snap->cpus_detached);
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

long metrics_format(const struct metrics_snapshot *s, const char *version, char **out)
{
	struct self_stats self;
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

	metric(f, "ignis_samples_total", "counter", "Samples taken by the BPF program.");
	fprintf(f, "ignis_samples_total %llu\n", U64(s->samples));
	metric(f, "ignis_samples_idle_total", "counter", "Samples of idle CPUs, counted only.");
	fprintf(f, "ignis_samples_idle_total %llu\n", U64(s->samples_idle));
	metric(f, "ignis_samples_filtered_total", "counter",
	       "Samples outside --pid, or of kernel threads under --no-kernel.");
	fprintf(f, "ignis_samples_filtered_total %llu\n", U64(s->samples_filtered));
	metric(f, "ignis_samples_profiled_total", "counter", "Samples in the profiles.");
	fprintf(f, "ignis_samples_profiled_total %llu\n", U64(s->samples_profiled));
	metric(f, "ignis_samples_dropped_total", "counter", "Samples lost, by reason.");
	fprintf(f, "ignis_samples_dropped_total{reason=\"stacks_map_full\"} %llu\n",
		U64(s->dropped_stacks_full));
	fprintf(f, "ignis_samples_dropped_total{reason=\"counts_map_full\"} %llu\n",
		U64(s->dropped_counts_full));
	fprintf(f, "ignis_samples_dropped_total{reason=\"no_generation\"} %llu\n",
		U64(s->dropped_no_generation));
	fprintf(f, "ignis_samples_dropped_total{reason=\"profile_size_cap\"} %llu\n",
		U64(s->dropped_profile_cap));
	metric(f, "ignis_stack_walk_errors_total", "counter",
	       "Samples kept without one of their stacks: the walk failed.");
	fprintf(f, "ignis_stack_walk_errors_total{stack=\"user\"} %llu\n",
		U64(s->user_walk_errors));
	fprintf(f, "ignis_stack_walk_errors_total{stack=\"kernel\"} %llu\n",
		U64(s->kernel_walk_errors));
	metric(f, "ignis_samples_truncated_total", "counter",
	       "Samples whose stack ends in [truncated].");
	fprintf(f, "ignis_samples_truncated_total %llu\n", U64(s->stacks_truncated));
	metric(f, "ignis_samples_without_mappings_total", "counter",
	       "Samples of processes that exited before their mappings were captured.");
	fprintf(f, "ignis_samples_without_mappings_total %llu\n", U64(s->samples_without_mappings));
	metric(f, "ignis_frames_unknown_total", "counter", "Addresses in no mapping ([unknown]).");
	fprintf(f, "ignis_frames_unknown_total %llu\n", U64(s->frames_unknown));
	metric(f, "ignis_process_events_lost_total", "counter",
	       "Process events lost to a full ring buffer (recovered by the rescan).");
	fprintf(f, "ignis_process_events_lost_total %llu\n", U64(s->process_events_lost));
	metric(f, "ignis_sampling_rate_hertz", "gauge",
	       "Samples per second per CPU in the last window.");
	fprintf(f, "ignis_sampling_rate_hertz %.3f\n", s->sampling_rate_hz);
	metric(f, "ignis_unique_stacks", "gauge", "Distinct stacks in the last window.");
	fprintf(f, "ignis_unique_stacks %llu\n", U64(s->unique_stacks));
	metric(f, "ignis_cpus_sampled", "gauge", "CPUs with an attached perf event.");
	fprintf(f, "ignis_cpus_sampled %u\n", s->cpus);
	metric(f, "ignis_bpf_map_bytes", "gauge", "Kernel memory pinned by the BPF maps.");
	fprintf(f, "ignis_bpf_map_bytes %llu\n", U64(s->bpf_map_bytes));

	metric(f, "ignis_processes_tracked", "gauge", "Process images held by the agent.");
	fprintf(f, "ignis_processes_tracked %llu\n", U64(s->processes_tracked));
	metric(f, "ignis_process_captures_total", "counter", "Captures of process mappings.");
	fprintf(f, "ignis_process_captures_total{result=\"ok\"} %llu\n", U64(s->captures));
	fprintf(f, "ignis_process_captures_total{result=\"error\"} %llu\n", U64(s->capture_errors));
	metric(f, "ignis_symbolizations_total", "counter", "Address lookups in symbol tables.");
	fprintf(f, "ignis_symbolizations_total{result=\"hit\"} %llu\n", U64(s->symbol_hits));
	fprintf(f, "ignis_symbolizations_total{result=\"miss\"} %llu\n", U64(s->symbol_misses));
	fprintf(f, "ignis_symbolizations_total{result=\"error\"} %llu\n", U64(s->symbol_errors));
	metric(f, "ignis_symbol_cache_bytes", "gauge", "Memory held by cached symbol tables.");
	fprintf(f, "ignis_symbol_cache_bytes %llu\n", U64(s->symbol_cache_bytes));
	metric(f, "ignis_symbol_tables_loaded_total", "counter", "Symbol tables parsed.");
	fprintf(f, "ignis_symbol_tables_loaded_total %llu\n", U64(s->symbol_tables_loaded));
	metric(f, "ignis_symbol_tables_evicted_total", "counter",
	       "Symbol tables dropped to stay within the cache budget.");
	fprintf(f, "ignis_symbol_tables_evicted_total %llu\n", U64(s->symbol_tables_evicted));
	metric(f, "ignis_symbol_address_cache_hits_total", "counter",
	       "Lookups answered from addresses resolved through DWARF before.");
	fprintf(f, "ignis_symbol_address_cache_hits_total %llu\n", U64(s->symbol_addr_hits));
	metric(f, "ignis_debug_files_total", "counter",
	       "Separate debug files for binaries without DWARF: used, none found, or refused "
	       "(another build).");
	fprintf(f, "ignis_debug_files_total{result=\"found\"} %llu\n", U64(s->debug_files_found));
	fprintf(f, "ignis_debug_files_total{result=\"missing\"} %llu\n",
		U64(s->debug_files_missing));
	fprintf(f, "ignis_debug_files_total{result=\"refused\"} %llu\n",
		U64(s->debug_files_refused));
	metric(f, "ignis_jit_maps_read_total", "counter",
	       "JIT symbol maps (/tmp/perf-PID.map) read.");
	fprintf(f, "ignis_jit_maps_read_total %llu\n", U64(s->jit_maps_read));
	metric(f, "ignis_jit_map_lines_malformed_total", "counter",
	       "Lines of JIT symbol maps skipped as malformed.");
	fprintf(f, "ignis_jit_map_lines_malformed_total %llu\n", U64(s->jit_map_lines_malformed));

	metric(f, "ignis_unwind_samples_total", "counter",
	       "User stacks unwound with unwind tables (.eh_frame) in BPF.");
	fprintf(f, "ignis_unwind_samples_total %llu\n", U64(s->unwind_samples));
	metric(f, "ignis_unwind_no_tables_total", "counter",
	       "Samples of processes without unwind tables (yet), walked with frame pointers.");
	fprintf(f, "ignis_unwind_no_tables_total %llu\n", U64(s->unwind_no_tables));
	metric(f, "ignis_unwind_executable_only_total", "counter",
	       "Samples of processes whose tables were not published yet, unwound with their "
	       "executable's table (from an earlier process of the same file), frame pointers "
	       "elsewhere.");
	fprintf(f, "ignis_unwind_executable_only_total %llu\n", U64(s->unwind_exe_only));
	metric(f, "ignis_unwind_frame_pointer_frames_total", "counter",
	       "Frames the table unwinder walked with the frame pointer: in no table (JIT, "
	       "anonymous code) or in code its table has no CFI for.");
	fprintf(f, "ignis_unwind_frame_pointer_frames_total{reason=\"no_table\"} %llu\n",
		U64(s->unwind_fp_frames));
	fprintf(f, "ignis_unwind_frame_pointer_frames_total{reason=\"no_cfi\"} %llu\n",
		U64(s->unwind_no_cfi_frames));
	metric(f, "ignis_unwind_truncated_total", "counter",
	       "Stacks the table unwinder stopped before the outermost frame, by reason.");
	{
		static const char *const reasons[] = { "read_fault",	   "depth_limit",
						       "unsupported_rule", "tables_changed",
						       "tail_call",	   "chain_lost" };
		size_t r;

		for (r = 0; r < 6; r++)
			fprintf(f, "ignis_unwind_truncated_total{reason=\"%s\"} %llu\n", reasons[r],
				U64(s->unwind_cut[r]));
	}
	metric(f, "ignis_unwind_tables", "gauge", "Unwind tables in the BPF row map.");
	fprintf(f, "ignis_unwind_tables %llu\n", U64(s->unwind_tables));
	metric(f, "ignis_unwind_table_rows", "gauge", "Rows in the BPF row map (8 bytes each).");
	fprintf(f, "ignis_unwind_table_rows %llu\n", U64(s->unwind_rows));
	metric(f, "ignis_unwind_table_rows_capacity", "gauge", "Rows the BPF row map can hold.");
	fprintf(f, "ignis_unwind_table_rows_capacity %llu\n", U64(s->unwind_row_capacity));
	metric(f, "ignis_unwind_tables_built_total", "counter", "Unwind tables built from CFI.");
	fprintf(f, "ignis_unwind_tables_built_total %llu\n", U64(s->unwind_tables_built));
	metric(f, "ignis_unwind_table_errors_total", "counter",
	       "Objects left without a table: unreadable CFI, or too large for the row map.");
	fprintf(f, "ignis_unwind_table_errors_total %llu\n", U64(s->unwind_table_errors));
	metric(f, "ignis_unwind_tables_evicted_total", "counter",
	       "Unused tables dropped from the row map to make room.");
	fprintf(f, "ignis_unwind_tables_evicted_total %llu\n", U64(s->unwind_tables_evicted));
	metric(f, "ignis_unwind_processes", "gauge", "Processes unwound with tables.");
	fprintf(f, "ignis_unwind_processes %llu\n", U64(s->unwind_processes));
	metric(f, "ignis_unwind_executables", "gauge",
	       "Main executables whose table applies to a process before it is published.");
	fprintf(f, "ignis_unwind_executables %llu\n", U64(s->unwind_executables));
	metric(f, "ignis_unwind_table_build_seconds_total", "counter",
	       "Time spent building unwind tables (on their own thread).");
	fprintf(f, "ignis_unwind_table_build_seconds_total %.6f\n", s->unwind_build_seconds);

	metric(f, "ignis_windows_total", "counter", "Windows drained.");
	fprintf(f, "ignis_windows_total %llu\n", U64(s->windows));
	metric(f, "ignis_profiles_written_total", "counter", "Profiles written to --output-dir.");
	fprintf(f, "ignis_profiles_written_total %llu\n", U64(s->profiles_written));
	metric(f, "ignis_profile_written_bytes_total", "counter", "Bytes written to --output-dir.");
	fprintf(f, "ignis_profile_written_bytes_total %llu\n", U64(s->profile_bytes_written));
	metric(f, "ignis_profile_write_errors_total", "counter",
	       "Profiles that could not be written.");
	fprintf(f, "ignis_profile_write_errors_total %llu\n", U64(s->profile_write_errors));
	metric(f, "ignis_profiles_sent_total", "counter", "Profiles accepted by the server.");
	fprintf(f, "ignis_profiles_sent_total %llu\n", U64(s->profiles_sent));
	metric(f, "ignis_profile_sent_bytes_total", "counter", "Bytes of profiles sent.");
	fprintf(f, "ignis_profile_sent_bytes_total %llu\n", U64(s->profile_bytes_sent));
	metric(f, "ignis_upload_errors_total", "counter", "Failed uploads, by class.");
	for (i = 0; i < METRICS_UPLOAD_CODES; i++)
		fprintf(f, "ignis_upload_errors_total{code=\"%s\"} %llu\n", upload_codes[i],
			U64(s->upload_errors[i]));
	metric(f, "ignis_upload_retries_total", "counter",
	       "Failed uploads that are retried (network errors, 408, 429, 5xx).");
	fprintf(f, "ignis_upload_retries_total %llu\n", U64(s->upload_retries));
	metric(f, "ignis_upload_backoff_seconds", "gauge",
	       "Pause before the next upload attempt after failures; 0 when none.");
	fprintf(f, "ignis_upload_backoff_seconds %.3f\n", s->upload_backoff_seconds);
	metric(f, "ignis_profiles_dropped_total", "counter",
	       "Profiles given up, by reason: queue and spool full, older than the server "
	       "accepts, refused by the server, queued at exit without a spool, spool damage.");
	for (i = 0; i < METRICS_DROP_REASONS; i++)
		fprintf(f, "ignis_profiles_dropped_total{reason=\"%s\"} %llu\n",
			upload_drop_name((enum upload_drop)i), U64(s->profiles_dropped[i]));
	metric(f, "ignis_profiles_split_total", "counter",
	       "Server profiles split by process to stay under the server's limits.");
	fprintf(f, "ignis_profiles_split_total %llu\n", U64(s->profiles_split));
	metric(f, "ignis_samples_folded_total", "counter",
	       "Samples folded into [other stacks] to stay under the server's limits.");
	fprintf(f, "ignis_samples_folded_total %llu\n", U64(s->samples_folded));
	metric(f, "ignis_upload_queue_profiles", "gauge", "Profiles waiting to be sent.");
	fprintf(f, "ignis_upload_queue_profiles %llu\n", U64(s->queue_profiles));
	metric(f, "ignis_upload_queue_bytes", "gauge", "Bytes of profiles waiting in memory.");
	fprintf(f, "ignis_upload_queue_bytes %llu\n", U64(s->queue_bytes));
	metric(f, "ignis_upload_spool_bytes", "gauge", "Bytes of profiles waiting on disk.");
	fprintf(f, "ignis_upload_spool_bytes %llu\n", U64(s->spool_bytes));

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
