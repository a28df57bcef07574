// SPDX-License-Identifier: Apache-2.0
/* The HTML page of ignis report (agent/report/html.h): the template's markers replaced, the
 * title escaped, the libraries inlined with their licences, nothing fetched, errors passed on. */
#include "unit.h"

#include "../../agent/report/html.h"

#define DATA "{\"version\":1,\"kind\":\"report\",\"title\":\"<\\/script>\"}"

struct page {
	char *buf;
	size_t len;
};

static int write_data(FILE *out, void *ctx)
{
	int *calls = ctx;

	(*calls)++;
	return fputs(DATA, out) == EOF ? -EIO : 0;
}

static int write_fails(FILE *out, void *ctx)
{
	(void)ctx;
	fputs("{\"version\":", out);
	return -ENOSPC;
}

/* The page for this title, in memory; the return value of report_html_write in *err. */
static struct page make_page(const char *title, report_html_data_fn fn, void *ctx, int *err)
{
	struct page p = { 0 };
	FILE *f = open_memstream(&p.buf, &p.len);

	assert_non_null(f);
	*err = report_html_write(f, title, fn, ctx);
	assert_int_equal(fclose(f), 0);
	return p;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (hay = strstr(hay, needle); hay; hay = strstr(hay + 1, needle))
		n++;
	return n;
}

static void test_title_escaped(void **state)
{
	int calls = 0, err;
	struct page p = make_page("load <b>& 'x\"", write_data, &calls, &err);

	(void)state;
	assert_int_equal(err, 0);
	assert_non_null(strstr(p.buf, "<title>load &lt;b&gt;&amp; &#39;x&quot;</title>"));
	/* In the <title> and in the page's heading, never raw. */
	assert_int_equal(count(p.buf, "load &lt;b&gt;&amp; &#39;x&quot;"), 2);
	assert_null(strstr(p.buf, "<b>&"));
	free(p.buf);
}

static void test_data_in_its_element(void **state)
{
	int calls = 0, err;
	struct page p = make_page("t", write_data, &calls, &err);

	(void)state;
	assert_int_equal(err, 0);
	assert_int_equal(calls, 1);
	assert_non_null(strstr(p.buf, "<script id=\"ignis-data\" type=\"application/json\">" DATA
				      "</script>"));
	/* Every marker replaced. */
	assert_null(strstr(p.buf, "<!--IGNIS:"));
	assert_true(p.len > 200000);
	assert_int_equal(strlen(p.buf), p.len);
	free(p.buf);
}

static void test_libraries_inlined(void **state)
{
	int calls = 0, err;
	struct page p = make_page("t", write_data, &calls, &err);

	(void)state;
	assert_int_equal(err, 0);
	/* d3 and d3-flame-graph's code and style, our script and style. */
	assert_non_null(strstr(p.buf, "<script>// https://d3js.org v7"));
	assert_non_null(strstr(p.buf, "flamegraph"));
	assert_non_null(strstr(p.buf, ".d3-flame-graph rect"));
	assert_non_null(strstr(p.buf, "window.ignisReport"));
	assert_non_null(strstr(p.buf, "--accent"));
	/* Their licences. */
	assert_non_null(strstr(p.buf, "<script type=\"text/plain\" id=\"license-d3\">"));
	assert_non_null(strstr(p.buf, "Copyright 2010-"));
	assert_non_null(strstr(p.buf, "Permission to use, copy, modify, and/or distribute"));
	assert_non_null(
		strstr(p.buf, "<script type=\"text/plain\" id=\"license-d3-flame-graph\">"));
	assert_non_null(strstr(p.buf, "Apache License"));
	/* Nothing loaded from elsewhere; every script element closed where it should be. */
	assert_null(strstr(p.buf, "src=\"http"));
	assert_null(strstr(p.buf, "href=\"http"));
	assert_null(strstr(p.buf, "src=\"//"));
	assert_null(strstr(p.buf, "<link"));
	assert_int_equal(count(p.buf, "<script"), count(p.buf, "</script>"));
	assert_non_null(strstr(p.buf, "<script type=\"text/plain\" id=\"license-d3-ease\">"));
	assert_non_null(strstr(p.buf, "Copyright 2001 Robert Penner"));
	assert_non_null(strstr(p.buf, "public domain")); /* robust-predicates */
	assert_int_equal(count(p.buf, "<script"), 4 + 7);
	free(p.buf);
}

static void test_errors(void **state)
{
	int calls = 0, err;
	struct page p = make_page("t", write_fails, NULL, &err);
	FILE *full;

	(void)state;
	assert_int_equal(err, -ENOSPC);
	/* What came after the data was not written. */
	assert_null(strstr(p.buf, "window.ignisReport"));
	free(p.buf);

	assert_int_equal(report_html_write(NULL, "t", write_data, &calls), -EINVAL);
	assert_int_equal(report_html_write(stdout, NULL, write_data, &calls), -EINVAL);
	assert_int_equal(report_html_write(stdout, "t", NULL, &calls), -EINVAL);
	assert_int_equal(calls, 0);

	/* A stream that fails. */
	full = fopen("/dev/full", "w");
	if (full) {
		assert_int_equal(report_html_write(full, "t", write_data, &calls), -EIO);
		fclose(full);
	}
}

UNIT_MAIN("html", cmocka_unit_test(test_title_escaped), cmocka_unit_test(test_data_in_its_element),
	  cmocka_unit_test(test_libraries_inlined), cmocka_unit_test(test_errors))
