// SPDX-License-Identifier: Apache-2.0
/* libFuzzer target: one /proc/PID/maps line (procmaps_parse_line). */
#include <stdlib.h>
#include <string.h>

#include "../../symbolizer/symbolizer.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct procmaps_entry e;
	char *line = malloc(size + 1);

	if (!line)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	if (!procmaps_parse_line(line, &e) && (e.end < e.start || !e.path))
		abort(); /* a parsed entry must make sense */
	free(line);
	return 0;
}
