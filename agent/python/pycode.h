/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Python code objects, read from the process's memory when the BPF walker first meets them
 * (a PROC_EVENT_PY_CODE), and kept under the serial its frames carry: so a process that exits
 * before the window is drained keeps its names. A code object whose identity (bpf/pyident.bpf.h)
 * no longer matches when it is read was freed and its address reused: it gets no name.
 *
 * What is kept per code object: its name (co_qualname on 3.11+, co_name before) and file name
 * (co_filename) as UTF-8, each at most PYCODE_STR_MAX - 1 bytes (longer ones are cut at a
 * character boundary; code points that are no Unicode scalar value, and NUL, become U+FFFD),
 * co_firstlineno, and its line table (at most PYCODE_TABLE_MAX bytes; a larger one is not
 * kept and the frames of that code object have line 0). Entries are shared: a second serial
 * naming the same (image, address, identity) costs no read.
 */
#ifndef IGNIS_PYCODE_H
#define IGNIS_PYCODE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/ignis.h"
#include "pylayout.h"

struct pycode_cache;

/* Counters since pycode_cache__new(). */
struct pycode_stats {
	uint64_t read;	      /* code objects read */
	uint64_t shared;      /* serials that named a code object read before (same process,
			     * address and identity) */
	uint64_t stale;	      /* identity mismatch: freed and reused before it was read */
	uint64_t from_walker; /* named from the walker's copies: read too late, no lines */
	uint64_t faults;      /* reads that failed (process gone, bad pointer, not a code object) */
	uint64_t malformed;   /* strings or line tables that did not check out */
	uint64_t over_budget; /* not read: the cache's budget was spent */
	uint64_t no_lines;    /* kept without a line table (over PYCODE_TABLE_MAX) */
	uint64_t held;	      /* code objects held now */
	uint64_t serials;     /* serials held now */
	uint64_t bytes;	      /* their memory, bytes */
};

#define PYCODE_STR_MAX	 1024	     /* bytes of a kept name or file name, with its NUL */
#define PYCODE_TABLE_MAX (64U << 10) /* bytes of a kept line table */

/* What a Python frame shows. Strings are borrowed until the cache forgets its process. */
struct pycode_frame {
	const char *name;     /* co_qualname (3.11+) or co_name, UTF-8 */
	const char *filename; /* co_filename, UTF-8 */
	int32_t firstlineno;
	int32_t line; /* of the frame's instruction, 0 when unknown */
};

/* What the walker saw of a code object when it announced it (its copies of compact ASCII
 * names, "" otherwise): names it when it can no longer be read. */
struct pycode_seen {
	const char *name;
	const char *filename;
	int32_t firstlineno;
};

/* max_bytes: a budget for all processes' code objects; past it new ones are not read (counted). */
struct pycode_cache *pycode_cache__new(uint64_t max_bytes);
void pycode_cache__free(struct pycode_cache *c);

/*
 * Read the code object at address code of process pid (a process image known by its
 * (tgid, start_time, exec_id)) as the walker met it (identity), and remember it under
 * serial (never 0; a serial announced again names the new code object). layout is the
 * interpreter's (only read during the call), version_hex its PY_VERSION_HEX, code_type the
 * runtime address of its PyCode_Type: the object's ob_type must be that. Returns 0 (read, or
 * shared with an earlier serial), -ESTALE (identity mismatch: the name or first line read
 * now is not what the walker hashed), -EFAULT/-ESRCH/-EPERM (unreadable), -EINVAL (not a code
 * object, malformed strings, a bad argument), -ENOTSUP (a version without a line-table
 * format), -ENOSPC (over the budget), -ENOMEM. Every outcome is counted. When the object
 * cannot be read as the walker saw it (stale, gone, unreadable) but seen (may be NULL) has a
 * name, the serial is named from seen, without a line table (counted as from_walker), and
 * 0 is returned.
 */
int pycode_cache__add(struct pycode_cache *c, pid_t pid, uint32_t tgid, uint64_t start_time,
		      uint32_t exec_id, const struct py_layout *layout, uint32_t version_hex,
		      uint64_t code_type, uint64_t serial, uint64_t code, uint32_t identity,
		      const struct pycode_seen *seen) __must_check;

/*
 * The frame for serial at instruction lasti (code units; IGNIS_PY_LASTI_NONE: unknown) of
 * the image (tgid, start_time, exec_id). False when the serial is unknown or its code object
 * could not be read.
 */
bool pycode_cache__frame(struct pycode_cache *c, uint32_t tgid, uint64_t start_time,
			 uint32_t exec_id, uint64_t serial, uint32_t lasti,
			 struct pycode_frame *out);

/* Forget an image's code objects (after the window in which it exited was drained). */
void pycode_cache__forget(struct pycode_cache *c, uint32_t tgid, uint64_t start_time,
			  uint32_t exec_id);

void pycode_cache__stats(const struct pycode_cache *c, struct pycode_stats *stats);

#endif /* IGNIS_PYCODE_H */
