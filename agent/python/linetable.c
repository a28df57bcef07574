// SPDX-License-Identifier: Apache-2.0
/*
 * Line tables of CPython 3.8-3.13 (linetable.h). Each decoder follows the semantics of the
 * interpreter's own lookup for its version (PyCode_Addr2Line and the address ranges of
 * Objects/codeobject.c), as the version's notes describe them, written from those notes:
 *
 *  3.8-3.9 (Objects/lnotab_notes.txt): lineno = co_firstlineno, addr = 0; for each pair,
 *    addr += byte increment; stop once addr passes the instruction's byte offset; else
 *    lineno += (signed) line increment. Every offset has a line.
 *  3.10 (Objects/lnotab_notes.txt): each pair is a range [end, end + start delta) of byte
 *    offsets; a line delta of -128 gives the range no line and leaves the running line
 *    alone, any other is added to it first. Empty ranges only move the line. Offsets past
 *    the last range have no line.
 *  3.11+ (Objects/locations.md): each entry covers (header & 7) + 1 code units; its line
 *    delta is 0 for the short forms (codes 0-9), code - 10 for the one-line forms (10-12),
 *    a signed varint after the header for "no column" (13) and the long form (14); code 15
 *    has no location and leaves the running line alone. Varints are little-endian 6-bit
 *    chunks, 0x40 meaning "more"; a signed one holds its sign in bit 0.
 */
#include <errno.h>
#include <stdbool.h>

#include "linetable.h"

int linetable_kind_for(unsigned major, unsigned minor, enum linetable_kind *kind)
{
	if (major != 3 || minor < 8 || minor > 13)
		return -ENOTSUP;
	if (minor <= 9)
		*kind = LINETABLE_LNOTAB;
	else if (minor == 10)
		*kind = LINETABLE_PAIRS;
	else
		*kind = LINETABLE_LOCATIONS;
	return 0;
}

static bool add_line(int64_t *line, int64_t delta)
{
	*line += delta;
	return *line >= INT32_MIN && *line <= INT32_MAX;
}

static int lnotab_line(const uint8_t *t, size_t len, int32_t firstlineno, uint64_t offset,
		       int32_t *out)
{
	int64_t line = firstlineno;
	uint64_t addr = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2) {
		addr += t[i];
		if (addr > offset)
			break;
		if (!add_line(&line, (int8_t)t[i + 1]))
			return -EINVAL;
	}
	*out = (int32_t)line;
	return 0;
}

static int pairs_line(const uint8_t *t, size_t len, int32_t firstlineno, uint64_t offset,
		      int32_t *out)
{
	int64_t line = firstlineno;
	uint64_t start, end = 0;
	bool has_line;
	size_t i;

	for (i = 0; i + 1 < len; i += 2) {
		start = end;
		end += t[i];
		has_line = (int8_t)t[i + 1] != -128;
		if (has_line && !add_line(&line, (int8_t)t[i + 1]))
			return -EINVAL;
		if (start == end || offset >= end)
			continue;
		if (!has_line)
			return -ENOENT;
		*out = (int32_t)line;
		return 0;
	}
	return -ENOENT;
}

/* An unsigned varint of locations.md at t[*i], within len; at most 36 bits. */
static int read_varint(const uint8_t *t, size_t len, size_t *i, uint64_t *v)
{
	unsigned shift = 0;
	uint8_t b;

	*v = 0;
	do {
		if (*i >= len || shift > 30 || (t[*i] & 0x80))
			return -EINVAL;
		b = t[(*i)++];
		*v |= (uint64_t)(b & 0x3f) << shift;
		shift += 6;
	} while (b & 0x40);
	return 0;
}

static int locations_line(const uint8_t *t, size_t len, int32_t firstlineno, uint64_t unit,
			  int32_t *out)
{
	int64_t line = firstlineno, delta;
	uint64_t start, end = 0, v;
	unsigned code;
	size_t i = 0, j;
	int err;

	while (i < len) {
		if (!(t[i] & 0x80))
			return -EINVAL;
		code = (t[i] >> 3) & 15;
		start = end;
		end += (t[i] & 7) + 1;
		j = i + 1;
		if (code == 13 || code == 14) {
			err = read_varint(t, len, &j, &v);
			if (err)
				return err;
			delta = v & 1 ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
		} else if (code >= 10 && code <= 12) {
			delta = code - 10;
		} else {
			delta = 0;
		}
		if (!add_line(&line, delta))
			return -EINVAL;
		if (unit >= start && unit < end) {
			if (code == 15)
				return -ENOENT;
			*out = (int32_t)line;
			return 0;
		}
		/* The rest of the entry: bytes without the header bit. */
		for (i = j; i < len && !(t[i] & 0x80); i++)
			;
	}
	return -ENOENT;
}

int linetable_line(enum linetable_kind kind, const uint8_t *table, size_t len, int32_t firstlineno,
		   uint32_t unit, int32_t *line)
{
	if (!table && len)
		return -EINVAL;
	switch (kind) {
	case LINETABLE_LNOTAB:
		return lnotab_line(table, len, firstlineno, 2 * (uint64_t)unit, line);
	case LINETABLE_PAIRS:
		return pairs_line(table, len, firstlineno, 2 * (uint64_t)unit, line);
	case LINETABLE_LOCATIONS:
		return locations_line(table, len, firstlineno, unit, line);
	}
	return -EINVAL;
}
