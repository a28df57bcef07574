/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the test workloads. Workloads are built with frame pointers and without
 * sibling calls or inlining, and every hot function calls something now and then, so that it
 * keeps its own frame and a frame-pointer walk sees every caller (DESIGN.md, lessons).
 */
#ifndef IGNIS_TESTS_WORKLOAD_H
#define IGNIS_TESTS_WORKLOAD_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline, noipa))

/* CPU time of the calling thread, ns. */
static inline uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* CPU time of the whole process (every thread, signal handlers included), ns. */
static inline uint64_t process_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * How long a workload runs: SECONDS of wall time, or with "cpu" after the number ("3cpu")
 * SECONDS of each thread's own CPU time, capped at ten times that on the clock. A test that
 * judges a share of samples asks for CPU time: the samples then do not shrink when other
 * work shares the CPUs (wall-time runs beside a spinner, an exec loop and another session's
 * tests had a fifth to a third of the samples expected; four times was not enough for a
 * deep 4cpu that got 14 % of a CPU beside two test loops).
 */
static int workload_cpu_time; /* set by arg_seconds() from the "cpu" suffix */

static inline double arg_seconds(int argc, char **argv, int i, double def)
{
	if (argc > i && strstr(argv[i], "cpu"))
		workload_cpu_time = 1;
	return argc > i ? atof(argv[i]) : def;
}

struct until {
	uint64_t wall_end;   /* mono_ns() at which the run ends */
	uint64_t cpu_end;    /* thread_cpu_ns() at which it ends, 0 for wall time only */
	uint64_t next_check; /* mono_ns() of the next CPU-clock read */
};

static inline struct until until_start(double seconds)
{
	uint64_t ns = (uint64_t)(seconds * 1e9), now = mono_ns();
	struct until u = { now + (workload_cpu_time ? 10 * ns : ns), 0, now };

	if (workload_cpu_time)
		u.cpu_end = thread_cpu_ns() + ns;
	return u;
}

/* Whether the run is over. The thread's CPU clock is a system call (the wall clock is read
 * in the vDSO): it is read once a millisecond, so that the kernel's share of the samples
 * stays what the workload makes it. */
static inline int until_over(struct until *u)
{
	uint64_t now = mono_ns();

	if (now >= u->wall_end)
		return 1;
	if (!u->cpu_end || now < u->next_check)
		return 0;
	u->next_check = now + 1000000;
	return thread_cpu_ns() >= u->cpu_end;
}

#endif
