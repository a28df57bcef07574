// SPDX-License-Identifier: Apache-2.0
/*
 * One process of an exec storm: main -> spin, built -O2 -fomit-frame-pointer (the code a
 * frame-pointer walk loses its way in, and libc's start-up under it), burning CPU for a few
 * milliseconds and exiting. Every sample of such a process is among its first: the agent
 * cannot have read its mappings before it ran, and often not before it exited.
 *
 *   stormburn [MILLISECONDS]   burn that much CPU time (default 5)
 */
#include <stdint.h>
#include <stdlib.h>

#include "workload.h"

static volatile uint64_t sink;

/* Burns until the thread has used ms of CPU time: the clock is read every ~20 us, so
 * samples land in the loop, not in the vDSO. Keeps rbp busy, as code without frame
 * pointers does. */
NOINLINE uint64_t spin(double ms)
{
	uint64_t a = 1, b = 0x9e3779b97f4a7c15ULL, c = 3, d = 5, t0 = thread_cpu_ns();
	int i;

	while (thread_cpu_ns() - t0 < (uint64_t)(ms * 1e6)) {
		for (i = 0; i < 20000; i++) {
			a = a * 6364136223846793005ULL + 1442695040888963407ULL;
			b ^= a >> 13;
			c += b * 31;
			d ^= c << 7;
		}
	}
	return a ^ b ^ c ^ d;
}

int main(int argc, char **argv)
{
	sink = spin(argc > 1 ? atof(argv[1]) : 5);
	return 0;
}
