// SPDX-License-Identifier: Apache-2.0
/*
 * The code-object cache (agent/python/pycode.c) against real interpreters: each CPython of
 * the build's pythons.txt (tests/tests.mk: pyenv's 3.8-3.13 and Debian's 3.11) runs
 * tests/data/src/pycode_child.py, which prints where some code objects are and what they
 * must read as (names with latin-1, UCS-2 and UCS-4 characters, a lone surrogate, a name
 * longer than the cap), then stops itself; the test reads them from its memory
 * (process_vm_readv on our own child needs no privilege) and checks names, file names,
 * first lines and the line of an instruction, sharing, a wrong identity (-ESTALE), objects
 * that are no code object, forgetting and the budget.
 */
#include <linux/types.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"

#include "../../bpf/profiler.h"
#include "../../bpf/pyident.bpf.h"
#include "../../agent/python/pycode.h"
#include "../../agent/python/pymem.h"

#define NONE PY_FIELD_NONE

/*
 * The fields pycode.c reads, per minor version, from `gdb -batch -ex 'ptype/o PyCodeObject'`
 * (and sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject), PyBytesObject.ob_sval) on
 * pyenv's libpython3.X.so.1.0 of each version: written down apart from pylayout.c's table,
 * which they must match (3.8-3.12; 3.13's comes from the process's _Py_DebugOffsets).
 */
static void layout_of(unsigned minor, struct py_layout *l)
{
	memset(l, 0, sizeof(*l));
	l->version = 0x0300 | minor;
	l->bytes_size = 16;
	l->bytes_data = 32;
	l->unicode_length = 16;
	l->unicode_state = 32;
	l->unicode_ascii_data = minor >= 12 ? 40 : 48;
	l->unicode_compact_data = minor >= 12 ? 56 : 72;
	if (minor <= 10) {
		l->code_firstlineno = 40;
		l->code_filename = 104;
		l->code_name = 112;
		l->code_qualname = NONE;
		l->code_linetable = 120;
		l->code_code = NONE;
	} else {
		l->code_firstlineno = minor == 11 ? 72 : 68;
		l->code_filename = 112;
		l->code_name = 120;
		l->code_qualname = 128;
		l->code_linetable = 136;
		l->code_code = minor == 11 ? 184 : minor == 12 ? 192 : 200;
	}
	if (minor <= 12) {
		struct py_layout t;

		assert_int_equal(py_layout_for_version(3, minor, &t), 0);
		assert_int_equal(t.code_firstlineno, l->code_firstlineno);
		assert_int_equal(t.code_filename, l->code_filename);
		assert_int_equal(t.code_name, l->code_name);
		assert_int_equal(t.code_qualname, l->code_qualname);
		assert_int_equal(t.code_linetable, l->code_linetable);
		assert_int_equal(t.code_code, l->code_code);
		assert_int_equal(t.unicode_length, l->unicode_length);
		assert_int_equal(t.unicode_state, l->unicode_state);
		assert_int_equal(t.unicode_ascii_data, l->unicode_ascii_data);
		assert_int_equal(t.unicode_compact_data, l->unicode_compact_data);
		assert_int_equal(t.bytes_size, l->bytes_size);
		assert_int_equal(t.bytes_data, l->bytes_data);
	}
}

#define MAX_CODES 8

struct child_code {
	uint64_t addr;
	int32_t firstlineno;
	uint32_t unit;
	int32_t line;
	char name[4096], filename[1024];
};

struct child {
	pid_t pid;
	uint32_t hexversion;
	uint64_t code_type, str_obj, int_obj;
	unsigned nr;
	struct child_code codes[MAX_CODES];
};

static void unhex(const char *hex, char *out, size_t cap)
{
	size_t i, n = strlen(hex) / 2;

	assert_true(n < cap);
	for (i = 0; i < n; i++)
		assert_int_equal(sscanf(hex + 2 * i, "%2hhx", (unsigned char *)&out[i]), 1);
	out[n] = '\0';
}

/* Start python on the child script; returns once it printed "ready" and stopped. */
static void child_start(const char *python, struct child *ch)
{
	static char line[16384];
	int fds[2], status;
	FILE *f;

	memset(ch, 0, sizeof(*ch));
	assert_int_equal(pipe(fds), 0);
	ch->pid = fork();
	assert_true(ch->pid >= 0);
	if (!ch->pid) {
		/* Gone with the test, even when an assertion ends it early. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execl(python, python, FIXTURE_SRC "/pycode_child.py", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, b, c, d;
		char name[sizeof(line)], file[sizeof(line)];
		int first, unit, ln;

		if (sscanf(line, "version %llu %llu %llu %llu", &a, &b, &c, &d) == 4) {
			ch->hexversion = (uint32_t)a;
			ch->code_type = b;
			ch->str_obj = c;
			ch->int_obj = d;
		} else if (sscanf(line, "code %llu %d %d %d %s %s", &a, &first, &unit, &ln, name,
				  file) == 6) {
			struct child_code *cc = &ch->codes[ch->nr++];

			assert_true(ch->nr <= MAX_CODES);
			cc->addr = a;
			cc->firstlineno = first;
			cc->unit = (uint32_t)unit;
			cc->line = ln;
			unhex(name, cc->name, sizeof(cc->name));
			unhex(file, cc->filename, sizeof(cc->filename));
		} else if (!strncmp(line, "ready", 5)) {
			break;
		}
	}
	fclose(f);
	assert_int_equal(waitpid(ch->pid, &status, WUNTRACED), ch->pid);
	assert_true(WIFSTOPPED(status));
	assert_true(ch->nr >= 8);
}

static void child_stop(struct child *ch)
{
	kill(ch->pid, SIGKILL);
	waitpid(ch->pid, NULL, 0);
}

/* The identity the walker computes: read from the name object as bpf/pyident.bpf.h says. */
static uint32_t walker_identity(const struct child *ch, const struct py_layout *l,
				const struct child_code *cc)
{
	uint64_t name, len;
	uint8_t bytes[IGNIS_PY_NAME_BYTES];
	uint16_t off = l->code_qualname != NONE ? l->code_qualname : l->code_name;
	uint32_t state;
	bool ascii;

	assert_int_equal(pymem_read_u64(ch->pid, cc->addr + off, &name), 0);
	assert_int_equal(pymem_read_u64(ch->pid, name + l->unicode_length, &len), 0);
	assert_int_equal(pymem_read(ch->pid, name + l->unicode_state, &state, sizeof(state)), 0);
	ascii = PY_UNICODE_ASCII(state) && PY_UNICODE_COMPACT(state);
	assert_int_equal(pymem_read(ch->pid, name + l->unicode_ascii_data, bytes,
				    len < sizeof(bytes) ? len : sizeof(bytes)),
			 0);
	return ignis_py_identity(bytes, len, ascii, cc->firstlineno);
}

#define IMG PID_T_IMG(ch)
#define PID_T_IMG(ch) (uint32_t)(ch).pid, 1000, 1

static void check_interpreter(const char *version, const char *python)
{
	struct pycode_cache *c = pycode_cache__new(1 << 20);
	struct pycode_stats st;
	struct pycode_frame f;
	struct py_layout l;
	struct child ch;
	unsigned i, minor;
	uint32_t id;

	assert_non_null(c);
	child_start(python, &ch);
	minor = (ch.hexversion >> 16) & 0xff;
	layout_of(minor, &l);
	for (i = 0; i < ch.nr; i++) {
		const struct child_code *cc = &ch.codes[i];

		id = walker_identity(&ch, &l, cc);
		/* An ASCII name hashes its own characters: the same from the expected text. */
		if (i < 3)
			assert_int_equal(id, ignis_py_identity((const __u8 *)cc->name,
							       strlen(cc->name), 1, cc->firstlineno));
		assert_int_equal(pycode_cache__add(c, ch.pid, IMG, &l, ch.hexversion, ch.code_type,
						   i + 1, cc->addr, id, NULL),
				 0);
		assert_true(pycode_cache__frame(c, IMG, i + 1, cc->unit, &f));
		if (strlen(cc->name) >= PYCODE_STR_MAX) {
			assert_int_equal(strlen(f.name), PYCODE_STR_MAX - 1);
			assert_memory_equal(f.name, cc->name, PYCODE_STR_MAX - 1);
		} else {
			assert_string_equal(f.name, cc->name);
		}
		assert_string_equal(f.filename, cc->filename);
		assert_int_equal(f.firstlineno, cc->firstlineno);
		assert_int_equal(f.line, cc->line);
		assert_true(pycode_cache__frame(c, IMG, i + 1, IGNIS_PY_LASTI_NONE, &f));
		assert_int_equal(f.line, 0);
	}
	assert_string_equal(ch.codes[3].filename, "/tmp/\xe3\x83\x95\xe3\x82\xa1\xe3\x82\xa4\xe3"
						  "\x83\xab.py");
	pycode_cache__stats(c, &st);
	assert_int_equal(st.read, ch.nr);
	assert_int_equal(st.held, ch.nr);

	/* A second serial for the same code object: no read. */
	id = walker_identity(&ch, &l, &ch.codes[0]);
	assert_int_equal(pycode_cache__add(c, ch.pid, IMG, &l, ch.hexversion, ch.code_type, 100,
					   ch.codes[0].addr, id, NULL),
			 0);
	pycode_cache__stats(c, &st);
	assert_int_equal(st.read, ch.nr);
	assert_int_equal(st.shared, 1);
	assert_true(pycode_cache__frame(c, IMG, 100, ch.codes[0].unit, &f));
	assert_string_equal(f.name, ch.codes[0].name);

	/* What the walker hashed is not what is there now: freed and reused. */
	assert_int_equal(pycode_cache__add(c, ch.pid, IMG, &l, ch.hexversion, ch.code_type, 101,
					   ch.codes[1].addr, id ^ 0x10, NULL),
			 -ESTALE);
	assert_false(pycode_cache__frame(c, IMG, 101, 0, &f));
	/* ... unless the walker's copies of the names came with the announcement: they name
	 * it, without lines. */
	{
		struct pycode_seen seen = { .name = "gen_7", .filename = "<churn 3>",
					    .firstlineno = 4 };

		assert_int_equal(pycode_cache__add(c, ch.pid, IMG, &l, ch.hexversion,
						   ch.code_type, 105, ch.codes[1].addr, id ^ 0x10,
						   &seen),
				 0);
		assert_true(pycode_cache__frame(c, IMG, 105, ch.codes[1].unit, &f));
		assert_string_equal(f.name, "gen_7");
		assert_string_equal(f.filename, "<churn 3>");
		assert_int_equal(f.firstlineno, 4);
		assert_int_equal(f.line, 0);
		pycode_cache__stats(c, &st);
		assert_int_equal(st.from_walker, 1);
		assert_int_equal(st.stale, 2);
	}
	/* No code object there; nothing mapped there; a serial never announced. */
	assert_int_equal(pycode_cache__add(c, ch.pid, IMG, &l, ch.hexversion, ch.code_type, 102,
					   ch.str_obj, id, NULL),
			 -EINVAL);
	assert_int_equal(pycode_cache__add(c, ch.pid, IMG, &l, ch.hexversion, ch.code_type, 103,
					   ch.int_obj, id, NULL),
			 -EINVAL);
	assert_int_equal(pycode_cache__add(c, ch.pid, IMG, &l, ch.hexversion, ch.code_type, 104,
					   4096, id, NULL),
			 -EFAULT);
	assert_false(pycode_cache__frame(c, IMG, 106, 0, &f));
	/* Another image of the same tgid (an exec) has none of them. */
	assert_false(pycode_cache__frame(c, (uint32_t)ch.pid, 1000, 2, 1, 0, &f));
	pycode_cache__stats(c, &st);
	assert_int_equal(st.stale, 2); /* one of them named from the walker's copies */
	assert_int_equal(st.malformed, 2);
	assert_int_equal(st.faults, 1);

	pycode_cache__forget(c, IMG);
	assert_false(pycode_cache__frame(c, IMG, 1, 0, &f));
	pycode_cache__stats(c, &st);
	assert_int_equal(st.held, 0);
	assert_int_equal(st.serials, 0);
	assert_int_equal(st.bytes, 0);
	pycode_cache__free(c);

	/* A budget that holds the first code object only: what it took in a cache of its own. */
	c = pycode_cache__new(1 << 20);
	assert_non_null(c);
	assert_int_equal(pycode_cache__add(c, ch.pid, IMG, &l, ch.hexversion, ch.code_type, 1,
					   ch.codes[0].addr, walker_identity(&ch, &l, &ch.codes[0]), NULL),
			 0);
	pycode_cache__stats(c, &st);
	pycode_cache__free(c);
	c = pycode_cache__new(st.bytes + 8);
	assert_non_null(c);
	for (i = 0; i < 3; i++)
		assert_int_equal(pycode_cache__add(c, ch.pid, IMG, &l, ch.hexversion, ch.code_type,
						   i + 1, ch.codes[i].addr,
						   walker_identity(&ch, &l, &ch.codes[i]), NULL),
				 i ? -ENOSPC : 0);
	pycode_cache__stats(c, &st);
	assert_int_equal(st.read, 1);
	assert_int_equal(st.over_budget, 2);
	pycode_cache__free(c);

	child_stop(&ch);
	print_message("%s (%s, 0x%08x): %u code objects read and checked\n", version, python,
		      ch.hexversion, ch.nr);
}

static void test_interpreters(void **state)
{
	char version[64], python[1024];
	unsigned n = 0;
	FILE *f = fopen(FIXTURE("pythons.txt"), "r");

	(void)state;
	assert_non_null(f);
	while (fscanf(f, "%63s %1023s", version, python) == 2) {
		check_interpreter(version, python);
		n++;
	}
	fclose(f);
	assert_int_equal(n, 7);
}

static void test_bad_arguments(void **state)
{
	struct pycode_cache *c = pycode_cache__new(1 << 20);
	struct pycode_frame f;
	struct py_layout l;

	(void)state;
	layout_of(12, &l);
	assert_int_equal(pycode_cache__add(c, getpid(), 1, 2, 3, &l, 0x030c01f0, 1, 0, 0x1000, 1, NULL),
			 -EINVAL);
	assert_int_equal(pycode_cache__add(c, getpid(), 1, 2, 3, &l, 0x030c01f0, 1, 1, 0, 1, NULL),
			 -EINVAL);
	assert_int_equal(pycode_cache__add(c, getpid(), 1, 2, 3, &l, 0x030701f0, 1, 1, 0x1000, 1, NULL),
			 -ENOTSUP);
	l.code_linetable = PY_FIELD_NONE;
	assert_int_equal(pycode_cache__add(c, getpid(), 1, 2, 3, &l, 0x030c01f0, 1, 1, 0x1000, 1, NULL),
			 -EINVAL);
	assert_false(pycode_cache__frame(c, 1, 2, 3, 1, 0, &f));
	pycode_cache__forget(c, 1, 2, 3);
	pycode_cache__free(c);
	pycode_cache__free(NULL);
}

UNIT_MAIN("pycode", cmocka_unit_test(test_bad_arguments), cmocka_unit_test(test_interpreters))
