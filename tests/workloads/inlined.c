// SPDX-License-Identifier: Apache-2.0
/*
 * inlined [SECONDS]: main -> spin_caller, whose hot loop is mix_inlined(), forced inline at
 * -O2. A profile must show mix_inlined as its own frame leafward of spin_caller, with
 * spin_caller's line at the call site (CALL_MIX).
 */
#include "workload.h"

static volatile uint64_t sink;

static inline __attribute__((always_inline)) uint64_t mix_inlined(uint64_t x)
{
	for (int i = 0; i < 4096; i++)
		x = (x ^ (x >> 7)) * 0x9e3779b97f4a7c15ULL + (uint64_t)i;
	return x;
}

NOINLINE static void spin_caller(double seconds)
{
	struct until end = until_start(seconds);
	uint64_t x = 1;

	while (!until_over(&end)) {
		x = mix_inlined(x); /* CALL_MIX */
		sink = x;
	}
}

int main(int argc, char **argv)
{
	spin_caller(arg_seconds(argc, argv, 1, 3));
	return 0;
}
