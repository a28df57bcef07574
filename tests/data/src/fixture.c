// SPDX-License-Identifier: Apache-2.0
/*
 * Functions with known names for the symbolizer's unit tests. Built as a PIE, a non-PIE
 * executable, a shared library and a stripped shared library (tests/tests.mk); the test reads
 * the true addresses and sizes from `nm` listings made at build time.
 */
#define NOINLINE __attribute__((noinline, used))
#define API __attribute__((visibility("default")))

volatile int fx_data;

API NOINLINE int fx_exported_first(int x)
{
	return x * 3 + fx_data;
}

/* Local: in .symtab only, so a stripped library cannot name it. */
NOINLINE static int fx_internal(int x)
{
	int i, acc = 0;

	for (i = 0; i < x; i++)
		acc += i * fx_data;
	return acc;
}

API NOINLINE int fx_exported_second(int x)
{
	return fx_internal(x) + fx_exported_first(x);
}

API NOINLINE int fx_alias_target(int x)
{
	return x + 42 + fx_data;
}

/* Two names for one address: the global one is preferred over the weak one. */
extern int fx_weak_alias(int x) __attribute__((weak, alias("fx_alias_target")));

/* Names as a C++ compiler (a method of a class template in a namespace) and rustc (legacy
 * and v0 schemes) mangle them, given here as assembler labels, for the demangler. */
API NOINLINE int fx_cxx(int x) __asm__("_ZN2ns3BoxIiE3getERKi");
API NOINLINE int fx_cxx(int x)
{
	return x + 1 + fx_data;
}

API NOINLINE int fx_rust_legacy(int x) __asm__("_ZN4core3fmt5write17h0123456789abcdefE");
API NOINLINE int fx_rust_legacy(int x)
{
	return x + 2 + fx_data;
}

API NOINLINE int fx_rust_v0(int x) __asm__("_RNvNtCs1234_7mycrate3net4poll");
API NOINLINE int fx_rust_v0(int x)
{
	return x + 3 + fx_data;
}

#ifndef FIXTURE_LIB
int main(int argc, char **argv)
{
	(void)argv;
	return fx_exported_second(argc) + fx_weak_alias(argc) + fx_internal(argc);
}
#endif
