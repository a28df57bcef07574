// SPDX-License-Identifier: Apache-2.0
/*
 * C++ exceptions thrown three calls deep and caught, over and over, built without frame
 * pointers: the CPU goes to libgcc_s's own unwinder and libstdc++, whose stacks the table
 * unwinder must walk without crashing the program or inventing frames.
 *
 *   throws [SECONDS]
 *
 * SECONDS of CPU time, not of wall time (at most four times as long on the clock): the samples
 * a test judges then do not depend on what else the machine runs.
 */
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
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

static double cpu_seconds()
{
	timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	double end = cpu_seconds() + seconds;
	auto deadline = std::chrono::steady_clock::now() +
			std::chrono::duration_cast<std::chrono::steady_clock::duration>(
				std::chrono::duration<double>(4 * seconds));
	uint64_t n = 0, total = 0;

	while (cpu_seconds() < end && std::chrono::steady_clock::now() < deadline)
		for (int i = 0; i < 64; i++)
			total += catcher(n++);
	std::printf("%llu %llu\n", (unsigned long long)n, (unsigned long long)total);
	return 0;
}
