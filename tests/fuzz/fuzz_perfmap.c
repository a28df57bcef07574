// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target: JIT symbol maps (/tmp/perf-PID.map), parse and look up. */
#include <stdlib.h>
#include <string.h>

#include "../../symbolizer/symbolizer.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct sym_perfmap *m = sym_perfmap__parse((const char *)data, size);
	uint64_t addr = 0, start;
	const char *name;
	size_t i;

	if (!m)
		return 0;
	/* Addresses from the input itself, so some land inside entries. */
	for (i = 0; i + 8 <= size && i < 64; i += 8) {
		memcpy(&addr, data + i, 8);
		name = sym_perfmap__lookup(m, addr, &start);
		if (name && (start > addr || !strlen(name)))
			abort();
	}
	sym_perfmap__free(m);
	return 0;
}
