/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPython's struct layouts, per minor version (3.8 to 3.12 from a table; 3.13's from the
 * _Py_DebugOffsets the interpreter carries at the start of _PyRuntime). Offsets are in bytes;
 * IGNIS_PY_NONE (0xffff) marks a field the version does not have. The sources are CPython's
 * headers of each version (Include/cpython/, Include/internal/pycore_*), cited per row in
 * pylayout.c, and checked against the DWARF of pyenv's builds by tests/unit/test_pylayout.c.
 */
#ifndef IGNIS_PYLAYOUT_H
#define IGNIS_PYLAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ignis.h"

#define PY_FIELD_NONE 0xffff

/* How a frame says where it is and which frames one eval-loop call runs: as the BPF side's
 * PY_LASTI_* and PY_ENTRY_* (bpf/profiler.h), checked at compile time where both are seen. */
enum py_lasti_kind { PY_LASTI_KIND_INT_BYTES, PY_LASTI_KIND_INT_UNITS, PY_LASTI_KIND_PTR };
enum py_entry_kind { PY_ENTRY_KIND_EVAL, PY_ENTRY_KIND_FLAG, PY_ENTRY_KIND_OWNER };

struct py_layout {
	uint32_t version; /* major << 8 | minor, e.g. 0x030b */

	/* _PyRuntimeState */
	uint16_t runtime_interp_main; /* interpreters.main */
	uint16_t runtime_tss_key;     /* gilstate.autoTSSkey (3.8-3.11), autoTSSkey (3.12+):
					   * a Py_tss_t { int _is_initialized; pthread_key_t _key; } */
	/* PyInterpreterState */
	uint16_t interp_tstate_head; /* tstate_head (3.8-3.10), threads.head (3.11+) */
	/* PyThreadState */
	uint16_t tstate_next;
	uint16_t tstate_interp;
	uint16_t tstate_frame;	   /* frame (3.8-3.10), cframe (3.11-3.12), current_frame (3.13) */
	uint16_t cframe_frame;	   /* _PyCFrame.current_frame (3.11-3.12), else PY_FIELD_NONE */
	uint16_t tstate_thread_id; /* thread_id: the thread's pthread_t */

	/* PyFrameObject (3.8-3.10) or _PyInterpreterFrame (3.11+) */
	uint16_t frame_previous; /* f_back / previous */
	uint16_t frame_code;	 /* f_code / f_executable (3.13) */
	uint16_t frame_lasti;	 /* f_lasti (int) / prev_instr (3.11-3.12) / instr_ptr (3.13) */
	uint16_t frame_entry;	 /* is_entry (3.11), owner (3.12+): one byte; else NONE */
	enum py_lasti_kind lasti_kind;
	enum py_entry_kind entry_kind;
	uint8_t owner_cstack; /* FRAME_OWNED_BY_CSTACK (3.12+), else 0 */

	/* PyCodeObject */
	uint16_t code_filename;
	uint16_t code_name;	   /* co_name */
	uint16_t code_qualname;	   /* co_qualname (3.11+), else NONE */
	uint16_t code_firstlineno; /* an int */
	uint16_t code_linetable;   /* co_lnotab (3.8-3.9), co_linetable (3.10+): a bytes object */
	uint16_t code_code;	   /* co_code_adaptive (3.11+): where the bytecode starts */

	/* PyBytesObject, PyASCIIObject / PyCompactUnicodeObject */
	uint16_t bytes_size;	       /* ob_size */
	uint16_t bytes_data;	       /* ob_sval */
	uint16_t unicode_length;       /* length, in code points */
	uint16_t unicode_state;	       /* the state bit field (an unsigned int) */
	uint16_t unicode_ascii_data;   /* sizeof(PyASCIIObject) */
	uint16_t unicode_compact_data; /* sizeof(PyCompactUnicodeObject) */
};

/* PyASCIIObject.state bits, the same 3.8-3.13: interned (2 bits, 3.8-3.11; 3.12+ too), kind
 * (3 bits), compact, ascii. (Include/cpython/unicodeobject.h) */
#define PY_UNICODE_KIND(state)	  (((state) >> 2) & 7)
#define PY_UNICODE_COMPACT(state) (((state) >> 5) & 1)
#define PY_UNICODE_ASCII(state)	  (((state) >> 6) & 1)

/*
 * The layout of CPython major.minor (3.8 to 3.12) into *out. Returns 0, or -ENOTSUP for a
 * version without a table (3.13+: py_layout_from_debug_offsets()).
 */
int py_layout_for_version(unsigned major, unsigned minor, struct py_layout *out) __must_check;

/*
 * The layout of a 3.13+ interpreter from its _Py_DebugOffsets, the first bytes of its
 * _PyRuntime (Include/internal/pycore_runtime.h, 3.13): buf holds len bytes read from there.
 * Returns 0, -EINVAL when the cookie ("xdebugpy") or a field does not check out, -ENOTSUP
 * for a version it does not know, -EPROTONOSUPPORT for a free-threaded build.
 */
int py_layout_from_debug_offsets(const void *buf, size_t len, struct py_layout *out);

/* Bytes of _PyRuntime that py_layout_from_debug_offsets() needs. */
size_t py_debug_offsets_size(void);

/*
 * Whether the BPF walker can use layout l: every frame field it reads lies below
 * IGNIS_PY_FRAME_READ - 8 and every code object field below IGNIS_PY_CODE_READ - 8
 * (bpf/profiler.h), the fields every version has are there, and lasti_kind and entry_kind
 * fit the fields present, and a name's length and state lie in its header below its
 * characters, under 64 bytes. Returns 0 or -EINVAL.
 */
int py_layout_check(const struct py_layout *l);

#endif /* IGNIS_PYLAYOUT_H */
