// SPDX-License-Identifier: Apache-2.0
/*
 * JIT symbol maps: /tmp/perf-PID.map, one line per function a runtime generated,
 *     START SIZE NAME
 * with START and SIZE in hex (with or without 0x) and NAME the rest of the line (Linux
 * tools/perf/Documentation/jit-interface.txt). Written by Node.js --perf-basic-prof, the
 * JVM's perf-map-agent, Python >= 3.12 -X perf and others; a runtime that reuses memory
 * appends a new line for the same addresses, and the later line wins.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer_internal.h"

struct perfmap_entry {
	uint64_t start, end;
	uint32_t name; /* offset in names */
	uint32_t seq;  /* line order: the later line wins */
};

struct sym_perfmap {
	struct perfmap_entry *entries;
	size_t nr;
	char *names;
	size_t bytes;
	uint64_t malformed;
};

static int cmp_entry(const void *a, const void *b)
{
	const struct perfmap_entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static bool parse_hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; s < end; s++, digits++) {
		int d = *s >= '0' && *s <= '9' ? *s - '0' :
			*s >= 'a' && *s <= 'f' ? *s - 'a' + 10 :
			*s >= 'A' && *s <= 'F' ? *s - 'A' + 10 :
						 -1;

		if (d < 0)
			break;
		if (digits >= 16)
			return false;
		v = v << 4 | (uint64_t)d;
	}
	if (!digits)
		return false;
	*p = s;
	*out = v;
	return true;
}

struct sym_perfmap *sym_perfmap__parse(const char *text, size_t len)
{
	struct sym_perfmap *m = calloc(1, sizeof(*m));
	size_t cap = 0, names_len = 0, names_cap = 0;
	const char *line = text, *end = text + len;
	uint32_t seq = 0;

	if (!m)
		return NULL;
	while (line < end) {
		const char *eol = memchr(line, '\n', (size_t)(end - line)), *p = line, *name;
		uint64_t start, size;
		size_t nlen;

		if (!eol)
			eol = end;
		if (!parse_hex(&p, eol, &start) || p >= eol || *p++ != ' ' ||
		    !parse_hex(&p, eol, &size) || p >= eol || *p++ != ' ' || !size ||
		    start > UINT64_MAX - size) {
			if (eol > line)
				m->malformed++;
			goto next;
		}
		name = p;
		nlen = (size_t)(eol - name);
		if (nlen && name[nlen - 1] == '\r')
			nlen--;
		nlen = strnlen(name, nlen); /* a NUL ends the name */
		if (nlen >= SYM_MAX_NAME)
			nlen = SYM_MAX_NAME - 1;
		if (!nlen || m->nr >= SYM_MAX_SYMBOLS || names_len + nlen + 1 > UINT32_MAX) {
			m->malformed++;
			goto next;
		}
		if (sym_grow((void **)&m->entries, &cap, m->nr + 1, sizeof(*m->entries)) ||
		    sym_grow((void **)&m->names, &names_cap, names_len + nlen + 1, 1))
			goto err_out;
		memcpy(m->names + names_len, name, nlen);
		m->names[names_len + nlen] = '\0';
		m->entries[m->nr++] =
			(struct perfmap_entry){ start, start + size, (uint32_t)names_len, seq++ };
		names_len += nlen + 1;
next:
		line = eol + 1;
	}
	if (m->nr)
		qsort(m->entries, m->nr, sizeof(*m->entries), cmp_entry);
	m->bytes = sizeof(*m) + cap * sizeof(*m->entries) + names_cap;
	return m;

err_out:
	sym_perfmap__free(m);
	errno = ENOMEM;
	return NULL;
}

void sym_perfmap__free(struct sym_perfmap *m)
{
	if (!m)
		return;
	free(m->entries);
	free(m->names);
	free(m);
}

size_t sym_perfmap__bytes(const struct sym_perfmap *m)
{
	return m ? m->bytes : 0;
}

size_t sym_perfmap__count(const struct sym_perfmap *m, uint64_t *malformed)
{
	if (malformed)
		*malformed = m ? m->malformed : 0;
	return m ? m->nr : 0;
}

/* How far back to look for a longer entry that also covers the address. */
#define PERFMAP_LOOKBACK 16

const char *sym_perfmap__lookup(const struct sym_perfmap *m, uint64_t addr, uint64_t *start)
{
	const struct perfmap_entry *best = NULL;
	size_t lo, k;

	if (!m || !m->nr)
		return NULL;
	lo = sym_upper_bound(m->entries, m->nr, sizeof(*m->entries), addr);
	for (k = 0; k < PERFMAP_LOOKBACK && lo > k; k++) {
		const struct perfmap_entry *e = &m->entries[lo - 1 - k];

		if (addr < e->end && (!best || e->seq > best->seq))
			best = e;
	}
	if (!best)
		return NULL;
	if (start)
		*start = best->start;
	return m->names + best->name;
}
