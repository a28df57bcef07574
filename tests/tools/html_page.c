// SPDX-License-Identifier: Apache-2.0
/*
 * html_page DATA.json TITLE [OUT.html]: the page of agent/report/html.h around the data
 * document in DATA.json, for the browser tests (tests/integration/test_report_html.py) until
 * `ignis report` writes it. "</" in the data is written "<\/" (html.h's rule; it can only be
 * inside a JSON string). Exit status 0, or 1 with a message.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/html.h"

struct doc {
	const char *buf;
	size_t len;
};

static int write_doc(FILE *out, void *ctx)
{
	const struct doc *d = ctx;
	size_t i;

	for (i = 0; i < d->len; i++) {
		if (d->buf[i] == '/' && i > 0 && d->buf[i - 1] == '<' && fputc('\\', out) == EOF)
			return -EIO;
		if (fputc(d->buf[i], out) == EOF)
			return -EIO;
	}
	return 0;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0, r;

	if (!f)
		return NULL;
	do {
		if (n + 65536 > cap) {
			char *grown;

			cap = cap ? cap * 2 : 1 << 20;
			grown = realloc(buf, cap);
			if (!grown) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = grown;
		}
		r = fread(buf + n, 1, 65536, f);
		n += r;
	} while (r > 0);
	if (ferror(f)) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = n;
	return buf;
}

int main(int argc, char **argv)
{
	struct doc d = { 0 };
	FILE *out = stdout;
	char *buf;
	int err;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: html_page DATA.json TITLE [OUT.html]\n");
		return 1;
	}
	buf = read_file(argv[1], &d.len);
	if (!buf) {
		fprintf(stderr, "html_page: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	d.buf = buf;
	if (argc == 4) {
		out = fopen(argv[3], "w");
		if (!out) {
			fprintf(stderr, "html_page: %s: %s\n", argv[3], strerror(errno));
			free(buf);
			return 1;
		}
	}
	err = report_html_write(out, argv[2], write_doc, &d);
	if (out != stdout && fclose(out) && !err)
		err = -EIO;
	free(buf);
	if (err) {
		fprintf(stderr, "html_page: %s\n", strerror(-err));
		return 1;
	}
	return 0;
}
