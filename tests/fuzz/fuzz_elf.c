// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: an ELF file as a process would map it: headers, build ID, debuglink,
 * symbol tables, DWARF (functions, lines, inline scopes), demangling; then the same bytes
 * offered as its own separate debug file.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../symbolizer/symbolizer.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static int memfd_of(const unsigned char *data, size_t size)
{
	int fd = memfd_create("fuzz-elf", MFD_CLOEXEC);

	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	return fd;
}

static void symbolize_some(struct symbolizer *s, struct sym_object *o, const unsigned char *data,
			   size_t size)
{
	struct sym_frame f[16];
	uint64_t off, vaddr;
	size_t i;
	int n, j;

	for (i = 0; i + 8 <= size && i < 256; i += 8) {
		memcpy(&off, data + i, 8);
		if (sym_object__vaddr(o, off % (size + 4096), &vaddr))
			vaddr = off;
		n = symbolizer__symbolize(s, o, vaddr, f, 16);
		for (j = 0; j < n; j++)
			if (!f[j].name || strlen(f[j].name) >= 4096 + 64)
				abort();
	}
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct symbolizer_opts opts = { .sz = sizeof(opts), .cache_max_bytes = 1 << 20 };
	struct symbolizer *s = symbolizer__new(&opts);
	struct sym_object *o;
	char hex[130];
	int fd = memfd_of(data, size), err;

	o = symbolizer__open_fd(s, fd, "fuzz", 0, 0);
	if (o) {
		sym_object__build_id_hex(o, hex, sizeof(hex));
		sym_object__debuglink(o, NULL);
		symbolize_some(s, o, data, size);
		if (sym_object__needs_debug_file(o)) {
			err = symbolizer__set_debug_file(s, o, fd);
			(void)err;
			symbolize_some(s, o, data, size);
		}
		sym_object__put(o);
	}
	close(fd);
	symbolizer__free(s);
	return 0;
}
