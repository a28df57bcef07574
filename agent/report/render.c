// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "html.h"
#include "load.h"
#include "render.h"
#include "report.h"

/* Text columns for names, and the timeline's bar. */
#define NAME_COLS     60
#define BAR_COLS      40
#define TIMELINE_ROWS 60
/* HTML timeline buckets, at most. */
#define HTML_BUCKETS 300

const char *render_time(uint64_t t_ns, char *buf, size_t size)
{
	time_t t = (time_t)(t_ns / NSEC_PER_SEC);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm);
	return buf;
}

/* 1234567 -> "1,234,567" */
static const char *thousands(uint64_t v, char *buf, size_t size)
{
	char digits[32];
	size_t n, i, o = 0;

	n = (size_t)snprintf(digits, sizeof(digits), "%" PRIu64, v);
	for (i = 0; i < n && o + 2 < size; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	return buf;
}

static const char *duration(uint64_t ns, char *buf, size_t size)
{
	if (ns >= 3600 * NSEC_PER_SEC)
		snprintf(buf, size, "%.1f h", (double)ns / 3600e9);
	else if (ns >= 60 * NSEC_PER_SEC)
		snprintf(buf, size, "%.1f min", (double)ns / 60e9);
	else if (ns >= NSEC_PER_SEC)
		snprintf(buf, size, "%.2f s", (double)ns / 1e9);
	else if (ns >= NSEC_PER_MSEC)
		snprintf(buf, size, "%.1f ms", (double)ns / 1e6);
	else
		snprintf(buf, size, "%.1f us", (double)ns / 1e3);
	return buf;
}

const char *render_value(const struct report *r, uint64_t v, char *buf, size_t size)
{
	return r->type == REPORT_CPU ? thousands(v, buf, size) : duration(v, buf, size);
}

static double pct(uint64_t v, uint64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0;
}

/* ---- Summary -------------------------------------------------------------------------------- */

struct summary {
	size_t windows, accounted;
	uint64_t start_ns, end_ns;
	uint64_t taken, idle, filtered, profiled, dropped;
	uint64_t value, value_all;
	uint32_t max_cpus;
	double rate_sum;
	struct summary_host {
		const char *name; /* interned: compared by pointer */
		size_t windows;
		uint64_t value;
	} hosts[16];
	size_t nr_hosts;
	bool more_hosts; /* past the array */
};

static void summarize(const struct report *r, struct summary *s)
{
	size_t i, j;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < r->nr_windows; i++) {
		const struct report_window *w = &r->windows[i];
		uint64_t end = w->time_ns + w->duration_ns;

		if (!s->windows || w->time_ns < s->start_ns)
			s->start_ns = w->time_ns;
		if (end > s->end_ns)
			s->end_ns = end;
		s->windows++;
		s->value += w->value;
		s->value_all += w->value_all;
		if (w->has_accounting) {
			s->accounted++;
			s->taken += w->taken;
			s->idle += w->idle;
			s->filtered += w->filtered;
			s->profiled += w->profiled;
			s->dropped += w->dropped;
			s->rate_sum += w->rate_hz;
			if (w->nr_cpus > s->max_cpus)
				s->max_cpus = w->nr_cpus;
		}
		for (j = 0; j < s->nr_hosts && s->hosts[j].name != w->host; j++)
			;
		if (j == s->nr_hosts && j < ARRAY_SIZE(s->hosts))
			s->hosts[s->nr_hosts++].name = w->host;
		if (j < s->nr_hosts) {
			s->hosts[j].windows++;
			s->hosts[j].value += w->value;
		} else {
			s->more_hosts = true;
		}
	}
}

/* ", host web-1", or ", 2 hosts: web-1 (12 windows, 1,234 samples), web-2 (...)". */
static void print_hosts(FILE *out, const struct report *r, const struct summary *s)
{
	char v[32];
	size_t i;

	if (!s->nr_hosts || (s->nr_hosts == 1 && !s->hosts[0].name[0]))
		return;
	if (s->nr_hosts == 1) {
		fprintf(out, ", host %s", s->hosts[0].name);
		return;
	}
	fprintf(out, ", %s%zu hosts: ", s->more_hosts ? "over " : "", s->nr_hosts);
	for (i = 0; i < s->nr_hosts; i++)
		fprintf(out, "%s%s (%zu window%s, %s %s)", i ? ", " : "",
			s->hosts[i].name[0] ? s->hosts[i].name : "(unnamed)", s->hosts[i].windows,
			s->hosts[i].windows == 1 ? "" : "s",
			render_value(r, s->hosts[i].value, v, sizeof(v)),
			r->type == REPORT_CPU ? "samples" : "off CPU");
	if (s->more_hosts)
		fputs(", ...", out);
}

/* ---- Ranking -------------------------------------------------------------------------------- */

struct rank_ctx {
	const struct report *r;
	const uint64_t *v;
};

static struct rank_ctx rank_ctx; /* qsort has no context argument */

static int cmp_rank(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct report_frame *fx = rank_ctx.r->frames[x], *fy = rank_ctx.r->frames[y];
	int c;

	if (rank_ctx.v[x] != rank_ctx.v[y])
		return rank_ctx.v[x] > rank_ctx.v[y] ? -1 : 1;
	c = strcmp(fx->name, fy->name);
	return c ? c : strcmp(fx->binary, fy->binary);
}

/* Frame ids with v > 0, by v descending, into a malloc'd array; *nr its length. */
static uint32_t *rank(const struct report *r, const uint64_t *v, size_t *nr)
{
	uint32_t *ids = malloc((r->nr_frames ? r->nr_frames : 1) * sizeof(*ids));
	size_t i, n = 0;

	if (!ids)
		return NULL;
	for (i = 0; i < r->nr_frames; i++)
		if (v[i])
			ids[n++] = (uint32_t)i;
	rank_ctx = (struct rank_ctx){ r, v };
	qsort(ids, n, sizeof(*ids), cmp_rank);
	*nr = n;
	return ids;
}

/*
 * The heaviest call path to frame f: of the stacks holding it, the prefix up to its outermost
 * occurrence with the largest value. Returns the stack whose prefix it is (its length in
 * *depth), or -1; *value gets the path's value.
 */
static int64_t heaviest_path(const struct report *r, const uint64_t *stack_values, uint32_t f,
			     uint32_t *depth, uint64_t *value)
{
	struct candidate {
		const uint32_t *frames;
		uint32_t nr;
		uint64_t value;
		int64_t stack;
	} *c = NULL;
	size_t nr = 0, cap = 0, i, k;
	int64_t best = -1;
	uint32_t j;

	*value = 0;
	for (i = 0; i < r->nr_stacks; i++) {
		const struct report_stack *s = r->stacks[i];

		if (!stack_values[i])
			continue;
		for (j = 0; j < s->nr && s->frames[j] != f; j++)
			;
		if (j == s->nr)
			continue;
		/* Few distinct prefixes per function: a linear search is enough. */
		for (k = 0; k < nr; k++)
			if (c[k].nr == j + 1 && !memcmp(c[k].frames, s->frames, (j + 1) * 4))
				break;
		if (k == nr) {
			if (grow_array((void **)&c, &cap, nr + 1, sizeof(*c)))
				break;
			c[nr++] = (struct candidate){ s->frames, j + 1, 0, (int64_t)i };
		}
		c[k].value += stack_values[i];
		if (c[k].value > *value) {
			*value = c[k].value;
			best = c[k].stack;
			*depth = c[k].nr;
		}
		if (nr > 4096) /* a function reached from everywhere: the heaviest so far */
			break;
	}
	free(c);
	return best;
}

/* ---- Text and Markdown ---------------------------------------------------------------------- */

/* s cut to cols characters (bytes; names are mostly ASCII) with "..." */
static const char *cut(const char *s, char *buf, size_t cols)
{
	size_t n = strlen(s);

	if (n <= cols)
		return s;
	snprintf(buf, cols + 1, "%.*s...", (int)(cols - 3), s);
	return buf;
}

void render_md_code(FILE *out, const char *s)
{
	const char *fence = strchr(s, '`') ? "`` " : "`";

	fputs(fence, out);
	for (; *s; s++) {
		if (*s == '|')
			fputs("\\|", out);
		else if (*s == '\n' || *s == '\r')
			fputc(' ', out);
		else
			fputc(*s, out);
	}
	fputs(strchr(fence, ' ') ? " ``" : "`", out);
}

void render_md_frame(FILE *out, const struct report_frame *f)
{
	render_md_code(out, f->name);
	fputs(" | ", out);
	if (f->binary[0])
		render_md_code(out, f->binary);
	fputs(" |\n", out);
}

static const uint64_t steps_s[] = { 1,	 5,    10,   15,   30,	  60,	 120,	300,  600,
				    900, 1800, 3600, 7200, 10800, 21600, 43200, 86400 };

/* A step of steps_s[] for people: "10 s", "5 min", "1 h", "1 d". */
static const char *step_name(uint64_t step_ns, char *buf, size_t size)
{
	uint64_t s = step_ns / NSEC_PER_SEC;

	if (s >= 86400 && s % 86400 == 0)
		snprintf(buf, size, "%" PRIu64 " d", s / 86400);
	else if (s >= 3600 && s % 3600 == 0)
		snprintf(buf, size, "%" PRIu64 " h", s / 3600);
	else if (s >= 60 && s % 60 == 0)
		snprintf(buf, size, "%" PRIu64 " min", s / 60);
	else
		snprintf(buf, size, "%" PRIu64 " s", s);
	return buf;
}

static void timeline(FILE *out, const struct report *r, const struct summary *s, bool md)
{
	static const char *const eighths[] = { "", "▏", "▎", "▍", "▌", "▋", "▊", "▉" };
	uint64_t step = 0, first, last = 0, rows, *v, max = 0, window = 0, eighth, k;
	char tbuf[32], vbuf[32];
	size_t i;

	if (!s->windows)
		return;
	for (i = 0; i < r->nr_windows; i++) {
		if (r->windows[i].duration_ns > window)
			window = r->windows[i].duration_ns;
		if (r->windows[i].time_ns > last)
			last = r->windows[i].time_ns;
	}
	/* The shortest step no shorter than a window that fits the rows. */
	for (i = 0; i < ARRAY_SIZE(steps_s); i++) {
		step = steps_s[i] * NSEC_PER_SEC;
		if (step + NSEC_PER_SEC / 2 < window)
			continue;
		if ((last - s->start_ns) / step + 1 <= TIMELINE_ROWS)
			break;
	}
	first = s->start_ns / step * step;
	rows = (last - first) / step + 1;
	if (rows > 10000)
		rows = 10000;
	v = calloc(rows, sizeof(*v));
	if (!v)
		return;
	for (i = 0; i < r->nr_windows; i++) {
		uint64_t row = (r->windows[i].time_ns - first) / step;

		if (row < rows)
			v[row] += r->windows[i].value;
	}
	for (i = 0; i < rows; i++)
		if (v[i] > max)
			max = v[i];
	step_name(step, vbuf, sizeof(vbuf));
	if (md)
		fprintf(out,
			"\n## Timeline\n\n%s per %s, UTC.\n\n| time | %s | |\n|---|---:|---|\n",
			r->type == REPORT_CPU ? "Samples" : "Time off CPU", vbuf,
			r->type == REPORT_CPU ? "samples" : "off CPU");
	else
		fprintf(out, "\nTimeline: %s per %s (UTC)\n",
			r->type == REPORT_CPU ? "samples" : "time off CPU", vbuf);
	for (i = 0; i < rows; i++) {
		/* Times of day while the rows stay within one day. */
		render_time(first + i * step, tbuf, sizeof(tbuf));
		eighth = max ? v[i] * BAR_COLS * 8 / max : 0;
		if (md)
			fprintf(out, "| %s | %s | ",
				tbuf + (rows * step <= 86400 * NSEC_PER_SEC ? 11 : 0),
				render_value(r, v[i], vbuf, sizeof(vbuf)));
		else
			fprintf(out, "  %s  ",
				tbuf + (rows * step <= 86400 * NSEC_PER_SEC ? 11 : 0));
		for (k = 0; k < eighth / 8; k++)
			fputs("█", out);
		fputs(eighths[eighth % 8], out);
		if (md) {
			fputs(" |\n", out);
			continue;
		}
		for (k = eighth / 8 + (eighth % 8 != 0); k < BAR_COLS; k++)
			fputc(' ', out);
		fprintf(out, " %s\n", render_value(r, v[i], vbuf, sizeof(vbuf)));
	}
	free(v);
}

static void top_table(FILE *out, const struct report *r, const uint32_t *ids, size_t nr,
		      unsigned int top, const uint64_t *self, const uint64_t *total, uint64_t sum,
		      const char *by, bool md)
{
	const char *unit = r->type == REPORT_CPU ? "samples" : "off CPU";
	char a[32], b[32], cutbuf[NAME_COLS + 1];
	int cols = 8; /* "function" */
	size_t i;

	for (i = 0; i < nr && i < top; i++)
		if ((int)strlen(r->frames[ids[i]]->name) > cols)
			cols = (int)strlen(r->frames[ids[i]]->name);
	if (cols > NAME_COLS)
		cols = NAME_COLS;

	if (md)
		fprintf(out,
			"\n## Top %u by %s\n\n| self | self %% | total | total %% | function | binary |\n|---:|---:|---:|---:|---|---|\n",
			top, by);
	else
		fprintf(out, "\nTop %u by %s (%s)\n  %10s %6s  %10s %6s  %-*s  %s\n", top, by, unit,
			"self", "self%", "total", "total%", cols, "function", "binary");
	for (i = 0; i < nr && i < top; i++) {
		const struct report_frame *f = r->frames[ids[i]];

		if (md) {
			fprintf(out, "| %s | %.1f | %s | %.1f | ",
				render_value(r, self[ids[i]], a, sizeof(a)), pct(self[ids[i]], sum),
				render_value(r, total[ids[i]], b, sizeof(b)),
				pct(total[ids[i]], sum));
			render_md_frame(out, f);
		} else {
			fprintf(out, "  %10s %5.1f%%  %10s %5.1f%%  %-*s  %s\n",
				render_value(r, self[ids[i]], a, sizeof(a)), pct(self[ids[i]], sum),
				render_value(r, total[ids[i]], b, sizeof(b)),
				pct(total[ids[i]], sum), cols, cut(f->name, cutbuf, (size_t)cols),
				f->binary);
		}
	}
	if (!nr)
		fputs(md ? "| | | | | (no samples) | |\n" : "  (no samples)\n", out);
}

static void paths(FILE *out, const struct report *r, const uint32_t *ids, size_t nr, unsigned int n,
		  const uint64_t *stack_values, const uint64_t *self, uint64_t sum, bool md)
{
	size_t i;
	uint32_t j;

	if (!nr || !n)
		return;
	fprintf(out,
		md ? "\n## Heaviest call paths\n\nFor the top %u by self: the path that "
		     "leads to each most often, root first, and its share.\n\n" :
		     "\nHeaviest call paths to the top %u by self (root first)\n",
		n);
	for (i = 0; i < nr && i < n; i++) {
		uint64_t value;
		uint32_t depth = 0;
		int64_t s = heaviest_path(r, stack_values, ids[i], &depth, &value);
		const struct report_stack *st;

		if (s < 0)
			continue;
		st = r->stacks[s];
		if (md) {
			fprintf(out, "%zu. ", i + 1);
			render_md_code(out, r->frames[ids[i]]->name);
			fprintf(out, " (%.1f %% self); this path %.1f %%:", pct(self[ids[i]], sum),
				pct(value, sum));
			for (j = 0; j < depth; j++) {
				fputs(j ? " → " : " ", out);
				render_md_code(out, r->frames[st->frames[j]]->name);
			}
			fputc('\n', out);
			continue;
		}
		fprintf(out, "  %s  %.1f%% self; this path %.1f%%:\n   ", r->frames[ids[i]]->name,
			pct(self[ids[i]], sum), pct(value, sum));
		for (j = 0; j < depth; j++) {
			/* Long chains: the first three and the last eight frames. */
			if (depth > 12 && j == 3) {
				fprintf(out, " > ... (%u more)", depth - 11);
				j = depth - 9;
				continue;
			}
			fprintf(out, "%s%s", j ? " > " : " ", r->frames[st->frames[j]]->name);
		}
		fputc('\n', out);
	}
}

static void header(FILE *out, const struct report *r, const struct summary *s,
		   const struct render_opts *o, bool md)
{
	char a[32], b[32], c[32], d[32], e[32], t1[32], t2[32];
	const struct report_load_stats *st = o->stats;

	fprintf(out,
		md ? "# ignis report (%s)\n\n- **Windows:** %zu" :
		     "ignis report (%s): %zu window%s",
		r->type == REPORT_CPU ? "CPU" : "off-CPU", s->windows,
		md		? "" :
		s->windows == 1 ? "" :
				  "s");
	if (s->windows)
		fprintf(out, ", %s to %s UTC (%s)", render_time(s->start_ns, t1, sizeof(t1)),
			render_time(s->end_ns, t2, sizeof(t2)) +
				11 * (s->end_ns / 86400000000000ULL ==
				      s->start_ns / 86400000000000ULL),
			duration(s->end_ns - s->start_ns, a, sizeof(a)));
	print_hosts(out, r, s);
	fputc('\n', out);
	if (s->accounted)
		fprintf(out,
			"%sSamples%s %s taken (%.1f Hz per CPU, %u CPUs): %s idle, %s filtered, %s "
			"profiled, %s dropped (%.2f %%)%s\n",
			md ? "- **" : "", md ? ":**" : ":", thousands(s->taken, a, sizeof(a)),
			s->rate_sum / (double)s->accounted, s->max_cpus,
			thousands(s->idle, b, sizeof(b)), thousands(s->filtered, c, sizeof(c)),
			thousands(s->profiled, d, sizeof(d)), thousands(s->dropped, e, sizeof(e)),
			pct(s->dropped, s->taken),
			s->accounted < s->windows ? " (windows of the agent only)" : "");
	fprintf(out, "%sSelected%s %s %s of %s in the profiles (%.1f %%)", md ? "- **" : "",
		md ? ":**" : ":", render_value(r, s->value, a, sizeof(a)),
		r->type == REPORT_CPU ? "samples" : "off CPU",
		render_value(r, s->value_all, b, sizeof(b)), pct(s->value, s->value_all));
	if (r->type == REPORT_CPU && r->period_ns)
		fprintf(out, ", %s of CPU time", duration(s->value * r->period_ns, c, sizeof(c)));
	fputc('\n', out);
	if (st)
		fprintf(out,
			"%sFiles%s %zu read, %zu outside the selection, %zu unreadable or corrupt, "
			"%zu not CPU profiles\n",
			md ? "- **" : "", md ? ":**" : ":",
			st->files - st->outside - st->bad - st->foreign, st->outside, st->bad,
			st->foreign);
}

int report_render_text(FILE *out, const struct report *r, const struct render_opts *o,
		       bool markdown)
{
	uint64_t *stack_values = calloc(r->nr_stacks + 1, sizeof(uint64_t));
	uint64_t *self = calloc(r->nr_frames + 1, sizeof(uint64_t));
	uint64_t *total = calloc(r->nr_frames + 1, sizeof(uint64_t)), sum;
	uint32_t *by_self = NULL, *by_total = NULL;
	struct report_range all = REPORT_RANGE_ALL;
	size_t nr_self = 0, nr_total = 0;
	struct summary s;
	int err = -ENOMEM;

	if (!stack_values || !self || !total)
		goto out;
	summarize(r, &s);
	sum = report__sum_stacks(r, &all, stack_values);
	err = report__frame_values(r, stack_values, self, total);
	if (err)
		goto out;
	err = -ENOMEM;
	by_self = rank(r, self, &nr_self);
	by_total = rank(r, total, &nr_total);
	if (!by_self || !by_total)
		goto out;
	header(out, r, &s, o, markdown);
	timeline(out, r, &s, markdown);
	top_table(out, r, by_self, nr_self, o->top, self, total, sum, "self", markdown);
	top_table(out, r, by_total, nr_total, o->top, self, total, sum, "total", markdown);
	paths(out, r, by_self, nr_self, o->paths, stack_values, self, sum, markdown);
	err = ferror(out) ? -EIO : 0;
out:
	free(stack_values);
	free(self);
	free(total);
	free(by_self);
	free(by_total);
	return err;
}

/* ---- Folded stacks -------------------------------------------------------------------------- */

struct folded_line {
	char *text;
	uint64_t value;
};

static int cmp_folded(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->text, ((const struct folded_line *)b)->text);
}

/* A frame's name as a folded field: ';' separates frames and a newline ends the line. */
static void folded_name(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc(*s == ';' ? ':' : *s == '\n' || *s == '\r' ? ' ' : *s, f);
}

int report_render_folded(FILE *out, const struct report *r)
{
	uint64_t *stack_values = calloc(r->nr_stacks + 1, sizeof(uint64_t));
	struct report_range all = REPORT_RANGE_ALL;
	struct folded_line *lines = NULL;
	size_t nr = 0, i, len;
	int err = -ENOMEM;
	uint32_t j;

	if (!stack_values)
		return -ENOMEM;
	report__sum_stacks(r, &all, stack_values);
	lines = calloc(r->nr_stacks + 1, sizeof(*lines));
	if (!lines)
		goto out;
	for (i = 0; i < r->nr_stacks; i++) {
		const struct report_stack *s = r->stacks[i];
		FILE *m;

		if (!stack_values[i])
			continue;
		m = open_memstream(&lines[nr].text, &len);
		if (!m)
			goto out;
		for (j = 0; j < s->nr; j++) {
			if (j)
				fputc(';', m);
			folded_name(m, r->frames[s->frames[j]]->name);
		}
		if (!s->nr)
			fputs("[no frames]", m);
		if (fclose(m))
			goto out;
		lines[nr++].value = stack_values[i];
	}
	qsort(lines, nr, sizeof(*lines), cmp_folded);
	for (i = 0; i < nr; i++)
		fprintf(out, "%s %" PRIu64 "\n", lines[i].text, lines[i].value);
	err = ferror(out) ? -EIO : 0;
out:
	for (i = 0; lines && i < nr; i++)
		free(lines[i].text);
	free(lines);
	free(stack_values);
	return err;
}

/* ---- HTML data ------------------------------------------------------------------------------ */

void render_json_string(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', out);
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p == '/' && p > (const unsigned char *)s && p[-1] == '<')
			fputs("\\/", out);
		else if (*p < 0x20)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

int render_json_tables(FILE *out, const struct report *r, const uint32_t *stack_map, size_t nr_kept)
{
	uint32_t *order = NULL, j;
	size_t i;

	fputs("\"frames\":[", out);
	for (i = 0; i < r->nr_frames; i++) {
		const struct report_frame *f = r->frames[i];

		fputs(i ? ",[" : "[", out);
		render_json_string(out, f->name);
		fputc(',', out);
		render_json_string(out, f->binary);
		fputc(',', out);
		render_json_string(out, f->file);
		fprintf(out, ",%" PRId64 "]", f->line);
	}
	/* The last frame stands for the stacks folded away. */
	fprintf(out, "%s[\"[other stacks]\",\"\",\"\",0]],\n\"stacks\":[", r->nr_frames ? "," : "");
	order = malloc((nr_kept + 1) * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (i = 0; i < r->nr_stacks; i++)
		if (!stack_map || stack_map[i])
			order[stack_map ? stack_map[i] - 1 : i] = (uint32_t)i;
	for (i = 0; i < nr_kept; i++) {
		const struct report_stack *s = r->stacks[order[i]];

		fputs(i ? ",[" : "[", out);
		for (j = 0; j < s->nr; j++)
			fprintf(out, j ? ",%u" : "%u", s->frames[j]);
		fputc(']', out);
	}
	fprintf(out, "%s[%zu]],\n", nr_kept ? "," : "", r->nr_frames);
	free(order);
	return 0;
}

struct html_ctx {
	const struct report *r;
	const struct render_opts *o;
	const char *title;
};

static int cmp_u64_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

ssize_t render_keep_stacks(const struct report *r, const uint64_t *values, size_t max,
			   uint32_t *stack_map)
{
	uint64_t threshold = 0, *sorted;
	size_t i, kept = 0, nr = 0;

	for (i = 0; i < r->nr_stacks; i++)
		nr += values[i] != 0;
	if (nr > max) {
		sorted = malloc(nr * sizeof(*sorted));
		if (!sorted)
			return -ENOMEM;
		for (i = 0, nr = 0; i < r->nr_stacks; i++)
			if (values[i])
				sorted[nr++] = values[i];
		qsort(sorted, nr, sizeof(*sorted), cmp_u64_desc);
		threshold = sorted[max - 1];
		free(sorted);
	}
	for (i = 0; i < r->nr_stacks; i++) {
		stack_map[i] = 0;
		if (values[i] && values[i] >= (threshold ? threshold : 1) && kept < max)
			stack_map[i] = (uint32_t)++kept;
	}
	return (ssize_t)kept;
}

static int write_report_data(FILE *out, void *arg)
{
	struct html_ctx *c = arg;
	const struct report *r = c->r;
	struct report_range all = REPORT_RANGE_ALL;
	uint64_t *values = calloc(r->nr_stacks + 1, sizeof(uint64_t)), *bucket = NULL;
	uint32_t *map = calloc(r->nr_stacks + 1, sizeof(uint32_t));
	uint64_t step = 1, first, nb, b, other;
	struct summary s;
	size_t i, j, w;
	ssize_t kept;
	int err = -ENOMEM;

	if (!values || !map)
		goto out;
	summarize(r, &s);
	report__sum_stacks(r, &all, values);
	kept = render_keep_stacks(r, values, c->o->max_stacks, map);
	if (kept < 0)
		goto out;
	fputs("{\"version\":1,\"kind\":\"report\",\"title\":", out);
	render_json_string(out, c->title);
	fprintf(out, ",\"type\":\"%s\",\"unit\":\"%s\",\"period_ns\":%" PRIu64 ",\"hosts\":[",
		r->type == REPORT_CPU ? "cpu" : "offcpu",
		r->type == REPORT_CPU ? "samples" : "nanoseconds", r->period_ns);
	for (i = 0; i < s.nr_hosts; i++) {
		if (i)
			fputc(',', out);
		render_json_string(out, s.hosts[i].name);
	}
	fprintf(out,
		"],\"summary\":{\"windows\":%zu,\"samples\":%" PRIu64 ",\"start_ms\":%" PRIu64
		",\"end_ms\":%" PRIu64 "},\n",
		s.windows, s.value, s.start_ns / NSEC_PER_MSEC, s.end_ns / NSEC_PER_MSEC);
	err = render_json_tables(out, r, map, (size_t)kept);
	if (err)
		goto out;
	/* Buckets: one per window while they fit, else equal spans of time. */
	if (s.windows > HTML_BUCKETS)
		step = (s.end_ns - s.start_ns) / HTML_BUCKETS + 1;
	first = s.start_ns;
	nb = s.windows > HTML_BUCKETS ? HTML_BUCKETS : s.windows;
	bucket = calloc((size_t)kept + 1, sizeof(*bucket));
	if (!bucket) {
		err = -ENOMEM;
		goto out;
	}
	fputs("\"buckets\":[", out);
	for (b = 0, w = 0; b < nb && w < r->nr_windows; b++) {
		uint64_t start = s.windows > HTML_BUCKETS ? first + b * step :
							    r->windows[w].time_ns;
		uint64_t end = start, nw = 0;

		memset(bucket, 0, ((size_t)kept + 1) * sizeof(*bucket));
		other = 0;
		for (; w < r->nr_windows; w++) {
			const struct report_window *win = &r->windows[w];

			if (s.windows > HTML_BUCKETS ? win->time_ns >= start + step : nw == 1)
				break;
			nw++;
			if (win->time_ns + win->duration_ns > end)
				end = win->time_ns + win->duration_ns;
			for (j = 0; j < win->nr_pairs; j++) {
				const struct report_pair *p = &r->pairs[win->first_pair + j];

				if (map[p->stack])
					bucket[map[p->stack] - 1] += p->value;
				else
					other += p->value;
			}
		}
		if (!nw)
			continue;
		fprintf(out, "%s[%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",[", b ? ",\n" : "",
			start / NSEC_PER_MSEC, (end - start) / NSEC_PER_MSEC, nw);
		for (i = 0, j = 0; i < (size_t)kept; i++)
			if (bucket[i])
				fprintf(out, j++ ? ",%zu,%" PRIu64 : "%zu,%" PRIu64, i, bucket[i]);
		if (other)
			fprintf(out, j ? ",%zd,%" PRIu64 : "%zd,%" PRIu64, kept, other);
		fputs("]]", out);
	}
	fputs("]}\n", out);
	err = ferror(out) ? -EIO : 0;
out:
	free(values);
	free(map);
	free(bucket);
	return err;
}

int report_render_html(FILE *out, const struct report *r, const struct render_opts *o)
{
	char title[512], t1[32], t2[32];
	struct html_ctx c = { r, o, o->title };
	struct summary s;

	if (!c.title) {
		summarize(r, &s);
		snprintf(title, sizeof(title), "ignis %s profile%s%s, %s to %s UTC",
			 r->type == REPORT_CPU ? "CPU" : "off-CPU", s.nr_hosts == 1 ? ": " : "",
			 s.nr_hosts == 1 ? s.hosts[0].name : "",
			 render_time(s.start_ns, t1, sizeof(t1)),
			 render_time(s.end_ns, t2, sizeof(t2)));
		c.title = title;
	}
	return report_html_write(out, c.title, write_report_data, &c);
}
