// SPDX-License-Identifier: Apache-2.0
/* libhot.so: the hot function lives in a shared library. */
#include <stdint.h>

static volatile uint64_t lib_sink;

__attribute__((noinline, noipa)) static void lib_touch(uint64_t v)
{
	lib_sink += v;
}

__attribute__((noinline, noipa)) void lib_hot(uint64_t rounds)
{
	uint64_t x = 3;

	for (uint64_t r = 0; r < rounds; r++) {
		for (int i = 0; i < 20000; i++)
			x = x * 2862933555777941757ULL + 3037000493ULL;
		lib_touch(x);
	}
}
