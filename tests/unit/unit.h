/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers for the unit tests: cmocka, and the reference listings of the ELF fixtures that
 * binutils made at build time (tests/tests.mk).
 */
#ifndef IGNIS_TESTS_UNIT_H
#define IGNIS_TESTS_UNIT_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* main() of a test file: run the cmocka tests given (cmocka_unit_test(...), ...), in order,
 * as the group name (the module they test). */
#define UNIT_MAIN(name, ...)                                                                      \
	int main(void)                                                                            \
	{                                                                                         \
		const struct CMUnitTest tests[] = { __VA_ARGS__ };                                \
		return cmocka_run_group_tests_name(name, tests, NULL, NULL);                      \
	}

#ifndef FIXTURE_DIR
#error "FIXTURE_DIR must name the folder of the built fixtures"
#endif

#define FIXTURE(name) FIXTURE_DIR "/" name

struct nm_symbol {
	uint64_t addr;
	uint64_t size;		/* 0 when nm printed none */
	char type;
	char name[128];
};

/* Find `name` in the `nm -S` listing of fixture `path`. Returns 0 or -1. */
static inline int nm_lookup(const char *path, const char *name, struct nm_symbol *out)
{
	char listing[512], line[512];
	FILE *f;
	int ret = -1;

	snprintf(listing, sizeof(listing), "%s.nm", path);
	f = fopen(listing, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		struct nm_symbol s = { 0 };
		unsigned long long a, z;
		char t, n[128];

		if (sscanf(line, "%llx %llx %c %127s", &a, &z, &t, n) == 4) {
			s.addr = a;
			s.size = z;
		} else if (sscanf(line, "%llx %c %127s", &a, &t, n) == 3) {
			s.addr = a;
		} else {
			continue;
		}
		s.type = t;
		snprintf(s.name, sizeof(s.name), "%s", n);
		if (!strcmp(s.name, name)) {
			*out = s;
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

/* The build ID readelf printed for fixture `path`, "" if none. */
static inline void fixture_build_id(const char *path, char *buf, size_t size)
{
	char listing[512];
	FILE *f;

	snprintf(listing, sizeof(listing), "%s.buildid", path);
	buf[0] = '\0';
	f = fopen(listing, "r");
	if (!f)
		return;
	if (fgets(buf, (int)size, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

#endif
