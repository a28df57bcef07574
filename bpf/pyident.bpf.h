/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The identity of a Python code object, as the Python walker (bpf/python.bpf.h) computes it
 * in BPF and the agent (agent/python/pycode.c) again when it reads the code object: a
 * 32-bit FNV-1a hash of its first line and of its name (co_qualname on 3.11+, co_name
 * before): the length and, for a compact ASCII string (nearly every identifier), at most the
 * first IGNIS_PY_NAME_BYTES bytes. Other strings keep lazily filled fields where an ASCII
 * one keeps its characters, so only their length counts. A code object freed and
 * its address reused by another is then told apart unless both have the same name and first
 * line, in which case the name shown is still right.
 *
 * Compiles for BPF and natively; includes nothing (the includer provides the __u* types and
 * bpf/profiler.h).
 */
#ifndef IGNIS_BPF_PYIDENT_BPF_H
#define IGNIS_BPF_PYIDENT_BPF_H

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#define IGNIS_FNV32_OFFSET 2166136261U
#define IGNIS_FNV32_PRIME  16777619U

static __always_inline __u32 ignis_fnv32(__u32 h, __u32 v)
{
	int i;

	for (i = 0; i < 4; i++) {
		h ^= (v >> (8 * i)) & 0xff;
		h *= IGNIS_FNV32_PRIME;
	}
	return h;
}

/* name: for an ASCII name (ascii nonzero), at least min(len, IGNIS_PY_NAME_BYTES) bytes of
 * its characters; else not read. */
static __always_inline __u32 ignis_py_identity(const __u8 *name, __u64 len, __u32 ascii,
					       __s32 firstlineno)
{
	__u32 h = IGNIS_FNV32_OFFSET, i;

	h = ignis_fnv32(h, (__u32)firstlineno);
	h = ignis_fnv32(h, (__u32)len);
	h = ignis_fnv32(h, ascii ? 1 : 0);
	for (i = 0; i < IGNIS_PY_NAME_BYTES; i++) {
		if (!ascii || i >= len)
			break;
		h ^= name[i];
		h *= IGNIS_FNV32_PRIME;
	}
	return h ? h : 1;
}

#endif /* IGNIS_BPF_PYIDENT_BPF_H */
