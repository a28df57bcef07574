// SPDX-License-Identifier: Apache-2.0
/*
 * The Python attach (agent/python/pyattach.c) against real interpreters: every CPython that
 * pyenv has here (3.8 to 3.13) and Debian's /usr/bin/python3.11 (static libpython, non-PIE,
 * stripped) run a script that stops itself (SIGSTOP) two calls below <module>, with and
 * without a second thread; the test captures the child's executable mappings as the process
 * table does and attaches. The child reports its sys.hexversion and its threads' idents
 * (pthread_self(), i.e. their struct pthread, glibc x86_64) on a pipe, which the attach's
 * findings are checked against. Our own children can be read without privileges.
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"

#include "../../agent/collect/proctab.h"
#include "../../agent/python/pyattach.h"
#include "../../agent/python/pymem.h"
#include "../../symbolizer/symbolizer.h"

static const char script[] = "import os, signal, sys, threading\n"
			     "ids = [threading.get_ident()]\n"
			     "if len(sys.argv) > 1:\n"
			     "    ev = threading.Event()\n"
			     "    started = threading.Event()\n"
			     "    def side():\n"
			     "        ids.append(threading.get_ident())\n"
			     "        started.set()\n"
			     "        ev.wait()\n"
			     "    threading.Thread(target=side, daemon=True).start()\n"
			     "    started.wait()\n"
			     "def inner():\n"
			     "    os.kill(os.getpid(), signal.SIGSTOP)\n"
			     "def outer():\n"
			     "    inner()\n"
			     "print(sys.hexversion, *ids, flush=True)\n"
			     "outer()\n";

/* The child of the running test, stopped: killed by the teardown whatever the outcome. */
static pid_t current_child;

static int kill_child(void **state)
{
	int status;

	(void)state;
	if (current_child > 0) {
		kill(current_child, SIGKILL);
		waitpid(current_child, &status, 0);
	}
	current_child = 0;
	return 0;
}

struct child {
	pid_t pid;
	uint32_t hexversion;
	uint64_t ids[2];
	int nr_ids;
};

/* Start python with the script (threaded: with a second thread) and wait until it stops. */
static void start_child(const char *python, bool threaded, struct child *c)
{
	char line[256], *p, *end;
	int fds[2], status, n;
	FILE *f;

	memset(c, 0, sizeof(*c));
	assert_int_equal(pipe(fds), 0);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (!c->pid) {
		dup2(fds[1], 1);
		/* Nothing of ours stays open in it (the test's output pipe). */
		dup2(open("/dev/null", O_WRONLY), 2);
		close(fds[0]);
		close(fds[1]);
		execl(python, python, "-S", "-E", "-c", script, threaded ? "thread" : NULL, NULL);
		_exit(127);
	}
	current_child = c->pid;
	close(fds[1]);
	f = fdopen(fds[0], "r");
	assert_non_null(f);
	if (!fgets(line, sizeof(line), f))
		fail_msg("%s printed nothing", python);
	fclose(f);
	c->hexversion = (uint32_t)strtoul(line, &p, 10);
	for (n = 0; n < 2; n++) {
		c->ids[n] = strtoull(p, &end, 10);
		if (end == p)
			break;
		p = end;
	}
	c->nr_ids = n;
	assert_int_equal(waitpid(c->pid, &status, WUNTRACED), c->pid);
	assert_true(WIFSTOPPED(status));
}

static void stop_child(void)
{
	kill_child(NULL);
}

/* The process's executable mappings with their objects, as the process table keeps them. */
static void capture(pid_t pid, struct symbolizer *s, struct proc_image *img)
{
	char path[64], line[4096];
	FILE *f;
	ssize_t n;

	memset(img, 0, sizeof(*img));
	img->id.tgid = (uint32_t)pid;
	img->exited_window = UINT64_MAX;
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, img->exe, sizeof(img->exe) - 1);
	assert_true(n > 0);
	img->exe[n] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		struct procmaps_entry e;
		struct proc_mapping *m;
		int fd;

		assert_int_equal(procmaps_parse_line(line, &e), 0);
		if (!e.exec || e.path[0] != '/')
			continue;
		if (img->nr_maps == img->cap_maps) {
			img->cap_maps = img->cap_maps ? 2 * img->cap_maps : 16;
			img->maps = reallocarray(img->maps, img->cap_maps, sizeof(*img->maps));
			assert_non_null(img->maps);
		}
		m = &img->maps[img->nr_maps++];
		memset(m, 0, sizeof(*m));
		m->start = e.start;
		m->end = e.end;
		m->offset = e.offset;
		m->inode = e.inode;
		m->kind = MAPPING_FILE;
		m->stale_window = UINT64_MAX;
		m->name = strdup(e.path);
		fd = open(e.path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			m->object = symbolizer__open_fd(s, fd, e.path, 0, 0);
			close(fd);
		}
	}
	fclose(f);
}

static void release(struct proc_image *img)
{
	size_t i;

	for (i = 0; i < img->nr_maps; i++) {
		sym_object__put(img->maps[i].object);
		free(img->maps[i].name);
	}
	free(img->maps);
}

/* The mapping of img whose object is the interpreter's (named py->object). */
static const struct proc_mapping *interp_mapping(const struct proc_image *img,
						 const struct py_interp *py)
{
	size_t i;

	for (i = 0; i < img->nr_maps; i++)
		if (img->maps[i].name == py->object)
			return &img->maps[i];
	fail_msg("the interpreter's object %s is no mapping's name", py->object);
	return NULL;
}

static void check_eval_range(struct symbolizer *s, const struct proc_image *img,
			     const struct py_interp *py)
{
	const struct proc_mapping *m = interp_mapping(img, py);
	uint64_t vaddr, size, map_vaddr, addr;
	size_t i;

	assert_int_equal(
		sym_object__symbol(s, m->object, "_PyEval_EvalFrameDefault", &vaddr, &size), 0);
	assert_int_equal(sym_object__mapping_vaddr(m->object, m->offset, &map_vaddr), 0);
	addr = vaddr - map_vaddr + m->start;
	assert_true(py->eval_start[0] == addr && py->eval_end[0] == addr + size);
	/* In an executable mapping of that object. */
	for (i = 0; i < img->nr_maps; i++)
		if (img->maps[i].object == m->object && img->maps[i].start <= addr &&
		    addr + size <= img->maps[i].end)
			break;
	assert_true(i < img->nr_maps);
	/* The .cold part, where a symbol table names it, lies beside it. */
	if (!sym_object__symbol(s, m->object, "_PyEval_EvalFrameDefault.cold", &vaddr, &size) &&
	    size) {
		addr = vaddr - map_vaddr + m->start;
		assert_int_equal(py->eval_start[1], addr);
		assert_int_equal(py->eval_end[1], addr + size);
	}
}

/* Each thread's TSS slot (its struct pthread is its ident) holds a thread state whose
 * thread_id is that ident: the offset found holds for every thread. */
static void check_tss(pid_t pid, const struct child *c, const struct py_interp *py)
{
	uint64_t tstate, thread_id, seen[2] = { 0, 0 };
	int i;

	assert_true(py->tss_key < 32);
	assert_true(py->tss_data_off > 0 && py->tss_data_off < 4096);
	for (i = 0; i < c->nr_ids; i++) {
		assert_int_equal(
			pymem_read_u64(pid,
				       c->ids[i] + (uint64_t)py->tss_data_off + 16 * py->tss_key,
				       &tstate),
			0);
		assert_true(tstate != 0);
		assert_int_equal(
			pymem_read_u64(pid, tstate + py->layout.tstate_thread_id, &thread_id), 0);
		assert_int_equal(thread_id, c->ids[i]);
		seen[i] = tstate;
	}
	if (c->nr_ids == 2)
		assert_true(seen[0] != seen[1]);
}

static void attach_one(const char *python, const char *label)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct py_interp py, again;
	struct py_layout bad;
	struct proc_image img;
	struct child c;
	const char *detail = NULL;
	enum py_attach_result r;
	int threaded;

	assert_non_null(s);
	for (threaded = 0; threaded < 2; threaded++) {
		start_child(python, threaded, &c);
		assert_int_equal(c.nr_ids, threaded ? 2 : 1);
		capture(c.pid, s, &img);
		r = py_attach(c.pid, &img, s, &py, &detail);
		if (r != PY_ATTACH_OK)
			fail_msg("%s%s: %s (%s)", label, threaded ? " (threads)" : "",
				 py_attach_result_name(r), detail);
		/* 3.11+ know their full version; before, the minor one from the name. */
		if (c.hexversion >= 0x030b0000)
			assert_int_equal(py.version_hex, c.hexversion);
		else
			assert_int_equal(py.version_hex, c.hexversion & 0xffff0000);
		assert_int_equal(py.layout.version, c.hexversion >> 16);
		assert_int_equal(py.threads, threaded ? 2 : 1);
		assert_true(py.frames_checked >= 3);
		assert_true(py.runtime && py.code_type);
		print_message("%s%s: %#x key %u tss_data_off %d threads %u frames %u eval "
			      "%#llx-%#llx cold %#llx-%#llx\n",
			      label, threaded ? " (threads)" : "", py.version_hex, py.tss_key,
			      py.tss_data_off, py.threads, py.frames_checked,
			      (unsigned long long)py.eval_start[0],
			      (unsigned long long)py.eval_end[0],
			      (unsigned long long)py.eval_start[1],
			      (unsigned long long)py.eval_end[1]);
		check_eval_range(s, &img, &py);
		check_tss(c.pid, &c, &py);

		/* A layout with the code object in the wrong place does not check out. */
		bad = py.layout;
		bad.frame_code += 8;
		r = py_attach_layout(c.pid, &img, s, &bad, &again, &detail);
		if (r != PY_ATTACH_LAYOUT_MISMATCH)
			fail_msg("%s: a wrong frame_code gave %s", label, py_attach_result_name(r));
		/* Nor one whose names are elsewhere. */
		bad = py.layout;
		bad.code_name += 8;
		if (bad.code_qualname != PY_FIELD_NONE)
			bad.code_qualname += 8;
		r = py_attach_layout(c.pid, &img, s, &bad, &again, &detail);
		if (r != PY_ATTACH_LAYOUT_MISMATCH)
			fail_msg("%s: a wrong code_name gave %s", label, py_attach_result_name(r));
		/* Another key's place: 3.12+ keep a second initialized key (trashTSSkey) after
		 * autoTSSkey. What the BPF side reads, fs base + tss_data_off + 16 * key, is
		 * found from the thread states themselves, so either it is refused or it is
		 * the same address. */
		bad = py.layout;
		bad.runtime_tss_key += 8;
		r = py_attach_layout(c.pid, &img, s, &bad, &again, &detail);
		if (r == PY_ATTACH_OK)
			assert_int_equal(again.tss_data_off + 16 * (int64_t)again.tss_key,
					 py.tss_data_off + 16 * (int64_t)py.tss_key);

		release(&img);
		stop_child();
	}
	symbolizer__free(s);
}

static void pyenv_python(const char *version, char *out, size_t size)
{
	char cmd[128], prefix[256] = "";
	FILE *p;

	snprintf(cmd, sizeof(cmd), "pyenv prefix %s 2>/dev/null", version);
	p = popen(cmd, "r");
	assert_non_null(p);
	if (!fgets(prefix, sizeof(prefix), p))
		prefix[0] = '\0';
	pclose(p);
	prefix[strcspn(prefix, "\n")] = '\0';
	if (!prefix[0])
		fail_msg("pyenv has no CPython %s (pyenv install %s)", version, version);
	snprintf(out, size, "%s/bin/python%.*s", prefix, (int)(strrchr(version, '.') - version),
		 version);
}

#define PYENV_TEST(fn, version)                                \
	static void fn(void **state)                           \
	{                                                      \
		char python[512];                              \
                                                               \
		(void)state;                                   \
		pyenv_python(version, python, sizeof(python)); \
		attach_one(python, version);                   \
	}

PYENV_TEST(test_3_8, "3.8.18")
PYENV_TEST(test_3_9, "3.9.18")
PYENV_TEST(test_3_10, "3.10.13")
PYENV_TEST(test_3_11, "3.11.7")
PYENV_TEST(test_3_12, "3.12.1")
PYENV_TEST(test_3_13, "3.13.0")

/* Debian's: libpython linked into a non-PIE executable, symbols in .dynsym alone. */
static void test_debian_3_11(void **state)
{
	(void)state;
	attach_one("/usr/bin/python3.11", "/usr/bin/python3.11");
}

static void test_not_python(void **state)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct proc_image img;
	struct py_interp py;
	const char *detail;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		dup2(open("/dev/null", O_WRONLY), 2);
		execl("/bin/sleep", "sleep", "30", NULL);
		_exit(127);
	}
	current_child = pid;
	/* Until the exec is done: the image is sleep's. */
	for (;;) {
		char exe[256] = "", path[64];

		snprintf(path, sizeof(path), "/proc/%d/exe", pid);
		if (readlink(path, exe, sizeof(exe) - 1) > 0 && strstr(exe, "sleep"))
			break;
		usleep(1000);
	}
	usleep(20000);
	capture(pid, s, &img);
	assert_int_equal(py_attach(pid, &img, s, &py, &detail), PY_ATTACH_NOT_PYTHON);
	release(&img);
	stop_child();
	symbolizer__free(s);
}

/* Stopped at its exec (PTRACE_TRACEME), before ld.so or Py_Initialize ran: Debian's static
 * python3.11 has its interpreter mapped, but no TSS key and no thread state yet. */
static void test_not_ready(void **state)
{
	struct symbolizer *s = symbolizer__new(NULL);
	struct proc_image img;
	struct py_interp py;
	const char *detail;
	int status;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		dup2(open("/dev/null", O_WRONLY), 2);
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execl("/usr/bin/python3.11", "python3.11", "-c", "pass", NULL);
		_exit(127);
	}
	current_child = pid;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP);
	capture(pid, s, &img);
	assert_int_equal(py_attach(pid, &img, s, &py, &detail), PY_ATTACH_NOT_READY);
	release(&img);
	stop_child();
	symbolizer__free(s);
}

static void test_result_names(void **state)
{
	int r;

	(void)state;
	for (r = 0; r < PY_ATTACH_NR; r++)
		assert_non_null(py_attach_result_name((enum py_attach_result)r));
	assert_string_equal(py_attach_result_name(PY_ATTACH_OK), "ok");
	assert_string_equal(py_attach_result_name(PY_ATTACH_NR), "unknown");
}

UNIT_MAIN("pyattach", cmocka_unit_test_teardown(test_3_8, kill_child),
	  cmocka_unit_test_teardown(test_3_9, kill_child),
	  cmocka_unit_test_teardown(test_3_10, kill_child),
	  cmocka_unit_test_teardown(test_3_11, kill_child),
	  cmocka_unit_test_teardown(test_3_12, kill_child),
	  cmocka_unit_test_teardown(test_3_13, kill_child),
	  cmocka_unit_test_teardown(test_debian_3_11, kill_child),
	  cmocka_unit_test_teardown(test_not_python, kill_child),
	  cmocka_unit_test_teardown(test_not_ready, kill_child),
	  cmocka_unit_test(test_result_names))
