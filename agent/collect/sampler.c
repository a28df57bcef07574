// SPDX-License-Identifier: Apache-2.0
/*
 * The BPF side's owner: opens, configures, loads and attaches the skeleton, holds one
 * cpu-clock perf event per online CPU, and flips the map generations.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "../../bpf/profiler.h"
#include "profiler.skel.h"
#include "operate/log.h"
#include "hostview.h"
#include "samples.h"
#include "sampler.h"

/*
 * Map sizing: a window holds at most CPUs x Hz x seconds samples; leave room for windows
 * that run late, and never go below or above these bounds unless asked. Each sample stores
 * at most two new stacks (user and kernel), an off-CPU sample as well. A stack takes one
 * entry per IGNIS_STACK_PART_FRAMES frames (bpf/profiler.h): its first in the stacks map,
 * which has room for every stack a window can bring, so no sample ever loses its stack's
 * leaf frames; the others in the tails map, STACK_TAILS_PER_STACK entries per stack: every
 * stack of a window is whole as long as they need one tail (a stack over 32 frames) on
 * average, whatever the host runs, and deep ones (a Python stack, to 256 frames, 7 tails)
 * share the room shorter ones leave. A
 * full tails map keeps a stack's first part, cut (counted); docs/architecture.md has the
 * sizes per CPU count.
 */
#define MIN_MAP_ENTRIES	      1024U
#define MAX_MAP_ENTRIES	      (256U * 1024)
#define SIZING_HEADROOM_PCT   150
#define STACK_TAILS_PER_STACK 1
/* The sample log's records per CPU and generation at most: 576 KiB a CPU (72-byte records). */
#define MAX_LOG_RECORDS 4096U
/* procs (LRU): the process images BPF announced; an evicted one is announced again (one
 * event, which the agent finds known, and a capture of its mappings). Twice a window's
 * samples: every process a window can sample, and the previous window's. Off-CPU time
 * announces every task switched in, whatever the sample rate: with --off-cpu at least
 * MIN_PROCS_OFFCPU, the size before it was derived from the window. */
#define MIN_PROCS_ENTRIES 4096U
#define MIN_PROCS_OFFCPU  16384U
#define MAX_PROCS_ENTRIES (64U * 1024)

struct cpu_event {
	int pfd; /* perf event fd, owned by link once attached */
	struct bpf_link *link;
	__u32 link_id;	     /* the kernel's id of the link, to notice it going */
	bool gone;	     /* the link's descriptor no longer names it */
	uint64_t last_fired; /* count / period at the previous sampler__events_fired() */
};

struct sampler {
	struct sampler_opts opts;
	struct profiler_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link *exec_link;
	struct bpf_link *exit_link;
	struct bpf_link *switch_link; /* off-CPU: sched_switch */
	struct bpf_link *offcpu_link; /* off-CPU: the end of a system call */
	struct cpu_event *cpus;	      /* indexed by CPU number, nr_possible entries */
	int nr_possible;
	unsigned int nr_attached;
	unsigned int nr_gone;
	uint64_t period_ns;   /* cpu-clock period, 0 for the hardware event */
	uint64_t attached_ns; /* CLOCK_MONOTONIC when the programs were attached */
	uint32_t max_stacks;  /* stacks a window can bring: entries of each stacks map */
	uint32_t max_tails;   /* entries of each generation's tails map */
	uint32_t max_procs;   /* entries of procs */
	uint32_t max_samples;
	uint32_t log_cap;	 /* records of each CPU's run in a generation's sample log */
	uint32_t max_offcpu;	 /* entries of each generation's off-CPU map */
	bool unwinds;		 /* the table unwinder is loaded */
	uint64_t events_read_ns; /* CLOCK_MONOTONIC after the last poll that read events */
};

/* libbpf's messages go through our logger; the verifier's log only at debug level. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	static bool in_verifier_log;
	enum log_level ours = level == LIBBPF_WARN ? LOG_LEVEL_WARN : LOG_LEVEL_DEBUG;

	if (strstr(fmt, "-- BEGIN PROG LOAD LOG --"))
		in_verifier_log = true;
	if (in_verifier_log)
		ours = LOG_LEVEL_DEBUG;
	if (strstr(fmt, "-- END PROG LOAD LOG --"))
		in_verifier_log = false;
	/* libbpf warns of a failed load before we explain it; keep its detail for debug. */
	if (ours == LOG_LEVEL_WARN)
		ours = LOG_LEVEL_DEBUG;
	if (log_enabled(ours))
		log_vprintf(ours, fmt, ap);
	return 0;
}

static long perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group,
			    unsigned long flags)
{
	return syscall(__NR_perf_event_open, attr, pid, cpu, group, flags);
}

int cpulist_parse(const char *s, uint8_t *bitmap, unsigned int nbits)
{
	const char *p = s;
	int count = 0;

	memset(bitmap, 0, (nbits + 7) / 8);
	while (*p && *p != '\n') {
		unsigned long a, b;
		char *end;

		errno = 0;
		a = strtoul(p, &end, 10);
		if (errno || end == p)
			return -EINVAL;
		b = a;
		if (*end == '-') {
			p = end + 1;
			b = strtoul(p, &end, 10);
			if (errno || end == p || b < a)
				return -EINVAL;
		}
		if (b >= nbits)
			return -EINVAL;
		for (; a <= b; a++) {
			if (!(bitmap[a / 8] & (1U << (a % 8))))
				count++;
			bitmap[a / 8] |= 1U << (a % 8);
		}
		p = end;
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			return -EINVAL;
	}
	return count;
}

static int read_online_cpus(uint8_t *bitmap, unsigned int nbits)
{
	char buf[4096];
	ssize_t n;
	int fd, err;

	fd = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	err = n < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err;
	buf[n] = '\0';
	return cpulist_parse(buf, bitmap, nbits);
}

static uint32_t size_map(uint32_t asked, const struct sampler_opts *o, uint32_t per_sample,
			 int nr_cpus)
{
	uint64_t n;

	if (asked)
		return asked;
	n = (uint64_t)nr_cpus * o->frequency_hz * (o->window_sec ? o->window_sec : 10);
	n = n * per_sample * SIZING_HEADROOM_PCT / 100;
	if (n < MIN_MAP_ENTRIES)
		n = MIN_MAP_ENTRIES;
	if (n > MAX_MAP_ENTRIES)
		n = MAX_MAP_ENTRIES;
	return (uint32_t)n;
}

/*
 * "permission denied", saying which capability is missing (CAP_BPF, CAP_PERFMON, or
 * CAP_SYS_ADMIN before Linux 5.8, which had neither), or, with them all effective, what else
 * refuses: a seccomp profile or a security module, or the locked-memory limit of old kernels.
 */
static void explain_permission(const char *what)
{
	struct hostview_caps caps;
	char missing[64];

	if (hostview_read_caps("/proc", &caps)) {
		pr_err("%s: permission denied; run as root or grant CAP_BPF and CAP_PERFMON "
		       "(CAP_SYS_ADMIN before Linux 5.8)",
		       what);
		return;
	}
	hostview_missing_bpf_caps(&caps, missing, sizeof(missing));
	if (missing[0])
		pr_err("%s: permission denied: %s missing; run as root or grant %s (and "
		       "CAP_SYS_RESOURCE on kernels < 5.11, for the locked-memory limit)",
		       what, missing,
		       hostview_split_bpf_caps(&caps) ? "CAP_BPF and CAP_PERFMON" :
							"CAP_SYS_ADMIN");
	else
		pr_err("%s: permission denied although %s effective: a seccomp profile "
		       "(containers: --security-opt seccomp=unconfined), a security module or "
		       "lockdown refuses bpf(), or the locked-memory limit (kernels < 5.11: "
		       "`ulimit -l`, CAP_SYS_RESOURCE)",
		       what,
		       hostview_has(&caps, HOSTVIEW_CAP_SYS_ADMIN) ? "CAP_SYS_ADMIN is" :
								     "CAP_BPF and CAP_PERFMON are");
}

static void explain_load_error(int err)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		pr_err("cannot load BPF: this kernel exposes no BTF (/sys/kernel/btf/vmlinux); "
		       "ignis needs Linux >= 5.10 built with CONFIG_DEBUG_INFO_BTF=y");
		return;
	}
	switch (err) {
	case -EPERM:
		explain_permission("cannot load BPF");
		break;
	case -ENOMEM:
		pr_err("cannot load BPF: out of memory or locked-memory limit reached; raise "
		       "`ulimit -l` (LimitMEMLOCK= under systemd) or grant CAP_SYS_RESOURCE");
		break;
	case -EACCES:
	case -EINVAL:
		pr_err("cannot load BPF: the kernel's verifier rejected the sampler (%s); "
		       "run with --log-level debug to see its log",
		       strerror(-err));
		break;
	default:
		pr_err("cannot load BPF: %s; run with --log-level debug for libbpf's log",
		       strerror(-err));
	}
}

_Static_assert(PROC_EV_NEW == PROC_EVENT_NEW && PROC_EV_MMAP == PROC_EVENT_MMAP &&
		       PROC_EV_EXEC == PROC_EVENT_EXEC && PROC_EV_EXIT == PROC_EVENT_EXIT &&
		       PROC_EV_MAPPING == PROC_EVENT_MAPPING,
	       "process event types of samples.h and bpf/profiler.h");

_Static_assert(SAMPLER_UNWIND_ROW_BYTES == sizeof(struct ignis_unwind_row), "unwind row size");

/* A ring-buffer record to the agent's plain struct proc_event. */
static int handle_event(void *ctx, void *data, size_t size)
{
	const struct ignis_proc_event *in = data;
	struct sampler *s = ctx;
	struct proc_event ev;

	if (size >= sizeof(struct ignis_py_code_event) && in->type == PROC_EVENT_PY_CODE) {
		const struct ignis_py_code_event *pe = data;
		struct py_code_event pev = {
			.tgid = pe->tgid,
			.exec_id = pe->exec_id,
			.start_time = pe->start_time,
			.serial = pe->serial,
			.code = pe->code,
			.identity = pe->identity,
			.firstlineno = pe->firstlineno,
		};
		size_t n = pe->name_len < PY_EVENT_NAME ? pe->name_len : PY_EVENT_NAME;

		memcpy(pev.name, pe->name, n);
		n = pe->file_len < PY_EVENT_FILE ? pe->file_len : PY_EVENT_FILE;
		memcpy(pev.filename, pe->file, n);

		return s->opts.on_py_code ? s->opts.on_py_code(s->opts.ctx, &pev) : 0;
	}
	if (size >= sizeof(struct ignis_mapping_event) && in->type == PROC_EVENT_MAPPING) {
		const struct ignis_mapping_event *me = data;

		if (!s->opts.on_event)
			return 0;
		ev = (struct proc_event){
			.type = PROC_EV_MAPPING,
			.tgid = me->tgid,
			.start_time = me->start_time,
			.exec_id = me->exec_id,
			.exe_dev = me->dev,
			.exe_inode = me->ino,
			.start = me->start,
			.end = me->end,
			.offset = me->offset,
		};
		return s->opts.on_event(s->opts.ctx, &ev);
	}
	if (size < sizeof(*in) || !s->opts.on_event)
		return 0;
	ev = (struct proc_event){
		.type = in->type,
		.tgid = in->tgid,
		.start_time = in->start_time,
		.exec_id = in->exec_id,
		.exe_dev = in->exe_dev,
		.exe_inode = in->exe_inode,
	};
	memcpy(ev.comm, in->comm, sizeof(ev.comm));
	ev.comm[sizeof(ev.comm) - 1] = '\0';
	return s->opts.on_event(s->opts.ctx, &ev);
}

/*
 * Whether this kernel's sched_switch tracepoint passes prev_state (Linux 5.18): its BTF's
 * btf_trace_sched_switch is a pointer to a function of (void *, bool preempt, prev, next,
 * unsigned int prev_state) then, of four parameters before.
 */
static bool switch_passes_prev_state(void)
{
	struct btf *btf = btf__load_vmlinux_btf();
	const struct btf_type *t;
	bool yes = false;
	int id;

	if (!btf)
		return false;
	id = btf__find_by_name_kind(btf, "btf_trace_sched_switch", BTF_KIND_TYPEDEF);
	t = id > 0 ? btf__type_by_id(btf, (__u32)id) : NULL;
	if (t)
		t = btf__type_by_id(btf, t->type); /* the pointer */
	if (t && btf_is_ptr(t))
		t = btf__type_by_id(btf, t->type);
	if (t && btf_is_func_proto(t))
		yes = btf_vlen(t) == 5;
	btf__free(btf);
	return yes;
}

static const char *yes_no(int probe)
{
	return probe > 0 ? "yes" : probe == 0 ? "no" : "unknown";
}

/*
 * One debug line of what this kernel offers the agent and which programs loaded, so that a
 * run on another kernel (tests/integration/test_kernels.py) records it. The probes load tiny
 * programs: only at debug level.
 */
static void log_kernel_features(const struct sampler *s)
{
	struct bpf_program *prog;
	char progs[256] = "";
	struct utsname u;
	bool tp_btf = false;
	size_t len = 0;

	if (log_max_level < LOG_LEVEL_DEBUG)
		return;
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "?");
	bpf_object__for_each_program(prog, s->skel->obj) {
		if (bpf_program__fd(prog) < 0)
			continue;
		if (!strncmp(bpf_program__section_name(prog), "tp_btf/", 7))
			tp_btf = true;
		if (len < sizeof(progs))
			len += (size_t)snprintf(progs + len, sizeof(progs) - len, "%s%s",
						len ? "," : "", bpf_program__name(prog));
	}
	pr_debug("kernel %s offers: btf=%s ringbuf=%s bpf_loop=%s task_storage=%s find_vma=%s "
		 "tp_btf=%s; programs loaded: %s",
		 u.release, yes_no(access("/sys/kernel/btf/vmlinux", R_OK) == 0),
		 yes_no(libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL)),
		 yes_no(libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop, NULL)),
		 yes_no(libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL)),
		 yes_no(libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_find_vma, NULL)),
		 yes_no(tp_btf), progs);
}

/* Open, size and load the skeleton, with or without the table unwinder, and with or without
 * its lookups by file (bpf_find_vma(), Linux 5.17). */
static int load(struct sampler *s, bool unwind, bool files)
{
	const struct sampler_opts *opts = &s->opts;
	struct profiler_bpf *skel;
	struct bpf_map *maps[8];
	uint32_t zero = IGNIS_PROG_UNWIND;
	size_t i;
	int err, fd;

	skel = profiler_bpf__open();
	if (!skel)
		return -errno;
	s->skel = skel;

	skel->rodata->cfg.user_stacks = opts->user_stacks;
	skel->rodata->cfg.kernel_stacks = opts->kernel_stacks;
	skel->rodata->cfg.skip_walk = opts->skip_walk;
	skel->rodata->cfg.log_cap = s->log_cap;
	skel->rodata->cfg.nr_cpus = (uint32_t)s->nr_possible;
	skel->rodata->cfg.filter_pids = opts->nr_pids > 0;
	skel->rodata->cfg.mmap_event_gap_ns = opts->mmap_event_gap_ns;
	skel->rodata->cfg.unwind_tables = unwind;
	skel->rodata->cfg.python = unwind && opts->python;
	skel->rodata->cfg.offcpu = opts->offcpu;
	skel->rodata->cfg.offcpu_kthreads = opts->offcpu_kthreads;
	skel->rodata->cfg.offcpu_period_ns = opts->offcpu_period_ns;
	skel->rodata->cfg.offcpu_min_block_ns = opts->offcpu_min_block_ns;
	skel->rodata->cfg.switch_prev_state = opts->offcpu && switch_passes_prev_state();
	if (opts->offcpu_max_rate) {
		skel->rodata->cfg.offcpu_cost_ns = NSEC_PER_SEC / opts->offcpu_max_rate;
		/* A tenth of a second's samples may come at once. */
		skel->rodata->cfg.offcpu_burst_ns = NSEC_PER_SEC / 10;
		if (skel->rodata->cfg.offcpu_burst_ns < skel->rodata->cfg.offcpu_cost_ns)
			skel->rodata->cfg.offcpu_burst_ns = skel->rodata->cfg.offcpu_cost_ns;
	}

	/* The inner-map templates keep max_entries 1: since Linux 5.10 the kernel compares
	 * only type, key and value sizes and flags of a hash map put in a map-in-map. */
	maps[0] = skel->maps.stacks_0;
	maps[1] = skel->maps.stacks_1;
	maps[2] = skel->maps.counts_0;
	maps[3] = skel->maps.counts_1;
	maps[4] = skel->maps.tails_0;
	maps[5] = skel->maps.tails_1;
	maps[6] = skel->maps.offcpu_0;
	maps[7] = skel->maps.offcpu_1;
	for (i = 0; i < 8; i++) {
		/* Off-CPU keys come with threads, not with the sampling rate: a host that starts
		 * thousands of short processes a second has that many keys per window. */
		uint32_t n = i < 2 ? s->max_stacks :
			     i < 4 ? s->max_samples :
			     i < 6 ? s->max_tails :
				     s->max_offcpu;

		err = bpf_map__set_max_entries(maps[i], i < 6 || opts->offcpu ? n : 1);
		if (err)
			goto err_size;
	}
	err = bpf_map__set_max_entries(skel->maps.sample_log,
				       2 * s->log_cap * (uint32_t)s->nr_possible);
	if (err)
		goto err_size;
	if (!opts->offcpu) {
		/* Task storage for tracing programs needs 5.13: without --off-cpu nothing of it is created. */
		bpf_map__set_autocreate(skel->maps.offcpu_tasks, false);
		bpf_program__set_autoload(skel->progs.ignis_switch, false);
		bpf_program__set_autoload(skel->progs.ignis_offcpu, false);
	}

	err = bpf_map__set_max_entries(skel->maps.procs, s->max_procs);
	if (err)
		goto err_size;
	if (opts->nr_pids) {
		err = bpf_map__set_max_entries(skel->maps.pid_filter, (uint32_t)opts->nr_pids);
		if (err)
			goto err_size;
	}
	if (unwind) {
		err = bpf_map__set_max_entries(skel->maps.unwind_rows, opts->unwind_rows);
		if (!err)
			err = bpf_map__set_max_entries(skel->maps.unwind_maps, opts->unwind_maps);
		if (!err)
			err = bpf_map__set_max_entries(skel->maps.unwind_procs, opts->unwind_procs);
		if (!err)
			err = bpf_map__set_max_entries(skel->maps.unwind_exes, opts->unwind_exes);
		if (!err)
			err = bpf_map__set_max_entries(skel->maps.py_procs,
						       opts->python ? opts->py_procs : 1);
		if (!err)
			err = bpf_map__set_max_entries(skel->maps.py_codes,
						       opts->python ? opts->py_codes : 1);
		if (err)
			goto err_size;
	}
	/* One unwinder: with lookups by file where bpf_find_vma() is (5.17), which the older
	 * kernels' verifier would refuse. */
	files = files && unwind;
	bpf_program__set_autoload(skel->progs.ignis_unwind, unwind && !files);
	bpf_program__set_autoload(skel->progs.ignis_unwind_files, files);
	bpf_program__set_autoload(skel->progs.ignis_offcpu_unwind,
				  opts->offcpu && unwind && !files);
	bpf_program__set_autoload(skel->progs.ignis_offcpu_unwind_files, opts->offcpu && files);
	err = profiler_bpf__load(skel);
	if (err)
		return err;
	if (unwind && !files)
		pr_info("the table unwinder looks up no files (bpf_find_vma(), Linux 5.17): until "
			"a process's mappings are captured, its libraries are walked with frame "
			"pointers");
	if (unwind) {
		fd = bpf_program__fd(files ? skel->progs.ignis_unwind_files :
					     skel->progs.ignis_unwind);
		if (bpf_map_update_elem(bpf_map__fd(skel->maps.progs), &zero, &fd, BPF_ANY)) {
			err = -errno;
			pr_err("cannot install the unwinder program: %s", strerror(-err));
			return err;
		}
		fd = bpf_program__fd(files ? skel->progs.ignis_offcpu_unwind_files :
					     skel->progs.ignis_offcpu_unwind);
		if (opts->offcpu && bpf_map_update_elem(bpf_map__fd(skel->maps.offcpu_progs), &zero,
							&fd, BPF_ANY)) {
			err = -errno;
			pr_err("cannot install the off-CPU unwinder program: %s", strerror(-err));
			return err;
		}
	}
	s->unwinds = unwind;
	return 0;

err_size:
	pr_err("cannot size the BPF maps: %s", strerror(-err));
	return err;
}

struct sampler *sampler__new(const struct sampler_opts *opts)
{
	struct sampler *s;
	struct profiler_bpf *skel;
	size_t i;
	int err, nr_cpus;
	bool files;

	libbpf_set_print(libbpf_print);
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->opts = *opts;
	s->nr_possible = libbpf_num_possible_cpus();
	if (s->nr_possible <= 0) {
		err = s->nr_possible ? s->nr_possible : -EINVAL;
		pr_err("cannot count CPUs: %s", strerror(-err));
		goto err_out;
	}
	s->cpus = calloc((size_t)s->nr_possible, sizeof(*s->cpus));
	if (!s->cpus) {
		err = -ENOMEM;
		goto err_out;
	}
	for (i = 0; i < (size_t)s->nr_possible; i++)
		s->cpus[i].pfd = -1;

	nr_cpus = s->nr_possible;
	/* A sample needs one count entry and at most two new stacks. */
	s->max_samples = size_map(opts->max_samples, opts, 1, nr_cpus);
	/* A CPU's samples of a window; past them (a late drain, a high rate) samples go to
	 * counts, which keeps a key once. */
	s->log_cap = opts->log_records ? opts->log_records : size_map(0, opts, 1, 1);
	if (!opts->log_records && s->log_cap > MAX_LOG_RECORDS)
		s->log_cap = MAX_LOG_RECORDS;
	s->max_offcpu = s->max_samples * 4 < MAX_MAP_ENTRIES ? s->max_samples * 4 : MAX_MAP_ENTRIES;
	if (s->max_offcpu < 8192)
		s->max_offcpu = 8192;
	s->max_stacks = size_map(opts->max_stacks, opts, 2, nr_cpus);
	if (!opts->max_stacks && opts->offcpu) {
		/* Off-CPU samples bring two stacks each too: at most the rate cap's, and no more
		 * than their map keeps keys for. */
		uint64_t n = 2ULL * s->max_offcpu, w = opts->window_sec ? opts->window_sec : 10;

		if (opts->offcpu_max_rate && 2ULL * opts->offcpu_max_rate * (uint64_t)nr_cpus * w *
							     SIZING_HEADROOM_PCT / 100 <
						     n)
			n = 2ULL * opts->offcpu_max_rate * (uint64_t)nr_cpus * w *
			    SIZING_HEADROOM_PCT / 100;
		n += s->max_stacks;
		s->max_stacks = n < MAX_MAP_ENTRIES ? (uint32_t)n : MAX_MAP_ENTRIES;
	}
	s->max_tails = s->max_stacks * STACK_TAILS_PER_STACK;
	s->max_procs = s->max_samples * 2;
	if (s->max_procs < MIN_PROCS_ENTRIES)
		s->max_procs = MIN_PROCS_ENTRIES;
	if (opts->offcpu && s->max_procs < MIN_PROCS_OFFCPU)
		s->max_procs = MIN_PROCS_OFFCPU;
	if (s->max_procs > MAX_PROCS_ENTRIES)
		s->max_procs = MAX_PROCS_ENTRIES;

	files = libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_find_vma, NULL) > 0;
	err = load(s, opts->unwind != SAMPLER_UNWIND_FP, files);
	if ((err == -EINVAL || err == -EACCES || err == -E2BIG || err == -ENOMEM ||
	     err == -EOPNOTSUPP) &&
	    files && opts->unwind != SAMPLER_UNWIND_FP && s->skel) {
		/* A verifier may refuse the lookups alone: the unwinder without them, once. */
		pr_warn("the table unwinder with lookups by file cannot load on this kernel (%s); "
			"trying without them",
			strerror(-err));
		profiler_bpf__destroy(s->skel);
		s->skel = NULL;
		err = load(s, true, false);
	}
	if ((err == -EINVAL || err == -EACCES || err == -E2BIG || err == -ENOMEM ||
	     err == -EOPNOTSUPP) &&
	    opts->unwind == SAMPLER_UNWIND_AUTO && s->skel) {
		/* The verifier of an older kernel may refuse the unwinder: degrade, once. */
		pr_warn("the table unwinder cannot load on this kernel (%s): unwinding with frame "
			"pointers only; --log-level debug shows the verifier's log",
			strerror(-err));
		profiler_bpf__destroy(s->skel);
		s->skel = NULL;
		err = load(s, false, false);
	}
	if (err) {
		explain_load_error(err);
		if (opts->offcpu)
			pr_err("--off-cpu needs Linux >= 5.13 (task storage for tracing programs); "
			       "on older kernels, run without --off-cpu");
		goto err_out;
	}
	skel = s->skel;

	for (i = 0; i < opts->nr_pids; i++) {
		uint8_t one = 1;

		err = bpf_map_update_elem(bpf_map__fd(skel->maps.pid_filter), &opts->pids[i], &one,
					  BPF_ANY);
		if (err) {
			err = -errno;
			pr_err("cannot fill the pid filter: %s", strerror(-err));
			goto err_out;
		}
	}

	s->rb = ring_buffer__new(bpf_map__fd(skel->maps.events), handle_event, s, NULL);
	if (!s->rb) {
		err = -errno;
		pr_err("cannot open the event ring buffer: %s", strerror(-err));
		goto err_out;
	}
	pr_debug("BPF loaded: %u stacks (and %u further parts) and %u samples per generation, "
		 "%d possible CPUs, table unwinder %s, off-CPU %s",
		 s->max_stacks, s->max_tails, s->max_samples, s->nr_possible,
		 s->unwinds ? "on" : "off",
		 !opts->offcpu			     ? "off" :
		 skel->rodata->cfg.switch_prev_state ? "on (thread state from prev_state)" :
						       "on (thread state from __state)");
	log_kernel_features(s);
	return s;

err_out:
	sampler__free(s);
	errno = -err;
	return NULL;
}

static __u32 link_id(const struct bpf_link *link)
{
	struct bpf_link_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_link__fd(link), &info, &len))
		return 0;
	return info.id;
}

static int open_cpu_event(struct sampler *s, int cpu)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.freq = 1,
		.sample_freq = s->opts.frequency_hz,
	};
	struct cpu_event *ce = &s->cpus[cpu];
	int pfd, err;

	if (s->opts.event == SAMPLER_EVENT_CYCLES) {
		attr.type = PERF_TYPE_HARDWARE;
		attr.config = PERF_COUNT_HW_CPU_CYCLES;
	} else {
		attr.type = PERF_TYPE_SOFTWARE;
		attr.config = PERF_COUNT_SW_CPU_CLOCK;
	}
	pfd = (int)perf_event_open(&attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (pfd < 0)
		return -errno;
	ce->link = bpf_program__attach_perf_event(s->skel->progs.ignis_sample, pfd);
	if (!ce->link) {
		err = -errno;
		/* The link owns the fd only once attached. */
		close(pfd);
		return err;
	}
	ce->pfd = pfd;
	ce->last_fired = 0;
	ce->gone = false;
	ce->link_id = link_id(ce->link);
	s->nr_attached++;
	return 0;
}

static void close_cpu_event(struct sampler *s, int cpu)
{
	struct cpu_event *ce = &s->cpus[cpu];

	/* A link whose descriptor someone closed under us is not ours to close again: the
	 * number may name another file now. */
	if (!ce->link || ce->gone)
		return;
	bpf_link__destroy(ce->link); /* closes pfd */
	ce->link = NULL;
	ce->pfd = -1;
	s->nr_attached--;
}

static void explain_perf_error(int err)
{
	switch (err) {
	case -EACCES:
	case -EPERM:
		explain_permission("cannot open perf events");
		break;
	case -ENOENT:
	case -EOPNOTSUPP:
		pr_err("cannot open perf events: this machine has no such event; the software "
		       "cpu-clock event works everywhere (--event cpu-clock)");
		break;
	default:
		pr_err("cannot open perf events: %s", strerror(-err));
	}
}

int sampler__refresh_cpus(struct sampler *s)
{
	uint8_t online[(s->nr_possible + 7) / 8];
	int cpu, added = 0, err;

	err = read_online_cpus(online, (unsigned int)s->nr_possible);
	if (err < 0)
		return err;
	for (cpu = 0; cpu < s->nr_possible; cpu++) {
		bool is_online = online[cpu / 8] & (1U << (cpu % 8));

		if (!is_online) {
			/* An event on an offline CPU never fires again: reopen on return. */
			close_cpu_event(s, cpu);
			continue;
		}
		if (s->cpus[cpu].link)
			continue; /* also when gone: reported unhealthy, not reopened */
		err = open_cpu_event(s, cpu);
		if (err == -ENODEV || err == -ENXIO)
			continue; /* went offline meanwhile */
		if (err)
			return err;
		added++;
	}
	return added;
}

/* Attach a tracepoint program into *link. Returns 0, or -errno after saying what failed. */
static int attach_tracepoint(struct bpf_program *prog, struct bpf_link **link, const char *what)
{
	int err;

	*link = bpf_program__attach(prog);
	if (*link)
		return 0;
	err = -errno;
	pr_err("cannot attach to %s: %s", what, strerror(-err));
	return err;
}

int sampler__attach(struct sampler *s)
{
	int err;

	if (s->opts.event == SAMPLER_EVENT_CPU_CLOCK)
		s->period_ns = NSEC_PER_SEC / s->opts.frequency_hz;
	err = sampler__refresh_cpus(s);
	if (err < 0) {
		explain_perf_error(err);
		return err;
	}
	if (!s->nr_attached) {
		pr_err("cannot open perf events: no online CPU accepted one");
		return -ENODEV;
	}
	err = attach_tracepoint(s->skel->progs.ignis_exec, &s->exec_link, "sched_process_exec");
	if (!err)
		err = attach_tracepoint(s->skel->progs.ignis_exit, &s->exit_link,
					"sched_process_exit");
	if (!err && s->opts.offcpu)
		err = attach_tracepoint(s->skel->progs.ignis_switch, &s->switch_link,
					"sched_switch for --off-cpu");
	if (!err && s->opts.offcpu)
		err = attach_tracepoint(s->skel->progs.ignis_offcpu, &s->offcpu_link,
					"sys_exit for --off-cpu");
	if (err)
		return err;
	sampler__events_fired(s); /* start counting from here */
	s->attached_ns = now_mono_ns();
	return 0;
}

uint64_t sampler__attached_ns(const struct sampler *s)
{
	return s->attached_ns;
}

unsigned int sampler__nr_cpus(const struct sampler *s)
{
	return s->nr_attached;
}

int sampler__check_links(struct sampler *s)
{
	int cpu, gone = 0;

	for (cpu = 0; cpu < s->nr_possible; cpu++) {
		struct cpu_event *ce = &s->cpus[cpu];

		if (!ce->link || ce->gone)
			continue;
		if (!ce->link_id || link_id(ce->link) != ce->link_id) {
			pr_err("CPU %d: the sampler's BPF link is gone (descriptor closed from "
			       "outside?); that CPU is no longer sampled",
			       cpu);
			ce->gone = true;
			s->nr_attached--;
			s->nr_gone++;
		}
	}
	for (cpu = 0; cpu < s->nr_possible; cpu++)
		gone += s->cpus[cpu].gone;
	return gone;
}

void sampler__free(struct sampler *s)
{
	int cpu;

	if (!s)
		return;
	for (cpu = 0; s->cpus && cpu < s->nr_possible; cpu++)
		close_cpu_event(s, cpu);
	bpf_link__destroy(s->exec_link);
	bpf_link__destroy(s->exit_link);
	bpf_link__destroy(s->switch_link);
	bpf_link__destroy(s->offcpu_link);
	ring_buffer__free(s->rb);
	profiler_bpf__destroy(s->skel);
	free(s->cpus);
	free(s);
}

int sampler__flip(struct sampler *s, unsigned int *idle, uint64_t *at_ns)
{
	unsigned int old = s->skel->bss->gen & 1;
	uint32_t zero = 0;
	int inner = bpf_map__fd(s->skel->maps.sync_inner);

	*at_ns = now_mono_ns();
	__atomic_store_n(&s->skel->bss->gen, old ^ 1, __ATOMIC_SEQ_CST);
	/* The kernel runs synchronize_rcu() after a map-in-map update (maybe_wait_bpf_programs
	 * in kernel/bpf/syscall.c): programs that read the old generation are done after it. */
	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.gen_sync), &zero, &inner, BPF_ANY))
		return -errno;
	*idle = old;
	return 0;
}

int sampler__poll(struct sampler *s, int timeout_ms, int wake_fd)
{
	/* The ring buffer's epoll descriptor is itself readable when a ring has data. */
	struct pollfd fds[2] = {
		{ .fd = ring_buffer__epoll_fd(s->rb), .events = POLLIN },
		{ .fd = wake_fd, .events = POLLIN },
	};
	uint64_t now = now_mono_ns(), until;
	int n;

	/* Events written within IGNIS_EVENTS_WAKEUP_GAP_NS of the one that woke us came
	 * without a wakeup (bpf/profiler.h): look again when that gap has passed since the
	 * last events were read (every event that woke us was read by then), plus a
	 * millisecond for an event between its clock read and its commit. */
	if (s->events_read_ns) {
		until = s->events_read_ns + IGNIS_EVENTS_WAKEUP_GAP_NS + NSEC_PER_MSEC;
		if (now < until) {
			int left = (int)((until - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC);

			if (timeout_ms < 0 || left < timeout_ms)
				timeout_ms = left;
		}
	}
	if (poll(fds, wake_fd >= 0 ? 2 : 1, timeout_ms) < 0)
		return -errno;
	n = ring_buffer__consume(s->rb);
	if (n > 0)
		s->events_read_ns = now_mono_ns();
	return n;
}

int sampler__stacks_fd(const struct sampler *s, unsigned int gen)
{
	return bpf_map__fd(gen & 1 ? s->skel->maps.stacks_1 : s->skel->maps.stacks_0);
}

int sampler__tails_fd(const struct sampler *s, unsigned int gen)
{
	return bpf_map__fd(gen & 1 ? s->skel->maps.tails_1 : s->skel->maps.tails_0);
}

int sampler__counts_fd(const struct sampler *s, unsigned int gen)
{
	return bpf_map__fd(gen & 1 ? s->skel->maps.counts_1 : s->skel->maps.counts_0);
}

int sampler__log_fd(const struct sampler *s)
{
	return bpf_map__fd(s->skel->maps.sample_log);
}

int sampler__cpu_windows_fd(const struct sampler *s)
{
	return bpf_map__fd(s->skel->maps.cpu_windows);
}

uint32_t sampler__log_cap(const struct sampler *s)
{
	return s->log_cap;
}

int sampler__stats_fd(const struct sampler *s)
{
	return bpf_map__fd(s->skel->maps.stats);
}

int sampler__procs_fd(const struct sampler *s)
{
	return bpf_map__fd(s->skel->maps.procs);
}

bool sampler__offcpu(const struct sampler *s)
{
	return s->opts.offcpu;
}

int sampler__offcpu_fd(const struct sampler *s, unsigned int gen)
{
	return bpf_map__fd(gen & 1 ? s->skel->maps.offcpu_1 : s->skel->maps.offcpu_0);
}

bool sampler__unwinds(const struct sampler *s)
{
	return s->unwinds;
}

int sampler__unwind_rows_fd(const struct sampler *s)
{
	return bpf_map__fd(s->skel->maps.unwind_rows);
}

int sampler__unwind_maps_fd(const struct sampler *s)
{
	return bpf_map__fd(s->skel->maps.unwind_maps);
}

int sampler__unwind_procs_fd(const struct sampler *s)
{
	return bpf_map__fd(s->skel->maps.unwind_procs);
}

int sampler__unwind_exes_fd(const struct sampler *s)
{
	return bpf_map__fd(s->skel->maps.unwind_exes);
}

bool sampler__python(const struct sampler *s)
{
	return s->unwinds && s->opts.python;
}

int sampler__py_procs_fd(const struct sampler *s)
{
	return bpf_map__fd(s->skel->maps.py_procs);
}

uint32_t sampler__max_stacks(const struct sampler *s)
{
	return s->max_stacks;
}

uint32_t sampler__max_samples(const struct sampler *s)
{
	return s->max_samples;
}

uint64_t sampler__events_fired(struct sampler *s)
{
	uint64_t total = 0, count, fired;
	int cpu;

	if (!s->period_ns)
		return 0;
	for (cpu = 0; cpu < s->nr_possible; cpu++) {
		struct cpu_event *ce = &s->cpus[cpu];

		if (!ce->link || ce->gone || read(ce->pfd, &count, sizeof(count)) != sizeof(count))
			continue;
		fired = count / s->period_ns;
		total += fired - ce->last_fired;
		ce->last_fired = fired;
	}
	return total;
}

static uint64_t map_memlock(int fd)
{
	char path[64], line[256];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}

uint64_t sampler__map_bytes(const struct sampler *s)
{
	struct bpf_map *map;
	uint64_t total = 0;

	bpf_object__for_each_map(map, s->skel->obj) {
		int fd = bpf_map__fd(map);

		if (fd >= 0)
			total += map_memlock(fd);
	}
	return total;
}
