/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The OpenTelemetry profiles encoder (encoder.h), EXPERIMENTAL: a queued profile as one
 * OTLP/HTTP export, POST {url}/v1development/profiles, Content-Type application/x-protobuf,
 * gzip'd (Content-Encoding: gzip), an ExportProfilesServiceRequest of opentelemetry-proto
 * v1.11.0 (agent/proto/otlp_profiles.proto says why that release). The Collector's OTLP
 * receiver chooses its decoder by Content-Type (415 for anything else); the signal's version
 * is the path's "v1development": v1.11.0 defines no version header (one is proposed in
 * open-telemetry/opentelemetry-proto#857, unreleased). The only file that sees the
 * protobuf-c code generated from the schema.
 *
 * The window's pprof is decoded (pprof_decode()) and re-expressed:
 *  - one ResourceProfiles for the target, its labels as resource attributes: service_name
 *    as service.name, hostname as host.name, namespace, pod and container as
 *    k8s.namespace.name, k8s.pod.name and k8s.container.name, container_id as container.id,
 *    static labels under their own names (__name__ is the sample type's business);
 *  - one ScopeProfiles (scope "ignis") with one Profile per sample type (samples/count,
 *    cpu/nanoseconds, and offcpu/nanoseconds and wall/nanoseconds where the window has
 *    off-CPU time), each sample carrying that one value, period cpu/nanoseconds;
 *  - the dictionary: the pprof's strings, mappings, functions and locations at the same
 *    indexes (element 0 the zero value in every table), one stack per distinct location
 *    list, the sample labels as attributes (comm as process.executable.name, thread_name as
 *    thread.name), each mapping's GNU build id as process.executable.build_id.gnu.
 *
 * Answers (OTLP specification, "OTLP/HTTP Response"): 2xx sent (a partial success that
 * rejected every profile is dropped, counted); 429, 502, 503 and 504 retried; every other
 * status dropped, counted, with the google.rpc.Status message logged. A server built for
 * another opentelemetry-proto release is expected to answer 400: dropped, never retried.
 */
#ifndef IGNIS_OTLP_H
#define IGNIS_OTLP_H

#include <stddef.h>
#include <stdint.h>

#include "common/ignis.h"
#include "encoder.h"
#include "uploader.h"

#define OTLP_PROFILES_PATH "/v1development/profiles"
#define OTLP_PROTO_RELEASE "v1.11.0"

/*
 * The ExportProfilesServiceRequest for u (its pprof decoded), not compressed: *out malloc'd,
 * *nr_profiles the profiles in it. Returns 0, -ENOMEM, or -EINVAL / -EPROTONOSUPPORT /
 * -E2BIG when u's pprof cannot be read (why says it, a static string).
 */
int otlp_export_body(const struct upload *u, uint8_t **out, size_t *len, size_t *nr_profiles,
		     const char **why) __must_check;

/* Classify an answer: status (0: transport failure err) and the body (len bytes). */
void otlp_classify(long status, int err, const uint8_t *body, size_t len, size_t nr_profiles,
		   struct send_result *r);

/* The encoder (encoder.h). */
extern const struct encoder_ops otlp_encoder;

#endif /* IGNIS_OTLP_H */
