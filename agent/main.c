// SPDX-License-Identifier: Apache-2.0
/*
 * ignis: wiring, signals and the window clock.
 *
 * main() reads the configuration, builds the modules in dependency order (BPF first: without
 * privileges or BTF nothing else matters), and runs the loop: it waits on the ring buffer of
 * process events until the next window boundary, where the window cycle (cycle.c) takes
 * over. SIGINT/SIGTERM flush the current window and exit 0; a second signal exits at once.
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <curl/curl.h>
#include <systemd/sd-daemon.h>

#include "../symbolizer/symbolizer.h"
#include "cycle.h"
#include "collect/debuginfod.h"
#include "collect/hostview.h"
#include "collect/kernel.h"
#include "collect/kubernetes.h"
#include "operate/log.h"
#include "operate/metrics.h"
#include "operate/config.h"
#include "operate/options_server.h"
#include "collect/procfs.h"
#include "collect/proctab.h"
#include "collect/samples.h"
#include "collect/sampler.h"
#include "ship/sink_file.h"
#include "ship/sink_server.h"
#include "unwind/unwinder.h"
#include "profile/window.h"
#include "python/python.h"
#include "report/cli.h"

#ifndef IGNIS_VERSION
#define IGNIS_VERSION "0.0.0"
#endif

/* Time between two captures of one process for an address outside its mappings. */
#define RECAPTURE_GAP_NS (1000 * NSEC_PER_MSEC)
/* Time between two PROC_EV_MMAP of one process, enforced in BPF. */
#define MMAP_EVENT_GAP_NS (250 * NSEC_PER_MSEC)
/* At exit, how long queued profiles may take to reach the server (the rest is spooled). */
#define UPLOAD_FLUSH_NS (3 * NSEC_PER_SEC)
/* Names and line tables of Python code objects, all processes together. */
#define PYTHON_CODE_CACHE_BYTES (32ULL << 20)

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
	struct metrics *metrics;	       /* NULL without --metrics-address */
	struct kube *kube;		       /* NULL without --kubernetes */
	struct debuginfod_fetcher *debuginfod; /* NULL without --debuginfod-urls */
	struct unwinder *unwinder;	       /* NULL without the table unwinder */
	struct python *python;		       /* NULL without the Python walker */
	struct cycle *cycle;		       /* what happens at each window boundary */
	bool curl;			       /* curl_global_init() was called */
};

static void symbolizer_print(enum sym_log_level level, const char *fmt, va_list ap)
{
	enum log_level ours = (enum log_level)level;

	if (log_enabled(ours))
		log_vprintf(ours, fmt, ap);
}

static int on_proc_event(void *ctx, const struct proc_event *ev)
{
	struct agent *a = ctx;
	int err = proctab__handle_event(a->proctab, ev, a->cycle ? cycle__seq(a->cycle) : 0);

	if (err && err != -ESRCH && err != -ENOENT)
		pr_debug("pid %u: event %u: %s", ev->tgid, ev->type, strerror(-err));
	/* Captures publish to the unwinder (on_captured); an image that is gone leaves it. */
	if (a->unwinder && ev->type == PROC_EV_EXEC)
		unwinder__remove_process(a->unwinder, ev->tgid, ev->start_time, &ev->exec_id);
	else if (a->unwinder && ev->type == PROC_EV_EXIT)
		unwinder__remove_process(a->unwinder, ev->tgid, ev->start_time, NULL);
	if (a->python && (ev->type == PROC_EV_EXEC || ev->type == PROC_EV_EXIT))
		python__gone(a->python, ev->tgid, ev->start_time,
			     ev->type == PROC_EV_EXEC ? &ev->exec_id : NULL,
			     a->cycle ? cycle__seq(a->cycle) : 0);
	return 0;
}

static int on_py_code(void *ctx, const struct py_code_event *ev)
{
	struct agent *a = ctx;

	return a->python ? python__code_event(a->python, ev) : 0;
}

/* The mappings of an image were (re)captured: its unwind tables follow. */
static void on_captured(void *ctx, struct proc_image *img)
{
	struct agent *a = ctx;

	if (a->unwinder && unwinder__add_process(a->unwinder, img))
		pr_debug("pid %u: no unwind tables: out of memory", img->id.tgid);
	if (a->python)
		python__captured(a->python, img);
}

static int start_kubernetes(struct agent *a, const struct agent_config *cfg, const char *url)
{
	struct kube_opts ko = {
		.token_file = cfg->kubernetes_token_file,
		.ca_file = cfg->kubernetes_ca_file,
		.node_name = cfg->node_name,
		.pod_labels = cfg->kubernetes_pod_labels,
		.nr_pod_labels = cfg->nr_kubernetes_pod_labels,
	};

	int err;

	ko.api_url = url;
	a->kube = kube__new(&ko);
	if (!a->kube) {
		err = -errno;
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
		long tgid = procfs_tgid_of("/proc", cfg->pids[i]);

		if (tgid == -ESRCH) {
			fprintf(stderr, "ignis: --pid %u: no such process\n", cfg->pids[i]);
			return -ESRCH;
		}
		if (tgid > 0 && tgid != cfg->pids[i]) {
			fprintf(stderr,
				"ignis: --pid %u: is a thread of process %ld; give the process "
				"id (--pid %ld)\n",
				cfg->pids[i], tgid, tgid);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * Refuse to be blind (issue 20): BPF reports the kernel's process ids, which name the right
 * /proc/PID only in the initial PID namespace with its own /proc. Elsewhere every frame would
 * be [unknown] and no process named: exit instead, saying what to fix.
 */
static int check_pid_namespace(void)
{
	struct hostview_pidns f;
	const char *why;
	int err;

	err = hostview_read_pidns("/proc", getpid(), &f);
	if (err) {
		pr_err("cannot read /proc/self/status (%s): ignis needs the host's /proc mounted "
		       "on /proc",
		       strerror(-err));
		return err;
	}
	why = hostview_pidns_problem(&f);
	if (!why)
		return 0;
	pr_err("%s: ignis would see none of the host's processes (every frame [unknown]); run it "
	       "on the host, or in the host's PID namespace with the host's /proc (Kubernetes: "
	       "hostPID: true in the pod spec; docker: --pid=host)",
	       why);
	return -EPERM;
}

/*
 * BPF loaded: say which processes the agent cannot read for want of a capability, once, with
 * the fix. Their samples are counted (ignis_samples_without_mappings_total{reason="denied"}).
 */
static void warn_missing_caps(void)
{
	struct hostview_caps c;

	if (hostview_read_caps("/proc", &c))
		return;
	if (!hostview_has(&c, HOSTVIEW_CAP_SYS_PTRACE))
		pr_warn("no CAP_SYS_PTRACE: the binaries of processes of other users than uid %u, "
			"of setuid programs and of processes holding a capability ignis lacks "
			"(root's, when it runs as root) cannot be opened (/proc/PID/root, exe, "
			"map_files; on some kernels not even their maps read): their frames keep "
			"their addresses, unnamed ([binary], or [unknown] without maps), counted in "
			"ignis_frames_file_unreadable_total{reason=\"denied\"} and "
			"ignis_samples_without_mappings_total{reason=\"denied\"}; run as root with "
			"all capabilities or grant CAP_SYS_PTRACE",
			(unsigned int)c.euid);
	if (!hostview_has(&c, HOSTVIEW_CAP_DAC_READ_SEARCH) &&
	    !hostview_has(&c, HOSTVIEW_CAP_DAC_OVERRIDE))
		pr_warn("no CAP_DAC_READ_SEARCH: binaries uid %u may not read (in private folders, "
			"mode 0711) cannot be opened: their frames keep their addresses and mapping, "
			"unnamed; grant CAP_DAC_READ_SEARCH",
			(unsigned int)c.euid);
	if (!hostview_has(&c, HOSTVIEW_CAP_SYS_ADMIN) &&
	    (c.cap_last < HOSTVIEW_CAP_CHECKPOINT_RESTORE ||
	     !hostview_has(&c, HOSTVIEW_CAP_CHECKPOINT_RESTORE)))
		pr_warn("no %s: deleted or replaced binaries cannot be opened through "
			"/proc/PID/map_files: their frames keep their addresses and mapping, unnamed; "
			"grant it",
			c.cap_last >= HOSTVIEW_CAP_CHECKPOINT_RESTORE ? "CAP_CHECKPOINT_RESTORE" :
									"CAP_SYS_ADMIN");
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

static int run(struct agent *a)
{
	struct agent_config *cfg = a->cfg;
	uint64_t interval = (uint64_t)cfg->interval_sec * NSEC_PER_SEC;
	uint64_t start = now_mono_ns(), next = start + interval;
	uint64_t end = cfg->duration_sec ? start + (uint64_t)cfg->duration_sec * NSEC_PER_SEC : 0;
	int err = 0;

	while (!stop_requested) {
		uint64_t now = now_mono_ns(), deadline = next;
		int timeout;

		if (end && end < deadline)
			deadline = end;
		if (now >= deadline) {
			if (end && now >= end)
				break;
			err = cycle__window(a->cycle);
			if (err)
				return err;
			next += interval;
			if (next <= now_mono_ns()) /* the window ran late: skip ahead */
				next = now_mono_ns() + interval;
			continue;
		}
		timeout = (int)((deadline - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC);
		if (a->python) { /* interpreters still starting: attach again soon */
			int retry = python__poll(a->python);

			if (retry >= 0 && retry < timeout)
				timeout = retry;
		}
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
	unwinder__stop_building(a->unwinder);
	return cycle__window(a->cycle);
}

/* BPF first: without privileges or BTF nothing else matters, and nothing is created. Events
 * wait in the ring buffer until the loop reads them. */
static int start_sampler(struct agent *a)
{
	const struct agent_config *cfg = a->cfg;
	struct sampler_opts so = {
		.frequency_hz = cfg->frequency_hz,
		.event = cfg->event,
		.user_stacks = true,
		.kernel_stacks = cfg->kernel_stacks,
		.skip_walk = cfg->skip_walk,
		.log_records = cfg->log_records,
		.pids = cfg->pids,
		.nr_pids = cfg->nr_pids,
		.max_stacks = cfg->max_stacks,
		.window_sec = cfg->interval_sec,
		.mmap_event_gap_ns = MMAP_EVENT_GAP_NS,
		.on_event = on_proc_event,
		.on_py_code = on_py_code,
		.ctx = a,
		.unwind = cfg->unwind,
		.unwind_rows = (uint32_t)(cfg->unwind_table_bytes / SAMPLER_UNWIND_ROW_BYTES),
		.unwind_maps = SAMPLER_UNWIND_MAPPINGS,
		.python = cfg->python,
		.offcpu = cfg->offcpu,
		.offcpu_kthreads = cfg->offcpu_kthreads,
		.offcpu_period_ns = (uint64_t)cfg->offcpu_period_ms * NSEC_PER_MSEC,
		.offcpu_min_block_ns = (uint64_t)cfg->offcpu_min_block_us * NSEC_PER_USEC,
		.offcpu_max_rate = cfg->offcpu_max_rate,
		.py_procs = SAMPLER_PY_PROCESSES,
		.py_codes = SAMPLER_PY_CODES,
		.unwind_procs = SAMPLER_UNWIND_PROCESSES,
		.unwind_exes = SAMPLER_UNWIND_EXECUTABLES,
	};

	a->sampler = sampler__new(&so);
	if (!a->sampler)
		return -errno;
	return sampler__attach(a->sampler);
}

/* The symbolizer with the kernel's images, and the process table that feeds it. */
static int start_symbols(struct agent *a)
{
	const struct agent_config *cfg = a->cfg;
	struct symbolizer_opts so = { .sz = sizeof(so),
				      .cache_max_bytes = cfg->symbol_cache_bytes,
				      .print = symbolizer_print };
	struct proctab_opts po = { .proc_root = "/proc",
				   .min_recapture_ns = RECAPTURE_GAP_NS,
				   .debug_dir = cfg->debug_dir,
				   .captured = on_captured,
				   .captured_ctx = a };
	int err;

	a->symbolizer = symbolizer__new(&so);
	if (!a->symbolizer) {
		err = -errno;
		pr_err("cannot create the symbolizer: %s", strerror(-err));
		return err;
	}
	if (sysfs_kernel_build_id(a->kernel_build_id, sizeof(a->kernel_build_id)))
		a->kernel_build_id[0] = '\0';
	a->vdso = kernel_open_vdso(a->symbolizer);
	po.symbolizer = a->symbolizer;
	po.vdso = a->vdso;
	if (cfg->debuginfod_urls) {
		a->debuginfod = debuginfod_fetcher__new(
			cfg->debuginfod_urls, (unsigned int)cfg->debuginfod_timeout_sec, NULL);
		if (!a->debuginfod)
			pr_warn("debuginfod: cannot start fetching (%s); debug files come from disk "
				"only",
				strerror(errno));
		/* An object without DWARF and no debug file on disk: ask debuginfod. */
		po.debug_missing = a->debuginfod ? debuginfod_fetcher_request_object : NULL;
		po.debug_missing_ctx = a->debuginfod;
	}
	a->proctab = proctab__new(&po);
	if (!a->proctab) {
		pr_err("out of memory");
		return -ENOMEM;
	}
	return 0;
}

static int start_unwinder(struct agent *a)
{
	struct unwinder_opts uo = {
		.rows_fd = sampler__unwind_rows_fd(a->sampler),
		.maps_fd = sampler__unwind_maps_fd(a->sampler),
		.procs_fd = sampler__unwind_procs_fd(a->sampler),
		.exes_fd = sampler__unwind_exes_fd(a->sampler),
		.max_rows = (uint32_t)(a->cfg->unwind_table_bytes / SAMPLER_UNWIND_ROW_BYTES),
		.max_maps = SAMPLER_UNWIND_MAPPINGS,
		.max_procs = SAMPLER_UNWIND_PROCESSES,
	};
	int err;

	if (!sampler__unwinds(a->sampler))
		return 0;
	a->unwinder = unwinder__new(&uo);
	if (!a->unwinder) {
		err = -errno;
		pr_err("cannot start the unwinder: %s", strerror(-err));
		return err;
	}
	return 0;
}

static int start_python(struct agent *a)
{
	struct python_opts po = {
		.proctab = a->proctab,
		.max_procs = SAMPLER_PY_PROCESSES,
		.symbolizer = a->symbolizer,
		.max_code_bytes = PYTHON_CODE_CACHE_BYTES,
	};

	if (!a->cfg->python)
		return 0;
	if (!sampler__python(a->sampler)) {
		pr_warn("Python frames off: they need the table unwinder (--unwind auto)");
		return 0;
	}
	po.procs_fd = sampler__py_procs_fd(a->sampler);
	a->python = python__new(&po);
	if (!a->python) {
		pr_err("cannot start the Python walker: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

static bool python_frame(void *ctx, const struct proc_image *img, uint64_t serial, uint32_t lasti,
			 struct pycode_frame *out)
{
	return python__frame(ctx, img, serial, lasti, out);
}

static bool fp_step_ok(void *ctx, const struct sym_object *obj, uint64_t vaddr)
{
	return unwinder__fp_step_ok(ctx, obj, vaddr);
}

static bool fp_end_ok(void *ctx, const struct sym_object *obj)
{
	return unwinder__fp_end_ok(ctx, obj);
}

static void object_used(void *ctx, struct sym_object *obj)
{
	unwinder__note_use(ctx, obj);
}

/* The window builder, the local folder, /metrics, and the cycle that uses them. */
static int start_windows(struct agent *a, bool kernel_symbols)
{
	const struct agent_config *cfg = a->cfg;
	struct window_builder_opts wo = {
		.proctab = a->proctab,
		.symbolizer = a->symbolizer,
		.kernel_symbols = kernel_symbols,
		.kernel_build_id = a->kernel_build_id[0] ? a->kernel_build_id : NULL,
		.kube = a->kube,
		.targets = a->server ? server_sink__targets(a->server) : NULL,
		.fp_step_ok = a->unwinder ? fp_step_ok : NULL,
		.fp_end_ok = a->unwinder ? fp_end_ok : NULL,
		.object_used = a->unwinder ? object_used : NULL,
		.fp_step_ctx = a->unwinder,
		.offcpu = cfg->offcpu,
		.python_frame = a->python ? python_frame : NULL,
		.python_ctx = a->python,
	};
	struct file_sink_opts fo = { .sz = sizeof(fo),
				     .dir = cfg->output_dir,
				     .hostname = a->hostname,
				     .max_bytes = cfg->output_max_bytes,
				     .max_age_sec = cfg->output_max_age_sec };
	struct cycle_opts co = { 0 };
	int err;

	a->builder = window_builder__new(&wo);
	if (!a->builder) {
		pr_err("out of memory");
		return -ENOMEM;
	}
	a->sink = cfg->output_dir ? file_sink__new(&fo) : NULL;
	if (cfg->output_dir && !a->sink) {
		err = -errno;
		pr_err("cannot use %s for profiles: %s; pick another with --output-dir",
		       cfg->output_dir, strerror(-err));
		return err;
	}
	if (cfg->metrics_address) {
		a->metrics = metrics__new(cfg->metrics_address, IGNIS_VERSION);
		if (!a->metrics)
			return -errno;
	}
	co = (struct cycle_opts){
		.sampler = a->sampler,
		.proctab = a->proctab,
		.symbolizer = a->symbolizer,
		.builder = a->builder,
		.unwinder = a->unwinder,
		.python = a->python,
		.sink = a->sink,
		.server = a->server,
		.metrics = a->metrics,
		.debuginfod = a->debuginfod,
		.hostname = a->hostname,
		.output_dir = cfg->output_dir,
		.frequency_hz = cfg->frequency_hz,
		.interval_sec = cfg->interval_sec,
		.symbol_idle_sec = cfg->symbol_cache_idle_sec,
		.top = cfg->top,
		.unwind_rows = cfg->unwind_table_bytes / SAMPLER_UNWIND_ROW_BYTES,
		.kernel_stacks = cfg->kernel_stacks,
		.offcpu = cfg->offcpu,
	};
	a->cycle = cycle__new(&co);
	if (!a->cycle)
		return -errno;
	if (a->metrics) {
		cycle__publish(a->cycle);
		pr_info("metrics on http://%s/metrics, health on /healthz", cfg->metrics_address);
	}
	return 0;
}
/*
 * Read the configuration and do what needs no BPF: --help and the like, the checks of --pid
 * and --kubernetes, the host's name, the server sink (whose settings it validates). Returns
 * -1 to go on, else the exit code (2 for a configuration to fix).
 */
static int configure(struct agent *a, int argc, char **argv, char **kube_url)
{
	struct agent_config *cfg = a->cfg;

	if (config_load(cfg, argc, argv, environ, stderr)) {
		fputc('\n', stderr);
		config_usage(stderr);
		return 2;
	}
	if (config_act(cfg, stdout))
		return 0;
	log_max_level = cfg->log_level;
	/* libcurl (and through it OpenSSL: 2 MiB of RSS) is initialized only when something
	 * will make requests; libdebuginfod brings its own. */
	if (cfg->server_url || cfg->kubernetes) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		a->curl = true;
	}
	if (check_pids(cfg) || config_check(cfg, stderr))
		return 2;
	if (cfg->kubernetes) {
		*kube_url = kube_api_url(cfg->kubernetes_api_url);
		if (!*kube_url)
			return 2;
	}
	/* NODE_NAME (--node-name) names the host in profiles, as in a cluster's other tools. */
	if (cfg->node_name)
		snprintf(a->hostname, sizeof(a->hostname), "%s", cfg->node_name);
	else if (gethostname(a->hostname, sizeof(a->hostname) - 1))
		snprintf(a->hostname, sizeof(a->hostname), "localhost");
	if (cfg->server_url) {
		struct server_sink_opts sso;

		config_server_sink_opts(cfg, a->hostname, &sso);
		a->server = server_sink__new(&sso);
		if (!a->server)
			return errno == EINVAL ? 2 : 1;
	}
	if (!cfg->output_dir && !cfg->server_url) {
		cfg->output_dir = strdup(DEFAULT_OUTPUT_DIR);
		if (!cfg->output_dir)
			return 1;
		pr_info("writing profiles to %s (no --output-dir given)", cfg->output_dir);
	}
	return -1;
}

static void stop(struct agent *a, int ret)
{
	cycle__free(a->cycle);
	python__free(a->python);
	unwinder__free(a->unwinder);
	debuginfod_fetcher__free(a->debuginfod);
	metrics__free(a->metrics);
	server_sink__free(a->server, ret == 0 ? UPLOAD_FLUSH_NS : 0);
	kube__free(a->kube);
	sampler__free(a->sampler);
	file_sink__free(a->sink);
	window_builder__free(a->builder);
	proctab__free(a->proctab);
	sym_object__put(a->vdso);
	symbolizer__free(a->symbolizer);
}

/*
 * glibc's allocator, set for a long-running process whose large blocks (unwind rows being
 * built, DWARF sections while a window is symbolized, window buffers) come and go: blocks from
 * 256 KiB up are mmap'ed and unmapped when freed (glibc would otherwise raise that threshold
 * after the first such free, up to 32 MiB, and keep them in the heap); a free heap top over
 * 1 MiB is given back; two arenas at most (the main loop and the unwind-table builder: more
 * arenas only keep more freed memory per thread; the other threads allocate little).
 */
static void tune_malloc(void)
{
	mallopt(M_MMAP_THRESHOLD, 256 << 10);
	mallopt(M_TRIM_THRESHOLD, 1 << 20);
	mallopt(M_ARENA_MAX, 2);
}

int main(int argc, char **argv)
{
	struct agent_config cfg;
	struct agent a = { .cfg = &cfg };
	struct sigaction sa = { .sa_handler = on_signal };
	char *kube_url = NULL;
	bool kernel_symbols = false;
	int ret;

	/* The local analysis commands read files only: no BPF, no configuration checks. */
	if (argc > 1 && !strcmp(argv[1], "report"))
		return report_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "diff"))
		return diff_main(argc - 1, argv + 1);
	tune_malloc();
	config_init(&cfg);
	ret = configure(&a, argc, argv, &kube_url);
	if (ret >= 0)
		goto cleanup;
	ret = 1;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	raise_fd_limit();

	if (check_pid_namespace() || start_sampler(&a) || start_symbols(&a))
		goto cleanup;
	warn_missing_caps();
	if (cfg.kernel_stacks)
		kernel_symbols = kernel_load_kallsyms(a.symbolizer);
	if (start_unwinder(&a) || start_python(&a) ||
	    (kube_url && start_kubernetes(&a, &cfg, kube_url)) || start_windows(&a, kernel_symbols))
		goto cleanup;
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

	ret = run(&a) ? 1 : 0;
	sd_notify(0, "STOPPING=1\nSTATUS=flushing the last window");
	cycle__log_summary(a.cycle);
cleanup:
	stop(&a, ret);
	config_fini(&cfg);
	free(kube_url);
	if (a.curl)
		curl_global_cleanup();
	return ret;
}
