/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Parca encoder (encoder.h): a queued profile as one WriteRaw call,
 * parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw over gRPC (grpc.c), with one
 * series (the target's labels, sorted by name as Prometheus label sets are, names outside
 * [A-Za-z0-9_] turned to '_' as Parca's label validation requires) and one sample (the
 * window's gzip'd pprof, which Parca inflates itself). The only file that sees the protobuf-c
 * code generated from agent/proto/parca.proto. A bearer token (Polar Signals Cloud) goes as
 * the authorization metadata through http.c.
 */
#ifndef IGNIS_PARCA_H
#define IGNIS_PARCA_H

#include <stddef.h>
#include <stdint.h>

#include "common/ignis.h"
#include "encoder.h"
#include "uploader.h"

#define PARCA_WRITE_RAW "/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw"

/* The WriteRawRequest bytes for u: *out malloc'd. Returns 0 or -ENOMEM. */
int parca_write_raw_body(const struct upload *u, uint8_t **out, size_t *len) __must_check;

/* The encoder (encoder.h). */
extern const struct encoder_ops parca_encoder;

#endif /* IGNIS_PARCA_H */
