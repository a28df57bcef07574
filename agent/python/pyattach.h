/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Attaching to a CPython process: finding its interpreter, checking that the layout this
 * agent has for its version is the one its memory shows, and what the BPF walker needs to
 * find a sampled thread's own thread state.
 *
 * A process runs CPython when its executable, or a libpython3.X.so it maps, defines both
 * _PyRuntime and _PyEval_EvalFrameDefault. The version comes from Py_Version (3.11+) or the
 * library's name (libpython3.X.so), else from the executable's; the eval loop's ranges are
 * _PyEval_EvalFrameDefault's extent and, where the symbol table has it, its .cold part.
 * The thread-state key is the interpreter's gilstate TSS key; its data's place in glibc's
 * struct pthread is found by looking for each known thread's PyThreadState in that thread's
 * own struct pthread (whose address is the tstate's thread_id). Then the main thread's
 * frames are walked from here: every frame's code object must have ob_type == &PyCode_Type.
 */
#ifndef IGNIS_PYATTACH_H
#define IGNIS_PYATTACH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "pylayout.h"

struct proc_image;
struct symbolizer;

/* Why a process is not attached: one counter each (ignis_python_processes_total{result}). */
enum py_attach_result {
	PY_ATTACH_OK = 0,
	PY_ATTACH_NOT_PYTHON,	   /* no object defines _PyRuntime and _PyEval_EvalFrameDefault */
	PY_ATTACH_NOT_READY,	   /* the interpreter is not initialized yet: try again later */
	PY_ATTACH_UNSUPPORTED,	   /* a version without a layout (< 3.8, > 3.13) */
	PY_ATTACH_FREE_THREADED,   /* a free-threaded (no GIL) build: not supported */
	PY_ATTACH_LAYOUT_MISMATCH, /* the memory does not check out for the layout */
	PY_ATTACH_TLS_UNSUPPORTED, /* the TSS key's data was not found (not glibc, key >= 32) */
	PY_ATTACH_READ_FAULT,	   /* its memory could not be read (gone, denied) */
	PY_ATTACH_NR,
};

/* Short names of the results, for logs and the metric's label ("ok", "not_ready", ...). */
const char *py_attach_result_name(enum py_attach_result r);

struct py_interp {
	uint32_t version_hex;	 /* PY_VERSION_HEX, e.g. 0x030b07f0; minor-only: 0x030b0000 */
	uint64_t runtime;	 /* runtime address of _PyRuntime */
	uint64_t code_type;	 /* runtime address of PyCode_Type */
	uint64_t eval_start[2];	 /* runtime [start, end) of _PyEval_EvalFrameDefault and its */
	uint64_t eval_end[2];	 /* .cold part; unused: 0, 0 */
	uint32_t tss_key;	 /* the gilstate TSS key, < 32 */
	int32_t tss_data_off;	 /* fs base + tss_data_off + 16 * tss_key: a thread's tstate */
	uint32_t threads;	 /* thread states seen at attach */
	uint32_t frames_checked; /* main thread frames whose code object checked out */
	const char *object;	 /* borrowed from img: the file that holds the interpreter */
	bool changing;		 /* on a failure: it was read from what the interpreter
				  * changes as it runs (thread states, TSS slots, frames), which
				  * an instant of its start-up or of a thread's makes fail: try
				  * again. False for what does not change (version, layout,
				  * symbols) and for a process gone or denied. */
	struct py_layout layout;
};

/*
 * Attach to the process image img (its captured mappings, borrowed, whose objects s
 * parses), reading its memory as pid (the host's pid of it). Returns PY_ATTACH_OK with *out
 * filled (out->object borrowed from img), or why not (and out->changing: whether trying again
 * may pass); *detail (may be NULL) gets a static
 * text saying more for the log. Reads at most a few hundred KiB; nothing read is trusted:
 * every loop and read is bounded.
 */
enum py_attach_result py_attach(pid_t pid, const struct proc_image *img, struct symbolizer *s,
				struct py_interp *out, const char **detail);

/*
 * As py_attach(), with layout instead of the version's own (the table, or 3.13's
 * _Py_DebugOffsets), checked against the memory the same way: for tests, and for a layout
 * from elsewhere. NULL: the version's own.
 */
enum py_attach_result py_attach_layout(pid_t pid, const struct proc_image *img,
				       struct symbolizer *s, const struct py_layout *layout,
				       struct py_interp *out, const char **detail);

#endif /* IGNIS_PYATTACH_H */
