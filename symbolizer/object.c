// SPDX-License-Identifier: Apache-2.0
/*
 * ELF objects: what is read once per file when a process maps it, i.e. the build ID and the
 * PT_LOAD program headers (System V gABI, "Program Header"; the build ID is the
 * NT_GNU_BUILD_ID note written by `ld --build-id`). Symbol tables are read later, on first
 * use, through the descriptor the object keeps.
 */
#include <errno.h>
#include <fcntl.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolizer_internal.h"

static int cmp_object(const void *a, const void *b)
{
	const struct sym_object *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return 0;
}

/* Look for NT_GNU_BUILD_ID in one block of notes. Returns true when found. */
bool sym_find_build_id(struct sym_object *o, Elf_Data *data, uint64_t vaddr)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nhdr;

	while (off < data->d_size &&
	       (next = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
		if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == sizeof("GNU") &&
		    !memcmp((char *)data->d_buf + name_off, "GNU", sizeof("GNU")) &&
		    nhdr.n_descsz > 0 && nhdr.n_descsz <= SYM_MAX_BUILD_ID &&
		    desc_off + nhdr.n_descsz <= data->d_size) {
			memcpy(o->build_id, (char *)data->d_buf + desc_off, nhdr.n_descsz);
			o->build_id_len = nhdr.n_descsz;
			o->build_id_vaddr = vaddr ? vaddr + desc_off : 0;
			return true;
		}
		off = next;
	}
	return false;
}

/* .debug_info and .gnu_debuglink ("name\0", padding to 4 bytes, CRC-32 of the debug file;
 * GDB manual, "Debugging Information in Separate Files"). */
static void read_named_section(struct sym_object *o, Elf *elf, Elf_Scn *scn, const GElf_Shdr *shdr)
{
	const char *name;
	Elf_Data *data;
	size_t shstrndx, len, crc_off;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	name = elf_strptr(elf, shstrndx, shdr->sh_name);
	if (!name)
		return;
	if (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")) {
		o->has_dwarf = shdr->sh_size > 0;
		return;
	}
	if (strcmp(name, ".gnu_debuglink") || o->debuglink || shdr->sh_size > 4096 + 8)
		return;
	data = elf_getdata(scn, NULL);
	if (!data || !data->d_buf || data->d_size < 8)
		return;
	len = strnlen(data->d_buf, data->d_size);
	crc_off = (len + 4) & ~(size_t)3; /* past the name, its NUL and the padding */
	/* A plain file name: no path, so no lookup can be steered elsewhere. */
	if (!len || crc_off + 4 > data->d_size || memchr(data->d_buf, '/', len) ||
	    !strcmp(data->d_buf, ".") || !strcmp(data->d_buf, ".."))
		return;
	o->debuglink = strndup(data->d_buf, len);
	memcpy(&o->debuglink_crc, (char *)data->d_buf + crc_off, 4);
	if (elf_getident(elf, NULL)[EI_DATA] !=
	    (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB))
		o->debuglink_crc = __builtin_bswap32(o->debuglink_crc);
}

static int read_headers(struct sym_object *o, Elf *elf)
{
	size_t nr_phdrs = 0, i;
	Elf_Scn *scn = NULL;
	GElf_Ehdr ehdr;
	GElf_Phdr phdr;
	GElf_Shdr shdr;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr))
		return -EINVAL;
	if (ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN)
		return -EINVAL;
	if (elf_getphdrnum(elf, &nr_phdrs))
		return -EINVAL;

	for (i = 0; i < nr_phdrs; i++) {
		if (!gelf_getphdr(elf, (int)i, &phdr))
			return -EINVAL;
		if (phdr.p_type == PT_LOAD && o->nr_loads < SYM_MAX_LOADS) {
			struct sym_load *l = &o->loads[o->nr_loads];

			if (phdr.p_offset > UINT64_MAX - phdr.p_memsz)
				continue;
			l->offset = phdr.p_offset;
			l->vaddr = phdr.p_vaddr;
			l->filesz = phdr.p_filesz < phdr.p_memsz ? phdr.p_filesz : phdr.p_memsz;
			l->memsz = phdr.p_memsz;
			l->exec = !!(phdr.p_flags & PF_X);
			o->nr_loads++;
		} else if (phdr.p_type == PT_NOTE && !o->build_id_len) {
			Elf_Data *data = elf_getdata_rawchunk(elf, (int64_t)phdr.p_offset,
							      phdr.p_filesz, ELF_T_NHDR);

			if (data)
				sym_find_build_id(o, data, phdr.p_vaddr);
		}
	}
	/* Sections: the build ID note when no program header carries it, whether symbols or
	 * DWARF are here, and where a separate debug file may be (.gnu_debuglink). */
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;

		if (!gelf_getshdr(scn, &shdr))
			continue;
		if (shdr.sh_type == SHT_NOTE && !o->build_id_len) {
			data = elf_getdata(scn, NULL);
			if (data)
				sym_find_build_id(o, data,
						  shdr.sh_flags & SHF_ALLOC ? shdr.sh_addr : 0);
		} else if (shdr.sh_type == SHT_SYMTAB && shdr.sh_size > shdr.sh_entsize) {
			o->has_symtab = true;
		} else if (shdr.sh_type == SHT_PROGBITS) {
			read_named_section(o, elf, scn, &shdr);
		}
	}
	if (!o->nr_loads)
		return -EINVAL;
	return 0;
}

static void set_key(struct sym_object *o, const struct stat *st, uint32_t checksum)
{
	struct symtab_key *k = &o->key;

	memset(k, 0, sizeof(*k));
	if (o->build_id_len) {
		k->kind = SYMTAB_KEY_BUILD_ID;
		k->len = (uint8_t)o->build_id_len;
		memcpy(k->data, o->build_id, o->build_id_len);
	} else if (st) {
		uint64_t id[5] = { st->st_dev, st->st_ino, (uint64_t)st->st_size,
				   (uint64_t)st->st_mtim.tv_sec, (uint64_t)st->st_mtim.tv_nsec };

		k->kind = SYMTAB_KEY_FILE;
		k->len = sizeof(id);
		memcpy(k->data, id, sizeof(id));
	} else {
		uint64_t id[2] = { o->image_size, checksum };

		k->kind = SYMTAB_KEY_MEMORY;
		k->len = sizeof(id);
		memcpy(k->data, id, sizeof(id));
	}
}

static struct sym_object *object_new(struct symbolizer *s, const char *name)
{
	struct sym_object *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->s = s;
	o->refs = 1;
	o->fd = -1;
	o->name = strdup(name ? name : "");
	if (!o->name) {
		free(o);
		return NULL;
	}
	return o;
}

static void object_free(struct sym_object *o)
{
	if (o->fd >= 0)
		close(o->fd);
	sym_object_forget_found(o);
	free(o->debuglink);
	free(o->image);
	free(o->name);
	free(o);
}

struct sym_object *symbolizer__find(struct symbolizer *s, dev_t dev, ino_t ino)
{
	struct sym_object key = { .dev = dev, .ino = ino }, **found;

	found = tfind(&key, &s->objects, cmp_object);
	if (!found) {
		errno = ENOENT;
		return NULL;
	}
	return sym_object__get(*found);
}

struct sym_object *symbolizer__open_fd(struct symbolizer *s, int fd, const char *name, dev_t dev,
				       ino_t ino)
{
	struct sym_object *o = NULL, **slot;
	Elf *elf = NULL;
	struct stat st;
	int err;

	if (fstat(fd, &st))
		return NULL;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		return NULL;
	}
	if ((uint64_t)st.st_size > SYM_MAX_FILE_BYTES) {
		errno = EFBIG;
		return NULL;
	}
	if (!dev && !ino) {
		dev = st.st_dev;
		ino = st.st_ino;
	}
	o = symbolizer__find(s, dev, ino);
	if (o)
		return o;

	o = object_new(s, name);
	if (!o)
		return NULL;
	o->dev = dev;
	o->ino = ino;
	o->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (o->fd < 0) {
		err = -errno;
		goto err_out;
	}
	/* ELF_C_READ, not _MMAP: a file truncated under us must not turn into SIGBUS. */
	elf = elf_begin(o->fd, ELF_C_READ, NULL);
	if (!elf) {
		err = -EINVAL;
		goto err_out;
	}
	err = read_headers(o, elf);
	elf_end(elf);
	if (err)
		goto err_out;
	set_key(o, &st, 0);

	slot = tsearch(o, &s->objects, cmp_object);
	if (!slot) {
		err = -ENOMEM;
		goto err_out;
	}
	s->stats.objects++;
	return o;

err_out:
	sym_log(s, SYM_LOG_DEBUG, "%s: cannot read ELF headers: %s", o->name, strerror(-err));
	object_free(o);
	errno = -err;
	return NULL;
}

struct sym_object *symbolizer__open_memory(struct symbolizer *s, const void *image, size_t size,
					   const char *name)
{
	struct sym_object *o;
	uint32_t sum = 2166136261u; /* FNV-1a */
	Elf *elf;
	size_t i;
	int err;

	if (!image || !size || size > SYM_MAX_FILE_BYTES) {
		errno = EINVAL;
		return NULL;
	}
	o = object_new(s, name);
	if (!o)
		return NULL;
	o->image = malloc(size);
	if (!o->image) {
		err = -ENOMEM;
		goto err_out;
	}
	memcpy(o->image, image, size);
	o->image_size = size;
	elf = elf_memory(o->image, size);
	if (!elf) {
		err = -EINVAL;
		goto err_out;
	}
	err = read_headers(o, elf);
	elf_end(elf);
	if (err)
		goto err_out;
	for (i = 0; i < size; i++)
		sum = (sum ^ ((const uint8_t *)image)[i]) * 16777619u;
	set_key(o, NULL, sum);
	s->stats.objects++;
	return o;

err_out:
	object_free(o);
	errno = -err;
	return NULL;
}

struct sym_object *sym_object__get(struct sym_object *o)
{
	if (o)
		o->refs++;
	return o;
}

void sym_object__put(struct sym_object *o)
{
	if (!o || --o->refs > 0)
		return;
	if (o->fd >= 0)
		tdelete(o, &o->s->objects, cmp_object);
	o->s->stats.objects--;
	object_free(o);
}

const char *sym_object__name(const struct sym_object *o)
{
	return o->name;
}

size_t sym_object__build_id(const struct sym_object *o, const uint8_t **id)
{
	*id = o->build_id_len ? o->build_id : NULL;
	return o->build_id_len;
}

void sym_object__build_id_hex(const struct sym_object *o, char *buf, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	if (!size)
		return;
	for (i = 0; i < o->build_id_len && 2 * i + 2 < size; i++) {
		buf[2 * i] = hex[o->build_id[i] >> 4];
		buf[2 * i + 1] = hex[o->build_id[i] & 15];
	}
	buf[2 * i] = '\0';
}

int sym_object__mapping_vaddr(const struct sym_object *o, uint64_t map_offset, uint64_t *vaddr)
{
	const struct sym_load *best = NULL;
	size_t i;

	/* The kernel maps a segment from its page-rounded file offset (elf_map() in
	 * fs/binfmt_elf.c; ld.so the same): an executable mapping at map_offset is the
	 * executable segment whose first page is there. Linkers that pack segments (lld) put
	 * other segments on that page too, so covering the offset is not enough. */
	for (i = 0; i < o->nr_loads; i++) {
		const struct sym_load *l = &o->loads[i];

		if (l->exec && (l->offset & ~(SYM_PAGE_SIZE - 1)) == map_offset) {
			*vaddr = l->vaddr - (l->offset - map_offset);
			return 0;
		}
		/* A mapping split later (mprotect) starts inside its segment. */
		if (l->exec && l->offset <= map_offset && map_offset - l->offset < l->filesz)
			best = l;
	}
	if (!best)
		return sym_object__vaddr(o, map_offset, vaddr);
	*vaddr = best->vaddr + (map_offset - best->offset);
	return 0;
}

int sym_object__exe_layout(const struct sym_object *o, uint64_t *text_vaddr,
			   uint64_t *build_id_vaddr)
{
	uint64_t text = UINT64_MAX, id = o->build_id_vaddr;
	bool loaded = false;
	size_t i;

	for (i = 0; i < o->nr_loads; i++) {
		const struct sym_load *l = &o->loads[i];

		if (l->exec && l->vaddr < text)
			text = l->vaddr;
		if (id >= l->vaddr && id - l->vaddr < l->filesz &&
		    l->filesz - (id - l->vaddr) >= o->build_id_len)
			loaded = true;
	}
	if (text == UINT64_MAX || !o->build_id_len || !id || !loaded)
		return -ENOENT;
	*text_vaddr = text;
	*build_id_vaddr = id;
	return 0;
}

int sym_object__text_segment(const struct sym_object *o, uint64_t *offset, uint64_t *vaddr,
			     uint64_t *filesz)
{
	const struct sym_load *text = NULL;
	size_t i;

	for (i = 0; i < o->nr_loads; i++)
		if (o->loads[i].exec && (!text || o->loads[i].vaddr < text->vaddr))
			text = &o->loads[i];
	if (!text)
		return -ENOENT;
	*offset = text->offset;
	*vaddr = text->vaddr;
	*filesz = text->filesz;
	return 0;
}

int sym_object__file_stamp(const struct sym_object *o, uint64_t *size, int64_t *mtime_sec,
			   uint32_t *mtime_nsec)
{
	struct stat st;

	if (o->fd < 0)
		return -ENOENT;
	if (fstat(o->fd, &st))
		return -errno;
	*size = (uint64_t)st.st_size;
	*mtime_sec = (int64_t)st.st_mtim.tv_sec;
	*mtime_nsec = (uint32_t)st.st_mtim.tv_nsec;
	return 0;
}

int sym_object__vaddr(const struct sym_object *o, uint64_t file_offset, uint64_t *vaddr)
{
	size_t i;
	int pass;

	/* Bytes present in the file first; a segment's zero-filled tail (.bss) only after. */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < o->nr_loads; i++) {
			const struct sym_load *l = &o->loads[i];
			uint64_t span = pass ? l->memsz : l->filesz;

			if (file_offset >= l->offset && file_offset - l->offset < span) {
				*vaddr = l->vaddr + (file_offset - l->offset);
				return 0;
			}
		}
	}
	return -ENOENT;
}
