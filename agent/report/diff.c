// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "html.h"
#include "render.h"
#include "report.h"

#define OFFCPU_SAMPLE_NS (10 * NSEC_PER_MSEC)
#define NAME_COLS	 60

/* What one side holds. */
struct side {
	size_t windows;
	uint64_t start_ns, end_ns;
	uint64_t total;
	uint64_t *stacks; /* value per stack */
	uint64_t *self, *all;
};

static void side_free(struct side *s)
{
	free(s->stacks);
	free(s->self);
	free(s->all);
}

static int side_load(const struct report *r, int side, struct side *s)
{
	struct report_range rg = { 0, 0, side };
	size_t i;

	memset(s, 0, sizeof(*s));
	s->stacks = calloc(r->nr_stacks + 1, sizeof(uint64_t));
	s->self = calloc(r->nr_frames + 1, sizeof(uint64_t));
	s->all = calloc(r->nr_frames + 1, sizeof(uint64_t));
	if (!s->stacks || !s->self || !s->all)
		return -ENOMEM;
	s->total = report__sum_stacks(r, &rg, s->stacks);
	for (i = 0; i < r->nr_windows; i++) {
		const struct report_window *w = &r->windows[i];

		if (!report_range_has(&rg, w))
			continue;
		if (!s->windows || w->time_ns < s->start_ns)
			s->start_ns = w->time_ns;
		if (w->time_ns + w->duration_ns > s->end_ns)
			s->end_ns = w->time_ns + w->duration_ns;
		s->windows++;
	}
	return report__frame_values(r, s->stacks, s->self, s->all);
}

/* The number of samples a side's total stands for (the binomial n). */
static double samples_of(const struct report *r, uint64_t v)
{
	return r->type == REPORT_CPU ? (double)v : (double)v / (double)OFFCPU_SAMPLE_NS;
}

static void change_of(const struct report *r, const struct diff_opts *o, uint64_t b, uint64_t n,
		      uint64_t tb, uint64_t tn, struct diff_change *c)
{
	double nb = samples_of(r, tb), nn = samples_of(r, tn), p, se;

	c->base = b;
	c->new_ = n;
	c->base_pct = tb ? 100.0 * (double)b / (double)tb : 0;
	c->new_pct = tn ? 100.0 * (double)n / (double)tn : 0;
	c->delta = c->new_pct - c->base_pct;
	c->z = 0;
	if (nb > 0 && nn > 0) {
		p = (samples_of(r, b) + samples_of(r, n)) / (nb + nn);
		se = sqrt(p * (1 - p) * (1 / nb + 1 / nn));
		if (se > 0)
			c->z = c->delta / 100.0 / se;
		else if (c->delta != 0)
			c->z = c->delta > 0 ? INFINITY : -INFINITY;
	}
	c->significant = fabs(c->z) >= o->z_min && fabs(c->delta) >= o->min_points;
}

static const struct report *cmp_report; /* qsort has no context argument */

static int cmp_change(const void *a, const void *b)
{
	const struct diff_change *x = a, *y = b;
	int c;

	if (x->delta != y->delta)
		return x->delta > y->delta ? -1 : 1;
	c = strcmp(cmp_report->frames[x->frame]->name, cmp_report->frames[y->frame]->name);
	return c ? c :
		   strcmp(cmp_report->frames[x->frame]->binary,
			  cmp_report->frames[y->frame]->binary);
}

static int changes(const struct report *r, const struct diff_opts *o, const struct side *b,
		   const struct side *n, bool by_total, struct diff_change **out, size_t *nr)
{
	const uint64_t *vb = by_total ? b->all : b->self, *vn = by_total ? n->all : n->self;
	struct diff_change *c = calloc(r->nr_frames + 1, sizeof(*c));
	size_t i, k = 0;

	if (!c)
		return -ENOMEM;
	for (i = 0; i < r->nr_frames; i++) {
		if (!vb[i] && !vn[i])
			continue;
		c[k].frame = (uint32_t)i;
		change_of(r, o, vb[i], vn[i], b->total, n->total, &c[k]);
		k++;
	}
	cmp_report = r;
	qsort(c, k, sizeof(*c), cmp_change);
	*out = c;
	*nr = k;
	return 0;
}

int report_diff(const struct report *r, bool by_total, const struct diff_opts *o,
		struct diff_change **out, size_t *nr)
{
	struct side b, n;
	int err = side_load(r, 0, &b);

	if (!err)
		err = side_load(r, 1, &n);
	if (!err)
		err = changes(r, o, &b, &n, by_total, out, nr);
	side_free(&b);
	side_free(&n);
	return err;
}

int diff_gate_parse(const char *s, struct diff_gate *g)
{
	const char *p = s, *op;
	char *end;
	size_t len;

	memset(g, 0, sizeof(*g));
	g->text = s;
	g->by_total = true;
	if (!strncmp(p, "self:", 5)) {
		g->by_total = false;
		p += 5;
	} else if (!strncmp(p, "total:", 6)) {
		p += 6;
	}
	/* The last '>' or '<' followed by a sign: names may hold both (operator<). */
	for (op = NULL, end = (char *)p; (end = strpbrk(end, "<>")); end++)
		if ((end[0] == '>' && end[1] == '+') || (end[0] == '<' && end[1] == '-'))
			op = end;
	if (!op || op == p)
		return -EINVAL;
	len = (size_t)(op - p);
	if (len >= sizeof(g->glob))
		return -EINVAL;
	memcpy(g->glob, p, len);
	g->glob[len] = '\0';
	errno = 0;
	g->points = strtod(op + 1, &end);
	if (errno || end == op + 2 || strcmp(end, "%") || !isfinite(g->points) || g->points == 0)
		return -EINVAL;
	return 0;
}

int diff_gates_check(const struct report *r, const struct diff_opts *o,
		     const struct diff_gate *gates, size_t nr, FILE *out)
{
	struct diff_change *by[2] = { NULL, NULL };
	size_t nr_by[2] = { 0, 0 }, i, j;
	int tripped = 0, err;

	for (i = 0; i < 2; i++) {
		err = report_diff(r, i == 1, o, &by[i], &nr_by[i]);
		if (err)
			goto out;
	}
	for (i = 0; i < nr; i++) {
		const struct diff_gate *g = &gates[i];
		const struct diff_change *c = by[g->by_total];

		for (j = 0; j < nr_by[g->by_total]; j++) {
			const char *name = r->frames[c[j].frame]->name;

			if (!c[j].significant || fnmatch(g->glob, name, 0))
				continue;
			if ((g->points > 0 && c[j].delta > g->points) ||
			    (g->points < 0 && c[j].delta < g->points)) {
				fprintf(out,
					"ignis diff: --fail-if '%s': %s %s %.1f %% -> %.1f %% "
					"(%+.1f points, %.1f standard errors)\n",
					g->text, name, g->by_total ? "total" : "self",
					c[j].base_pct, c[j].new_pct, c[j].delta, c[j].z);
				tripped++;
				break;
			}
		}
	}
	err = tripped;
out:
	free(by[0]);
	free(by[1]);
	return err;
}

/* ---- Text and Markdown ---------------------------------------------------------------------- */

static void table(FILE *out, const struct report *r, const struct diff_change *c, size_t nr,
		  bool rises, unsigned int top, const char *by, bool md)
{
	char title[96], a[32], b[32];
	unsigned int shown = 0;
	int cols = 8; /* "function" */
	size_t i;

	for (i = 0; i < nr; i++)
		if (c[i].significant && (int)strlen(r->frames[c[i].frame]->name) > cols)
			cols = (int)strlen(r->frames[c[i].frame]->name);
	if (cols > NAME_COLS)
		cols = NAME_COLS;

	snprintf(title, sizeof(title), "%s by %s",
		 rises ? "Regressions (more time in NEW)" : "Improvements (less time in NEW)", by);
	if (md)
		fprintf(out,
			"\n## %s\n\n| base %% | new %% | change | z | base | new | function | binary |\n|---:|---:|---:|---:|---:|---:|---|---|\n",
			title);
	else
		fprintf(out, "\n%s\n  %7s %7s %8s %6s  %-*s  %s\n", title, "base%", "new%",
			"change", "z", cols, "function", "binary");
	for (i = 0; i < nr && shown < top; i++) {
		const struct diff_change *x = rises ? &c[i] : &c[nr - 1 - i];
		const struct report_frame *f = r->frames[x->frame];

		if (!x->significant || (rises ? x->delta <= 0 : x->delta >= 0))
			continue;
		shown++;
		if (md) {
			fprintf(out, "| %.1f | %.1f | %+.1f | %.1f | %s | %s | ", x->base_pct,
				x->new_pct, x->delta, x->z, render_value(r, x->base, a, sizeof(a)),
				render_value(r, x->new_, b, sizeof(b)));
			render_md_frame(out, f);
		} else {
			fprintf(out, "  %6.1f%% %6.1f%% %+7.1f %6.1f  %-*.*s  %s\n", x->base_pct,
				x->new_pct, x->delta, x->z, cols, cols, f->name, f->binary);
		}
	}
	if (!shown)
		fputs(md ? "| | | | | | | (none above the noise floor) | |\n" :
			   "  (none above the noise floor)\n",
		      out);
}

static void side_line(FILE *out, const struct report *r, const char *what, const char *label,
		      const struct side *s, bool md)
{
	char t1[32], t2[32], v[32];

	fprintf(out, "%s%s%s %s: %zu window%s", md ? "- **" : "", what, md ? "**" : "", label,
		s->windows, s->windows == 1 ? "" : "s");
	if (s->windows)
		fprintf(out, ", %s to %s UTC", render_time(s->start_ns, t1, sizeof(t1)),
			render_time(s->end_ns, t2, sizeof(t2)));
	fprintf(out, ", %s %s\n", render_value(r, s->total, v, sizeof(v)),
		r->type == REPORT_CPU ? "samples" : "off CPU");
}

int diff_render_text(FILE *out, const struct report *r, const struct diff_opts *o,
		     const struct render_opts *ro, bool md)
{
	struct diff_change *c[2] = { NULL, NULL };
	size_t nr[2] = { 0, 0 }, i;
	struct side b, n;
	int err;

	(void)ro;
	err = side_load(r, 0, &b);
	if (!err)
		err = side_load(r, 1, &n);
	for (i = 0; !err && i < 2; i++)
		err = changes(r, o, &b, &n, i == 1, &c[i], &nr[i]);
	if (err)
		goto out;
	fprintf(out, md ? "# ignis diff (%s)\n\n" : "ignis diff (%s)\n",
		r->type == REPORT_CPU ? "CPU" : "off-CPU");
	side_line(out, r, "BASE", o->base_label, &b, md);
	side_line(out, r, "NEW", o->new_label, &n, md);
	fprintf(out,
		"%sNoise floor:%s shares of each side's total; a change is shown when it is at "
		"least %.1f standard errors and %.1f percentage points\n",
		md ? "- **" : "", md ? "**" : "", o->z_min, o->min_points);
	if (!b.total || !n.total)
		fprintf(out, "%s%s has no samples: nothing to compare\n", md ? "\n" : "",
			!b.total ? "BASE" : "NEW");
	table(out, r, c[0], nr[0], true, o->top, "self", md);
	table(out, r, c[0], nr[0], false, o->top, "self", md);
	table(out, r, c[1], nr[1], true, o->top, "total", md);
	table(out, r, c[1], nr[1], false, o->top, "total", md);
	err = ferror(out) ? -EIO : 0;
out:
	free(c[0]);
	free(c[1]);
	side_free(&b);
	side_free(&n);
	return err;
}

/* ---- HTML ----------------------------------------------------------------------------------- */

struct diff_html {
	const struct report *r;
	const struct diff_opts *o;
	const char *title;
	size_t max_stacks;
	struct side b, n;
};

/* A side's stacks as the page keeps them: (new id, value) pairs, the folded ones summed
 * under the "[other stacks]" stack (id nr_kept). */
static void side_json(FILE *out, const char *name, const char *label, const struct side *s,
		      const uint32_t *map, size_t nr_stacks, size_t nr_kept)
{
	uint64_t other = 0;
	size_t i, k = 0;

	fprintf(out, "\"%s\":{\"label\":", name);
	render_json_string(out, label);
	fprintf(out, ",\"total\":%" PRIu64 ",\"stacks\":[", s->total);
	for (i = 0; i < nr_stacks; i++) {
		if (!s->stacks[i])
			continue;
		if (!map[i]) {
			other += s->stacks[i];
			continue;
		}
		fprintf(out, k++ ? ",%u,%" PRIu64 : "%u,%" PRIu64, map[i] - 1, s->stacks[i]);
	}
	if (other)
		fprintf(out, k ? ",%zu,%" PRIu64 : "%zu,%" PRIu64, nr_kept, other);
	fputs("]}", out);
}

static int write_diff_data(FILE *out, void *arg)
{
	struct diff_html *d = arg;
	const struct report *r = d->r;
	uint64_t *both = calloc(r->nr_stacks + 1, sizeof(uint64_t));
	uint32_t *map = calloc(r->nr_stacks + 1, sizeof(uint32_t));
	ssize_t kept;
	size_t i;
	int err = -ENOMEM;

	if (!both || !map)
		goto out;
	for (i = 0; i < r->nr_stacks; i++)
		both[i] = d->b.stacks[i] + d->n.stacks[i];
	kept = render_keep_stacks(r, both, d->max_stacks, map);
	if (kept < 0)
		goto out;
	fputs("{\"version\":1,\"kind\":\"diff\",\"title\":", out);
	render_json_string(out, d->title);
	fprintf(out,
		",\"type\":\"%s\",\"unit\":\"%s\",\"period_ns\":%" PRIu64 ",\"hosts\":[],"
		"\"summary\":{\"windows\":%zu,\"samples\":%" PRIu64 ",\"start_ms\":%" PRIu64
		",\"end_ms\":%" PRIu64 "},\n",
		r->type == REPORT_CPU ? "cpu" : "offcpu",
		r->type == REPORT_CPU ? "samples" : "nanoseconds", r->period_ns,
		d->b.windows + d->n.windows, d->b.total + d->n.total, d->b.start_ns / NSEC_PER_MSEC,
		d->n.end_ns / NSEC_PER_MSEC);
	err = render_json_tables(out, r, map, (size_t)kept);
	if (err)
		goto out;
	fputs("\"buckets\":[],\n", out);
	side_json(out, "base", d->o->base_label, &d->b, map, r->nr_stacks, (size_t)kept);
	fputs(",\n", out);
	side_json(out, "new", d->o->new_label, &d->n, map, r->nr_stacks, (size_t)kept);
	fputs("}\n", out);
	err = ferror(out) ? -EIO : 0;
out:
	free(both);
	free(map);
	return err;
}

int diff_render_html(FILE *out, const struct report *r, const struct diff_opts *o,
		     const struct render_opts *ro)
{
	struct diff_html d = { .r = r,
			       .o = o,
			       .max_stacks = ro && ro->max_stacks ? ro->max_stacks : 20000 };
	char title[600];
	int err;

	err = side_load(r, 0, &d.b);
	if (!err)
		err = side_load(r, 1, &d.n);
	if (!err) {
		snprintf(title, sizeof(title), "ignis diff: %s vs %s", o->base_label, o->new_label);
		d.title = ro && ro->title ? ro->title : title;
		err = report_html_write(out, d.title, write_diff_data, &d);
	}
	side_free(&d.b);
	side_free(&d.n);
	return err;
}
