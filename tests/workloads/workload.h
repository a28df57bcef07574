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

static inline double arg_seconds(int argc, char **argv, int i, double def)
{
	return argc > i ? atof(argv[i]) : def;
}

#endif
