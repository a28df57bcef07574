/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTML page of `ignis report` and `ignis diff`: one self-contained file (no network access
 * when opened) with the flame graph (d3-flame-graph), the sortable top table and, for a report,
 * the timeline whose range selection redraws the flame graph. The page, its script and style
 * and the libraries it draws with (d3 and d3-flame-graph from the npm registry, with their
 * licences) are embedded in the binary at build time; the C side only writes the data.
 *
 * The data is one JSON document (version 1), written by the caller between
 * <script id="ignis-data" type="application/json"> and </script>:
 *
 *   {
 *     "version": 1,
 *     "kind": "report" | "diff",
 *     "title": "...",
 *     "type": "cpu" | "offcpu",
 *     "unit": "samples" | "nanoseconds",  what a value counts
 *     "period_ns": N,                      cpu: the time one sample stands for (0: unknown)
 *     "hosts": ["host", ...],
 *     "summary": { "windows": N, "samples": N, "start_ms": N, "end_ms": N },
 *     "frames": [[name, binary, file, line], ...],   a frame's id is its index; binary and
 *                                                    file "" and line 0 when unknown
 *     "stacks": [[frame id, ...], ...],              root first; a stack's id is its index
 *     "buckets": [[start_ms, duration_ms, windows, [stack id, value, stack id, value, ...]],
 *                 ...],                              report: the timeline, in time order
 *     "base": { "label": "...", "total": N, "stacks": [stack id, value, ...] },   diff only
 *     "new":  { "label": "...", "total": N, "stacks": [stack id, value, ...] }    diff only
 *   }
 *
 * Times are Unix milliseconds. In a diff, "buckets" is empty; the flame graph is NEW's, each
 * frame coloured by its change against BASE scaled to NEW's total (red: more, blue: less).
 */
#ifndef IGNIS_REPORT_HTML_H
#define IGNIS_REPORT_HTML_H

#include <stdio.h>

#include "common/ignis.h"

/* Writes the JSON data document to out; returns 0 or -errno. */
typedef int (*report_html_data_fn)(FILE *out, void *ctx);

/*
 * Write the page to out: the embedded template with title (HTML-escaped here) and, inside the
 * data element, what write_data writes. write_data must not write "</" (JSON lets "<\/" stand
 * for it). Returns 0, write_data's error, or -EIO when out fails.
 */
int report_html_write(FILE *out, const char *title, report_html_data_fn write_data,
		      void *ctx) __must_check;

#endif /* IGNIS_REPORT_HTML_H */
