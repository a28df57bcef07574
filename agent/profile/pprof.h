/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pprof encoding: a built profile (profile.h) to profile.proto bytes (github.com/google/pprof,
 * proto/profile.proto), gzip-compressed as every pprof consumer expects. The only file that
 * sees the protobuf-c code generated from agent/proto/profile.proto.
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

#endif /* IGNIS_PPROF_H */
