// SPDX-License-Identifier: Apache-2.0
/*
 * Unwind tables (symbolizer/unwind.c) against an independent reading of the same call frame
 * information: binutils' `readelf --debug-dump=frames-interp`, which prints each FDE's rows as
 * "LOC CFA <registers...> ra" (CFA as rsp+8, rbp+16 or exp; a register as c-16 for "saved at
 * CFA - 16", u for undefined or not yet saved, s for unchanged). Every row readelf prints for
 * Debian's libc and liblzma and for fixtures built by tests/tests.mk (.eh_frame with a lazy
 * PLT, with an IBT PLT, .debug_frame only) must be the row sym_unwind_table__find() gives at
 * that LOC. The PLT rows are checked against the expression `readelf --debug-dump=frames`
 * prints; the addresses between FDEs must have no rule; bad input gets the documented errors.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit.h"

#include "../../symbolizer/symbolizer.h"

#define LIBC	"/lib/x86_64-linux-gnu/libc.so.6"
#define LIBLZMA "/lib/x86_64-linux-gnu/liblzma.so.5"

/* Mismatches printed before the test fails. */
#define MAX_SHOWN 20

/* One row as readelf prints it. */
struct ref_row {
	uint64_t loc;
	char cfa[32]; /* "rsp+8", "rbp+16", "exp", ... */
	char rbp[16]; /* "c-16", "u", "" when the FDE never mentions rbp, ... */
	char ra[16];  /* "c-8", "u", ... */
};

/* One FDE: its range, its rows (none printed when its instructions are all nops), its CIE's. */
struct ref_fde {
	uint64_t lo, hi;
	size_t first, nr; /* into ref.rows */
	struct ref_row cie_row;
	bool signal; /* its CIE has the 'S' augmentation */
};

struct ref_cie {
	uint64_t offset;
	struct ref_row row; /* the last row printed under it: its initial rules */
	bool signal;
};

struct ref {
	struct ref_row *rows;
	size_t nr_rows;
	struct ref_fde *fdes;
	size_t nr_fdes;
	struct ref_cie *cies;
	size_t nr_cies;
};

static void *grow(void *p, size_t n, size_t size)
{
	/* Capacity doubles at powers of two. */
	if (n && (n & (n - 1)))
		return p;
	p = realloc(p, (n ? 2 * n : 1) * size);
	assert_non_null(p);
	return p;
}

static void ref_free(struct ref *r)
{
	free(r->rows);
	free(r->fdes);
	free(r->cies);
	memset(r, 0, sizeof(*r));
}

/*
 * Split line at blanks into at most max tokens. A register held in another register reads
 * "r9 (r9)" or "r1 (rdx)": the parenthesis stays with the number before it.
 */
static int tokens(char *line, char **tok, int max)
{
	int n = 0;

	for (char *p = strtok(line, " \t\n"); p && n < max; p = strtok(NULL, " \t\n")) {
		if (p[0] == '(' && n)
			continue;
		tok[n++] = p;
	}
	return n;
}

/*
 * Parse readelf's interpretation of the section (".eh_frame" or ".debug_frame") of path.
 * readelf prints a column header before the rows of each CIE and FDE ("LOC CFA rbx rbp ra"),
 * then one row per instruction that moves the location.
 */
static void read_reference(const char *path, const char *section, struct ref *r)
{
	char cmd[512], line[1024], want[64], cols[32][16];
	int nr_cols = 0, rbp_col = -1, ra_col = -1;
	bool in_section = false, in_cie = false;
	struct ref_cie *cie = NULL;
	FILE *p;

	memset(r, 0, sizeof(*r));
	/* Not the separate debug file a debuglink names: this file's CFI only. */
	snprintf(cmd, sizeof(cmd),
		 "readelf --debug-dump=no-follow-links,frames-interp '%s' 2>/dev/null", path);
	snprintf(want, sizeof(want), "Contents of the %s section", section);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		unsigned long long off, len, id, a, b;
		char kind[16], *tok[40];
		int n;

		if (!strncmp(line, "Contents of the ", 16)) {
			in_section = !strncmp(line, want, strlen(want)) &&
				     strchr(": ", line[strlen(want)]);
			continue;
		}
		if (!in_section)
			continue;
		if (sscanf(line, "%llx %llx %llx %15s", &off, &len, &id, kind) == 4 &&
		    !strcmp(kind, "CIE")) {
			const char *aug = strchr(line, '"');
			const char *aug_end = aug ? strchr(aug + 1, '"') : NULL;

			r->cies = grow(r->cies, r->nr_cies, sizeof(*r->cies));
			cie = &r->cies[r->nr_cies++];
			memset(cie, 0, sizeof(*cie));
			cie->offset = off;
			cie->signal = aug && aug_end && memchr(aug, 'S', (size_t)(aug_end - aug));
			in_cie = true;
			continue;
		}
		if (sscanf(line, "%llx %llx %llx FDE cie=%llx pc=%llx..%llx", &off, &len, &id, &off,
			   &a, &b) == 6) {
			struct ref_fde *f;

			r->fdes = grow(r->fdes, r->nr_fdes, sizeof(*r->fdes));
			f = &r->fdes[r->nr_fdes++];
			memset(f, 0, sizeof(*f));
			f->lo = a;
			f->hi = b;
			f->first = r->nr_rows;
			for (size_t i = 0; i < r->nr_cies; i++) {
				if (r->cies[i].offset == off) {
					f->cie_row = r->cies[i].row;
					f->signal = r->cies[i].signal;
				}
			}
			in_cie = false;
			continue;
		}
		if (!strncmp(line, "   LOC ", 7)) {
			n = tokens(line, tok, 40);
			nr_cols = 0;
			rbp_col = ra_col = -1;
			for (int i = 0; i < n && nr_cols < 32; i++, nr_cols++) {
				snprintf(cols[nr_cols], sizeof(cols[0]), "%s", tok[i]);
				if (!strcmp(tok[i], "rbp"))
					rbp_col = nr_cols;
				else if (!strcmp(tok[i], "ra"))
					ra_col = nr_cols;
			}
			continue;
		}
		if (strspn(line, "0123456789abcdef") == 16 && line[16] == ' ') {
			struct ref_row row = { 0 };

			n = tokens(line, tok, 40);
			if (n != nr_cols || ra_col < 0 || n < 2)
				fail_msg("%s: a row readelf printed does not match its header: %s",
					 path, tok[0]);
			row.loc = strtoull(tok[0], NULL, 16);
			snprintf(row.cfa, sizeof(row.cfa), "%s", tok[1]);
			snprintf(row.ra, sizeof(row.ra), "%s", tok[ra_col]);
			if (rbp_col >= 0)
				snprintf(row.rbp, sizeof(row.rbp), "%s", tok[rbp_col]);
			if (in_cie && cie) {
				cie->row = row;
			} else if (r->nr_fdes) {
				r->rows = grow(r->rows, r->nr_rows, sizeof(*r->rows));
				r->rows[r->nr_rows++] = row;
				r->fdes[r->nr_fdes - 1].nr++;
			}
		}
	}
	assert_int_equal(pclose(p), 0);
	if (!r->nr_fdes)
		fail_msg("%s: readelf printed no FDE in %s", path, section);
}

static const char *const cfa_names[] = { "none",      "rsp",	     "rbp",   "plt",
					 "outermost", "unsupported", "signal" };
static const char *const rbp_names[] = { "same", "at-cfa", "undefined" };

/* "rsp+8" as register and offset; false for anything else ("exp"). */
static bool reg_plus(const char *s, char *reg, size_t size, int32_t *off)
{
	const char *sign = strpbrk(s, "+-");
	char *end;
	long v;

	if (!sign || sign == s || (size_t)(sign - s) >= size)
		return false;
	v = strtol(sign, &end, 10);
	if (*end)
		return false;
	memcpy(reg, s, (size_t)(sign - s));
	reg[sign - s] = '\0';
	*off = (int32_t)v;
	return true;
}

/*
 * The row readelf's reading gives, in our terms. Returns false when it does not match got,
 * with why.
 */
static bool row_matches(const struct ref_row *want, bool signal, const struct sym_unwind_row *got,
			char *why, size_t size)
{
	char reg[16];
	int32_t off;

	if (!got) {
		snprintf(why, size, "no row");
		return false;
	}
	if (!strcmp(want->ra, "u")) {
		snprintf(why, size, "ra undefined: want outermost");
		return got->cfa_rule == SYM_CFA_OUTERMOST;
	}
	if (signal) {
		/* The kernel's signal frame: the rules unwind.c checks before it says so. */
		snprintf(why, size, "signal frame: want signal or unsupported");
		return got->cfa_rule == SYM_CFA_SIGNAL || got->cfa_rule == SYM_CFA_UNSUPPORTED;
	}
	if (!strcmp(want->cfa, "exp")) {
		snprintf(why, size, "CFA expression: want plt or unsupported");
		return got->cfa_rule == SYM_CFA_PLT || got->cfa_rule == SYM_CFA_UNSUPPORTED;
	}
	if (!reg_plus(want->cfa, reg, sizeof(reg), &off)) {
		snprintf(why, size, "unreadable CFA %s", want->cfa);
		return false;
	}
	if (strcmp(want->ra, "c-8") || (strcmp(reg, "rsp") && strcmp(reg, "rbp"))) {
		/* The return address elsewhere than CFA - 8, or the CFA from another register. */
		snprintf(why, size, "want unsupported");
		return got->cfa_rule == SYM_CFA_UNSUPPORTED;
	}
	if (got->cfa_rule != (strcmp(reg, "rsp") ? SYM_CFA_RBP : SYM_CFA_RSP) ||
	    got->cfa_off != off) {
		snprintf(why, size, "want CFA %s", want->cfa);
		return false;
	}
	/* rbp: c-N is saved at CFA - N; u (not saved yet), s or no column is unchanged. */
	if (want->rbp[0] == 'c' && reg_plus(want->rbp, reg, sizeof(reg), &off)) {
		bool fits = off >= INT16_MIN && off <= INT16_MAX;

		snprintf(why, size, "want rbp %s", want->rbp);
		return fits ? got->rbp_rule == SYM_RBP_AT_CFA && got->rbp_off == off :
			      got->rbp_rule == SYM_RBP_UNDEFINED;
	}
	if (!want->rbp[0] || !strcmp(want->rbp, "u") || !strcmp(want->rbp, "s")) {
		snprintf(why, size, "want rbp unchanged");
		return got->rbp_rule == SYM_RBP_SAME;
	}
	snprintf(why, size, "want rbp undefined (%s)", want->rbp);
	return got->rbp_rule == SYM_RBP_UNDEFINED;
}

struct counts {
	size_t rows;	   /* readelf rows compared */
	size_t gaps;	   /* addresses between FDEs checked */
	size_t signal;	   /* rows in signal frames */
	size_t by_rule[7]; /* rows compared, by the table's enum sym_cfa_rule */
	size_t rbp_saved;  /* rows compared with rbp saved at CFA + off */
	size_t bad;	   /* mismatches */
};

static void count(struct counts *c, const struct sym_unwind_row *got)
{
	c->rows++;
	if (got && got->cfa_rule < 7)
		c->by_rule[got->cfa_rule]++;
	if (got && got->rbp_rule == SYM_RBP_AT_CFA)
		c->rbp_saved++;
}

static void mismatch(struct counts *c, const char *path, uint64_t loc, const struct ref_row *want,
		     const struct sym_unwind_row *got, const char *why)
{
	if (c->bad++ >= MAX_SHOWN)
		return;
	print_message("%s: %#llx: readelf CFA %s rbp %s ra %s; table %s%+d rbp %s%+d: %s\n", path,
		      (unsigned long long)loc, want ? want->cfa : "-",
		      want && want->rbp[0] ? want->rbp : "-", want ? want->ra : "-",
		      got ? cfa_names[got->cfa_rule] : "(none)", got ? got->cfa_off : 0,
		      got ? rbp_names[got->rbp_rule] : "-", got ? got->rbp_off : 0, why);
}

static int cmp_fde(const void *a, const void *b)
{
	const struct ref_fde *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Every row readelf prints, then the addresses no FDE covers. */
static void compare(const char *path, const struct sym_unwind_table *t, struct ref *r,
		    struct counts *c)
{
	const struct sym_unwind_row *got;
	uint64_t end = 0;
	char why[128];
	size_t i, j;

	for (i = 0; i < r->nr_fdes; i++) {
		const struct ref_fde *f = &r->fdes[i];
		bool any = false;

		if (f->lo >= f->hi)
			continue;
		for (j = f->first; j < f->first + f->nr; j++) {
			const struct ref_row *row = &r->rows[j];

			/* Rows at or past the end (the PLT's last advance) cover nothing; of
			 * rows at one LOC, the last holds. */
			if (row->loc < f->lo || row->loc >= f->hi)
				continue;
			if (j + 1 < f->first + f->nr && r->rows[j + 1].loc == row->loc)
				continue;
			any = true;
			got = sym_unwind_table__find(t, row->loc);
			count(c, got);
			c->signal += f->signal;
			if (!row_matches(row, f->signal, got, why, sizeof(why)))
				mismatch(c, path, row->loc, row, got, why);
		}
		if (!any) {
			/* No instructions: the CIE's initial rules hold over the whole FDE. */
			got = sym_unwind_table__find(t, f->lo);
			count(c, got);
			c->signal += f->signal;
			if (!row_matches(&f->cie_row, f->signal, got, why, sizeof(why)))
				mismatch(c, path, f->lo, &f->cie_row, got, why);
		}
	}

	/* Below the first FDE there is no row; between FDEs and past the last, "no CFI". */
	qsort(r->fdes, r->nr_fdes, sizeof(r->fdes[0]), cmp_fde);
	for (i = 0; i < r->nr_fdes; i++) {
		const struct ref_fde *f = &r->fdes[i];

		if (f->lo >= f->hi)
			continue;
		if (!end && f->lo) {
			got = sym_unwind_table__find(t, f->lo - 1);
			if (got)
				mismatch(c, path, f->lo - 1, NULL, got,
					 "below the first FDE: no row");
		} else if (end < f->lo) {
			got = sym_unwind_table__find(t, end);
			c->gaps++;
			if (!got || got->cfa_rule != SYM_CFA_NONE)
				mismatch(c, path, end, NULL, got, "between FDEs: want none");
		}
		if (f->hi > end)
			end = f->hi;
	}
	got = sym_unwind_table__find(t, end);
	c->gaps++;
	if (!got || got->cfa_rule != SYM_CFA_NONE)
		mismatch(c, path, end, NULL, got, "past the last FDE: want none");
}

static void build_from(const char *path, struct sym_unwind_table *t)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		fail_msg("%s: %s", path, strerror(errno));
	err = sym_unwind_table__build(fd, NULL, 0, t);
	close(fd);
	if (err)
		fail_msg("%s: sym_unwind_table__build: %s", path, strerror(-err));
}

/* Build path's table, compare it with readelf's rows; returns the rows compared. */
static size_t check_against_readelf(const char *path, bool debug_frame, struct counts *out)
{
	struct counts c = { 0 };
	struct sym_unwind_table t;
	struct ref r;

	build_from(path, &t);
	assert_int_equal(t.debug_frame, debug_frame);
	assert_true(t.nr_rows > 0);
	if (t.fde_errors)
		fail_msg("%s: %u of %u FDEs could not be read", path, t.fde_errors, t.fdes);
	read_reference(path, debug_frame ? ".debug_frame" : ".eh_frame", &r);
	compare(path, &t, &r, &c);
	print_message("%s: %zu readelf rows compared in %zu FDEs (rsp %zu, rbp %zu, plt %zu, "
		      "outermost %zu, unsupported %zu, signal %zu; rbp saved in %zu), %zu "
		      "addresses without CFI; table: %zu rows\n",
		      path, c.rows, r.nr_fdes, c.by_rule[SYM_CFA_RSP], c.by_rule[SYM_CFA_RBP],
		      c.by_rule[SYM_CFA_PLT], c.by_rule[SYM_CFA_OUTERMOST],
		      c.by_rule[SYM_CFA_UNSUPPORTED], c.by_rule[SYM_CFA_SIGNAL], c.rbp_saved,
		      c.gaps, t.nr_rows);
	if (c.bad)
		fail_msg("%s: %zu of %zu rows differ from readelf's", path, c.bad, c.rows);
	assert_true(c.rows > 0 && c.gaps > 0);
	ref_free(&r);
	sym_unwind_table__fini(&t);
	if (out)
		*out = c;
	return c.rows;
}

static void test_libc(void **state)
{
	struct counts c;

	(void)state;
	assert_true(check_against_readelf(LIBC, false, &c) > 1000);
	/* __restore_rt, the one signal trampoline, follows the kernel's signal frame. */
	assert_true(c.signal > 0 && c.by_rule[SYM_CFA_SIGNAL] == c.signal);
	/* clone's child and the like: the return address undefined. */
	assert_true(c.by_rule[SYM_CFA_OUTERMOST] > 0);
	assert_true(c.by_rule[SYM_CFA_RSP] > 0 && c.by_rule[SYM_CFA_RBP] > 0 && c.rbp_saved > 0);
}

static void test_liblzma(void **state)
{
	(void)state;
	assert_true(check_against_readelf(LIBLZMA, false, NULL) > 100);
}

static void test_fixture_eh_frame(void **state)
{
	struct counts c = { 0 };

	(void)state;
	check_against_readelf(FIXTURE("unwind-eh"), false, &c);
	/* uw_alloca: rbp + 16; uw_realigned: the CFA from r10, then an expression. */
	assert_true(c.by_rule[SYM_CFA_RBP] > 0 && c.by_rule[SYM_CFA_UNSUPPORTED] > 0);
	assert_true(c.by_rule[SYM_CFA_PLT] > 0 && c.by_rule[SYM_CFA_OUTERMOST] > 0);
	check_against_readelf(FIXTURE("unwind-ibt"), false, NULL);
}

/* The comparison itself notices a wrong offset, a wrong rbp rule and a missing row. */
static void test_comparison_notices(void **state)
{
	struct sym_unwind_table t;
	struct counts c = { 0 };
	struct ref r;
	size_t i, rsp = 0, saved = 0;

	(void)state;
	build_from(FIXTURE("unwind-eh"), &t);
	for (i = 0; i < t.nr_rows; i++) {
		if (!rsp && t.rows[i].cfa_rule == SYM_CFA_RSP && t.rows[i].cfa_off > 8)
			rsp = i;
		if (!saved && t.rows[i].rbp_rule == SYM_RBP_AT_CFA)
			saved = i;
	}
	assert_true(rsp && saved && rsp != saved);
	t.rows[rsp].cfa_off += 8;
	t.rows[saved].rbp_rule = SYM_RBP_SAME;
	t.rows[0].pc++;
	read_reference(FIXTURE("unwind-eh"), ".eh_frame", &r);
	compare(FIXTURE("unwind-eh"), &t, &r, &c);
	print_message("(the %zu mismatches above were planted)\n", c.bad);
	assert_true(c.bad >= 3);
	ref_free(&r);
	sym_unwind_table__fini(&t);
}

static void test_fixture_debug_frame(void **state)
{
	(void)state;
	check_against_readelf(FIXTURE("unwind-debugframe"), true, NULL);
}

/*
 * The lazy PLT's CFA expression, from readelf's raw listing (binutils' elf_x86_64_eh_frame_plt
 * and its IBT variant): DW_OP_breg7 (rsp): N; ...; DW_OP_litK; DW_OP_ge; ... Every address
 * from the expression's LOC to the end of its FDE must be a PLT row with offset N and
 * threshold K. Returns the threshold of the last such FDE (-1 when there is none).
 */
static int check_plt(const char *path)
{
	unsigned long long lo = 0, hi = 0, loc = 0, off, x;
	struct sym_unwind_table t;
	char cmd[512], line[1024];
	int threshold = -1;
	FILE *p;

	build_from(path, &t);
	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=no-follow-links,frames '%s' 2>/dev/null",
		 path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		const char *to = strstr(line, " to ");
		unsigned int k;
		int n;

		if (sscanf(line, "%llx %llx %llx FDE cie=%llx pc=%llx..%llx", &x, &x, &x, &x, &lo,
			   &hi) == 6) {
			loc = lo;
			continue;
		}
		if (strstr(line, "DW_CFA_advance_loc") && to) {
			loc = strtoull(to + 4, NULL, 16);
			continue;
		}
		n = sscanf(line,
			   " DW_CFA_def_cfa_expression (DW_OP_breg7 (rsp): %llu; DW_OP_breg16 "
			   "(rip): 0; DW_OP_lit15; DW_OP_and; DW_OP_lit%u; DW_OP_ge; DW_OP_lit3; "
			   "DW_OP_shl; DW_OP_plus)",
			   &off, &k);
		if (n != 2)
			continue;
		assert_true(loc < hi);
		for (uint64_t a = loc; a < hi; a++) {
			const struct sym_unwind_row *r = sym_unwind_table__find(&t, a);

			assert_non_null(r);
			if (r->cfa_rule != SYM_CFA_PLT || r->cfa_off != (int32_t)off ||
			    r->plt_threshold != k)
				fail_msg(
					"%s: %#llx: %s%+d threshold %u, want plt%+lld threshold %u",
					path, (unsigned long long)a, cfa_names[r->cfa_rule],
					r->cfa_off, r->plt_threshold, (long long)off, k);
		}
		print_message("%s: PLT %#llx..%#llx: CFA rsp%+lld, +8 from byte %u of each entry\n",
			      path, loc, hi, (long long)off, k);
		threshold = (int)k;
	}
	assert_int_equal(pclose(p), 0);
	sym_unwind_table__fini(&t);
	return threshold;
}

static void test_plt(void **state)
{
	(void)state;
	/* push $index ends at byte 11 of a lazy PLT entry (jmp *GOT(%rip) is 6 bytes, push 5);
	 * in the IBT entry after endbr64 (4 bytes), push ends at byte 9. */
	assert_int_equal(check_plt(FIXTURE("unwind-eh")), 11);
	assert_int_equal(check_plt(FIXTURE("unwind-ibt")), 9);
}

static void *read_whole(const char *path, size_t *size)
{
	struct stat st;
	void *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size);
	assert_non_null(buf);
	assert_int_equal(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	*size = (size_t)st.st_size;
	return buf;
}

/* The same table from a file, from its bytes in memory and through an opened object. */
static void test_sources_agree(void **state)
{
	struct sym_unwind_table a, b, c;
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_object *o;
	size_t size;
	void *image = read_whole(FIXTURE("unwind-eh"), &size);
	int fd;

	(void)state;
	build_from(FIXTURE("unwind-eh"), &a);
	assert_int_equal(sym_unwind_table__build(-1, image, size, &b), 0);
	fd = open(FIXTURE("unwind-eh"), O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	o = symbolizer__open_fd(s, fd, FIXTURE("unwind-eh"), 0, 0);
	close(fd);
	assert_non_null(o);
	assert_int_equal(sym_object__unwind_table(o, &c), 0);
	assert_int_equal(a.nr_rows, b.nr_rows);
	assert_int_equal(a.nr_rows, c.nr_rows);
	assert_memory_equal(a.rows, b.rows, a.nr_rows * sizeof(a.rows[0]));
	assert_memory_equal(a.rows, c.rows, a.nr_rows * sizeof(a.rows[0]));
	assert_int_equal(a.fdes, b.fdes);
	assert_int_equal(a.cfi_bytes, b.cfi_bytes);
	sym_unwind_table__fini(&a);
	sym_unwind_table__fini(&b);
	sym_unwind_table__fini(&c);
	assert_null(a.rows);
	assert_int_equal(a.nr_rows, 0);
	sym_object__put(o);
	symbolizer__free(s);
	free(image);
}

static void expect_error(const void *image, size_t size, int want)
{
	struct sym_unwind_table t;

	assert_int_equal(sym_unwind_table__build(-1, image, size, &t), want);
	assert_null(t.rows);
	assert_int_equal(t.nr_rows, 0);
}

static void test_errors(void **state)
{
	static const char text[] = "#!/bin/sh\necho not an ELF file\n";
	struct sym_unwind_table t;
	Elf64_Ehdr bare = { .e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64,
					 ELFDATA2LSB, EV_CURRENT },
			    .e_type = ET_DYN,
			    .e_machine = EM_X86_64,
			    .e_version = EV_CURRENT,
			    .e_ehsize = sizeof(Elf64_Ehdr) };
	unsigned char *image;
	size_t size;
	int fd;

	(void)state;
	/* Not ELF: text, nothing, a C source by file descriptor. */
	expect_error(text, sizeof(text) - 1, -EINVAL);
	expect_error(text, 0, -EINVAL);
	fd = open(FIXTURE_SRC "/unwind.c", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(sym_unwind_table__build(fd, NULL, 0, &t), -EINVAL);
	close(fd);

	/* ELF without CFI: a header and nothing else; the fixture with .debug_frame stripped. */
	expect_error(&bare, sizeof(bare), -ENODATA);
	image = read_whole(FIXTURE("unwind-nocfi"), &size);
	expect_error(image, size, -ENODATA);
	free(image);

	/* Not x86_64: the fixture with another e_machine (AArch64), then another class. */
	image = read_whole(FIXTURE("unwind-eh"), &size);
	assert_int_equal(sym_unwind_table__build(-1, image, size, &t), 0);
	sym_unwind_table__fini(&t);
	image[offsetof(Elf64_Ehdr, e_machine)] = EM_AARCH64 & 0xff;
	image[offsetof(Elf64_Ehdr, e_machine) + 1] = EM_AARCH64 >> 8;
	expect_error(image, size, -ENOTSUP);
	bare.e_machine = EM_386;
	expect_error(&bare, sizeof(bare), -ENOTSUP);
	free(image);
}

UNIT_MAIN("unwind", cmocka_unit_test(test_libc), cmocka_unit_test(test_liblzma),
	  cmocka_unit_test(test_fixture_eh_frame), cmocka_unit_test(test_fixture_debug_frame),
	  cmocka_unit_test(test_comparison_notices), cmocka_unit_test(test_plt),
	  cmocka_unit_test(test_sources_agree), cmocka_unit_test(test_errors))
