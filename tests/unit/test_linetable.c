// SPDX-License-Identifier: Apache-2.0
/*
 * Python line tables (agent/python/linetable.c) against the interpreters themselves: every
 * code object of tests/data/src/pylines.py as each CPython under test compiled it, dumped
 * with the line of every code unit by tests/tools/dump_linetables.py at build time
 * (tests/tests.mk); every unit is decoded and compared. Then hostile tables: cut short,
 * garbage, huge deltas, never a read past the end (ASan in the san build).
 */
#include "unit.h"

#include "../../agent/python/linetable.h"

struct dump_stats {
	unsigned codes, units, no_line, long_tables;
};

static void check_dump(const char *file, unsigned major, unsigned minor, struct dump_stats *st)
{
	enum linetable_kind kind;
	char *buf = NULL, *save, *tok;
	size_t cap = 0;
	FILE *f = fopen(file, "r");

	assert_non_null(f);
	assert_int_equal(linetable_kind_for(major, minor, &kind), 0);
	while (getline(&buf, &cap, f) > 0) {
		char ver[16], name[256];
		uint8_t *table;
		size_t len, i;
		long first, units, u;
		const char *hex;

		tok = strtok_r(buf, " \n", &save);
		assert_string_equal(tok, "code");
		snprintf(ver, sizeof(ver), "%s", strtok_r(NULL, " \n", &save));
		snprintf(name, sizeof(name), "%s", strtok_r(NULL, " \n", &save));
		first = strtol(strtok_r(NULL, " \n", &save), NULL, 10);
		hex = strtok_r(NULL, " \n", &save);
		units = strtol(strtok_r(NULL, " \n", &save), NULL, 10);
		len = strcmp(hex, "-") ? strlen(hex) / 2 : 0;
		table = malloc(len + 1);
		assert_non_null(table);
		for (i = 0; i < len; i++)
			assert_int_equal(sscanf(hex + 2 * i, "%2hhx", &table[i]), 1);
		if (len > 500)
			st->long_tables++;
		for (u = 0; u < units; u++) {
			long want = strtol(strtok_r(NULL, " \n", &save), NULL, 10);
			int32_t line = 0;
			int err = linetable_line(kind, table, len, (int32_t)first, (uint32_t)u, &line);

			if (want < 0) {
				if (err != -ENOENT)
					fail_msg("%s %s %s unit %ld: line %d (err %d), want none", file,
						 ver, name, u, line, err);
				st->no_line++;
			} else if (err || line != want) {
				fail_msg("%s %s %s unit %ld: line %d (err %d), want %ld", file, ver,
					 name, u, line, err, want);
			}
			st->units++;
		}
		/* Past the bytecode: 3.8-3.9 repeat the last line, later ones have none. */
		free(table);
		st->codes++;
	}
	free(buf);
	fclose(f);
}

static void check_version(const char *file, unsigned minor)
{
	struct dump_stats st = { 0 };

	check_dump(file, 3, minor, &st);
	print_message("%s: %u code objects, %u units (%u without a line), %u tables > 500 B\n",
		      file, st.codes, st.units, st.no_line, st.long_tables);
	assert_true(st.codes >= 15);
	assert_true(st.long_tables >= 1);
}

static void test_py38(void **state)
{
	(void)state;
	check_version(FIXTURE("pylines-3.8.18.txt"), 8);
}

static void test_py39(void **state)
{
	(void)state;
	check_version(FIXTURE("pylines-3.9.18.txt"), 9);
}

static void test_py310(void **state)
{
	(void)state;
	check_version(FIXTURE("pylines-3.10.13.txt"), 10);
}

static void test_py311(void **state)
{
	(void)state;
	check_version(FIXTURE("pylines-3.11.7.txt"), 11);
}

static void test_py311_debian(void **state)
{
	(void)state;
	check_version(FIXTURE("pylines-system.txt"), 11);
}

static void test_py312(void **state)
{
	(void)state;
	check_version(FIXTURE("pylines-3.12.1.txt"), 12);
}

static void test_py313(void **state)
{
	(void)state;
	check_version(FIXTURE("pylines-3.13.0.txt"), 13);
}

static void test_kinds(void **state)
{
	enum linetable_kind k;

	(void)state;
	assert_int_equal(linetable_kind_for(3, 7, &k), -ENOTSUP);
	assert_int_equal(linetable_kind_for(3, 14, &k), -ENOTSUP);
	assert_int_equal(linetable_kind_for(2, 7, &k), -ENOTSUP);
	assert_int_equal(linetable_kind_for(3, 9, &k), 0);
	assert_int_equal(k, LINETABLE_LNOTAB);
	assert_int_equal(linetable_kind_for(3, 10, &k), 0);
	assert_int_equal(k, LINETABLE_PAIRS);
	assert_int_equal(linetable_kind_for(3, 13, &k), 0);
	assert_int_equal(k, LINETABLE_LOCATIONS);
}

/* Every prefix of every byte value as a table, each copied to a buffer of its exact size
 * so that ASan sees a read past the end. */
static void test_hostile(void **state)
{
	static const enum linetable_kind kinds[] = { LINETABLE_LNOTAB, LINETABLE_PAIRS,
						     LINETABLE_LOCATIONS };
	uint8_t pattern[64];
	unsigned k, len, b, u;
	int32_t line;
	int err;

	(void)state;
	for (k = 0; k < ARRAY_SIZE(kinds); k++) {
		for (b = 0; b < 256; b++) {
			for (len = 0; len <= 9; len++) {
				uint8_t *t = malloc(len ? len : 1);

				assert_non_null(t);
				memset(t, b, len);
				for (u = 0; u < 40; u += 3) {
					err = linetable_line(kinds[k], t, len, 1, u, &line);
					assert_true(err == 0 || err == -ENOENT || err == -EINVAL);
				}
				free(t);
			}
		}
		for (b = 0; b < 2000; b++) {
			uint8_t *t = malloc(sizeof(pattern));

			for (len = 0; len < sizeof(pattern); len++)
				pattern[len] = (uint8_t)((b * 2654435761U) >> (len % 24));
			memcpy(t, pattern, sizeof(pattern));
			for (u = 0; u < 200; u += 7) {
				err = linetable_line(kinds[k], t, sizeof(pattern), 100, u, &line);
				assert_true(err == 0 || err == -ENOENT || err == -EINVAL);
			}
			free(t);
		}
	}
	assert_int_equal(linetable_line(LINETABLE_LNOTAB, NULL, 4, 1, 0, &line), -EINVAL);
	assert_int_equal(linetable_line(LINETABLE_LNOTAB, NULL, 0, 7, 3, &line), 0);
	assert_int_equal(line, 7);
}

/* Hand-made tables of each format: the documented cases, one each. */
static void test_formats(void **state)
{
	/* lnotab: +2 bytes line +1, +4 bytes line -3 (signed), then a byte increment of 0. */
	static const uint8_t lnotab[] = { 2, 1, 4, 0xfd, 0, 5 };
	/* 3.10 pairs: [0,4) line +1, [4,6) no line, [6,6) +2 (empty), [6,10) +0. */
	static const uint8_t pairs[] = { 4, 1, 2, 0x80, 0, 2, 4, 0 };
	/* locations: short form 2 units; one-line +2 for 1 unit (2 column bytes); none for 3
	 * units; no-column with svarint -5 (0x0b) for 1 unit; long form +64 (svarint 128 =
	 * 0x40|0, 0x02) with end line, columns for 8 units. */
	static const uint8_t loc[] = { 0x80 | 0 << 3 | 1, 0x12,	      0x80 | 12 << 3 | 0, 4, 9,
				       0x80 | 15 << 3 | 2, 0x80 | 13 << 3 | 0, 0x0b,
				       0x80 | 14 << 3 | 7, 0x40,      0x02,   0,     1, 5 };
	int32_t line;

	(void)state;
	assert_int_equal(linetable_line(LINETABLE_LNOTAB, lnotab, sizeof(lnotab), 10, 0, &line), 0);
	assert_int_equal(line, 10);
	assert_int_equal(linetable_line(LINETABLE_LNOTAB, lnotab, sizeof(lnotab), 10, 1, &line), 0);
	assert_int_equal(line, 11);
	assert_int_equal(linetable_line(LINETABLE_LNOTAB, lnotab, sizeof(lnotab), 10, 3, &line), 0);
	assert_int_equal(line, 13); /* 11 - 3 + 5: the zero-byte pair applies at offset 6 */
	assert_int_equal(linetable_line(LINETABLE_LNOTAB, lnotab, sizeof(lnotab), 10, 99, &line), 0);
	assert_int_equal(line, 13);

	assert_int_equal(linetable_line(LINETABLE_PAIRS, pairs, sizeof(pairs), 10, 1, &line), 0);
	assert_int_equal(line, 11);
	assert_int_equal(linetable_line(LINETABLE_PAIRS, pairs, sizeof(pairs), 10, 2, &line),
			 -ENOENT);
	assert_int_equal(linetable_line(LINETABLE_PAIRS, pairs, sizeof(pairs), 10, 4, &line), 0);
	assert_int_equal(line, 13);
	assert_int_equal(linetable_line(LINETABLE_PAIRS, pairs, sizeof(pairs), 10, 5, &line),
			 -ENOENT);

	assert_int_equal(linetable_line(LINETABLE_LOCATIONS, loc, sizeof(loc), 10, 1, &line), 0);
	assert_int_equal(line, 10);
	assert_int_equal(linetable_line(LINETABLE_LOCATIONS, loc, sizeof(loc), 10, 2, &line), 0);
	assert_int_equal(line, 12);
	assert_int_equal(linetable_line(LINETABLE_LOCATIONS, loc, sizeof(loc), 10, 4, &line),
			 -ENOENT);
	assert_int_equal(linetable_line(LINETABLE_LOCATIONS, loc, sizeof(loc), 10, 6, &line), 0);
	assert_int_equal(line, 7);
	assert_int_equal(linetable_line(LINETABLE_LOCATIONS, loc, sizeof(loc), 10, 14, &line), 0);
	assert_int_equal(line, 71);
	assert_int_equal(linetable_line(LINETABLE_LOCATIONS, loc, sizeof(loc), 10, 15, &line),
			 -ENOENT);
	/* Cut inside the long form's varint; a first byte without the header bit. */
	assert_int_equal(linetable_line(LINETABLE_LOCATIONS, loc, 10, 10, 14, &line), -EINVAL);
	assert_int_equal(linetable_line(LINETABLE_LOCATIONS, loc + 1, 3, 10, 0, &line), -EINVAL);
}

UNIT_MAIN("linetable", cmocka_unit_test(test_kinds), cmocka_unit_test(test_formats),
	  cmocka_unit_test(test_hostile), cmocka_unit_test(test_py38), cmocka_unit_test(test_py39),
	  cmocka_unit_test(test_py310), cmocka_unit_test(test_py311),
	  cmocka_unit_test(test_py311_debian), cmocka_unit_test(test_py312),
	  cmocka_unit_test(test_py313))
