// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: finding and checking a separate debug file. The input is split in two:
 * a binary (its build ID, .gnu_debuglink name and CRC) and a candidate debug file, which
 * must be refused unless it belongs to the binary, and then serves its lookups.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../symbolizer/symbolizer.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static int memfd_of(const unsigned char *data, size_t size)
{
	int fd = memfd_create("fuzz-debug", MFD_CLOEXEC);

	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	return fd;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct symbolizer *s;
	struct sym_object *o;
	struct sym_frame f[8];
	const char *link;
	size_t split;
	uint32_t crc;
	int bin, dbg, err, i;

	if (size < 2)
		return 0;
	split = ((size_t)data[0] << 8 | data[1]) % (size - 1);
	data += 2;
	size -= 2;
	s = symbolizer__new(NULL);
	bin = memfd_of(data, split);
	dbg = memfd_of(data + split, size - split);
	o = symbolizer__open_fd(s, bin, "/usr/bin/fuzz", 0, 0);
	if (o) {
		link = sym_object__debuglink(o, &crc);
		if (link && (strchr(link, '/') || !*link))
			abort(); /* a debuglink must never steer the lookup to another folder */
		err = symbolizer__set_debug_file(s, o, dbg);
		for (i = 0; !err && i < 32; i++)
			(void)symbolizer__symbolize(s, o, (uint64_t)i * 64, f, 8);
		sym_object__put(o);
	}
	close(bin);
	close(dbg);
	symbolizer__free(s);
	return 0;
}
