// SPDX-License-Identifier: Apache-2.0
/*
 * The symbolizer against ELF fixtures the test build compiles (tests/data/src), with the
 * addresses and sizes binutils' `nm` printed for them as the reference.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>

#include "unit.h"

#include "../../symbolizer/symbolizer.h"

static struct sym_object *open_fixture(struct symbolizer *s, const char *path)
{
	struct sym_object *o;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	o = symbolizer__open_fd(s, fd, path, 0, 0);
	close(fd);
	return o;
}

/* Name of vaddr in o, or NULL when unnamed. */
static const char *name_of(struct symbolizer *s, struct sym_object *o, uint64_t vaddr)
{
	struct sym_frame f[4];
	int n = symbolizer__symbolize(s, o, vaddr, f, 4);

	assert_true(n >= 0);
	return n ? f[0].name : NULL;
}

static void expect_named(struct symbolizer *s, struct sym_object *o, const char *fixture,
			 const char *sym, const char *want)
{
	struct nm_symbol ns = { 0 };
	const char *got;

	if (nm_lookup(fixture, sym, &ns))
		fail_msg("%s: no %s in the nm listing", fixture, sym);
	got = name_of(s, o, ns.addr);
	if (!got || strcmp(got, want))
		fail_msg("%s: %s at %#llx named %s, want %s", fixture, sym,
			 (unsigned long long)ns.addr, got ? got : "(nothing)", want);
	if (ns.size > 1) {
		got = name_of(s, o, ns.addr + ns.size - 1);
		if (!got || strcmp(got, want))
			fail_msg("%s: last byte of %s named %s", fixture, sym, got ? got : "-");
	}
}

static void check_fixture(const char *fixture, bool stripped)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_object *o;
	char want[130], hex[130];
	struct nm_symbol ns = { 0 };

	assert_non_null(s);
	o = open_fixture(s, fixture);
	assert_non_null(o);

	fixture_build_id(fixture, want, sizeof(want));
	sym_object__build_id_hex(o, hex, sizeof(hex));
	assert_string_equal(hex, want);

	expect_named(s, o, fixture, "fx_exported_first", "fx_exported_first");
	expect_named(s, o, fixture, "fx_exported_second", "fx_exported_second");
	/* Aliases at one address: the global name wins over the weak one. */
	expect_named(s, o, fixture, "fx_alias_target", "fx_alias_target");
	expect_named(s, o, fixture, "fx_asm_after", "fx_asm_after");

	/* A 1-byte symbol followed by padding: the padding belongs to no symbol. */
	assert_int_equal(nm_lookup(fixture, "fx_asm_sized", &ns), 0);
	assert_string_equal(name_of(s, o, ns.addr), "fx_asm_sized");
	assert_null(name_of(s, o, ns.addr + 1));
	assert_null(name_of(s, o, ns.addr + 15));
	/* An unsized symbol extends to the next one. */
	assert_int_equal(nm_lookup(fixture, "fx_asm_unsized", &ns), 0);
	assert_string_equal(name_of(s, o, ns.addr + 20), "fx_asm_unsized");

	if (!stripped) {
		expect_named(s, o, fixture, "fx_internal", "fx_internal");
	}
	/* Demangled for users; the symbol table's name kept as the system name. */
	expect_named(s, o, fixture, "_ZN2ns3BoxIiE3getERKi", "ns::Box<int>::get(int const&)");
	expect_named(s, o, fixture, "_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write");
	expect_named(s, o, fixture, "_RNvNtCs1234_7mycrate3net4poll", "mycrate::net::poll");
	assert_int_equal(nm_lookup(fixture, "_ZN2ns3BoxIiE3getERKi", &ns), 0);
	{
		struct sym_frame f[2];

		assert_int_equal(symbolizer__symbolize(s, o, ns.addr, f, 2), 1);
		assert_string_equal(f[0].system_name, "_ZN2ns3BoxIiE3getERKi");
		/* A second lookup finds the name demangled before. */
		assert_int_equal(symbolizer__symbolize(s, o, ns.addr, f, 2), 1);
		assert_string_equal(f[0].name, "ns::Box<int>::get(int const&)");
	}
	sym_object__put(o);
	symbolizer__free(s);
}

/* Line number of the first line of the fixture source containing marker. */
static uint32_t marker_line(const char *marker)
{
	FILE *f = fopen(FIXTURE_SRC "/inline.c", "r");
	char buf[512];
	uint32_t n = 0;

	assert_non_null(f);
	while (fgets(buf, sizeof(buf), f)) {
		n++;
		if (strstr(buf, marker)) {
			fclose(f);
			return n;
		}
	}
	fclose(f);
	fail_msg("no %s in inline.c", marker);
	return 0;
}

/* The first address of outer() whose frames are leaf_inlined <- mid_inlined <- outer. */
static uint64_t find_inlined(struct symbolizer *s, struct sym_object *o, const char *fixture,
			     struct sym_frame *f, int *n)
{
	struct nm_symbol ns = { 0 };
	uint64_t a;

	assert_int_equal(nm_lookup(fixture, "outer", &ns), 0);
	for (a = ns.addr; a < ns.addr + ns.size; a++) {
		*n = symbolizer__symbolize(s, o, a, f, 8);
		if (*n == 3 && !strcmp(f[0].name, "leaf_inlined"))
			return a;
	}
	fail_msg("%s: no address of outer() resolves to three frames", fixture);
	return 0;
}

/* The frames binutils' addr2line -i gives for addr: "function\nfile:line\n" each. */
static int addr2line(const char *fixture, uint64_t addr, char fn[][64], uint32_t *lines, int max)
{
	char cmd[512], buf[512];
	FILE *p;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "addr2line -i -f -e %s %#llx", fixture,
		 (unsigned long long)addr);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (n < max && fgets(buf, sizeof(buf), p)) {
		char *colon;

		buf[strcspn(buf, "\n")] = '\0';
		buf[63] = '\0';
		memcpy(fn[n], buf, strlen(buf) + 1);
		if (!fgets(buf, sizeof(buf), p))
			break;
		colon = strrchr(buf, ':');
		lines[n] = colon ? (uint32_t)strtoul(colon + 1, NULL, 10) : 0;
		n++;
	}
	pclose(p);
	return n;
}

/* Names from a symbol table alone (no DWARF): the first lookup demangles, which grows the
 * table's name buffer; the system name handed out with it must still be valid (ASan). */
static void test_demangle_from_symbol_table(void **state)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct nm_symbol ns = { 0 };
	struct sym_object *o;
	struct sym_frame f[2];

	(void)state;
	o = open_fixture(s, FIXTURE("libfixture-stripped.so"));
	assert_non_null(o);
	assert_int_equal(nm_lookup(FIXTURE("libfixture.so"), "_ZN2ns3BoxIiE3getERKi", &ns), 0);
	assert_int_equal(symbolizer__symbolize(s, o, ns.addr, f, 2), 1);
	assert_string_equal(f[0].name, "ns::Box<int>::get(int const&)");
	assert_string_equal(f[0].system_name, "_ZN2ns3BoxIiE3getERKi");
	sym_object__put(o);
	symbolizer__free(s);
}

/* A stripped binary's internal functions from its MiniDebugInfo. */
static void test_minidebuginfo(void **state)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_object *o;

	(void)state;
	o = open_fixture(s, FIXTURE("fixture-minidebug"));
	assert_non_null(o);
	/* Same code as fixture-pie, whose nm listing gives the addresses. */
	expect_named(s, o, FIXTURE("fixture-pie"), "fx_internal", "fx_internal");
	expect_named(s, o, FIXTURE("fixture-pie"), "fx_exported_first", "fx_exported_first");
	sym_object__put(o);
	symbolizer__free(s);
}

/* DWARF in zlib-compressed sections (gcc -gz=zlib) reads the same. */
static void test_dwarf_compressed_sections(void **state)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_object *o;
	struct sym_frame f[8];
	int n = 0;

	(void)state;
	o = open_fixture(s, FIXTURE("inline-zlib"));
	assert_non_null(o);
	find_inlined(s, o, FIXTURE("inline-zlib"), f, &n);
	assert_int_equal(f[1].line, marker_line("CALL_LEAF"));
	sym_object__put(o);
	symbolizer__free(s);
}

/*
 * A copy of fixture in a memfd with its section `section` (SHF_COMPRESSED, ELFCLASS64)
 * damaged: its deflate stream's middle bytes inverted, or, with ch_size non-zero, its
 * compression header claiming that many bytes inflated.
 */
static int damaged_copy(const char *fixture, const char *section, uint64_t ch_size)
{
	int in = open(fixture, O_RDONLY | O_CLOEXEC), out = memfd_create("damaged", MFD_CLOEXEC);
	Elf *elf = elf_begin(in, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr shdr;
	char buf[65536];
	ssize_t n;

	assert_true(in >= 0 && out >= 0 && elf && !elf_getshdrstrndx(elf, &shstrndx));
	while ((scn = elf_nextscn(elf, scn)) && gelf_getshdr(scn, &shdr))
		if (!strcmp(elf_strptr(elf, shstrndx, shdr.sh_name), section))
			break;
	assert_non_null(scn);
	assert_true((shdr.sh_flags & SHF_COMPRESSED) && shdr.sh_size > sizeof(Elf64_Chdr) + 16);
	elf_end(elf);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	close(in);
	if (ch_size) {
		assert_int_equal(pwrite(out, &ch_size, sizeof(ch_size),
					(off_t)(shdr.sh_offset + offsetof(Elf64_Chdr, ch_size))),
				 sizeof(ch_size));
	} else {
		off_t mid = (off_t)(shdr.sh_offset + sizeof(Elf64_Chdr) +
				    (shdr.sh_size - sizeof(Elf64_Chdr)) / 2 - 4);

		assert_int_equal(pread(out, buf, 8, mid), 8);
		for (int i = 0; i < 8; i++)
			buf[i] = (char)~buf[i];
		assert_int_equal(pwrite(out, buf, 8, mid), 8);
	}
	return out;
}

/*
 * A compressed debug section that does not inflate is left out and the rest is used: a
 * corrupt .debug_info leaves the symbol table's names (no inline frames); a .debug_line whose
 * header claims 1 GiB from 180 bytes (more than deflate can expand to) is refused without
 * reading the DWARF as too large for the cache, so the inline frames stay, without lines.
 */
static void test_dwarf_damaged_compressed_sections(void **state)
{
	const char *fixture = FIXTURE("inline-zlib");
	struct symbolizer *s = symbolizer__new(NULL);
	struct nm_symbol ns = { 0 };
	struct sym_object *o;
	struct sym_frame f[8];
	uint64_t a;
	int fd, n;

	(void)state;
	/* The address whose frames are leaf_inlined <- mid_inlined <- outer, intact. */
	o = open_fixture(s, fixture);
	assert_non_null(o);
	a = find_inlined(s, o, fixture, f, &n);
	sym_object__put(o);
	symbolizer__free(s);
	assert_int_equal(nm_lookup(fixture, "outer", &ns), 0);

	s = symbolizer__new(NULL);
	fd = damaged_copy(fixture, ".debug_info", 0);
	o = symbolizer__open_fd(s, fd, "corrupt-info", 0, 0);
	close(fd);
	assert_non_null(o);
	assert_int_equal(symbolizer__symbolize(s, o, a, f, 8), 1);
	assert_string_equal(f[0].name, "outer");
	assert_int_equal(f[0].line, 0);
	sym_object__put(o);
	symbolizer__free(s);

	s = symbolizer__new(NULL);
	fd = damaged_copy(fixture, ".debug_line", 1ULL << 30);
	o = symbolizer__open_fd(s, fd, "oversized-line", 0, 0);
	close(fd);
	assert_non_null(o);
	n = symbolizer__symbolize(s, o, a, f, 8);
	assert_int_equal(n, 3);
	assert_string_equal(f[0].name, "leaf_inlined");
	assert_string_equal(f[1].name, "mid_inlined");
	assert_string_equal(f[2].name, "outer");
	assert_int_equal(f[0].line, 0);
	sym_object__put(o);
	symbolizer__free(s);
}

/*
 * symbolizer__release_dwarf() closes the DWARF handle (its decompressed sections leave the
 * cache's count) and a lookup of an address not resolved before opens it again, with the
 * same inline frames and call-site lines.
 */
static void test_dwarf_closed_and_opened_again(void **state)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct symbolizer_stats before, after;
	struct nm_symbol ns = { 0 };
	struct sym_object *o;
	struct sym_frame f[8];
	int n = 0;

	(void)state;
	o = open_fixture(s, FIXTURE("inline-zlib"));
	assert_non_null(o);
	assert_int_equal(nm_lookup(FIXTURE("inline-zlib"), "outer", &ns), 0);
	n = symbolizer__symbolize(s, o, ns.addr, f, 8);
	assert_int_equal(n, 1);
	assert_string_equal(f[0].name, "outer");
	symbolizer__stats(s, &before);
	assert_true(symbolizer__release_dwarf(s) > 0);
	symbolizer__stats(s, &after);
	assert_int_equal(after.dwarf_released, 1);
	assert_true(after.cache_bytes < before.cache_bytes);
	assert_int_equal(symbolizer__release_dwarf(s), 0); /* nothing open now */
	/* The first address comes from the address cache, the next ones from DWARF again. */
	find_inlined(s, o, FIXTURE("inline-zlib"), f, &n);
	assert_string_equal(f[1].name, "mid_inlined");
	assert_int_equal(f[1].line, marker_line("CALL_LEAF"));
	assert_non_null(f[0].file);
	assert_non_null(strstr(f[0].file, "inline.c"));
	assert_true(symbolizer__release_dwarf(s) > 0);
	sym_object__put(o);
	symbolizer__free(s);
}

/*
 * symbolizer__prefetch() resolves the addresses it is given (the lookups that follow are
 * address-cache hits with the same frames) and leaves the object's DWARF handle closed.
 */
static void test_prefetch_resolves_ahead_and_closes(void **state)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct symbolizer_stats before, after;
	struct nm_symbol outer = { 0 };
	struct sym_object *o;
	struct sym_frame f[8];
	uint64_t addrs[2];
	int n;

	(void)state;
	o = open_fixture(s, FIXTURE("inline-zlib"));
	assert_non_null(o);
	assert_int_equal(nm_lookup(FIXTURE("inline-zlib"), "outer", &outer), 0);
	addrs[0] = addrs[1] = outer.addr; /* a repeated address is looked up once */
	assert_int_equal(symbolizer__prefetch(s, o, addrs, 2), 0);
	assert_int_equal(symbolizer__release_dwarf(s), 0); /* closed already */
	symbolizer__stats(s, &before);
	assert_int_equal(before.dwarf_released, 1);
	n = symbolizer__symbolize(s, o, outer.addr, f, 8);
	assert_int_equal(n, 1);
	assert_string_equal(f[0].name, "outer");
	symbolizer__stats(s, &after);
	assert_int_equal(after.addr_hits, before.addr_hits + 1);
	assert_int_equal(symbolizer__release_dwarf(s), 0); /* not opened again */
	sym_object__put(o);
	symbolizer__free(s);
}

static void test_dwarf_inline_frames(void **state)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_object *o;
	struct sym_frame f[8];
	char fn[8][64];
	uint32_t lines[8];
	uint64_t addr;
	int n = 0, i, m;

	(void)state;
	o = open_fixture(s, FIXTURE("inline"));
	assert_non_null(o);
	addr = find_inlined(s, o, FIXTURE("inline"), f, &n);
	assert_string_equal(f[1].name, "mid_inlined");
	assert_string_equal(f[2].name, "outer");
	for (i = 0; i < n; i++) {
		assert_non_null(f[i].file);
		assert_non_null(strstr(f[i].file, "inline.c"));
	}
	/* Each outer frame is at the call site of the one it contains. */
	assert_int_equal(f[1].line, marker_line("CALL_LEAF"));
	assert_int_equal(f[2].line, marker_line("CALL_MID"));
	/* And every frame agrees with binutils. */
	m = addr2line(FIXTURE("inline"), addr, fn, lines, 8);
	assert_int_equal(m, n);
	for (i = 0; i < n; i++) {
		assert_string_equal(f[i].name, fn[i]);
		assert_int_equal(f[i].line, lines[i]);
	}
	sym_object__put(o);
	symbolizer__free(s);
}

static void test_debug_file_by_debuglink(void **state)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct symbolizer_stats st;
	struct sym_object *o;
	struct sym_frame f[8];
	uint32_t crc = 0;
	int n = 0, fd;

	(void)state;
	o = open_fixture(s, FIXTURE("inline-stripped"));
	assert_non_null(o);
	assert_true(sym_object__needs_debug_file(o));
	assert_string_equal(sym_object__debuglink(o, &crc), "inline.debug");
	assert_true(crc != 0);
	/* Stripped: only the entry point's neighbourhood could be named, outer() is not. */
	{
		struct nm_symbol ns = { 0 };

		assert_int_equal(nm_lookup(FIXTURE("inline"), "outer", &ns), 0);
		assert_int_equal(symbolizer__symbolize(s, o, ns.addr, f, 8), 0);
	}
	/* The debug file of another build is refused, whatever its name. */
	fd = open(FIXTURE("inline-other.debug"), O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(symbolizer__set_debug_file(s, o, fd), -ENOKEY);
	close(fd);
	symbolizer__stats(s, &st);
	assert_int_equal(st.debug_files_refused, 1);
	assert_true(sym_object__needs_debug_file(o));
	/* Not ELF at all. */
	fd = open(FIXTURE("fixture-pie.nm"), O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(symbolizer__set_debug_file(s, o, fd), -EINVAL);
	close(fd);
	/* Its own: names, lines and inline frames through the stripped binary. */
	fd = open(FIXTURE("inline.debug"), O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(symbolizer__set_debug_file(s, o, fd), 0);
	close(fd);
	assert_false(sym_object__needs_debug_file(o));
	find_inlined(s, o, FIXTURE("inline"), f, &n);
	assert_int_equal(n, 3);
	assert_string_equal(f[2].name, "outer");
	symbolizer__stats(s, &st);
	assert_int_equal(st.debug_files, 1);
	sym_object__put(o);
	symbolizer__free(s);
}

static void test_perfmap(void **state)
{
	static const char text[] = "7f0000001000 100 LazyCompile:~add /app/x.js:3\n"
				   "0x7f0000002000 0x20 [jit] stub\r\n"
				   "garbage line\n"
				   "7f0000003000 0 zero_size\n"
				   "ffffffffffffff00 1000 overflows\n"
				   "7f0000004000 10\n"
				   "\n"
				   "7f0000001080 40 recompiled\n"
				   "7f0000005000 8 no_newline_at_end";
	struct sym_perfmap *m = sym_perfmap__parse(text, sizeof(text) - 1);
	uint64_t start = 0, malformed = 0;

	(void)state;
	assert_non_null(m);
	assert_int_equal(sym_perfmap__count(m, &malformed), 4);
	assert_int_equal(malformed, 4);
	assert_string_equal(sym_perfmap__lookup(m, 0x7f0000001000, &start),
			    "LazyCompile:~add /app/x.js:3");
	assert_int_equal(start, 0x7f0000001000);
	assert_string_equal(sym_perfmap__lookup(m, 0x7f00000010ff, NULL),
			    "LazyCompile:~add /app/x.js:3");
	/* Code at the same addresses written again later: the later line wins. */
	assert_string_equal(sym_perfmap__lookup(m, 0x7f00000010a0, &start), "recompiled");
	assert_int_equal(start, 0x7f0000001080);
	assert_null(sym_perfmap__lookup(m, 0x7f0000001100, NULL)); /* end is exclusive */
	assert_string_equal(sym_perfmap__lookup(m, 0x7f000000201f, NULL), "[jit] stub");
	assert_null(sym_perfmap__lookup(m, 0x7f0000002020, NULL));
	assert_string_equal(sym_perfmap__lookup(m, 0x7f0000005007, NULL), "no_newline_at_end");
	assert_null(sym_perfmap__lookup(m, 0x1000, NULL));
	assert_true(sym_perfmap__bytes(m) > 0);
	sym_perfmap__free(m);

	m = sym_perfmap__parse("", 0);
	assert_non_null(m);
	assert_null(sym_perfmap__lookup(m, 0, NULL));
	sym_perfmap__free(m);
}

/* The ELF address and size of `name` in o as the lookup by name finds it, checked against
 * the nm listing of `listing` (the unstripped build of the same code). */
static void expect_symbol(struct symbolizer *s, struct sym_object *o, const char *listing,
			  const char *name)
{
	struct nm_symbol ns = { 0 };
	uint64_t vaddr = 0, size = 0;
	int err;

	if (nm_lookup(listing, name, &ns))
		fail_msg("%s: no %s in the nm listing", listing, name);
	err = sym_object__symbol(s, o, name, &vaddr, &size);
	if (err)
		fail_msg("%s: %s not found: %d", sym_object__name(o), name, err);
	assert_int_equal(vaddr, ns.addr);
	assert_int_equal(size, ns.size);
}

/* Symbols by exact name: functions and data, global and local (a dotted ".cold" name), from
 * .symtab, .dynsym alone, MiniDebugInfo and an accepted debug file. */
static void test_symbol_by_name(void **state)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_object *o;
	uint64_t vaddr = 0, size = 0;
	int fd;

	(void)state;
	o = open_fixture(s, FIXTURE("libfixture.so"));
	assert_non_null(o);
	expect_symbol(s, o, FIXTURE("libfixture.so"), "fx_exported_first");
	expect_symbol(s, o, FIXTURE("libfixture.so"), "fx_internal");
	expect_symbol(s, o, FIXTURE("libfixture.so"), "fx_data"); /* STT_OBJECT */
	expect_symbol(s, o, FIXTURE("libfixture.so"), "fx_asm_after.cold");
	/* A weak alias is found by its own name, at its target's address. */
	expect_symbol(s, o, FIXTURE("libfixture.so"), "fx_weak_alias");
	/* Asked again: the remembered answers are the same. */
	expect_symbol(s, o, FIXTURE("libfixture.so"), "fx_internal");
	expect_symbol(s, o, FIXTURE("libfixture.so"), "fx_data");
	expect_symbol(s, o, FIXTURE("libfixture.so"), "fx_weak_alias");
	assert_int_equal(sym_object__symbol(s, o, "fx_asm_after.col", &vaddr, &size), -ENOENT);
	assert_int_equal(sym_object__symbol(s, o, "fx_nothing", &vaddr, NULL), -ENOENT);
	assert_int_equal(sym_object__symbol(s, o, "", &vaddr, NULL), -EINVAL);
	/* An undefined reference is no definition. */
	assert_int_equal(sym_object__symbol(s, o, "__cxa_finalize", &vaddr, NULL), -ENOENT);
	sym_object__put(o);

	/* .dynsym only: exported functions and data; local ones are gone. */
	o = open_fixture(s, FIXTURE("libfixture-stripped.so"));
	assert_non_null(o);
	expect_symbol(s, o, FIXTURE("libfixture.so"), "fx_exported_second");
	expect_symbol(s, o, FIXTURE("libfixture.so"), "fx_data");
	assert_int_equal(sym_object__symbol(s, o, "fx_internal", &vaddr, NULL), -ENOENT);
	assert_int_equal(sym_object__symbol(s, o, "fx_asm_after.cold", &vaddr, NULL), -ENOENT);
	sym_object__put(o);

	/* MiniDebugInfo brings the local functions back. */
	o = open_fixture(s, FIXTURE("fixture-minidebug"));
	assert_non_null(o);
	expect_symbol(s, o, FIXTURE("fixture-pie"), "fx_internal");
	expect_symbol(s, o, FIXTURE("fixture-pie"), "fx_exported_first");
	sym_object__put(o);

	/* A stripped executable names its data only through its debug file. */
	o = open_fixture(s, FIXTURE("inline-stripped"));
	assert_non_null(o);
	assert_int_equal(sym_object__symbol(s, o, "in_data", &vaddr, NULL), -ENOENT);
	fd = open(FIXTURE("inline.debug"), O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(symbolizer__set_debug_file(s, o, fd), 0);
	close(fd);
	expect_symbol(s, o, FIXTURE("inline"), "in_data");
	expect_symbol(s, o, FIXTURE("inline"), "outer");
	sym_object__put(o);
	symbolizer__free(s);
}

static void test_pie(void **state)
{
	(void)state;
	check_fixture(FIXTURE("fixture-pie"), false);
}

static void test_nopie(void **state)
{
	(void)state;
	check_fixture(FIXTURE("fixture-nopie"), false);
}

static void test_shared_library(void **state)
{
	(void)state;
	check_fixture(FIXTURE("libfixture.so"), false);
}

/* .dynsym only: exported names resolve; the internal function is never named after its
 * exported neighbour. The addresses come from the unstripped library's listing. */
static void test_dynsym_only(void **state)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_object *o;
	struct nm_symbol ns = { 0 };
	uint64_t a;

	(void)state;
	check_fixture(FIXTURE("libfixture-stripped.so"), true);
	o = open_fixture(s, FIXTURE("libfixture-stripped.so"));
	assert_non_null(o);
	assert_int_equal(nm_lookup(FIXTURE("libfixture.so"), "fx_internal", &ns), 0);
	assert_true(ns.size > 0);
	for (a = ns.addr; a < ns.addr + ns.size; a++) {
		const char *got = name_of(s, o, a);

		if (got)
			fail_msg("internal code at %#llx named %s", (unsigned long long)a, got);
	}
	sym_object__put(o);
	symbolizer__free(s);
}

static void test_no_build_id(void **state)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_object *o;
	const uint8_t *id;
	char hex[8];

	(void)state;
	o = open_fixture(s, FIXTURE("fixture-nobuildid"));
	assert_non_null(o);
	assert_int_equal(sym_object__build_id(o, &id), 0);
	sym_object__build_id_hex(o, hex, sizeof(hex));
	assert_string_equal(hex, "");
	expect_named(s, o, FIXTURE("fixture-nobuildid"), "fx_exported_first", "fx_exported_first");
	sym_object__put(o);
	symbolizer__free(s);
}

/* File offsets to virtual addresses through PT_LOAD. Text of the non-PIE lies 0x400000 above
 * its file offset; of the PIE and the library at the same offset (GNU ld's layout). */
static void test_vaddr(void **state)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_object *o;
	struct nm_symbol ns = { 0 };
	uint64_t v;

	(void)state;
	o = open_fixture(s, FIXTURE("fixture-nopie"));
	assert_int_equal(nm_lookup(FIXTURE("fixture-nopie"), "fx_exported_first", &ns), 0);
	assert_int_equal(sym_object__vaddr(o, ns.addr - 0x400000, &v), 0);
	assert_int_equal(v, ns.addr);
	assert_int_equal(sym_object__vaddr(o, 1ULL << 40, &v), -ENOENT);
	sym_object__put(o);

	o = open_fixture(s, FIXTURE("libfixture.so"));
	assert_int_equal(nm_lookup(FIXTURE("libfixture.so"), "fx_exported_first", &ns), 0);
	assert_int_equal(sym_object__vaddr(o, ns.addr, &v), 0);
	assert_int_equal(v, ns.addr);
	sym_object__put(o);
	symbolizer__free(s);
}

/* First hex number a shell command prints, or UINT64_MAX. */
static uint64_t command_hex(const char *cmd)
{
	unsigned long long v;
	FILE *p = popen(cmd, "r");

	assert_non_null(p);
	if (fscanf(p, "%llx", &v) != 1)
		v = UINT64_MAX;
	pclose(p);
	return v;
}

/* What recognises a main executable in a process's memory: the lowest address of its
 * executable segments and the address of its build ID bytes (past the note's 12-byte header
 * and "GNU\0"), as readelf shows them; nothing without a build ID. */
static void test_exe_layout(void **state)
{
	static const char *const fixtures[] = { FIXTURE("fixture-nopie"), FIXTURE("fixture-pie"),
						FIXTURE("libfixture.so") };
	struct symbolizer *s = symbolizer__new(NULL);
	uint64_t text, id;
	char cmd[1024];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		struct sym_object *o = open_fixture(s, fixtures[i]);

		assert_non_null(o);
		assert_int_equal(sym_object__exe_layout(o, &text, &id), 0);
		snprintf(cmd, sizeof(cmd),
			 "readelf -lW %s | awk '$1 == \"LOAD\" && /E 0x/ { print $3 }' | sort | "
			 "head -1",
			 fixtures[i]);
		assert_int_equal(text, command_hex(cmd));
		snprintf(cmd, sizeof(cmd),
			 "readelf -SW %s | awk '/ \\.note\\.gnu\\.build-id / { for (i = 1; i < NF; "
			 "i++) if ($i == \"NOTE\") { print $(i + 1); exit } }'",
			 fixtures[i]);
		assert_int_equal(id, command_hex(cmd) + 16);
		sym_object__put(o);
	}
	{
		struct sym_object *o = open_fixture(s, FIXTURE("fixture-nobuildid"));

		assert_int_equal(sym_object__exe_layout(o, &text, &id), -ENOENT);
		sym_object__put(o);
	}
	symbolizer__free(s);
}

/* One object per file identity, found again without opening; gone after the last put. */
static void test_objects_are_shared(void **state)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_object *a, *b, *c;
	struct symbolizer_stats st;
	struct stat sb;

	(void)state;
	assert_int_equal(stat(FIXTURE("fixture-pie"), &sb), 0);
	a = open_fixture(s, FIXTURE("fixture-pie"));
	b = open_fixture(s, FIXTURE("fixture-pie"));
	assert_ptr_equal(a, b);
	c = symbolizer__find(s, sb.st_dev, sb.st_ino);
	assert_ptr_equal(a, c);
	symbolizer__stats(s, &st);
	assert_int_equal(st.objects, 1);
	sym_object__put(a);
	sym_object__put(b);
	sym_object__put(c);
	assert_null(symbolizer__find(s, sb.st_dev, sb.st_ino));
	symbolizer__stats(s, &st);
	assert_int_equal(st.objects, 0);
	symbolizer__free(s);
}

/* A budget smaller than any table: every lookup still answers, tables are evicted. */
static void test_cache_budget(void **state)
{
	struct symbolizer_opts opts = { .sz = sizeof(opts), .cache_max_bytes = 1 };
	struct symbolizer *s = symbolizer__new(&opts);
	const char *fixtures[] = { FIXTURE("fixture-pie"), FIXTURE("fixture-nopie"),
				   FIXTURE("libfixture.so") };
	struct sym_object *o[3];
	struct symbolizer_stats st;
	int round, i;

	(void)state;
	for (i = 0; i < 3; i++)
		o[i] = open_fixture(s, fixtures[i]);
	for (round = 0; round < 3; round++)
		for (i = 0; i < 3; i++)
			expect_named(s, o[i], fixtures[i], "fx_exported_first",
				     "fx_exported_first");
	symbolizer__stats(s, &st);
	assert_true(st.tables_evicted >= 6);
	assert_int_equal(st.tables_loaded, st.tables_evicted + 1);
	for (i = 0; i < 3; i++)
		sym_object__put(o[i]);
	symbolizer__free(s);
}

/* Tables no lookup used for max_idle periods are dropped; the others stay, and an object
 * whose table was dropped (its cached pointer now stale) reads it again on its next lookup. */
static void test_idle_tables_dropped(void **state)
{
	struct symbolizer *s = symbolizer__new(NULL);
	const char *fixtures[] = { FIXTURE("fixture-pie"), FIXTURE("fixture-nopie"),
				   FIXTURE("libfixture.so") };
	struct sym_object *o[3];
	struct symbolizer_stats st, all;
	int i;

	(void)state;
	for (i = 0; i < 3; i++) {
		o[i] = open_fixture(s, fixtures[i]);
		expect_named(s, o[i], fixtures[i], "fx_exported_first", "fx_exported_first");
	}
	symbolizer__stats(s, &all);
	assert_int_equal(all.tables, 3);
	assert_int_equal(symbolizer__drop_idle(s, 2), 0); /* all used in this period */
	expect_named(s, o[0], fixtures[0], "fx_exported_first", "fx_exported_first");
	assert_int_equal(symbolizer__drop_idle(s, 2), 0); /* o[1], o[2]: one period idle */
	expect_named(s, o[0], fixtures[0], "fx_exported_first", "fx_exported_first");
	assert_true(symbolizer__drop_idle(s, 2) > 0); /* ... two: dropped */
	symbolizer__stats(s, &st);
	assert_int_equal(st.tables, 1);
	assert_int_equal(st.tables_expired, 2);
	assert_true(st.cache_bytes > 0 && st.cache_bytes < all.cache_bytes);
	/* 0 keeps every table, however long idle. */
	for (i = 0; i < 5; i++)
		assert_int_equal(symbolizer__drop_idle(s, 0), 0);
	for (i = 1; i < 3; i++)
		expect_named(s, o[i], fixtures[i], "fx_exported_first", "fx_exported_first");
	symbolizer__stats(s, &st);
	assert_int_equal(st.tables, 3);
	assert_int_equal(st.tables_loaded, 5);
	assert_int_equal(st.cache_bytes, all.cache_bytes);
	for (i = 0; i < 3; i++)
		sym_object__put(o[i]);
	symbolizer__free(s);
}

/* Tables are keyed by build ID: a second copy of a binary reuses the first one's table. */
static void test_table_shared_by_build_id(void **state)
{
	struct symbolizer *s = symbolizer__new(NULL);
	char copy[] = "/tmp/ignis-test-copy-XXXXXX";
	struct sym_object *a, *b;
	struct symbolizer_stats st;
	char buf[65536];
	int in, out;
	ssize_t n;

	(void)state;
	in = open(FIXTURE("fixture-pie"), O_RDONLY);
	out = mkstemp(copy);
	assert_true(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	close(in);
	close(out);

	a = open_fixture(s, FIXTURE("fixture-pie"));
	b = open_fixture(s, copy);
	unlink(copy);
	assert_ptr_not_equal(a, b);
	expect_named(s, a, FIXTURE("fixture-pie"), "fx_internal", "fx_internal");
	expect_named(s, b, FIXTURE("fixture-pie"), "fx_internal", "fx_internal");
	symbolizer__stats(s, &st);
	assert_int_equal(st.tables_loaded, 1);
	sym_object__put(a);
	sym_object__put(b);
	symbolizer__free(s);
}

static void test_not_elf(void **state)
{
	struct symbolizer *s = symbolizer__new(NULL);
	char path[] = "/tmp/ignis-test-bad-XXXXXX";
	unsigned char head[4096];
	int fd, src;
	ssize_t n;

	(void)state;
	/* Text, a directory, a truncated ELF header, an ELF with its section table cut off. */
	fd = mkstemp(path);
	assert_int_equal(write(fd, "#!/bin/sh\necho hi\n", 18), 18);
	assert_null(symbolizer__open_fd(s, fd, path, 0, 0));
	assert_int_equal(errno, EINVAL);
	close(fd);

	fd = open("/tmp", O_RDONLY | O_DIRECTORY);
	assert_null(symbolizer__open_fd(s, fd, "/tmp", 0, 0));
	close(fd);

	src = open(FIXTURE("fixture-pie"), O_RDONLY);
	n = read(src, head, sizeof(head));
	close(src);
	assert_true(n == (ssize_t)sizeof(head));
	fd = open(path, O_RDWR | O_TRUNC);
	assert_int_equal(write(fd, head, 40), 40);
	assert_null(symbolizer__open_fd(s, fd, path, 0, 0));
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(pwrite(fd, head, sizeof(head), 0), (ssize_t)sizeof(head));
	{
		/* Headers intact, the rest of the file gone: symbolizing must fail cleanly. */
		struct sym_object *o = symbolizer__open_fd(s, fd, path, 0, 0);
		struct sym_frame f[2];

		if (o) {
			assert_true(symbolizer__symbolize(s, o, 0x1100, f, 2) <= 1);
			sym_object__put(o);
		}
	}
	close(fd);
	unlink(path);
	symbolizer__free(s);
}

/* The vDSO from memory, as the agent reads it: its exported clock_gettime is named. */
static void test_vdso(void **state)
{
	const void *base = (const void *)getauxval(AT_SYSINFO_EHDR);
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_object *o;
	Elf *elf;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Sym sym;
	uint64_t addr = 0;
	size_t i;
	const char *got;

	(void)state;
	if (!base)
		skip();
	o = symbolizer__open_memory(s, base, 8192, "[vdso]");
	assert_non_null(o);
	/* Find __vdso_clock_gettime with libelf directly, as the reference. */
	elf_version(EV_CURRENT);
	elf = elf_memory((char *)base, 8192);
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;

		gelf_getshdr(scn, &sh);
		if (sh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		for (i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			gelf_getsym(d, (int)i, &sym);
			if (!strcmp(elf_strptr(elf, sh.sh_link, sym.st_name),
				    "__vdso_clock_gettime"))
				addr = sym.st_value;
		}
	}
	elf_end(elf);
	assert_true(addr != 0);
	got = name_of(s, o, addr);
	assert_non_null(got);
	assert_true(!strcmp(got, "__vdso_clock_gettime") || !strcmp(got, "clock_gettime"));
	sym_object__put(o);
	symbolizer__free(s);
}

/* More names than an object remembers, asked twice over: each answer is the one its
 * .dynsym gives (searched afresh by sym_object__dynamic_symbol()), before and after the
 * oldest were forgotten. libc's exports, on every Debian. */
static void test_symbol_by_name_remembered(void **state)
{
	static const char *const names[] = {
		"malloc", "free",  "calloc", "strlen",	"strcmp", "strchr",   "printf",
		"puts",	  "fputs", "qsort",  "bsearch", "strtod", "strtol",   "getenv",
		"close",  "read",  "write",  "abort",	"atoi",	  "snprintf", "fprintf",
	};
	struct symbolizer *s = symbolizer__new(NULL);
	struct sym_object *o = open_fixture(s, "/lib/x86_64-linux-gnu/libc.so.6");
	uint64_t vaddr, want;
	size_t round, i, checked;

	(void)state;
	assert_non_null(o);
	for (round = 0; round < 2; round++) {
		checked = 0;
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			/* A name with two versioned definitions (memcpy@GLIBC_2.2.5 and
			 * memcpy@@GLIBC_2.14) is not one answer: not this test's subject. */
			if (sym_object__dynamic_symbol(o, names[i], &want, NULL))
				continue;
			vaddr = 0;
			if (sym_object__symbol(s, o, names[i], &vaddr, NULL))
				fail_msg("libc: %s not found (round %zu)", names[i], round);
			assert_int_equal(vaddr, want);
			checked++;
		}
		assert_true(checked > 16); /* more than an object remembers */
	}
	sym_object__put(o);
	symbolizer__free(s);
}

UNIT_MAIN("symbolizer", cmocka_unit_test(test_pie),
	  cmocka_unit_test(test_symbol_by_name_remembered), cmocka_unit_test(test_nopie),
	  cmocka_unit_test(test_shared_library), cmocka_unit_test(test_dynsym_only),
	  cmocka_unit_test(test_no_build_id), cmocka_unit_test(test_vaddr),
	  cmocka_unit_test(test_exe_layout), cmocka_unit_test(test_objects_are_shared),
	  cmocka_unit_test(test_idle_tables_dropped), cmocka_unit_test(test_cache_budget),
	  cmocka_unit_test(test_table_shared_by_build_id), cmocka_unit_test(test_not_elf),
	  cmocka_unit_test(test_vdso), cmocka_unit_test(test_dwarf_inline_frames),
	  cmocka_unit_test(test_dwarf_closed_and_opened_again),
	  cmocka_unit_test(test_prefetch_resolves_ahead_and_closes),
	  cmocka_unit_test(test_dwarf_compressed_sections),
	  cmocka_unit_test(test_dwarf_damaged_compressed_sections),
	  cmocka_unit_test(test_minidebuginfo), cmocka_unit_test(test_demangle_from_symbol_table),
	  cmocka_unit_test(test_debug_file_by_debuglink), cmocka_unit_test(test_perfmap),
	  cmocka_unit_test(test_symbol_by_name))
