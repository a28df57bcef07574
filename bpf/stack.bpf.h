/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Stack hashing for the stacks maps (DESIGN.md requirement 3).
 *
 * A stack is stored under our own 64-bit hash of its frames, never in a
 * BPF_MAP_TYPE_STACK_TRACE, whose bucket collisions silently drop or overwrite stacks. The
 * sampler compares the frames of an existing entry before it reuses its id, and on a
 * mismatch probes one alternative slot derived from the first; only when both hold other
 * stacks is the sample dropped, and counted (STAT_DROP_STACK_COLLISION).
 *
 * The helpers are plain C over __u64 so that they compile natively as well.
 */
#ifndef IGNIS_BPF_STACK_BPF_H
#define IGNIS_BPF_STACK_BPF_H

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* The finalizer of MurmurHash3 (public domain, Austin Appleby): full avalanche of 64 bits. */
static __always_inline __u64 stack_mix64(__u64 x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/*
 * Hash of the first len frames of ips (len <= IGNIS_MAX_STACK_DEPTH). Never returns
 * IGNIS_STACK_NONE, so 0 keeps meaning "no stack".
 */
static __always_inline __u64 stack_hash(const __u64 *ips, __u32 len)
{
	__u64 h = 0x9e3779b97f4a7c15ULL ^ len;
	__u32 i;

	for (i = 0; i < IGNIS_MAX_STACK_DEPTH; i++) {
		if (i >= len)
			break;
		h ^= ips[i];
		h *= 0x87c37b91114253d5ULL;
		h = (h << 31) | (h >> 33);
	}
	h = stack_mix64(h);
	return h ? h : 1;
}

/* The second slot probed when the first holds another stack. Never IGNIS_STACK_NONE. */
static __always_inline __u64 stack_hash_alt(__u64 h)
{
	__u64 a = stack_mix64(h ^ 0x4cf5ad432745937fULL);

	return a ? a : 2;
}

/* 1 when a and b hold the same frames. */
static __always_inline int stack_equal(const struct ignis_stack *a, const struct ignis_stack *b)
{
	__u32 i;

	if (a->len != b->len)
		return 0;
	for (i = 0; i < IGNIS_MAX_STACK_DEPTH; i++) {
		if (i >= a->len)
			break;
		if (a->ips[i] != b->ips[i])
			return 0;
	}
	return 1;
}

#endif /* IGNIS_BPF_STACK_BPF_H */
