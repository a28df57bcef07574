// SPDX-License-Identifier: Apache-2.0
/*
 * burn [SECONDS] [THREADS]: THREADS threads spin for SECONDS of wall time in
 * main -> burn_threads -> burn_loop -> burn_spin, then exit. Used for short-lived processes,
 * sample accounting and --pid filtering. Built as a non-PIE executable as well (burn-nopie).
 * Prints its wall and CPU time at exit ("wall_ns=N cpu_ns=N"), the reference for sample counts.
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>

#include "workload.h"

static volatile uint64_t sink;
static double seconds = 1.5;

NOINLINE static void burn_touch(uint64_t v)
{
	sink += v;
}

NOINLINE static void burn_spin(void)
{
	uint64_t x = 5;

	for (int i = 0; i < 50000; i++)
		x = x * 6364136223846793005ULL + 1;
	burn_touch(x);
}

NOINLINE static void *burn_loop(void *arg)
{
	struct until end = until_start(seconds);

	(void)arg;
	while (!until_over(&end))
		burn_spin();
	return NULL;
}

NOINLINE static int burn_threads(int n)
{
	pthread_t t[64];
	int i;

	if (n < 1)
		n = 1;
	if (n > 64)
		n = 64;
	for (i = 1; i < n; i++)
		if (pthread_create(&t[i], NULL, burn_loop, NULL))
			return 1;
	burn_loop(NULL);
	for (i = 1; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t start = mono_ns();
	struct rusage ru;
	int ret;

	seconds = arg_seconds(argc, argv, 1, 1.5);
	ret = burn_threads(argc > 2 ? atoi(argv[2]) : 1);
	getrusage(RUSAGE_SELF, &ru);
	printf("wall_ns=%llu ", (unsigned long long)(mono_ns() - start));
	printf("cpu_ns=%llu\n",
	       (unsigned long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ULL +
		       (unsigned long long)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ULL);
	return ret;
}
