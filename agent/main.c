// SPDX-License-Identifier: Apache-2.0
/*
 * ignis: wiring, signals and the window clock.
 *
 * The main loop waits on the ring buffer of process events until the next window boundary;
 * there it flips the map generations, drains the idle one, symbolizes, writes the profile and
 * releases what the window held. SIGINT/SIGTERM flush the current window and exit 0; a second
 * signal exits at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <curl/curl.h>
#include <linux/types.h>
#include <systemd/sd-daemon.h>

#include "../bpf/profiler.h"
#include "../symbolizer/symbolizer.h"
#include "debuginfod.h"
#include "drain.h"
#include "kubernetes.h"
#include "log.h"
#include "metrics.h"
#include "options.h"
#include "pprof.h"
#include "procfs.h"
#include "proctab.h"
#include "profile.h"
#include "sampler.h"
#include "unwinder.h"
#include "sink_file.h"
#include "sink_server.h"
#include "targets.h"
#include "top.h"
#include "window.h"

#ifndef IGNIS_VERSION
#define IGNIS_VERSION "0.0.0"
#endif

/* Time between two captures of one process for an address outside its mappings. */
#define RECAPTURE_GAP_NS (1000 * NSEC_PER_MSEC)
/* Time between two PROC_EVENT_MMAP of one process, enforced in BPF. */
#define MMAP_EVENT_GAP_NS (250 * NSEC_PER_MSEC)
/* How often the counters are summarized at info level, and BPF's process table reconciled. */
#define SUMMARY_EVERY_NS (60 * NSEC_PER_SEC)
/* kallsyms is read again at most this often when kernel addresses stay unnamed. */
#define KALLSYMS_RELOAD_NS (300 * NSEC_PER_SEC)
#define GZIP_LEVEL	   6
/* The table unwinder: processes and their mappings it can hold. */
#define UNWIND_PROCESSES 8192
#define UNWIND_MAPPINGS	 (64 * 1024)
/* ... and the main executables it recognises before their process is published. */
#define UNWIND_EXECUTABLES 4096
/* At exit, how long queued profiles may take to reach the server (the rest is spooled). */
#define UPLOAD_FLUSH_NS (3 * NSEC_PER_SEC)

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	if (stop_requested)
		_exit(128 + sig);
	stop_requested = sig;
}

struct agent {
	struct agent_config *cfg;
	struct symbolizer *symbolizer;
	struct sym_object *vdso;
	struct proctab *proctab;
	struct sampler *sampler;
	struct window_builder *builder;
	struct file_sink *sink;	    /* NULL without a local folder */
	struct server_sink *server; /* NULL without --server-url */
	char hostname[256];
	char kernel_build_id[2 * 64 + 1];
	bool kernel_symbols;
	uint64_t kallsyms_loaded_ns;
	uint64_t seq; /* the window being recorded */
	uint64_t window_start_real;
	uint64_t window_start_mono;
	uint64_t summary_ns;		       /* CLOCK_MONOTONIC of the last summary */
	struct metrics *metrics;	       /* NULL without --metrics-address */
	struct kube *kube;		       /* NULL without --kubernetes */
	struct debuginfod_fetcher *debuginfod; /* NULL without --debuginfod-urls */
	struct unwinder *unwinder;	       /* NULL without the table unwinder */
	struct metrics_snapshot snap;	       /* totals since start, published after each window */
};

static void symbolizer_print(enum sym_log_level level, const char *fmt, va_list ap)
{
	enum log_level ours = (enum log_level)level;

	if (log_enabled(ours))
		log_vprintf(ours, fmt, ap);
}

static int on_proc_event(void *ctx, const struct ignis_proc_event *ev)
{
	struct agent *a = ctx;
	int err = proctab__handle_event(a->proctab, ev, a->seq);

	if (err && err != -ESRCH && err != -ENOENT)
		pr_debug("pid %u: event %u: %s", ev->tgid, ev->type, strerror(-err));
	/* Captures publish to the unwinder (on_captured); an image that is gone leaves it. */
	if (a->unwinder && ev->type == PROC_EVENT_EXEC)
		unwinder__remove_process(a->unwinder, ev->tgid, ev->start_time, &ev->exec_id);
	else if (a->unwinder && ev->type == PROC_EVENT_EXIT)
		unwinder__remove_process(a->unwinder, ev->tgid, ev->start_time, NULL);
	return 0;
}

/* The mappings of an image were (re)captured: its unwind tables follow. */
static void on_captured(void *ctx, struct proc_image *img)
{
	struct agent *a = ctx;

	if (a->unwinder && unwinder__add_process(a->unwinder, img))
		pr_debug("pid %u: no unwind tables: out of memory", img->id.tgid);
}

#define SERVICE_ACCOUNT "/var/run/secrets/kubernetes.io/serviceaccount"

/* The API server to use with --kubernetes: the flag, else the in-cluster service. Returns a
 * malloc'd URL, or NULL after saying what is missing. */
static char *kubernetes_url(const struct agent_config *cfg)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	char *url = NULL;

	if (cfg->kubernetes_api_url)
		return strdup(cfg->kubernetes_api_url);
	if (!host || !port) {
		fprintf(stderr, "ignis: --kubernetes: no API server: not in a pod "
				"(KUBERNETES_SERVICE_HOST unset); give --kubernetes-api-url\n");
		return NULL;
	}
	if (asprintf(&url, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port) < 0)
		return NULL;
	return url;
}

static int start_kubernetes(struct agent *a, const struct agent_config *cfg, const char *url)
{
	struct kube_opts ko = {
		.token_file = cfg->kubernetes_token_file ? cfg->kubernetes_token_file :
							   SERVICE_ACCOUNT "/token",
		.ca_file = cfg->kubernetes_ca_file ? cfg->kubernetes_ca_file :
						     SERVICE_ACCOUNT "/ca.crt",
		.node_name = cfg->node_name,
		.pod_labels = cfg->kubernetes_pod_labels,
		.nr_pod_labels = cfg->nr_kubernetes_pod_labels,
	};

	ko.api_url = url;
	a->kube = kube__new(&ko);
	if (!a->kube) {
		int err = -errno;

		pr_err("cannot start the Kubernetes client: %s", strerror(-err));
		return err;
	}
	pr_info("naming pods of node %s from the Kubernetes API", cfg->node_name);
	return 0;
}

/* --pid names processes: refuse ids that do not exist, or that are threads of another. */
static int check_pids(const struct agent_config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->nr_pids; i++) {
		unsigned int tgid = 0;
		char *status, *line;
		int fd = procfs_open_pid("/proc", cfg->pids[i]);
		long n;

		if (fd < 0) {
			fprintf(stderr, "ignis: --pid %u: no such process\n", cfg->pids[i]);
			return -ESRCH;
		}
		n = procfs_read_file(fd, "status", 65536, &status);
		close(fd);
		if (n < 0)
			continue; /* gone meanwhile: its samples simply never come */
		line = strstr(status, "\nTgid:");
		if (line)
			sscanf(line, "\nTgid: %u", &tgid);
		free(status);
		if (tgid && tgid != cfg->pids[i]) {
			fprintf(stderr,
				"ignis: --pid %u: is a thread of process %u; give the process "
				"id (--pid %u)\n",
				cfg->pids[i], tgid, tgid);
			return -EINVAL;
		}
	}
	return 0;
}

static long read_sysctl(const char *path)
{
	char *text;
	long n, v;

	n = procfs_read_file(AT_FDCWD, path, 64, &text);
	if (n < 0)
		return -1;
	v = strtol(text, NULL, 10);
	free(text);
	return v;
}

/* Say why /proc/kallsyms shows zeros (kallsyms_show_value() in kernel/kallsyms.c). */
static void explain_hidden_kallsyms(void)
{
	long kptr = read_sysctl("/proc/sys/kernel/kptr_restrict");
	long paranoid = read_sysctl("/proc/sys/kernel/perf_event_paranoid");

	if (kptr >= 2)
		pr_warn("kernel symbol addresses are hidden (kernel.kptr_restrict=%ld hides them "
			"from everyone): kernel frames stay unnamed; set kernel.kptr_restrict=1 "
			"and grant CAP_SYSLOG to name them",
			kptr);
	else
		pr_warn("kernel symbol addresses are hidden from this process "
			"(kernel.kptr_restrict=%ld, kernel.perf_event_paranoid=%ld): kernel frames "
			"stay unnamed; grant CAP_SYSLOG (or run as root) to name them",
			kptr, paranoid);
}

static void load_kallsyms(struct agent *a)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	int n;

	a->kallsyms_loaded_ns = now_mono_ns();
	if (!f) {
		pr_warn("cannot read /proc/kallsyms (%s): kernel frames stay unnamed",
			strerror(errno));
		return;
	}
	n = symbolizer__load_kallsyms(a->symbolizer, f);
	fclose(f);
	if (n == -EPERM) {
		explain_hidden_kallsyms();
		a->kernel_symbols = false;
	} else if (n < 0) {
		pr_warn("cannot parse /proc/kallsyms: %s; kernel frames stay unnamed",
			strerror(-n));
		a->kernel_symbols = false;
	} else {
		pr_debug("kallsyms: %d kernel text symbols", n);
		a->kernel_symbols = true;
	}
}

/* The vDSO is the same kernel image in every process: symbolize it from our own copy. */
static struct sym_object *open_vdso(struct symbolizer *s)
{
	char *maps, *line, *next;
	struct sym_object *o = NULL;
	long n;

	n = procfs_read_file(AT_FDCWD, "/proc/self/maps", 1 << 20, &maps);
	if (n < 0)
		return NULL;
	for (line = maps; line && *line; line = next) {
		struct procmaps_entry e;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (procmaps_parse_line(line, &e) || strcmp(e.path, "[vdso]"))
			continue;
		o = symbolizer__open_memory(s, (const void *)(uintptr_t)e.start, e.end - e.start,
					    "[vdso]");
		break;
	}
	free(maps);
	if (!o)
		pr_debug("no vDSO image: its frames stay unnamed");
	return o;
}

static void raise_fd_limit(void)
{
	struct rlimit rl;

	/* Each mapped binary keeps a descriptor open until its last window is drained. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			pr_debug("cannot raise the open-files limit: %s", strerror(errno));
	}
}

static uint64_t drops_of(const uint64_t *st)
{
	return st[STAT_DROP_NO_GEN] + st[STAT_DROP_STACKS_FULL] + st[STAT_DROP_COUNTS_FULL];
}

static int add_comments(struct profile *p, struct agent *a, const struct drained_window *dw,
			const struct window_stats *ws, uint64_t seq, double rate)
{
	const uint64_t *st = dw->stats;
	char line[512];
	int err;

	snprintf(line, sizeof(line), "ignis %s on %s, window %" PRIu64, IGNIS_VERSION, a->hostname,
		 seq);
	err = profile__comment(p, line);
	if (err)
		return err;
	snprintf(line, sizeof(line),
		 "samples %" PRIu64 " (%.1f Hz per CPU on %u CPUs): %" PRIu64 " idle, %" PRIu64
		 " filtered, %" PRIu64 " profiled, %" PRIu64 " dropped",
		 st[STAT_SAMPLES], rate, sampler__nr_cpus(a->sampler), st[STAT_IDLE],
		 st[STAT_FILTERED], ws->samples, drops_of(st));
	err = profile__comment(p, line);
	if (err)
		return err;
	snprintf(line, sizeof(line),
		 "stacks: %" PRIu64 " truncated (%" PRIu64 " broken frame-pointer chains), %" PRIu64
		 " with an unverifiable root, %" PRIu64 " unknown frames, %" PRIu64
		 " unnamed frames",
		 ws->truncated_stacks, ws->broken_chains, ws->root_unknown_stacks,
		 ws->unknown_frames, ws->unnamed_frames);
	return profile__comment(p, line);
}

static void log_window(struct agent *a, uint64_t seq, const struct drained_window *dw,
		       const struct window_stats *ws, uint64_t duration_ns, uint64_t fired,
		       uint64_t recorded, int64_t unaccounted, size_t bytes, const char *path)
{
	const uint64_t *st = dw->stats;

	pr_debug("window seq=%" PRIu64 " duration_ms=%" PRIu64 " cpus=%u samples=%" PRIu64
		 " clock_expected=%" PRIu64 " idle=%" PRIu64 " filtered=%" PRIu64
		 " recorded=%" PRIu64 " dropped=%" PRIu64 " stacks_full=%" PRIu64
		 " counts_full=%" PRIu64 " unaccounted=%" PRId64 " ustack_err=%" PRIu64
		 " kstack_err=%" PRIu64 " events_lost=%" PRIu64 " profiled=%" PRIu64
		 " processes=%" PRIu64 " no_image=%" PRIu64 " kthread=%" PRIu64
		 " truncated=%" PRIu64 " broken_chains=%" PRIu64 " fp_cut=%" PRIu64
		 " root_unknown=%" PRIu64 " unknown_frames=%" PRIu64 " unnamed_frames=%" PRIu64
		 " cap_dropped=%" PRIu64 " stacks=%zu bytes=%zu file=%s",
		 seq, duration_ns / NSEC_PER_MSEC, sampler__nr_cpus(a->sampler), st[STAT_SAMPLES],
		 fired, st[STAT_IDLE], st[STAT_FILTERED], recorded, drops_of(st),
		 st[STAT_DROP_STACKS_FULL], st[STAT_DROP_COUNTS_FULL], unaccounted,
		 st[STAT_USTACK_ERR], st[STAT_KSTACK_ERR], st[STAT_EVENTS_LOST], ws->samples,
		 ws->processes, ws->no_image_samples, ws->kthread_samples, ws->truncated_stacks,
		 ws->broken_chains, ws->fp_walks_cut, ws->root_unknown_stacks, ws->unknown_frames,
		 ws->unnamed_frames, ws->dropped_profile_cap, hashmap__size(&dw->stacks), bytes,
		 path ? path : "-");
}

static void log_summary(struct agent *a)
{
	const struct metrics_snapshot *t = &a->snap;

	pr_info("%" PRIu64 " windows: %" PRIu64 " samples, %" PRIu64 " profiled, %" PRIu64
		" dropped, %" PRIu64 " process events lost; %" PRIu64 " processes tracked, "
		"%" PRIu64 " symbol tables (%" PRIu64 " KiB); %" PRIu64 " KiB written",
		t->windows, t->samples, t->samples_profiled,
		t->dropped_stacks_full + t->dropped_counts_full + t->dropped_no_generation +
			t->dropped_profile_cap,
		t->process_events_lost, t->processes_tracked,
		t->symbol_tables_loaded - t->symbol_tables_evicted, t->symbol_cache_bytes >> 10,
		t->profile_bytes_written >> 10);
}

/* Fold one window into the totals and publish them for /metrics. */
static void account(struct agent *a, const struct drained_window *dw, const struct window_stats *ws,
		    double rate, double seconds)
{
	struct metrics_snapshot *t = &a->snap;
	const uint64_t *st = dw->stats;
	struct proctab_stats ps;
	struct symbolizer_stats ys;

	proctab__stats(a->proctab, &ps);
	if (a->server)
		server_sink__account(a->server, t);
	symbolizer__stats(a->symbolizer, &ys);
	t->windows++;
	t->samples += st[STAT_SAMPLES];
	t->samples_idle += st[STAT_IDLE];
	t->samples_filtered += st[STAT_FILTERED];
	t->samples_profiled += ws->samples;
	t->dropped_stacks_full += st[STAT_DROP_STACKS_FULL];
	t->dropped_counts_full += st[STAT_DROP_COUNTS_FULL];
	t->dropped_no_generation += st[STAT_DROP_NO_GEN];
	t->dropped_profile_cap += ws->dropped_profile_cap;
	t->user_walk_errors += st[STAT_USTACK_ERR];
	t->kernel_walk_errors += st[STAT_KSTACK_ERR];
	t->process_events_lost += st[STAT_EVENTS_LOST];
	t->stacks_truncated += ws->truncated_stacks;
	t->frames_unknown += ws->unknown_frames;
	t->samples_without_mappings += ws->no_image_samples;
	t->sampling_rate_hz = rate;
	t->unique_stacks = hashmap__size(&dw->stacks);
	t->processes_tracked = ps.images;
	t->captures = ps.captures;
	t->capture_errors = ps.capture_errors;
	t->symbol_hits = ys.hits;
	t->symbol_misses = ys.misses;
	t->symbol_errors = ys.errors;
	t->symbol_cache_bytes = ys.cache_bytes;
	t->symbol_tables_loaded = ys.tables_loaded;
	t->symbol_tables_evicted = ys.tables_evicted;
	t->symbol_addr_hits = ys.addr_hits;
	t->debug_files_found = ps.debug_files;
	t->debug_files_missing = ps.debug_misses;
	t->debug_files_refused = ys.debug_files_refused;
	t->jit_maps_read = ps.perfmaps_read;
	t->jit_map_lines_malformed = ps.perfmap_malformed;
	t->unwind_samples += st[STAT_UNWIND_SAMPLES];
	t->unwind_no_tables += st[STAT_UNWIND_NO_TABLES];
	t->unwind_exe_only += st[STAT_UNWIND_EXE_ONLY];
	t->unwind_fp_frames += st[STAT_UNWIND_FP_FRAMES];
	t->unwind_no_cfi_frames += st[STAT_UNWIND_NO_CFI];
	t->unwind_cut[0] += st[STAT_UNWIND_READ_FAULT];
	t->unwind_cut[1] += st[STAT_UNWIND_DEPTH];
	t->unwind_cut[2] += st[STAT_UNWIND_UNSUPPORTED];
	t->unwind_cut[3] += st[STAT_UNWIND_STALE];
	t->unwind_cut[4] += st[STAT_UNWIND_TAIL_CALL];
	t->unwind_cut[5] += st[STAT_UNWIND_LOST];
	metrics_observe_drain(t, seconds);
	t->last_drain_ns = now_mono_ns();
}

static void publish(struct agent *a)
{
	struct metrics_snapshot *t = &a->snap;

	if (a->unwinder) {
		struct unwinder_stats us;

		unwinder__stats(a->unwinder, &us);
		t->unwind_tables = us.tables;
		t->unwind_rows = us.rows;
		t->unwind_row_capacity =
			a->cfg->unwind_table_bytes / sizeof(struct ignis_unwind_row);
		t->unwind_tables_built = us.tables_built;
		t->unwind_table_errors = us.table_errors + us.tables_no_room;
		t->unwind_tables_evicted = us.tables_evicted;
		t->unwind_processes = us.processes;
		t->unwind_executables = us.executables;
		t->unwind_build_seconds = (double)us.build_ns / 1e9;
	}
	a->snap.cpus = sampler__nr_cpus(a->sampler);
	a->snap.cpus_detached = (unsigned int)sampler__check_links(a->sampler);
	a->snap.bpf_map_bytes = sampler__map_bytes(a->sampler);
	metrics__publish(a->metrics, &a->snap);
}

static bool image_known(void *ctx, uint32_t tgid, uint64_t start_time, uint32_t exec_id)
{
	return proctab__knows(ctx, tgid, start_time, exec_id);
}

/* Write the window's profile into the local folder; failures are counted and logged. */
static void write_local(struct agent *a, uint64_t seq, uint64_t time_ns, const uint8_t *buf,
			size_t len, char *path, size_t size)
{
	int err = file_sink__write(a->sink, time_ns, seq, buf, len, path, size);

	if (err) {
		a->snap.profile_write_errors++;
		pr_warn_ratelimited(3, 60, "window %" PRIu64 ": cannot write the profile to %s: %s",
				    seq, a->cfg->output_dir, strerror(-err));
		path[0] = '\0';
		return;
	}
	a->snap.profiles_written++;
	a->snap.profile_bytes_written += len;
	err = file_sink__prune(a->sink);
	if (err < 0)
		pr_warn_ratelimited(3, 60, "%s: cannot apply the size and age caps: %s",
				    a->cfg->output_dir, strerror(-err));
}

/* proctab: an object without DWARF and no debug file on disk: ask debuginfod. */
static void on_debug_missing(void *ctx, struct sym_object *obj)
{
	struct agent *a = ctx;
	const uint8_t *id;
	size_t len = sym_object__build_id(obj, &id);

	if (len)
		debuginfod_fetcher__request(a->debuginfod, id, len);
}

static void on_debug_fetched(void *ctx, const uint8_t *build_id, size_t len, int fd)
{
	struct agent *a = ctx;
	int err = symbolizer__add_debug_file(a->symbolizer, build_id, len, fd);

	if (err && err != -EALREADY)
		pr_debug("debuginfod: a fetched debug file is not used: %s",
			 err == -ENOKEY ? "another build" : strerror(-err));
}

static int do_window(struct agent *a)
{
	struct window_stats ws = { 0 };
	struct drained_window dw;
	struct profile *p = NULL;
	struct profile_opts po = { 0 };
	uint64_t t0 = now_mono_ns(), now_real = now_real_ns(), seq = a->seq, fired, recorded;
	uint8_t *buf = NULL;
	size_t len = 0;
	char path[4096] = "";
	unsigned int idle;
	int64_t unaccounted;
	double rate;

	/* Debug files debuginfod delivered since the last window name this one. */
	debuginfod_fetcher__take(a->debuginfod, on_debug_fetched, a);
	int err, n;

	drained_window__init(&dw);
	err = sampler__flip(a->sampler, &idle);
	if (err) {
		pr_err("cannot flip the map generations: %s", strerror(-err));
		return err;
	}
	/* The flip waited out an RCU grace period: unwind map extents freed before it are
	 * read by no program now. */
	if (a->unwinder)
		unwinder__grace_period(a->unwinder);
	po.period_ns = NSEC_PER_SEC / a->cfg->frequency_hz;
	po.time_ns = a->window_start_real;
	po.duration_ns = t0 - a->window_start_mono;
	a->seq++;
	a->window_start_real = now_real;
	a->window_start_mono = t0;

	/* Process events up to the flip first: their images are what the samples need. */
	sampler__poll(a->sampler, 0, -1);
	fired = sampler__events_fired(a->sampler);
	err = drain__read(a->sampler, idle, &dw);
	if (err)
		goto cleanup;

	p = profile__new(&po);
	if (!p) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = window_builder__add(a->builder, &dw, seq, p, &ws);
	if (err) {
		pr_err("window %" PRIu64 ": cannot build the profile: %s", seq, strerror(-err));
		goto cleanup;
	}
	recorded = drained_window__total(&dw);
	unaccounted = (int64_t)dw.stats[STAT_SAMPLES] - (int64_t)dw.stats[STAT_IDLE] -
		      (int64_t)dw.stats[STAT_FILTERED] - (int64_t)recorded -
		      (int64_t)drops_of(dw.stats);
	rate = po.duration_ns && sampler__nr_cpus(a->sampler) ?
		       (double)dw.stats[STAT_SAMPLES] * NSEC_PER_SEC / (double)po.duration_ns /
			       sampler__nr_cpus(a->sampler) :
		       0.0;
	err = add_comments(p, a, &dw, &ws, seq, rate);
	if (!err && a->sink)
		err = pprof_encode(p, GZIP_LEVEL, &buf, &len);
	if (err) {
		pr_err("window %" PRIu64 ": cannot encode the profile: %s", seq, strerror(-err));
		goto cleanup;
	}
	if (a->server) {
		struct server_window_stats ss;

		err = server_sink__send(a->server, p, seq, &ss);
		if (err)
			pr_warn_ratelimited(3, 60,
					    "window %" PRIu64 ": cannot split the profile "
					    "for the server: %s",
					    seq, strerror(-err));
		pr_debug("window %" PRIu64 " server: targets=%" PRIu64 " profiles=%" PRIu64
			 " bytes=%" PRIu64 " split=%" PRIu64 " folded=%" PRIu64,
			 seq, ss.targets, ss.profiles, ss.bytes, ss.split, ss.folded);
		err = 0;
	}
	if (a->sink)
		write_local(a, seq, po.time_ns, buf, len, path, sizeof(path));

	if (dw.stats[STAT_EVENTS_LOST])
		pr_warn_ratelimited(5, 60,
				    "window %" PRIu64 ": %" PRIu64 " process events lost "
				    "(ring buffer full); the rescan recovers them",
				    seq, dw.stats[STAT_EVENTS_LOST]);
	if (drops_of(dw.stats))
		pr_warn_ratelimited(5, 60,
				    "window %" PRIu64 ": %" PRIu64 " samples dropped "
				    "(stacks map full %" PRIu64 ", counts map full %" PRIu64 ")",
				    seq, drops_of(dw.stats), dw.stats[STAT_DROP_STACKS_FULL],
				    dw.stats[STAT_DROP_COUNTS_FULL]);
	if (unaccounted)
		pr_warn("window %" PRIu64 ": %" PRId64 " samples unaccounted for", seq,
			unaccounted);
	log_window(a, seq, &dw, &ws, po.duration_ns, fired, recorded, unaccounted, len,
		   path[0] ? path : NULL);

	if (a->cfg->top) {
		uint64_t possible = (uint64_t)a->cfg->frequency_hz * sampler__nr_cpus(a->sampler) *
				    po.duration_ns / NSEC_PER_SEC;

		printf("\nwindow %" PRIu64 " (%.1f s): %" PRIu64 " samples of %" PRIu64
		       " possible at %u Hz on %u CPUs (%.1f Hz per CPU; idle CPUs may yield fewer);"
		       " %" PRIu64 " idle, %" PRIu64 " filtered, %" PRIu64 " dropped, %" PRIu64
		       " profiled in %" PRIu64 " process%s\n",
		       seq, (double)po.duration_ns / NSEC_PER_SEC, dw.stats[STAT_SAMPLES], possible,
		       a->cfg->frequency_hz, sampler__nr_cpus(a->sampler), rate,
		       dw.stats[STAT_IDLE], dw.stats[STAT_FILTERED], drops_of(dw.stats), ws.samples,
		       ws.processes, ws.processes == 1 ? "" : "es");
		if (path[0])
			printf("  profile: %s (%zu bytes)\n", path, len);
		if (top_print(stdout, p, a->cfg->top))
			pr_warn("cannot rank functions: out of memory");
		fflush(stdout);
	}

	account(a, &dw, &ws, rate, (double)(now_mono_ns() - t0) / 1e9);

	if (ws.kernel_unnamed && now_mono_ns() - a->kallsyms_loaded_ns > KALLSYMS_RELOAD_NS)
		load_kallsyms(a); /* modules loaded since */
cleanup:
	free(buf);
	profile__free(p);
	drained_window__fini(&dw);
	proctab__release(a->proctab, seq);
	proctab__rescan(a->proctab, a->seq);
	if (a->unwinder) /* processes whose exit event was lost */
		unwinder__reconcile(a->unwinder, image_known, a->proctab);
	if (now_mono_ns() - a->summary_ns >= SUMMARY_EVERY_NS) {
		a->summary_ns = now_mono_ns();
		n = drain__reconcile_procs(a->sampler, image_known, a->proctab);
		if (n > 0)
			pr_debug("%d processes will be announced again", n);
		log_summary(a);
	}
	if (sampler__refresh_cpus(a->sampler) > 0)
		pr_info("CPUs came online: now sampling %u CPUs", sampler__nr_cpus(a->sampler));
	publish(a);
	pr_debug("window %" PRIu64 " handled in %" PRIu64 " ms", seq,
		 (now_mono_ns() - t0) / NSEC_PER_MSEC);
	return err;
}

static int run(struct agent *a)
{
	struct agent_config *cfg = a->cfg;
	uint64_t interval = (uint64_t)cfg->interval_sec * NSEC_PER_SEC;
	uint64_t start = now_mono_ns(), next = start + interval;
	uint64_t end = cfg->duration_sec ? start + (uint64_t)cfg->duration_sec * NSEC_PER_SEC : 0;
	int err = 0;

	a->window_start_mono = start;
	a->window_start_real = now_real_ns();
	a->summary_ns = start;
	while (!stop_requested) {
		uint64_t now = now_mono_ns(), deadline = next;
		int timeout;

		if (end && end < deadline)
			deadline = end;
		if (now >= deadline) {
			if (end && now >= end)
				break;
			err = do_window(a);
			if (err)
				return err;
			next += interval;
			if (next <= now_mono_ns()) /* the window ran late: skip ahead */
				next = now_mono_ns() + interval;
			continue;
		}
		timeout = (int)((deadline - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC);
		/* Woken as well when tables are built: published at once. */
		err = sampler__poll(a->sampler, timeout,
				    a->unwinder ? unwinder__wake_fd(a->unwinder) : -1);
		if (err < 0 && err != -EINTR) {
			pr_err("cannot read process events: %s", strerror(-err));
			return err;
		}
		err = 0;
		if (a->unwinder)
			unwinder__poll(a->unwinder);
	}
	if (stop_requested)
		pr_info("%s: writing the last window", strsignal(stop_requested));
	return do_window(a);
}

int main(int argc, char **argv)
{
	struct agent_config cfg;
	struct agent a = { .cfg = &cfg };
	struct sigaction sa = { .sa_handler = on_signal };
	struct symbolizer_opts so = { .sz = sizeof(so) };
	struct proctab_opts po = { 0 };
	struct sampler_opts sopts = { 0 };
	struct window_builder_opts wo = { 0 };
	struct file_sink_opts fo = { .sz = sizeof(fo) };
	char *kube_url = NULL;
	int err, ret = 1;

	config_init(&cfg);
	if (config_load(&cfg, argc, argv, environ, stderr)) {
		fputc('\n', stderr);
		config_usage(stderr);
		config_fini(&cfg);
		return 2;
	}
	if (cfg.show_help || cfg.show_version || cfg.print_config || cfg.print_reference) {
		if (cfg.show_help)
			config_usage(stdout);
		else if (cfg.show_version)
			printf("ignis %s\n", IGNIS_VERSION);
		else if (cfg.print_config)
			config_print(&cfg, stdout);
		else
			config_reference(stdout);
		config_fini(&cfg);
		return 0;
	}
	log_max_level = cfg.log_level;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (check_pids(&cfg)) {
		config_fini(&cfg);
		return 2;
	}
	if (cfg.kubernetes) {
		if (!cfg.node_name) {
			fprintf(stderr, "ignis: --kubernetes needs this node's name: set NODE_NAME "
					"(from the downward API's spec.nodeName) or --node-name\n");
			config_fini(&cfg);
			return 2;
		}
		kube_url = kubernetes_url(&cfg);
		if (!kube_url) {
			config_fini(&cfg);
			return 2;
		}
	}
	/* NODE_NAME (--node-name) names the host in profiles, as in a cluster's other tools. */
	if (cfg.node_name)
		snprintf(a.hostname, sizeof(a.hostname), "%s", cfg.node_name);
	else if (gethostname(a.hostname, sizeof(a.hostname) - 1))
		snprintf(a.hostname, sizeof(a.hostname), "localhost");
	if (config_check(&cfg, stderr)) {
		ret = 2;
		goto cleanup;
	}
	if (cfg.server_url) {
		struct server_sink_opts sso;

		config_server_sink_opts(&cfg, a.hostname, &sso);
		a.server = server_sink__new(&sso);
		if (!a.server) {
			ret = errno == EINVAL ? 2 : 1;
			goto cleanup;
		}
	}
	if (!cfg.output_dir && !cfg.server_url) {
		cfg.output_dir = strdup(DEFAULT_OUTPUT_DIR);
		if (!cfg.output_dir)
			goto cleanup;
		pr_info("writing profiles to %s (no --output-dir given)", cfg.output_dir);
	}

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	raise_fd_limit();

	/* BPF first: without privileges or BTF nothing else matters, and nothing is created.
	 * Events wait in the ring buffer until the loop reads them. */
	sopts.frequency_hz = cfg.frequency_hz;
	sopts.event = cfg.event;
	sopts.user_stacks = true;
	sopts.kernel_stacks = cfg.kernel_stacks;
	sopts.skip_walk = cfg.skip_walk;
	sopts.pids = cfg.pids;
	sopts.nr_pids = cfg.nr_pids;
	sopts.max_stacks = cfg.max_stacks;
	sopts.window_sec = cfg.interval_sec;
	sopts.mmap_event_gap_ns = MMAP_EVENT_GAP_NS;
	sopts.on_event = on_proc_event;
	sopts.ctx = &a;
	sopts.unwind = cfg.unwind;
	sopts.unwind_rows = (uint32_t)(cfg.unwind_table_bytes / sizeof(struct ignis_unwind_row));
	sopts.unwind_maps = UNWIND_MAPPINGS;
	sopts.unwind_procs = UNWIND_PROCESSES;
	sopts.unwind_exes = UNWIND_EXECUTABLES;
	a.sampler = sampler__new(&sopts);
	if (!a.sampler)
		goto cleanup;
	err = sampler__attach(a.sampler);
	if (err)
		goto cleanup;

	so.cache_max_bytes = cfg.symbol_cache_bytes;
	so.print = symbolizer_print;
	a.symbolizer = symbolizer__new(&so);
	if (!a.symbolizer) {
		pr_err("cannot create the symbolizer: %s", strerror(errno));
		goto cleanup;
	}
	if (cfg.kernel_stacks)
		load_kallsyms(&a);
	if (sysfs_kernel_build_id(a.kernel_build_id, sizeof(a.kernel_build_id)))
		a.kernel_build_id[0] = '\0';
	a.vdso = open_vdso(a.symbolizer);

	po.proc_root = "/proc";
	po.symbolizer = a.symbolizer;
	po.vdso = a.vdso;
	po.min_recapture_ns = RECAPTURE_GAP_NS;
	po.debug_dir = cfg.debug_dir;
	if (cfg.debuginfod_urls) {
		a.debuginfod = debuginfod_fetcher__new(
			cfg.debuginfod_urls, (unsigned int)cfg.debuginfod_timeout_sec, NULL);
		if (!a.debuginfod)
			pr_warn("debuginfod: cannot start fetching (%s); debug files come from disk "
				"only",
				strerror(errno));
		po.debug_missing = a.debuginfod ? on_debug_missing : NULL;
		po.debug_missing_ctx = &a;
	}
	po.captured = on_captured;
	po.captured_ctx = &a;
	a.proctab = proctab__new(&po);
	if (sampler__unwinds(a.sampler)) {
		struct unwinder_opts uo = {
			.rows_fd = sampler__unwind_rows_fd(a.sampler),
			.maps_fd = sampler__unwind_maps_fd(a.sampler),
			.procs_fd = sampler__unwind_procs_fd(a.sampler),
			.exes_fd = sampler__unwind_exes_fd(a.sampler),
			.max_rows = sopts.unwind_rows,
			.max_maps = sopts.unwind_maps,
			.max_procs = sopts.unwind_procs,
		};

		a.unwinder = unwinder__new(&uo);
		if (!a.unwinder) {
			pr_err("cannot start the unwinder: %s", strerror(errno));
			goto cleanup;
		}
	}
	wo.proctab = a.proctab;
	wo.symbolizer = a.symbolizer;
	wo.kernel_symbols = a.kernel_symbols;
	wo.kernel_build_id = a.kernel_build_id[0] ? a.kernel_build_id : NULL;
	if (kube_url && start_kubernetes(&a, &cfg, kube_url))
		goto cleanup;
	wo.kube = a.kube;
	wo.targets = a.server ? server_sink__targets(a.server) : NULL;
	wo.unwinder = a.unwinder;
	a.builder = window_builder__new(&wo);
	if (!a.proctab || !a.builder) {
		pr_err("out of memory");
		goto cleanup;
	}

	fo.dir = cfg.output_dir;
	fo.hostname = a.hostname;
	fo.max_bytes = cfg.output_max_bytes;
	fo.max_age_sec = cfg.output_max_age_sec;
	a.sink = cfg.output_dir ? file_sink__new(&fo) : NULL;
	if (cfg.output_dir && !a.sink) {
		pr_err("cannot use %s for profiles: %s; pick another with --output-dir",
		       cfg.output_dir, strerror(errno));
		goto cleanup;
	}
	a.snap.interval_ns = (uint64_t)cfg.interval_sec * NSEC_PER_SEC;
	a.snap.last_drain_ns = now_mono_ns();
	if (cfg.metrics_address) {
		a.metrics = metrics__new(cfg.metrics_address, IGNIS_VERSION);
		if (!a.metrics)
			goto cleanup;
		publish(&a);
		pr_info("metrics on http://%s/metrics, health on /healthz", cfg.metrics_address);
	}
	pr_info("profiling %u CPUs at %u Hz%s; a profile every %u s%s%s%s%s",
		sampler__nr_cpus(a.sampler), cfg.frequency_hz,
		cfg.nr_pids ? " (selected processes)" : "", cfg.interval_sec,
		cfg.output_dir ? " into " : "", cfg.output_dir ? cfg.output_dir : "",
		cfg.output_dir && cfg.server_url ? " and" : "",
		cfg.server_url ? " to the server" : "");
	pr_debug("BPF maps pin %" PRIu64 " KiB of kernel memory",
		 sampler__map_bytes(a.sampler) >> 10);
	/* Type=notify: systemd calls the service started only now that BPF is attached. A
	 * no-op outside systemd (no NOTIFY_SOCKET). */
	sd_notifyf(0, "READY=1\nSTATUS=profiling %u CPUs at %u Hz", sampler__nr_cpus(a.sampler),
		   cfg.frequency_hz);

	err = run(&a);
	sd_notify(0, "STOPPING=1\nSTATUS=flushing the last window");
	ret = err ? 1 : 0;
	log_summary(&a);
cleanup:
	unwinder__free(a.unwinder);
	debuginfod_fetcher__free(a.debuginfod);
	metrics__free(a.metrics);
	server_sink__free(a.server, ret == 0 ? UPLOAD_FLUSH_NS : 0);
	kube__free(a.kube);
	sampler__free(a.sampler);
	file_sink__free(a.sink);
	window_builder__free(a.builder);
	proctab__free(a.proctab);
	sym_object__put(a.vdso);
	symbolizer__free(a.symbolizer);
	config_fini(&cfg);
	free(kube_url);
	curl_global_cleanup();
	return ret;
}
