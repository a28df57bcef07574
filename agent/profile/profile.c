// SPDX-License-Identifier: Apache-2.0
/*
 * The profile builder. Keys of the dedup indexes live in an arena of fixed blocks, so that
 * they never move while the tables (plain arrays, read by the encoder) grow; the whole
 * arena goes at once with the profile.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

#define DEFAULT_MAX_STRINGS   (1U << 20)
#define DEFAULT_MAX_LOCATIONS (1U << 20)
#define DEFAULT_MAX_SAMPLES   (1U << 20)
#define ARENA_BLOCK	      (64U << 10)

struct arena_block {
	struct arena_block *next;
	size_t used;
	size_t size;
	char data[];
};

/* The arena hangs off the profile through this wrapper, invisible to readers of profile.h. */
struct profile_impl {
	struct profile pub;
	struct arena_block *arena;
};

struct function_key {
	int64_t name, system_name, filename, start_line;
};

/* A location without a mapping (a placeholder, an interpreter's frame) has no address that
 * means anything alone: its first Line (function, line) is part of its identity. */
struct location_key {
	uint64_t mapping_id, address, tag;
	uint64_t function_id;
	int64_t line;
};

struct blob_key {
	size_t len;
	unsigned char data[];
};

static void *arena_alloc(struct profile *p, size_t size)
{
	struct profile_impl *impl = (struct profile_impl *)p;
	struct arena_block *b = impl->arena;
	void *ptr;

	size = (size + 7) & ~(size_t)7;
	if (!b || b->size - b->used < size) {
		size_t block = size > ARENA_BLOCK ? size : ARENA_BLOCK;

		b = malloc(sizeof(*b) + block);
		if (!b)
			return NULL;
		b->next = impl->arena;
		b->used = 0;
		b->size = block;
		impl->arena = b;
	}
	ptr = b->data + b->used;
	b->used += size;
	return ptr;
}

static uint64_t hash_string_key(const void *k)
{
	return hash_str(k);
}

static bool equal_string_key(const void *a, const void *b)
{
	return !strcmp(a, b);
}

static uint64_t hash_blob_key(const void *k)
{
	const struct blob_key *b = k;

	return hash_bytes(b->data, b->len, 0);
}

static bool equal_blob_key(const void *a, const void *b)
{
	const struct blob_key *x = a, *y = b;

	return x->len == y->len && !memcmp(x->data, y->data, x->len);
}

static uint64_t hash_function_key(const void *k)
{
	return hash_bytes(k, sizeof(struct function_key), 1);
}

static bool equal_function_key(const void *a, const void *b)
{
	return !memcmp(a, b, sizeof(struct function_key));
}

static uint64_t hash_location_key(const void *k)
{
	return hash_bytes(k, sizeof(struct location_key), 2);
}

static bool equal_location_key(const void *a, const void *b)
{
	return !memcmp(a, b, sizeof(struct location_key));
}

static uint64_t hash_sample_key(const void *k)
{
	return ((const struct profile_sample *)k)->hash;
}

static bool equal_sample_key(const void *a, const void *b)
{
	const struct profile_sample *x = a, *y = b;

	return x->hash == y->hash && x->group == y->group && x->nr_locations == y->nr_locations &&
	       x->nr_labels == y->nr_labels &&
	       (!x->nr_locations ||
		!memcmp(x->locations, y->locations, x->nr_locations * sizeof(x->locations[0]))) &&
	       (!x->nr_labels ||
		!memcmp(x->labels, y->labels, x->nr_labels * sizeof(x->labels[0])));
}

struct profile *profile__new(const struct profile_opts *opts)
{
	struct profile_impl *impl = calloc(1, sizeof(*impl));
	struct profile *p;

	if (!impl)
		return NULL;
	p = &impl->pub;
	p->opts = *opts;
	if (!p->opts.max_strings)
		p->opts.max_strings = DEFAULT_MAX_STRINGS;
	if (!p->opts.max_locations)
		p->opts.max_locations = DEFAULT_MAX_LOCATIONS;
	if (!p->opts.max_samples)
		p->opts.max_samples = DEFAULT_MAX_SAMPLES;
	hashmap__init(&p->string_index, hash_string_key, equal_string_key);
	hashmap__init(&p->mapping_index, hash_blob_key, equal_blob_key);
	hashmap__init(&p->function_index, hash_function_key, equal_function_key);
	hashmap__init(&p->location_index, hash_location_key, equal_location_key);
	hashmap__init(&p->sample_index, hash_sample_key, equal_sample_key);
	if (profile__string(p, "") != 0 || (p->str_samples = profile__string(p, "samples")) < 0 ||
	    (p->str_count = profile__string(p, "count")) < 0 ||
	    (p->str_cpu = profile__string(p, "cpu")) < 0 ||
	    (p->str_nanoseconds = profile__string(p, "nanoseconds")) < 0 ||
	    (p->opts.types != PROFILE_CPU && ((p->str_offcpu = profile__string(p, "offcpu")) < 0 ||
					      (p->str_wall = profile__string(p, "wall")) < 0))) {
		profile__free(p);
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

void profile__free(struct profile *p)
{
	struct profile_impl *impl = (struct profile_impl *)p;
	struct arena_block *b, *next;

	if (!p)
		return;
	hashmap__fini(&p->string_index);
	hashmap__fini(&p->mapping_index);
	hashmap__fini(&p->function_index);
	hashmap__fini(&p->location_index);
	hashmap__fini(&p->sample_index);
	free(p->strings);
	free(p->mappings);
	free(p->functions);
	free(p->locations);
	free(p->lines);
	free(p->samples);
	free(p->comments);
	for (b = impl->arena; b; b = next) {
		next = b->next;
		free(b);
	}
	free(impl);
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid (RFC 3629). */
static size_t utf8_seq(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t n, i;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates, beyond U+10FFFF. */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

char *utf8_sanitize(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len = strlen(s), i, o = 0, n;
	char *out;

	/* Each invalid byte becomes 3 bytes at most. */
	if (len > (SIZE_MAX - 1) / 3)
		return NULL;
	out = malloc(len * 3 + 1);
	if (!out)
		return NULL;
	for (i = 0; i < len; i += n) {
		n = utf8_seq(u + i);
		if (n) {
			memcpy(out + o, s + i, n);
			o += n;
		} else {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			n = 1;
		}
	}
	out[o] = '\0';
	return out;
}

static bool is_utf8(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n;

	while (*u) {
		n = utf8_seq(u);
		if (!n)
			return false;
		u += n;
	}
	return true;
}

static size_t at_most(size_t n, size_t cap)
{
	return n < cap ? n : cap;
}

int profile__reserve(struct profile *p, size_t strings, size_t functions, size_t locations,
		     size_t samples)
{
	int err;

	strings = at_most(strings, p->opts.max_strings);
	functions = at_most(functions, p->opts.max_locations);
	locations = at_most(locations, p->opts.max_locations);
	samples = at_most(samples, p->opts.max_samples);
	err = hashmap__reserve(&p->string_index, strings);
	if (!err)
		err = grow_array((void **)&p->strings, &p->cap_strings, strings,
				 sizeof(*p->strings));
	if (!err)
		err = hashmap__reserve(&p->function_index, functions);
	if (!err)
		err = grow_array((void **)&p->functions, &p->cap_functions, functions,
				 sizeof(*p->functions));
	if (!err)
		err = hashmap__reserve(&p->location_index, locations);
	if (!err)
		err = grow_array((void **)&p->locations, &p->cap_locations, locations,
				 sizeof(*p->locations));
	if (!err)
		err = hashmap__reserve(&p->sample_index, samples);
	if (!err)
		err = grow_array((void **)&p->samples, &p->cap_samples, samples,
				 sizeof(*p->samples));
	return err;
}

int64_t profile__string(struct profile *p, const char *s)
{
	char *fixed = NULL, *copy;
	uintptr_t found;
	size_t len;
	int err;

	if (!s)
		s = "";
	/* Stored strings are valid UTF-8, so a hit needs no check; only new ones are checked. */
	found = (uintptr_t)hashmap__find(&p->string_index, s);
	if (!found && !is_utf8(s)) {
		fixed = utf8_sanitize(s);
		if (!fixed)
			return -ENOMEM;
		s = fixed;
		found = (uintptr_t)hashmap__find(&p->string_index, s);
	}
	if (found) {
		free(fixed);
		return (int64_t)found - 1;
	}
	if (p->nr_strings >= p->opts.max_strings) {
		free(fixed);
		return -E2BIG;
	}
	err = grow_array((void **)&p->strings, &p->cap_strings, p->nr_strings + 1,
			 sizeof(*p->strings));
	len = strlen(s);
	copy = err ? NULL : arena_alloc(p, len + 1);
	if (!copy) {
		free(fixed);
		return -ENOMEM;
	}
	memcpy(copy, s, len + 1);
	free(fixed);
	err = hashmap__add(&p->string_index, copy, (void *)(uintptr_t)(p->nr_strings + 1));
	if (err)
		return err;
	p->strings[p->nr_strings] = copy;
	return (int64_t)p->nr_strings++;
}

int64_t profile__mapping(struct profile *p, const void *key, size_t key_len,
			 const struct profile_mapping *m)
{
	union {
		struct blob_key k;
		unsigned char bytes[sizeof(struct blob_key) + 256];
	} probe;
	struct blob_key *k;
	uintptr_t found;
	int err;

	if (key_len > sizeof(probe.bytes) - sizeof(struct blob_key))
		return -E2BIG;
	probe.k.len = key_len;
	memcpy(probe.k.data, key, key_len);
	found = (uintptr_t)hashmap__find(&p->mapping_index, &probe.k);
	if (found)
		return (int64_t)found;
	err = grow_array((void **)&p->mappings, &p->cap_mappings, p->nr_mappings + 1,
			 sizeof(*p->mappings));
	k = err ? NULL : arena_alloc(p, sizeof(*k) + key_len);
	if (!k)
		return -ENOMEM;
	memcpy(k, &probe.k, sizeof(*k) + key_len);
	err = hashmap__insert(&p->mapping_index, k, (void *)(uintptr_t)(p->nr_mappings + 1));
	if (err)
		return err;
	p->mappings[p->nr_mappings] = *m;
	p->mappings[p->nr_mappings].id = p->nr_mappings + 1;
	p->mappings[p->nr_mappings].nr_unnamed = 0;
	p->mappings[p->nr_mappings].key = k->data;
	p->mappings[p->nr_mappings].key_len = key_len;
	return (int64_t)++p->nr_mappings;
}

int64_t profile__function(struct profile *p, const char *name, const char *system_name,
			  const char *filename, int64_t start_line)
{
	struct function_key key, *k;
	uintptr_t found;
	int64_t idx;
	int err;

	memset(&key, 0, sizeof(key));
	if ((idx = profile__string(p, name)) < 0)
		return idx;
	key.name = idx;
	if ((idx = profile__string(p, system_name ? system_name : name)) < 0)
		return idx;
	key.system_name = idx;
	if ((idx = profile__string(p, filename)) < 0)
		return idx;
	key.filename = idx;
	key.start_line = start_line;

	found = (uintptr_t)hashmap__find(&p->function_index, &key);
	if (found)
		return (int64_t)found;
	if (p->nr_functions >= p->opts.max_locations)
		return -E2BIG;
	err = grow_array((void **)&p->functions, &p->cap_functions, p->nr_functions + 1,
			 sizeof(*p->functions));
	k = err ? NULL : arena_alloc(p, sizeof(*k));
	if (!k)
		return -ENOMEM;
	*k = key;
	err = hashmap__add(&p->function_index, k, (void *)(uintptr_t)(p->nr_functions + 1));
	if (err)
		return err;
	p->functions[p->nr_functions] = (struct profile_function){
		.id = p->nr_functions + 1,
		.name = key.name,
		.system_name = key.system_name,
		.filename = key.filename,
		.start_line = start_line,
	};
	return (int64_t)++p->nr_functions;
}

uint64_t profile__find_location(const struct profile *p, uint64_t mapping_id, uint64_t address,
				uint64_t tag)
{
	struct location_key key = { mapping_id, address, tag, 0, 0 };

	return (uintptr_t)hashmap__find(&p->location_index, &key);
}

static void location_key_of(struct location_key *k, uint64_t mapping_id, uint64_t address,
			    uint64_t tag, const struct profile_line *lines, uint32_t nr_lines)
{
	*k = (struct location_key){ mapping_id, address, tag, 0, 0 };
	if (!mapping_id && nr_lines) {
		k->function_id = lines[0].function_id;
		k->line = lines[0].line;
	}
}

/* What DWARF gave a mapping's locations: inline frames, line numbers, file names. */
static void note_resolution(struct profile *p, struct profile_mapping *m,
			    const struct profile_line *lines, uint32_t nr_lines)
{
	uint32_t i;

	if (nr_lines > 1)
		m->has_inline_frames = true;
	for (i = 0; i < nr_lines; i++) {
		const struct profile_function *f = profile__function_by_id(p, lines[i].function_id);

		if (lines[i].line)
			m->has_line_numbers = true;
		if (f && f->filename > 0 && profile__str(p, f->filename)[0])
			m->has_filenames = true;
	}
}

int64_t profile__add_location(struct profile *p, uint64_t mapping_id, uint64_t address,
			      uint64_t tag, const struct profile_line *lines, uint32_t nr_lines)
{
	struct location_key key, *k;
	struct profile_location *loc;
	uint64_t found;
	int err;

	location_key_of(&key, mapping_id, address, tag, lines, nr_lines);
	found = (uintptr_t)hashmap__find(&p->location_index, &key);
	if (found)
		return (int64_t)found;
	if (p->nr_locations >= p->opts.max_locations)
		return -E2BIG;
	if (mapping_id > p->nr_mappings)
		return -EINVAL;
	err = grow_array((void **)&p->locations, &p->cap_locations, p->nr_locations + 1,
			 sizeof(*p->locations));
	if (!err)
		err = grow_array((void **)&p->lines, &p->cap_lines, p->nr_lines + nr_lines,
				 sizeof(*p->lines));
	k = err ? NULL : arena_alloc(p, sizeof(*k));
	if (!k)
		return -ENOMEM;
	*k = key;
	err = hashmap__add(&p->location_index, k, (void *)(uintptr_t)(p->nr_locations + 1));
	if (err)
		return err;
	loc = &p->locations[p->nr_locations];
	loc->id = p->nr_locations + 1;
	loc->mapping_id = mapping_id;
	loc->address = address;
	loc->tag = tag;
	loc->nr_lines = nr_lines;
	loc->first_line = (uint32_t)p->nr_lines;
	if (nr_lines)
		memcpy(p->lines + p->nr_lines, lines, nr_lines * sizeof(*lines));
	p->nr_lines += nr_lines;
	if (!nr_lines && mapping_id)
		p->mappings[mapping_id - 1].nr_unnamed++;
	if (nr_lines && mapping_id)
		note_resolution(p, &p->mappings[mapping_id - 1], lines, nr_lines);
	return (int64_t)++p->nr_locations;
}

const char *location_tag_name(enum location_tag tag)
{
	static const char *const names[TAG_MAX] = {
		[TAG_TRUNCATED] = "[truncated]",
		[TAG_UNKNOWN] = "[unknown]",
		[TAG_OTHER] = "[other stacks]",
		[TAG_PYTHON_UNNAMED] = "[unnamed Python frame]",
		[TAG_OFFCPU_CAPPED] = "[off-CPU samples over the rate cap]",
		[TAG_OFFCPU_EXITED] = "[short off-CPU waits before exit]",
	};

	return tag > TAG_NONE && tag < TAG_MAX ? names[tag] : "";
}

int profile__add_group_values(struct profile *p, uint32_t group, const uint64_t *locations,
			      uint32_t nr_locations, const struct profile_label *labels,
			      uint32_t nr_labels, uint64_t count, uint64_t offcpu_ns)
{
	struct profile_sample probe = {
		.nr_locations = nr_locations,
		.nr_labels = nr_labels,
		.group = group,
		.locations = (uint64_t *)locations,
		.labels = (struct profile_label *)labels,
	}, *s, *k;
	uintptr_t found;
	int err;

	probe.hash = hash_bytes(locations, nr_locations * sizeof(*locations), nr_labels) ^
		     hash_bytes(labels, nr_labels * sizeof(*labels), 3) ^ hash_u64(group);
	found = (uintptr_t)hashmap__find(&p->sample_index, &probe);
	if (found) {
		s = &p->samples[found - 1];
	} else {
		if (p->nr_samples >= p->opts.max_samples)
			return -E2BIG;
		err = grow_array((void **)&p->samples, &p->cap_samples, p->nr_samples + 1,
				 sizeof(*p->samples));
		if (err)
			return err;
		k = arena_alloc(p, sizeof(*k));
		probe.locations = arena_alloc(p, nr_locations * sizeof(*locations) + 1);
		probe.labels = arena_alloc(p, nr_labels * sizeof(*labels) + 1);
		if (!k || !probe.locations || !probe.labels)
			return -ENOMEM;
		if (nr_locations)
			memcpy(probe.locations, locations, nr_locations * sizeof(*locations));
		if (nr_labels)
			memcpy(probe.labels, labels, nr_labels * sizeof(*labels));
		*k = probe;
		err = hashmap__add(&p->sample_index, k, (void *)(uintptr_t)(p->nr_samples + 1));
		if (err)
			return err;
		s = &p->samples[p->nr_samples++];
		*s = probe;
	}
	s->values[0] += (int64_t)count;
	s->values[1] += (int64_t)(count * p->opts.period_ns);
	s->values[2] += (int64_t)offcpu_ns;
	p->total_count += count;
	p->total_offcpu_ns += offcpu_ns;
	return 0;
}

int64_t profile__placeholder(struct profile *p, enum location_tag tag, uint64_t address)
{
	const char *name = location_tag_name(tag);
	struct profile_line line = { 0 };
	int64_t fn;

	if (!name[0])
		return -EINVAL;
	fn = profile__function(p, name, name, "", 0);
	if (fn < 0)
		return fn;
	line.function_id = (uint64_t)fn;
	return profile__add_location(p, 0, address, (uint64_t)tag, &line, 1);
}

int profile__comment(struct profile *p, const char *text)
{
	int64_t idx = profile__string(p, text);
	int err;

	if (idx < 0)
		return (int)idx;
	err = grow_array((void **)&p->comments, &p->cap_comments, p->nr_comments + 1,
			 sizeof(*p->comments));
	if (err)
		return err;
	p->comments[p->nr_comments++] = idx;
	return 0;
}
