// SPDX-License-Identifier: Apache-2.0
/*
 * spin3 ROUNDS THREADS: the benchmark workload. THREADS threads (the main thread one of
 * them) each run ROUNDS rounds of fixed work split 60/30/10 across work_sixty, work_thirty
 * and work_ten (same loop body, 6:3:1 iterations), a few microseconds per call, so that the
 * designed shares hold whatever the sampling period. Stacks: work_* <- do_round <- worker
 * <- (main | start_thread). Prints "wall_ns=N cpu_ns=N shares=A,B,C" when done, the shares
 * being the measured time in each work function (TSC cycles read between the calls), the
 * reference a profiler's shares are compared with; then waits for its stdin to close, so
 * that a profiler that names frames only at exit (bpftrace) still finds it alive.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#define NOINLINE __attribute__((noinline, noipa))

/* Per thread: a shared line written by every thread would stall in touch() and skew the
 * shares the TSC reference attributes to the work functions. */
static __thread volatile uint64_t sink;
static long rounds;

NOINLINE static void touch(uint64_t v)
{
	sink += v;
}

#define BODY(n)                                                                                \
	do {                                                                                   \
		uint64_t x = sink;                                                             \
		for (long i = 0; i < (n); i++)                                                 \
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;               \
		touch(x);                                                                      \
	} while (0)

NOINLINE static void work_sixty(void)
{
	BODY(6000);
}

NOINLINE static void work_thirty(void)
{
	BODY(3000);
}

NOINLINE static void work_ten(void)
{
	BODY(1000);
}

static uint64_t cycles[3];	/* summed over threads at their end */

NOINLINE static void do_round(uint64_t *c)
{
	uint64_t t0 = __rdtsc(), t1, t2, t3;

	work_sixty();
	t1 = __rdtsc();
	work_thirty();
	t2 = __rdtsc();
	work_ten();
	t3 = __rdtsc();
	c[0] += t1 - t0;
	c[1] += t2 - t1;
	c[2] += t3 - t2;
}

NOINLINE static void *worker(void *arg)
{
	uint64_t c[3] = { 0 };

	(void)arg;
	for (long r = 0; r < rounds; r++)
		do_round(c);
	for (int i = 0; i < 3; i++)
		__atomic_fetch_add(&cycles[i], c[i], __ATOMIC_RELAXED);
	return NULL;
}

static uint64_t ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[2]) : 1, i;
	pthread_t t[256];
	uint64_t start = ns(CLOCK_MONOTONIC);
	struct rusage ru;
	double total;
	char c;

	rounds = argc > 1 ? atol(argv[1]) : 1000;
	if (threads < 1 || threads > 256)
		return 2;
	for (i = 1; i < threads; i++)
		if (pthread_create(&t[i], NULL, worker, NULL))
			return 1;
	worker(NULL);
	for (i = 1; i < threads; i++)
		pthread_join(t[i], NULL);
	getrusage(RUSAGE_SELF, &ru);
	total = (double)(cycles[0] + cycles[1] + cycles[2]);
	printf("wall_ns=%llu cpu_ns=%llu shares=%.3f,%.3f,%.3f\n",
	       (unsigned long long)(ns(CLOCK_MONOTONIC) - start),
	       (unsigned long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ULL +
		       (unsigned long long)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ULL,
	       100.0 * cycles[0] / total, 100.0 * cycles[1] / total, 100.0 * cycles[2] / total);
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
