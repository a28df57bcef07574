// SPDX-License-Identifier: Apache-2.0
/*
 * Resolved addresses of one symbol table: (address -> frames), so that DWARF, whose lookups
 * walk a compilation unit's DIE tree, is asked about each address once while its table is
 * cached. Strings are interned in an arena of chunks that never move, so the frames handed
 * out stay valid for the cache's lifetime.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer_internal.h"

#define CHUNK_BYTES (64 * 1024)

struct chunk {
	struct chunk *next;
	size_t used, size;
	char data[];
};

struct slot {
	uint64_t vaddr;
	uint32_t first; /* index in frames */
	uint16_t nr;	/* frames of the address; 0: DWARF has none */
	uint16_t used;
};

struct addr_cache {
	struct slot *slots;
	size_t nr_slots, nr_used; /* nr_slots: a power of two */
	struct sym_frame *frames;
	size_t nr_frames, cap_frames;
	const char **strings; /* interned strings, open addressing by content */
	size_t nr_strings_slots, nr_strings;
	struct chunk *chunks;
	size_t bytes;
};

static uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ULL;
	return h;
}

struct addr_cache *addr_cache__new(void)
{
	struct addr_cache *c = calloc(1, sizeof(*c));

	if (c)
		c->bytes = sizeof(*c);
	return c;
}

void addr_cache__free(struct addr_cache *c)
{
	struct chunk *k, *next;

	if (!c)
		return;
	for (k = c->chunks; k; k = next) {
		next = k->next;
		free(k);
	}
	free(c->slots);
	free(c->frames);
	free(c->strings);
	free(c);
}

size_t addr_cache__bytes(const struct addr_cache *c)
{
	return c ? c->bytes : 0;
}

static struct slot *find_slot(const struct addr_cache *c, uint64_t vaddr)
{
	size_t mask = c->nr_slots - 1, i = hash64(vaddr) & mask;

	while (c->slots[i].used && c->slots[i].vaddr != vaddr)
		i = (i + 1) & mask;
	return &c->slots[i];
}

int addr_cache__get(const struct addr_cache *c, uint64_t vaddr, struct sym_frame *frames, int max)
{
	const struct slot *sl;
	int n;

	if (!c->nr_slots)
		return -ENOENT;
	sl = find_slot(c, vaddr);
	if (!sl->used)
		return -ENOENT;
	n = sl->nr < max ? sl->nr : max;
	if (n > 0)
		memcpy(frames, c->frames + sl->first, (size_t)n * sizeof(*frames));
	return n;
}

static int grow_slots(struct addr_cache *c)
{
	size_t n = c->nr_slots ? c->nr_slots * 2 : 256, i;
	struct slot *old = c->slots, *sl;
	size_t old_n = c->nr_slots;

	c->slots = calloc(n, sizeof(*c->slots));
	if (!c->slots) {
		c->slots = old;
		return -ENOMEM;
	}
	c->nr_slots = n;
	for (i = 0; i < old_n; i++) {
		if (!old[i].used)
			continue;
		sl = find_slot(c, old[i].vaddr);
		*sl = old[i];
	}
	free(old);
	c->bytes += (n - old_n) * sizeof(*c->slots);
	return 0;
}

static int grow_strings(struct addr_cache *c)
{
	size_t n = c->nr_strings_slots ? c->nr_strings_slots * 2 : 256, i, j, mask = n - 1;
	const char **old = c->strings;
	size_t old_n = c->nr_strings_slots;

	c->strings = calloc(n, sizeof(*c->strings));
	if (!c->strings) {
		c->strings = old;
		return -ENOMEM;
	}
	for (i = 0; i < old_n; i++) {
		if (!old[i])
			continue;
		for (j = hash_str(old[i]) & mask; c->strings[j]; j = (j + 1) & mask)
			;
		c->strings[j] = old[i];
	}
	c->nr_strings_slots = n;
	free(old);
	c->bytes += (n - old_n) * sizeof(*c->strings);
	return 0;
}

/* The cache's copy of s (NULL stays NULL), or NULL with *err set. */
static const char *intern(struct addr_cache *c, const char *s, int *err)
{
	size_t len, mask, i;
	struct chunk *k;
	char *copy;

	if (!s)
		return NULL;
	if ((c->nr_strings + 1) * 10 > c->nr_strings_slots * 7 && grow_strings(c)) {
		*err = -ENOMEM;
		return NULL;
	}
	mask = c->nr_strings_slots - 1;
	for (i = hash_str(s) & mask; c->strings[i]; i = (i + 1) & mask)
		if (!strcmp(c->strings[i], s))
			return c->strings[i];
	len = strnlen(s, SYM_MAX_NAME - 1) + 1;
	k = c->chunks;
	if (!k || k->size - k->used < len) {
		size_t size = len > CHUNK_BYTES ? len : CHUNK_BYTES;

		k = malloc(sizeof(*k) + size);
		if (!k) {
			*err = -ENOMEM;
			return NULL;
		}
		k->size = size;
		k->used = 0;
		k->next = c->chunks;
		c->chunks = k;
		c->bytes += sizeof(*k) + size;
	}
	copy = k->data + k->used;
	memcpy(copy, s, len - 1);
	copy[len - 1] = '\0';
	k->used += len;
	c->strings[i] = copy;
	c->nr_strings++;
	return copy;
}

int addr_cache__put(struct addr_cache *c, uint64_t vaddr, const struct sym_frame *frames, int n)
{
	struct slot *sl;
	size_t i;
	int err = 0;

	if (n < 0 || n > UINT16_MAX)
		return -EINVAL;
	if ((c->nr_used + 1) * 10 > c->nr_slots * 7 && grow_slots(c))
		return -ENOMEM;
	if (c->nr_frames + (size_t)n > UINT32_MAX)
		return -ENOMEM;
	if (sym_grow((void **)&c->frames, &c->cap_frames, c->nr_frames + (size_t)n,
		     sizeof(*c->frames)))
		return -ENOMEM;
	for (i = 0; i < (size_t)n; i++) {
		struct sym_frame *f = &c->frames[c->nr_frames + i];

		*f = frames[i];
		f->name = intern(c, frames[i].name, &err);
		f->system_name = intern(c, frames[i].system_name, &err);
		f->file = intern(c, frames[i].file, &err);
		if (err)
			return err;
	}
	sl = find_slot(c, vaddr);
	if (!sl->used)
		c->nr_used++;
	sl->vaddr = vaddr;
	sl->first = (uint32_t)c->nr_frames;
	sl->nr = (uint16_t)n;
	sl->used = 1;
	c->nr_frames += (size_t)n;
	c->bytes += (size_t)n * sizeof(*c->frames);
	return 0;
}
