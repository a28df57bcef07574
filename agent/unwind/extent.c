// SPDX-License-Identifier: Apache-2.0
/*
 * Extents of a BPF array map: first fit, coalescing, with frees deferred past a grace period
 * (see extent.h). Self-contained, so that its unit test links this file alone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "extent.h"

/* Append e to a list, doubling its room when full. 0 or -ENOMEM (the list is unchanged). */
static int push(struct extent **arr, size_t *nr, size_t *cap, struct extent e)
{
	if (*nr == *cap) {
		size_t want = *cap ? *cap * 2 : 16;
		struct extent *p = reallocarray(*arr, want, sizeof(*p));

		if (!p)
			return -ENOMEM;
		*arr = p;
		*cap = want;
	}
	(*arr)[(*nr)++] = e;
	return 0;
}

int extents__init(struct extents *x, uint32_t size)
{
	memset(x, 0, sizeof(*x));
	return push(&x->free, &x->nr_free, &x->cap_free,
		    (struct extent){ .start = 0, .len = size });
}

void extents__fini(struct extents *x)
{
	free(x->free);
	free(x->deferred);
	memset(x, 0, sizeof(*x));
}

int64_t extents__alloc(struct extents *x, uint32_t len)
{
	size_t i;

	for (i = 0; i < x->nr_free; i++) {
		struct extent *e = &x->free[i];
		uint32_t start = e->start;

		if (e->len < len)
			continue;
		e->start += len;
		e->len -= len;
		if (!e->len) {
			memmove(e, e + 1, (x->nr_free - i - 1) * sizeof(*e));
			x->nr_free--;
		}
		return start;
	}
	return -ENOSPC;
}

int extents__take(struct extents *x, uint32_t start, uint32_t len)
{
	uint64_t end = (uint64_t)start + len;
	size_t i;
	int err;

	for (i = 0; i < x->nr_free; i++) {
		struct extent *e = &x->free[i];
		uint64_t e_end = (uint64_t)e->start + e->len;

		if (e->start > start)
			break;
		if (e_end < end)
			continue;
		if (e->start == start && e_end == end) {
			memmove(e, e + 1, (x->nr_free - i - 1) * sizeof(*e));
			x->nr_free--;
		} else if (e->start == start) {
			e->start += len;
			e->len -= len;
		} else if (e_end == end) {
			e->len -= len;
		} else {
			/* The middle: [e->start, start) stays here, [end, e_end) after it. */
			err = push(&x->free, &x->nr_free, &x->cap_free, (struct extent){ 0, 0 });
			if (err)
				return err;
			e = &x->free[i];
			memmove(e + 2, e + 1, (x->nr_free - i - 2) * sizeof(*e));
			e[1] = (struct extent){ .start = (uint32_t)end,
						.len = (uint32_t)(e_end - end) };
			e->len = start - e->start;
		}
		return 0;
	}
	return -ENOENT;
}

int extents__release(struct extents *x, uint32_t start, uint32_t len)
{
	size_t lo = 0, hi = x->nr_free;
	struct extent *prev, *next;
	int err;

	/* The first free run at or after start. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->free[mid].start < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	prev = lo ? &x->free[lo - 1] : NULL;
	next = lo < x->nr_free ? &x->free[lo] : NULL;
	if (prev && prev->start + prev->len == start) {
		prev->len += len;
		if (next && prev->start + prev->len == next->start) {
			prev->len += next->len;
			memmove(next, next + 1, (x->nr_free - lo - 1) * sizeof(*next));
			x->nr_free--;
		}
		return 0;
	}
	if (next && start + len == next->start) {
		next->start = start;
		next->len += len;
		return 0;
	}
	err = push(&x->free, &x->nr_free, &x->cap_free, (struct extent){ 0, 0 });
	if (err)
		return err;
	memmove(&x->free[lo + 1], &x->free[lo], (x->nr_free - lo - 1) * sizeof(x->free[0]));
	x->free[lo] = (struct extent){ .start = start, .len = len };
	return 0;
}

int extents__defer(struct extents *x, uint32_t start, uint32_t len)
{
	if (!len)
		return 0;
	return push(&x->deferred, &x->nr_deferred, &x->cap_deferred,
		    (struct extent){ .start = start, .len = len });
}

uint64_t extents__deferred(const struct extents *x)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < x->nr_deferred; i++)
		n += x->deferred[i].len;
	return n;
}

int64_t extents__alloc_high(struct extents *x, uint32_t len)
{
	size_t i;

	for (i = x->nr_free; i-- > 0;) {
		struct extent *e = &x->free[i];

		if (e->len < len)
			continue;
		e->len -= len;
		if (!e->len) {
			uint32_t start = e->start;

			memmove(e, e + 1, (x->nr_free - i - 1) * sizeof(*e));
			x->nr_free--;
			return start;
		}
		return (int64_t)e->start + e->len;
	}
	return -ENOSPC;
}

uint64_t extents__free_entries(const struct extents *x)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < x->nr_free; i++)
		n += x->free[i].len;
	return n;
}

uint64_t extents__grace_period(struct extents *x)
{
	uint64_t lost = 0;
	size_t i;

	for (i = 0; i < x->nr_deferred; i++)
		if (extents__release(x, x->deferred[i].start, x->deferred[i].len))
			lost += x->deferred[i].len;
	x->nr_deferred = 0;
	return lost;
}
