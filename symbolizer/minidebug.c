// SPDX-License-Identifier: Apache-2.0
/*
 * MiniDebugInfo (GDB manual, "MiniDebugInfo"): an xz-compressed ELF file in the section
 * .gnu_debugdata of a stripped binary, holding the .symtab entries of the functions that
 * .dynsym lacks. Fedora and its derivatives ship binaries so; the symbols of the inner file
 * extend those of .dynsym.
 */
#include <errno.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer_internal.h"

/* Caps on the inner file: a hostile section must not decompress into gigabytes. */
#define MINIDEBUG_MAX_BYTES (64U << 20)

static Elf_Scn *find_section(Elf *elf, const char *want)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	const char *name;

	while (sym_next_section(elf, &scn, &shdr, &name))
		if (shdr.sh_type == SHT_PROGBITS && !strcmp(name, want))
			return scn;
	return NULL;
}

int sym_minidebug_image(Elf *elf, void **image, size_t *size)
{
	lzma_stream xz = LZMA_STREAM_INIT;
	Elf_Scn *scn = find_section(elf, ".gnu_debugdata");
	Elf_Data *data;
	uint8_t *out = NULL;
	size_t cap = 0;
	lzma_ret ret;
	int err = 0;

	*image = NULL;
	*size = 0;
	if (!scn)
		return -ENOENT;
	data = elf_getdata(scn, NULL);
	if (!data || !data->d_buf || !data->d_size)
		return -EINVAL;
	if (lzma_stream_decoder(&xz, MINIDEBUG_MAX_BYTES, 0) != LZMA_OK)
		return -ENOMEM;
	xz.next_in = data->d_buf;
	xz.avail_in = data->d_size;
	do {
		if (xz.avail_out == 0) {
			size_t grow = cap ? cap : 65536;
			uint8_t *p;

			if (cap + grow > MINIDEBUG_MAX_BYTES) {
				err = -EFBIG;
				break;
			}
			p = realloc(out, cap + grow);
			if (!p) {
				err = -ENOMEM;
				break;
			}
			out = p;
			xz.next_out = out + cap;
			xz.avail_out = grow;
			cap += grow;
		}
		ret = lzma_code(&xz, LZMA_FINISH);
	} while (ret == LZMA_OK);
	if (!err && ret != LZMA_STREAM_END)
		err = ret == LZMA_MEM_ERROR ? -ENOMEM : -EINVAL;
	if (!err) {
		*image = out;
		*size = cap - xz.avail_out;
	} else {
		free(out);
	}
	lzma_end(&xz);
	return err;
}
