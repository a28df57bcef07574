// SPDX-License-Identifier: Apache-2.0
/*
 * The code-object cache (pycode.h). Per process image: serial -> entry, and (address,
 * identity) -> entry, so that serials naming one code object share it. Every byte read from
 * a process is hostile: sizes are bounded before anything is read, strings are decoded
 * within what was read, and the line table is kept as bytes for linetable.c's bounded
 * decoders.
 *
 * CPython's objects, as this file reads them (Include/cpython/unicodeobject.h,
 * Include/cpython/bytesobject.h, Include/cpython/code.h of 3.8-3.13; the offsets come from
 * the caller's struct py_layout):
 *  - every object starts with ob_refcnt, then ob_type at byte 8 (no Py_TRACE_REFS build);
 *  - a str is compact (its characters follow the struct) when state.compact: at
 *    sizeof(PyASCIIObject) for state.ascii (1 byte per character, all < 128), else at
 *    sizeof(PyCompactUnicodeObject), state.kind bytes per character (1 latin-1, 2 UCS-2,
 *    4 UCS-4); length counts characters. Code objects' names and file names are compact:
 *    a legacy (not compact) string is refused;
 *  - a bytes object holds ob_size bytes at ob_sval.
 */
#include <errno.h>
#include <linux/types.h>
#include <stdlib.h>
#include <string.h>

#include "../../bpf/profiler.h"
#include "../../bpf/pyident.bpf.h"
#include "common/hashmap.h"
#include "linetable.h"
#include "pycode.h"
#include "pymem.h"

#define OB_TYPE	      8
#define MAX_STR_CHARS (PYCODE_STR_MAX - 1) /* characters read at most */
#define MAX_CODE_READ 512		   /* bytes of a code object read at most */
#define SERIAL_BYTES  32		   /* a serial's share of the maps, for the budget */

struct image_key {
	uint32_t tgid;
	uint32_t exec_id;
	uint64_t start_time;
};

struct code_entry {
	uint64_t code; /* (code, identity): the key in image.codes */
	uint32_t identity;
	uint32_t refs; /* serials naming it */
	int32_t firstlineno;
	enum linetable_kind kind;
	const char *name, *filename; /* in data[] */
	const uint8_t *table;	     /* in data[], NULL: none kept */
	uint32_t table_len;
	uint64_t bytes; /* what it costs, for the budget */
	struct code_entry *next;
	char data[];
};

struct image {
	struct image_key key;
	struct hashmap serials; /* (void *)serial -> struct code_entry * */
	struct hashmap codes;	/* struct code_entry * -> itself */
	struct code_entry *entries;
	uint64_t bytes;
};

struct pycode_cache {
	uint64_t max_bytes;
	struct hashmap images; /* struct image_key * -> struct image */
	struct pycode_stats st;
};

static uint64_t hash_image(const void *k)
{
	return hash_bytes(k, sizeof(struct image_key), 7);
}

static bool equal_image(const void *a, const void *b)
{
	return !memcmp(a, b, sizeof(struct image_key));
}

static uint64_t hash_serial(const void *k)
{
	return hash_u64((uintptr_t)k);
}

static bool equal_serial(const void *a, const void *b)
{
	return a == b;
}

static uint64_t hash_code(const void *k)
{
	const struct code_entry *e = k;

	return hash_u64(e->code ^ ((uint64_t)e->identity << 32));
}

static bool equal_code(const void *a, const void *b)
{
	const struct code_entry *x = a, *y = b;

	return x->code == y->code && x->identity == y->identity;
}

struct pycode_cache *pycode_cache__new(uint64_t max_bytes)
{
	struct pycode_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->max_bytes = max_bytes;
	hashmap__init(&c->images, hash_image, equal_image);
	return c;
}

static void image_free(struct pycode_cache *c, struct image *img)
{
	struct code_entry *e, *next;

	for (e = img->entries; e; e = next) {
		next = e->next;
		c->st.held--;
		free(e);
	}
	c->st.serials -= hashmap__size(&img->serials);
	c->st.bytes -= img->bytes;
	hashmap__fini(&img->serials);
	hashmap__fini(&img->codes);
	free(img);
}

void pycode_cache__free(struct pycode_cache *c)
{
	struct hashmap_entry *e;

	if (!c)
		return;
	hashmap__for_each(&c->images, e)
		image_free(c, e->value);
	hashmap__fini(&c->images);
	free(c);
}

static struct image *find_image(const struct pycode_cache *c, uint32_t tgid, uint64_t start_time,
				uint32_t exec_id)
{
	struct image_key k = { .tgid = tgid, .exec_id = exec_id, .start_time = start_time };

	return hashmap__find(&c->images, &k);
}

static struct image *get_image(struct pycode_cache *c, uint32_t tgid, uint64_t start_time,
			       uint32_t exec_id)
{
	struct image *img = find_image(c, tgid, start_time, exec_id);

	if (img)
		return img;
	img = calloc(1, sizeof(*img));
	if (!img)
		return NULL;
	img->key = (struct image_key){ .tgid = tgid, .exec_id = exec_id, .start_time = start_time };
	hashmap__init(&img->serials, hash_serial, equal_serial);
	hashmap__init(&img->codes, hash_code, equal_code);
	img->bytes = sizeof(*img);
	if (hashmap__insert(&c->images, &img->key, img)) {
		free(img);
		return NULL;
	}
	c->st.bytes += img->bytes;
	return img;
}

static uint64_t get_u64(const uint8_t *buf, uint16_t off)
{
	uint64_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

static uint32_t get_u32(const uint8_t *buf, uint16_t off)
{
	uint32_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

/* UTF-8 of code point cp at out[*o], if it fits before cap - 1; false when it does not. */
static bool put_utf8(char *out, size_t cap, size_t *o, uint32_t cp)
{
	size_t n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
	char *p = out + *o;

	if (*o + n > cap - 1)
		return false;
	switch (n) {
	case 1:
		p[0] = (char)cp;
		break;
	case 2:
		p[0] = (char)(0xc0 | cp >> 6);
		p[1] = (char)(0x80 | (cp & 0x3f));
		break;
	case 3:
		p[0] = (char)(0xe0 | cp >> 12);
		p[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		p[2] = (char)(0x80 | (cp & 0x3f));
		break;
	default:
		p[0] = (char)(0xf0 | cp >> 18);
		p[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		p[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		p[3] = (char)(0x80 | (cp & 0x3f));
		break;
	}
	*o += n;
	return true;
}

/* Whether an object's reference count (its first word) is one a live object has: pymalloc
 * keeps its free list in that word of a freed block (a pointer, or 0 for the last). */
static bool live_refcnt(uint64_t refcnt)
{
	return refcnt >= 1 && refcnt < (1ULL << 32);
}

/* What read_str() saw of a str, for the walker's identity (bpf/pyident.bpf.h). */
struct str_seen {
	uint64_t len;			  /* length, in characters */
	bool ascii;			  /* compact ASCII: raw holds its first characters */
	uint8_t raw[IGNIS_PY_NAME_BYTES]; /* as the walker hashes them */
};

/*
 * The str object at addr as UTF-8 in out (cap bytes, NUL-terminated, cut at a character when
 * longer), its header and characters each read once; *seen (may be NULL) gets what the
 * identity needs from the same bytes. Returns its length in bytes, or -EINVAL (not a live
 * compact str of a known kind), or a read error.
 */
static int read_str(pid_t pid, const struct py_layout *l, uint64_t addr, char *out, size_t cap,
		    struct str_seen *seen)
{
	uint8_t hdr[128], chars[4 * MAX_STR_CHARS];
	uint32_t state, kind, cp;
	uint64_t len, data;
	size_t i, n, o = 0;
	int err;

	if (l->unicode_compact_data > sizeof(hdr) || l->unicode_length + 8U > sizeof(hdr) ||
	    l->unicode_state + 4U > sizeof(hdr) || l->unicode_ascii_data > l->unicode_compact_data)
		return -EINVAL;
	err = pymem_read(pid, addr, hdr, l->unicode_compact_data);
	if (err)
		return err;
	len = get_u64(hdr, l->unicode_length);
	state = get_u32(hdr, l->unicode_state);
	kind = PY_UNICODE_KIND(state);
	if (!live_refcnt(get_u64(hdr, 0)) || len > (1ULL << 40) || !PY_UNICODE_COMPACT(state) ||
	    (PY_UNICODE_ASCII(state) && kind != 1) || (kind != 1 && kind != 2 && kind != 4))
		return -EINVAL;
	data = addr + (PY_UNICODE_ASCII(state) ? l->unicode_ascii_data : l->unicode_compact_data);
	n = len < MAX_STR_CHARS ? (size_t)len : MAX_STR_CHARS;
	err = pymem_read(pid, data, chars, n * kind);
	if (err)
		return err;
	if (seen) {
		seen->len = len;
		seen->ascii = PY_UNICODE_ASCII(state);
		memset(seen->raw, 0, sizeof(seen->raw));
		if (seen->ascii)
			memcpy(seen->raw, chars, n < sizeof(seen->raw) ? n : sizeof(seen->raw));
	}
	for (i = 0; i < n; i++) {
		if (kind == 1) {
			cp = chars[i];
			if (PY_UNICODE_ASCII(state) && cp >= 0x80)
				cp = 0xfffd;
		} else if (kind == 2) {
			cp = chars[2 * i] | (uint32_t)chars[2 * i + 1] << 8;
		} else {
			memcpy(&cp, chars + 4 * i, 4);
		}
		if (!cp || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			cp = 0xfffd;
		if (!put_utf8(out, cap, &o, cp))
			break;
	}
	out[o] = '\0';
	return (int)o;
}

static bool layout_ok(const struct py_layout *l)
{
	uint16_t fields[] = { l->code_filename, l->code_name, l->code_firstlineno,
			      l->code_linetable };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(fields); i++)
		if (fields[i] == PY_FIELD_NONE || fields[i] + 8 > MAX_CODE_READ)
			return false;
	return (l->code_qualname == PY_FIELD_NONE || l->code_qualname + 8 <= MAX_CODE_READ) &&
	       l->bytes_size + 8 <= 64 && l->bytes_data <= 64;
}

/* The highest byte of the code object the layout names, + 1. */
static size_t code_read_len(const struct py_layout *l)
{
	uint16_t fields[] = { l->code_filename, l->code_name, l->code_qualname, l->code_firstlineno,
			      l->code_linetable };
	size_t i, end = OB_TYPE + 8;

	for (i = 0; i < ARRAY_SIZE(fields); i++)
		if (fields[i] != PY_FIELD_NONE && fields[i] + 8U > end)
			end = fields[i] + 8U;
	return end;
}

/* Name a serial: the entry takes one more reference. */
static int bind_serial(struct pycode_cache *c, struct image *img, uint64_t serial,
		       struct code_entry *e)
{
	struct code_entry *old = hashmap__delete(&img->serials, (void *)(uintptr_t)serial);
	int err;

	if (old) {
		old->refs--;
		c->st.serials--;
		c->st.bytes -= SERIAL_BYTES;
		img->bytes -= SERIAL_BYTES;
	}
	err = hashmap__insert(&img->serials, (void *)(uintptr_t)serial, e);
	if (err)
		return err;
	e->refs++;
	c->st.serials++;
	c->st.bytes += SERIAL_BYTES;
	img->bytes += SERIAL_BYTES;
	return 0;
}

/* Read the code object and make its entry (not yet in any map). */
static int read_code(struct pycode_cache *c, pid_t pid, const struct py_layout *l,
		     enum linetable_kind kind, uint64_t code_type, uint64_t code, uint32_t identity,
		     struct code_entry **out)
{
	char name[PYCODE_STR_MAX], filename[PYCODE_STR_MAX];
	uint8_t buf[MAX_CODE_READ], again[MAX_CODE_READ], bytes_hdr[64];
	struct str_seen seen;
	uint64_t name_obj, table_obj, table_size = 0;
	int32_t firstlineno;
	int name_len, file_len, err;
	struct code_entry *e;
	bool keep_table;

	err = pymem_read(pid, code, buf, code_read_len(l));
	if (err)
		return err;
	if (get_u64(buf, OB_TYPE) != code_type || !live_refcnt(get_u64(buf, 0)))
		return -EINVAL;
	name_obj =
		get_u64(buf, l->code_qualname != PY_FIELD_NONE ? l->code_qualname : l->code_name);
	firstlineno = (int32_t)get_u32(buf, l->code_firstlineno);
	/* The identity from the very bytes the name is made of: checked first and read again,
	 * a freed object's stale bytes could pass the check and its reused memory be the name. */
	name_len = read_str(pid, l, name_obj, name, sizeof(name), &seen);
	if (name_len < 0)
		return name_len;
	if (ignis_py_identity(seen.raw, seen.len, seen.ascii, firstlineno) != identity)
		return -ESTALE;
	file_len =
		read_str(pid, l, get_u64(buf, l->code_filename), filename, sizeof(filename), NULL);
	if (file_len < 0)
		return file_len;
	table_obj = get_u64(buf, l->code_linetable);
	err = pymem_read(pid, table_obj, bytes_hdr, l->bytes_size + 8U);
	if (err)
		return err;
	table_size = get_u64(bytes_hdr, l->bytes_size);
	if ((int64_t)table_size < 0)
		return -EINVAL;
	keep_table = table_size <= PYCODE_TABLE_MAX;
	if (!keep_table) {
		c->st.no_lines++;
		table_size = 0;
	}
	e = calloc(1, sizeof(*e) + (size_t)name_len + 1 + (size_t)file_len + 1 + table_size);
	if (!e)
		return -ENOMEM;
	e->code = code;
	e->identity = identity;
	e->firstlineno = firstlineno;
	e->kind = kind;
	memcpy(e->data, name, (size_t)name_len + 1);
	memcpy(e->data + name_len + 1, filename, (size_t)file_len + 1);
	e->name = e->data;
	e->filename = e->data + name_len + 1;
	if (keep_table) {
		uint8_t *t = (uint8_t *)e->data + name_len + 1 + file_len + 1;

		err = pymem_read(pid, table_obj + l->bytes_data, t, (size_t)table_size);
		if (err) {
			free(e);
			return err;
		}
		e->table = t;
		e->table_len = (uint32_t)table_size;
	}
	/* Still the same object: one freed while we read (the process runs on) is not named
	 * from what its memory held meanwhile. */
	err = pymem_read(pid, code, again, code_read_len(l));
	if (err || memcmp(buf, again, code_read_len(l))) {
		free(e);
		return err ? err : -ESTALE;
	}
	e->bytes = sizeof(*e) + (uint64_t)name_len + (uint64_t)file_len + 2 + table_size;
	*out = e;
	return 0;
}

/* An entry from what the walker saw: names, first line, no line table. */
static struct code_entry *seen_entry(const struct pycode_seen *seen, enum linetable_kind kind,
				     uint64_t code, uint32_t identity)
{
	size_t name_len = strnlen(seen->name, MAX_STR_CHARS);
	size_t file_len = strnlen(seen->filename, MAX_STR_CHARS);
	struct code_entry *e = calloc(1, sizeof(*e) + name_len + 1 + file_len + 1);

	if (!e)
		return NULL;
	e->code = code;
	e->identity = identity;
	e->firstlineno = seen->firstlineno;
	e->kind = kind;
	memcpy(e->data, seen->name, name_len);
	memcpy(e->data + name_len + 1, seen->filename, file_len);
	e->name = e->data;
	e->filename = e->data + name_len + 1;
	e->bytes = sizeof(*e) + name_len + file_len + 2;
	return e;
}

int pycode_cache__add(struct pycode_cache *c, pid_t pid, uint32_t tgid, uint64_t start_time,
		      uint32_t exec_id, const struct py_layout *layout, uint32_t version_hex,
		      uint64_t code_type, uint64_t serial, uint64_t code, uint32_t identity,
		      const struct pycode_seen *seen)
{
	struct code_entry probe = { .code = code, .identity = identity }, *e;
	enum linetable_kind kind;
	struct image *img;
	int err;

	if (!c || !layout || !serial || !code || !layout_ok(layout))
		return -EINVAL;
	err = linetable_kind_for(version_hex >> 24, (version_hex >> 16) & 0xff, &kind);
	if (err)
		return err;
	img = get_image(c, tgid, start_time, exec_id);
	if (!img)
		return -ENOMEM;
	e = hashmap__find(&img->codes, &probe);
	if (e) {
		err = bind_serial(c, img, serial, e);
		if (!err)
			c->st.shared++;
		return err;
	}
	if (c->st.bytes + sizeof(*e) + SERIAL_BYTES > c->max_bytes) {
		c->st.over_budget++;
		return -ENOSPC;
	}
	err = read_code(c, pid, layout, kind, code_type, code, identity, &e);
	if (err == -ESTALE)
		c->st.stale++;
	else if (err == -EINVAL)
		c->st.malformed++;
	else if (err && err != -ENOMEM)
		c->st.faults++;
	if (err && err != -ENOMEM && seen && seen->name && seen->name[0] && seen->filename) {
		/* Too late to read it as the walker saw it: the walker's copies name it. */
		e = seen_entry(seen, kind, code, identity);
		if (!e)
			return -ENOMEM;
		c->st.from_walker++;
		err = 0;
	} else if (err) {
		return err;
	} else {
		c->st.read++;
	}
	if (c->st.bytes + e->bytes + SERIAL_BYTES > c->max_bytes) {
		free(e);
		c->st.over_budget++;
		return -ENOSPC;
	}
	err = hashmap__insert(&img->codes, e, e);
	if (err) {
		free(e);
		return err;
	}
	err = bind_serial(c, img, serial, e);
	if (err) {
		hashmap__delete(&img->codes, e);
		free(e);
		return err;
	}
	e->next = img->entries;
	img->entries = e;
	img->bytes += e->bytes;
	c->st.bytes += e->bytes;
	c->st.held++;
	return 0;
}

bool pycode_cache__frame(struct pycode_cache *c, uint32_t tgid, uint64_t start_time,
			 uint32_t exec_id, uint64_t serial, uint32_t lasti,
			 struct pycode_frame *out)
{
	struct image *img = c ? find_image(c, tgid, start_time, exec_id) : NULL;
	struct code_entry *e;
	int32_t line;

	if (!img || !serial)
		return false;
	e = hashmap__find(&img->serials, (void *)(uintptr_t)serial);
	if (!e)
		return false;
	out->name = e->name;
	out->filename = e->filename;
	out->firstlineno = e->firstlineno;
	out->line = 0;
	if (e->table && lasti != IGNIS_PY_LASTI_NONE &&
	    !linetable_line(e->kind, e->table, e->table_len, e->firstlineno, lasti, &line) &&
	    line > 0)
		out->line = line;
	return true;
}

void pycode_cache__forget(struct pycode_cache *c, uint32_t tgid, uint64_t start_time,
			  uint32_t exec_id)
{
	struct image *img = c ? find_image(c, tgid, start_time, exec_id) : NULL;

	if (!img)
		return;
	hashmap__delete(&c->images, &img->key);
	image_free(c, img);
}

void pycode_cache__stats(const struct pycode_cache *c, struct pycode_stats *stats)
{
	*stats = c->st;
}
