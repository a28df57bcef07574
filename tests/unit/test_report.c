// SPDX-License-Identifier: Apache-2.0
/*
 * ignis report and diff: the pprof decoder (round trip and hostile input), the report model
 * (frames, stacks, filters, windows), folder loading, time parsing, the diff's noise floor and
 * gates, and the text, Markdown and folded outputs against golden files
 * (tests/data/golden/; IGNIS_UPDATE_GOLDEN=1 rewrites them).
 */
#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "unit.h"

#include "../../agent/profile/pprof.h"
#include "../../agent/profile/profile.h"
#include "../../agent/report/diff.h"
#include "../../agent/report/load.h"
#include "../../agent/report/render.h"
#include "../../agent/report/report.h"

#define T0 1796191200ULL /* 2026-12-02 06:00:00 UTC */
#define SEC 1000000000ULL

#ifndef FIXTURE_SRC
#error "FIXTURE_SRC must name tests/data/src"
#endif
#define GOLDEN_DIR FIXTURE_SRC "/../golden"

/* A sample to build: frames leaf first, "binary:name" or "name" (binary "app"). */
struct spec {
	uint32_t pid;
	const char *comm;
	const char *frames[8];
	uint64_t count;
	uint64_t offcpu_ns;
	const char *unit; /* a label, or NULL */
};

static int64_t location(struct profile *p, const char *frame)
{
	const char *colon = strchr(frame, ':');
	char binary[64] = "app", name[128];
	struct profile_mapping m = { .memory_limit = UINT64_MAX, .has_functions = true };
	struct profile_line line;
	int64_t mapping, fn;

	if (colon) {
		snprintf(binary, sizeof(binary), "%.*s", (int)(colon - frame), frame);
		frame = colon + 1;
	}
	snprintf(name, sizeof(name), "%s", frame);
	m.filename = profile__string(p, binary[0] == '[' ? binary : binary);
	m.build_id = profile__string(p, "00112233");
	mapping = profile__mapping(p, binary, strlen(binary), &m);
	assert_true(mapping > 0);
	if (!strcmp(name, "?")) /* an unnamed frame: address only */
		return profile__add_location(p, (uint64_t)mapping, 0x1234, 0, NULL, 0);
	fn = profile__function(p, name, name, "/src/app.c", 10);
	assert_true(fn > 0);
	line = (struct profile_line){ .function_id = (uint64_t)fn, .line = 12 };
	return profile__add_location(p, (uint64_t)mapping, hash_str(name) & 0xffffff, 0, &line, 1);
}

static struct profile *window(uint64_t start_s, const char *host, uint64_t seq,
			      const struct spec *specs, size_t nr, bool offcpu)
{
	struct profile_opts o = { .types = offcpu ? PROFILE_CPU_OFFCPU : PROFILE_CPU,
				  .period_ns = 10000000,
				  .time_ns = start_s * SEC,
				  .duration_ns = 10 * SEC };
	struct profile *p = profile__new(&o);
	uint64_t profiled = 0;
	char line[256];
	size_t i, j;

	assert_non_null(p);
	for (i = 0; i < nr; i++) {
		uint64_t locs[8];
		struct profile_label l[4];
		uint32_t n = 0, nl = 0;

		for (j = 0; j < 8 && specs[i].frames[j]; j++) {
			int64_t id = location(p, specs[i].frames[j]);

			assert_true(id > 0);
			locs[n++] = (uint64_t)id;
		}
		l[nl++] = (struct profile_label){ .key = profile__string(p, "pid"),
						  .num = specs[i].pid };
		l[nl++] = (struct profile_label){ .key = profile__string(p, "comm"),
						  .str = profile__string(p, specs[i].comm) };
		if (specs[i].unit)
			l[nl++] = (struct profile_label){ .key = profile__string(p, "unit"),
							  .str = profile__string(p, specs[i].unit) };
		assert_int_equal(profile__add_group_values(p, 0, locs, n, l, nl, specs[i].count,
							   specs[i].offcpu_ns),
				 0);
		profiled += specs[i].count;
	}
	snprintf(line, sizeof(line), "ignis 0.1.0 (git abc) on %s, window %llu", host,
		 (unsigned long long)seq);
	assert_int_equal(profile__comment(p, line), 0);
	snprintf(line, sizeof(line),
		 "samples %llu (100.0 Hz per CPU on 2 CPUs): %llu idle, 0 filtered, %llu profiled, "
		 "1 dropped",
		 (unsigned long long)(2000), (unsigned long long)(2000 - profiled - 1),
		 (unsigned long long)profiled);
	assert_int_equal(profile__comment(p, line), 0);
	return p;
}

static void write_window(const char *dir, struct profile *p, const char *host, uint64_t seq)
{
	time_t t = (time_t)(p->opts.time_ns / SEC);
	char path[512], stamp[32];
	uint8_t *buf;
	size_t len;
	struct tm tm;
	FILE *f;

	gmtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(path, sizeof(path), "%s/%s_%s_w%06llu.pb.gz", dir, stamp, host,
		 (unsigned long long)seq);
	assert_int_equal(pprof_encode(p, 6, &buf, &len), 0);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	fclose(f);
	free(buf);
	profile__free(p);
}

/* The app: 70 % hot_a and 30 % hot_b, or the other way round; a shell beside it. */
static void app_window(const char *dir, uint64_t start_s, uint64_t seq, uint64_t a, uint64_t b)
{
	const struct spec specs[] = {
		{ 100, "app", { "hot_a", "phase_a", "worker", "main" }, a, 0, "app.service" },
		{ 100, "app", { "hot_b", "phase_b", "worker", "main" }, b, 0, "app.service" },
		{ 101, "app", { "[kernel.kallsyms]:clear_page", "hot_a", "phase_a", "worker", "main" },
		  3, 0, "app.service" },
		{ 200, "bash", { "libc.so.6:?", "libc.so.6:read", "bash:main" }, 7, 0, NULL },
	};

	write_window(dir, window(start_s, "web-1", seq, specs, ARRAY_SIZE(specs), false), "web-1",
		     seq);
}

static char *make_dir(void)
{
	char tmpl[] = "/tmp/ignis-report-XXXXXX", *d = mkdtemp(tmpl);

	assert_non_null(d);
	return strdup(d);
}

static void remove_dir(char *dir)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	free(dir);
}

static struct report *load(const char *dir, const struct report_filter *f,
			   const struct report_select *sel, struct report_load_stats *st,
			   FILE *err)
{
	struct report *r = report__new(REPORT_CPU, f);
	char *paths[] = { (char *)dir };
	struct report_select none = { 0 };

	assert_non_null(r);
	assert_int_equal(report_load(r, paths, 1, sel ? sel : &none, 0, err, st), 0);
	report__sort(r);
	return r;
}

static int64_t frame_named(const struct report *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->nr_frames; i++)
		if (!strcmp(r->frames[i]->name, name))
			return (int64_t)i;
	return -1;
}

/* ---- The decoder ---------------------------------------------------------------------------- */

static void test_decode_round_trip(void **state)
{
	const struct spec specs[] = {
		{ 7, "srv", { "leaf", "mid", "libc.so.6:?", "main" }, 5, 0, "srv.service" },
		{ 8, "srv", { "leaf", "main" }, 3, 2000000, NULL },
	};
	struct profile *p = window(T0, "h", 4, specs, 2, true), *q = NULL;
	const char *why = "unset";
	uint8_t *buf;
	size_t len, i;
	int gz;

	(void)state;
	for (gz = -1; gz <= 6; gz += 7) {
		assert_int_equal(pprof_encode(p, gz, &buf, &len), 0);
		assert_int_equal(pprof_decode(buf, len, &q, &why), 0);
		free(buf);
		assert_int_equal(q->opts.types, PROFILE_CPU_OFFCPU);
		assert_int_equal(q->opts.period_ns, 10000000);
		assert_int_equal(q->opts.time_ns, T0 * SEC);
		assert_int_equal(q->opts.duration_ns, 10 * SEC);
		assert_int_equal(q->nr_samples, 2);
		assert_int_equal(q->total_count, 8);
		assert_int_equal(q->total_offcpu_ns, 2000000);
		assert_int_equal(q->nr_comments, 2);
		assert_string_equal(profile__str(q, q->comments[0]),
				    "ignis 0.1.0 (git abc) on h, window 4");
		for (i = 0; i < q->nr_samples; i++) {
			const struct profile_sample *s = &q->samples[i];
			const struct profile_location *leaf = profile__location(q, s->locations[0]);
			const struct profile_function *f =
				profile__function_by_id(q, q->lines[leaf->first_line].function_id);

			assert_string_equal(profile__str(q, f->name), "leaf");
			assert_string_equal(profile__str(q, s->labels[0].key), "pid");
			assert_int_equal(s->labels[0].num, s->values[0] == 5 ? 7 : 8);
			assert_int_equal(s->values[1], s->values[0] * 10000000);
		}
		/* The unnamed libc frame kept its mapping and address, and no line. */
		for (i = 0; i < q->nr_locations; i++)
			if (q->locations[i].address == 0x1234)
				break;
		assert_true(i < q->nr_locations);
		assert_int_equal(q->locations[i].nr_lines, 0);
		assert_string_equal(
			profile__str(q, q->mappings[q->locations[i].mapping_id - 1].filename),
			"libc.so.6");
		profile__free(q);
	}
	profile__free(p);
}

static void test_decode_rejects_hostile_input(void **state)
{
	const struct spec specs[] = { { 7, "srv", { "leaf", "main" }, 5, 0, NULL } };
	struct profile *p = window(T0, "h", 1, specs, 1, false), *q = NULL;
	static const uint8_t junk[] = { 0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2 };
	const char *why;
	uint8_t *buf, *raw;
	size_t len, raw_len, cut;

	(void)state;
	assert_int_equal(pprof_encode(p, 6, &buf, &len), 0);
	/* Truncated anywhere: an error with a reason, never a crash. */
	for (cut = 0; cut < len; cut += 7) {
		why = NULL;
		assert_int_equal(pprof_decode(buf, cut, &q, &why), -EINVAL);
		assert_null(q);
		assert_non_null(why);
	}
	/* A flipped byte in the deflate stream: the CRC or the stream catches it. */
	buf[len / 2] ^= 0x55;
	assert_true(pprof_decode(buf, len, &q, &why) < 0);
	free(buf);
	assert_int_equal(pprof_decode(junk, sizeof(junk), &q, &why), -EINVAL);
	assert_int_equal(pprof_decode((const uint8_t *)"", 0, &q, &why), -EINVAL);

	/* Raw protobuf, every byte of it cut: invalid or (a prefix that is a valid message
	 * without sample types) foreign, never accepted with a dangling reference. */
	assert_int_equal(pprof_encode(p, -1, &raw, &raw_len), 0);
	for (cut = 1; cut < raw_len; cut++) {
		int err = pprof_decode(raw, cut, &q, &why);

		if (!err) {
			/* A prefix may end at a message boundary: then it must be whole. */
			profile__free(q);
			continue;
		}
		assert_true(err == -EINVAL || err == -EPROTONOSUPPORT);
	}
	free(raw);
	profile__free(p);
}

static void test_decode_foreign_profile(void **state)
{
	/* A heap profile: sample types alloc_space/bytes only (hand-encoded profile.proto:
	 * sample_type {type: 1 unit: 2}, string_table "", "alloc_space", "bytes"). */
	static const uint8_t heap[] = { 0x0a, 0x04, 0x08, 0x01, 0x10, 0x02, 0x32, 0x00,
					0x32, 0x0b, 'a',  'l',	'l',  'o',  'c',  '_',
					's',  'p',  'a',  'c',	'e',  0x32, 0x05, 'b',
					'y',  't',  'e',  's' };
	/* A string index past the table: sample_type {type: 9 unit: 2}. */
	static const uint8_t bad_index[] = { 0x0a, 0x04, 0x08, 0x09, 0x10, 0x02, 0x32, 0x00 };
	struct profile *q = NULL;
	const char *why = NULL;

	(void)state;
	assert_int_equal(pprof_decode(heap, sizeof(heap), &q, &why), -EPROTONOSUPPORT);
	assert_non_null(why);
	assert_true(strstr(why, "sample type") != NULL);
	assert_int_equal(pprof_decode(bad_index, sizeof(bad_index), &q, &why), -EPROTONOSUPPORT);
	assert_null(q);
}

/* ---- The report model ----------------------------------------------------------------------- */

static void test_report_frames_stacks_filters(void **state)
{
	char *dir = make_dir();
	struct report_load_stats st = { 0 };
	uint32_t pid = 200;
	char *comm[] = { "ap*" }, *service[] = { "app" }, *label[] = { "pid=101" };
	struct report_filter by_pid = { .pids = &pid, .nr_pids = 1 };
	struct report_filter by_comm = { .comms = comm, .nr_comms = 1 };
	struct report_filter by_service = { .services = service, .nr_services = 1 };
	struct report_filter by_label = { .labels = label, .nr_labels = 1 };
	struct report_range all = REPORT_RANGE_ALL;
	uint64_t *sv, *self, *total;
	struct report *r;
	int64_t a, b, main_id, unnamed, kernel;

	(void)state;
	app_window(dir, T0, 0, 70, 30);
	app_window(dir, T0 + 10, 1, 70, 30);
	r = load(dir, NULL, NULL, &st, stderr);
	assert_int_equal(r->nr_windows, 2);
	assert_int_equal(st.windows, 2);
	assert_string_equal(r->windows[0].host, "web-1");
	assert_int_equal(r->windows[1].seq, 1);
	assert_true(r->windows[0].has_accounting);
	assert_int_equal(r->windows[0].taken, 2000);
	assert_int_equal(r->windows[0].dropped, 1);
	assert_int_equal(r->windows[0].value, 110);
	assert_int_equal(r->period_ns, 10000000);

	sv = calloc(r->nr_stacks, sizeof(*sv));
	self = calloc(r->nr_frames, sizeof(*self));
	total = calloc(r->nr_frames, sizeof(*total));
	assert_int_equal(report__sum_stacks(r, &all, sv), 220);
	assert_int_equal(report__frame_values(r, sv, self, total), 0);
	a = frame_named(r, "hot_a");
	b = frame_named(r, "hot_b");
	main_id = frame_named(r, "main");
	unnamed = frame_named(r, "[libc.so.6]");
	kernel = frame_named(r, "clear_page");
	assert_true(a >= 0 && b >= 0 && main_id >= 0 && unnamed >= 0 && kernel >= 0);
	assert_int_equal(self[a], 140);
	assert_int_equal(total[a], 146); /* and under the kernel frame */
	assert_int_equal(self[b], 60);
	/* "main" of app and of bash are two frames: their binaries differ. */
	assert_int_equal(total[main_id], 206);
	assert_string_equal(r->frames[unnamed]->binary, "libc.so.6");
	assert_int_equal(self[unnamed], 14);
	assert_string_equal(r->frames[kernel]->binary, "[kernel.kallsyms]");
	/* Each stack is root first. */
	assert_int_equal(r->stacks[0]->frames[0], main_id);
	free(sv);
	free(self);
	free(total);
	report__free(r);

	r = load(dir, &by_pid, NULL, &st, stderr);
	assert_int_equal(r->windows[0].value, 7);
	assert_int_equal(r->windows[0].value_all, 110);
	report__free(r);
	r = load(dir, &by_comm, NULL, &st, stderr);
	assert_int_equal(r->windows[0].value, 103);
	report__free(r);
	r = load(dir, &by_service, NULL, &st, stderr); /* app.service -> app */
	assert_int_equal(r->windows[0].value, 103);
	report__free(r);
	r = load(dir, &by_label, NULL, &st, stderr); /* a numeric label, printed */
	assert_int_equal(r->windows[0].value, 3);
	report__free(r);
	remove_dir(dir);
}

static void test_report_recursion_counts_once(void **state)
{
	char *dir = make_dir();
	const struct spec specs[] = {
		{ 1, "r", { "leaf", "rec", "rec", "rec", "main" }, 10, 0, NULL },
	};
	struct report_range all = REPORT_RANGE_ALL;
	uint64_t sv[4], self[8], total[8];
	struct report_load_stats st = { 0 };
	struct report *r;

	(void)state;
	write_window(dir, window(T0, "h", 0, specs, 1, false), "h", 0);
	r = load(dir, NULL, NULL, &st, stderr);
	assert_true(r->nr_stacks <= 4 && r->nr_frames <= 8);
	report__sum_stacks(r, &all, sv);
	assert_int_equal(report__frame_values(r, sv, self, total), 0);
	assert_int_equal(total[frame_named(r, "rec")], 10);
	assert_int_equal(self[frame_named(r, "leaf")], 10);
	report__free(r);
	remove_dir(dir);
}

static void test_report_offcpu_time(void **state)
{
	char *dir = make_dir(), *out = NULL;
	const struct spec specs[] = {
		{ 1, "db", { "io_wait", "query", "main" }, 2, 1500000000, NULL },
		{ 1, "db", { "lock_wait", "query", "main" }, 0, 250000000, NULL },
		{ 2, "cpu", { "spin", "main" }, 50, 0, NULL },
	};
	struct render_opts ro = { .top = 3, .paths = 1 };
	struct report_select none = { 0 };
	struct report_load_stats st = { 0 };
	char *paths[] = { dir };
	struct report *r;
	size_t len;
	FILE *f;

	(void)state;
	write_window(dir, window(T0, "h", 0, specs, ARRAY_SIZE(specs), true), "h", 0);
	r = report__new(REPORT_OFFCPU, NULL);
	assert_int_equal(report_load(r, paths, 1, &none, 0, stderr, &st), 0);
	assert_int_equal(r->nr_windows, 1);
	assert_int_equal(r->windows[0].value, 1750000000);
	assert_int_equal(r->period_ns, 0);
	f = open_memstream(&out, &len);
	assert_int_equal(report_render_text(f, r, &ro, false), 0);
	fclose(f);
	/* Time, not samples; the CPU-only stack is not there. */
	assert_non_null(strstr(out, "ignis report (off-CPU)"));
	assert_non_null(strstr(out, "Selected: 1.75 s off CPU"));
	assert_non_null(strstr(out, "1.50 s  85.7%"));
	assert_null(strstr(out, "spin"));
	free(out);
	report__free(r);
	remove_dir(dir);
}

static void test_load_skips_bad_files_and_selects_by_time(void **state)
{
	char *dir = make_dir(), path[600], *errbuf = NULL;
	struct report_load_stats st = { 0 };
	struct report_select sel = { .since_ns = (T0 + 10) * SEC, .until_ns = (T0 + 30) * SEC };
	char *hosts[] = { "mail-*" };
	size_t errlen;
	FILE *err;
	struct report *r;
	int fd;

	(void)state;
	for (int i = 0; i < 4; i++)
		app_window(dir, T0 + 10 * (uint64_t)i, (uint64_t)i, 70, 30);
	/* Truncated, not gzip, empty, hidden (a write in progress), not a profile name. */
	snprintf(path, sizeof(path), "%s/20261202T060100Z_web-1_w000006.pb.gz", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_int_equal(write(fd, "\x1f\x8b\x08\x00\x00", 5), 5);
	close(fd);
	snprintf(path, sizeof(path), "%s/other.pprof", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_int_equal(write(fd, "hello, world\n", 13), 13);
	close(fd);
	snprintf(path, sizeof(path), "%s/empty.pb", dir);
	close(open(path, O_WRONLY | O_CREAT, 0600));
	snprintf(path, sizeof(path), "%s/.20261202T060200Z_web-1_w000007.pb.gz.tmp", dir);
	close(open(path, O_WRONLY | O_CREAT, 0600));
	snprintf(path, sizeof(path), "%s/notes.txt", dir);
	close(open(path, O_WRONLY | O_CREAT, 0600));

	err = open_memstream(&errbuf, &errlen);
	r = load(dir, NULL, NULL, &st, err);
	fclose(err);
	assert_int_equal(r->nr_windows, 4);
	assert_int_equal(st.bad, 3);
	assert_true(strstr(errbuf, "w000006.pb.gz: skipped: not a valid pprof profile: "
				   "truncated gzip stream") != NULL);
	assert_true(strstr(errbuf, "other.pprof: skipped") != NULL);
	free(errbuf);
	report__free(r);

	/* By time: the windows starting at T0+10 and T0+20; the others are passed over by
	 * name, unread (the truncated one among them: no complaint). */
	memset(&st, 0, sizeof(st));
	err = open_memstream(&errbuf, &errlen);
	r = load(dir, NULL, &sel, &st, err);
	fclose(err);
	assert_int_equal(r->nr_windows, 2);
	assert_int_equal(r->windows[0].time_ns, (T0 + 10) * SEC);
	assert_int_equal(r->windows[1].time_ns, (T0 + 20) * SEC);
	assert_true(strstr(errbuf, "w000006") == NULL);
	free(errbuf);
	report__free(r);

	/* Two hosts in one folder: told apart in the header. */
	write_window(dir, window(T0 + 5, "db-1", 0, (const struct spec[]){ { 9, "pg", { "scan" }, 40, 0, NULL } }, 1, false), "db-1", 0);
	memset(&st, 0, sizeof(st));
	r = load(dir, NULL, NULL, &st, stderr);
	{
		struct render_opts ro = { .top = 3 };
		char *text = NULL;
		size_t tlen;
		FILE *t = open_memstream(&text, &tlen);

		assert_int_equal(report_render_text(t, r, &ro, false), 0);
		fclose(t);
		assert_non_null(strstr(text, ", 2 hosts: web-1 (4 windows, 440 samples), db-1 (1 window, 40 samples)\n"));
		free(text);
	}
	report__free(r);

	/* By host: none of these. */
	sel = (struct report_select){ .hosts = hosts, .nr_hosts = 1 };
	memset(&st, 0, sizeof(st));
	err = open_memstream(&errbuf, &errlen);
	r = load(dir, NULL, &sel, &st, err);
	fclose(err);
	free(errbuf);
	assert_int_equal(r->nr_windows, 0);
	assert_int_equal(st.outside, 6);
	report__free(r);
	remove_dir(dir);
}

static void test_parse_time(void **state)
{
	uint64_t now = (T0 + 3600) * SEC, t;

	(void)state;
	assert_int_equal(report_parse_time("2026-12-02T06:00:00Z", now, &t), 0);
	assert_int_equal(t, T0 * SEC);
	assert_int_equal(report_parse_time("2026-12-02 07:30+01:30", now, &t), 0);
	assert_int_equal(t, T0 * SEC);
	assert_int_equal(report_parse_time("2026-12-02T06:00:01.5Z", now, &t), 0);
	assert_int_equal(t, T0 * SEC + 1500000000ULL);
	assert_int_equal(report_parse_time("2026-12-02Z", now, &t), 0);
	assert_int_equal(t, (T0 - 6 * 3600) * SEC);
	assert_int_equal(report_parse_time("15m", now, &t), 0);
	assert_int_equal(t, now - 900 * SEC);
	assert_int_equal(report_parse_time("-1h", now, &t), 0);
	assert_int_equal(t, T0 * SEC);
	assert_int_equal(report_parse_time("@1796191200", now, &t), 0);
	assert_int_equal(t, T0 * SEC);
	assert_int_equal(report_parse_time("now", now, &t), 0);
	assert_int_equal(t, now);
	assert_int_equal(report_parse_duration("500ms", &t), 0);
	assert_int_equal(t, 500000000ULL);
	assert_int_equal(report_parse_duration("1d", &t), 0);
	assert_int_equal(t, 86400 * SEC);
	assert_int_equal(report_parse_time("yesterday", now, &t), -EINVAL);
	assert_int_equal(report_parse_time("2026-13-02T06:00Z", now, &t), -EINVAL);
	assert_int_equal(report_parse_time("2026-12-02T06:00Q", now, &t), -EINVAL);
	assert_int_equal(report_parse_time("15x", now, &t), -EINVAL);
	assert_int_equal(report_parse_duration("-5m", &t), -EINVAL);
	assert_int_equal(report_parse_duration("", &t), -EINVAL);
}

/* ---- The diff ------------------------------------------------------------------------------- */

static struct report *two_sides(const char *base, const char *new_)
{
	struct report *r = report__new(REPORT_CPU, NULL);
	struct report_select none = { 0 };
	struct report_load_stats st = { 0 };
	char *b[] = { (char *)base }, *n[] = { (char *)new_ };

	assert_int_equal(report_load(r, b, 1, &none, 0, stderr, &st), 0);
	assert_int_equal(report_load(r, n, 1, &none, 1, stderr, &st), 0);
	report__sort(r);
	return r;
}

static const struct diff_change *change_of(const struct report *r, const struct diff_change *c,
					   size_t nr, const char *name)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (!strcmp(r->frames[c[i].frame]->name, name))
			return &c[i];
	return NULL;
}

static void test_diff_noise_floor_and_gates(void **state)
{
	char *base = make_dir(), *same = make_dir(), *flipped = make_dir();
	struct diff_opts o = { .z_min = 4, .min_points = 0.5, .top = 10 };
	struct diff_gate g[3];
	const struct diff_change *a;
	struct diff_change *c;
	struct report *r;
	size_t nr, i;
	char *out = NULL;
	size_t len;
	FILE *f;

	(void)state;
	for (i = 0; i < 20; i++) {
		app_window(base, T0 + 10 * i, i, 700, 300);
		/* The same workload, other noise: 690/310 is 0.6 sigma off at 20,000 samples. */
		app_window(same, T0 + 1000 + 10 * i, i, 690, 310);
		app_window(flipped, T0 + 2000 + 10 * i, i, 300, 700);
	}
	r = two_sides(base, flipped);
	assert_int_equal(report_diff(r, false, &o, &c, &nr), 0);
	a = change_of(r, c, nr, "hot_a");
	assert_non_null(a);
	assert_true(a->significant);
	assert_true(fabs(a->delta - (-40 * 1000.0 / 1010)) < 0.01);
	/* hot_b rose the most: first; hot_a fell the most: last. */
	assert_string_equal(r->frames[c[0].frame]->name, "hot_b");
	assert_string_equal(r->frames[c[nr - 1].frame]->name, "hot_a");
	free(c);
	assert_int_equal(diff_gate_parse("hot_b>+5%", &g[0]), 0);
	assert_true(g[0].by_total);
	assert_int_equal(diff_gate_parse("self:hot_a<-30%", &g[1]), 0);
	assert_false(g[1].by_total);
	assert_int_equal(diff_gate_parse("total:operator<<-1%", &g[2]), 0);
	assert_string_equal(g[2].glob, "operator<");
	assert_int_equal(diff_gate_parse("hot_b>5%", &g[2]), -EINVAL);
	assert_int_equal(diff_gate_parse(">+5%", &g[2]), -EINVAL);
	assert_int_equal(diff_gate_parse("hot_b>+5", &g[2]), -EINVAL);
	assert_int_equal(diff_gate_parse("hot_b>+0%", &g[2]), -EINVAL);
	f = open_memstream(&out, &len);
	assert_int_equal(diff_gates_check(r, &o, g, 2, f), 2);
	fclose(f);
	assert_true(strstr(out, "hot_b total 29.7 % -> 69.3 %") != NULL);
	free(out);
	/* A rise the other way does not trip a fall gate. */
	assert_int_equal(diff_gate_parse("hot_a>+1%", &g[0]), 0);
	assert_int_equal(diff_gates_check(r, &o, g, 1, stderr), 0);
	report__free(r);

	/* The same workload twice: nothing above the floor, no gate trips. */
	r = two_sides(base, same);
	assert_int_equal(report_diff(r, true, &o, &c, &nr), 0);
	for (i = 0; i < nr; i++)
		assert_false(c[i].significant);
	free(c);
	assert_int_equal(diff_gate_parse("*>+0.1%", &g[0]), 0);
	assert_int_equal(diff_gates_check(r, &o, g, 1, stderr), 0);
	report__free(r);
	remove_dir(base);
	remove_dir(same);
	remove_dir(flipped);
}

/* ---- Outputs against golden files ----------------------------------------------------------- */

static void golden(const char *name, const char *got)
{
	char path[600], *want;
	long size;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", GOLDEN_DIR, name);
	if (getenv("IGNIS_UPDATE_GOLDEN")) {
		f = fopen(path, "w");
		assert_non_null(f);
		fputs(got, f);
		fclose(f);
		return;
	}
	f = fopen(path, "r");
	if (!f)
		fail_msg("%s missing: run with IGNIS_UPDATE_GOLDEN=1 and review it", path);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	rewind(f);
	want = calloc(1, (size_t)size + 1);
	assert_int_equal(fread(want, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	if (strcmp(want, got))
		fail_msg("%s differs; got:\n%s", name, got);
	free(want);
}

static void test_outputs_match_golden_files(void **state)
{
	char *dir = make_dir(), *diff_dir = make_dir(), *out = NULL;
	struct report_load_stats st = { 0 };
	struct render_opts ro = { .top = 8, .paths = 3, .max_stacks = 100, .stats = &st };
	struct diff_opts o = { .z_min = 4, .min_points = 0.5, .top = 5, .base_label = "base",
			       .new_label = "new" };
	struct report *r;
	size_t len;
	FILE *f;

	(void)state;
	for (uint64_t i = 0; i < 12; i++)
		app_window(dir, T0 + 10 * i, i, i < 6 ? 70 : 45, i < 6 ? 30 : 105);
	for (uint64_t i = 0; i < 12; i++)
		app_window(diff_dir, T0 + 600 + 10 * i, i, 30, 70);
	r = load(dir, NULL, NULL, &st, stderr);
	f = open_memstream(&out, &len);
	assert_int_equal(report_render_text(f, r, &ro, false), 0);
	fclose(f);
	golden("report.txt", out);
	free(out);
	f = open_memstream(&out, &len);
	assert_int_equal(report_render_text(f, r, &ro, true), 0);
	fclose(f);
	golden("report.md", out);
	free(out);
	f = open_memstream(&out, &len);
	assert_int_equal(report_render_folded(f, r), 0);
	fclose(f);
	golden("report.folded", out);
	free(out);
	report__free(r);

	r = two_sides(dir, diff_dir);
	f = open_memstream(&out, &len);
	assert_int_equal(diff_render_text(f, r, &o, &ro, false), 0);
	fclose(f);
	golden("diff.txt", out);
	free(out);
	f = open_memstream(&out, &len);
	assert_int_equal(diff_render_text(f, r, &o, &ro, true), 0);
	fclose(f);
	golden("diff.md", out);
	free(out);
	report__free(r);
	remove_dir(dir);
	remove_dir(diff_dir);
}

UNIT_MAIN("report", cmocka_unit_test(test_decode_round_trip),
	  cmocka_unit_test(test_decode_rejects_hostile_input),
	  cmocka_unit_test(test_decode_foreign_profile),
	  cmocka_unit_test(test_report_frames_stacks_filters),
	  cmocka_unit_test(test_report_recursion_counts_once),
	  cmocka_unit_test(test_report_offcpu_time),
	  cmocka_unit_test(test_load_skips_bad_files_and_selects_by_time),
	  cmocka_unit_test(test_parse_time), cmocka_unit_test(test_diff_noise_floor_and_gates),
	  cmocka_unit_test(test_outputs_match_golden_files))
