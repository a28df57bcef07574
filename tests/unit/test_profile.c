// SPDX-License-Identifier: Apache-2.0
/* The profile builder and the pprof encoder: encode, decode with protobuf-c, compare. */
#include <errno.h>
#include <zlib.h>

#include "unit.h"

#include "../../agent/profile/pprof.h"
#include "../../agent/profile/profile.h"
#include "../../agent/profile/top.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile pb_profile;

static struct profile *new_profile(void)
{
	struct profile_opts o = {
		.period_ns = 10000000, .time_ns = 1764441290000000000ULL,
		.duration_ns = 10000000000ULL,
	};
	struct profile *p = profile__new(&o);

	assert_non_null(p);
	return p;
}

static pb_profile *round_trip(struct profile *p, int gzip_level)
{
	uint8_t *buf = NULL, *raw;
	size_t len = 0, raw_len;
	pb_profile *pb;

	assert_int_equal(pprof_encode(p, gzip_level, &buf, &len), 0);
	if (gzip_level >= 0) {
		uLongf out_len = 64 << 20;
		z_stream zs = { 0 };

		/* gzip magic, then inflate with zlib's gzip decoder. */
		assert_true(len > 18 && buf[0] == 0x1f && buf[1] == 0x8b);
		raw = malloc(out_len);
		assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
		zs.next_in = buf;
		zs.avail_in = (uInt)len;
		zs.next_out = raw;
		zs.avail_out = (uInt)out_len;
		assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
		raw_len = zs.total_out;
		inflateEnd(&zs);
	} else {
		raw = buf;
		raw_len = len;
		buf = NULL;
	}
	pb = perftools__profiles__profile__unpack(NULL, raw_len, raw);
	assert_non_null(pb);
	free(raw);
	free(buf);
	return pb;
}

static const char *pstr(const pb_profile *pb, int64_t i)
{
	assert_true(i >= 0 && (size_t)i < pb->n_string_table);
	return pb->string_table[i];
}

static void test_strings(void **state)
{
	struct profile *p = new_profile();
	int64_t a, b, c;

	(void)state;
	assert_string_equal(profile__str(p, 0), "");
	a = profile__string(p, "hot_a");
	b = profile__string(p, "hot_a");
	c = profile__string(p, "hot_b");
	assert_true(a > 0);
	assert_int_equal(a, b);
	assert_true(c != a);
	/* Invalid UTF-8 is stored as U+FFFD; the sanitized form is interned as itself. */
	a = profile__string(p, "bad\xff\xfe name");
	assert_string_equal(profile__str(p, a), "bad\xef\xbf\xbd\xef\xbf\xbd name");
	assert_int_equal(profile__string(p, "bad\xef\xbf\xbd\xef\xbf\xbd name"), a);
	/* Overlong and surrogate encodings are invalid too. */
	a = profile__string(p, "\xc0\xaf\xed\xa0\x80");
	assert_string_equal(profile__str(p, a), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
						 "\xef\xbf\xbd");
	profile__free(p);
}

/* Two processes running the same binary at different load addresses: one Mapping, one
 * Location per ELF address, samples merged when stacks and labels match. */
static void build_example(struct profile *p, uint64_t *locs_out)
{
	struct profile_mapping m = { .memory_limit = UINT64_MAX, .has_functions = true };
	struct profile_line line;
	struct profile_label labels[2];
	int64_t map, kmap, fa, fb, fk, la, lb, lk, lu;
	const char key[] = "build-id-1";
	uint64_t stack[3];

	m.filename = profile__string(p, "/usr/bin/app");
	m.build_id = profile__string(p, "0123abcd");
	map = profile__mapping(p, key, sizeof(key), &m);
	assert_int_equal(map, 1);
	assert_int_equal(profile__mapping(p, key, sizeof(key), &m), 1);
	m.filename = profile__string(p, "[kernel.kallsyms]");
	kmap = profile__mapping(p, "k", 1, &m);
	assert_int_equal(kmap, 2);

	fa = profile__function(p, "main", "main", "", 0);
	fb = profile__function(p, "hot", "_Z3hotv", "", 0);
	fk = profile__function(p, "do_syscall_64", NULL, "", 0);
	assert_int_equal(profile__function(p, "main", "main", "", 0), fa);
	assert_true(fa == 1 && fb == 2 && fk == 3);

	line = (struct profile_line){ .function_id = (uint64_t)fa };
	la = profile__add_location(p, (uint64_t)map, 0x1130, 0, &line, 1);
	line.function_id = (uint64_t)fb;
	lb = profile__add_location(p, (uint64_t)map, 0x1200, 0, &line, 1);
	line.function_id = (uint64_t)fk;
	lk = profile__add_location(p, (uint64_t)kmap, 0xffffffff81003000ULL, 0, &line, 1);
	/* An address no symbol covers: mapping kept, no Line. */
	lu = profile__add_location(p, (uint64_t)map, 0x1400, 0, NULL, 0);
	assert_int_equal(profile__find_location(p, (uint64_t)map, 0x1200, 0), (uint64_t)lb);
	assert_int_equal(profile__add_location(p, (uint64_t)map, 0x1200, 0, &line, 1), lb);

	stack[0] = (uint64_t)lk;
	stack[1] = (uint64_t)lb;
	stack[2] = (uint64_t)la;
	labels[0] = (struct profile_label){ .key = profile__string(p, "pid"), .num = 42 };
	labels[1] = (struct profile_label){ .key = profile__string(p, "comm"),
					    .str = profile__string(p, "app") };
	assert_int_equal(profile__add_sample(p, stack, 3, labels, 2, 5), 0);
	assert_int_equal(profile__add_sample(p, stack, 3, labels, 2, 2), 0);	/* merged */
	labels[0].num = 43;
	assert_int_equal(profile__add_sample(p, stack + 1, 2, labels, 2, 1), 0);
	stack[0] = (uint64_t)lu;
	assert_int_equal(profile__add_sample(p, stack, 3, labels, 2, 1), 0);
	locs_out[0] = (uint64_t)la;
	locs_out[1] = (uint64_t)lb;
	locs_out[2] = (uint64_t)lk;
	locs_out[3] = (uint64_t)lu;
}

static void check_decoded(const pb_profile *pb)
{
	size_t i;

	assert_string_equal(pb->string_table[0], "");
	assert_int_equal(pb->n_sample_type, 2);
	assert_string_equal(pstr(pb, pb->sample_type[0]->type), "samples");
	assert_string_equal(pstr(pb, pb->sample_type[0]->unit), "count");
	assert_string_equal(pstr(pb, pb->sample_type[1]->type), "cpu");
	assert_string_equal(pstr(pb, pb->sample_type[1]->unit), "nanoseconds");
	assert_string_equal(pstr(pb, pb->period_type->type), "cpu");
	assert_string_equal(pstr(pb, pb->period_type->unit), "nanoseconds");
	assert_int_equal(pb->period, 10000000);
	assert_int_equal(pb->time_nanos, 1764441290000000000LL);
	assert_int_equal(pb->duration_nanos, 10000000000LL);

	/* Dense ids 1..N. */
	assert_int_equal(pb->n_mapping, 2);
	for (i = 0; i < pb->n_mapping; i++)
		assert_int_equal(pb->mapping[i]->id, i + 1);
	assert_int_equal(pb->n_location, 4);
	for (i = 0; i < pb->n_location; i++)
		assert_int_equal(pb->location[i]->id, i + 1);
	assert_int_equal(pb->n_function, 3);
	for (i = 0; i < pb->n_function; i++)
		assert_int_equal(pb->function[i]->id, i + 1);
	/* Every string once. */
	for (i = 1; i < pb->n_string_table; i++)
		for (size_t j = i + 1; j < pb->n_string_table; j++)
			assert_string_not_equal(pb->string_table[i], pb->string_table[j]);

	/* The address model: ELF addresses under start 0, limit ~0, offset 0. */
	assert_int_equal(pb->mapping[0]->memory_start, 0);
	assert_int_equal(pb->mapping[0]->memory_limit, UINT64_MAX);
	assert_int_equal(pb->mapping[0]->file_offset, 0);
	assert_string_equal(pstr(pb, pb->mapping[0]->filename), "/usr/bin/app");
	assert_string_equal(pstr(pb, pb->mapping[0]->build_id), "0123abcd");
	/* It has an unnamed location, so a server may symbolize it. */
	assert_false(pb->mapping[0]->has_functions);
	assert_true(pb->mapping[1]->has_functions);
	assert_string_equal(pstr(pb, pb->mapping[1]->filename), "[kernel.kallsyms]");

	assert_int_equal(pb->location[3]->n_line, 0);
	assert_int_equal(pb->location[3]->address, 0x1400);
	assert_int_equal(pb->location[1]->n_line, 1);
	assert_string_equal(pstr(pb, pb->function[pb->location[1]->line[0]->function_id - 1]->name),
			    "hot");
	assert_string_equal(
		pstr(pb, pb->function[pb->location[1]->line[0]->function_id - 1]->system_name),
		"_Z3hotv");

	/* Samples: the merged one counts 7, values = [count, count * period]. */
	assert_int_equal(pb->n_sample, 3);
	assert_int_equal(pb->sample[0]->n_location_id, 3);
	assert_int_equal(pb->sample[0]->location_id[0], 3);	/* leaf first: kernel */
	assert_int_equal(pb->sample[0]->value[0], 7);
	assert_int_equal(pb->sample[0]->value[1], 70000000);
	assert_int_equal(pb->sample[0]->n_label, 2);
	assert_string_equal(pstr(pb, pb->sample[0]->label[0]->key), "pid");
	assert_int_equal(pb->sample[0]->label[0]->num, 42);
	assert_string_equal(pstr(pb, pb->sample[0]->label[1]->str), "app");
	assert_int_equal(pb->sample[1]->value[0], 1);
	assert_int_equal(pb->sample[1]->label[0]->num, 43);
}

static void test_round_trip(void **state)
{
	struct profile *p = new_profile();
	uint64_t locs[4];
	pb_profile *pb;

	(void)state;
	build_example(p, locs);
	assert_int_equal(p->total_count, 9);
	pb = round_trip(p, 6);
	check_decoded(pb);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	pb = round_trip(p, -1);
	check_decoded(pb);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	profile__free(p);
}

static void test_comments(void **state)
{
	struct profile *p = new_profile();
	pb_profile *pb;

	(void)state;
	assert_int_equal(profile__comment(p, "ignis test"), 0);
	pb = round_trip(p, 1);
	assert_int_equal(pb->n_comment, 1);
	assert_string_equal(pstr(pb, pb->comment[0]), "ignis test");
	assert_int_equal(pb->n_sample, 0);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	profile__free(p);
}

static void test_caps(void **state)
{
	struct profile_opts o = { .period_ns = 1, .time_ns = 1, .duration_ns = 1,
				  .max_strings = 8, .max_locations = 2, .max_samples = 1 };
	struct profile *p = profile__new(&o);
	struct profile_mapping m = { 0 };
	uint64_t loc;
	int64_t idx = 0;
	char s[16];
	int i;

	(void)state;
	assert_non_null(p);
	/* Five strings exist already: "", samples, count, cpu, nanoseconds. */
	for (i = 0; i < 10 && idx >= 0; i++) {
		snprintf(s, sizeof(s), "s%d", i);
		idx = profile__string(p, s);
	}
	assert_int_equal(idx, -E2BIG);
	assert_int_equal(i, 4);
	assert_int_equal(profile__string(p, "s0"), 5);	/* existing strings still resolve */
	assert_int_equal(profile__mapping(p, "m", 1, &m), 1);
	assert_true(profile__add_location(p, 1, 1, 0, NULL, 0) > 0);
	assert_true(profile__add_location(p, 1, 2, 0, NULL, 0) > 0);
	assert_int_equal(profile__add_location(p, 1, 3, 0, NULL, 0), -E2BIG);
	assert_int_equal(profile__add_location(p, 9, 3, 0, NULL, 0), -E2BIG);
	loc = 1;
	assert_int_equal(profile__add_sample(p, &loc, 1, NULL, 0, 1), 0);
	loc = 2;
	assert_int_equal(profile__add_sample(p, &loc, 1, NULL, 0, 1), -E2BIG);
	profile__free(p);
}

static void test_top(void **state)
{
	struct profile *p = new_profile();
	struct top_entry e[8];
	uint64_t locs[4];
	int n, i;

	(void)state;
	build_example(p, locs);
	/* Leaves: do_syscall_64 x7, hot x1 (the pid 43 sample), [app] x1 (unnamed leaf). */
	n = top_rank(p, TOP_CPU, 0, e, 8);
	assert_true(n >= 3);
	assert_string_equal(e[0].name, "do_syscall_64");
	assert_int_equal(e[0].self, 7);
	assert_string_equal(e[0].binary, "[kernel.kallsyms]");
	/* Ties sort by name. */
	assert_string_equal(e[1].name, "[app]");
	assert_string_equal(e[1].binary, "app");
	assert_int_equal(e[1].self, 1);
	assert_string_equal(e[2].name, "hot");
	assert_int_equal(e[2].self, 1);
	n = top_rank(p, TOP_CPU, 1, e, 8);
	/* hot and main are on every stack (ties sort by name), do_syscall_64 on 7 of 9. */
	assert_int_equal(n, 4);
	assert_string_equal(e[0].name, "hot");
	assert_int_equal(e[0].total, 9);
	assert_string_equal(e[1].name, "main");
	assert_int_equal(e[1].total, 9);
	assert_int_equal(e[1].self, 0);
	assert_string_equal(e[2].name, "do_syscall_64");
	assert_int_equal(e[2].total, 7);
	/* Off CPU: nothing yet, then 5 ms with main as the leaf (locs[0]). */
	n = top_rank(p, TOP_OFFCPU, 0, e, 8);
	assert_true(n <= 0 || e[0].self == 0);
	assert_int_equal(profile__add_group_values(p, 0, &locs[0], 1, NULL, 0, 0, 5000000), 0);
	n = top_rank(p, TOP_OFFCPU, 0, e, 8);
	assert_true(n >= 1);
	assert_string_equal(e[0].name, "main");
	assert_int_equal(e[0].self, 5000000);
	/* ... and the CPU ranking is as before. */
	n = top_rank(p, TOP_CPU, 0, e, 8);
	assert_string_equal(e[0].name, "do_syscall_64");
	assert_int_equal(e[0].self, 7);
	/* An unnamed kernel frame reads as its mapping's name, not bracketed again. */
	locs[3] = (uint64_t)profile__add_location(p, 2, 0xffffffff81000000ULL, 0, NULL, 0);
	assert_int_equal(profile__add_sample(p, &locs[3], 1, NULL, 0, 1), 0);
	n = top_rank(p, TOP_CPU, 0, e, 8);
	assert_true(n >= 4);
	for (i = 0; i < n && strcmp(e[i].name, "[kernel.kallsyms]"); i++)
		assert_string_not_equal(e[i].name, "[[kernel.kallsyms]]");
	assert_true(i < n);
	assert_int_equal(e[i].self, 1);
	profile__free(p);
}

/* A profile of these sample types, else as new_profile(). */
static struct profile *new_profile_types(enum profile_types types)
{
	struct profile_opts o = {
		.types = types, .period_ns = 10000000, .time_ns = 1764441290000000000ULL,
		.duration_ns = 10000000000ULL,
	};
	struct profile *p = profile__new(&o);

	assert_non_null(p);
	return p;
}

/* One location (hot in /usr/bin/app) into loc[0], and the labels pid and comm. */
static void build_offcpu_parts(struct profile *p, uint64_t *loc, struct profile_label labels[2])
{
	struct profile_mapping m = { .memory_limit = UINT64_MAX, .has_functions = true };
	struct profile_line line = { 0 };
	int64_t map, fn, l;

	m.filename = profile__string(p, "/usr/bin/app");
	map = profile__mapping(p, "b", 1, &m);
	assert_true(map > 0);
	fn = profile__function(p, "hot", "hot", "", 0);
	assert_true(fn > 0);
	line.function_id = (uint64_t)fn;
	l = profile__add_location(p, (uint64_t)map, 0x1200, 0, &line, 1);
	assert_true(l > 0);
	loc[0] = (uint64_t)l;
	labels[0] = (struct profile_label){ .key = profile__string(p, "pid"), .num = 42 };
	labels[1] = (struct profile_label){ .key = profile__string(p, "comm"),
					    .str = profile__string(p, "app") };
}

/* CPU samples and off-CPU time of the same stack, labels and group are one sample; another
 * group or other labels another one. */
static void test_group_values_merge(void **state)
{
	struct profile *p = new_profile_types(PROFILE_CPU_OFFCPU);
	struct profile_label labels[2];
	const struct profile_sample *s;
	uint64_t loc[2];

	(void)state;
	build_offcpu_parts(p, loc, labels);
	loc[1] = loc[0];
	assert_int_equal(profile__add_group_values(p, 1, loc, 1, labels, 2, 3, 0), 0);
	assert_int_equal(profile__add_group_values(p, 1, loc, 1, labels, 2, 0, 5000000), 0);
	assert_int_equal(profile__add_group_values(p, 1, loc, 1, labels, 2, 1, 250), 0);
	assert_int_equal(p->nr_samples, 1);
	s = &p->samples[0];
	assert_int_equal(s->group, 1);
	assert_int_equal(s->nr_locations, 1);
	assert_int_equal(s->locations[0], loc[0]);
	assert_int_equal(s->nr_labels, 2);
	assert_int_equal(s->labels[0].num, 42);
	assert_string_equal(profile__str(p, s->labels[1].str), "app");
	assert_int_equal(s->values[0], 4);
	assert_int_equal(s->values[1], 40000000);
	assert_int_equal(s->values[2], 5000250);
	assert_int_equal(p->total_count, 4);
	assert_int_equal(p->total_offcpu_ns, 5000250);

	/* Another group, another stack, other labels: samples of their own. */
	assert_int_equal(profile__add_group_values(p, 0, loc, 1, labels, 2, 0, 7), 0);
	assert_int_equal(profile__add_group_values(p, 1, loc, 2, labels, 2, 0, 11), 0);
	assert_int_equal(profile__add_group_values(p, 1, loc, 1, labels, 1, 0, 13), 0);
	assert_int_equal(p->nr_samples, 4);
	assert_int_equal(p->samples[0].values[2], 5000250);
	assert_int_equal(p->samples[1].group, 0);
	assert_int_equal(p->samples[1].values[0], 0);
	assert_int_equal(p->samples[1].values[1], 0);
	assert_int_equal(p->samples[1].values[2], 7);
	assert_int_equal(p->total_count, 4);
	assert_int_equal(p->total_offcpu_ns, 5000250 + 7 + 11 + 13);
	/* profile__add_group_sample() adds CPU samples only. */
	assert_int_equal(profile__add_group_sample(p, 0, loc, 1, labels, 2, 2), 0);
	assert_int_equal(p->samples[1].values[0], 2);
	assert_int_equal(p->samples[1].values[2], 7);
	assert_int_equal(p->total_offcpu_ns, 5000250 + 7 + 11 + 13);
	profile__free(p);
}

/* PROFILE_CPU_OFFCPU: samples, cpu, offcpu and wall (cpu + offcpu), viewed as cpu. */
static void test_cpu_offcpu_types(void **state)
{
	struct profile *p = new_profile_types(PROFILE_CPU_OFFCPU);
	static const char *const names[4][2] = { { "samples", "count" },
						 { "cpu", "nanoseconds" },
						 { "offcpu", "nanoseconds" },
						 { "wall", "nanoseconds" } };
	struct profile_label labels[2];
	uint64_t loc[1];
	pb_profile *pb;
	size_t i;

	(void)state;
	build_offcpu_parts(p, loc, labels);
	assert_int_equal(profile__add_group_values(p, 0, loc, 1, labels, 2, 3, 0), 0);
	assert_int_equal(profile__add_group_values(p, 0, loc, 1, labels, 2, 0, 5000000), 0);
	labels[0].num = 43;
	assert_int_equal(profile__add_group_values(p, 0, loc, 1, labels, 2, 0, 7000000), 0);
	labels[0].num = 44;
	assert_int_equal(profile__add_group_values(p, 0, loc, 1, labels, 2, 2, 0), 0);
	pb = round_trip(p, 1);
	assert_int_equal(pb->n_sample_type, 4);
	for (i = 0; i < 4; i++) {
		assert_string_equal(pstr(pb, pb->sample_type[i]->type), names[i][0]);
		assert_string_equal(pstr(pb, pb->sample_type[i]->unit), names[i][1]);
	}
	assert_string_equal(pstr(pb, pb->default_sample_type), "cpu");
	assert_non_null(pb->period_type);
	assert_string_equal(pstr(pb, pb->period_type->type), "cpu");
	assert_string_equal(pstr(pb, pb->period_type->unit), "nanoseconds");
	assert_int_equal(pb->period, 10000000);

	assert_int_equal(pb->n_sample, 3);
	for (i = 0; i < pb->n_sample; i++)
		assert_int_equal(pb->sample[i]->n_value, 4);
	/* CPU and off-CPU merged: wall is both. */
	assert_int_equal(pb->sample[0]->label[0]->num, 42);
	assert_int_equal(pb->sample[0]->value[0], 3);
	assert_int_equal(pb->sample[0]->value[1], 30000000);
	assert_int_equal(pb->sample[0]->value[2], 5000000);
	assert_int_equal(pb->sample[0]->value[3], 35000000);
	/* Off CPU only. */
	assert_int_equal(pb->sample[1]->label[0]->num, 43);
	assert_int_equal(pb->sample[1]->value[0], 0);
	assert_int_equal(pb->sample[1]->value[1], 0);
	assert_int_equal(pb->sample[1]->value[2], 7000000);
	assert_int_equal(pb->sample[1]->value[3], 7000000);
	/* CPU only. */
	assert_int_equal(pb->sample[2]->value[0], 2);
	assert_int_equal(pb->sample[2]->value[1], 20000000);
	assert_int_equal(pb->sample[2]->value[2], 0);
	assert_int_equal(pb->sample[2]->value[3], 20000000);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	profile__free(p);

	/* A CPU profile keeps its two types, even with off-CPU time in its samples. */
	p = new_profile_types(PROFILE_CPU);
	build_offcpu_parts(p, loc, labels);
	assert_int_equal(profile__add_group_values(p, 0, loc, 1, labels, 2, 3, 5000000), 0);
	assert_int_equal(p->str_offcpu, 0);
	assert_int_equal(p->str_wall, 0);
	pb = round_trip(p, -1);
	assert_int_equal(pb->n_sample_type, 2);
	assert_string_equal(pstr(pb, pb->sample_type[0]->type), "samples");
	assert_string_equal(pstr(pb, pb->sample_type[1]->type), "cpu");
	assert_int_equal(pb->default_sample_type, 0);
	for (i = 1; i < pb->n_string_table; i++) {
		assert_string_not_equal(pb->string_table[i], "offcpu");
		assert_string_not_equal(pb->string_table[i], "wall");
	}
	assert_int_equal(pb->n_sample, 1);
	assert_int_equal(pb->sample[0]->n_value, 2);
	assert_int_equal(pb->sample[0]->value[0], 3);
	assert_int_equal(pb->sample[0]->value[1], 30000000);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	profile__free(p);
}

/* PROFILE_OFFCPU (Alloy's off-CPU profile): one type, offcpu/nanoseconds, no period type;
 * a sample's value is its time. The placeholders have their names. */
static void test_offcpu_only_type(void **state)
{
	struct profile *p = new_profile_types(PROFILE_OFFCPU);
	struct profile_label labels[2];
	uint64_t loc[1], capped;
	int64_t ph;
	pb_profile *pb;
	const Perftools__Profiles__Location *l;

	(void)state;
	build_offcpu_parts(p, loc, labels);
	assert_int_equal(profile__add_group_values(p, 0, loc, 1, labels, 2, 0, 5000000), 0);
	assert_int_equal(profile__add_group_values(p, 0, loc, 1, labels, 2, 0, 1500000), 0);
	ph = profile__placeholder(p, TAG_OFFCPU_CAPPED, 0);
	assert_true(ph > 0);
	capped = (uint64_t)ph;
	assert_int_equal(profile__add_group_values(p, 0, &capped, 1, labels, 2, 0, 900), 0);
	assert_true(profile__placeholder(p, TAG_OFFCPU_EXITED, 0) != ph);
	assert_string_equal(location_tag_name(TAG_OFFCPU_CAPPED),
			    "[off-CPU samples over the rate cap]");
	assert_string_equal(location_tag_name(TAG_OFFCPU_EXITED),
			    "[short off-CPU waits before exit]");
	assert_int_equal(p->total_offcpu_ns, 6500900);
	assert_int_equal(p->total_count, 0);

	pb = round_trip(p, 6);
	assert_int_equal(pb->n_sample_type, 1);
	assert_string_equal(pstr(pb, pb->sample_type[0]->type), "offcpu");
	assert_string_equal(pstr(pb, pb->sample_type[0]->unit), "nanoseconds");
	assert_null(pb->period_type);
	assert_int_equal(pb->period, 1);
	assert_int_equal(pb->default_sample_type, 0);
	assert_int_equal(pb->time_nanos, 1764441290000000000LL);
	assert_int_equal(pb->duration_nanos, 10000000000LL);
	assert_int_equal(pb->n_sample, 2);
	assert_int_equal(pb->sample[0]->n_value, 1);
	assert_int_equal(pb->sample[0]->value[0], 6500000);
	assert_int_equal(pb->sample[0]->n_label, 2);
	assert_int_equal(pb->sample[1]->n_value, 1);
	assert_int_equal(pb->sample[1]->value[0], 900);
	/* The placeholder: no mapping, one Line of a function named after it. */
	assert_int_equal(pb->sample[1]->n_location_id, 1);
	l = pb->location[pb->sample[1]->location_id[0] - 1];
	assert_int_equal(l->mapping_id, 0);
	assert_int_equal(l->n_line, 1);
	assert_string_equal(pstr(pb, pb->function[l->line[0]->function_id - 1]->name),
			    "[off-CPU samples over the rate cap]");
	perftools__profiles__profile__free_unpacked(pb, NULL);
	profile__free(p);
}

UNIT_MAIN("profile", cmocka_unit_test(test_strings), cmocka_unit_test(test_round_trip),
	  cmocka_unit_test(test_comments), cmocka_unit_test(test_caps), cmocka_unit_test(test_top),
	  cmocka_unit_test(test_group_values_merge), cmocka_unit_test(test_cpu_offcpu_types),
	  cmocka_unit_test(test_offcpu_only_type))
