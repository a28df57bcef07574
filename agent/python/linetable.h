/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The line of a Python instruction from its code object's line table, for CPython 3.8-3.13.
 * Pure decoders over bytes the caller read from a process: every table is hostile input, so
 * a decoder never reads past len, bounds its arithmetic and says when a table does not check
 * out. Instructions are named in code units (2 bytes each, the unit of IGNIS_USER_IP_PY's
 * lasti) from the start of the bytecode.
 *
 * The three formats, as CPython documents them (files of github.com/python/cpython):
 *  - 3.8-3.9: co_lnotab, Objects/lnotab_notes.txt of those versions: pairs (byte increment,
 *    line increment) of unsigned byte offsets and, since 3.6, signed line increments;
 *  - 3.10: co_linetable, Objects/lnotab_notes.txt of 3.10: pairs (start delta, line delta)
 *    over byte offsets, each pair an address range; a line delta of -128 means "no line";
 *  - 3.11+: co_linetable as a location table, Objects/locations.md (3.11, 3.12, 3.13): one
 *    entry per run of code units, a header byte 0x80 | code << 3 | (length - 1) then its
 *    varints.
 */
#ifndef IGNIS_LINETABLE_H
#define IGNIS_LINETABLE_H

#include <stddef.h>
#include <stdint.h>

#include "common/ignis.h"

enum linetable_kind {
	LINETABLE_LNOTAB,    /* 3.8-3.9 co_lnotab */
	LINETABLE_PAIRS,     /* 3.10 co_linetable */
	LINETABLE_LOCATIONS, /* 3.11+ co_linetable */
};

/*
 * The format of CPython major.minor's table. Returns 0 with *kind set, or -ENOTSUP for a
 * version before 3.8 (whose lnotab has unsigned line increments) or after 3.13 (not checked).
 */
int linetable_kind_for(unsigned major, unsigned minor, enum linetable_kind *kind) __must_check;

/*
 * The line of the instruction at code unit `unit` of a code object whose first line is
 * firstlineno and whose table holds len bytes at table. Returns 0 with *line set; -ENOENT
 * when the instruction has no line (a "no line" entry, or an offset the table does not
 * reach: 3.10+); -EINVAL when the table is malformed where the walk read it (3.11+: an entry
 * without its header bit or cut short; any: a line beyond int32). The walk is O(len).
 */
int linetable_line(enum linetable_kind kind, const uint8_t *table, size_t len, int32_t firstlineno,
		   uint32_t unit, int32_t *line) __must_check;

#endif /* IGNIS_LINETABLE_H */
