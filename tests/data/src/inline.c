// SPDX-License-Identifier: Apache-2.0
/*
 * Inlined code for the DWARF tests, built with -O2 -g: leaf_inlined() is inlined into
 * mid_inlined(), which is inlined into outer(). The markers name the call sites' lines.
 */
#define NOINLINE __attribute__((noinline, used))
#define INLINE static inline __attribute__((always_inline))

volatile unsigned long in_data;

INLINE unsigned long leaf_inlined(unsigned long x)
{
	unsigned long acc = 0;

	for (unsigned long i = 0; i < x; i++)
		acc = acc * 31 + i * in_data;
	return acc;
}

INLINE unsigned long mid_inlined(unsigned long x)
{
	return leaf_inlined(x) * 3; /* CALL_LEAF */
}

NOINLINE unsigned long outer(unsigned long x)
{
	unsigned long r = mid_inlined(x + in_data); /* CALL_MID */

	return r + 1;
}

#ifdef OTHER_BUILD
volatile int other_build = 1;
#endif

int main(int argc, char **argv)
{
	(void)argv;
	return (int)outer((unsigned long)argc);
}
