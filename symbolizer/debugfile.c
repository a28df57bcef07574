// SPDX-License-Identifier: Apache-2.0
/*
 * Separate debug files (GDB manual, "Debugging Information in Separate Files"): a stripped
 * binary's symbols and DWARF from a file the caller found through the binary's build ID
 * (/usr/lib/debug/.build-id/xx/rest.debug) or its .gnu_debuglink. The caller opens; this
 * file checks that the debug file belongs to the binary before anything is read from it:
 * the same build ID, or for a binary without one, the CRC-32 its debuglink records.
 */
#include <errno.h>
#include <fcntl.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "symbolizer_internal.h"

static int cmp_debug_file(const void *a, const void *b)
{
	return sym_cmp_table_key(&((const struct debug_file *)a)->key,
				 &((const struct debug_file *)b)->key);
}

int sym_debug_fd(const struct symbolizer *s, const struct symtab_key *key)
{
	struct debug_file probe = { .key = *key }, **found;

	found = tfind(&probe, &s->debug_files, cmp_debug_file);
	return found ? (*found)->fd : -1;
}

static void free_debug_file(void *p)
{
	struct debug_file *d = p;

	close(d->fd);
	free(d);
}

void sym_debug_files_free(struct symbolizer *s)
{
	tdestroy(s->debug_files, free_debug_file);
	s->debug_files = NULL;
}

bool sym_object__needs_debug_file(const struct sym_object *o)
{
	return !o->image && !o->has_dwarf && sym_debug_fd(o->s, &o->key) < 0;
}

const char *sym_object__debuglink(const struct sym_object *o, uint32_t *crc)
{
	if (crc)
		*crc = o->debuglink_crc;
	return o->debuglink;
}

static int file_crc32(int fd, uint32_t *out)
{
	unsigned char buf[65536];
	uLong crc = crc32(0, Z_NULL, 0);
	off_t off = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		crc = crc32(crc, buf, (uInt)n);
		off += n;
	}
	if (n < 0)
		return -errno;
	*out = (uint32_t)crc;
	return 0;
}

/* The candidate's build ID and whether it holds symbols or DWARF. */
static int inspect(int fd, struct sym_object *probe)
{
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	GElf_Ehdr ehdr;
	int err = 0;

	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr)) {
		err = -EINVAL;
		goto out;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;

		if (!gelf_getshdr(scn, &shdr))
			continue;
		if (shdr.sh_type == SHT_NOTE && !probe->build_id_len) {
			data = elf_getdata(scn, NULL);
			if (data && data->d_buf)
				sym_find_build_id(probe, data, 0);
		} else if (shdr.sh_type == SHT_SYMTAB && shdr.sh_size > shdr.sh_entsize) {
			probe->has_symtab = true;
		}
	}
	probe->has_dwarf = sym_has_debug_info(elf);
out:
	if (elf)
		elf_end(elf);
	return err;
}

/* Check fd is a regular ELF file within the cap; its build ID and contents into *probe. */
static int examine(int fd, struct sym_object *probe)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((uint64_t)st.st_size > SYM_MAX_FILE_BYTES)
		return -EFBIG;
	return inspect(fd, probe);
}

/* Record fd as the debug file of key and drop the table read without it. */
static int accept_file(struct symbolizer *s, const struct symtab_key *k, int fd)
{
	struct symtab key, **found;
	struct debug_file *df;
	int err;

	df = calloc(1, sizeof(*df));
	if (!df)
		return -ENOMEM;
	df->key = *k;
	df->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (df->fd < 0 || !tsearch(df, &s->debug_files, cmp_debug_file)) {
		err = df->fd < 0 ? -errno : -ENOMEM;
		if (df->fd >= 0)
			close(df->fd);
		free(df);
		return err;
	}
	/* A table this key already had was read without the debug file: drop it, so that the
	 * next lookup reads the debug file (for every object of that build ID). */
	key.key = *k;
	found = tfind(&key, &s->tables, sym_cmp_table);
	if (found)
		sym_table_drop(s, *found);
	s->stats.debug_files++;
	return 0;
}

int symbolizer__set_debug_file(struct symbolizer *s, struct sym_object *o, int fd)
{
	struct sym_object probe = { 0 };
	uint32_t crc;
	int err;

	if (o->image || sym_debug_fd(s, &o->key) >= 0)
		return -EALREADY;
	err = examine(fd, &probe);
	if (err)
		return err;
	if (o->build_id_len) {
		/* The build ID is what ties the two; a debug file of another build is refused
		 * even when its name matches. */
		if (probe.build_id_len != o->build_id_len ||
		    memcmp(probe.build_id, o->build_id, o->build_id_len)) {
			s->stats.debug_files_refused++;
			return -ENOKEY;
		}
	} else {
		if (!o->debuglink)
			return -ENOKEY;
		err = file_crc32(fd, &crc);
		if (err)
			return err;
		if (crc != o->debuglink_crc) {
			s->stats.debug_files_refused++;
			return -ENOKEY;
		}
	}
	if (!probe.has_symtab && !probe.has_dwarf)
		return -ENODATA;
	err = accept_file(s, &o->key, fd);
	if (!err) {
		o->symtab = NULL;
		o->symtab_err = 0;
	}
	return err;
}

int symbolizer__add_debug_file(struct symbolizer *s, const uint8_t *build_id, size_t len, int fd)
{
	struct sym_object probe = { 0 };
	struct symtab_key key = { .kind = SYMTAB_KEY_BUILD_ID };
	int err;

	if (!len || len > SYM_MAX_BUILD_ID)
		return -EINVAL;
	key.len = (uint8_t)len;
	memcpy(key.data, build_id, len);
	if (sym_debug_fd(s, &key) >= 0)
		return -EALREADY;
	err = examine(fd, &probe);
	if (err)
		return err;
	if (probe.build_id_len != len || memcmp(probe.build_id, build_id, len)) {
		s->stats.debug_files_refused++;
		return -ENOKEY;
	}
	if (!probe.has_symtab && !probe.has_dwarf)
		return -ENODATA;
	return accept_file(s, &key, fd);
}
