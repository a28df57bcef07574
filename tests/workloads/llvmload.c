// SPDX-License-Identifier: Apache-2.0
/*
 * Most of its CPU inside Debian's libLLVM-14 (package libllvm14, which clang-14 depends on),
 * built without frame pointers and with the largest unwind table of a usual host (about
 * 950 000 rows, 7.2 MiB in the BPF row map): the workload of a row map too small for it.
 *
 *   llvmload [SECONDS]
 *   llvmload hold SECONDS [LIBRARY]
 *
 * It loads the library with dlopen() and parses a module of LLVM IR text again and again
 * through the C API: parse_module <- run_parse <- main, then the library's parser.
 *
 * With hold it loads LIBRARY (libz3.so.4, libLLVM-14's dependency with 386 000 rows, by
 * default) alone, spins 0.3 s so that the agent sees it, then sleeps: a process that holds a
 * large table it does not use.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload.h"

#define FUNCTIONS 200

typedef void *llvm_ref;

static llvm_ref (*context_create)(void);
static llvm_ref (*buffer_copy)(const char *data, size_t len, const char *name);
static int (*parse_ir)(llvm_ref ctx, llvm_ref buf, llvm_ref *module, char **message);
static void (*dispose_module)(llvm_ref module);
static void (*dispose_message)(char *message);

static char ir[FUNCTIONS * 400];

static void *symbol(void *lib, const char *name)
{
	void *p = dlsym(lib, name);

	if (!p) {
		fprintf(stderr, "libLLVM-14: %s: %s\n", name, dlerror());
		exit(1);
	}
	return p;
}

static void load_libllvm(void)
{
	void *lib = dlopen("libLLVM-14.so.1", RTLD_NOW);

	if (!lib) {
		fprintf(stderr, "libLLVM-14: %s\n", dlerror());
		exit(1);
	}
	*(void **)&context_create = symbol(lib, "LLVMContextCreate");
	*(void **)&buffer_copy = symbol(lib, "LLVMCreateMemoryBufferWithMemoryRangeCopy");
	*(void **)&parse_ir = symbol(lib, "LLVMParseIRInContext");
	*(void **)&dispose_module = symbol(lib, "LLVMDisposeModule");
	*(void **)&dispose_message = symbol(lib, "LLVMDisposeMessage");
}

/* FUNCTIONS small functions of integer arithmetic and a loop each. */
static void make_ir(void)
{
	size_t len = 0;
	int i;

	for (i = 0; i < FUNCTIONS; i++)
		len += (size_t)snprintf(ir + len, sizeof(ir) - len,
					"define i32 @f%d(i32 %%a, i32 %%b) {\n"
					"entry:\n  br label %%loop\n"
					"loop:\n  %%i = phi i32 [ 0, %%entry ], [ %%n, %%loop ]\n"
					"  %%x = mul i32 %%i, %%a\n  %%y = add i32 %%x, %%b\n"
					"  %%n = add i32 %%i, %d\n  %%c = icmp slt i32 %%n, %%y\n"
					"  br i1 %%c, label %%loop, label %%done\n"
					"done:\n  ret i32 %%y\n}\n",
					i, i + 1);
}

NOINLINE static void parse_module(llvm_ref ctx)
{
	llvm_ref module = NULL;
	char *message = NULL;

	if (parse_ir(ctx, buffer_copy(ir, strlen(ir), "m"), &module, &message)) {
		fprintf(stderr, "libLLVM-14: %s\n", message ? message : "parse error");
		exit(1);
	}
	dispose_module(module);
	if (message)
		dispose_message(message);
}

NOINLINE static unsigned long run_parse(double seconds)
{
	uint64_t end = mono_ns() + (uint64_t)(seconds * 1e9);
	llvm_ref ctx = context_create();
	unsigned long n = 0;

	while (mono_ns() < end) {
		parse_module(ctx);
		n++;
	}
	return n;
}

NOINLINE static void spin(double seconds)
{
	uint64_t end = mono_ns() + (uint64_t)(seconds * 1e9);

	while (mono_ns() < end)
		;
}

static int hold(double seconds, const char *library)
{
	struct timespec ts = { .tv_sec = (time_t)seconds };

	if (!dlopen(library, RTLD_NOW)) {
		fprintf(stderr, "%s: %s\n", library, dlerror());
		return 1;
	}
	spin(0.3);
	nanosleep(&ts, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "hold"))
		return hold(atof(argv[2]), argc > 3 ? argv[3] : "libz3.so.4");
	load_libllvm();
	make_ir();
	printf("%lu\n", run_parse(arg_seconds(argc, argv, 1, 5)));
	return 0;
}
