// SPDX-License-Identifier: Apache-2.0
/*
 * C++ exceptions thrown three calls deep and caught, over and over, built without frame
 * pointers: the CPU goes to libgcc_s's own unwinder and libstdc++, whose stacks the table
 * unwinder must walk without crashing the program or inventing frames.
 *
 *   throws [SECONDS]
 */
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#define NOINLINE __attribute__((noinline, noipa))

static volatile uint64_t sink;

NOINLINE void thrower(uint64_t n)
{
	if (n % 3 != 7)
		throw std::runtime_error("odd");
	sink = n;
}

NOINLINE void middle(uint64_t n)
{
	thrower(n * 5);
	sink += n;
}

NOINLINE uint64_t catcher(uint64_t n)
{
	try {
		middle(n + 1);
	} catch (const std::runtime_error &e) {
		return n + e.what()[0];
	}
	return 0;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	auto end = std::chrono::steady_clock::now() +
		   std::chrono::duration_cast<std::chrono::steady_clock::duration>(
			   std::chrono::duration<double>(seconds));
	uint64_t n = 0, total = 0;

	while (std::chrono::steady_clock::now() < end)
		total += catcher(n++);
	std::printf("%llu %llu\n", (unsigned long long)n, (unsigned long long)total);
	return 0;
}
