// SPDX-License-Identifier: Apache-2.0
/*
 * Attaching to a CPython process (pyattach.h): which object holds the interpreter, its
 * version and layout, the eval loop's ranges, the TSS key and where a thread finds its
 * value, and a check of the layout against the process's own thread states and frames.
 *
 * Everything read from the process is hostile: a pointer is only ever an address to try,
 * every list is walked a bounded number of steps, and a read that fails through a pointer
 * the process gave means the layout does not fit (or the process changed under us, which
 * the bounded retries of the frame walk absorb).
 */
#include <linux/types.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../bpf/profiler.h"
#include "collect/proctab.h"
#include "pyattach.h"
#include "pymem.h"
#include "../../symbolizer/symbolizer.h"

#define MAX_OBJECTS	 8    /* candidate objects looked at */
#define MAX_THREADS	 4096 /* thread states walked */
#define MAX_TSS_THREADS	 64   /* ... whose struct pthread is checked */
#define MAX_FRAMES	 64   /* main-thread frames checked */
#define FRAME_TRIES	 3    /* walks of a running thread's frames before a mismatch counts */
#define PTHREAD_SCAN	 4096 /* bytes of a struct pthread searched for the TSS slot */
#define PTHREAD_MIN	 1024 /* ... of which at least this many must be readable */
#define PTHREAD_KEYS_MAX 1024 /* glibc's PTHREAD_KEYS_MAX */
#define KEY_2NDLEVEL \
	32 /* glibc's PTHREAD_KEY_2NDLEVEL_SIZE: keys below it live in
			       * struct pthread's specific_1stblock */
#define MAX_CANDIDATES 8

static const char *const result_names[PY_ATTACH_NR] = {
	[PY_ATTACH_OK] = "ok",
	[PY_ATTACH_NOT_PYTHON] = "not_python",
	[PY_ATTACH_NOT_READY] = "not_ready",
	[PY_ATTACH_UNSUPPORTED] = "unsupported",
	[PY_ATTACH_FREE_THREADED] = "free_threaded",
	[PY_ATTACH_LAYOUT_MISMATCH] = "layout_mismatch",
	[PY_ATTACH_TLS_UNSUPPORTED] = "tls_unsupported",
	[PY_ATTACH_READ_FAULT] = "read_fault",
};

const char *py_attach_result_name(enum py_attach_result r)
{
	return (unsigned)r < PY_ATTACH_NR ? result_names[r] : "unknown";
}

struct attach {
	pid_t pid;
	struct symbolizer *s;
	const char *detail;
	struct sym_object *obj; /* the interpreter's object */
	uint64_t bias;		/* its load bias: runtime = ELF address + bias */
	const char *name;	/* its file name as the process sees it */
	uint64_t unicode_type;	/* PyUnicode_Type, PyBytes_Type; 0 when not found */
	uint64_t bytes_type;
	struct py_layout l;
	struct py_interp *out;
	bool changing; /* the failure read the process's changing state: out->changing */
};

struct tstate {
	uint64_t addr;
	uint64_t thread_id; /* pthread_t: the address of glibc's struct pthread */
};

static enum py_attach_result fail(struct attach *a, enum py_attach_result r, const char *detail)
{
	a->detail = detail;
	return r;
}

/* A failure read from what the interpreter changes as it runs (its thread states, TSS
 * slots and frames; a read that faulted on an address it gave): an instant of its
 * start-up, or of a thread's, can make it, and a later attempt may pass. */
static enum py_attach_result fail_changing(struct attach *a, enum py_attach_result r,
					   const char *detail)
{
	a->changing = true;
	return fail(a, r, detail);
}

/* The process is gone or denies us (READ_FAULT), unlike a bad address it gave (-EFAULT) or
 * an object that does not check out (-EINVAL). */
static bool gone(int err)
{
	return err == -ESRCH || err == -EPERM;
}

static int read_u64(struct attach *a, uint64_t addr, uint64_t *v)
{
	return pymem_read(a->pid, addr, v, sizeof(*v));
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

/*
 * The minor version in a file name "<prefix>3.<minor>[t]...", e.g. libpython3.12.so.1.0 or
 * python3.13t; *free_threaded when the 't' is there. Returns the minor or -1.
 */
static int minor_from_name(const char *path, const char *prefix, bool *free_threaded)
{
	const char *p = base_name(path);
	size_t n = strlen(prefix);
	int minor = 0, digits = 0;

	if (strncmp(p, prefix, n) || strncmp(p + n, "3.", 2))
		return -1;
	for (p += n + 2; *p >= '0' && *p <= '9' && digits < 3; p++, digits++)
		minor = minor * 10 + (*p - '0');
	if (!digits || (*p >= '0' && *p <= '9'))
		return -1;
	*free_threaded = *p == 't';
	if (*p == 't')
		p++;
	/* Then the end, ".so...", or a build flag as "d" (debug). */
	if (*p && *p != '.' && *p != 'd')
		return -1;
	return minor;
}

static bool is_libpython(const char *path)
{
	bool t;

	return minor_from_name(path, "libpython", &t) >= 0 && strstr(base_name(path), ".so");
}

static int symbol(struct attach *a, const char *name, uint64_t *addr, uint64_t *size)
{
	uint64_t vaddr, sz = 0;
	int err = sym_object__symbol(a->s, a->obj, name, &vaddr, &sz);

	if (err)
		return err;
	*addr = vaddr + a->bias;
	if (size)
		*size = sz;
	return 0;
}

/*
 * Find the object that defines _PyRuntime and _PyEval_EvalFrameDefault: the executable
 * first (when its .dynsym exports _PyRuntime), then a libpython3.X.so. Its load bias comes
 * from one of its executable mappings.
 */
static enum py_attach_result find_object(struct attach *a, const struct proc_image *img)
{
	const struct sym_object *seen[MAX_OBJECTS];
	size_t nr_seen = 0, i, j;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < img->nr_maps; i++) {
			const struct proc_mapping *m = &img->maps[i];
			uint64_t vaddr, v;
			bool dup = false;

			if (m->kind != MAPPING_FILE || !m->object || !m->name ||
			    m->stale_window != UINT64_MAX)
				continue;
			if (pass == 0 ? !img->exe[0] || strcmp(m->name, img->exe) :
					!is_libpython(m->name))
				continue;
			for (j = 0; j < nr_seen; j++)
				dup |= seen[j] == m->object;
			if (dup || nr_seen >= MAX_OBJECTS)
				continue;
			seen[nr_seen++] = m->object;
			if (sym_object__mapping_vaddr(m->object, m->offset, &vaddr))
				continue;
			/* Every executable of the host comes here: a first look in what it exports
			 * (an interpreter linked in exports its API to extension modules). */
			if (pass == 0 &&
			    sym_object__dynamic_symbol(m->object, "_PyRuntime", &v, NULL))
				continue;
			a->obj = m->object;
			a->bias = m->start - vaddr;
			a->name = m->name;
			if (!sym_object__symbol(a->s, a->obj, "_PyRuntime", &v, NULL) &&
			    !sym_object__symbol(a->s, a->obj, "_PyEval_EvalFrameDefault", &v, NULL))
				return PY_ATTACH_OK;
			a->obj = NULL;
		}
	}
	return fail(a, PY_ATTACH_NOT_PYTHON, "no object defines _PyRuntime and the eval loop");
}

/* PY_VERSION_HEX from Py_Version (3.11+), else major.minor from the object's file name
 * (libpython3.X.so, or the executable python3.X that links it in). */
static enum py_attach_result find_version(struct attach *a)
{
	uint64_t addr, size = 0;
	uint32_t hex = 0;
	bool t = false;
	int minor = -1, err;

	if (!symbol(a, "Py_Version", &addr, &size) && (size == 4 || size == 8)) {
		err = pymem_read(a->pid, addr, &hex, sizeof(hex));
		if (gone(err))
			return fail(a, PY_ATTACH_READ_FAULT, "Py_Version unreadable");
		if (err)
			return fail_changing(a, PY_ATTACH_LAYOUT_MISMATCH,
					     "Py_Version unreadable (the mappings changed?)");
		if (hex >> 24 != 3)
			return fail(a, PY_ATTACH_LAYOUT_MISMATCH, "Py_Version is no 3.x");
	}
	/* The object's name says whether the build is free-threaded (libpython3.13t.so,
	 * python3.13t), and the version before 3.11. */
	if (is_libpython(a->name))
		minor = minor_from_name(a->name, "libpython", &t);
	else
		minor = minor_from_name(a->name, "python", &t);
	if (t)
		return fail(a, PY_ATTACH_FREE_THREADED, "a free-threaded build (3.Xt)");
	if (!hex) {
		if (minor < 0)
			return fail(a, PY_ATTACH_UNSUPPORTED,
				    "no Py_Version and no version in a name");
		hex = 0x03000000u | (uint32_t)minor << 16;
	}
	a->out->version_hex = hex;
	return PY_ATTACH_OK;
}

static enum py_attach_result find_layout(struct attach *a, const struct py_layout *forced)
{
	unsigned minor = (a->out->version_hex >> 16) & 0xff;
	uint8_t buf[1024];
	size_t len;
	int err;

	if (forced) {
		a->l = *forced;
	} else if (minor < 8 || minor > 13) {
		return fail(a, PY_ATTACH_UNSUPPORTED, "a version without a layout (3.8-3.13 have)");
	} else if (minor <= 12) {
		if (py_layout_for_version(3, minor, &a->l))
			return fail(a, PY_ATTACH_UNSUPPORTED, "no layout for this version");
	} else {
		len = py_debug_offsets_size();
		if (len > sizeof(buf))
			return fail(a, PY_ATTACH_UNSUPPORTED, "debug offsets too large");
		err = pymem_read(a->pid, a->out->runtime, buf, len);
		if (err)
			return fail(a, PY_ATTACH_READ_FAULT, "_PyRuntime unreadable");
		err = py_layout_from_debug_offsets(buf, len, &a->l);
		if (err == -EPROTONOSUPPORT)
			return fail(a, PY_ATTACH_FREE_THREADED, "_Py_DebugOffsets: free-threaded");
		if (err == -ENOTSUP)
			return fail(a, PY_ATTACH_UNSUPPORTED,
				    "_Py_DebugOffsets of another version");
		if (err)
			return fail(a, PY_ATTACH_LAYOUT_MISMATCH,
				    "_Py_DebugOffsets do not check out");
	}
	if (a->l.version != ((a->out->version_hex >> 16) & 0xffff))
		return fail(a, PY_ATTACH_LAYOUT_MISMATCH, "layout of another version");
	if (py_layout_check(&a->l))
		return fail(a, PY_ATTACH_LAYOUT_MISMATCH, "layout unfit for the BPF walker");
	return PY_ATTACH_OK;
}

/* The eval loop and, where the symbol table names it, its .cold part. */
static enum py_attach_result find_eval(struct attach *a)
{
	struct py_interp *o = a->out;
	uint64_t addr, size;

	if (symbol(a, "_PyEval_EvalFrameDefault", &addr, &size) || !size || addr + size < addr)
		return fail(a, PY_ATTACH_LAYOUT_MISMATCH, "the eval loop has no size");
	o->eval_start[0] = addr;
	o->eval_end[0] = addr + size;
	if (!symbol(a, "_PyEval_EvalFrameDefault.cold", &addr, &size) && size &&
	    addr + size > addr) {
		o->eval_start[1] = addr;
		o->eval_end[1] = addr + size;
	}
	if (symbol(a, "PyCode_Type", &o->code_type, NULL))
		return fail(a, PY_ATTACH_LAYOUT_MISMATCH, "no PyCode_Type");
	/* For checking the code objects' fields; optional. */
	if (symbol(a, "PyUnicode_Type", &a->unicode_type, NULL))
		a->unicode_type = 0;
	if (symbol(a, "PyBytes_Type", &a->bytes_type, NULL))
		a->bytes_type = 0;
	return PY_ATTACH_OK;
}

/* The TSS key: a Py_tss_t { int _is_initialized; pthread_key_t _key; } in _PyRuntime. */
static enum py_attach_result find_tss_key(struct attach *a)
{
	uint32_t tss[2];
	int err;

	err = pymem_read(a->pid, a->out->runtime + a->l.runtime_tss_key, tss, sizeof(tss));
	if (err)
		return fail(a, PY_ATTACH_READ_FAULT, "the TSS key is unreadable");
	if (tss[0] == 0)
		return fail(a, PY_ATTACH_NOT_READY, "the TSS key is not created yet");
	if (tss[0] != 1 || tss[1] >= PTHREAD_KEYS_MAX)
		return fail_changing(a, PY_ATTACH_LAYOUT_MISMATCH,
				     "the TSS key does not check out");
	if (tss[1] >= KEY_2NDLEVEL)
		return fail(a, PY_ATTACH_TLS_UNSUPPORTED, "TSS key >= 32 (second-level block)");
	a->out->tss_key = tss[1];
	return PY_ATTACH_OK;
}

/* The main interpreter's thread states, in list order (the main thread's is the last). */
static enum py_attach_result thread_states(struct attach *a, struct tstate *ts, size_t max,
					   size_t *nr)
{
	uint64_t interp, t, back;
	uint32_t count = 0;
	int err;

	err = read_u64(a, a->out->runtime + a->l.runtime_interp_main, &interp);
	if (err)
		return fail(a, PY_ATTACH_READ_FAULT, "_PyRuntime unreadable");
	if (!interp)
		return fail(a, PY_ATTACH_NOT_READY, "no main interpreter yet");
	err = read_u64(a, interp + a->l.interp_tstate_head, &t);
	if (err)
		return fail_changing(a,
				     gone(err) ? PY_ATTACH_READ_FAULT : PY_ATTACH_LAYOUT_MISMATCH,
				     "the main interpreter is unreadable");
	if (!t)
		return fail(a, PY_ATTACH_NOT_READY, "no thread state yet");
	*nr = 0;
	while (t && count < MAX_THREADS) {
		uint64_t thread_id;

		err = read_u64(a, t + a->l.tstate_interp, &back);
		if (!err)
			err = read_u64(a, t + a->l.tstate_thread_id, &thread_id);
		if (gone(err))
			return fail(a, PY_ATTACH_READ_FAULT, "a thread state is unreadable");
		if (err || back != interp)
			return fail_changing(a, PY_ATTACH_LAYOUT_MISMATCH,
					     "a thread state's interpreter is not the main one");
		/* Keep the first ones and the last (the main thread's). */
		if (*nr < max) {
			ts[(*nr)++] = (struct tstate){ t, thread_id };
		} else {
			ts[max - 1] = (struct tstate){ t, thread_id };
		}
		count++;
		err = read_u64(a, t + a->l.tstate_next, &t);
		if (err)
			return fail_changing(
				a, gone(err) ? PY_ATTACH_READ_FAULT : PY_ATTACH_LAYOUT_MISMATCH,
				"a thread state's next is unreadable");
	}
	if (t)
		return fail_changing(a, PY_ATTACH_LAYOUT_MISMATCH,
				     "too many thread states (a loop?)");
	a->out->threads = count;
	return PY_ATTACH_OK;
}

/*
 * Read up to PTHREAD_SCAN bytes of the struct pthread at p (it may end sooner: the thread's
 * stack mapping ends above it), in pieces. Returns the bytes read.
 */
static size_t read_pthread(struct attach *a, uint64_t p, uint8_t *buf)
{
	size_t got = 0, piece = 256;

	while (got < PTHREAD_SCAN && !pymem_read(a->pid, p + got, buf + got, piece))
		got += piece;
	return got;
}

/*
 * The tss_data_off values the struct pthread of thread state t admits: slots { seq, data }
 * whose data is t and whose seq is odd (glibc marks a key in use with an odd sequence
 * number). Returns how many went to cand (at most MAX_CANDIDATES), or -1 when the thread id
 * is no glibc struct pthread (its header's tcb and self point to itself, x86_64).
 */
static int tss_candidates(struct attach *a, const struct tstate *t, int32_t *cand)
{
	uint8_t buf[PTHREAD_SCAN];
	uint64_t tcb, self, seq, data;
	size_t len, off;
	int n = 0;

	if (!t->thread_id || t->thread_id & 7)
		return -1;
	len = read_pthread(a, t->thread_id, buf);
	if (len < PTHREAD_MIN)
		return -1;
	memcpy(&tcb, buf, 8);
	memcpy(&self, buf + 16, 8);
	if (tcb != t->thread_id || self != t->thread_id)
		return -1;
	for (off = 24; off + 16 <= len; off += 8) {
		int64_t d;

		memcpy(&seq, buf + off, 8);
		memcpy(&data, buf + off + 8, 8);
		if (data != t->addr || !(seq & 1))
			continue;
		d = (int64_t)off + 8 - 16 * (int64_t)a->out->tss_key;
		if (d <= 0 || n >= MAX_CANDIDATES)
			continue;
		cand[n++] = (int32_t)d;
	}
	return n;
}

static bool has(const int32_t *c, int n, int32_t v)
{
	int i;

	for (i = 0; i < n; i++)
		if (c[i] == v)
			return true;
	return false;
}

/*
 * Where a thread finds its state: the offset, from its fs base (its struct pthread), of
 * the data of specific_1stblock[0]. The main thread's struct pthread must hold its state in
 * one slot; every other thread's must agree where it holds its own. A thread state between
 * its creation and its thread's start, or in its thread's exit, is let be: it is in no slot,
 * and its thread_id may be no struct pthread yet (0 until the thread binds it, 3.12+) or any
 * more (the thread's stack reused).
 */
static enum py_attach_result find_tss_data(struct attach *a, const struct tstate *ts, size_t nr)
{
	int32_t cand[MAX_CANDIDATES], other[MAX_CANDIDATES];
	const struct tstate *main_ts = &ts[nr - 1];
	int n, k, m, i;
	size_t j;

	n = tss_candidates(a, main_ts, cand);
	if (n < 0)
		return fail_changing(a, PY_ATTACH_TLS_UNSUPPORTED,
				     "thread_id is no glibc struct pthread");
	if (n == 0)
		return fail_changing(
			a, PY_ATTACH_TLS_UNSUPPORTED,
			"the main thread's state is in no TSS slot of its struct pthread");
	for (j = 0; j + 1 < nr; j++) {
		m = tss_candidates(a, &ts[j], other);
		if (m <= 0 || ts[j].thread_id == main_ts->thread_id)
			continue;
		for (i = 0, k = 0; i < n; i++)
			if (has(other, m, cand[i]))
				cand[k++] = cand[i];
		n = k;
		if (!n)
			return fail_changing(a, PY_ATTACH_TLS_UNSUPPORTED,
					     "threads disagree on the TSS slot");
	}
	if (n != 1)
		return fail_changing(a, PY_ATTACH_TLS_UNSUPPORTED, "the TSS slot is ambiguous");
	a->out->tss_data_off = cand[0];
	return PY_ATTACH_OK;
}

/* An object's ob_type is want (0: not checked). */
static int type_is(struct attach *a, uint64_t obj, uint64_t want)
{
	uint64_t type;
	int err;

	if (!want)
		return 0;
	err = read_u64(a, obj + 8, &type); /* PyObject.ob_type */
	if (err)
		return err;
	return type == want ? 0 : -EINVAL;
}

/* A code object as the layout reads it: its type, its strings, its bytecode's place. */
static int check_code(struct attach *a, uint64_t code, const uint8_t *frame)
{
	const struct py_layout *l = &a->l;
	uint8_t c[IGNIS_PY_CODE_READ];
	uint64_t name, filename, linetable, lasti, units, base;
	int32_t firstlineno, ilasti;
	int err;

	err = type_is(a, code, a->out->code_type);
	if (!err)
		err = pymem_read(a->pid, code, c, sizeof(c));
	if (err)
		return err;
	memcpy(&name, c + l->code_name, 8);
	memcpy(&filename, c + l->code_filename, 8);
	memcpy(&linetable, c + l->code_linetable, 8);
	memcpy(&firstlineno, c + l->code_firstlineno, 4);
	if (firstlineno < 0)
		return -EINVAL;
	if (type_is(a, name, a->unicode_type) || type_is(a, filename, a->unicode_type) ||
	    type_is(a, linetable, a->bytes_type))
		return -EINVAL;
	if (l->code_qualname != PY_FIELD_NONE) {
		memcpy(&name, c + l->code_qualname, 8);
		if (type_is(a, name, a->unicode_type))
			return -EINVAL;
	}
	if (l->lasti_kind == PY_LASTI_KIND_PTR) {
		/* Into the bytecode: Py_SIZE(code) code units of 2 bytes from co_code_adaptive;
		 * 3.11-3.12's prev_instr starts one unit before it. */
		memcpy(&units, c + 16, 8); /* PyVarObject.ob_size */
		memcpy(&lasti, frame + l->frame_lasti, 8);
		base = code + l->code_code;
		if (units > (1u << 24) || lasti + 2 < base || lasti > base + 2 * units)
			return -EINVAL;
	} else {
		memcpy(&ilasti, frame + l->frame_lasti, 4);
		if (ilasti < -1)
			return -EINVAL;
	}
	return 0;
}

/* One walk of a thread's frames from its state t: how many checked out, or -errno. */
static int walk_frames(struct attach *a, uint64_t t)
{
	const struct py_layout *l = &a->l;
	uint8_t f[IGNIS_PY_FRAME_READ];
	uint64_t frame, code;
	int checked = 0, i, err;

	err = read_u64(a, t + l->tstate_frame, &frame);
	if (!err && frame && l->cframe_frame != PY_FIELD_NONE)
		err = read_u64(a, frame + l->cframe_frame, &frame);
	for (i = 0; !err && frame && i < MAX_FRAMES; i++) {
		err = pymem_read(a->pid, frame, f, sizeof(f));
		if (err)
			break;
		memcpy(&code, f + l->frame_code, 8);
		/* 3.12+: the eval call's own entry frame (owner FRAME_OWNED_BY_CSTACK) runs no
		 * Python code; 3.13's f_executable there is no code object. */
		if (!(l->entry_kind == PY_ENTRY_KIND_OWNER &&
		      f[l->frame_entry] == l->owner_cstack)) {
			err = check_code(a, code, f);
			if (err)
				break;
			checked++;
		}
		memcpy(&frame, f + l->frame_previous, 8);
	}
	return err ? err : checked;
}

static enum py_attach_result check_frames(struct attach *a, uint64_t main_tstate)
{
	int tries, n = 0;

	for (tries = 0; tries < FRAME_TRIES; tries++) {
		n = walk_frames(a, main_tstate);
		if (n >= 0)
			break;
		if (gone(n))
			return fail(a, PY_ATTACH_READ_FAULT, "the process is gone");
	}
	if (n < 0)
		return fail_changing(a, PY_ATTACH_LAYOUT_MISMATCH,
				     "a frame's code object does not check out");
	a->out->frames_checked = (uint32_t)n;
	return PY_ATTACH_OK;
}

enum py_attach_result py_attach(pid_t pid, const struct proc_image *img, struct symbolizer *s,
				struct py_interp *out, const char **detail)
{
	return py_attach_layout(pid, img, s, NULL, out, detail);
}

enum py_attach_result py_attach_layout(pid_t pid, const struct proc_image *img,
				       struct symbolizer *s, const struct py_layout *layout,
				       struct py_interp *out, const char **detail)
{
	struct attach a = { .pid = pid, .s = s, .out = out };
	struct tstate ts[MAX_TSS_THREADS];
	enum py_attach_result r;
	uint64_t size;
	size_t nr = 0;

	memset(out, 0, sizeof(*out));
	r = find_object(&a, img);
	if (r)
		goto out;
	out->object = a.name;
	if (symbol(&a, "_PyRuntime", &out->runtime, &size)) {
		r = fail(&a, PY_ATTACH_NOT_PYTHON, "no _PyRuntime");
		goto out;
	}
	r = find_version(&a);
	if (!r)
		r = find_layout(&a, layout);
	if (!r)
		r = find_eval(&a);
	if (!r && size && size < (uint64_t)a.l.runtime_tss_key + 8)
		r = fail(&a, PY_ATTACH_LAYOUT_MISMATCH, "_PyRuntime is smaller than the layout");
	if (!r)
		r = find_tss_key(&a);
	if (!r)
		r = thread_states(&a, ts, MAX_TSS_THREADS, &nr);
	if (!r)
		r = find_tss_data(&a, ts, nr);
	if (!r)
		r = check_frames(&a, ts[nr - 1].addr);
	if (!r)
		out->layout = a.l;
out:
	/* READ_FAULT (gone, or denied) is final however it came. */
	out->changing = r && r != PY_ATTACH_READ_FAULT && a.changing;
	if (detail)
		*detail = r ? a.detail : "attached";
	return r;
}
