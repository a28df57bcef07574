/* SPDX-License-Identifier: Apache-2.0 */
/* Definitions every agent file uses. */
#ifndef IGNIS_IGNIS_H
#define IGNIS_IGNIS_H

#include <stddef.h>
#include <stdint.h>

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

#define __must_check __attribute__((warn_unused_result))

#define NSEC_PER_SEC  UINT64_C(1000000000)
#define NSEC_PER_MSEC UINT64_C(1000000)
#define NSEC_PER_USEC UINT64_C(1000)

/* Free *p and set it to NULL. */
#define zfree(p)             \
	do {                 \
		free(*(p));  \
		*(p) = NULL; \
	} while (0)

/* Close *fd if open and set it to -1. */
#define zclose(fd)                    \
	do {                          \
		if (*(fd) >= 0)       \
			close(*(fd)); \
		*(fd) = -1;           \
	} while (0)

/* Kernel-style integer types belong to the BPF side and to libbpf call sites only. */
#ifndef IGNIS_ALLOW_KERNEL_TYPES
#pragma GCC poison u8 u16 u32 u64 s8 s16 s32 s64
#endif

/* Grow *arr to hold at least want elements of elem_size bytes, doubling; overflow-checked.
 * Returns 0 or -ENOMEM (then *arr and *cap are unchanged).
 * Keep in sync with sym_grow() in symbolizer/symtab.c: the symbolizer links nothing of the
 * agent (STYLE.md section 1), so each side has its copy; tests/unit/test_ignis.c holds the
 * two to the same behaviour. */
int grow_array(void **arr, size_t *cap, size_t want, size_t elem_size) __must_check;

/*
 * libbpf's opts habit: an options struct starts with size_t sz, set by the caller to
 * sizeof(its struct). The agent's modules are built together, so any other size (or a NULL
 * opts) is a caller that did not set sz: the constructor refuses it with EINVAL.
 */
#define OPTS_VALID(opts) ((opts) && (opts)->sz == sizeof(*(opts)))

/* CLOCK_MONOTONIC and CLOCK_REALTIME in ns. */
uint64_t now_mono_ns(void);
uint64_t now_real_ns(void);

#endif /* IGNIS_IGNIS_H */
