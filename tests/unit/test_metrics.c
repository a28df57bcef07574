// SPDX-License-Identifier: Apache-2.0
/*
 * /metrics (agent/operate/metrics.c): every row of the counter table (stats.h) with its family's help
 * and type, once per family; and the health check.
 */
#include <linux/types.h>

#include "unit.h"

#include "../../agent/operate/metrics.h"
#include "../../agent/operate/stats.h"

/* Distinct values, so that a row printed under another's name shows. */
static void fill(struct metrics_snapshot *snap)
{
	size_t i;

	memset(snap, 0, sizeof(*snap));
	for (i = 0; i < CNT_NR; i++)
		snap->c.v[i] = 1000003 * (i + 1);
	snap->c.v[CNT_CPUS] = 2;
	snap->c.v[CNT_CPUS_DETACHED] = 0;
}

static const char *family_help(size_t row)
{
	size_t i;

	for (i = 0; i < CNT_NR; i++)
		if (!strcmp(stat_defs[i].metric, stat_defs[row].metric))
			return stat_defs[i].help;
	return NULL;
}

static void test_every_row_in_metrics(void **state)
{
	struct metrics_snapshot snap;
	char *text = NULL, line[512];
	long len;
	size_t i;

	(void)state;
	fill(&snap);
	len = metrics_format(&snap, "1.2.3", &text);
	assert_true(len > 0);
	for (i = 0; i < CNT_NR; i++) {
		const struct stat_def *d = &stat_defs[i];
		const char *help = family_help(i);
		bool counter = d->kind == STAT_KIND_SUM || d->kind == STAT_KIND_TOTAL;

		/* Prometheus names: the ignis_ prefix, _total exactly for counters. */
		assert_int_equal(strncmp(d->metric, "ignis_", 6), 0);
		assert_int_equal(counter, strlen(d->metric) > 6 &&
						  !strcmp(d->metric + strlen(d->metric) - 6, "_total"));
		/* The family's first row carries a help text, and it is printed. */
		assert_non_null(help);
		assert_true(strlen(help) > 10);
		snprintf(line, sizeof(line), "# HELP %s %s\n", d->metric, help);
		assert_non_null(strstr(text, line));
		snprintf(line, sizeof(line), "# TYPE %s %s\n", d->metric,
			 counter ? "counter" : "gauge");
		assert_non_null(strstr(text, line));
		/* The row itself, with its own value: seconds for a family kept in ns. */
		snprintf(line, sizeof(line), "\n%s%s%s%s ", d->metric, d->label[0] ? "{" : "",
			 d->label, d->label[0] ? "}" : "");
		if (strstr(d->metric, "_seconds"))
			snprintf(line + strlen(line), sizeof(line) - strlen(line), "%.9f\n",
				 (double)snap.c.v[i] / 1e9);
		else
			snprintf(line + strlen(line), sizeof(line) - strlen(line), "%llu\n",
				 (unsigned long long)snap.c.v[i]);
		if (!strstr(text, line))
			fail_msg("row %zu (%s{%s}) missing from /metrics:\n%s", i, d->metric,
				 d->label, text);
	}
	free(text);
}

/* A family's help and type come once, however many rows it has and wherever they stand. */
static void test_families_once(void **state)
{
	struct metrics_snapshot snap;
	char *text = NULL, line[512];
	const char *p;
	size_t i, n;

	(void)state;
	fill(&snap);
	assert_true(metrics_format(&snap, "1.2.3", &text) > 0);
	for (i = 0; i < CNT_NR; i++) {
		snprintf(line, sizeof(line), "# TYPE %s ", stat_defs[i].metric);
		for (n = 0, p = text; (p = strstr(p, line)); p++)
			n++;
		assert_int_equal(n, 1);
	}
	free(text);
}

static void test_health(void **state)
{
	struct metrics_snapshot snap = { 0 };
	char reason[128];

	(void)state;
	snap.interval_ns = 10 * NSEC_PER_SEC;
	snap.last_drain_ns = 100 * NSEC_PER_SEC;
	assert_false(metrics_healthy(&snap, snap.last_drain_ns, reason, sizeof(reason)));
	assert_non_null(strstr(reason, "no CPU"));
	snap.c.v[CNT_CPUS] = 2;
	assert_true(metrics_healthy(&snap, snap.last_drain_ns + 39 * NSEC_PER_SEC, reason,
				    sizeof(reason)));
	assert_false(metrics_healthy(&snap, snap.last_drain_ns + 41 * NSEC_PER_SEC, reason,
				     sizeof(reason)));
	snap.c.v[CNT_CPUS_DETACHED] = 1;
	assert_false(metrics_healthy(&snap, snap.last_drain_ns, reason, sizeof(reason)));
	assert_non_null(strstr(reason, "1 CPU"));
}

UNIT_MAIN("metrics", cmocka_unit_test(test_every_row_in_metrics),
	  cmocka_unit_test(test_families_once), cmocka_unit_test(test_health))
