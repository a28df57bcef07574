// SPDX-License-Identifier: Apache-2.0
/*
 * templates [SECONDS]: C++ names for the demangler: a member function of a class template in
 * a nested namespace, ignis_test::codec::Mixer<unsigned long>::churn(unsigned long).
 */
#include <chrono>
#include <cstdint>
#include <cstdlib>

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

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? std::atof(argv[1]) : 3;
	auto end = std::chrono::steady_clock::now() +
		   std::chrono::duration_cast<std::chrono::steady_clock::duration>(
			   std::chrono::duration<double>(seconds));
	ignis_test::codec::Mixer<unsigned long> m;
	unsigned long x = 1;

	while (std::chrono::steady_clock::now() < end)
		sink = x = m.churn(x);
	return 0;
}
