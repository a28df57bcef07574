// SPDX-License-Identifier: Apache-2.0
/*
 * The window cycle (see cycle.h): flip, drain, build, ship, account, release.
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../symbolizer/symbolizer.h"
#include "cycle.h"
#include "collect/debuginfod.h"
#include "collect/drain.h"
#include "collect/kernel.h"
#include "operate/log.h"
#include "operate/metrics.h"
#include "profile/pprof.h"
#include "collect/proctab.h"
#include "profile/profile.h"
#include "collect/sampler.h"
#include "ship/sink_file.h"
#include "ship/sink_server.h"
#include "operate/stats.h"
#include "profile/top.h"
#include "unwind/unwinder.h"
#include "profile/window.h"
#include "python/python.h"

#ifndef IGNIS_VERSION
#define IGNIS_VERSION "0.0.0"
#endif

/* How often the counters are summarized at info level, and BPF's process table reconciled. */
#define SUMMARY_EVERY_NS (60 * NSEC_PER_SEC)
/* kallsyms is read again at most this often when kernel addresses stay unnamed. */
#define KALLSYMS_RELOAD_NS (300 * NSEC_PER_SEC)
#define GZIP_LEVEL	   6
/* After closing this much DWARF (bytes), give the heap's free memory back to the system. */

struct cycle {
	struct cycle_opts opts;
	uint64_t seq; /* the window being recorded */
	uint64_t window_start_real;
	uint64_t window_start_mono;
	uint64_t summary_ns;		  /* CLOCK_MONOTONIC of the last summary */
	uint64_t kallsyms_loaded_ns;	  /* ... of the last kallsyms load */
	struct metrics_snapshot snap;	  /* totals since start, published after each window */
	unsigned int symbol_idle_windows; /* opts.symbol_idle_sec in windows, 0: never */
};

/* One window on its way through the cycle. */
struct window {
	uint64_t seq;
	uint64_t t0; /* CLOCK_MONOTONIC when it was handled */
	struct profile_opts po;
	struct drained_window dw;
	struct window_stats ws;
	struct counters c; /* its figures: the SUM and WINDOW rows of the table */
	struct profile *p;
	uint8_t *buf; /* the encoded profile, for the local folder */
	size_t len;
	char path[4096]; /* where it was written, or "" */
	uint64_t fired;	 /* cpu-clock events expected in it */
	uint64_t recorded;
	int64_t unaccounted;
	double rate; /* samples per second per CPU */
};

struct cycle *cycle__new(const struct cycle_opts *opts)
{
	struct cycle *c;

	if (!opts->sampler || !opts->proctab || !opts->symbolizer || !opts->builder) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->opts = *opts;
	/* The first window began when BPF was attached (the agent started up meanwhile). */
	c->window_start_mono = sampler__attached_ns(opts->sampler);
	if (!c->window_start_mono)
		c->window_start_mono = now_mono_ns();
	c->window_start_real = now_real_ns() - (now_mono_ns() - c->window_start_mono);
	c->summary_ns = c->window_start_mono;
	c->kallsyms_loaded_ns = c->window_start_mono;
	c->snap.interval_ns = (uint64_t)opts->interval_sec * NSEC_PER_SEC;
	c->snap.last_drain_ns = c->window_start_mono;
	if (opts->symbol_idle_sec && opts->interval_sec)
		c->symbol_idle_windows = /* at most 7 days in 1 s windows */
			(opts->symbol_idle_sec + opts->interval_sec - 1) / opts->interval_sec;
	return c;
}

void cycle__free(struct cycle *c)
{
	free(c);
}

uint64_t cycle__seq(const struct cycle *c)
{
	return c->seq;
}

static unsigned int nr_cpus(const struct cycle *c)
{
	return sampler__nr_cpus(c->opts.sampler);
}

/* The accounting identity of each window, which the tests check: every sample BPF took is
 * idle, filtered, recorded (in the sample log or the counts map) or dropped (counted by
 * reason). */
static void balance(struct window *w)
{
	const uint64_t *v = w->dw.counters.v;

	w->recorded = w->dw.nr_counted;
	w->unaccounted = (int64_t)v[CNT_SAMPLES] - (int64_t)v[CNT_IDLE] - (int64_t)v[CNT_FILTERED] -
			 (int64_t)w->recorded - (int64_t)counters_bpf_drops(&w->dw.counters);
}

static int add_comments(struct cycle *c, struct window *w)
{
	const uint64_t *v = w->c.v;
	char line[2048];
	int err;

	snprintf(line, sizeof(line), "ignis %s on %s, window %" PRIu64, IGNIS_VERSION,
		 c->opts.hostname, w->seq);
	err = profile__comment(w->p, line);
	if (err)
		return err;
	snprintf(line, sizeof(line),
		 "samples %" PRIu64 " (%.1f Hz per CPU on %u CPUs): %" PRIu64 " idle, %" PRIu64
		 " filtered, %" PRIu64 " profiled, %" PRIu64 " dropped",
		 v[CNT_SAMPLES], w->rate, nr_cpus(c), v[CNT_IDLE], v[CNT_FILTERED], v[CNT_PROFILED],
		 counters_bpf_drops(&w->c));
	err = profile__comment(w->p, line);
	if (err)
		return err;
	/* The rest of the table, as far as this window has anything to say. */
	snprintf(line, sizeof(line), "counters:");
	counters_format_window(&w->c, 1, line + strlen(line), sizeof(line) - strlen(line));
	return profile__comment(w->p, line);
}

/*
 * The sources that the table's rows name (stats.h) are defined in the two functions below
 * and nowhere else. A window's figures first: its BPF rows come from the drain, its CYCLE
 * rows are counted as the cycle goes, its WIN rows come from the window builder.
 */
static void window_figures(struct window *w)
{
	const struct window_stats *ws = &w->ws;

	w->c = w->dw.counters;
#define BPF		   0 /* already in w->c */
#define CYCLE		   0 /* counted by the cycle itself */
#define WIN(f)		   (ws->f)
#define FIG_SUM(i, src)	   w->c.v[i] += (src);
#define FIG_WINDOW(i, src) w->c.v[i] += (src);
#define FIG_TOTAL(i, src)
#define FIG_GAUGE(i, src)
#define ROW(id, kind, src, ...) FIG_##kind(CNT_##id, src)
	IGNIS_AGENT_STATS(ROW)
#undef ROW
#undef FIG_GAUGE
#undef FIG_TOTAL
#undef FIG_WINDOW
#undef FIG_SUM
#undef WIN
#undef CYCLE
#undef BPF
	w->c.v[CNT_WINDOWS] = 1;
	w->c.v[CNT_UNIQUE_STACKS] = hashmap__size(&w->dw.stacks);
}

/* Then the totals since start: a window's figures are added (SUM) or kept (WINDOW). */
static void add_window(struct cycle *c, const struct window *w)
{
	struct metrics_snapshot *t = &c->snap;

#define ACC_SUM(i)    t->c.v[i] += w->c.v[i];
#define ACC_WINDOW(i) t->c.v[i] = w->c.v[i];
#define ACC_TOTAL(i)
#define ACC_GAUGE(i)
#define BPF_ROW(id, ...)	ACC_SUM(CNT_##id)
#define ROW(id, kind, src, ...) ACC_##kind(CNT_##id)
	IGNIS_BPF_STATS(BPF_ROW)
	IGNIS_AGENT_STATS(ROW)
#undef ROW
#undef BPF_ROW
#undef ACC_GAUGE
#undef ACC_TOTAL
#undef ACC_WINDOW
#undef ACC_SUM
	t->sampling_rate_hz = w->rate;
	metrics_observe_drain(t, (double)(now_mono_ns() - w->t0) / 1e9);
	t->last_drain_ns = now_mono_ns();
}

/* ... and the modules' own totals and gauges, copied (TOTAL, GAUGE). */
static void refresh(struct cycle *c)
{
	struct metrics_snapshot *t = &c->snap;
	struct server_sink_stats srv = { 0 };
	struct unwinder_stats unw = { 0 };
	struct python_stats py = { 0 };
	struct symbolizer_stats sym;
	struct proctab_stats proc;
	struct {
		uint64_t cpus, cpus_detached, bpf_map_bytes, unwind_row_capacity;
	} agent = {
		.cpus = nr_cpus(c),
		.cpus_detached = (uint64_t)sampler__check_links(c->opts.sampler),
		.bpf_map_bytes = sampler__map_bytes(c->opts.sampler),
		.unwind_row_capacity = c->opts.unwinder ? c->opts.unwind_rows : 0,
	};

	proctab__stats(c->opts.proctab, &proc);
	symbolizer__stats(c->opts.symbolizer, &sym);
	if (c->opts.unwinder)
		unwinder__stats(c->opts.unwinder, &unw);
	if (c->opts.server)
		server_sink__stats(c->opts.server, &srv);
	if (c->opts.python)
		python__stats(c->opts.python, &py);
#define PROC(f)	 (proc.f)
#define PY(f)	 (py.f)
#define SYM(f)	 (sym.f)
#define UNW(f)	 (unw.f)
#define SRV(f)	 (srv.f)
#define AGENT(f) (agent.f)
#define ACC_SUM(i, src)
#define ACC_WINDOW(i, src)
#define ACC_TOTAL(i, src)	t->c.v[i] = (src);
#define ACC_GAUGE(i, src)	t->c.v[i] = (src);
#define ROW(id, kind, src, ...) ACC_##kind(CNT_##id, src)
	IGNIS_AGENT_STATS(ROW)
#undef ROW
#undef ACC_GAUGE
#undef ACC_TOTAL
#undef ACC_WINDOW
#undef ACC_SUM
#undef AGENT
#undef PY
#undef SRV
#undef UNW
#undef SYM
#undef PROC
	t->upload_backoff_seconds = srv.upload.backoff_sec;
	t->unwind_build_seconds = (double)unw.build_ns / 1e9;
}

void cycle__publish(struct cycle *c)
{
	refresh(c);
	metrics__publish(c->opts.metrics, &c->snap);
}

void cycle__log_summary(struct cycle *c)
{
	const uint64_t *v = c->snap.c.v;

	pr_info("%" PRIu64 " windows: %" PRIu64 " samples, %" PRIu64 " profiled, %" PRIu64
		" dropped, %" PRIu64 " process events lost; %" PRIu64 " processes tracked, "
		"%" PRIu64 " symbol tables (%" PRIu64 " KiB); %" PRIu64 " KiB written",
		v[CNT_WINDOWS], v[CNT_SAMPLES], v[CNT_PROFILED],
		counters_bpf_drops(&c->snap.c) + v[CNT_CAP_DROPPED], v[CNT_EVENTS_LOST],
		v[CNT_PROCESSES_TRACKED], v[CNT_SYMBOL_TABLES], v[CNT_SYMBOL_CACHE_BYTES] >> 10,
		v[CNT_BYTES_WRITTEN] >> 10);
}

/* Debug files debuginfod delivered since the last window name this one. */
static void on_debug_fetched(void *ctx, const uint8_t *build_id, size_t len, int fd)
{
	struct cycle *c = ctx;
	int err = symbolizer__add_debug_file(c->opts.symbolizer, build_id, len, fd);

	if (err && err != -EALREADY)
		pr_debug("debuginfod: a fetched debug file is not used: %s",
			 err == -ENOKEY ? "another build" : strerror(-err));
}

/* End the window: flip the generations and start the next window at once. */
static int flip(struct cycle *c, struct window *w, unsigned int *idle)
{
	uint64_t now_real, at;
	int err;

	debuginfod_fetcher__take(c->opts.debuginfod, on_debug_fetched, c);
	now_real = now_real_ns();
	err = sampler__flip(c->opts.sampler, idle, &at);
	if (err) {
		pr_err("cannot flip the map generations: %s", strerror(-err));
		return err;
	}
	/* The flip waited out an RCU grace period: unwind map extents freed before it are
	 * read by no program now. */
	if (c->opts.unwinder)
		unwinder__grace_period(c->opts.unwinder);
	w->seq = c->seq++;
	w->po.period_ns = NSEC_PER_SEC / c->opts.frequency_hz;
	w->po.types = c->opts.offcpu ? PROFILE_CPU_OFFCPU : PROFILE_CPU;
	w->po.time_ns = c->window_start_real;
	/* The window is what BPF counted in it: from flip to flip (the agent may run late). */
	w->po.duration_ns = at - c->window_start_mono;
	c->window_start_real = now_real;
	c->window_start_mono = at;
	return 0;
}

/* Drain the idle generation and build the window's profile. */
static int build(struct cycle *c, struct window *w, unsigned int idle)
{
	int err;

	/* Process events up to the flip first: their images are what the samples need. */
	sampler__poll(c->opts.sampler, 0, -1);
	w->fired = sampler__events_fired(c->opts.sampler);
	err = drain__read(c->opts.sampler, idle, &w->dw);
	if (err)
		return err;
	w->p = profile__new(&w->po);
	if (!w->p)
		return -ENOMEM;
	err = window_builder__add(c->opts.builder, &w->dw, w->seq, w->p, &w->ws);
	if (err) {
		pr_err("window %" PRIu64 ": cannot build the profile: %s", w->seq, strerror(-err));
		return err;
	}
	balance(w);
	w->rate = w->po.duration_ns && nr_cpus(c) ?
			  (double)w->dw.counters.v[CNT_SAMPLES] * NSEC_PER_SEC /
				  (double)w->po.duration_ns / nr_cpus(c) :
			  0.0;
	window_figures(w);
	return 0;
}

/* Write the window's profile into the local folder; failures are counted and logged. */
static void write_local(struct cycle *c, struct window *w)
{
	int err = file_sink__write(c->opts.sink, w->po.time_ns, w->seq, w->buf, w->len, w->path,
				   sizeof(w->path));

	if (err) {
		w->c.v[CNT_WRITE_ERRORS]++;
		pr_warn_ratelimited(3, 60, "window %" PRIu64 ": cannot write the profile to %s: %s",
				    w->seq, c->opts.output_dir, strerror(-err));
		w->path[0] = '\0';
		return;
	}
	w->c.v[CNT_PROFILES_WRITTEN]++;
	w->c.v[CNT_BYTES_WRITTEN] += w->len;
	err = file_sink__prune(c->opts.sink);
	if (err < 0)
		pr_warn_ratelimited(3, 60, "%s: cannot apply the size and age caps: %s",
				    c->opts.output_dir, strerror(-err));
}

/* Hand the profile to the sinks. */
static int ship(struct cycle *c, struct window *w)
{
	int err = add_comments(c, w);

	if (!err && c->opts.sink)
		err = pprof_encode(w->p, GZIP_LEVEL, &w->buf, &w->len);
	if (err) {
		pr_err("window %" PRIu64 ": cannot encode the profile: %s", w->seq, strerror(-err));
		return err;
	}
	if (c->opts.server) {
		struct server_window_stats ss;

		err = server_sink__send(c->opts.server, w->p, w->seq, &ss);
		if (err)
			pr_warn_ratelimited(3, 60,
					    "window %" PRIu64 ": cannot split the profile "
					    "for the server: %s",
					    w->seq, strerror(-err));
		pr_debug("window %" PRIu64 " server: targets=%" PRIu64 " profiles=%" PRIu64
			 " bytes=%" PRIu64 " split=%" PRIu64 " folded=%" PRIu64,
			 w->seq, ss.targets, ss.profiles, ss.bytes, ss.split, ss.folded);
	}
	if (c->opts.sink)
		write_local(c, w);
	return 0;
}

/* Losses at warning level; the window's figures at debug level; the top table. */
static void report(struct cycle *c, const struct window *w)
{
	const uint64_t *v = w->c.v;
	char figures[2048];

	if (v[CNT_EVENTS_LOST])
		pr_warn_ratelimited(5, 60,
				    "window %" PRIu64 ": %" PRIu64 " process events lost "
				    "(ring buffer full); the rescan recovers them",
				    w->seq, v[CNT_EVENTS_LOST]);
	if (counters_bpf_drops(&w->c))
		pr_warn_ratelimited(5, 60,
				    "window %" PRIu64 ": %" PRIu64 " samples dropped "
				    "(counts map full %" PRIu64 ", no generation %" PRIu64 ")",
				    w->seq, counters_bpf_drops(&w->c), v[CNT_DROP_COUNTS_FULL],
				    v[CNT_DROP_NO_GEN]);
	if (v[CNT_STACKS_LOST])
		pr_warn_ratelimited(
			5, 60,
			"window %" PRIu64 ": %" PRIu64 " stacks not stored, their samples "
			"kept without them: the stacks map was full (raise --max-stacks)",
			w->seq, v[CNT_STACKS_LOST]);
	if (w->unaccounted)
		pr_warn("window %" PRIu64 ": %" PRId64 " samples unaccounted for", w->seq,
			w->unaccounted);
	if (log_enabled(LOG_LEVEL_DEBUG)) {
		counters_format_window(&w->c, 0, figures, sizeof(figures));
		pr_debug("window seq=%" PRIu64 " duration_ms=%" PRIu64
			 " cpus=%u clock_expected=%" PRIu64 " recorded=%" PRIu64 " dropped=%" PRIu64
			 " unaccounted=%" PRId64 "%s file=%s",
			 w->seq, w->po.duration_ns / NSEC_PER_MSEC, nr_cpus(c), w->fired,
			 w->recorded, counters_bpf_drops(&w->c), w->unaccounted, figures,
			 w->path[0] ? w->path : "-");
	}
	if (!c->opts.top)
		return;
	printf("\nwindow %" PRIu64 " (%.1f s): %" PRIu64 " samples of %" PRIu64
	       " possible at %u Hz on %u CPUs (%.1f Hz per CPU; idle CPUs may yield fewer);"
	       " %" PRIu64 " idle, %" PRIu64 " filtered, %" PRIu64 " dropped, %" PRIu64
	       " profiled in %" PRIu64 " process%s\n",
	       w->seq, (double)w->po.duration_ns / NSEC_PER_SEC, v[CNT_SAMPLES],
	       (uint64_t)c->opts.frequency_hz * nr_cpus(c) * w->po.duration_ns / NSEC_PER_SEC,
	       c->opts.frequency_hz, nr_cpus(c), w->rate, v[CNT_IDLE], v[CNT_FILTERED],
	       counters_bpf_drops(&w->c), v[CNT_PROFILED], v[CNT_PROCESSES],
	       v[CNT_PROCESSES] == 1 ? "" : "es");
	if (w->path[0])
		printf("  profile: %s (%zu bytes)\n", w->path, w->len);
	if (top_print(stdout, w->p, c->opts.top))
		pr_warn("cannot rank functions: out of memory");
	fflush(stdout);
}

static bool image_known(void *ctx, uint32_t tgid, uint64_t start_time, uint32_t exec_id)
{
	return proctab__knows(ctx, tgid, start_time, exec_id);
}

/* Release what the window held; the chores that run between windows. */
static void release(struct cycle *c, const struct window *w)
{
	int n;

	proctab__release(c->opts.proctab, w->seq);
	/* Tables of binaries that ran once go after a while, not when the budget is full. */
	symbolizer__drop_idle(c->opts.symbolizer, c->symbol_idle_windows);
	/* DWARF's sections stay in memory only while a window is symbolized (libc6-dbg's libc
	 * alone holds 10-14 MiB open); what they named stays in the address caches. */
	symbolizer__release_dwarf(c->opts.symbolizer);
	/* The window's own blocks (the drained stacks, the profile, the encoded buffer) are
	 * free too: glibc returns free pages inside the heap only when asked (a few ms). */
	malloc_trim(0);
	if (c->opts.python)
		python__release(c->opts.python, w->seq);
	proctab__rescan(c->opts.proctab, c->seq);
	if (c->opts.unwinder) /* processes whose exit event was lost */
		unwinder__reconcile(c->opts.unwinder, image_known, c->opts.proctab);
	if (now_mono_ns() - c->summary_ns >= SUMMARY_EVERY_NS) {
		c->summary_ns = now_mono_ns();
		n = drain__reconcile_procs(c->opts.sampler, image_known, c->opts.proctab);
		if (n > 0)
			pr_debug("%d processes will be announced again", n);
		cycle__log_summary(c);
	}
	if (sampler__refresh_cpus(c->opts.sampler) > 0)
		pr_info("CPUs came online: now sampling %u CPUs", nr_cpus(c));
	cycle__publish(c);
}

int cycle__window(struct cycle *c)
{
	struct window w = { .t0 = now_mono_ns() };
	unsigned int idle;
	int err;

	drained_window__init(&w.dw);
	err = flip(c, &w, &idle);
	if (err) {
		drained_window__fini(&w.dw);
		return err;
	}
	err = build(c, &w, idle);
	if (!err)
		err = ship(c, &w);
	if (!err) {
		report(c, &w);
		add_window(c, &w);
		if (c->opts.kernel_stacks && w.ws.kernel_unnamed &&
		    now_mono_ns() - c->kallsyms_loaded_ns > KALLSYMS_RELOAD_NS) {
			c->kallsyms_loaded_ns = now_mono_ns();
			kernel_load_kallsyms(c->opts.symbolizer); /* modules loaded since */
		}
	}
	free(w.buf);
	profile__free(w.p);
	drained_window__fini(&w.dw);
	release(c, &w);
	pr_debug("window %" PRIu64 " handled in %" PRIu64 " ms", w.seq,
		 (now_mono_ns() - w.t0) / NSEC_PER_MSEC);
	return err;
}
