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
 *   LICENSES  the libraries' licence texts, in a <script type="text/plain"> nobody runs
 *
 * The pieces come from assets.S (assets.h); this file is their only reader.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "report/assets.h"
#include "report/html.h"

#define MARKER_OPEN  "<!--IGNIS:"
#define MARKER_CLOSE "-->"

/* The licence texts' elements: text nobody runs, each named for its library. */
#define D3_LICENSE_OPEN                                    \
	"<script type=\"text/plain\" id=\"license-d3\">\n" \
	"d3 (https://d3js.org), ISC License:\n\n"
#define FLAMEGRAPH_LICENSE_OPEN                                        \
	"<script type=\"text/plain\" id=\"license-d3-flame-graph\">\n" \
	"d3-flame-graph, Copyright 2018 Martin Spier, Apache License 2.0:\n\n"

struct piece {
	const char *start;
	const char *end;
};

#define PIECE(name) ((struct piece){ ignis_asset_##name, ignis_asset_##name##_end })

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
	if (IS("LICENSES")) {
		err = put_raw_element(out, D3_LICENSE_OPEN, PIECE(d3_license), "</script>\n");
		if (!err)
			err = put_raw_element(out, FLAMEGRAPH_LICENSE_OPEN,
					      PIECE(flamegraph_license), "</script>");
		return err;
	}
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
