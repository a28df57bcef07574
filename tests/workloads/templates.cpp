// SPDX-License-Identifier: Apache-2.0
/*
 * templates [SECONDS[cpu]]: C++ names for the demangler: a member function of a class template
 * in a nested namespace, ignis_test::codec::Mixer<unsigned long>::churn(unsigned long).
 * SECONDS of wall time, or with "cpu" (3cpu) of CPU time capped at ten times that on the
 * clock (as workload.h's until_start()).
 */
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace ignis_test {
namespace codec {

template <typename T> class Mixer {
public:
	__attribute__((noinline, noipa)) T churn(T x)
	{
		for (int i = 0; i < 4096; i++)
			x = (x ^ (x >> 5)) * static_cast<T>(0x100000001b3ULL) + static_cast<T>(i);
		return x;
	}
};

} // namespace codec
} // namespace ignis_test

static volatile std::uint64_t sink;

static std::uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ULL +
	       static_cast<std::uint64_t>(ts.tv_nsec);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? std::atof(argv[1]) : 3;
	bool cpu = argc > 1 && std::strstr(argv[1], "cpu");
	std::uint64_t ns = static_cast<std::uint64_t>(seconds * 1e9);
	std::uint64_t now = clock_ns(CLOCK_MONOTONIC), next_check = now;
	std::uint64_t wall_end = now + (cpu ? 10 * ns : ns);
	std::uint64_t cpu_end = cpu ? clock_ns(CLOCK_THREAD_CPUTIME_ID) + ns : 0;
	ignis_test::codec::Mixer<unsigned long> m;
	unsigned long x = 1;

	while ((now = clock_ns(CLOCK_MONOTONIC)) < wall_end) {
		sink = x = m.churn(x);
		if (cpu && now >= next_check) { /* the CPU clock is a system call: once a ms */
			next_check = now + 1000000;
			if (clock_ns(CLOCK_THREAD_CPUTIME_ID) >= cpu_end)
				break;
		}
	}
	return 0;
}
