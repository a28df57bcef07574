// SPDX-License-Identifier: Apache-2.0
/*
 * unwind_deep DEPTH ROUNDS THREADS [wait]: the unwinder benchmark's workload, built twice:
 * with -fomit-frame-pointer (for the table unwinder) and with frame pointers (for
 * bpf_get_stack).
 *
 * THREADS threads (the main thread one of them) each run ROUNDS rounds; a round recurses
 * to DEPTH frames of this file's code, worker -> descend x (DEPTH - 2) -> spin, and spends
 * about 100 us in spin's loop at the bottom, so that nearly every sample sees all DEPTH
 * frames. No frame is inlined or a tail call (noinline, noipa, a result used after each
 * call, -fno-optimize-sibling-calls). spin keeps rbp busy as a general register when built
 * without frame pointers, so a frame-pointer walk cannot get past it there.
 *
 * Prints "wall_ns=N cpu_ns=N rounds=N depth=N" when done (rounds summed over threads), then
 * waits for its stdin to close, so that a profiler still finds it alive when it stops.
 * ROUNDS 0: run until stdin closes, then print. With "wait": the threads run the same
 * rounds unmeasured after printing "ready" (a profiler can take the process on), and the
 * measured rounds start when a line arrives on stdin.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE    __attribute__((noinline, noipa))
#define MAX_DEPTH   120
#define MAX_THREADS 256

static __thread volatile uint64_t sink;
static int depth;
static long rounds;
static volatile int go = 1, stop;
static pthread_barrier_t measured;
static uint64_t done_rounds;

/* About 100 us of arithmetic with twelve live values, more than the caller-saved registers:
 * without frame pointers rbp is one of them, saved and restored under the CFI's rules. */
NOINLINE static uint64_t spin(uint64_t n)
{
	uint64_t v[12];
	int i, k;

	for (k = 0; k < 12; k++)
		v[k] = n + (uint64_t)k * 0x9e3779b97f4a7c15ULL;
	for (i = 0; i < 24000; i++) {
#pragma GCC unroll 12
		for (k = 0; k < 12; k++)
			v[k] = v[k] * 6364136223846793005ULL + v[(k + 5) % 12];
	}
	for (k = 1; k < 12; k++)
		v[0] ^= v[k];
	return v[0];
}

/* One frame per level; the local array gives each frame a size of its own (the CFA is not
 * just rsp + 8), and the work after the call keeps it from being a tail call. */
NOINLINE static uint64_t descend(int level, uint64_t n)
{
	volatile uint64_t local[4];
	uint64_t r;

	local[0] = n;
	local[level & 3] = n + (uint64_t)level;
	if (level <= 1)
		r = spin(n);
	else
		r = descend(level - 1, n + 1);
	return r + local[0] + local[level & 3];
}

NOINLINE static void *worker(void *arg)
{
	uint64_t n = 0;
	long r;

	(void)arg;
	/* worker and spin are two of the DEPTH frames. */
	while (!go)
		sink += depth > 2 ? descend(depth - 2, n++) : spin(n++);
	pthread_barrier_wait(&measured);
	for (r = 0; rounds ? r < rounds : !stop; r++)
		sink += depth > 2 ? descend(depth - 2, n++) : spin(n++);
	__atomic_fetch_add(&done_rounds, (uint64_t)r, __ATOMIC_RELAXED);
	return NULL;
}

/* The first line starts the measured rounds; end of file stops ROUNDS 0. */
static void *watch_stdin(void *arg)
{
	char c;

	(void)arg;
	while (read(0, &c, 1) > 0)
		if (c == '\n')
			go = 1;
	go = 1;
	stop = 1;
	return NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ULL +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 3 ? atoi(argv[3]) : 1, i;
	int wait = argc > 4 && !strcmp(argv[4], "wait");
	pthread_t t[MAX_THREADS], watcher;
	uint64_t wall0, cpu0;
	char c;

	depth = argc > 1 ? atoi(argv[1]) : 30;
	rounds = argc > 2 ? atol(argv[2]) : 1000;
	if (depth < 2 || depth > MAX_DEPTH || rounds < 0 || threads < 1 || threads > MAX_THREADS) {
		fprintf(stderr, "usage: unwind_deep DEPTH(2-%d) ROUNDS THREADS(1-%d) [wait]\n",
			MAX_DEPTH, MAX_THREADS);
		return 2;
	}
	go = !wait;
	if (pthread_barrier_init(&measured, NULL, (unsigned int)threads))
		return 1;
	if ((wait || !rounds) && pthread_create(&watcher, NULL, watch_stdin, NULL))
		return 1;
	for (i = 1; i < threads; i++)
		if (pthread_create(&t[i], NULL, worker, NULL))
			return 1;
	if (wait) {
		printf("ready\n");
		fflush(stdout);
		while (!go)
			sink += depth > 2 ? descend(depth - 2, 0) : spin(0);
	}
	wall0 = now_ns();
	cpu0 = cpu_ns();
	worker(NULL);
	for (i = 1; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("wall_ns=%llu cpu_ns=%llu rounds=%llu depth=%d\n",
	       (unsigned long long)(now_ns() - wall0), (unsigned long long)(cpu_ns() - cpu0),
	       (unsigned long long)done_rounds, depth);
	fflush(stdout);
	if (wait || !rounds)
		pthread_join(watcher, NULL); /* until stdin closes */
	else
		while (read(0, &c, 1) > 0)
			;
	return 0;
}
