/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pieces of the HTML page (agent/report/html.h), embedded in the binary at build time by
 * assets.S (the assembler's .incbin; the Makefile names the files). Each piece is the file's
 * bytes from NAME to NAME_end, followed by a NUL byte that is not part of it, so a piece is
 * also a C string. Only html.c reads them.
 */
#ifndef IGNIS_REPORT_ASSETS_H
#define IGNIS_REPORT_ASSETS_H

/* agent/report/web/: the page template with its <!--IGNIS:...--> markers, style, script. */
extern const char ignis_asset_template[], ignis_asset_template_end[];
extern const char ignis_asset_report_css[], ignis_asset_report_css_end[];
extern const char ignis_asset_report_js[], ignis_asset_report_js_end[];

/* From npm (agent/report/web/package-lock.json): d3 (ISC) and d3-flame-graph (Apache-2.0). */
extern const char ignis_asset_d3_js[], ignis_asset_d3_js_end[];
extern const char ignis_asset_d3_license[], ignis_asset_d3_license_end[];
extern const char ignis_asset_flamegraph_js[], ignis_asset_flamegraph_js_end[];
extern const char ignis_asset_flamegraph_css[], ignis_asset_flamegraph_css_end[];
extern const char ignis_asset_flamegraph_license[], ignis_asset_flamegraph_license_end[];

/* The licences of code in d3.min.js with terms of its own (d3's modules are all ISC). */
extern const char ignis_asset_d3_ease_license[], ignis_asset_d3_ease_license_end[];
extern const char ignis_asset_d3_geo_license[], ignis_asset_d3_geo_license_end[];
extern const char ignis_asset_d3_delaunay_license[], ignis_asset_d3_delaunay_license_end[];
extern const char ignis_asset_delaunator_license[], ignis_asset_delaunator_license_end[];
extern const char ignis_asset_robust_predicates_license[],
	ignis_asset_robust_predicates_license_end[];

#endif /* IGNIS_REPORT_ASSETS_H */
