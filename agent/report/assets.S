/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTML page's pieces (assets.h), embedded with .incbin. The Makefile passes the folders
 * to search with -Wa,-I (agent/report/web and its node_modules) and lists every file as a
 * prerequisite, since the assembler's dependency output does not name .incbin files.
 */

/* asset NAME, FILE: NAME .. NAME_end are FILE's bytes; a NUL follows (not part of it). */
.macro asset name, file
	.section .rodata.ignis_report, "a"
	.balign 16
	.global \name
	.global \name\()_end
	.hidden \name
	.hidden \name\()_end
	.type \name, @object
\name:
	.incbin "\file"
\name\()_end:
	.byte 0
	.size \name, . - \name
.endm

asset ignis_asset_template, "report.html"
asset ignis_asset_report_css, "report.css"
asset ignis_asset_report_js, "report.js"
asset ignis_asset_d3_js, "d3/dist/d3.min.js"
asset ignis_asset_d3_license, "d3/LICENSE"
asset ignis_asset_flamegraph_js, "d3-flame-graph/dist/d3-flamegraph.umd.min.js"
asset ignis_asset_flamegraph_css, "d3-flame-graph/dist/d3-flamegraph.css"
asset ignis_asset_flamegraph_license, "d3-flame-graph/LICENSE"
asset ignis_asset_d3_ease_license, "d3-ease/LICENSE"
asset ignis_asset_d3_geo_license, "d3-geo/LICENSE"
asset ignis_asset_d3_delaunay_license, "d3-delaunay/LICENSE"
asset ignis_asset_delaunator_license, "delaunator/LICENSE"
asset ignis_asset_robust_predicates_license, "robust-predicates/LICENSE"

/* No executable stack for the binary that links this. */
.section .note.GNU-stack, "", @progbits
