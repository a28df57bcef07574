// SPDX-License-Identifier: Apache-2.0
/*
 * CPython's layouts (agent/python/pylayout.c) against the DWARF of pyenv's builds: every
 * field of every row is asked of gdb (the offset of the member it names, or a struct's
 * size) in the libpython of that version, and 3.13's layout is decoded from the
 * _Py_DebugOffsets that its libpython's _PyRuntime is initialized with.
 */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include "unit.h"

#include "../../agent/python/pylayout.h"

#define NVERS 6
static const char *const versions[NVERS] = { "3.8.18", "3.9.18", "3.10.13",
					     "3.11.7", "3.12.1", "3.13.0" };

/* gdb expressions: the offset of a member of a type, a type's size. */
#define OFF(type, member) "(long)&((" type " *)0)->" member
#define SIZE(type)	  "(long)sizeof(" type ")"
#define ALL(e)                   \
	{                        \
		e, e, e, e, e, e \
	}

/* One field of struct py_layout and what it is in each version (NULL: PY_FIELD_NONE). */
struct field {
	const char *name;
	size_t off; /* of the uint16_t in struct py_layout */
	const char *expr[NVERS];
};

#define F(m) #m, offsetof(struct py_layout, m)

static const struct field fields[] = {
	{ F(runtime_interp_main), ALL(OFF("_PyRuntimeState", "interpreters.main")) },
	{ F(runtime_tss_key),
	  { OFF("_PyRuntimeState", "gilstate.autoTSSkey"),
	    OFF("_PyRuntimeState", "gilstate.autoTSSkey"),
	    OFF("_PyRuntimeState", "gilstate.autoTSSkey"),
	    OFF("_PyRuntimeState", "gilstate.autoTSSkey"), OFF("_PyRuntimeState", "autoTSSkey"),
	    OFF("_PyRuntimeState", "autoTSSkey") } },
	{ F(interp_tstate_head),
	  { OFF("PyInterpreterState", "tstate_head"), OFF("PyInterpreterState", "tstate_head"),
	    OFF("PyInterpreterState", "tstate_head"), OFF("PyInterpreterState", "threads.head"),
	    OFF("PyInterpreterState", "threads.head"),
	    OFF("PyInterpreterState", "threads.head") } },
	{ F(tstate_next), ALL(OFF("PyThreadState", "next")) },
	{ F(tstate_interp), ALL(OFF("PyThreadState", "interp")) },
	{ F(tstate_frame),
	  { OFF("PyThreadState", "frame"), OFF("PyThreadState", "frame"),
	    OFF("PyThreadState", "frame"), OFF("PyThreadState", "cframe"),
	    OFF("PyThreadState", "cframe"), OFF("PyThreadState", "current_frame") } },
	{ F(cframe_frame),
	  { NULL, NULL, NULL, OFF("_PyCFrame", "current_frame"), OFF("_PyCFrame", "current_frame"),
	    NULL } },
	{ F(tstate_thread_id), ALL(OFF("PyThreadState", "thread_id")) },
	{ F(frame_previous),
	  { OFF("PyFrameObject", "f_back"), OFF("PyFrameObject", "f_back"),
	    OFF("PyFrameObject", "f_back"), OFF("struct _PyInterpreterFrame", "previous"),
	    OFF("struct _PyInterpreterFrame", "previous"),
	    OFF("struct _PyInterpreterFrame", "previous") } },
	{ F(frame_code),
	  { OFF("PyFrameObject", "f_code"), OFF("PyFrameObject", "f_code"),
	    OFF("PyFrameObject", "f_code"), OFF("struct _PyInterpreterFrame", "f_code"),
	    OFF("struct _PyInterpreterFrame", "f_code"),
	    OFF("struct _PyInterpreterFrame", "f_executable") } },
	{ F(frame_lasti),
	  { OFF("PyFrameObject", "f_lasti"), OFF("PyFrameObject", "f_lasti"),
	    OFF("PyFrameObject", "f_lasti"), OFF("struct _PyInterpreterFrame", "prev_instr"),
	    OFF("struct _PyInterpreterFrame", "prev_instr"),
	    OFF("struct _PyInterpreterFrame", "instr_ptr") } },
	{ F(frame_entry),
	  { NULL, NULL, NULL, OFF("struct _PyInterpreterFrame", "is_entry"),
	    OFF("struct _PyInterpreterFrame", "owner"),
	    OFF("struct _PyInterpreterFrame", "owner") } },
	{ F(code_filename), ALL(OFF("PyCodeObject", "co_filename")) },
	{ F(code_name), ALL(OFF("PyCodeObject", "co_name")) },
	{ F(code_qualname),
	  { NULL, NULL, NULL, OFF("PyCodeObject", "co_qualname"),
	    OFF("PyCodeObject", "co_qualname"), OFF("PyCodeObject", "co_qualname") } },
	{ F(code_firstlineno), ALL(OFF("PyCodeObject", "co_firstlineno")) },
	{ F(code_linetable),
	  { OFF("PyCodeObject", "co_lnotab"), OFF("PyCodeObject", "co_lnotab"),
	    OFF("PyCodeObject", "co_linetable"), OFF("PyCodeObject", "co_linetable"),
	    OFF("PyCodeObject", "co_linetable"), OFF("PyCodeObject", "co_linetable") } },
	{ F(code_code),
	  { NULL, NULL, NULL, OFF("PyCodeObject", "co_code_adaptive"),
	    OFF("PyCodeObject", "co_code_adaptive"), OFF("PyCodeObject", "co_code_adaptive") } },
	{ F(bytes_size), ALL(OFF("PyBytesObject", "ob_base.ob_size")) },
	{ F(bytes_data), ALL(OFF("PyBytesObject", "ob_sval")) },
	{ F(unicode_length), ALL(OFF("PyASCIIObject", "length")) },
	{ F(unicode_state), ALL(OFF("PyASCIIObject", "state")) },
	{ F(unicode_ascii_data), ALL(SIZE("PyASCIIObject")) },
	{ F(unicode_compact_data), ALL(SIZE("PyCompactUnicodeObject")) },
};

/* What the attach assumes of every version besides the table (agent/python/pyattach.c). */
static const char *const invariants[][2] = {
	{ SIZE("Py_tss_t"), "8" },
	{ OFF("Py_tss_t", "_is_initialized"), "0" },
	{ OFF("Py_tss_t", "_key"), "4" },
	{ OFF("PyObject", "ob_type"), "8" },
};

static void pyenv_prefix(const char *version, char *out, size_t size)
{
	char cmd[128];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "pyenv prefix %s 2>/dev/null", version);
	p = popen(cmd, "r");
	assert_non_null(p);
	if (!fgets(out, (int)size, p))
		out[0] = '\0';
	pclose(p);
	out[strcspn(out, "\n")] = '\0';
	if (!out[0])
		fail_msg("pyenv has no CPython %s (pyenv install %s)", version, version);
}

static void libpython_of(int v, char *path, size_t size)
{
	char prefix[256], minor[8];

	pyenv_prefix(versions[v], prefix, sizeof(prefix));
	snprintf(minor, sizeof(minor), "%.*s", (int)(strrchr(versions[v], '.') - versions[v]),
		 versions[v]);
	snprintf(path, size, "%s/lib/libpython%s.so.1.0", prefix, minor);
	assert_int_equal(access(path, R_OK), 0);
}

/*
 * Evaluate n gdb expressions (long integers) in the DWARF of lib: values[i] gets the value
 * of exprs[i], or -1 when gdb cannot evaluate it (no such member). One gdb run.
 */
static void gdb_eval(const char *lib, const char *const *exprs, size_t n, long *values)
{
	char *cmd = NULL, line[512];
	size_t len = 0, i, found = 0;
	FILE *p, *mem;

	mem = open_memstream(&cmd, &len);
	assert_non_null(mem);
	fprintf(mem, "gdb -batch -nx");
	for (i = 0; i < n; i++) {
		values[i] = -1;
		fprintf(mem, " -ex 'printf \"@%zu %%ld\\n\", %s'", i, exprs[i]);
	}
	fprintf(mem, " '%s' 2>/dev/null", lib);
	fclose(mem);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		size_t k;
		long v;

		if (sscanf(line, "@%zu %ld", &k, &v) == 2 && k < n) {
			values[k] = v;
			found++;
		}
	}
	/* gdb exits 1 when the last expression fails: the values tell. */
	pclose(p);
	if (!found)
		fail_msg("gdb read nothing from %s", lib);
	free(cmd);
}

/* Every field of layout l against the DWARF of version v's libpython. */
static void check_against_dwarf(int v, const struct py_layout *l)
{
	const size_t nf = sizeof(fields) / sizeof(fields[0]);
	const size_t ni = sizeof(invariants) / sizeof(invariants[0]);
	const char *exprs[64];
	long values[64];
	char lib[512];
	size_t i, n = 0;

	libpython_of(v, lib, sizeof(lib));
	for (i = 0; i < nf; i++)
		exprs[n++] = fields[i].expr[v] ? fields[i].expr[v] : "0";
	for (i = 0; i < ni; i++)
		exprs[n++] = invariants[i][0];
	exprs[n++] = "(long)FRAME_OWNED_BY_CSTACK";
	gdb_eval(lib, exprs, n, values);

	for (i = 0; i < nf; i++) {
		uint16_t got;

		memcpy(&got, (const char *)l + fields[i].off, sizeof(got));
		if (!fields[i].expr[v]) {
			if (got != PY_FIELD_NONE)
				fail_msg("%s: %s is %u, want none", versions[v], fields[i].name,
					 got);
			continue;
		}
		if (values[i] < 0)
			fail_msg("%s: gdb cannot evaluate %s", versions[v], fields[i].expr[v]);
		if (got != values[i])
			fail_msg("%s: %s is %u, the DWARF says %ld (%s)", versions[v],
				 fields[i].name, got, values[i], fields[i].expr[v]);
	}
	for (i = 0; i < ni; i++)
		if (values[nf + i] != atol(invariants[i][1]))
			fail_msg("%s: %s is %ld, want %s", versions[v], invariants[i][0],
				 values[nf + i], invariants[i][1]);
	/* enum _frameowner exists from 3.11; its CSTACK marker from 3.12 is the entry mark. */
	if (l->entry_kind == PY_ENTRY_KIND_OWNER)
		assert_int_equal(l->owner_cstack, values[nf + ni]);
	else
		assert_int_equal(l->owner_cstack, 0);
	assert_int_equal(py_layout_check(l), 0);
}

static void test_tables_match_dwarf(void **state)
{
	struct py_layout l;
	int v;

	(void)state;
	for (v = 0; v < 5; v++) {
		unsigned minor = (unsigned)atoi(versions[v] + 2);

		memset(&l, 0xa5, sizeof(l));
		assert_int_equal(py_layout_for_version(3, minor, &l), 0);
		assert_int_equal(l.version, 0x0300 | minor);
		check_against_dwarf(v, &l);
	}
}

static void test_versions_without_table(void **state)
{
	struct py_layout l;

	(void)state;
	assert_int_equal(py_layout_for_version(3, 7, &l), -ENOTSUP);
	assert_int_equal(py_layout_for_version(3, 13, &l), -ENOTSUP);
	assert_int_equal(py_layout_for_version(2, 7, &l), -ENOTSUP);
	assert_int_equal(py_layout_for_version(4, 8, &l), -ENOTSUP);
}

/* The bytes _PyRuntime of the 3.13 libpython starts with (its initialized .data). */
static void read_debug_offsets(uint8_t *buf, size_t len)
{
	const char *expr[] = { "(long)&_PyRuntime" };
	long vaddr = -1;
	char lib[512];
	size_t i, nr = 0;
	Elf *elf;
	int fd;

	libpython_of(5, lib, sizeof(lib));
	gdb_eval(lib, expr, 1, &vaddr);
	assert_true(vaddr > 0);
	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	fd = open(lib, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getphdrnum(elf, &nr), 0);
	for (i = 0; i < nr; i++) {
		GElf_Phdr ph;

		assert_non_null(gelf_getphdr(elf, (int)i, &ph));
		if (ph.p_type != PT_LOAD || (uint64_t)vaddr < ph.p_vaddr ||
		    (uint64_t)vaddr + len > ph.p_vaddr + ph.p_filesz)
			continue;
		assert_int_equal(pread(fd, buf, len, (off_t)(ph.p_offset + (vaddr - ph.p_vaddr))),
				 len);
		break;
	}
	assert_true(i < nr);
	elf_end(elf);
	close(fd);
}

static void put_u64(uint8_t *buf, size_t off, uint64_t v)
{
	memcpy(buf + off, &v, sizeof(v));
}

static void test_debug_offsets_3_13(void **state)
{
	uint8_t buf[1024], bad[1024];
	size_t len = py_debug_offsets_size();
	struct py_layout l;

	(void)state;
	assert_true(len <= sizeof(buf));
	read_debug_offsets(buf, len);
	memset(&l, 0xa5, sizeof(l));
	assert_int_equal(py_layout_from_debug_offsets(buf, len, &l), 0);
	assert_int_equal(l.version, 0x030d);
	assert_int_equal(l.lasti_kind, PY_LASTI_KIND_PTR);
	assert_int_equal(l.entry_kind, PY_ENTRY_KIND_OWNER);
	check_against_dwarf(5, &l);

	/* Too short, another cookie. */
	assert_int_equal(py_layout_from_debug_offsets(buf, len - 1, &l), -EINVAL);
	memcpy(bad, buf, len);
	bad[0] = 'X';
	assert_int_equal(py_layout_from_debug_offsets(bad, len, &l), -EINVAL);
	/* A free-threaded build (3.13t). */
	memcpy(bad, buf, len);
	put_u64(bad, 16, 1);
	assert_int_equal(py_layout_from_debug_offsets(bad, len, &l), -EPROTONOSUPPORT);
	put_u64(bad, 16, 7);
	assert_int_equal(py_layout_from_debug_offsets(bad, len, &l), -EINVAL);
	/* 3.14 lays its offsets out otherwise; not 3 at all is garbage. */
	memcpy(bad, buf, len);
	put_u64(bad, 8, 0x030e00a1);
	assert_int_equal(py_layout_from_debug_offsets(bad, len, &l), -ENOTSUP);
	put_u64(bad, 8, 0x020700f0);
	assert_int_equal(py_layout_from_debug_offsets(bad, len, &l), -EINVAL);
	/* A frame field outside its frame (interpreter_frame.size at 224, executable at 240). */
	memcpy(bad, buf, len);
	put_u64(bad, 240, 4096);
	assert_int_equal(py_layout_from_debug_offsets(bad, len, &l), -EINVAL);
	/* Inside a (claimed) larger frame, but past what the BPF walker reads. */
	put_u64(bad, 224, 4096);
	put_u64(bad, 240, 120);
	assert_int_equal(py_layout_from_debug_offsets(bad, len, &l), -EINVAL);
	/* A code field past IGNIS_PY_CODE_READ - 8 (code_object.size at 272, name at 288). */
	memcpy(bad, buf, len);
	put_u64(bad, 272, 4096);
	put_u64(bad, 288, 248);
	assert_int_equal(py_layout_from_debug_offsets(bad, len, &l), -EINVAL);
}

/* What py_layout_check() refuses. */
static void test_check(void **state)
{
	struct py_layout l, t;

	(void)state;
	assert_int_equal(py_layout_for_version(3, 12, &l), 0);
	t = l;
	t.frame_lasti = 120;
	assert_int_equal(py_layout_check(&t), -EINVAL);
	t.frame_lasti = 119;
	assert_int_equal(py_layout_check(&t), 0);
	t = l;
	t.code_code = 248;
	assert_int_equal(py_layout_check(&t), -EINVAL);
	t = l;
	t.frame_code = PY_FIELD_NONE;
	assert_int_equal(py_layout_check(&t), -EINVAL);
	t = l;
	t.frame_entry = PY_FIELD_NONE; /* an owner kind needs its byte */
	assert_int_equal(py_layout_check(&t), -EINVAL);
	t = l;
	t.code_code = PY_FIELD_NONE; /* a pointer lasti needs the bytecode's start */
	assert_int_equal(py_layout_check(&t), -EINVAL);
}

UNIT_MAIN("pylayout", cmocka_unit_test(test_tables_match_dwarf),
	  cmocka_unit_test(test_versions_without_table), cmocka_unit_test(test_debug_offsets_3_13),
	  cmocka_unit_test(test_check))
