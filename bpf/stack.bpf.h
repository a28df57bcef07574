/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Stack ids for the stacks maps (DESIGN.md requirement 3).
 *
 * A stack is stored under a 128-bit hash of its frames, never in a BPF_MAP_TYPE_STACK_TRACE,
 * whose bucket collisions silently drop or overwrite stacks. 128 bits make a collision
 * negligible (2^-128 per pair of distinct stacks), so a sample can reuse an id without reading
 * back the stored frames: on this design's hot path that comparison, up to 1 KiB of cold map
 * memory per stack, cost more than the hashing.
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
 * Two independent 64-bit hashes of the first len frames of ips (len <= IGNIS_MAX_STACK_DEPTH)
 * and of the stack's flags,
 * each a multiply-rotate chain with its own constants and seed, finalized separately. Never
 * returns the all-zero id, which means "no stack".
 */
static __always_inline void stack_hash128(const __u64 *ips, __u32 len, __u32 flags,
					  struct ignis_stack_id *id)
{
	__u64 a = 0x9e3779b97f4a7c15ULL ^ len ^ ((__u64)flags << 40);
	__u64 b = 0x6a09e667f3bcc909ULL ^ ((__u64)len << 32) ^ flags;
	__u32 i;

	for (i = 0; i < IGNIS_MAX_STACK_DEPTH; i++) {
		if (i >= len)
			break;
		a ^= ips[i];
		a *= 0x87c37b91114253d5ULL;
		a = (a << 31) | (a >> 33);
		b += ips[i];
		b *= 0x4cf5ad432745937fULL;
		b = (b << 27) | (b >> 37);
	}
	id->lo = stack_mix64(a);
	id->hi = stack_mix64(b ^ 0x3c6ef372fe94f82bULL);
	if (!id->lo && !id->hi)
		id->lo = 1;
}

#endif /* IGNIS_BPF_STACK_BPF_H */
