// SPDX-License-Identifier: Apache-2.0
/*
 * Go's pclntab (symbolizer/gopclntab.c) against the Go toolchain's own readings of the same
 * binaries: the Go workload goleaf (tests/workloads/goleaf) built by Debian's golang-go as is
 * and with -ldflags='-s -w' (goleaf-sw: no .symtab, no DWARF; goleaf-pie-sw the same,
 * position-independent). Every function's name and
 * entry must be what `go tool nm` lists for the unstripped build; the stripped build must
 * hold the same functions; file:line and function at a sample of pcs (tests/tools/go_pcs.py)
 * must be what `go tool addr2line` says; an inlined call (main.mix into main.hot) must come
 * out as two frames with the call site's line; the unwind rows derived from pcsp must give
 * the CFA that the linker's own .debug_frame gives (read by binutils' readelf) at every row
 * it prints; a cgo build's rows must combine its C code's .eh_frame and its Go code's pcsp;
 * a copy without section headers must be found by its header and moduledata;
 * and damaged tables must be refused or read without a fault.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit.h"

#include "../../symbolizer/symbolizer_internal.h"

#define GOLEAF	   FIXTURE("goleaf")
#define GOLEAF_SW  FIXTURE("goleaf-sw")
#define GOLEAF_PIE FIXTURE("goleaf-pie-sw")
#define GOLEAF_CGO FIXTURE("goleaf-cgo-sw")
#define GOLEAF_GO  FIXTURE_SRC "/../../workloads/goleaf/main.go"

struct gonm {
	uint64_t addr;
	char name[256];
};

static struct gonm *read_gonm(size_t *nr)
{
	struct gonm *v = NULL;
	size_t n = 0, cap = 0;
	char line[512];
	FILE *f = fopen(GOLEAF ".gonm", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, size;
		char type, *name;
		int at = 0;

		/* The name is the rest of the line: it may hold spaces. */
		if (sscanf(line, "%llx %llu %c %n", &a, &size, &type, &at) != 3 || !at ||
		    (type != 'T' && type != 't'))
			continue;
		name = line + at;
		name[strcspn(name, "\n")] = '\0';
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			v = realloc(v, cap * sizeof(*v));
			assert_non_null(v);
		}
		v[n].addr = a;
		snprintf(v[n].name, sizeof(v[n].name), "%s", name);
		n++;
	}
	fclose(f);
	*nr = n;
	return v;
}

/*
 * Is nm's name the table's name? nm adds ".abi0" to assembly functions and ABI wrappers; the
 * table shortens what Go 1.18+ elides in brackets (instantiations, array types) to "[...]".
 */
static bool same_name(const char *table, const char *nm)
{
	while (*table) {
		if (!strncmp(table, "[...]", 5) && *nm == '[') {
			int depth = 0;

			do {
				depth += *nm == '[';
				depth -= *nm == ']';
				nm++;
			} while (*nm && depth);
			table += 5;
			continue;
		}
		if (*table++ != *nm++)
			return false;
	}
	return !*nm || !strcmp(nm, ".abi0");
}

struct opened {
	int fd;
	Elf *elf;
	struct sym_gopcln *g;
};

static void open_go(const char *path, struct opened *o)
{
	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	o->fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(o->fd >= 0);
	o->elf = elf_begin(o->fd, ELF_C_READ, NULL);
	assert_non_null(o->elf);
	o->g = sym_gopcln__open(o->elf);
	if (!o->g)
		fail_msg("%s: no pclntab: %s", path, strerror(errno));
}

static void close_go(struct opened *o)
{
	sym_gopcln__free(o->g);
	elf_end(o->elf);
	close(o->fd);
}

static void test_functions_match_go_nm(void **state)
{
	struct opened o;
	size_t nr = 0, i, j, bad = 0, found = 0;
	struct gonm *nm = read_gonm(&nr);
	uint32_t n;

	(void)state;
	open_go(GOLEAF, &o);
	/* Debian 12's golang-go is Go 1.19: the 1.18 layout, with its inline trees found. */
	assert_int_equal(sym_gopcln__version(o.g), 118);
	assert_true(sym_gopcln__has_inline(o.g));
	n = sym_gopcln__count(o.g);
	assert_true(n > 1000);
	for (i = 0; i < n; i++) {
		uint64_t entry, end;
		const char *name;

		assert_int_equal(sym_gopcln__func(o.g, (uint32_t)i, &entry, &end, &name), 0);
		assert_true(end >= entry);
		/* By name at that address; an assembly function's (or the ABI0 wrapper of a Go
		 * one) is listed with ".abi0" after its name. */
		for (j = 0; j < nr; j++)
			if (nm[j].addr == entry && same_name(name, nm[j].name))
				break;
		if (j == nr || nm[j].addr != entry) {
			if (bad++ < 10)
				print_message("%s at 0x%llx: go tool nm says %s\n", name,
					      (unsigned long long)entry,
					      j == nr ? "nothing" : "another address");
			continue;
		}
		found++;
	}
	print_message("goleaf: %u functions, %zu with go tool nm's name and address\n", n, found);
	assert_int_equal(bad, 0);
	/* And every text symbol of nm is a function of the table but the text's bounds. */
	for (j = 0, bad = 0; j < nr; j++) {
		struct sym_frame f[8];
		int k = sym_gopcln__lookup(o.g, nm[j].addr, f, 8);

		if (k <= 0 || !same_name(f[k - 1].name, nm[j].name) ||
		    f[k - 1].start != nm[j].addr) {
			/* The linker's markers of the text's bounds are no functions. */
			if (strcmp(nm[j].name, "runtime.etext") &&
			    strcmp(nm[j].name, "runtime.text") && bad++ < 10)
				print_message("nm's %s at 0x%llx: the table names %s\n", nm[j].name,
					      (unsigned long long)nm[j].addr,
					      k > 0 ? f[k - 1].name : "nothing");
		}
	}
	assert_int_equal(bad, 0);
	close_go(&o);
	free(nm);
}

/* The -s -w build at path has the functions of the unstripped one, by name, and by size
 * when not position-independent (PIE code addresses its data otherwise). */
static void check_same_functions(const char *path, bool same_sizes)
{
	struct opened a, b;
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	uint32_t i, n;

	open_go(GOLEAF, &a);
	open_go(path, &b);
	while ((scn = elf_nextscn(b.elf, scn)))
		if (gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_SYMTAB)
			fail_msg("%s has a .symtab: not a -s -w build", path);
	n = sym_gopcln__count(a.g);
	assert_int_equal(sym_gopcln__count(b.g), n);
	assert_true(sym_gopcln__has_inline(b.g));
	for (i = 0; i < n; i++) {
		uint64_t ea, eb, za, zb;
		const char *na, *nb;

		assert_int_equal(sym_gopcln__func(a.g, i, &ea, &za, &na), 0);
		assert_int_equal(sym_gopcln__func(b.g, i, &eb, &zb, &nb), 0);
		assert_string_equal(na, nb);
		if (same_sizes)
			assert_int_equal(za - ea, zb - eb);
	}
	close_go(&a);
	close_go(&b);
}

static void test_stripped_build_same_functions(void **state)
{
	(void)state;
	check_same_functions(GOLEAF_SW, true);
	check_same_functions(GOLEAF_PIE, false);
}

/* Every line of the .addr2line listing: "pc function file:line". */
static void check_addr2line(const char *path)
{
	char listing[512], line[1024];
	struct opened o;
	size_t lines = 0, bad = 0, inlined = 0;
	FILE *f;

	open_go(path, &o);
	assert_true(sym_gopcln__has_inline(o.g));
	snprintf(listing, sizeof(listing), "%s.addr2line", path);
	f = fopen(listing, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *func, *file, *colon, *sp;
		unsigned long long pc;
		struct sym_frame fr[16];
		unsigned ln;
		int k;

		/* The function's name may hold spaces (type..eq.struct { ... }). */
		line[strcspn(line, "\n")] = '\0';
		pc = strtoull(line, &func, 16);
		sp = strrchr(line, ' ');
		if (!*func || !sp || sp <= func)
			continue;
		*sp = '\0';
		func++;
		file = sp + 1;
		lines++;
		colon = strrchr(file, ':');
		assert_non_null(colon);
		*colon = '\0';
		ln = (unsigned)strtoul(colon + 1, NULL, 10);
		k = sym_gopcln__lookup(o.g, pc, fr, 16);
		if (!strcmp(func, "?")) {
			if (k != 0 && bad++ < 10)
				print_message("0x%llx: addr2line knows no function, we %s\n", pc,
					      fr[k - 1].name);
			continue;
		}
		inlined += k > 1;
		/* addr2line names the function the code is in (the outermost frame) and the
		 * position of the code (the innermost frame's). */
		if (k <= 0 || strcmp(fr[k - 1].name, func) || !fr[0].file ||
		    strcmp(fr[0].file, file) || fr[0].line != ln) {
			if (bad++ < 10)
				print_message("0x%llx: addr2line %s %s:%u, we %s %s:%u\n", pc, func,
					      file, ln, k > 0 ? fr[k - 1].name : "-",
					      k > 0 && fr[0].file ? fr[0].file : "-",
					      k > 0 ? fr[0].line : 0);
		}
	}
	fclose(f);
	print_message("%s: %zu pcs as go tool addr2line reads them, %zu with inlined frames\n",
		      path, lines - bad, inlined);
	assert_true(lines > 3000);
	assert_true(inlined > 0);
	assert_int_equal(bad, 0);
	close_go(&o);
}

static void test_lines_match_go_addr2line(void **state)
{
	(void)state;
	check_addr2line(GOLEAF);
	check_addr2line(GOLEAF_SW);
}

/* The line of main.go holding text. */
static unsigned source_line(const char *text)
{
	char line[512];
	unsigned n = 0;
	FILE *f = fopen(GOLEAF_GO, "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, text)) {
			fclose(f);
			return n;
		}
	}
	fclose(f);
	fail_msg("%s not in %s", text, GOLEAF_GO);
	return 0;
}

/* main.mix inlined into main.hot, through the symbolizer's interface on a -s -w build. */
static void check_inlined_frames(const char *path)
{
	struct symbolizer *s = symbolizer__new(NULL);
	unsigned call_line = source_line("x = mix(x"), mix_first = source_line("func mix(");
	struct sym_object *obj;
	struct opened o;
	uint64_t entry = 0, end = 0, pc;
	const char *name = NULL;
	uint32_t i;
	int fd, seen = 0;

	open_go(path, &o);
	for (i = 0; i < sym_gopcln__count(o.g); i++) {
		assert_int_equal(sym_gopcln__func(o.g, i, &entry, &end, &name), 0);
		if (!strcmp(name, "main.hot"))
			break;
	}
	assert_string_equal(name, "main.hot");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_non_null(s);
	obj = symbolizer__open_fd(s, fd, path, 0, 0);
	assert_non_null(obj);
	for (pc = entry; pc < end; pc++) {
		struct sym_frame f[8];
		int n = symbolizer__symbolize(s, obj, pc, f, 8);

		assert_true(n >= 1);
		assert_string_equal(f[n - 1].name, "main.hot");
		assert_int_equal(f[n - 1].start, entry);
		/* The padding after the last instruction has a function, no line. */
		if (!f[n - 1].file)
			continue;
		assert_non_null(strstr(f[n - 1].file, "goleaf/main.go"));
		if (n == 1)
			continue;
		assert_int_equal(n, 2);
		assert_string_equal(f[0].name, "main.mix");
		assert_true(f[0].line > mix_first && f[0].line < mix_first + 6);
		assert_int_equal(f[1].line, call_line);
		seen++;
	}
	print_message("main.hot: %d of %llu bytes in main.mix, inlined\n", seen,
		      (unsigned long long)(end - entry));
	assert_true(seen >= 8);
	sym_object__put(obj);
	symbolizer__free(s);
	close(fd);
	close_go(&o);
}

static void test_inlined_frames_stripped(void **state)
{
	(void)state;
	check_inlined_frames(GOLEAF_SW);
	check_inlined_frames(GOLEAF_PIE);
}

/* `readelf --debug-dump=frames-interp` of the unstripped build's .debug_frame (the linker's
 * rendering of the same pcsp tables): every "LOC rsp+N" row against our rows. */
static void test_unwind_rows_match_debug_frame(void **state)
{
	struct sym_unwind_table t;
	char cmd[600], line[512];
	size_t rows = 0, bad = 0, stop = 0, fp = 0;
	const struct sym_unwind_row *r;
	FILE *p;
	int fd;

	(void)state;
	fd = open(GOLEAF, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(sym_unwind_table__build(fd, NULL, 0, &t), 0);
	close(fd);
	assert_true(t.gopclntab);
	assert_int_equal(t.fde_errors, 0);
	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp %s 2>/dev/null", GOLEAF);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		unsigned long long loc;
		int off;

		/* (A CIE's initial rules print at LOC 0.) */
		if (sscanf(line, "%llx rsp+%d", &loc, &off) != 2 || !loc)
			continue;
		rows++;
		r = sym_unwind_table__find(&t, loc);
		if (r && (r->cfa_rule == SYM_CFA_OUTERMOST || r->cfa_rule == SYM_CFA_UNSUPPORTED)) {
			stop++; /* goexit, mstart, rt0_go; functions that switch stacks */
			continue;
		}
		/* The frame-pointer rule only where .debug_frame says there is a frame. */
		if (r && r->cfa_rule == SYM_CFA_RBP && r->cfa_off == 16 &&
		    r->rbp_rule == SYM_RBP_AT_CFA && r->rbp_off == -16 && off > 8) {
			fp++;
			continue;
		}
		if (!r || r->cfa_rule != SYM_CFA_RSP || r->cfa_off != off) {
			if (bad++ < 10)
				print_message("0x%llx: .debug_frame rsp+%d, we rule %d off %d\n",
					      loc, off, r ? r->cfa_rule : -1, r ? r->cfa_off : 0);
		}
	}
	assert_int_equal(pclose(p), 0);
	print_message("goleaf: %zu rows of .debug_frame (%zu at stop functions, %zu under the "
		      "frame-pointer rule), %zu rows of ours\n",
		      rows, stop, fp, t.nr_rows);
	assert_true(fp > rows / 10);
	assert_true(rows > 2000);
	assert_true(stop > 0 && stop < rows / 20);
	assert_int_equal(bad, 0);
	sym_unwind_table__fini(&t);
}

/* The frameless leaf and its caller's frame, in the -s -w build. */
static void test_unwind_rows_leaf_and_frame(void **state)
{
	struct sym_unwind_table t;
	const struct sym_unwind_row *r;
	struct opened o;
	uint64_t spin = 0, spin_end = 0, hot = 0, hot_end = 0, goexit = 0, pc, e, z;
	const char *name;
	uint32_t i;

	(void)state;
	open_go(GOLEAF_SW, &o);
	for (i = 0; i < sym_gopcln__count(o.g); i++) {
		assert_int_equal(sym_gopcln__func(o.g, i, &e, &z, &name), 0);
		if (!strcmp(name, "main.spin"))
			spin = e, spin_end = z;
		else if (!strcmp(name, "main.hot"))
			hot = e, hot_end = z;
		else if (!strcmp(name, "runtime.goexit"))
			goexit = e;
	}
	assert_true(spin && hot && goexit);
	assert_int_equal(sym_unwind_table__build(o.fd, NULL, 0, &t), 0);
	assert_true(t.gopclntab);
	/* main.spin has no frame: the return address at rsp, rbp untouched, everywhere. */
	for (pc = spin; pc < spin_end; pc++) {
		r = sym_unwind_table__find(&t, pc);
		assert_non_null(r);
		assert_int_equal(r->cfa_rule, SYM_CFA_RSP);
		assert_int_equal(r->cfa_off, 8);
		assert_int_equal(r->rbp_rule, SYM_RBP_SAME);
	}
	/*
	 * main.hot, row by row as its code goes: no frame at its entry (the stack check); its
	 * frame reserved (SUBQ), rbp still the caller's; rbp stored at the top of the frame
	 * (CFA - 16); rbp made the frame pointer (LEAQ): the frame-pointer rule, CFA = rbp +
	 * 16; the epilogue's restore: back to rsp; the return: no frame. Each step once in
	 * that order, and the body (most of the bytes) under the frame-pointer rule.
	 */
	{
		static const char *const steps[] = { "entry", "reserved", "stored",
						     "fp",    "restore",  "ret" };
		int step = 0, next, fp_bytes = 0;

		for (pc = hot; pc < hot_end; pc++) {
			r = sym_unwind_table__find(&t, pc);
			if (r->cfa_rule == SYM_CFA_RBP) {
				assert_int_equal(r->cfa_off, 16);
				assert_int_equal(r->rbp_rule, SYM_RBP_AT_CFA);
				assert_int_equal(r->rbp_off, -16);
				next = 3;
				fp_bytes++;
			} else {
				assert_int_equal(r->cfa_rule, SYM_CFA_RSP);
				if (r->cfa_off == 8) {
					assert_int_equal(r->rbp_rule, SYM_RBP_SAME);
					next = step ? 5 : 0;
				} else if (r->rbp_rule == SYM_RBP_SAME) {
					next = 1;
				} else {
					assert_int_equal(r->rbp_rule, SYM_RBP_AT_CFA);
					assert_int_equal(r->rbp_off, -16);
					next = step >= 3 ? 4 : 2;
				}
			}
			if (next < step || next > step + 1)
				fail_msg("main.hot+%llu: %s after %s",
					 (unsigned long long)(pc - hot), steps[next], steps[step]);
			if (next == 5)
				break; /* the stack-growth path after the return is frameless too */
			step = next;
		}
		assert_int_equal(step, 4);
		assert_true(fp_bytes > (int)(hot_end - hot) / 2);
	}
	assert_int_equal(sym_unwind_table__find(&t, goexit + 1)->cfa_rule, SYM_CFA_OUTERMOST);
	sym_unwind_table__fini(&t);
	close_go(&o);
}

/* A copy of goleaf-sw in memory, with the pclntab's header at *tab. */
static uint8_t *load_copy(size_t *size, size_t *tab, size_t *tab_size)
{
	struct stat st;
	uint8_t *buf;
	int fd = open(GOLEAF_SW, O_RDONLY | O_CLOEXEC);
	Elf *elf;
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	const char *name;

	assert_true(fd >= 0 && !fstat(fd, &st));
	buf = malloc((size_t)st.st_size);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
	close(fd);
	*size = (size_t)st.st_size;
	elf = elf_memory((char *)buf, *size);
	assert_non_null(elf);
	*tab = 0;
	while (sym_next_section(elf, &scn, &shdr, &name))
		if (!strcmp(name, ".gopclntab")) {
			*tab = shdr.sh_offset;
			*tab_size = shdr.sh_size;
		}
	elf_end(elf);
	assert_true(*tab);
	return buf;
}

static int open_image(uint8_t *buf, size_t size)
{
	Elf *elf = elf_memory((char *)buf, size);
	struct sym_gopcln *g;
	int err = 0;

	assert_non_null(elf);
	g = sym_gopcln__open(elf);
	if (!g)
		err = -errno;
	sym_gopcln__free(g);
	elf_end(elf);
	return err;
}

static void test_bad_tables(void **state)
{
	size_t size, tab, tab_size, i;
	uint8_t *buf = load_copy(&size, &tab, &tab_size), saved[8];
	uint32_t seed = 1;

	(void)state;
	assert_int_equal(open_image(buf, size), 0);
	/* Older layouts are refused for what they are, unknown ones as malformed. */
	memcpy(saved, buf + tab, 8);
	memcpy(buf + tab, "\xfa\xff\xff\xff", 4);
	assert_int_equal(open_image(buf, size), -ENOTSUP);
	memcpy(buf + tab, "\xfb\xff\xff\xff", 4);
	assert_int_equal(open_image(buf, size), -ENOTSUP);
	memcpy(buf + tab, "\x00\x00\x00\x00", 4);
	assert_int_equal(open_image(buf, size), -EINVAL);
	memcpy(buf + tab, saved, 8);
	buf[tab + 7] = 4; /* 32-bit pointers */
	assert_int_equal(open_image(buf, size), -ENOTSUP);
	memcpy(buf + tab, saved, 8);
	/* Offsets past the table. */
	memset(buf + tab + 8 + 8 * 7, 0xff, 8);
	assert_int_equal(open_image(buf, size), -EINVAL);
	free(buf);

	/* Random damage anywhere in the table: refused, or read within bounds (the sanitizer
	 * build checks every access), lookups and rows included. */
	for (i = 0; i < 200; i++) {
		struct sym_unwind_table t;
		struct sym_gopcln *g;
		Elf *elf;
		int k;

		buf = load_copy(&size, &tab, &tab_size);
		for (k = 0; k < 64; k++) {
			seed = seed * 1103515245 + 12345;
			buf[tab + (seed >> 8) % tab_size] = (uint8_t)(seed >> 3);
		}
		elf = elf_memory((char *)buf, size);
		assert_non_null(elf);
		g = sym_gopcln__open(elf);
		if (g) {
			struct sym_frame f[16];
			uint64_t pc, e, z;
			const char *n;

			for (k = 0; k < (int)sym_gopcln__count(g); k += 7)
				if (!sym_gopcln__func(g, (uint32_t)k, &e, &z, &n))
					for (pc = e; pc < z && pc < e + 64; pc += 3)
						(void)sym_gopcln__lookup(g, pc, f, 16);
			sym_gopcln__free(g);
		}
		if (!sym_unwind_table__build(-1, buf, size, &t))
			sym_unwind_table__fini(&t);
		elf_end(elf);
		free(buf);
	}
}

/*
 * A cgo build: its C code's rows from .eh_frame (every row readelf prints for it), its Go
 * code's from pcsp (each function's entry: no frame yet; the leaf frameless; main.hot's body
 * under the frame-pointer rule).
 */
static void test_cgo_rows_combined(void **state)
{
	struct sym_unwind_table t;
	const struct sym_unwind_row *r;
	char cmd[600], line[512];
	size_t c_rows = 0, go_funcs = 0, fp = 0;
	struct opened o;
	uint64_t e, z, pc;
	const char *n;
	uint32_t i;
	FILE *p;

	(void)state;
	open_go(GOLEAF_CGO, &o);
	assert_int_equal(sym_unwind_table__build(o.fd, NULL, 0, &t), 0);
	assert_true(t.gopclntab);
	assert_false(t.debug_frame);
	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp %s 2>/dev/null", GOLEAF_CGO);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		unsigned long long loc;
		int off;

		if (sscanf(line, "%llx rsp+%d", &loc, &off) != 2 || !loc)
			continue;
		r = sym_unwind_table__find(&t, loc);
		assert_non_null(r);
		if (r->cfa_rule == SYM_CFA_OUTERMOST)
			continue; /* _start: its return address undefined on the same row */
		assert_int_equal(r->cfa_rule, SYM_CFA_RSP);
		assert_int_equal(r->cfa_off, off);
		c_rows++;
	}
	assert_int_equal(pclose(p), 0);
	for (i = 0; i < sym_gopcln__count(o.g); i++) {
		assert_int_equal(sym_gopcln__func(o.g, i, &e, &z, &n), 0);
		r = sym_unwind_table__find(&t, e);
		assert_non_null(r);
		if (r->cfa_rule == SYM_CFA_RSP) {
			assert_int_equal(r->cfa_off, 8);
			go_funcs++;
		}
		if (!strcmp(n, "main.spin"))
			for (pc = e; pc < z; pc++)
				assert_int_equal(sym_unwind_table__find(&t, pc)->cfa_off, 8);
		if (!strcmp(n, "main.hot"))
			for (pc = e; pc < z; pc++)
				fp += sym_unwind_table__find(&t, pc)->cfa_rule == SYM_CFA_RBP;
	}
	print_message("goleaf-cgo-sw: %zu rows of .eh_frame, %u Go functions (%zu from a row "
		      "of no frame), main.hot %zu bytes under the frame-pointer rule\n",
		      c_rows, sym_gopcln__count(o.g), go_funcs, fp);
	assert_true(c_rows >= 20);
	assert_true(go_funcs > sym_gopcln__count(o.g) * 9 / 10);
	assert_true(fp > 40);
	sym_unwind_table__fini(&t);
	close_go(&o);
}

/* Sections stripped too (e_shnum 0): the table found by its header and the moduledata. */
static void test_no_section_headers(void **state)
{
	size_t size, tab, tab_size;
	uint8_t *buf = load_copy(&size, &tab, &tab_size);
	Elf64_Ehdr *ehdr = (Elf64_Ehdr *)buf;
	struct sym_frame f[8];
	struct opened ref;
	struct sym_gopcln *g;
	uint64_t e, z, e2, z2;
	const char *n, *n2;
	uint32_t i;
	Elf *elf;
	int k;

	(void)state;
	ehdr->e_shoff = 0;
	ehdr->e_shnum = 0;
	ehdr->e_shstrndx = 0;
	elf = elf_memory((char *)buf, size);
	assert_non_null(elf);
	g = sym_gopcln__open(elf);
	assert_non_null(g);
	assert_true(sym_gopcln__has_inline(g));
	open_go(GOLEAF_SW, &ref);
	assert_int_equal(sym_gopcln__count(g), sym_gopcln__count(ref.g));
	for (i = 0; i < sym_gopcln__count(g); i++) {
		assert_int_equal(sym_gopcln__func(g, i, &e, &z, &n), 0);
		assert_int_equal(sym_gopcln__func(ref.g, i, &e2, &z2, &n2), 0);
		assert_string_equal(n, n2);
		assert_int_equal(e, e2);
		assert_int_equal(z, z2);
		if (!strcmp(n, "main.hot")) {
			for (k = 0; e < z && k < 2; e++)
				k = sym_gopcln__lookup(g, e, f, 8);
			assert_int_equal(k, 2);
			assert_string_equal(f[0].name, "main.mix");
		}
	}
	close_go(&ref);
	sym_gopcln__free(g);
	elf_end(elf);
	free(buf);
}

UNIT_MAIN("gopclntab", cmocka_unit_test(test_functions_match_go_nm),
	  cmocka_unit_test(test_stripped_build_same_functions),
	  cmocka_unit_test(test_lines_match_go_addr2line),
	  cmocka_unit_test(test_inlined_frames_stripped),
	  cmocka_unit_test(test_unwind_rows_match_debug_frame),
	  cmocka_unit_test(test_unwind_rows_leaf_and_frame), cmocka_unit_test(test_bad_tables),
	  cmocka_unit_test(test_no_section_headers), cmocka_unit_test(test_cgo_rows_combined))
