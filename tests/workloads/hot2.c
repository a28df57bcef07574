// SPDX-License-Identifier: Apache-2.0
/*
 * hot2 [SECONDS[cpu] [PERCENT]]: two threads, each spending PERCENT (default 70) % of its CPU
 * time in hot_a and the rest in hot_b
 * (measured on the thread's own CPU clock) in phases of random length, so that the phases do
 * not alias with the sampling period: the main thread under
 * main -> run_threads -> worker -> phase_a -> hot_a, the other under start_thread -> worker.
 * SECONDS of wall time; with "cpu" after the number (6cpu), SECONDS of each thread's CPU time
 * (wall time capped at ten times that): the samples a test judges then do not depend on
 * what else the machine runs.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "workload.h"

static volatile uint64_t sink;

NOINLINE static void touch(uint64_t v)
{
	sink += v;
}

/* Spin on the thread's CPU clock until `ns` of CPU time passed. */
NOINLINE static void hot_a(uint64_t ns)
{
	uint64_t end = thread_cpu_ns() + ns, x = 1;

	do {
		for (int i = 0; i < 20000; i++)
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		touch(x);
	} while (thread_cpu_ns() < end);
}

NOINLINE static void hot_b(uint64_t ns)
{
	uint64_t end = thread_cpu_ns() + ns, x = 7;

	do {
		for (int i = 0; i < 20000; i++)
			x = (x ^ (x >> 7)) * 0x9e3779b97f4a7c15ULL;
		touch(x);
	} while (thread_cpu_ns() < end);
}

/* Uniform in [0.5, 1.5) times nominal_ns: the phases' ratio on average. */
static uint64_t jitter(uint64_t *state, uint64_t nominal_ns)
{
	*state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
	return nominal_ns / 2 + (*state >> 33) % nominal_ns;
}

/* Nominal phase lengths: 2 ms together, split PERCENT : 100 - PERCENT. */
static uint64_t phase_a_ns = 1400000, phase_b_ns = 600000;

NOINLINE static void phase_a(uint64_t *rng)
{
	hot_a(jitter(rng, phase_a_ns));
	touch(1);
}

NOINLINE static void phase_b(uint64_t *rng)
{
	hot_b(jitter(rng, phase_b_ns));
	touch(2);
}

static double seconds = 5;

NOINLINE static void *worker(void *arg)
{
	struct until u = until_start(seconds); /* this thread's CPU time, with "cpu" */
	uint64_t rng = (uintptr_t)&u;

	(void)arg;
	while (!until_over(&u)) {
		phase_a(&rng);
		phase_b(&rng);
	}
	return NULL;
}

NOINLINE static int run_threads(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, worker, NULL))
		return 1;
	worker(NULL);
	pthread_join(t, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	int ret;

	seconds = arg_seconds(argc, argv, 1, 5);
	if (argc > 2) {
		double pct = atof(argv[2]);

		if (!(pct >= 5 && pct <= 95)) {
			fprintf(stderr, "hot2: PERCENT must be within 5..95\n");
			return 2;
		}
		phase_a_ns = (uint64_t)(2000000 * pct / 100);
		phase_b_ns = 2000000 - phase_a_ns;
	}
	ret = run_threads();
	touch((uint64_t)ret);
	return ret;
}
