/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A report's outputs: plain text for a terminal, Markdown for tickets and assistants, folded
 * stacks (Brendan Gregg's FlameGraph format: "root;...;leaf value" per line) and the HTML
 * page's data (html.h). All of them are deterministic for the same files: times print in UTC,
 * ties sort by name.
 */
#ifndef IGNIS_REPORT_RENDER_H
#define IGNIS_REPORT_RENDER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/ignis.h"

struct report;
struct report_load_stats;

struct render_opts {
	unsigned int top;		       /* rows of each top table */
	unsigned int paths;		       /* heaviest paths shown, for the top by self */
	size_t max_stacks;		       /* HTML: the heaviest stacks kept; the rest fold
						* into "[other stacks]" */
	const struct report_load_stats *stats; /* files read and skipped; NULL: not shown */
	const char *title;		       /* HTML page title; NULL: made from the data */
};

/* Text (markdown false) or Markdown. Returns 0 or -errno (-ENOMEM, -EIO). */
int report_render_text(FILE *out, const struct report *r, const struct render_opts *o,
		       bool markdown) __must_check;

/* Folded stacks of every window, one line per stack, sorted. Returns 0 or -errno. */
int report_render_folded(FILE *out, const struct report *r) __must_check;

/* The self-contained HTML page, timeline included. Returns 0 or -errno. */
int report_render_html(FILE *out, const struct report *r, const struct render_opts *o) __must_check;

/* Shared with the diff: */

/* "2026-12-02 06:00:00" (UTC) of t_ns into buf. */
const char *render_time(uint64_t t_ns, char *buf, size_t size);

/* A value of r's type for people: "1,234" samples, or a time for off-CPU nanoseconds. */
const char *render_value(const struct report *r, uint64_t v, char *buf, size_t size);

struct report_frame;

/* Markdown: s as inline code, '|' escaped for a table cell. */
void render_md_code(FILE *out, const char *s);

/* Markdown: a frame's "`name` | `binary` |" cells, ending the row. */
void render_md_frame(FILE *out, const struct report_frame *f);

/* JSON string literal of s (quotes included), with "</" written "<\/" for an HTML page. */
void render_json_string(FILE *out, const char *s);

/*
 * The "frames" and "stacks" members of the page's data, each followed by a comma: every
 * frame, then one more, "[other stacks]"; the stacks that stack_map keeps (stack_map[i] is
 * the new id + 1, 0 for a stack folded away; NULL keeps all, ids unchanged), nr_kept of
 * them, then one stack of the "[other stacks]" frame (id nr_kept) that the folded stacks'
 * values go to. Returns 0 or -ENOMEM.
 */
/*
 * Which stacks a page keeps: those with a value, the heaviest max of them. Fills stack_map
 * (r->nr_stacks entries) as render_json_tables() reads it. Returns how many are kept, or
 * -ENOMEM.
 */
ssize_t render_keep_stacks(const struct report *r, const uint64_t *values, size_t max,
			   uint32_t *stack_map) __must_check;

int render_json_tables(FILE *out, const struct report *r, const uint32_t *stack_map,
		       size_t nr_kept) __must_check;

#endif /* IGNIS_REPORT_RENDER_H */
