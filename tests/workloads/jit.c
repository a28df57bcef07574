// SPDX-License-Identifier: Apache-2.0
/*
 * jit [SECONDS]: a pretend JIT. It writes a function's machine code into anonymous
 * executable memory, describes it in /tmp/perf-PID.map as "jit_spin_loop" (PID as this
 * process sees itself, so 1 inside a new pid namespace), and spends its time there, called
 * from run_jit(). The code keeps a frame pointer, so the stack walk continues into run_jit.
 * Usage: jit SECONDS [MAP_PATH_FILE], the map's path written to MAP_PATH_FILE if given.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "workload.h"

/* push %rbp; mov %rsp,%rbp; mov %rdi,%rcx; 1: dec %rcx; jnz 1b; pop %rbp; ret */
static const unsigned char code[] = { 0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0xf9, 0x48,
				      0xff, 0xc9, 0x75, 0xfb, 0x5d, 0xc3 };

NOINLINE static void run_jit(void (*fn)(unsigned long), double seconds)
{
	struct until end = until_start(seconds);

	while (!until_over(&end))
		fn(200000);
}

int main(int argc, char **argv)
{
	char path[64];
	unsigned char *mem;
	FILE *f;

	mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	memset(mem, 0xcc, 4096);
	memcpy(mem + 256, code, sizeof(code));
	if (mprotect(mem, 4096, PROT_READ | PROT_EXEC))
		return 1;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!f)
		return 1;
	/* A line the runtime overwrote later (the later one wins), a malformed line (skipped
	 * and counted), then the real one. */
	fprintf(f, "%lx %zx stale_name\n", (unsigned long)(mem + 256), sizeof(code));
	fprintf(f, "this line is not a map entry\n");
	fprintf(f, "%lx %zx jit_spin_loop\n", (unsigned long)(mem + 256), sizeof(code));
	fclose(f);
	if (argc > 2 && (f = fopen(argv[2], "w"))) {
		fprintf(f, "%s\n", path);
		fclose(f);
	}
	run_jit((void (*)(unsigned long))(void *)(mem + 256), arg_seconds(argc, argv, 1, 3));
	/* The map stays: the agent names the last window's samples after this exits, as
	 * runtimes leave their maps behind (the test removes it). */
	return 0;
}
