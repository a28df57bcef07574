// SPDX-License-Identifier: Apache-2.0
/*
 * The drain's conversions (drain_internal.h): BPF's records to the agent's plain data. The
 * map reading itself needs a kernel; the integration tests cover it.
 */
#include <linux/types.h>

#include "unit.h"

#include "../../agent/collect/drain_internal.h"
#include "../../bpf/profiler.h"

static void test_sample_of(void **state)
{
	struct ignis_sample_key k;
	struct drained_sample s;

	(void)state;
	memset(&k, 0, sizeof(k));
	k.tgid = 4242;
	k.pid = 4243;
	k.start_time = 123456789012ULL;
	k.exec_id = 7;
	k.flags = SAMPLE_F_KTHREAD | SAMPLE_F_KSTACK_ERR;
	k.user_stack = (struct ignis_stack_id){ .lo = 1, .hi = 2 };
	k.kernel_stack = (struct ignis_stack_id){ .lo = 3, .hi = 4 };
	memset(k.comm, 'x', sizeof(k.comm)); /* a full comm, no NUL: kept, terminated */
	drain_sample_of(&k, 99, &s);
	assert_int_equal(s.tgid, 4242);
	assert_int_equal(s.pid, 4243);
	assert_int_equal(s.start_time, 123456789012ULL);
	assert_int_equal(s.exec_id, 7);
	assert_int_equal(s.flags, SAMPLE_KTHREAD | SAMPLE_KSTACK_ERR);
	assert_int_equal(s.user_stack.lo, 1);
	assert_int_equal(s.user_stack.hi, 2);
	assert_int_equal(s.kernel_stack.lo, 3);
	assert_int_equal(s.kernel_stack.hi, 4);
	assert_int_equal(s.count, 99);
	assert_int_equal(strlen(s.comm), COMM_LEN - 1);
}

/* The sample log's records: one sample per distinct key, counted; keys that differ in any
 * byte (here the thread name only) stay apart, whatever the records' order. */
static void test_log_records(void **state)
{
	struct ignis_sample_key recs[6], a, b, c;
	struct drained_window w;
	uint64_t count_a = 0, count_b = 0, count_c = 0;
	size_t i;

	(void)state;
	memset(&a, 0, sizeof(a));
	a.tgid = a.pid = 100;
	a.start_time = 5;
	a.user_stack = (struct ignis_stack_id){ .lo = 11, .hi = 12 };
	strcpy(a.comm, "worker");
	b = a;
	b.pid = 101;
	c = a;
	strcpy(c.comm, "worker2");
	recs[0] = a, recs[1] = b, recs[2] = a, recs[3] = c, recs[4] = a, recs[5] = b;
	drained_window__init(&w);
	assert_int_equal(drain_log_records(recs, 6, &w), 0);
	assert_int_equal(w.nr_samples, 3);
	assert_int_equal(w.nr_counted, 6);
	for (i = 0; i < w.nr_samples; i++) {
		const struct drained_sample *s = &w.samples[i];

		assert_int_equal(s->tgid, 100);
		assert_int_equal(s->user_stack.lo, 11);
		if (s->pid == 101)
			count_b += s->count;
		else if (!strcmp(s->comm, "worker2"))
			count_c += s->count;
		else if (!strcmp(s->comm, "worker"))
			count_a += s->count;
	}
	assert_int_equal(count_a, 3);
	assert_int_equal(count_b, 2);
	assert_int_equal(count_c, 1);
	drained_window__fini(&w);

	drained_window__init(&w); /* none: nothing added */
	assert_int_equal(drain_log_records(recs, 0, &w), 0);
	assert_int_equal(w.nr_samples, 0);
	drained_window__fini(&w);
}

/* Every BPF counter lands in the table's row of the same name. */
static void test_counters_of(void **state)
{
	uint64_t stats[STAT_NR];
	struct counters c;
	size_t i;

	(void)state;
	for (i = 0; i < STAT_NR; i++)
		stats[i] = 1000 + i;
	memset(&c, 0xff, sizeof(c));
	drain_counters_of(stats, &c);
	assert_int_equal(c.v[CNT_SAMPLES], 1000 + STAT_SAMPLES);
	assert_int_equal(c.v[CNT_IDLE], 1000 + STAT_IDLE);
	assert_int_equal(c.v[CNT_DROP_COUNTS_FULL], 1000 + STAT_DROP_COUNTS_FULL);
	assert_int_equal(c.v[CNT_UNWIND_EXE_ONLY], 1000 + STAT_UNWIND_EXE_ONLY);
	for (i = 0; i < CNT_NR; i++)
		if (stat_defs[i].bpf)
			assert_true(c.v[i] >= 1000 && c.v[i] < 1000 + STAT_NR);
		else
			assert_int_equal(c.v[i], UINT64_MAX); /* agent rows untouched */
}

/* Stacks: trimmed to the depth limit; a second stack under one id is ignored. */
static void test_stacks(void **state)
{
	uint64_t ips[STACK_MAX_DEPTH + 5];
	struct stack_id id = { .lo = 5, .hi = 6 }, none = { 0 };
	const struct drained_stack *st;
	struct drained_window w;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ips) / sizeof(ips[0]); i++)
		ips[i] = 0x400000 + i;
	drained_window__init(&w);
	assert_int_equal(drained_window__add_stack(&w, &id, STACK_TABLES, ips, STACK_MAX_DEPTH + 5),
			 0);
	assert_int_equal(drained_window__add_stack(&w, &id, 0, ips + 1, 3), 0);
	st = drained_window__stack(&w, &id);
	assert_non_null(st);
	assert_int_equal(st->len, STACK_MAX_DEPTH);
	assert_int_equal(st->flags, STACK_TABLES);
	assert_int_equal(st->ips[0], 0x400000);
	assert_int_equal(w.nr_stack_frames, STACK_MAX_DEPTH);
	assert_null(drained_window__stack(&w, &none));
	drained_window__fini(&w);
}

/* Feed the parts of a stack of len frames (ips 0x1000 + i) whose parts are listed. */
static void feed_parts(struct stack_parts *p, struct drained_window *w, uint64_t lo, uint32_t len,
		       uint32_t flags, const int *parts, int nr)
{
	struct ignis_stack_part_key k;
	struct ignis_stack_part v;
	int i, j;

	for (i = 0; i < nr; i++) {
		memset(&k, 0, sizeof(k));
		memset(&v, 0, sizeof(v));
		k.id.lo = lo;
		k.id.hi = 7;
		k.part = (__u32)parts[i];
		v.len = parts[i] ? 0xdead : len; /* later parts' header: BPF's other bytes */
		v.flags = parts[i] ? 0xbeef : flags;
		for (j = 0; j < IGNIS_STACK_PART_FRAMES; j++)
			v.ips[j] = 0x1000 + (uint64_t)(parts[i] * IGNIS_STACK_PART_FRAMES + j);
		assert_int_equal(stack_parts__add(p, &k, &v, w), 0);
	}
}

static void assert_frames(const struct drained_window *w, uint64_t lo, uint32_t len, uint32_t flags)
{
	struct stack_id id = { .lo = lo, .hi = 7 };
	const struct drained_stack *st = drained_window__stack(w, &id);
	uint32_t i;

	assert_non_null(st);
	assert_int_equal(st->len, len);
	assert_int_equal(st->flags, flags);
	for (i = 0; i < len; i++)
		assert_int_equal(st->ips[i], 0x1000 + i);
}

/* A stacks map's parts, in any order, joined into whole stacks (bpf/profiler.h). */
static void test_stack_parts(void **state)
{
	static const int one[] = { 0 }, deep[] = { 5, 2, 0, 7, 1, 3, 6, 4 }, mid[] = { 2, 0, 3, 1 },
			 gap[] = { 0, 1, 3 }, orphans[] = { 1, 2 }, cut[] = { 0, 1 };
	struct stack_id orphan = { .lo = 5, .hi = 7 };
	struct stack_parts p;
	struct drained_window w;

	(void)state;
	drained_window__init(&w);
	stack_parts__init(&p);
	feed_parts(&p, &w, 1, 20, STACK_F_COMPLETE, one, 1);  /* one part */
	feed_parts(&p, &w, 2, 256, STACK_F_TABLES, deep, 8);  /* the deepest */
	feed_parts(&p, &w, 3, 100, 0, mid, 4);		      /* 4 parts */
	feed_parts(&p, &w, 4, 110, STACK_F_TABLES, gap, 3);   /* part 2 missing */
	feed_parts(&p, &w, 5, 0, 0, orphans, 2);	      /* no part 0 */
	feed_parts(&p, &w, 6, 32, STACK_F_TRUNCATED, cut, 2); /* cut by BPF, part 1 left */
	/* One part goes in at once; the others wait for the map's end. */
	assert_frames(&w, 1, 20, STACK_COMPLETE);
	assert_int_equal(hashmap__size(&w.stacks), 2);
	assert_int_equal(stack_parts__finish(&p, &w), 0);
	assert_frames(&w, 2, 256, STACK_TABLES);
	assert_frames(&w, 3, 100, 0);
	assert_frames(&w, 4, 64, STACK_TABLES | STACK_TRUNCATED);
	assert_null(drained_window__stack(&w, &orphan));
	assert_frames(&w, 6, 32, STACK_TRUNCATED);
	assert_int_equal(p.cut, 1);
	assert_int_equal(p.n, 0);
	stack_parts__fini(&p);
	drained_window__fini(&w);
}

UNIT_MAIN("drain", cmocka_unit_test(test_sample_of), cmocka_unit_test(test_log_records),
	  cmocka_unit_test(test_counters_of), cmocka_unit_test(test_stacks),
	  cmocka_unit_test(test_stack_parts))
