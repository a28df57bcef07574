// SPDX-License-Identifier: Apache-2.0
/* Splitting a window's profile per target and under a server's limits. */
#include <zlib.h>

#include "unit.h"

#include "../../agent/profile/profile.h"
#include "../../agent/profile/split.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile pb_profile;

struct fixture {
	struct profile *p;
	int64_t k_pid, k_tid, k_comm;
	uint64_t fn_loc[64]; /* location per function index */
};

/* The fixture's profile, of these sample types. */
static void setup_types(struct fixture *f, enum profile_types types)
{
	struct profile_opts o = { .types = types, .period_ns = 10000000,
				  .time_ns = 1764441290000000000ULL, .duration_ns = 10000000000ULL };
	struct profile_mapping m = { .memory_limit = UINT64_MAX, .has_functions = true };
	int64_t mapping;
	char name[32];
	int i;

	memset(f, 0, sizeof(*f));
	f->p = profile__new(&o);
	assert_non_null(f->p);
	assert_int_equal(profile__comment(f->p, "ignis test window"), 0);
	m.filename = profile__string(f->p, "/usr/bin/app");
	m.build_id = profile__string(f->p, "abcdef0123");
	mapping = profile__mapping(f->p, "abcdef0123", 10, &m);
	assert_true(mapping > 0);
	for (i = 0; i < 64; i++) {
		struct profile_line line = { 0 };
		int64_t fn, loc;

		snprintf(name, sizeof(name), "fn_%02d", i);
		fn = profile__function(f->p, name, name, "app.c", i);
		assert_true(fn > 0);
		line.function_id = (uint64_t)fn;
		line.line = 10 + i;
		loc = profile__add_location(f->p, (uint64_t)mapping, 0x1000 + 16 * (uint64_t)i, 0,
					    &line, 1);
		assert_true(loc > 0);
		f->fn_loc[i] = (uint64_t)loc;
	}
	f->k_pid = profile__string(f->p, "pid");
	f->k_tid = profile__string(f->p, "tid");
	f->k_comm = profile__string(f->p, "comm");
}

static void setup(struct fixture *f)
{
	setup_types(f, PROFILE_CPU);
}

/* A sample of group g in process pid: leaf function leaf called from fn_63. */
static void add(struct fixture *f, uint32_t g, int64_t pid, int leaf, const char *comm,
		uint64_t count)
{
	uint64_t locs[2] = { f->fn_loc[leaf], f->fn_loc[63] };
	struct profile_label l[3] = {
		{ .key = f->k_pid, .num = pid },
		{ .key = f->k_tid, .num = pid + 1 },
		{ .key = f->k_comm, .str = profile__string(f->p, comm) },
	};

	assert_int_equal(profile__add_group_sample(f->p, g, locs, 2, l, 3, count), 0);
}

/* As add(): count CPU samples and ns off CPU. */
static void add_values(struct fixture *f, uint32_t g, int64_t pid, int leaf, const char *comm,
		       uint64_t count, uint64_t ns)
{
	uint64_t locs[2] = { f->fn_loc[leaf], f->fn_loc[63] };
	struct profile_label l[3] = {
		{ .key = f->k_pid, .num = pid },
		{ .key = f->k_tid, .num = pid + 1 },
		{ .key = f->k_comm, .str = profile__string(f->p, comm) },
	};

	assert_int_equal(profile__add_group_values(f->p, g, locs, 2, l, 3, count, ns), 0);
}

static pb_profile *decode(const struct split_part *part, size_t *raw_len)
{
	uLongf cap = 64 << 20;
	uint8_t *raw = malloc(cap);
	z_stream zs = { 0 };
	pb_profile *pb;

	assert_true(part->len > 18 && part->data[0] == 0x1f && part->data[1] == 0x8b);
	assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = part->data;
	zs.avail_in = (uInt)part->len;
	zs.next_out = raw;
	zs.avail_out = (uInt)cap;
	assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
	*raw_len = zs.total_out;
	inflateEnd(&zs);
	assert_int_equal(*raw_len, part->raw_len);
	pb = perftools__profiles__profile__unpack(NULL, *raw_len, raw);
	free(raw);
	assert_non_null(pb);
	return pb;
}

/* Checks every decoded part must pass: dense ids, string 0, no pid/tid labels. */
static int64_t check_part(pb_profile *pb, const char *kept_label)
{
	int64_t total = 0;
	size_t i, j;

	assert_true(pb->n_string_table > 0);
	assert_string_equal(pb->string_table[0], "");
	for (i = 0; i < pb->n_mapping; i++)
		assert_int_equal(pb->mapping[i]->id, i + 1);
	for (i = 0; i < pb->n_location; i++)
		assert_int_equal(pb->location[i]->id, i + 1);
	for (i = 0; i < pb->n_function; i++)
		assert_int_equal(pb->function[i]->id, i + 1);
	assert_int_equal(pb->time_nanos, 1764441290000000000LL);
	assert_int_equal(pb->duration_nanos, 10000000000LL);
	assert_int_equal(pb->period, 10000000);
	for (i = 0; i < pb->n_sample; i++) {
		Perftools__Profiles__Sample *s = pb->sample[i];

		assert_int_equal(s->n_value, 2);
		assert_int_equal(s->value[1], s->value[0] * 10000000);
		total += s->value[0];
		for (j = 0; j < s->n_label; j++) {
			const char *key = pb->string_table[s->label[j]->key];

			assert_string_not_equal(key, "pid");
			assert_string_not_equal(key, "tid");
			assert_string_equal(key, kept_label ? kept_label : "(none)");
		}
		if (!kept_label)
			assert_int_equal(s->n_label, 0);
	}
	return total;
}

static const char *leaf_name(pb_profile *pb, const Perftools__Profiles__Sample *s)
{
	const Perftools__Profiles__Location *l = pb->location[s->location_id[0] - 1];

	return pb->string_table[pb->function[l->line[0]->function_id - 1]->name];
}

static void test_one_profile_per_target(void **state)
{
	const char *kept[] = { "comm" };
	struct split_opts o = { .gzip_level = 1 };
	struct split_result r = { 0 };
	struct fixture f;
	pb_profile *pb;
	size_t raw_len, i;

	(void)state;
	setup(&f);
	/* Target 0: two processes running the same code; target 1: another. */
	add(&f, 0, 100, 1, "nginx", 30);
	add(&f, 0, 101, 1, "nginx", 20);
	add(&f, 0, 101, 2, "nginx", 5);
	add(&f, 1, 200, 3, "cart", 7);
	add(&f, 1, 200, 3, "cart-worker", 1);

	assert_int_equal(profile_split(f.p, 3, &o, &r), 0); /* group 2 is empty: no part */
	assert_int_equal(r.nr, 2);
	assert_int_equal(r.split_groups, 0);
	assert_int_equal(r.folded_samples, 0);
	assert_int_equal(r.parts[0].group, 0);
	assert_int_equal(r.parts[0].samples, 55);
	pb = decode(&r.parts[0], &raw_len);
	/* pid/tid are gone, so both processes' fn_01 stacks merge into one sample. */
	assert_int_equal(check_part(pb, NULL), 55);
	assert_int_equal(pb->n_sample, 2);
	for (i = 0; i < pb->n_sample; i++)
		if (!strcmp(leaf_name(pb, pb->sample[i]), "fn_01"))
			assert_int_equal(pb->sample[i]->value[0], 50);
	assert_int_equal(pb->n_mapping, 1);
	assert_string_equal(pb->string_table[pb->mapping[0]->build_id], "abcdef0123");
	assert_int_equal(pb->n_comment, 1);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	assert_int_equal(r.parts[1].group, 1);
	split_result_fini(&r);

	/* With comm opted in, it stays a sample label (and separates the samples). */
	o.sample_labels = kept;
	o.nr_sample_labels = 1;
	assert_int_equal(profile_split(f.p, 2, &o, &r), 0);
	pb = decode(&r.parts[1], &raw_len);
	assert_int_equal(check_part(pb, "comm"), 8);
	assert_int_equal(pb->n_sample, 2);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	split_result_fini(&r);
	profile__free(f.p);
}

static void test_split_by_process_then_fold(void **state)
{
	struct split_opts o = { .gzip_level = 1, .max_samples = 4 };
	struct split_result r = { 0 };
	struct fixture f;
	int64_t total = 0;
	pb_profile *pb;
	size_t raw_len, i, j;
	bool other = false;

	(void)state;
	setup(&f);
	/* Target 0: 6 distinct stacks over two processes: two parts of 3. */
	for (i = 0; i < 3; i++) {
		add(&f, 0, 100, (int)i, "a", 10);
		add(&f, 0, 101, 10 + (int)i, "b", 10);
	}
	/* Target 1: one process with 6 distinct stacks: its coldest are folded. */
	add(&f, 1, 300, 20, "c", 50);
	add(&f, 1, 300, 21, "c", 40);
	add(&f, 1, 300, 22, "c", 30);
	add(&f, 1, 300, 23, "c", 2);
	add(&f, 1, 300, 24, "c", 1);
	add(&f, 1, 300, 25, "c", 1);

	assert_int_equal(profile_split(f.p, 2, &o, &r), 0);
	assert_int_equal(r.split_groups, 2);
	assert_int_equal(r.nr, 3);
	for (i = 0; i < 2; i++) {
		assert_int_equal(r.parts[i].group, 0);
		assert_int_equal(r.parts[i].folded, 0);
		pb = decode(&r.parts[i], &raw_len);
		assert_int_equal(pb->n_sample, 3);
		total += check_part(pb, NULL);
		perftools__profiles__profile__free_unpacked(pb, NULL);
	}
	assert_int_equal(total, 60);

	assert_int_equal(r.parts[2].group, 1);
	assert_int_equal(r.parts[2].samples, 124);
	/* 3 samples kept (hottest), the rest (4 samples of 3 stacks) folded. */
	assert_int_equal(r.parts[2].folded, 4);
	assert_int_equal(r.folded_samples, 4);
	pb = decode(&r.parts[2], &raw_len);
	assert_true(pb->n_sample <= 4);
	assert_int_equal(check_part(pb, NULL), 124);
	for (i = 0; i < pb->n_sample; i++) {
		const char *leaf = leaf_name(pb, pb->sample[i]);

		if (!strcmp(leaf, "[other stacks]")) {
			other = true;
			assert_int_equal(pb->sample[i]->value[0], 4);
			assert_int_equal(pb->sample[i]->n_location_id, 1);
			assert_int_equal(pb->location[pb->sample[i]->location_id[0] - 1]->mapping_id,
					 0);
		} else {
			assert_true(!strcmp(leaf, "fn_20") || !strcmp(leaf, "fn_21") ||
				    !strcmp(leaf, "fn_22"));
		}
	}
	assert_true(other);
	for (i = 0, j = 0; i < pb->n_comment; i++)
		if (strstr(pb->string_table[pb->comment[i]], "folded into [other stacks]"))
			j++;
	assert_int_equal(j, 1);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	split_result_fini(&r);
	profile__free(f.p);
}

static void test_byte_limit(void **state)
{
	struct split_opts o = { .gzip_level = 6, .max_bytes = 1500 };
	struct split_result r = { 0 };
	struct fixture f;
	pb_profile *pb;
	size_t raw_len;
	int i;

	(void)state;
	setup(&f);
	for (i = 0; i < 60; i++)
		add(&f, 0, 100, i, "big", (uint64_t)(100 - i));
	assert_int_equal(profile_split(f.p, 1, &o, &r), 0);
	assert_int_equal(r.nr, 1);
	assert_true(r.parts[0].raw_len <= 1500);
	assert_true(r.parts[0].folded > 0);
	pb = decode(&r.parts[0], &raw_len);
	assert_int_equal(check_part(pb, NULL), 60 * 100 - 59 * 60 / 2);
	assert_true(pb->n_sample < 60);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	split_result_fini(&r);
	profile__free(f.p);
}

/* The decoded sample types of pb, "type/unit" joined by ",", into buf. */
static const char *types_of(const pb_profile *pb, char *buf, size_t size)
{
	size_t i, o = 0;

	buf[0] = '\0';
	for (i = 0; i < pb->n_sample_type && o < size; i++)
		o += (size_t)snprintf(buf + o, size - o, "%s%s/%s", i ? "," : "",
				      pb->string_table[pb->sample_type[i]->type],
				      pb->string_table[pb->sample_type[i]->unit]);
	return buf;
}

/* The sum of value[i] over pb's samples, each of which has n values. */
static int64_t sum_values(const pb_profile *pb, size_t n, size_t i)
{
	int64_t total = 0;
	size_t j;

	for (j = 0; j < pb->n_sample; j++) {
		assert_int_equal(pb->sample[j]->n_value, n);
		total += pb->sample[j]->value[i];
	}
	return total;
}

/*
 * A server's series holds one profile type: a target whose samples are all CPU gets
 * samples and cpu, one whose samples are all off CPU gets offcpu alone (no period type), one
 * with both all four; totals are kept.
 */
static void test_offcpu_sample_types(void **state)
{
	struct split_opts o = { .gzip_level = 1 };
	struct split_result r = { 0 };
	struct fixture f;
	pb_profile *pb;
	char types[256];
	size_t raw_len;

	(void)state;
	setup_types(&f, PROFILE_CPU_OFFCPU);
	add(&f, 0, 100, 1, "nginx", 30);
	add(&f, 0, 101, 2, "nginx", 20);
	add_values(&f, 1, 100, 1, "nginx", 0, 5000000);
	add_values(&f, 1, 101, 3, "nginx", 0, 7000000);
	add_values(&f, 2, 300, 4, "cart", 4, 0);
	add_values(&f, 2, 300, 5, "cart", 0, 3000000);
	assert_int_equal(profile_split(f.p, 3, &o, &r), 0);
	assert_int_equal(r.nr, 3);

	assert_int_equal(r.parts[0].group, 0);
	assert_int_equal(r.parts[0].samples, 50);
	pb = decode(&r.parts[0], &raw_len);
	assert_string_equal(types_of(pb, types, sizeof(types)),
			    "samples/count,cpu/nanoseconds");
	assert_non_null(pb->period_type);
	assert_string_equal(pb->string_table[pb->period_type->type], "cpu");
	assert_int_equal(pb->default_sample_type, 0);
	assert_int_equal(check_part(pb, NULL), 50);
	assert_int_equal(sum_values(pb, 2, 1), 500000000);
	perftools__profiles__profile__free_unpacked(pb, NULL);

	assert_int_equal(r.parts[1].group, 1);
	assert_int_equal(r.parts[1].samples, 0);
	pb = decode(&r.parts[1], &raw_len);
	assert_string_equal(types_of(pb, types, sizeof(types)), "offcpu/nanoseconds");
	assert_null(pb->period_type);
	assert_int_equal(pb->period, 1);
	assert_int_equal(pb->n_sample, 2);
	assert_int_equal(sum_values(pb, 1, 0), 12000000);
	perftools__profiles__profile__free_unpacked(pb, NULL);

	assert_int_equal(r.parts[2].group, 2);
	assert_int_equal(r.parts[2].samples, 4);
	pb = decode(&r.parts[2], &raw_len);
	assert_string_equal(types_of(pb, types, sizeof(types)),
			    "samples/count,cpu/nanoseconds,offcpu/nanoseconds,wall/nanoseconds");
	assert_string_equal(pb->string_table[pb->default_sample_type], "cpu");
	assert_int_equal(sum_values(pb, 4, 0), 4);
	assert_int_equal(sum_values(pb, 4, 1), 40000000);
	assert_int_equal(sum_values(pb, 4, 2), 3000000);
	assert_int_equal(sum_values(pb, 4, 3), 43000000);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	split_result_fini(&r);
	profile__free(f.p);
}

/* An off-CPU target over the limits: its shortest waits fold into [other stacks], their time
 * kept and said in a comment. */
static void test_offcpu_fold(void **state)
{
	struct split_opts o = { .gzip_level = 1, .max_samples = 4 };
	struct split_result r = { 0 };
	struct fixture f;
	pb_profile *pb;
	char types[64];
	size_t raw_len, i;
	bool other = false, comment = false;

	(void)state;
	setup_types(&f, PROFILE_CPU_OFFCPU);
	add_values(&f, 0, 300, 20, "c", 0, 50000000);
	add_values(&f, 0, 300, 21, "c", 0, 40000000);
	add_values(&f, 0, 300, 22, "c", 0, 30000000);
	add_values(&f, 0, 300, 23, "c", 0, 2000);
	add_values(&f, 0, 300, 24, "c", 0, 1000);
	add_values(&f, 0, 300, 25, "c", 0, 500);
	assert_int_equal(profile_split(f.p, 1, &o, &r), 0);
	assert_int_equal(r.nr, 1);
	assert_int_equal(r.split_groups, 1);
	assert_int_equal(r.parts[0].folded, 0); /* no CPU samples to fold */
	pb = decode(&r.parts[0], &raw_len);
	assert_string_equal(types_of(pb, types, sizeof(types)), "offcpu/nanoseconds");
	assert_int_equal(pb->n_sample, 4);
	assert_int_equal(sum_values(pb, 1, 0), 120003500);
	for (i = 0; i < pb->n_sample; i++) {
		const char *leaf = leaf_name(pb, pb->sample[i]);

		if (!strcmp(leaf, "[other stacks]")) {
			other = true;
			assert_int_equal(pb->sample[i]->value[0], 3500);
		} else {
			/* The longest waits are kept. */
			assert_true(!strcmp(leaf, "fn_20") || !strcmp(leaf, "fn_21") ||
				    !strcmp(leaf, "fn_22"));
		}
	}
	assert_true(other);
	for (i = 0; i < pb->n_comment; i++)
		if (strstr(pb->string_table[pb->comment[i]], "3500 ns off CPU"))
			comment = true;
	assert_true(comment);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	split_result_fini(&r);
	profile__free(f.p);
}

UNIT_MAIN("split", cmocka_unit_test(test_one_profile_per_target),
	  cmocka_unit_test(test_split_by_process_then_fold), cmocka_unit_test(test_byte_limit),
	  cmocka_unit_test(test_offcpu_sample_types), cmocka_unit_test(test_offcpu_fold))
