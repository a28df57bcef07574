// SPDX-License-Identifier: Apache-2.0
/*
 * Functions whose call frame information covers the rules the unwind tables know: a leaf
 * (CFA = rsp + 8), pushes of callee-saved registers (rsp + N), a frame pointer forced by
 * alloca (rbp + 16, rbp saved at CFA - 16), a stack realigned for an over-aligned local (CFA
 * from r10, then an expression), and calls through the PLT. Built with .eh_frame, with only
 * .debug_frame, and with neither (tests/tests.mk); read by tests/unit/test_unwind.c, which
 * takes readelf's interpretation of the same CFI as the reference.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline, used))

volatile int uw_data = 3;

NOINLINE int uw_leaf(int x)
{
	return x * 7 + uw_data;
}

/* Keeps values across calls: callee-saved registers pushed, CFA moves with rsp. */
NOINLINE long uw_saves(int n)
{
	long a = uw_data, b = uw_data * 2, c = uw_data * 3, total = 0;

	for (int i = 0; i < n; i++)
		total += uw_leaf(i) * a + uw_leaf(i + 1) * b + uw_leaf(i + 2) * c;
	return total;
}

/* A variable-sized frame: the compiler keeps rbp as the frame pointer. */
NOINLINE int uw_alloca(int n)
{
	char *buf = __builtin_alloca((size_t)n + 16);

	memset(buf, uw_data, (size_t)n + 16);
	return uw_leaf(buf[n]);
}

/* An over-aligned local: the stack is realigned, the CFA found through r10, then rbp. */
NOINLINE int uw_aligned(int n)
{
	int v[16] __attribute__((aligned(64)));

	for (int i = 0; i < 16; i++)
		v[i] = uw_leaf(i + n);
	return uw_leaf(v[n & 15]);
}

/* Over-aligned and variable-sized at once: the stack is realigned through a dynamic
 * realignment pointer (CFA = r10, then a DWARF expression). */
NOINLINE int uw_realigned(int n)
{
	int v[16] __attribute__((aligned(64)));
	char *buf = __builtin_alloca((size_t)n + 16);

	memset(buf, uw_data, (size_t)n + 16);
	for (int i = 0; i < 16; i++)
		v[i] = uw_leaf(i + n + buf[i & 7]);
	return uw_leaf(v[n & 15]);
}

/* Library calls, through the PLT. */
NOINLINE int uw_libc(const char *s)
{
	char *copy = strdup(s);
	int len;

	if (!copy)
		return -1;
	len = (int)strlen(copy);
	if (len > 100)
		puts(copy);
	free(copy);
	return len;
}

int main(int argc, char **argv)
{
	long r = uw_saves(argc) + uw_alloca(argc) + uw_aligned(argc) + uw_realigned(argc);

	r += uw_libc(argv[0]);
	printf("%ld\n", r);
	return 0;
}
