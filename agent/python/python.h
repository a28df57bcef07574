/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Python processes: the userspace half of the Python walker (bpf/python.bpf.h). A captured
 * process image is attached when it runs CPython (agent/python/pyattach.h) — at once, or,
 * while its interpreter is still starting, again a few times over its first seconds — and
 * published in py_procs for the walker; the code objects the walker announces are read
 * while the process lives (agent/python/pycode.h); the window builder names Python frames
 * through python__frame(). An image that exits or execs leaves py_procs at once and its code
 * objects after the window it exited in has been drained.
 *
 * Runs on the agent's main thread.
 */
#ifndef IGNIS_PYTHON_H
#define IGNIS_PYTHON_H

#include <stdbool.h>
#include <stdint.h>

#include "pyattach.h"
#include "pycode.h"

struct proc_image;
struct proctab;
struct py_code_event;
struct symbolizer;

struct python_opts {
	struct proctab *proctab; /* the images to attach (borrowed) */
	int procs_fd;		 /* py_procs (borrowed) */
	uint32_t max_procs;	 /* its entries */
	struct symbolizer *symbolizer;
	uint64_t max_code_bytes; /* budget of the code-object cache, bytes */
};

/* Counters since python__new(), and what is held now. */
struct python_stats {
	uint64_t seen;			/* process images that run CPython */
	uint64_t results[PY_ATTACH_NR]; /* final attach results, by reason (OK: attached) */
	uint64_t retries;		/* attach attempts again (not ready, or a mismatch
					 * while it starts) */
	uint64_t attached;		/* images attached now */
	uint64_t publish_errors;	/* py_procs updates that failed (full) */
	uint64_t code_events;		/* code objects announced by the walker */
	uint64_t code_unknown;		/* ... of images not attached (gone, or exec'd) */
	struct pycode_stats code;
};

struct python;

/* Returns NULL with errno set. */
struct python *python__new(const struct python_opts *opts);
void python__free(struct python *py);

/* An image's mappings were (re)captured: attach it if it runs CPython and is not attached. */
void python__captured(struct python *py, const struct proc_image *img);

/* The image (tgid, start_time) exited, or exec'd away from every image but keep_exec_id
 * (NULL: any): unpublish it now, forget its code objects after window `window` is drained. */
void python__gone(struct python *py, uint32_t tgid, uint64_t start_time,
		  const uint32_t *keep_exec_id, uint64_t window);

/* A code object the walker announced: read it now. Returns 0 (errors are counted). */
int python__code_event(struct python *py, const struct py_code_event *ev);

/* Retry the attaches that are due; returns the milliseconds until the next one is, or -1. */
int python__poll(struct python *py);

/* Window `drained` has been drained: forget what images gone in it or before held. */
void python__release(struct python *py, uint64_t drained);

/* The frame of img for serial at lasti (a Python stack slot), false when it has no name. */
bool python__frame(struct python *py, const struct proc_image *img, uint64_t serial, uint32_t lasti,
		   struct pycode_frame *out);

void python__stats(const struct python *py, struct python_stats *stats);

struct ignis_py_proc;
struct proc_id;
/* The walker's py_procs entry (bpf/profiler.h) for an interpreter attached as image id. */
void python_bpf_proc(const struct proc_id *id, const struct py_interp *in,
		     struct ignis_py_proc *out);

#endif /* IGNIS_PYTHON_H */
