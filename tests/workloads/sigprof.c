// SPDX-License-Identifier: Apache-2.0
/*
 * A SIGPROF handler that burns CPU (handler_work <- on_tick), interrupting main_work <- main,
 * built without frame pointers: through the signal frame (glibc's __restore_rt) the table
 * unwinder continues into the interrupted function.
 *
 *   sigprof [SECONDS]
 *
 * SECONDS of CPU time, not of wall time (at most four times as long on the clock): the samples
 * a test judges then do not depend on what else the machine runs.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "workload.h"

static volatile uint64_t sink;
static volatile sig_atomic_t ticks;

NOINLINE uint64_t handler_work(uint64_t seed)
{
	uint64_t x = seed | 1;
	int i;

	/* About 5 ms here: some 40 % of the program's CPU, so a 3 s run has ~120 samples in the
	 * handler to judge. */
	for (i = 0; i < 6000000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

/*
 * The next tick comes after 3-9 ms of CPU, drawn anew each time: a fixed interval would beat
 * with the profiler's own 100 Hz clock (both fire on timer ticks), and the samples would see
 * the handler at a few fixed phases only, in or out of it by luck (setitimer() is
 * async-signal-safe).
 */
static void rearm(void)
{
	static uint64_t x = 88172645463325252ULL;
	struct itimerval it = { { 0, 0 }, { 0, 0 } };

	x ^= x << 13, x ^= x >> 7, x ^= x << 17;
	it.it_value.tv_usec = 3000 + (suseconds_t)(x % 6000);
	setitimer(ITIMER_PROF, &it, NULL);
}

static void on_tick(int sig)
{
	(void)sig;
	sink ^= handler_work(sink);
	ticks++;
	rearm();
}

NOINLINE uint64_t main_work(uint64_t n)
{
	uint64_t x = n;
	int i;

	for (i = 0; i < 100000; i++)
		x ^= (x << 7) ^ (x >> 9) ^ (uint64_t)i;
	return x;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	uint64_t ns = (uint64_t)(arg_seconds(argc, argv, 1, 5) * 1e9), n = 0;
	uint64_t end = process_cpu_ns() + ns, deadline = mono_ns() + 4 * ns;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_tick;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	rearm();
	while (process_cpu_ns() < end && mono_ns() < deadline)
		sink += main_work(n++);
	printf("%d ticks\n", (int)ticks);
	return 0;
}
