// SPDX-License-Identifier: Apache-2.0
/* Placeholder page writer until the embedded page lands (wt-html). */
#include <errno.h>

#include "html.h"

int report_html_write(FILE *out, const char *title, report_html_data_fn write_data, void *ctx)
{
	int err;

	fprintf(out,
		"<!doctype html><title>%s</title><script id=\"ignis-data\" type=\"application/json\">",
		title);
	err = write_data(out, ctx);
	fputs("</script>\n", out);
	return err ? err : ferror(out) ? -EIO : 0;
}
