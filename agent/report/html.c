// SPDX-License-Identifier: Apache-2.0
/*
 * The HTML page of `ignis report` and `ignis diff` (html.h): the embedded template
 * (agent/report/web/report.html) streamed to the output, each <!--IGNIS:NAME--> marker
 * replaced by its piece:
 *
 *   TITLE     the title, HTML-escaped
 *   STYLE     d3-flame-graph's CSS, then ours, in one <style>
 *   SCRIPTS   d3, d3-flame-graph, then report.js, each in its own <script>
 *   DATA      what write_data writes (the template has it inside the data element)
 *   LICENSES  the libraries' licence texts, each in a <script type="text/plain"> nobody runs
 *
 * The pieces come from assets.S (assets.h); this file is their only reader.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/ignis.h"
#include "report/assets.h"
#include "report/html.h"

#define MARKER_OPEN  "<!--IGNIS:"
#define MARKER_CLOSE "-->"

struct piece {
	const char *start;
	const char *end;
};

#define PIECE(name) ((struct piece){ ignis_asset_##name, ignis_asset_##name##_end })

/*
 * The licences of what the page embeds: d3-flame-graph, and d3's bundle (d3.min.js holds the
 * d3-* modules, ISC like d3 itself, plus the code of these with terms of their own).
 */
static const struct {
	const char *id;
	const char *what;
	struct piece text;
} licenses[] = {
	{ "d3-flame-graph", "d3-flame-graph (d3-flamegraph.umd.min.js), Apache License 2.0",
	  PIECE(flamegraph_license) },
	{ "d3", "d3 (d3.min.js: d3 and its d3-* modules), ISC License", PIECE(d3_license) },
	{ "d3-ease", "d3-ease (in d3.min.js), BSD-3-Clause", PIECE(d3_ease_license) },
	{ "d3-geo", "d3-geo (in d3.min.js), ISC License; parts from GeographicLib, MIT License",
	  PIECE(d3_geo_license) },
	{ "d3-delaunay", "d3-delaunay (in d3.min.js), ISC License", PIECE(d3_delaunay_license) },
	{ "delaunator", "delaunator (in d3.min.js), ISC License", PIECE(delaunator_license) },
	{ "robust-predicates", "robust-predicates (in d3.min.js), Unlicense",
	  PIECE(robust_predicates_license) },
};

static int put(FILE *out, const char *s, size_t len)
{
	return fwrite(s, 1, len, out) == len ? 0 : -EIO;
}

static int put_str(FILE *out, const char *s)
{
	return put(out, s, strlen(s));
}

static int put_piece(FILE *out, struct piece p)
{
	return put(out, p.start, (size_t)(p.end - p.start));
}

/* Text for an element's content or a quoted attribute: the five characters HTML gives meaning. */
static int put_escaped(FILE *out, const char *s)
{
	for (; *s; s++) {
		const char *rep;
		int err;

		switch (*s) {
		case '&':
			rep = "&amp;";
			break;
		case '<':
			rep = "&lt;";
			break;
		case '>':
			rep = "&gt;";
			break;
		case '"':
			rep = "&quot;";
			break;
		case '\'':
			rep = "&#39;";
			break;
		default:
			if (fputc(*s, out) == EOF)
				return -EIO;
			continue;
		}
		err = put_str(out, rep);
		if (err)
			return err;
	}
	return 0;
}

/*
 * A piece inside <script> or <style>: the element ends at the first "</script" or "</style"
 * whatever the case, so a piece holding one would cut the page. The embedded files have
 * none; a library update that brings one is refused rather than written broken.
 */
static int put_raw_element(FILE *out, const char *open, struct piece p, const char *close)
{
	const char *s;
	int err;

	for (s = p.start; (s = memmem(s, (size_t)(p.end - s), "</", 2)); s += 2) {
		if (!strncasecmp(s + 2, "script", 6) || !strncasecmp(s + 2, "style", 5))
			return -EINVAL;
	}
	err = put_str(out, open);
	if (!err)
		err = put_piece(out, p);
	if (!err)
		err = put_str(out, close);
	return err;
}

/* Each licence in its own <script type="text/plain" id="license-ID">, which nobody runs. */
static int put_licenses(FILE *out)
{
	size_t i;
	int err = 0;

	for (i = 0; !err && i < ARRAY_SIZE(licenses); i++) {
		err = put_str(out, "<script type=\"text/plain\" id=\"license-");
		if (!err)
			err = put_str(out, licenses[i].id);
		if (!err)
			err = put_str(out, "\">\n");
		if (!err)
			err = put_raw_element(out, licenses[i].what, licenses[i].text,
					      "</script>\n");
	}
	return err;
}

static int put_marker(FILE *out, const char *name, size_t len, const char *title,
		      report_html_data_fn write_data, void *ctx)
{
	int err;

#define IS(s) (len == sizeof(s) - 1 && !memcmp(name, s, len))
	if (IS("TITLE"))
		return put_escaped(out, title);
	if (IS("DATA"))
		return write_data(out, ctx);
	if (IS("STYLE")) {
		err = put_str(out, "<style>\n");
		if (!err)
			err = put_piece(out, PIECE(flamegraph_css));
		if (!err)
			err = put_raw_element(out, "\n", PIECE(report_css), "</style>");
		return err;
	}
	if (IS("SCRIPTS")) {
		err = put_raw_element(out, "<script>", PIECE(d3_js), "</script>\n");
		if (!err)
			err = put_raw_element(out, "<script>", PIECE(flamegraph_js), "</script>\n");
		if (!err)
			err = put_raw_element(out, "<script>", PIECE(report_js), "</script>");
		return err;
	}
	if (IS("LICENSES"))
		return put_licenses(out);
#undef IS
	/* Not ours: the template's own text. */
	return put(out, name - strlen(MARKER_OPEN), len + strlen(MARKER_OPEN MARKER_CLOSE));
}

int report_html_write(FILE *out, const char *title, report_html_data_fn write_data, void *ctx)
{
	const char *s = ignis_asset_template, *end = ignis_asset_template_end;
	int err = 0;

	if (!out || !title || !write_data)
		return -EINVAL;
	while (!err && s < end) {
		const char *m = memmem(s, (size_t)(end - s), MARKER_OPEN, strlen(MARKER_OPEN));
		const char *name, *close;

		if (!m) {
			err = put(out, s, (size_t)(end - s));
			break;
		}
		name = m + strlen(MARKER_OPEN);
		close = memmem(name, (size_t)(end - name), MARKER_CLOSE, strlen(MARKER_CLOSE));
		if (!close) {
			err = put(out, s, (size_t)(end - s));
			break;
		}
		err = put(out, s, (size_t)(m - s));
		if (!err)
			err = put_marker(out, name, (size_t)(close - name), title, write_data, ctx);
		s = close + strlen(MARKER_CLOSE);
	}
	if (!err && (fflush(out) || ferror(out)))
		err = -EIO;
	return err;
}
