/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `ignis diff BASE NEW`: what changed between two sets of windows of one report (side 0 is
 * BASE, side 1 NEW). Each function's share of its side's total is compared, by self and by
 * total; the sides are normalized by their totals, so a longer NEW is not a regression.
 *
 * The noise floor: a function's share in a side is a binomial proportion of that side's
 * samples, so the difference of the two has a standard error of
 * sqrt(p (1 - p) (1/N_base + 1/N_new)) with p pooled (the two-proportion z-test). A change is
 * reported only when it is at least z_min standard errors and min_points percentage points.
 * Off-CPU values are nanoseconds, not samples: N is taken as the time over 10 ms (the agent's
 * default --off-cpu-period), one sample per period.
 */
#ifndef IGNIS_REPORT_DIFF_H
#define IGNIS_REPORT_DIFF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/ignis.h"

struct report;
struct render_opts;

struct diff_opts {
	double z_min;	   /* standard errors a change must reach (default 4) */
	double min_points; /* percentage points a change must reach (default 0.5) */
	unsigned int top;  /* rows of each table */
	const char *base_label, *new_label;
};

struct diff_change {
	uint32_t frame;
	uint64_t base, new_;	  /* values */
	double base_pct, new_pct; /* shares of each side's total, in % */
	double delta;		  /* new_pct - base_pct, percentage points */
	double z;		  /* delta in standard errors (0 when both sides are 0) */
	bool significant;	  /* past both floors */
};

/*
 * The changes of every frame with a value on either side, by self (by_total false) or total,
 * sorted by delta, largest increase first. *out is malloc'd (the caller frees), *nr its
 * length. Returns 0 or -ENOMEM.
 */
int report_diff(const struct report *r, bool by_total, const struct diff_opts *o,
		struct diff_change **out, size_t *nr) __must_check;

/* A --fail-if condition: "[self:|total:]GLOB>+N%" (share up by more than N points) or
 * "[self:|total:]GLOB<-N%" (down by more than N points); total when neither is given. */
struct diff_gate {
	char glob[256]; /* fnmatch(3) on the function name; "*" is any */
	bool by_total;
	double points; /* > 0: a rise past it trips; < 0: a fall past it */
	const char *text;
};

/* Parse s (borrowed into g->text). Returns 0 or -EINVAL. */
int diff_gate_parse(const char *s, struct diff_gate *g) __must_check;

/*
 * Check the gates; a gate trips on a significant change past its threshold. Prints each
 * tripped gate on out. Returns how many tripped, or -ENOMEM.
 */
int diff_gates_check(const struct report *r, const struct diff_opts *o,
		     const struct diff_gate *gates, size_t nr, FILE *out) __must_check;

/* The diff as text or Markdown, or as the HTML page (a differential flame graph). Return 0 or
 * -errno. */
int diff_render_text(FILE *out, const struct report *r, const struct diff_opts *o,
		     const struct render_opts *ro, bool markdown) __must_check;
int diff_render_html(FILE *out, const struct report *r, const struct diff_opts *o,
		     const struct render_opts *ro) __must_check;

#endif /* IGNIS_REPORT_DIFF_H */
