// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "ignis.h"

/* Keep in sync with sym_grow() in symbolizer/symtab.c (see ignis.h). */
int grow_array(void **arr, size_t *cap, size_t want, size_t elem_size)
{
	size_t n = *cap ? *cap : 16;
	void *p;

	if (want <= *cap)
		return 0;
	while (n < want) {
		if (n > SIZE_MAX / 2)
			return -ENOMEM;
		n *= 2;
	}
	p = reallocarray(*arr, n, elem_size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = n;
	return 0;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

uint64_t now_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t now_real_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}
