// SPDX-License-Identifier: Apache-2.0
/*
 * Built -O2 -fomit-frame-pointer: the code a frame-pointer walk loses its way in. The hot
 * function is five calls deep, main -> level_a -> level_b -> level_c -> level_d -> deep_hot,
 * none inlined and none a tail call, so every level is a real frame that only the table
 * unwinder (or perf --call-graph dwarf) can find.
 *
 *   deep [SECONDS]       burn CPU for SECONDS (default 10; 3cpu: of CPU time, workload.h)
 *   deep SECONDS sys     the same, but deep_hot spends its time in system calls, so most
 *                        samples hit the kernel and the user stack starts from the
 *                        registers saved at kernel entry
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "workload.h"

static volatile uint64_t sink;
static int in_kernel;

/* Keeps rbp busy as a general register, as code without frame pointers does. */
NOINLINE uint64_t deep_hot(uint64_t n)
{
	uint64_t a = n, b = n ^ 0x9e3779b97f4a7c15ULL, c = 1, d = 3, e = 5, f = 7;
	int i;

	if (in_kernel) {
		for (i = 0; i < 2000; i++)
			a += (uint64_t)syscall(SYS_getppid);
		return a;
	}
	for (i = 0; i < 200000; i++) {
		a = a * 6364136223846793005ULL + 1442695040888963407ULL;
		b ^= a >> 13;
		c += b * 31;
		d ^= c << 7;
		e += d >> 3;
		f ^= e * 17;
	}
	return a ^ b ^ c ^ d ^ e ^ f;
}

NOINLINE uint64_t level_d(uint64_t n)
{
	uint64_t r = deep_hot(n);

	sink = r;
	return r + 1;
}

NOINLINE uint64_t level_c(uint64_t n)
{
	uint64_t big[32]; /* a frame of its own size: the CFA is not just rsp + 16 */
	uint64_t r;
	int i;

	for (i = 0; i < 32; i++)
		big[i] = n + (uint64_t)i;
	sink = big[n & 31];
	r = level_d(n + big[3]);
	return r + big[(n + 1) & 31];
}

NOINLINE uint64_t level_b(uint64_t n)
{
	return level_c(n * 3) + 2;
}

NOINLINE uint64_t level_a(uint64_t n)
{
	return level_b(n + 7) + 3;
}

int main(int argc, char **argv)
{
	struct until end = until_start(arg_seconds(argc, argv, 1, 10));
	uint64_t n = 0;

	in_kernel = argc > 2 && !strcmp(argv[2], "sys");
	while (!until_over(&end))
		sink = level_a(n++);
	printf("%llu\n", (unsigned long long)sink);
	return 0;
}
