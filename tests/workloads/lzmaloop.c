// SPDX-License-Identifier: Apache-2.0
/*
 * Most of its CPU inside Debian's liblzma, which is built without frame pointers: the
 * program's own frames (compress_block <- run_compress <- main) are the callers of the
 * library's frames only for an unwinder that reads liblzma's .eh_frame.
 *
 *   lzmaloop [SECONDS[cpu]]
 *   lzmadl [SECONDS[cpu] [WARM_UP_SECONDS]]
 *
 * Built with LZMA_DLOPEN (lzmadl), it burns WARM_UP_SECONDS (0.05) of wall time in its own
 * code first and only then loads liblzma with dlopen(): a process announced before it maps
 * the library it spends its time in, as most processes are (their first sample lands in the
 * dynamic loader); with a warm-up of seconds, one the agent published before the dlopen(),
 * as a program that loads a plugin late.
 */
#include <lzma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef LZMA_DLOPEN
#include <dlfcn.h>
#endif

#include "workload.h"

#define INPUT_BYTES (256 * 1024)

static uint8_t input[INPUT_BYTES];
static uint8_t output[INPUT_BYTES + INPUT_BYTES / 2 + 1024];

static lzma_ret (*encode)(uint32_t preset, lzma_check check, const lzma_allocator *allocator,
			  const uint8_t *in, size_t in_size, uint8_t *out, size_t *out_pos,
			  size_t out_size);

NOINLINE size_t compress_block(uint32_t preset)
{
	size_t out = 0;

	if (encode(preset, LZMA_CHECK_CRC32, NULL, input, sizeof(input), output, &out,
		   sizeof(output)) != LZMA_OK)
		abort();
	return out;
}

#ifdef LZMA_DLOPEN
NOINLINE static void warm_up(double seconds)
{
	uint64_t end = mono_ns() + (uint64_t)(seconds * 1e9);

	while (mono_ns() < end)
		;
}

static void load_liblzma(int argc, char **argv)
{
	void *lib;

	warm_up(argc > 2 ? atof(argv[2]) : 0.05);
	lib = dlopen("liblzma.so.5", RTLD_NOW);
	if (!lib || !(*(void **)&encode = dlsym(lib, "lzma_easy_buffer_encode"))) {
		fprintf(stderr, "liblzma: %s\n", dlerror());
		exit(1);
	}
}
#else
static void load_liblzma(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	encode = lzma_easy_buffer_encode;
}
#endif

NOINLINE uint64_t run_compress(double seconds)
{
	struct until end = until_start(seconds);
	uint64_t total = 0;

	while (!until_over(&end))
		total += compress_block(1);
	return total;
}

int main(int argc, char **argv)
{
	uint64_t x = 88172645463325252ULL;
	size_t i;

	load_liblzma(argc, argv);
	/* Compressible but not trivial: text-like bytes from a xorshift generator. */
	for (i = 0; i < sizeof(input); i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		input[i] = (uint8_t)('a' + (x % 16));
	}
	printf("%llu\n", (unsigned long long)run_compress(arg_seconds(argc, argv, 1, 5)));
	return 0;
}
