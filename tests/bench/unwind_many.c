// SPDX-License-Identifier: Apache-2.0
/*
 * unwind_many BURST_MS SECONDS: one of the unwinder benchmark's many distinct programs,
 * each compiled with its own -DVARIANT=N (so each has its own code and build ID, and the
 * agent builds and loads a table for each) and -fomit-frame-pointer.
 *
 * Burns BURST_MS of CPU at start, so that the profiler samples it and takes it on, then
 * sleeps until SECONDS have passed; SIGUSR1 asks for another burst (for a process the
 * profiler missed). Light on CPU: 200 of them cost 200 x BURST_MS once.
 */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#ifndef VARIANT
#define VARIANT 0
#endif

#define NOINLINE __attribute__((noinline, noipa))

static volatile uint64_t sink;
static volatile sig_atomic_t again;

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* A short call chain whose constants differ per variant. */
NOINLINE static uint64_t mix(uint64_t x)
{
	for (int i = 0; i < 1000 + VARIANT; i++)
		x = x * (6364136223846793005ULL + 2ULL * VARIANT) + 1442695040888963407ULL;
	return x;
}

NOINLINE static uint64_t middle(uint64_t x)
{
	return mix(x ^ (uint64_t)VARIANT) + 1;
}

NOINLINE static void burst(uint64_t ms)
{
	uint64_t end = clock_ns(CLOCK_THREAD_CPUTIME_ID) + ms * 1000000ULL;

	while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		sink += middle(sink);
}

static void on_usr1(int sig)
{
	(void)sig;
	again = 1;
}

int main(int argc, char **argv)
{
	uint64_t ms = argc > 1 ? strtoull(argv[1], NULL, 10) : 50;
	double seconds = argc > 2 ? atof(argv[2]) : 30;
	uint64_t end = clock_ns(CLOCK_MONOTONIC) + (uint64_t)(seconds * 1e9);
	struct sigaction sa = { .sa_handler = on_usr1 };

	sigaction(SIGUSR1, &sa, NULL);
	burst(ms);
	while (clock_ns(CLOCK_MONOTONIC) < end) {
		struct timespec nap = { 0, 100 * 1000000L };

		nanosleep(&nap, NULL);
		if (again) {
			again = 0;
			burst(ms);
		}
	}
	return 0;
}
