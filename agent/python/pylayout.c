// SPDX-License-Identifier: Apache-2.0
/*
 * CPython's struct layouts, x86_64 (LP64), per minor version. Each row names the header of
 * that version that defines the struct (paths in CPython's source tree, the same under
 * include/python3.X/ of an installation); the numbers are the offsets the compiler gives
 * those definitions, as the DWARF of pyenv's builds (3.8.18, 3.9.18, 3.10.13, 3.11.7,
 * 3.12.1, 3.13.0) shows them, checked field by field by tests/unit/test_pylayout.c. CPython
 * keeps these structs unchanged within a minor version (its ABI promise covers the public
 * ones; the internal ones have not moved in the patch releases here either), and the attach
 * checks the memory against them anyway (agent/python/pyattach.c).
 *
 * 3.13 carries most of its layout itself: _PyRuntime starts with a _Py_DebugOffsets
 * (Include/internal/pycore_runtime.h, 3.13), decoded by py_layout_from_debug_offsets(). What
 * it lacks (the TSS key's place, the main interpreter, PyCompactUnicodeObject's size) comes
 * from a 3.13 row as the others do.
 */
#include <linux/types.h>

#include <errno.h>
#include <string.h>

#include "../../bpf/profiler.h"
#include "pylayout.h"

_Static_assert(PY_FIELD_NONE == IGNIS_PY_NONE, "the same marker on both sides");
_Static_assert((int)PY_LASTI_KIND_INT_BYTES == PY_LASTI_INT_BYTES &&
		       (int)PY_LASTI_KIND_INT_UNITS == PY_LASTI_INT_UNITS &&
		       (int)PY_LASTI_KIND_PTR == PY_LASTI_PTR,
	       "lasti kinds as bpf/profiler.h");
_Static_assert((int)PY_ENTRY_KIND_EVAL == PY_ENTRY_EVAL &&
		       (int)PY_ENTRY_KIND_FLAG == PY_ENTRY_FLAG &&
		       (int)PY_ENTRY_KIND_OWNER == PY_ENTRY_OWNER,
	       "entry kinds as bpf/profiler.h");

#define N PY_FIELD_NONE

/*
 * Fields common to a run of versions:
 * - PyBytesObject (Include/bytesobject.h 3.8; Include/cpython/bytesobject.h 3.9+):
 *   PyVarObject ob_base { ob_refcnt, ob_type, ob_size }, ob_shash, ob_sval[].
 * - PyASCIIObject, PyCompactUnicodeObject (Include/cpython/unicodeobject.h): length at 16,
 *   the state bit field at 32; 3.8-3.11 have a wchar_t *wstr after state (sizes 48 and 72),
 *   3.12 dropped it (40 and 56).
 */
#define BYTES .bytes_size = 16, .bytes_data = 32
#define UNICODE_3_8                                                          \
	.unicode_length = 16, .unicode_state = 32, .unicode_ascii_data = 48, \
	.unicode_compact_data = 72
#define UNICODE_3_12                                                         \
	.unicode_length = 16, .unicode_state = 32, .unicode_ascii_data = 40, \
	.unicode_compact_data = 56

static const struct py_layout layouts[] = {
	{
		/* 3.8 (3.8.18)
		 * _PyRuntimeState, struct _is: Include/internal/pycore_pystate.h
		 * PyThreadState (struct _ts): Include/cpython/pystate.h
		 * PyFrameObject (struct _frame): Include/frameobject.h
		 * PyCodeObject: Include/code.h */
		.version = 0x0308,
		.runtime_interp_main = 40, /* interpreters.main */
		.runtime_tss_key = 1392,   /* gilstate.autoTSSkey */
		.interp_tstate_head = 8,   /* tstate_head */
		.tstate_next = 8,
		.tstate_interp = 16,
		.tstate_frame = 24, /* frame */
		.cframe_frame = N,
		.tstate_thread_id = 176,
		.frame_previous = 24, /* f_back */
		.frame_code = 32,     /* f_code */
		.frame_lasti = 104,   /* f_lasti */
		.frame_entry = N,
		.lasti_kind = PY_LASTI_KIND_INT_BYTES,
		.entry_kind = PY_ENTRY_KIND_EVAL,
		.code_filename = 104,
		.code_name = 112,
		.code_qualname = N,
		.code_firstlineno = 40,
		.code_linetable = 120, /* co_lnotab */
		.code_code = N,
		BYTES,
		UNICODE_3_8,
	},
	{
		/* 3.9 (3.9.18)
		 * _PyRuntimeState: Include/internal/pycore_runtime.h
		 * struct _is: Include/internal/pycore_interp.h
		 * struct _ts: Include/cpython/pystate.h
		 * struct _frame: Include/cpython/frameobject.h
		 * PyCodeObject: Include/cpython/code.h
		 * As 3.8 but for the runtime state (the ceval and gilstate parts moved). */
		.version = 0x0309,
		.runtime_interp_main = 40,
		.runtime_tss_key = 584,
		.interp_tstate_head = 8,
		.tstate_next = 8,
		.tstate_interp = 16,
		.tstate_frame = 24,
		.cframe_frame = N,
		.tstate_thread_id = 176,
		.frame_previous = 24,
		.frame_code = 32,
		.frame_lasti = 104,
		.frame_entry = N,
		.lasti_kind = PY_LASTI_KIND_INT_BYTES,
		.entry_kind = PY_ENTRY_KIND_EVAL,
		.code_filename = 104,
		.code_name = 112,
		.code_qualname = N,
		.code_firstlineno = 40,
		.code_linetable = 120, /* co_lnotab */
		.code_code = N,
		BYTES,
		UNICODE_3_8,
	},
	{
		/* 3.10 (3.10.13): the headers of 3.9. f_lasti counts code units (2 bytes) and
		 * moved up (f_stackdepth took the place of f_stacktop); co_lnotab became
		 * co_linetable in the same place. */
		.version = 0x030a,
		.runtime_interp_main = 40,
		.runtime_tss_key = 584,
		.interp_tstate_head = 8,
		.tstate_next = 8,
		.tstate_interp = 16,
		.tstate_frame = 24,
		.cframe_frame = N,
		.tstate_thread_id = 176,
		.frame_previous = 24,
		.frame_code = 32,
		.frame_lasti = 96,
		.frame_entry = N,
		.lasti_kind = PY_LASTI_KIND_INT_UNITS,
		.entry_kind = PY_ENTRY_KIND_EVAL,
		.code_filename = 104,
		.code_name = 112,
		.code_qualname = N,
		.code_firstlineno = 40,
		.code_linetable = 120, /* co_linetable */
		.code_code = N,
		BYTES,
		UNICODE_3_8,
	},
	{
		/* 3.11 (3.11.7; Debian's 3.11.2 alike)
		 * _PyRuntimeState: Include/internal/pycore_runtime.h
		 * struct _is: Include/internal/pycore_interp.h (threads.head)
		 * struct _ts, _PyCFrame: Include/cpython/pystate.h
		 * _PyInterpreterFrame: Include/internal/pycore_frame.h
		 * PyCodeObject: Include/cpython/code.h (_PyCode_DEF) */
		.version = 0x030b,
		.runtime_interp_main = 48,
		.runtime_tss_key = 592,	  /* gilstate.autoTSSkey */
		.interp_tstate_head = 16, /* threads.head */
		.tstate_next = 8,
		.tstate_interp = 16,
		.tstate_frame = 56, /* cframe */
		.cframe_frame = 8,  /* _PyCFrame.current_frame, after use_tracing */
		.tstate_thread_id = 152,
		.frame_previous = 48, /* previous */
		.frame_code = 32,     /* f_code */
		.frame_lasti = 56,    /* prev_instr */
		.frame_entry = 68,    /* is_entry (bool) */
		.lasti_kind = PY_LASTI_KIND_PTR,
		.entry_kind = PY_ENTRY_KIND_FLAG,
		.code_filename = 112,
		.code_name = 120,
		.code_qualname = 128,
		.code_firstlineno = 72,
		.code_linetable = 136,
		.code_code = 184, /* co_code_adaptive */
		BYTES,
		UNICODE_3_8,
	},
	{
		/* 3.12 (3.12.1): the headers of 3.11; FRAME_OWNED_BY_CSTACK = 3 in enum
		 * _frameowner (Include/internal/pycore_frame.h). autoTSSkey left gilstate for
		 * the runtime state itself; _PyCFrame lost use_tracing. */
		.version = 0x030c,
		.runtime_interp_main = 48,
		.runtime_tss_key = 1544,  /* autoTSSkey */
		.interp_tstate_head = 72, /* threads.head */
		.tstate_next = 8,
		.tstate_interp = 16,
		.tstate_frame = 56, /* cframe */
		.cframe_frame = 0,  /* _PyCFrame.current_frame */
		.tstate_thread_id = 136,
		.frame_previous = 8,
		.frame_code = 0,   /* f_code */
		.frame_lasti = 56, /* prev_instr */
		.frame_entry = 70, /* owner (char) */
		.lasti_kind = PY_LASTI_KIND_PTR,
		.entry_kind = PY_ENTRY_KIND_OWNER,
		.owner_cstack = 3,
		.code_filename = 112,
		.code_name = 120,
		.code_qualname = 128,
		.code_firstlineno = 68,
		.code_linetable = 136,
		.code_code = 192,
		BYTES,
		UNICODE_3_12,
	},
};

/* What 3.13's _Py_DebugOffsets does not say (3.13.0; Include/internal/pycore_runtime.h,
 * Include/internal/pycore_interp.h, Include/cpython/unicodeobject.h): */
#define PY313_RUNTIME_TSS_KEY	    2160 /* _PyRuntimeState.autoTSSkey */
#define PY313_MAIN_AFTER_HEAD	    8	 /* interpreters { PyMutex mutex; head; main; ... } */
#define PY313_COMPACT_AFTER_ASCII   16	 /* PyCompactUnicodeObject: utf8_length, utf8 */
#define PY313_FRAME_OWNED_BY_CSTACK 3	 /* enum _frameowner, Include/internal/pycore_frame.h */

int py_layout_check(const struct py_layout *l)
{
	const uint16_t frame[] = { l->frame_previous, l->frame_code, l->frame_lasti,
				   l->frame_entry };
	const uint16_t code[] = { l->code_filename,    l->code_name,	  l->code_qualname,
				  l->code_firstlineno, l->code_linetable, l->code_code };
	size_t i;

	/* The BPF walker reads IGNIS_PY_FRAME_READ bytes of a frame and IGNIS_PY_CODE_READ of
	 * a code object, and every field it reads there is at most 8 bytes wide. */
	for (i = 0; i < sizeof(frame) / sizeof(frame[0]); i++)
		if (frame[i] != PY_FIELD_NONE && frame[i] >= IGNIS_PY_FRAME_READ - 8)
			return -EINVAL;
	for (i = 0; i < sizeof(code) / sizeof(code[0]); i++)
		if (code[i] != PY_FIELD_NONE && code[i] >= IGNIS_PY_CODE_READ - 8)
			return -EINVAL;
	/* Fields every version has. */
	if (l->frame_previous == PY_FIELD_NONE || l->frame_code == PY_FIELD_NONE ||
	    l->frame_lasti == PY_FIELD_NONE || l->code_name == PY_FIELD_NONE ||
	    l->code_filename == PY_FIELD_NONE || l->code_firstlineno == PY_FIELD_NONE ||
	    l->code_linetable == PY_FIELD_NONE || l->tstate_frame == PY_FIELD_NONE ||
	    l->tstate_next == PY_FIELD_NONE || l->tstate_interp == PY_FIELD_NONE ||
	    l->tstate_thread_id == PY_FIELD_NONE || l->interp_tstate_head == PY_FIELD_NONE ||
	    l->runtime_interp_main == PY_FIELD_NONE || l->runtime_tss_key == PY_FIELD_NONE ||
	    l->unicode_length == PY_FIELD_NONE || l->unicode_ascii_data == PY_FIELD_NONE)
		return -EINVAL;
	/* How the walker reads a frame must fit what the frame has. */
	if ((l->lasti_kind == PY_LASTI_KIND_PTR) != (l->code_code != PY_FIELD_NONE))
		return -EINVAL;
	if ((l->entry_kind == PY_ENTRY_KIND_EVAL) != (l->frame_entry == PY_FIELD_NONE))
		return -EINVAL;
	if (l->lasti_kind > PY_LASTI_KIND_PTR || l->entry_kind > PY_ENTRY_KIND_OWNER)
		return -EINVAL;
	/* It reads a name's header and first characters in one window of 64 + 32 bytes. */
	if (l->unicode_ascii_data >= 64 || l->unicode_length + 8 > l->unicode_ascii_data ||
	    l->unicode_state == PY_FIELD_NONE || l->unicode_state + 4 > l->unicode_ascii_data)
		return -EINVAL;
	return 0;
}

int py_layout_for_version(unsigned major, unsigned minor, struct py_layout *out)
{
	uint32_t want = major << 8 | minor;
	size_t i;

	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		if (layouts[i].version == want) {
			*out = layouts[i];
			return 0;
		}
	}
	return -ENOTSUP;
}

/*
 * _Py_DebugOffsets of 3.13 (Include/internal/pycore_runtime.h, 3.13.0): every field a
 * uint64_t; sizes of structs first in each group. Byte offsets in the struct:
 */
enum {
	DO_COOKIE = 0,	       /* char cookie[8]: "xdebugpy" */
	DO_VERSION = 8,	       /* PY_VERSION_HEX */
	DO_FREE_THREADED = 16, /* Py_GIL_DISABLED */
	DO_RUNTIME_SIZE = 24,  /* runtime_state: size, finalizing, interpreters_head */
	DO_RUNTIME_INTERPRETERS_HEAD = 40,
	DO_INTERP_SIZE = 48, /* interpreter_state: size, id, next, threads_head, ... */
	DO_INTERP_THREADS_HEAD = 72,
	DO_TSTATE_SIZE = 152, /* thread_state: size, prev, next, interp, current_frame,
			       * thread_id, native_thread_id, datastack_chunk, status */
	DO_TSTATE_NEXT = 168,
	DO_TSTATE_INTERP = 176,
	DO_TSTATE_CURRENT_FRAME = 184,
	DO_TSTATE_THREAD_ID = 192,
	DO_FRAME_SIZE = 224, /* interpreter_frame: size, previous, executable, instr_ptr,
			      * localsplus, owner */
	DO_FRAME_PREVIOUS = 232,
	DO_FRAME_EXECUTABLE = 240,
	DO_FRAME_INSTR_PTR = 248,
	DO_FRAME_OWNER = 264,
	DO_CODE_SIZE = 272, /* code_object: size, filename, name, qualname, linetable,
			     * firstlineno, argcount, localsplusnames, localspluskinds,
			     * co_code_adaptive */
	DO_CODE_FILENAME = 280,
	DO_CODE_NAME = 288,
	DO_CODE_QUALNAME = 296,
	DO_CODE_LINETABLE = 304,
	DO_CODE_FIRSTLINENO = 312,
	DO_CODE_CODE_ADAPTIVE = 344,
	DO_BYTES_SIZE = 512, /* bytes_object: size, ob_size, ob_sval */
	DO_BYTES_OB_SIZE = 520,
	DO_BYTES_OB_SVAL = 528,
	DO_UNICODE_SIZE = 536, /* unicode_object: size, state, length, asciiobject_size */
	DO_UNICODE_STATE = 544,
	DO_UNICODE_LENGTH = 552,
	DO_UNICODE_ASCII_SIZE = 560,
	DO_END = 584, /* sizeof(_Py_DebugOffsets), 3.13 */
};

size_t py_debug_offsets_size(void)
{
	return DO_END;
}

static uint64_t u64_at(const uint8_t *buf, size_t off)
{
	uint64_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

/* The field at off of a struct whose size is at size_off: it must lie inside the struct (8
 * bytes at most wide) and fit a layout field. Returns the offset or PY_FIELD_NONE. */
static uint16_t field(const uint8_t *buf, size_t off, size_t size_off, unsigned width)
{
	uint64_t v = u64_at(buf, off), size = u64_at(buf, size_off);

	if (v >= PY_FIELD_NONE || v + width > size)
		return PY_FIELD_NONE;
	return (uint16_t)v;
}

int py_layout_from_debug_offsets(const void *buf, size_t len, struct py_layout *out)
{
	const uint8_t *b = buf;
	struct py_layout l = { 0 };
	uint64_t version;
	uint16_t head;

	if (len < DO_END || memcmp(b + DO_COOKIE, "xdebugpy", 8))
		return -EINVAL;
	version = u64_at(b, DO_VERSION);
	if (version >> 32 || (version >> 24) != 3)
		return -EINVAL;
	if (((version >> 16) & 0xff) != 13)
		return -ENOTSUP;
	if (u64_at(b, DO_FREE_THREADED) > 1)
		return -EINVAL;
	if (u64_at(b, DO_FREE_THREADED))
		return -EPROTONOSUPPORT;

	l.version = 0x030d;
	head = field(b, DO_RUNTIME_INTERPRETERS_HEAD, DO_RUNTIME_SIZE, 8);
	if (head == PY_FIELD_NONE ||
	    (uint64_t)head + PY313_MAIN_AFTER_HEAD + 8 > u64_at(b, DO_RUNTIME_SIZE))
		return -EINVAL;
	l.runtime_interp_main = head + PY313_MAIN_AFTER_HEAD;
	l.runtime_tss_key = PY313_RUNTIME_TSS_KEY;
	if ((uint64_t)PY313_RUNTIME_TSS_KEY + 8 > u64_at(b, DO_RUNTIME_SIZE))
		return -EINVAL;
	l.interp_tstate_head = field(b, DO_INTERP_THREADS_HEAD, DO_INTERP_SIZE, 8);
	l.tstate_next = field(b, DO_TSTATE_NEXT, DO_TSTATE_SIZE, 8);
	l.tstate_interp = field(b, DO_TSTATE_INTERP, DO_TSTATE_SIZE, 8);
	l.tstate_frame = field(b, DO_TSTATE_CURRENT_FRAME, DO_TSTATE_SIZE, 8);
	l.cframe_frame = PY_FIELD_NONE;
	l.tstate_thread_id = field(b, DO_TSTATE_THREAD_ID, DO_TSTATE_SIZE, 8);
	l.frame_previous = field(b, DO_FRAME_PREVIOUS, DO_FRAME_SIZE, 8);
	l.frame_code = field(b, DO_FRAME_EXECUTABLE, DO_FRAME_SIZE, 8);
	l.frame_lasti = field(b, DO_FRAME_INSTR_PTR, DO_FRAME_SIZE, 8);
	l.frame_entry = field(b, DO_FRAME_OWNER, DO_FRAME_SIZE, 1);
	l.lasti_kind = PY_LASTI_KIND_PTR;
	l.entry_kind = PY_ENTRY_KIND_OWNER;
	l.owner_cstack = PY313_FRAME_OWNED_BY_CSTACK;
	l.code_filename = field(b, DO_CODE_FILENAME, DO_CODE_SIZE, 8);
	l.code_name = field(b, DO_CODE_NAME, DO_CODE_SIZE, 8);
	l.code_qualname = field(b, DO_CODE_QUALNAME, DO_CODE_SIZE, 8);
	l.code_firstlineno = field(b, DO_CODE_FIRSTLINENO, DO_CODE_SIZE, 4);
	l.code_linetable = field(b, DO_CODE_LINETABLE, DO_CODE_SIZE, 8);
	/* co_code_adaptive is the flexible array at the end: at most the struct's size. */
	l.code_code = field(b, DO_CODE_CODE_ADAPTIVE, DO_CODE_SIZE, 0);
	l.bytes_size = field(b, DO_BYTES_OB_SIZE, DO_BYTES_SIZE, 8);
	l.bytes_data = field(b, DO_BYTES_OB_SVAL, DO_BYTES_SIZE, 0);
	l.unicode_length = field(b, DO_UNICODE_LENGTH, DO_UNICODE_SIZE, 8);
	l.unicode_state = field(b, DO_UNICODE_STATE, DO_UNICODE_SIZE, 4);
	/* sizeof(PyASCIIObject), inside PyUnicodeObject (the group's size) */
	l.unicode_ascii_data = field(b, DO_UNICODE_ASCII_SIZE, DO_UNICODE_SIZE, 0);
	l.unicode_compact_data = l.unicode_ascii_data + PY313_COMPACT_AFTER_ASCII;

	if (l.interp_tstate_head == PY_FIELD_NONE || l.frame_entry == PY_FIELD_NONE ||
	    l.code_qualname == PY_FIELD_NONE || l.code_code == PY_FIELD_NONE ||
	    l.bytes_size == PY_FIELD_NONE || l.bytes_data == PY_FIELD_NONE ||
	    l.unicode_state == PY_FIELD_NONE || l.unicode_ascii_data == PY_FIELD_NONE ||
	    py_layout_check(&l))
		return -EINVAL;
	*out = l;
	return 0;
}
