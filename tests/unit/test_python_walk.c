// SPDX-License-Identifier: Apache-2.0
/*
 * The Python walker's logic (bpf/python.bpf.h), compiled natively and run over a real
 * interpreter's memory, per version: a child CPython runs hot() two calls below its module
 * and stops itself there (SIGSTOP); the agent's attach (agent/python/pyattach.c) finds its
 * interpreter, and py_step() — the code the kernel runs — walks the stopped main thread's
 * frames with the child's memory as the user memory (process_vm_readv) and its real fs base
 * (ptrace). Each test checks the frames leaf to root, hot -> work -> main -> <module>, their
 * identities against bpf/pyident.bpf.h over the names and first lines the script has, the
 * eval-frame boundaries of the version (one frame per eval call on 3.8-3.10, one call for the
 * whole chain on 3.11+), and that a lying layout stops the walk with its counter. No root: a
 * parent may read and trace its own child.
 */
#include <linux/types.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"

#include "../../bpf/profiler.h"
#include "../../bpf/python.bpf.h"
#include "../../agent/collect/proctab.h"
#include "../../agent/collect/samples.h"
#include "../../agent/python/pyattach.h"
#include "../../agent/python/pymem.h"
#include "../../agent/python/python.h"
#include "../../symbolizer/symbolizer.h"

/* ---- The world the walker sees ----------------------------------------------------------- */

static struct {
	pid_t pid;
	__u64 fsbase;
	__u64 stats[IGNIS_NR_GENS * STAT_NR];
	struct ignis_py_code_key codes[64];
	char names[64][IGNIS_PY_EVENT_NAME + 1]; /* as the announcement copies them */
	char files[64][IGNIS_PY_EVENT_FILE + 1];
	__s32 firstlinenos[64];
	unsigned int nr_codes;
} w;

static inline long read_user(void *dst, __u32 size, __u64 addr)
{
	if (pymem_read(w.pid, addr, dst, size)) {
		memset(dst, 0, size);
		return -EFAULT;
	}
	return 0;
}

static inline void stat_inc(__u32 g, enum ignis_stat stat)
{
	w.stats[g * STAT_NR + stat]++;
}

static inline __u64 py_fsbase(void)
{
	return w.fsbase;
}

/* Serials 1, 2, ... in the order code objects are met; the same key, the same serial. The
 * names are copied as maps.bpf.h's announcement copies them. */
static inline __u64 py_code_serial(const struct ignis_py_code_key *key, struct uw_python *py,
				   __s32 firstlineno)
{
	unsigned int i, n;

	for (i = 0; i < w.nr_codes; i++)
		if (!memcmp(&w.codes[i], key, sizeof(*key)))
			return i + 1;
	if (w.nr_codes == ARRAY_SIZE(w.codes))
		return 0;
	i = w.nr_codes++;
	w.codes[i] = *key;
	w.firstlinenos[i] = firstlineno;
	n = py_ascii(py, w.names[i], IGNIS_PY_EVENT_NAME,
		     py_u64(py->co, IGNIS_PY_CODE_READ, py->l.code_name));
	w.names[i][n] = '\0';
	n = py_ascii(py, w.files[i], IGNIS_PY_EVENT_FILE,
		     py_u64(py->co, IGNIS_PY_CODE_READ, py->l.code_filename));
	w.files[i][n] = '\0';
	return w.nr_codes;
}

/* ---- The child ---------------------------------------------------------------------------- */

/* Line numbers matter: the identities include each function's first line. */
static const char script[] = "import os, signal\n"		  /* 1 */
			     "def hot():\n"			  /* 2 */
			     "    os.kill(os.getpid(), signal.SIGSTOP)\n" /* 3 */
			     "def work():\n"			  /* 4 */
			     "    hot()\n"				  /* 5 */
			     "def main():\n"			  /* 6 */
			     "    work()\n"				  /* 7 */
			     "main()\n";			  /* 8 */

static const struct {
	const char *name;
	int firstlineno;
} expected[] = { { "hot", 2 }, { "work", 4 }, { "main", 6 }, { "<module>", 1 } };

struct child {
	pid_t pid;
	struct symbolizer *sym;
	struct proctab *pt;
	struct proc_image *img;
	struct py_interp interp;
};

static uint64_t start_ns(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ticks = 0;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	p = strrchr(buf, ')');
	assert_non_null(p);
	/* Field 22, starttime; the ')' ends field 2. */
	for (i = 2; i < 22 && p; i++)
		p = strchr(p + 1, ' ');
	assert_non_null(p);
	ticks = strtoull(p + 1, NULL, 10);
	return ticks * (1000000000ULL / (uint64_t)sysconf(_SC_CLK_TCK));
}

/* Start python (a path) on the script and wait until it stopped itself in hot(). */
static bool start_child(struct child *c, const char *python)
{
	struct symbolizer_opts so = { .sz = sizeof(so), .cache_max_bytes = 64 << 20 };
	struct proctab_opts po = { .proc_root = "/proc", .min_recapture_ns = 0 };
	struct proc_event ev = { .type = PROC_EV_NEW };
	struct proc_id id;
	const char *detail = NULL;
	int status;

	memset(c, 0, sizeof(*c));
	if (access(python, X_OK))
		return false;
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (!c->pid) {
		execl(python, python, "-c", script, (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(c->pid, &status, WUNTRACED), c->pid);
	assert_true(WIFSTOPPED(status));

	c->sym = symbolizer__new(&so);
	assert_non_null(c->sym);
	po.symbolizer = c->sym;
	c->pt = proctab__new(&po);
	assert_non_null(c->pt);
	ev.tgid = (uint32_t)c->pid;
	ev.start_time = start_ns(c->pid);
	assert_int_equal(proctab__handle_event(c->pt, &ev, 0), 0);
	id = (struct proc_id){ .tgid = ev.tgid, .start_time = ev.start_time };
	c->img = proctab__find(c->pt, &id);
	assert_non_null(c->img);
	assert_int_equal(py_attach(c->pid, c->img, c->sym, &c->interp, &detail), PY_ATTACH_OK);
	return true;
}

static void stop_child(struct child *c)
{
	int status;

	kill(c->pid, SIGKILL);
	waitpid(c->pid, &status, 0);
	proctab__free(c->pt);
	symbolizer__free(c->sym);
}

/* The child's fs base, from the kernel: what the BPF side reads in task->thread.fsbase. */
static __u64 child_fsbase(pid_t pid)
{
	struct user_regs_struct regs;
	int status;

	assert_int_equal(ptrace(PTRACE_SEIZE, pid, NULL, NULL), 0);
	assert_int_equal(ptrace(PTRACE_INTERRUPT, pid, NULL, NULL), 0);
	assert_int_equal(waitpid(pid, &status, __WALL), pid);
	assert_int_equal(ptrace(PTRACE_GETREGS, pid, NULL, &regs), 0);
	assert_int_equal(ptrace(PTRACE_DETACH, pid, NULL, NULL), 0);
	return regs.fs_base;
}

/* The walker's state for the attached interpreter, as the sampler's start_python() fills it. */
static void walker_for(struct uw_python *py, const struct child *c)
{
	struct ignis_py_proc pp;

	python_bpf_proc(&c->img->id, &c->interp, &pp);
	memset(py, 0, sizeof(*py));
	py->on = 1;
	memcpy(py->eval_start, pp.eval_start, sizeof(py->eval_start));
	memcpy(py->eval_end, pp.eval_end, sizeof(py->eval_end));
	py->tss_data_off = pp.tss_data_off;
	py->tss_key = pp.tss_key;
	py->l = pp.layout;
}

struct walk {
	struct ignis_stack st;
	unsigned int eval_frames; /* eval-loop frames the walk needed */
	int last;		  /* the last py_step() result */
};

/* Walk as the unwinder does, pretending every native caller is an eval frame until the
 * Python chain ends: py_step() until this eval frame's frames are in, then the next one. */
static void walk(struct uw_python *py, const struct child *c, struct walk *out)
{
	struct ignis_sample_key key = { .tgid = c->img->id.tgid,
					.start_time = c->img->id.start_time,
					.exec_id = c->img->id.exec_id };
	int guard, r = PY_STEP_DONE;

	memset(out, 0, sizeof(*out));
	py->started = 0;
	for (guard = 0; guard < 64; guard++) {
		py->emitted = 0;
		out->eval_frames++;
		do
			r = py_step(py, &out->st, 0, &key);
		while (r == PY_STEP_FRAME);
		if (r != PY_STEP_DONE || !py->frame)
			break;
	}
	out->last = r;
}

static void check_version(const char *python, unsigned int minor)
{
	struct uw_python py;
	struct child c;
	struct walk wk;
	unsigned int i;

	if (!start_child(&c, python))
		fail_msg("%s is not installed", python);
	memset(&w, 0, sizeof(w));
	w.pid = c.pid;
	w.fsbase = child_fsbase(c.pid);
	assert_int_equal(c.interp.version_hex >> 16, 0x0300 | minor);
	walker_for(&py, &c);

	walk(&py, &c, &wk);
	assert_int_equal(wk.last, PY_STEP_DONE);
	assert_int_equal(wk.st.len, ARRAY_SIZE(expected));
	/* 3.8-3.10: one eval call per Python call; 3.11+: the four run in one (the <module>
	 * call's), 3.12+ ending at the eval call's own marker frame. */
	assert_int_equal(wk.eval_frames, minor <= 10 ? ARRAY_SIZE(expected) : 1);
	for (i = 0; i < wk.st.len; i++) {
		__u64 v = wk.st.ips[i], lasti = (v >> IGNIS_PY_LASTI_SHIFT) & IGNIS_PY_LASTI_MASK;
		__u64 serial = v & IGNIS_PY_SERIAL_MASK;
		const char *name = expected[i].name;

		assert_true(v & IGNIS_USER_IP_PY);
		assert_int_equal(serial, i + 1);
		assert_int_equal(w.codes[i].identity,
				 ignis_py_identity((const __u8 *)name, strlen(name), 1,
						   expected[i].firstlineno));
		assert_int_equal(w.codes[i].tgid, (uint32_t)c.pid);
		/* The announcement's copies: the name, the file ("<string>" for -c), the line. */
		assert_string_equal(w.names[i], name);
		assert_string_equal(w.files[i], "<string>");
		assert_int_equal(w.firstlinenos[i], expected[i].firstlineno);
		/* Every frame is inside its code: a call's instruction, never the first. */
		assert_true(lasti != IGNIS_PY_LASTI_NONE && lasti > 0 && lasti < 4096);
	}
	assert_int_equal(w.stats[STAT_PY_FRAMES], ARRAY_SIZE(expected));
	assert_int_equal(w.stats[STAT_PY_READ_FAULT] + w.stats[STAT_PY_BAD_CODE], 0);

	/* A second walk finds the same code objects: the same serials, no new ones. */
	walk(&py, &c, &wk);
	assert_int_equal(w.nr_codes, ARRAY_SIZE(expected));
	assert_int_equal(wk.st.ips[0] & IGNIS_PY_SERIAL_MASK, 1);

	/* A layout that points the code at another field: no code object there, the walk
	 * stops at the first frame, counted. */
	walker_for(&py, &c);
	py.l.frame_code = py.l.frame_previous;
	walk(&py, &c, &wk);
	assert_int_equal(wk.last, PY_STEP_FAILED);
	assert_int_equal(wk.st.len, 0);
	assert_true(w.stats[STAT_PY_BAD_CODE] + w.stats[STAT_PY_READ_FAULT] >= 1);

	/* A thread without a thread state (the data at the key is 0): no Python frames, no
	 * failure. The fs base of another "thread" whose slot is zero: 16 bytes past the end of
	 * the first block's key slots is still the pthread struct. */
	walker_for(&py, &c);
	py.tss_key = 31;
	walk(&py, &c, &wk);
	assert_int_equal(wk.st.len, 0);
	stop_child(&c);
}

/* pyenv's interpreter of version v (e.g. "3.12.1"), binary pythonM.N. */
static const char *pyenv(const char *v, const char *bin)
{
	static char path[512];
	const char *root = getenv("PYENV_ROOT"), *home = getenv("HOME");

	if (root)
		snprintf(path, sizeof(path), "%s/versions/%s/bin/%s", root, v, bin);
	else
		snprintf(path, sizeof(path), "%s/.pyenv/versions/%s/bin/%s", home ? home : "/root",
			 v, bin);
	return path;
}

static void test_python_3_8(void **state)
{
	(void)state;
	check_version(pyenv("3.8.18", "python3.8"), 8);
}

static void test_python_3_9(void **state)
{
	(void)state;
	check_version(pyenv("3.9.18", "python3.9"), 9);
}

static void test_python_3_10(void **state)
{
	(void)state;
	check_version(pyenv("3.10.13", "python3.10"), 10);
}

static void test_python_3_11(void **state)
{
	(void)state;
	check_version(pyenv("3.11.7", "python3.11"), 11);
}

static void test_python_3_11_debian(void **state)
{
	(void)state;
	check_version("/usr/bin/python3.11", 11);
}

static void test_python_3_12(void **state)
{
	(void)state;
	check_version(pyenv("3.12.1", "python3.12"), 12);
}

static void test_python_3_13(void **state)
{
	(void)state;
	check_version(pyenv("3.13.0", "python3.13"), 13);
}

UNIT_MAIN("python_walk", cmocka_unit_test(test_python_3_8), cmocka_unit_test(test_python_3_9),
	  cmocka_unit_test(test_python_3_10), cmocka_unit_test(test_python_3_11),
	  cmocka_unit_test(test_python_3_11_debian), cmocka_unit_test(test_python_3_12),
	  cmocka_unit_test(test_python_3_13))
