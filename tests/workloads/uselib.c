// SPDX-License-Identifier: Apache-2.0
/* uselib [SECONDS]: main -> call_lib -> lib_hot (in libhot.so). */
#include "workload.h"

void lib_hot(uint64_t rounds);

NOINLINE static void call_lib(double seconds)
{
	struct until end = until_start(seconds);

	while (!until_over(&end))
		lib_hot(200);
}

int main(int argc, char **argv)
{
	call_lib(arg_seconds(argc, argv, 1, 5));
	return 0;
}
