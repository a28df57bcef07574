/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pprof encoding and decoding: a built profile (profile.h) to profile.proto bytes
 * (github.com/google/pprof, proto/profile.proto), gzip-compressed as every pprof consumer
 * expects, and back. The only file that sees the protobuf-c code generated from
 * agent/proto/profile.proto.
 */
#ifndef IGNIS_PPROF_H
#define IGNIS_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include "common/ignis.h"

struct profile;

/*
 * Encode p as a Profile message. *out is malloc'd (the caller frees) and holds *len bytes.
 * gzip_level: -1 for no compression, else 1..9 (zlib levels). Returns 0 or -errno
 * (-ENOMEM; -EIO if zlib fails).
 */
int pprof_encode(const struct profile *p, int gzip_level, uint8_t **out, size_t *len) __must_check;

/* gzip-compress (RFC 1952) len bytes. *out is malloc'd. Returns 0 or -errno. */
int gzip_compress(const uint8_t *in, size_t len, int level, uint8_t **out,
		  size_t *out_len) __must_check;

/* Largest profile pprof_decode() inflates a gzip'd file to (bytes). */
#define PPROF_MAX_INFLATED (512u << 20)

/*
 * Decode a pprof profile, gzip'd (RFC 1952) or not, into a new profile (*out; the caller
 * frees it with profile__free()). Every reference is checked (string indexes, mapping,
 * location and function ids), so hostile or truncated bytes fail cleanly. The sample types
 * map onto profile.h's values: samples/count, cpu/nanoseconds (from the count and the period
 * when absent) and offcpu/nanoseconds; a profile with none of them (a heap profile, say) is
 * foreign. Ids are renumbered densely; identical locations, functions and samples merge.
 * Returns 0 or -errno: -EINVAL when the bytes are not a valid pprof (the reason in why, a
 * static string), -EPROTONOSUPPORT for a foreign profile, -E2BIG past PPROF_MAX_INFLATED or
 * a table cap, -ENOMEM.
 */
int pprof_decode(const uint8_t *buf, size_t len, struct profile **out,
		 const char **why) __must_check;

#endif /* IGNIS_PPROF_H */
