/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The Python walker's logic (CPython 3.8-3.13, x86_64 glibc): the frames of the sampled
 * thread's own interpreter, one per call, put in the user stack in the place of the native
 * eval-loop frames that run them. The table unwinder (bpf/unwind.bpf.h) calls py_step() when
 * a native frame's pc lies in the eval loop of a process the agent attached (py_procs, see
 * bpf/profiler.h), until py_step() says that eval frame's Python frames are out; then it goes
 * on unwinding natively from that eval frame. So Python called from C called from Python comes
 * out in the order it runs: Python frames leafward of the C code they called, and so on.
 *
 * Which Python frames one eval-loop frame runs: on 3.8-3.10 one (every Python call is a C call
 * of _PyEval_EvalFrameDefault); on 3.11 the frames up to and including the one marked
 * is_entry; on 3.12+ the frames up to the marker frame the eval call pushes itself
 * (owner == FRAME_OWNED_BY_CSTACK), which is skipped. The chain starts at the thread's
 * current frame: tstate->frame (3.8-3.10), tstate->cframe->current_frame (3.11-3.12),
 * tstate->current_frame (3.13), where tstate is the thread's own PyThreadState, its value of
 * the interpreter's gilstate TSS key (not the GIL holder's, which is another thread's stack
 * half the time).
 *
 * When the native walk is cut short (no table yet for a library, a read fault), the Python
 * frames not yet put in are still known from the chain: they follow the native frames, in
 * order, before the stack's [truncated] end (py->drain), so a Python stack stays whole even
 * where the native one is not.
 *
 * A frame is one stack slot: IGNIS_USER_IP_PY | lasti << IGNIS_PY_LASTI_SHIFT | serial. Every
 * code object must have ob_type == &PyCode_Type, or the walk stops (counted). Its serial comes
 * from py_codes, keyed by (image, address, identity); a code object met for the first time
 * gets a new serial and is announced to the agent, which reads its names at once.
 *
 * Like bpf/unwind.bpf.h this compiles for BPF and natively (tests/unit/test_python_walk.c);
 * the world is reached through read_user() and stat_inc() (see bpf/unwind.bpf.h) and two
 * more functions the includer defines:
 *
 *   py_fsbase()                      the current thread's fs base (task->thread.fsbase)
 *   py_code_serial(key, py, line)    the serial of a code object (in py->co, first line
 *                                    line): found, or new and announced (py_ascii() copies
 *                                    its names into the announcement); 0 when it could not
 *                                    be (counted)
 */
#ifndef IGNIS_BPF_PYTHON_BPF_H
#define IGNIS_BPF_PYTHON_BPF_H

#include "pyident.bpf.h"

#ifndef barrier_var
/* As bpf_helpers.h: keeps the compiler from dropping an operation on var it deems a no-op. */
#define barrier_var(var) asm volatile("" : "+r"(var))
#endif

/* Where the Python walk is, kept across the table unwinder's tail calls. */
struct uw_python {
	__u32 on;      /* the process is attached: the fields below are its */
	__u32 started; /* frame holds the thread's chain (read on the first eval frame) */
	__u32 emitted; /* Python frames put in for the current eval frame */
	__u32 total;   /* Python frames put in for the stack */
	__u32 drain;   /* the native walk was cut: the rest of the chain goes in, in order */
	__u32 slot;    /* the walk's cpu_states entry (CPU_STATE_*): its serials are its own */
	__u64 frame;   /* address of the next Python frame to emit, 0: none */
	__u64 eval_start[IGNIS_PY_EVAL_RANGES];
	__u64 eval_end[IGNIS_PY_EVAL_RANGES];
	__s32 tss_data_off;
	__u32 tss_key;
	struct ignis_py_layout l;
	/* Scratch for one frame's reads (too large for the BPF stack). */
	__u8 fr[IGNIS_PY_FRAME_READ];
	__u8 co[IGNIS_PY_CODE_READ];
	__u8 name[128];
};

/* What py_step() did. */
enum py_step_result {
	PY_STEP_FRAME = 0, /* put in a frame; more of this eval frame's may follow */
	PY_STEP_DONE,	   /* this eval frame's Python frames are all in */
	PY_STEP_FAILED,	   /* the chain could not be read (counted): no more Python here */
	PY_STEP_DEPTH,	   /* the stack is full */
};

/* The world, as the includer defines it (see the top of this file and bpf/unwind.bpf.h). */
static __always_inline long read_user(void *dst, __u32 size, __u64 addr);
static __always_inline void stat_inc(__u32 g, enum ignis_stat stat);
static __always_inline __u64 py_fsbase(void);
static __always_inline __u64 py_code_serial(const struct ignis_py_code_key *key,
					    struct uw_python *py, __s32 firstlineno);

/* Fields of the scratch buffers at an offset from the layout, bounded for the verifier. */
static __always_inline __u64 py_u64(const __u8 *buf, __u32 size, __u32 off)
{
	barrier_var(off);
	off &= size - 1;
	if (off > size - 8)
		return 0;
	return *(const __u64 *)(buf + off);
}

static __always_inline __u32 py_u32(const __u8 *buf, __u32 size, __u32 off)
{
	barrier_var(off);
	off &= size - 1;
	if (off > size - 4)
		return 0;
	return *(const __u32 *)(buf + off);
}

static __always_inline __u8 py_u8(const __u8 *buf, __u32 size, __u32 off)
{
	barrier_var(off);
	off &= size - 1;
	return buf[off];
}

/* Whether pc (a sampled pc, or a return address - 1) lies in the eval loop. */
static __always_inline bool py_in_eval(const struct uw_python *py, __u64 pc)
{
	return py->on && ((pc >= py->eval_start[0] && pc < py->eval_end[0]) ||
			  (pc >= py->eval_start[1] && pc < py->eval_end[1]));
}

/* The thread's current frame, from its own thread state. 0: no Python on this thread. */
static __always_inline int py_begin(struct uw_python *py, __u32 g)
{
	__u64 fs = py_fsbase(), tstate = 0, frame = 0;

	py->started = 1;
	py->frame = 0;
	if (!fs)
		return 0;
	if (read_user(&tstate, sizeof(tstate),
		      fs + (__s64)py->tss_data_off + 16ULL * (py->tss_key & 31))) {
		stat_inc(g, STAT_PY_READ_FAULT);
		return -1;
	}
	if (!tstate) {
		/* A thread that runs no Python is no failure when a cut native walk asks. */
		if (!py->drain)
			stat_inc(g, STAT_PY_NO_THREAD_STATE);
		return 0;
	}
	if (read_user(&frame, sizeof(frame), tstate + py->l.tstate_frame)) {
		stat_inc(g, STAT_PY_READ_FAULT);
		return -1;
	}
	if (frame && py->l.cframe_frame != IGNIS_PY_NONE &&
	    read_user(&frame, sizeof(frame), frame + py->l.cframe_frame)) {
		stat_inc(g, STAT_PY_READ_FAULT);
		return -1;
	}
	py->frame = frame;
	return 0;
}

/*
 * The identity of the code object in py->co (bpf/pyident.bpf.h): its name's length and first
 * bytes, and its first line. Returns 0 or -1 (counted).
 */
static __always_inline int py_identity(struct uw_python *py, __u32 g, __u32 *identity)
{
	__u64 name = py_u64(py->co, IGNIS_PY_CODE_READ, py->l.code_name), len;
	__u32 data = py->l.unicode_data & 63, want, state;
	__s32 firstlineno = (__s32)py_u32(py->co, IGNIS_PY_CODE_READ, py->l.code_firstlineno);

	/* The header and the bytes the identity covers, in one read; near the end of a mapping
	 * that may fault where the string itself would not: then the header, then the bytes. */
	want = data + IGNIS_PY_NAME_BYTES;
	if (read_user(py->name, want, name)) {
		if (read_user(py->name, data, name)) {
			stat_inc(g, STAT_PY_READ_FAULT);
			return -1;
		}
		len = py_u64(py->name, sizeof(py->name), py->l.unicode_length);
		want = len < IGNIS_PY_NAME_BYTES ? (__u32)len : IGNIS_PY_NAME_BYTES;
		barrier_var(want);
		want &= 63;
		if (want > IGNIS_PY_NAME_BYTES || read_user(py->name + data, want, name + data)) {
			stat_inc(g, STAT_PY_READ_FAULT);
			return -1;
		}
	}
	len = py_u64(py->name, sizeof(py->name), py->l.unicode_length);
	state = py_u32(py->name, sizeof(py->name), py->l.unicode_state);
	*identity = ignis_py_identity(py->name + data, len, (state >> 5 & 3) == 3, firstlineno);
	return 0;
}

/*
 * Copy the characters of the str at str into dst (at most cap bytes, a power of two), if it
 * is a compact ASCII one; py->name is the scratch for its header. Returns the bytes copied,
 * 0 for another kind of string or a fault.
 */
static __always_inline __u32 py_ascii(struct uw_python *py, char *dst, __u32 cap, __u64 str)
{
	__u32 data = py->l.unicode_data & 63, state, n;
	__u64 len;

	if (!str || read_user(py->name, data, str))
		return 0;
	len = py_u64(py->name, sizeof(py->name), py->l.unicode_length);
	state = py_u32(py->name, sizeof(py->name), py->l.unicode_state);
	if ((state >> 5 & 3) != 3)
		return 0;
	n = len < cap ? (__u32)len : cap;
	barrier_var(n);
	n &= (cap - 1) | cap;
	if (n > cap || read_user(dst, n, str + data))
		return 0;
	return n;
}

/* The instruction the frame in py->fr runs, in code units, or IGNIS_PY_LASTI_NONE. */
static __always_inline __u64 py_lasti(const struct uw_python *py, __u64 code)
{
	__u64 v = py_u64(py->fr, IGNIS_PY_FRAME_READ, py->l.frame_lasti), start;
	__s32 i = (__s32)v;

	switch (py->l.lasti_kind) {
	case PY_LASTI_INT_BYTES:
		return i < 0 ? IGNIS_PY_LASTI_NONE : (__u64)(i / 2) & IGNIS_PY_LASTI_MASK;
	case PY_LASTI_INT_UNITS:
		return i < 0 ? IGNIS_PY_LASTI_NONE : (__u64)i & IGNIS_PY_LASTI_MASK;
	default:
		start = code + py->l.code_code;
		if (v < start || (v - start) / 2 >= IGNIS_PY_LASTI_NONE)
			return IGNIS_PY_LASTI_NONE;
		return (v - start) / 2;
	}
}

/*
 * One step of the Python walk for the eval frame being replaced: put its next Python frame in
 * stack (key names the sample's image), or say that its frames are all in.
 */
static __always_inline int py_step(struct uw_python *py, struct ignis_stack *stack, __u32 g,
				   const struct ignis_sample_key *key)
{
	struct ignis_py_code_key ck = {};
	__u64 code, prev, lasti;
	__u32 identity, slot, len;
	__u64 serial;
	__u8 entry;

	if (!py->started && py_begin(py, g))
		return PY_STEP_FAILED;
	if (!py->frame)
		return PY_STEP_DONE;
	if (read_user(py->fr, IGNIS_PY_FRAME_READ, py->frame)) {
		stat_inc(g, STAT_PY_READ_FAULT);
		return PY_STEP_FAILED;
	}
	prev = py_u64(py->fr, IGNIS_PY_FRAME_READ, py->l.frame_previous);
	entry = py->l.frame_entry == IGNIS_PY_NONE ?
			0 :
			py_u8(py->fr, IGNIS_PY_FRAME_READ, py->l.frame_entry);
	if (py->l.entry_kind == PY_ENTRY_OWNER && entry == py->l.owner_cstack) {
		/* The eval call's own marker: its frames end here. */
		py->frame = prev;
		return py->drain ? PY_STEP_FRAME : PY_STEP_DONE;
	}
	code = py_u64(py->fr, IGNIS_PY_FRAME_READ, py->l.frame_code);
	if (read_user(py->co, IGNIS_PY_CODE_READ, code)) {
		stat_inc(g, STAT_PY_READ_FAULT);
		return PY_STEP_FAILED;
	}
	if (py_u64(py->co, IGNIS_PY_CODE_READ, 8) != py->l.code_type) {
		stat_inc(g, STAT_PY_BAD_CODE);
		return PY_STEP_FAILED;
	}
	if (py_identity(py, g, &identity))
		return PY_STEP_FAILED;
	lasti = py_lasti(py, code);

	len = stack->len;
	if (len >= IGNIS_MAX_STACK_DEPTH) {
		stat_inc(g, STAT_UNWIND_DEPTH);
		return PY_STEP_DEPTH;
	}
	ck.tgid = key->tgid;
	ck.exec_id = key->exec_id;
	ck.start_time = key->start_time;
	ck.code = code;
	ck.identity = identity;
	serial = py_code_serial(&ck, py,
				(__s32)py_u32(py->co, IGNIS_PY_CODE_READ, py->l.code_firstlineno));
	slot = len;
	barrier_var(slot);
	slot &= IGNIS_MAX_STACK_DEPTH - 1;
	stack->ips[slot] = IGNIS_USER_IP_PY | lasti << IGNIS_PY_LASTI_SHIFT |
			   (serial & IGNIS_PY_SERIAL_MASK);
	stack->len = len + 1;
	py->emitted++;
	py->total++;
	stat_inc(g, STAT_PY_FRAMES);

	py->frame = prev;
	if (!py->drain &&
	    (py->l.entry_kind == PY_ENTRY_EVAL || (py->l.entry_kind == PY_ENTRY_FLAG && entry)))
		return PY_STEP_DONE;
	return PY_STEP_FRAME;
}

#endif /* IGNIS_BPF_PYTHON_BPF_H */
