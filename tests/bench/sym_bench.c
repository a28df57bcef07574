// SPDX-License-Identifier: Apache-2.0
/*
 * sym_bench BINARY ADDRESSES: resolve every address of the ADDRESSES file (hex ELF virtual
 * addresses, one per line) in BINARY with libsymbolizer, twice: the first pass cold (tables,
 * DWARF indexes and address cache built on the way), the second warm. Prints JSON: ns per
 * address for each pass, and how many addresses got a name, a line and inline frames.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "../../symbolizer/symbolizer.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	struct symbolizer_opts opts = { .sz = sizeof(opts), .cache_max_bytes = 1ULL << 30 };
	struct symbolizer *s;
	struct sym_object *o;
	struct sym_frame f[16];
	uint64_t *addrs = NULL, t0, t1, t2;
	size_t nr = 0, cap = 0, i, named = 0, lines = 0, inlined = 0;
	unsigned long long a;
	FILE *in;
	int fd, n, pass;

	if (argc != 3) {
		fprintf(stderr, "usage: sym_bench BINARY ADDRESSES\n");
		return 2;
	}
	in = fopen(argv[2], "r");
	if (!in)
		return 1;
	while (fscanf(in, "%llx", &a) == 1) {
		if (nr == cap) {
			cap = cap ? cap * 2 : 4096;
			addrs = realloc(addrs, cap * sizeof(*addrs));
			if (!addrs)
				return 1;
		}
		addrs[nr++] = a;
	}
	fclose(in);
	s = symbolizer__new(&opts);
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (!s || fd < 0)
		return 1;
	t0 = now_ns();
	o = symbolizer__open_fd(s, fd, argv[1], 0, 0);
	if (!o)
		return 1;
	t1 = t0;
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < nr; i++) {
			n = symbolizer__symbolize(s, o, addrs[i], f, 16);
			if (pass == 0 && n > 0) {
				named++;
				lines += f[0].line > 0;
				inlined += n > 1;
			}
		}
		if (pass == 0)
			t1 = now_ns();
	}
	t2 = now_ns();
	printf("{\"addresses\":%zu,\"cold_ns\":%.1f,\"warm_ns\":%.1f,\"named\":%zu,\"with_line\":%zu,"
	       "\"with_inline\":%zu}\n",
	       nr, (double)(t1 - t0) / (double)nr, (double)(t2 - t1) / (double)nr, named, lines,
	       inlined);
	sym_object__put(o);
	symbolizer__free(s);
	close(fd);
	free(addrs);
	return 0;
}
