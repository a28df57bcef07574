// SPDX-License-Identifier: Apache-2.0
/*
 * manyprocs PROCESSES SECONDS EXECS_PER_SECOND: a busy host for the agent-cost benchmark.
 * PROCESSES children spin for SECONDS, each down its own short call chain (depth and
 * functions picked from its index, so stacks differ between processes), while the parent
 * forks and execs /bin/true EXECS_PER_SECOND times a second (process churn).
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noipa))

static volatile uint64_t sink;

typedef void (*step_fn)(unsigned int path, int depth);
static step_fn steps[8];

NOINLINE static void leaf(unsigned int path)
{
	uint64_t x = path;

	for (int i = 0; i < 20000; i++)
		x = x * 6364136223846793005ULL + 1;
	sink += x;
}

#define STEP(n)                                                                                \
	NOINLINE static void step##n(unsigned int path, int depth)                            \
	{                                                                                      \
		if (depth == 0)                                                                \
			leaf(path);                                                            \
		else                                                                           \
			steps[(path >> (3 * depth)) & 7](path, depth - 1);                     \
		sink++;                                                                        \
	}
STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void child(unsigned int index, double seconds)
{
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
	unsigned int path = index * 2654435761u;

	while (now_ns() < end)
		steps[path & 7](path, 1 + index % 6);
	_exit(0);
}

int main(int argc, char **argv)
{
	int procs = argc > 1 ? atoi(argv[1]) : 200, rate = argc > 3 ? atoi(argv[3]) : 50, i;
	double seconds = argc > 2 ? atof(argv[2]) : 60;
	step_fn init[8] = { step0, step1, step2, step3, step4, step5, step6, step7 };
	uint64_t end, next;

	for (i = 0; i < 8; i++)
		steps[i] = init[i];
	for (i = 0; i < procs; i++) {
		pid_t pid = fork();

		if (pid == 0)
			child((unsigned int)i, seconds);
		if (pid < 0)
			return 1;
	}
	end = now_ns() + (uint64_t)(seconds * 1e9);
	next = now_ns();
	while (rate > 0 && now_ns() < end) {
		pid_t pid = fork();

		if (pid == 0) {
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		next += 1000000000ULL / (uint64_t)rate;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (next > now_ns()) {
			struct timespec ts = { 0, (long)(next - now_ns()) };

			nanosleep(&ts, NULL);
		}
	}
	while (wait(NULL) > 0)
		;
	return 0;
}
