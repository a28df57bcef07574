// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
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
