// SPDX-License-Identifier: Apache-2.0
/*
 * A SIGPROF handler that burns CPU (handler_work <- on_tick), interrupting main_work <- main,
 * built without frame pointers: through the signal frame (glibc's __restore_rt) the table
 * unwinder continues into the interrupted function.
 *
 *   sigprof [SECONDS]
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

	for (i = 0; i < 2000000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

static void on_tick(int sig)
{
	(void)sig;
	sink ^= handler_work(sink);
	ticks++;
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
	struct itimerval it = { .it_interval = { 0, 5000 }, .it_value = { 0, 5000 } };
	uint64_t end = mono_ns() + (uint64_t)(arg_seconds(argc, argv, 1, 5) * 1e9), n = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_tick;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	setitimer(ITIMER_PROF, &it, NULL);
	while (mono_ns() < end)
		sink += main_work(n++);
	printf("%d ticks\n", (int)ticks);
	return 0;
}
