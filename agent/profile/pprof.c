// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <zlib.h>

#include "pprof.h"
#include "profile.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__ValueType pb_value_type;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Label pb_label;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Line pb_line;
typedef Perftools__Profiles__Function pb_function;

/* All the message structs of one encoding, in flat arrays freed together. */
struct pb_arena {
	pb_sample *samples;
	pb_sample **sample_ptrs;
	pb_label *labels;
	pb_label **label_ptrs;
	pb_mapping *mappings;
	pb_mapping **mapping_ptrs;
	pb_location *locations;
	pb_location **location_ptrs;
	pb_line *lines;
	pb_line **line_ptrs;
	pb_function *functions;
	pb_function **function_ptrs;
	int64_t *values;
};

static void pb_arena_free(struct pb_arena *a)
{
	free(a->samples);
	free(a->sample_ptrs);
	free(a->labels);
	free(a->label_ptrs);
	free(a->mappings);
	free(a->mapping_ptrs);
	free(a->locations);
	free(a->location_ptrs);
	free(a->lines);
	free(a->line_ptrs);
	free(a->functions);
	free(a->function_ptrs);
	free(a->values);
}

/* calloc of n elements, never NULL for n == 0 so that failure is unambiguous. */
static void *alloc_n(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

static int arena_alloc(const struct profile *p, struct pb_arena *a)
{
	size_t nr_labels = 0, i;

	for (i = 0; i < p->nr_samples; i++)
		nr_labels += p->samples[i].nr_labels;
	a->samples = alloc_n(p->nr_samples, sizeof(*a->samples));
	a->sample_ptrs = alloc_n(p->nr_samples, sizeof(*a->sample_ptrs));
	a->values = alloc_n(p->nr_samples * 4, sizeof(*a->values));
	a->labels = alloc_n(nr_labels, sizeof(*a->labels));
	a->label_ptrs = alloc_n(nr_labels, sizeof(*a->label_ptrs));
	a->mappings = alloc_n(p->nr_mappings, sizeof(*a->mappings));
	a->mapping_ptrs = alloc_n(p->nr_mappings, sizeof(*a->mapping_ptrs));
	a->locations = alloc_n(p->nr_locations, sizeof(*a->locations));
	a->location_ptrs = alloc_n(p->nr_locations, sizeof(*a->location_ptrs));
	a->lines = alloc_n(p->nr_lines, sizeof(*a->lines));
	a->line_ptrs = alloc_n(p->nr_lines, sizeof(*a->line_ptrs));
	a->functions = alloc_n(p->nr_functions, sizeof(*a->functions));
	a->function_ptrs = alloc_n(p->nr_functions, sizeof(*a->function_ptrs));
	if (!a->samples || !a->sample_ptrs || !a->values || !a->labels || !a->label_ptrs ||
	    !a->mappings || !a->mapping_ptrs || !a->locations || !a->location_ptrs || !a->lines ||
	    !a->line_ptrs || !a->functions || !a->function_ptrs)
		return -ENOMEM;
	return 0;
}

static void build_samples(const struct profile *p, struct pb_arena *a)
{
	size_t i, j, li = 0;

	for (i = 0; i < p->nr_samples; i++) {
		const struct profile_sample *s = &p->samples[i];
		pb_sample *ps = &a->samples[i];

		perftools__profiles__sample__init(ps);
		ps->n_location_id = s->nr_locations;
		ps->location_id = s->locations;
		ps->value = &a->values[4 * i];
		switch (p->opts.types) {
		case PROFILE_CPU:
			ps->n_value = 2;
			ps->value[0] = s->values[0];
			ps->value[1] = s->values[1];
			break;
		case PROFILE_CPU_OFFCPU:
			ps->n_value = 4;
			ps->value[0] = s->values[0];
			ps->value[1] = s->values[1];
			ps->value[2] = s->values[2];
			ps->value[3] = s->values[1] + s->values[2];
			break;
		case PROFILE_OFFCPU:
			ps->n_value = 1;
			ps->value[0] = s->values[2];
			break;
		}
		ps->n_label = s->nr_labels;
		ps->label = &a->label_ptrs[li];
		for (j = 0; j < s->nr_labels; j++, li++) {
			pb_label *l = &a->labels[li];

			perftools__profiles__label__init(l);
			l->key = s->labels[j].key;
			l->str = s->labels[j].str;
			l->num = s->labels[j].str ? 0 : s->labels[j].num;
			a->label_ptrs[li] = l;
		}
		a->sample_ptrs[i] = ps;
	}
}

static void build_mappings(const struct profile *p, struct pb_arena *a)
{
	size_t i;

	for (i = 0; i < p->nr_mappings; i++) {
		const struct profile_mapping *m = &p->mappings[i];
		pb_mapping *pm = &a->mappings[i];

		perftools__profiles__mapping__init(pm);
		pm->id = m->id;
		pm->memory_start = m->memory_start;
		pm->memory_limit = m->memory_limit;
		pm->file_offset = m->file_offset;
		pm->filename = m->filename;
		pm->build_id = m->build_id;
		/* A mapping with any unnamed location is left for server-side symbolization. */
		pm->has_functions = m->has_functions && !m->nr_unnamed;
		pm->has_filenames = m->has_filenames;
		pm->has_line_numbers = m->has_line_numbers;
		pm->has_inline_frames = m->has_inline_frames;
		a->mapping_ptrs[i] = pm;
	}
}

/* Lines, locations and functions. */
static void build_locations(const struct profile *p, struct pb_arena *a)
{
	size_t i;

	for (i = 0; i < p->nr_lines; i++) {
		perftools__profiles__line__init(&a->lines[i]);
		a->lines[i].function_id = p->lines[i].function_id;
		a->lines[i].line = p->lines[i].line;
		a->line_ptrs[i] = &a->lines[i];
	}
	for (i = 0; i < p->nr_locations; i++) {
		const struct profile_location *l = &p->locations[i];
		pb_location *pl = &a->locations[i];

		perftools__profiles__location__init(pl);
		pl->id = l->id;
		pl->mapping_id = l->mapping_id;
		pl->address = l->address;
		pl->n_line = l->nr_lines;
		pl->line = l->nr_lines ? &a->line_ptrs[l->first_line] : NULL;
		a->location_ptrs[i] = pl;
	}
	for (i = 0; i < p->nr_functions; i++) {
		const struct profile_function *f = &p->functions[i];
		pb_function *pf = &a->functions[i];

		perftools__profiles__function__init(pf);
		pf->id = f->id;
		pf->name = f->name;
		pf->system_name = f->system_name;
		pf->filename = f->filename;
		pf->start_line = f->start_line;
		a->function_ptrs[i] = pf;
	}
}

/* The sample types of p->opts.types into types[] and type_ptrs[]; types[4] is the period
 * type. Returns the number of sample types. */
static size_t build_types(const struct profile *p, pb_value_type types[5],
			  pb_value_type *type_ptrs[4])
{
	size_t i, n;

	for (i = 0; i < 5; i++)
		perftools__profiles__value_type__init(&types[i]);
	types[0].type = p->str_samples;
	types[0].unit = p->str_count;
	types[1].type = p->str_cpu;
	types[1].unit = p->str_nanoseconds;
	types[2].type = p->str_offcpu;
	types[2].unit = p->str_nanoseconds;
	types[3].type = p->str_wall;
	types[3].unit = p->str_nanoseconds;
	types[4] = types[1]; /* the period's: one CPU sample */
	switch (p->opts.types) {
	case PROFILE_OFFCPU:
		type_ptrs[0] = &types[2];
		return 1;
	case PROFILE_CPU_OFFCPU:
		n = 4;
		break;
	default:
		n = 2;
	}
	for (i = 0; i < n; i++)
		type_ptrs[i] = &types[i];
	return n;
}

static int build(const struct profile *p, pb_profile *pb, struct pb_arena *a,
		 pb_value_type types[5], pb_value_type *type_ptrs[4])
{
	size_t nr_types;
	int err = arena_alloc(p, a);

	if (err)
		return err;
	nr_types = build_types(p, types, type_ptrs);
	build_samples(p, a);
	build_mappings(p, a);
	build_locations(p, a);

	perftools__profiles__profile__init(pb);
	pb->n_sample_type = nr_types;
	pb->sample_type = type_ptrs;
	pb->n_sample = p->nr_samples;
	pb->sample = a->sample_ptrs;
	pb->n_mapping = p->nr_mappings;
	pb->mapping = a->mapping_ptrs;
	pb->n_location = p->nr_locations;
	pb->location = a->location_ptrs;
	pb->n_function = p->nr_functions;
	pb->function = a->function_ptrs;
	pb->n_string_table = p->nr_strings;
	pb->string_table = p->strings;
	pb->time_nanos = (int64_t)p->opts.time_ns;
	pb->duration_nanos = (int64_t)p->opts.duration_ns;
	pb->period_type = &types[4];
	pb->period = (int64_t)p->opts.period_ns;
	if (p->opts.types == PROFILE_CPU_OFFCPU) {
		pb->default_sample_type = p->str_cpu; /* views stay CPU unless asked */
	} else if (p->opts.types == PROFILE_OFFCPU) {
		pb->period_type = NULL; /* as Alloy: a sample's value is its time */
		pb->period = 1;
	}
	pb->n_comment = p->nr_comments;
	pb->comment = p->comments;
	return 0;
}

int gzip_compress(const uint8_t *in, size_t len, int level, uint8_t **out, size_t *out_len)
{
	z_stream zs = { 0 };
	uLong bound;
	uint8_t *buf;
	int ret;

	*out = NULL;
	/* windowBits 15 + 16: a gzip header and trailer instead of zlib's. */
	if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	bound = deflateBound(&zs, len);
	buf = malloc(bound);
	if (!buf) {
		deflateEnd(&zs);
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	zs.next_out = buf;
	zs.avail_out = (uInt)bound;
	if (len > UINT32_MAX || bound > UINT32_MAX)
		ret = Z_BUF_ERROR;
	else
		ret = deflate(&zs, Z_FINISH);
	deflateEnd(&zs);
	if (ret != Z_STREAM_END) {
		free(buf);
		return -EIO;
	}
	/* The bound is about the input's size and the output often a fifth of it. Queued
	 * profiles are budgeted by their length, so keep exactly that: a fresh allocation, not
	 * a realloc() shrunk in place, whose freed tails would strand between live profiles
	 * (+52 MiB of RSS for a full 16 MiB queue in the benchmark). */
	*out = malloc(zs.total_out ? zs.total_out : 1);
	if (!*out) {
		*out = buf;
	} else {
		memcpy(*out, buf, zs.total_out);
		free(buf);
	}
	*out_len = zs.total_out;
	return 0;
}

int pprof_encode(const struct profile *p, int gzip_level, uint8_t **out, size_t *len)
{
	pb_value_type types[5], *type_ptrs[4];
	struct pb_arena a = { 0 };
	pb_profile pb;
	uint8_t *raw = NULL;
	size_t size;
	int err;

	*out = NULL;
	*len = 0;
	err = build(p, &pb, &a, types, type_ptrs);
	if (err)
		goto cleanup;
	size = perftools__profiles__profile__get_packed_size(&pb);
	raw = malloc(size ? size : 1);
	if (!raw) {
		err = -ENOMEM;
		goto cleanup;
	}
	perftools__profiles__profile__pack(&pb, raw);
	if (gzip_level < 0) {
		*out = raw;
		*len = size;
		raw = NULL;
	} else {
		err = gzip_compress(raw, size, gzip_level, out, len);
	}
cleanup:
	free(raw);
	pb_arena_free(&a);
	return err;
}

/* ---- Decoding ------------------------------------------------------------------------------ */

/* gunzip buf into *out (malloc'd), at most PPROF_MAX_INFLATED bytes. */
static int gunzip(const uint8_t *buf, size_t len, uint8_t **out, size_t *out_len, const char **why)
{
	z_stream zs = { 0 };
	size_t cap = 0, n = 0;
	uint8_t *dst = NULL, *grown;
	int ret, err = 0;

	*out = NULL;
	if (len > UINT32_MAX) {
		*why = "larger than 4 GiB compressed";
		return -E2BIG;
	}
	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return -ENOMEM;
	zs.next_in = (Bytef *)buf;
	zs.avail_in = (uInt)len;
	for (;;) {
		if (n == cap) {
			if (cap == PPROF_MAX_INFLATED) {
				*why = "inflates past the 512 MiB limit";
				err = -E2BIG;
				break;
			}
			cap = cap ? cap * 2 : len * 4 + 4096;
			if (cap > PPROF_MAX_INFLATED)
				cap = PPROF_MAX_INFLATED;
			grown = realloc(dst, cap);
			if (!grown) {
				err = -ENOMEM;
				break;
			}
			dst = grown;
		}
		zs.next_out = dst + n;
		zs.avail_out = (uInt)(cap - n);
		ret = inflate(&zs, Z_NO_FLUSH);
		n = cap - zs.avail_out;
		if (ret == Z_STREAM_END)
			break;
		if (ret == Z_OK || (ret == Z_BUF_ERROR && !zs.avail_out))
			continue;
		if (ret == Z_MEM_ERROR) {
			err = -ENOMEM;
		} else {
			*why = ret == Z_BUF_ERROR ? "truncated gzip stream" : "corrupt gzip stream";
			err = -EINVAL;
		}
		break;
	}
	inflateEnd(&zs);
	if (err) {
		free(dst);
		return err;
	}
	*out = dst;
	*out_len = n;
	return 0;
}

/* pprof ids are arbitrary: an index from id to position, direct when they are 1..N. */
struct id_index {
	bool dense;
	size_t nr;
	struct id_pos {
		uint64_t id;
		size_t pos;
	} * v;
};

static int cmp_id_pos(const void *a, const void *b)
{
	uint64_t x = ((const struct id_pos *)a)->id, y = ((const struct id_pos *)b)->id;

	return x < y ? -1 : x > y;
}

/* ids[i] is the id of element i. Duplicate or zero ids are invalid. */
static int id_index_init(struct id_index *ix, size_t nr, uint64_t (*id_of)(const void *, size_t),
			 const void *arr)
{
	size_t i;

	ix->nr = nr;
	ix->dense = true;
	ix->v = NULL;
	for (i = 0; i < nr && ix->dense; i++)
		ix->dense = id_of(arr, i) == i + 1;
	if (ix->dense)
		return 0;
	ix->v = alloc_n(nr, sizeof(*ix->v));
	if (!ix->v)
		return -ENOMEM;
	for (i = 0; i < nr; i++)
		ix->v[i] = (struct id_pos){ id_of(arr, i), i };
	qsort(ix->v, nr, sizeof(*ix->v), cmp_id_pos);
	for (i = 0; i < nr; i++)
		if (!ix->v[i].id || (i && ix->v[i].id == ix->v[i - 1].id))
			return -EINVAL;
	return 0;
}

/* The position of id, or -1. */
static ssize_t id_index_find(const struct id_index *ix, uint64_t id)
{
	size_t lo = 0, hi = ix->nr;

	if (ix->dense)
		return id && id <= ix->nr ? (ssize_t)(id - 1) : -1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ix->v[mid].id == id)
			return (ssize_t)ix->v[mid].pos;
		if (ix->v[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static uint64_t mapping_id_of(const void *arr, size_t i)
{
	return ((pb_mapping *const *)arr)[i]->id;
}

static uint64_t function_id_of(const void *arr, size_t i)
{
	return ((pb_function *const *)arr)[i]->id;
}

static uint64_t location_id_of(const void *arr, size_t i)
{
	return ((pb_location *const *)arr)[i]->id;
}

/* What a decoding needs: the message, its id indexes, and the profile's ids of its tables. */
struct decoder {
	const pb_profile *pb;
	struct profile *p;
	struct id_index mappings, functions, locations;
	int64_t *strings;      /* pb string index -> p string index, -1: not interned yet */
	int64_t *function_ids; /* pb function position -> p id, 0: not yet */
	int64_t *mapping_ids;
	int64_t *location_ids;
	const char *why;
};

static int64_t dec_string(struct decoder *d, int64_t idx)
{
	int64_t s;

	if (idx < 0 || (size_t)idx >= d->pb->n_string_table) {
		d->why = "a string index is out of range";
		return -EINVAL;
	}
	if (d->strings[idx] >= 0)
		return d->strings[idx];
	s = profile__string(d->p, d->pb->string_table[idx] ? d->pb->string_table[idx] : "");
	if (s >= 0)
		d->strings[idx] = s;
	return s;
}

static const char *pb_str(const struct decoder *d, int64_t idx)
{
	return idx > 0 && (size_t)idx < d->pb->n_string_table && d->pb->string_table[idx] ?
		       d->pb->string_table[idx] :
		       "";
}

static int64_t dec_mapping(struct decoder *d, uint64_t id)
{
	ssize_t pos = id_index_find(&d->mappings, id);
	const pb_mapping *m;
	struct profile_mapping pm = { 0 };
	int64_t fn, bid;
	struct {
		int64_t filename, build_id;
		uint64_t start, limit, offset;
	} key;

	if (pos < 0) {
		d->why = "a location names a mapping that does not exist";
		return -EINVAL;
	}
	if (d->mapping_ids[pos])
		return d->mapping_ids[pos];
	m = d->pb->mapping[pos];
	fn = dec_string(d, m->filename);
	bid = fn < 0 ? fn : dec_string(d, m->build_id);
	if (bid < 0)
		return bid;
	pm = (struct profile_mapping){ .memory_start = m->memory_start,
				       .memory_limit = m->memory_limit,
				       .file_offset = m->file_offset,
				       .filename = fn,
				       .build_id = bid,
				       .has_functions = m->has_functions,
				       .has_filenames = m->has_filenames,
				       .has_line_numbers = m->has_line_numbers,
				       .has_inline_frames = m->has_inline_frames };
	memset(&key, 0, sizeof(key));
	key.filename = fn;
	key.build_id = bid;
	key.start = m->memory_start;
	key.limit = m->memory_limit;
	key.offset = m->file_offset;
	d->mapping_ids[pos] = profile__mapping(d->p, &key, sizeof(key), &pm);
	return d->mapping_ids[pos];
}

static int64_t dec_function(struct decoder *d, uint64_t id)
{
	ssize_t pos = id_index_find(&d->functions, id);
	const pb_function *f;

	if (pos < 0) {
		d->why = "a line names a function that does not exist";
		return -EINVAL;
	}
	if (d->function_ids[pos])
		return d->function_ids[pos];
	f = d->pb->function[pos];
	if (f->name < 0 || (size_t)f->name >= d->pb->n_string_table || f->system_name < 0 ||
	    (size_t)f->system_name >= d->pb->n_string_table || f->filename < 0 ||
	    (size_t)f->filename >= d->pb->n_string_table) {
		d->why = "a function's string index is out of range";
		return -EINVAL;
	}
	d->function_ids[pos] = profile__function(d->p, pb_str(d, f->name),
						 pb_str(d, f->system_name), pb_str(d, f->filename),
						 f->start_line);
	return d->function_ids[pos];
}

/* Lines of one location, at most this many (an inline chain deeper is cut). */
#define DEC_MAX_LINES 256

static int64_t dec_location(struct decoder *d, uint64_t id)
{
	struct profile_line lines[DEC_MAX_LINES];
	ssize_t pos = id_index_find(&d->locations, id);
	const pb_location *l;
	int64_t mapping = 0, fn;
	size_t i, n;

	if (pos < 0) {
		d->why = "a sample names a location that does not exist";
		return -EINVAL;
	}
	if (d->location_ids[pos])
		return d->location_ids[pos];
	l = d->pb->location[pos];
	if (l->mapping_id) {
		mapping = dec_mapping(d, l->mapping_id);
		if (mapping < 0)
			return mapping;
	}
	n = l->n_line < DEC_MAX_LINES ? l->n_line : DEC_MAX_LINES;
	for (i = 0; i < n; i++) {
		fn = dec_function(d, l->line[i]->function_id);
		if (fn < 0)
			return fn;
		lines[i] = (struct profile_line){ .function_id = (uint64_t)fn,
						  .line = l->line[i]->line };
	}
	d->location_ids[pos] =
		profile__add_location(d->p, (uint64_t)mapping, l->address, 0, lines, (uint32_t)n);
	return d->location_ids[pos];
}

/* The position of the sample type (type, unit), or -1. */
static ssize_t find_type(const struct decoder *d, const char *type, const char *unit)
{
	size_t i;

	for (i = 0; i < d->pb->n_sample_type; i++) {
		const pb_value_type *vt = d->pb->sample_type[i];

		if (!strcmp(pb_str(d, vt->type), type) && !strcmp(pb_str(d, vt->unit), unit))
			return (ssize_t)i;
	}
	return -1;
}

/* A sample's locations and labels, at most this many. */
#define DEC_MAX_FRAMES 4096
#define DEC_MAX_LABELS 64

static int dec_samples(struct decoder *d, ssize_t ix_count, ssize_t ix_cpu, ssize_t ix_offcpu,
		       uint64_t period)
{
	uint64_t locs[DEC_MAX_FRAMES];
	struct profile_label labels[DEC_MAX_LABELS];
	size_t i, j, nr_labels;
	int64_t v;
	int err;

	for (i = 0; i < d->pb->n_sample; i++) {
		const pb_sample *s = d->pb->sample[i];
		uint64_t count = 0, offcpu = 0;

		if (s->n_value != d->pb->n_sample_type) {
			d->why = "a sample's value count differs from its sample types'";
			return -EINVAL;
		}
		if (s->n_location_id > DEC_MAX_FRAMES) {
			d->why = "a sample has more than 4096 locations";
			return -EINVAL;
		}
		for (j = 0; j < s->n_location_id; j++) {
			v = dec_location(d, s->location_id[j]);
			if (v < 0)
				return (int)v;
			locs[j] = (uint64_t)v;
		}
		nr_labels = 0;
		for (j = 0; j < s->n_label && nr_labels < DEC_MAX_LABELS; j++) {
			const pb_label *l = s->label[j];
			int64_t key = dec_string(d, l->key), str = 0;

			if (key < 0)
				return (int)key;
			if (l->str) {
				str = dec_string(d, l->str);
				if (str < 0)
					return (int)str;
			}
			labels[nr_labels++] = (struct profile_label){ .key = key,
								      .str = str,
								      .num = str ? 0 : l->num };
		}
		if (ix_count >= 0)
			count = s->value[ix_count] > 0 ? (uint64_t)s->value[ix_count] : 0;
		else if (ix_cpu >= 0 && period)
			count = s->value[ix_cpu] > 0 ? (uint64_t)s->value[ix_cpu] / period : 0;
		if (ix_offcpu >= 0)
			offcpu = s->value[ix_offcpu] > 0 ? (uint64_t)s->value[ix_offcpu] : 0;
		if (!count && !offcpu)
			continue;
		err = profile__add_group_values(d->p, 0, locs, (uint32_t)s->n_location_id, labels,
						(uint32_t)nr_labels, count, offcpu);
		if (err)
			return err;
	}
	return 0;
}

static int decode(struct decoder *d)
{
	const pb_profile *pb = d->pb;
	ssize_t ix_count, ix_cpu, ix_offcpu;
	struct profile_opts opts = { 0 };
	uint64_t period = 0;
	size_t i;
	int err;

	if (!pb->n_string_table || !pb->string_table[0] || pb->string_table[0][0]) {
		d->why = "the string table does not start with \"\"";
		return -EINVAL;
	}
	ix_count = find_type(d, "samples", "count");
	ix_cpu = find_type(d, "cpu", "nanoseconds");
	ix_offcpu = find_type(d, "offcpu", "nanoseconds");
	if (ix_count < 0 && ix_cpu < 0 && ix_offcpu < 0) {
		d->why = "no samples/count, cpu/nanoseconds or offcpu/nanoseconds sample type";
		return -EPROTONOSUPPORT;
	}
	if (pb->period > 0 && pb->period_type && !strcmp(pb_str(d, pb->period_type->type), "cpu") &&
	    !strcmp(pb_str(d, pb->period_type->unit), "nanoseconds"))
		period = (uint64_t)pb->period;
	opts.types = ix_offcpu < 0		? PROFILE_CPU :
		     ix_count < 0 && ix_cpu < 0 ? PROFILE_OFFCPU :
						  PROFILE_CPU_OFFCPU;
	opts.period_ns = period;
	opts.time_ns = pb->time_nanos > 0 ? (uint64_t)pb->time_nanos : 0;
	opts.duration_ns = pb->duration_nanos > 0 ? (uint64_t)pb->duration_nanos : 0;
	d->p = profile__new(&opts);
	if (!d->p)
		return -ENOMEM;
	d->strings = malloc(pb->n_string_table * sizeof(*d->strings));
	d->mapping_ids = alloc_n(pb->n_mapping, sizeof(*d->mapping_ids));
	d->function_ids = alloc_n(pb->n_function, sizeof(*d->function_ids));
	d->location_ids = alloc_n(pb->n_location, sizeof(*d->location_ids));
	if (!d->strings || !d->mapping_ids || !d->function_ids || !d->location_ids)
		return -ENOMEM;
	memset(d->strings, 0xff, pb->n_string_table * sizeof(*d->strings));
	/* Sizes known ahead: no table of the profile grows while it is filled. */
	err = profile__reserve(d->p, pb->n_string_table, pb->n_function, pb->n_location,
			       pb->n_sample);
	if (err)
		return err;
	err = id_index_init(&d->mappings, pb->n_mapping, mapping_id_of, pb->mapping);
	if (!err)
		err = id_index_init(&d->functions, pb->n_function, function_id_of, pb->function);
	if (!err)
		err = id_index_init(&d->locations, pb->n_location, location_id_of, pb->location);
	if (err == -EINVAL)
		d->why = "duplicate or zero ids in a table";
	if (err)
		return err;
	err = dec_samples(d, ix_count, ix_cpu, ix_offcpu, period);
	for (i = 0; !err && i < pb->n_comment; i++) {
		int64_t c = dec_string(d, pb->comment[i]);

		err = c < 0 ? (int)c : profile__comment(d->p, pb_str(d, pb->comment[i]));
	}
	return err;
}

/*
 * protobuf-c's allocations while it unpacks one message, from blocks freed together: the
 * unpacked message is read once and dropped whole, and its thousands of small allocations
 * cost more through malloc() and free_unpacked() than the unpacking itself.
 */
#define UNPACK_BLOCK (256u << 10)

struct unpack_arena {
	struct unpack_block {
		struct unpack_block *next;
		size_t used, size;
		max_align_t data[];
	} * head;
};

static void *arena_alloc_fn(void *ctx, size_t size)
{
	struct unpack_arena *a = ctx;
	struct unpack_block *b = a->head;

	size = (size + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (!b || b->size - b->used < size) {
		size_t block = size > UNPACK_BLOCK ? size : UNPACK_BLOCK;

		b = malloc(sizeof(*b) + block);
		if (!b)
			return NULL;
		b->size = block;
		b->used = 0;
		b->next = a->head;
		a->head = b;
	}
	b->used += size;
	return (char *)b->data + b->used - size;
}

static void arena_free_fn(void *ctx, void *ptr)
{
	(void)ctx;
	(void)ptr; /* all at once, in arena_release() */
}

static void arena_release(struct unpack_arena *a)
{
	while (a->head) {
		struct unpack_block *b = a->head;

		a->head = b->next;
		free(b);
	}
}

int pprof_decode(const uint8_t *buf, size_t len, struct profile **out, const char **why)
{
	struct unpack_arena arena = { NULL };
	ProtobufCAllocator allocator = { .alloc = arena_alloc_fn,
					 .free = arena_free_fn,
					 .allocator_data = &arena };
	struct decoder d = { 0 };
	uint8_t *inflated = NULL;
	size_t size = len;
	pb_profile *pb;
	int err;

	*out = NULL;
	*why = NULL;
	if (len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) {
		err = gunzip(buf, len, &inflated, &size, why);
		if (err)
			return err;
		buf = inflated;
	}
	pb = perftools__profiles__profile__unpack(&allocator, size, buf);
	free(inflated);
	if (!pb) {
		arena_release(&arena);
		*why = "not a profile.proto message";
		return -EINVAL;
	}
	d.pb = pb;
	err = decode(&d);
	if (err) {
		*why = d.why ? d.why : err == -E2BIG ? "a table is over its cap" : NULL;
		profile__free(d.p);
	} else {
		*out = d.p;
	}
	free(d.strings);
	free(d.mapping_ids);
	free(d.function_ids);
	free(d.location_ids);
	free(d.mappings.v);
	free(d.functions.v);
	free(d.locations.v);
	arena_release(&arena); /* pb with it */
	return err;
}
