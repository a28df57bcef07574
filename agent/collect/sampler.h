/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sampler: the BPF skeleton, the perf events that drive it (one per online CPU) and the
 * generation flip. It is the only file that sees the skeleton; the drain reads the maps
 * through the descriptors it hands out.
 *
 * Lifecycle: sampler__new() opens, configures and loads; sampler__attach() starts sampling;
 * sampler__flip() switches generations between windows; sampler__free() detaches and frees.
 */
#ifndef IGNIS_SAMPLER_H
#define IGNIS_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ignis.h"
#include "sampler_types.h"

struct proc_event;
struct sampler;

/* The table unwinder's maps: processes and the mappings they hold (48 bytes each: 32768
 * are 1.5 MiB, e.g. 500 processes of 60 executable mappings; a process that finds no room
 * is counted, walked with frame pointers and retried after the next window), the main
 * executables recognised before their process is published, and the bytes of one row. */
#define SAMPLER_UNWIND_PROCESSES   8192
#define SAMPLER_UNWIND_MAPPINGS	   (32 * 1024)
#define SAMPLER_UNWIND_EXECUTABLES 4096
#define SAMPLER_UNWIND_ROW_BYTES   8 /* struct ignis_unwind_row */

/* Called for each process event read from the ring buffer; return 0 to continue. */
typedef int (*sampler_event_fn)(void *ctx, const struct proc_event *ev);
struct py_code_event;
/* Called for each Python code object the walker announced; return 0 to continue. */
typedef int (*sampler_py_code_fn)(void *ctx, const struct py_code_event *ev);

/* The Python walker's maps: attached interpreters, and code objects announced (LRU, 104
 * bytes an entry: an evicted one met again is announced again under a new serial and read
 * again by the agent, a cost but no loss). */
#define SAMPLER_PY_PROCESSES 4096
#define SAMPLER_PY_CODES     (16 * 1024)

struct sampler_opts {
	unsigned int frequency_hz; /* samples per second per CPU */
	enum sampler_event event;
	bool user_stacks;
	bool kernel_stacks;
	bool skip_walk;	      /* benchmark: count samples without walking stacks */
	const uint32_t *pids; /* only these tgids (--pid), or NULL for all */
	size_t nr_pids;
	uint32_t max_stacks;	    /* stacks per window (and as many further parts), 0: sized */
	uint32_t max_samples;	    /* entries of each generation's counts map, 0: sized */
	uint32_t log_records;	    /* records of each CPU's run in the sample log, 0: sized */
	unsigned int window_sec;    /* window length, used to size the maps */
	uint64_t mmap_event_gap_ns; /* see struct ignis_config */
	/* The table unwinder (--unwind): off, or on where the kernel accepts it (auto), or
	 * required (a load failure is fatal). */
	enum sampler_unwind unwind;
	uint32_t unwind_rows;  /* entries of the row map (8 bytes each) */
	uint32_t unwind_maps;  /* entries of the mapping map (48 bytes each) */
	uint32_t unwind_procs; /* processes with tables */
	uint32_t unwind_exes;  /* main executables with tables (56 bytes each) */
	/* The Python walker (part of the table unwinder: off without it). */
	bool python;
	uint32_t py_procs; /* entries of py_procs */
	uint32_t py_codes; /* entries of py_codes */
	/* Off-CPU time (bpf/offcpu.bpf.c): needs task storage for tracing programs (5.13+). */
	bool offcpu;
	bool offcpu_kthreads;	      /* kernel threads' waits too */
	uint64_t offcpu_period_ns;    /* weight of one off-CPU sample, ns */
	uint64_t offcpu_min_block_ns; /* waits shorter than this are left out, ns (0: none) */
	unsigned int offcpu_max_rate; /* off-CPU samples per second per CPU at most (0: no cap) */
	sampler_event_fn on_event;
	sampler_py_code_fn on_py_code;
	void *ctx;
};

/*
 * Open, configure and load the BPF programs. On failure logs one line saying what to fix
 * (missing BTF, privileges, memlock, verifier; the verifier log at debug level) and returns
 * NULL with errno set.
 */
struct sampler *sampler__new(const struct sampler_opts *opts);
void sampler__free(struct sampler *s);

/* Open a perf event on every online CPU, attach the programs. Returns 0 or -errno. */
int sampler__attach(struct sampler *s) __must_check;
/* CLOCK_MONOTONIC when sampler__attach() finished, ns: the first window's start. */
uint64_t sampler__attached_ns(const struct sampler *s);

/* Attach to CPUs that came online since the last call. Returns how many were added. */
int sampler__refresh_cpus(struct sampler *s);
/* CPUs with an attached event. */
unsigned int sampler__nr_cpus(const struct sampler *s);

/*
 * Check that every CPU's BPF link still exists (its descriptor could have been closed from
 * outside, e.g. by a debugger). Logs each that went, and returns how many are gone.
 */
int sampler__check_links(struct sampler *s);

/*
 * Switch the generation the programs write and wait until no program still writes the old
 * one (an RCU grace period). Sets *idle to the generation now safe to read and *at_ns to
 * the CLOCK_MONOTONIC time of the switch (ns): the window's end as BPF counts it. Returns 0
 * or -errno.
 */
int sampler__flip(struct sampler *s, unsigned int *idle, uint64_t *at_ns) __must_check;

/*
 * Consume ring-buffer events, waiting up to timeout_ms for some, or for wake_fd (-1: none)
 * to turn readable, whichever comes first; less long within IGNIS_EVENTS_WAKEUP_GAP_NS of
 * reading events, when some may have come without a wakeup (bpf/profiler.h). Returns events
 * handled (0 after a timeout or a wakeup) or -errno (-EINTR on a signal).
 */
int sampler__poll(struct sampler *s, int timeout_ms, int wake_fd);

/* Map descriptors for the drain; valid while s lives. */
int sampler__stacks_fd(const struct sampler *s, unsigned int gen);
int sampler__tails_fd(const struct sampler *s, unsigned int gen); /* deep stacks' later parts */
int sampler__counts_fd(const struct sampler *s, unsigned int gen);
int sampler__stats_fd(const struct sampler *s);
/* The CPU samples' log (bpf/profiler.h): its records, the records of a CPU's run, and the
 * per-CPU array of what each CPU did in each generation (struct ignis_cpu_window). */
int sampler__log_fd(const struct sampler *s);
uint32_t sampler__log_cap(const struct sampler *s);
int sampler__cpu_windows_fd(const struct sampler *s);
int sampler__procs_fd(const struct sampler *s);
/* True when the off-CPU programs are attached; then each generation's off-CPU map. */
bool sampler__offcpu(const struct sampler *s);
int sampler__offcpu_fd(const struct sampler *s, unsigned int gen);
/* True when the table unwinder is loaded; then the descriptors of its maps. */
bool sampler__unwinds(const struct sampler *s);
int sampler__unwind_rows_fd(const struct sampler *s);
int sampler__unwind_maps_fd(const struct sampler *s);
int sampler__unwind_procs_fd(const struct sampler *s);
int sampler__unwind_exes_fd(const struct sampler *s);
/* True when the Python walker is on (the table unwinder loaded and opts.python); then the
 * descriptor of py_procs. */
bool sampler__python(const struct sampler *s);
int sampler__py_procs_fd(const struct sampler *s);
uint32_t sampler__max_stacks(const struct sampler *s);
uint32_t sampler__max_samples(const struct sampler *s);

/*
 * Samples the perf events produced since the previous call, summed over CPUs: the
 * kernel's own count, to compare with what the program saw (throttling, skipped runs).
 */
uint64_t sampler__events_fired(struct sampler *s);

/* The kernel memory the maps pin (memlock of each map, as bpftool reports), bytes. */
uint64_t sampler__map_bytes(const struct sampler *s);

/* Parse a CPU list such as "0-3,5" (sysfs cpulist format) into a bitmap of nbits bits.
 * Returns the number of CPUs set or -EINVAL. */
int cpulist_parse(const char *s, uint8_t *bitmap, unsigned int nbits) __must_check;

#endif /* IGNIS_SAMPLER_H */
