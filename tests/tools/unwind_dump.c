// SPDX-License-Identifier: Apache-2.0
/*
 * unwind_dump FILE... : build each file's unwind table with the symbolizer and print one
 * summary line per file (FDEs, rows, the CFI bytes they came from, build time); with -r,
 * every row as well. Used by the tests (rows checked against readelf's own interpretation)
 * and the benchmark (table build time and size).
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../symbolizer/symbolizer.h"

static const char *const cfa_names[] = { "none", "rsp", "rbp", "plt", "outermost", "unsupported",
					 "signal" };
static const char *const rbp_names[] = { "same", "cfa", "undefined" };

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int i = 1, status = 0;
	int rows = 0;

	if (argc > 1 && !strcmp(argv[1], "-r")) {
		rows = 1;
		i++;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: unwind_dump [-r] FILE...\n");
		return 2;
	}
	for (; i < argc; i++) {
		struct sym_unwind_table t;
		double t0, t1;
		int fd = open(argv[i], O_RDONLY | O_CLOEXEC), err;
		size_t n, unsupported = 0;

		if (fd < 0) {
			perror(argv[i]);
			status = 1;
			continue;
		}
		t0 = now_s();
		err = sym_unwind_table__build(fd, NULL, 0, &t);
		t1 = now_s();
		close(fd);
		if (err) {
			printf("%s: error %s\n", argv[i], strerror(-err));
			status = 1;
			continue;
		}
		for (n = 0; n < t.nr_rows; n++)
			unsupported += t.rows[n].cfa_rule == SYM_CFA_UNSUPPORTED;
		printf("%s: fdes=%u fde_errors=%u rows=%zu unsupported=%zu cfi_bytes=%llu "
		       "source=%s build_ms=%.3f\n",
		       argv[i], t.fdes, t.fde_errors, t.nr_rows, unsupported,
		       (unsigned long long)t.cfi_bytes, t.debug_frame ? "debug_frame" : "eh_frame",
		       (t1 - t0) * 1e3);
		for (n = 0; rows && n < t.nr_rows; n++) {
			const struct sym_unwind_row *r = &t.rows[n];

			printf("%016llx cfa=%s%+d rbp=%s%+d%s\n", (unsigned long long)r->pc,
			       cfa_names[r->cfa_rule], r->cfa_off, rbp_names[r->rbp_rule],
			       r->rbp_off, r->cfa_rule == SYM_CFA_PLT ? " plt" : "");
		}
		sym_unwind_table__fini(&t);
	}
	return status;
}
