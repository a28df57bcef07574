// SPDX-License-Identifier: Apache-2.0
/*
 * gRPC's framing helpers and status mapping (grpc.c) and Parca's WriteRaw request (parca.c),
 * without a network: the calls themselves run against a real gRPC server in
 * tests/integration/test_parca.py.
 */
#include "unit.h"

#include "../../agent/ship/grpc.h"
#include "../../agent/ship/parca.h"
#include "../../agent/profile/targets.h"
#include "../../agent/ship/uploader.h"
#include "parca.pb-c.h"

static void test_decode_message(void **state)
{
	char out[32];

	(void)state;
	grpc_decode_message("bad%20label%3A %E2%9C%93", out, sizeof(out));
	assert_string_equal(out, "bad label: \xe2\x9c\x93");
	/* Control bytes become spaces; a broken escape stays as it is. */
	grpc_decode_message("a%0Ab%zz%4", out, sizeof(out));
	assert_string_equal(out, "a b%zz%4");
	/* Cut to the buffer. */
	grpc_decode_message("0123456789", out, 5);
	assert_string_equal(out, "0123");
}

static struct send_result classify(int transport_err, long http, int code)
{
	struct grpc_result g = { .transport_err = transport_err,
				 .http_status = http,
				 .code = code,
				 .retry_after_sec = -1 };
	struct send_result r = { 0 };

	snprintf(g.message, sizeof(g.message), "words");
	grpc_classify(&g, &r);
	return r;
}

static void test_classify(void **state)
{
	struct send_result r;

	(void)state;
	r = classify(0, 200, GRPC_OK);
	assert_int_equal(r.outcome, SEND_OK);
	r = classify(-ECONNREFUSED, 0, -1);
	assert_int_equal(r.outcome, SEND_RETRY);
	assert_int_equal(r.code, UPLOAD_ERR_NETWORK);
	/* The three the issue names are retried... */
	r = classify(0, 200, GRPC_UNAVAILABLE);
	assert_int_equal(r.outcome, SEND_RETRY);
	assert_int_equal(r.code, UPLOAD_ERR_5XX);
	assert_string_equal(r.what, "gRPC UNAVAILABLE");
	assert_string_equal(r.message, "words");
	r = classify(0, 200, GRPC_RESOURCE_EXHAUSTED);
	assert_int_equal(r.outcome, SEND_RETRY);
	assert_int_equal(r.code, UPLOAD_ERR_429);
	r = classify(0, 200, GRPC_DEADLINE_EXCEEDED);
	assert_int_equal(r.outcome, SEND_RETRY);
	assert_int_equal(r.code, UPLOAD_ERR_408);
	/* ...the others dropped, under the HTTP class of the code. */
	r = classify(0, 200, GRPC_INVALID_ARGUMENT);
	assert_int_equal(r.outcome, SEND_DROP);
	assert_int_equal(r.code, UPLOAD_ERR_400);
	assert_string_equal(r.what, "gRPC INVALID_ARGUMENT");
	r = classify(0, 200, GRPC_UNAUTHENTICATED);
	assert_int_equal(r.outcome, SEND_DROP);
	assert_int_equal(r.code, UPLOAD_ERR_401);
	r = classify(0, 200, GRPC_PERMISSION_DENIED);
	assert_int_equal(r.outcome, SEND_DROP);
	assert_int_equal(r.code, UPLOAD_ERR_4XX);
	r = classify(0, 200, 99);
	assert_int_equal(r.outcome, SEND_DROP);
	assert_string_equal(r.what, "gRPC UNKNOWN");
	/* No grpc-status: a proxy's answer, read through its HTTP status. */
	r = classify(0, 503, -1);
	assert_int_equal(r.outcome, SEND_RETRY);
	r = classify(0, 429, -1);
	assert_int_equal(r.outcome, SEND_RETRY);
	assert_int_equal(r.code, UPLOAD_ERR_429);
	r = classify(0, 404, -1);
	assert_int_equal(r.outcome, SEND_DROP);
	assert_string_equal(r.what, "HTTP 404, no grpc-status");
}

static void test_write_raw_body(void **state)
{
	struct target_label labels[4] = { { "service_name", "shop/cart" },
					  { "__name__", "process_cpu" },
					  { "otel.scope", "x" },
					  { "hostname", "web-1" } };
	uint8_t pprof[] = { 0x1f, 0x8b, 8, 0, 1, 2, 3 };
	struct upload u = { .labels = labels, .nr_labels = 4, .data = pprof, .len = sizeof(pprof) };
	Parca__Profilestore__V1alpha1__WriteRawRequest *req;
	Parca__Profilestore__V1alpha1__LabelSet *set;
	uint8_t *body = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(parca_write_raw_body(&u, &body, &len), 0);
	/* Field 2 (series), length-delimited: 0x12; no tenant (field 1). */
	assert_int_equal(body[0], 0x12);
	req = parca__profilestore__v1alpha1__write_raw_request__unpack(NULL, len, body);
	assert_non_null(req);
	assert_int_equal(req->n_series, 1);
	assert_false(req->normalized);
	set = req->series[0]->labels;
	assert_non_null(set);
	/* Sorted by name; a name Prometheus would refuse made valid. */
	assert_int_equal(set->n_labels, 4);
	assert_string_equal(set->labels[0]->name, "__name__");
	assert_string_equal(set->labels[1]->name, "hostname");
	assert_string_equal(set->labels[2]->name, "otel_scope");
	assert_string_equal(set->labels[3]->name, "service_name");
	assert_string_equal(set->labels[3]->value, "shop/cart");
	assert_int_equal(req->series[0]->n_samples, 1);
	assert_int_equal(req->series[0]->samples[0]->raw_profile.len, sizeof(pprof));
	assert_memory_equal(req->series[0]->samples[0]->raw_profile.data, pprof, sizeof(pprof));
	assert_int_equal(req->series[0]->samples[0]->n_executable_info, 0);
	parca__profilestore__v1alpha1__write_raw_request__free_unpacked(req, NULL);
	free(body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_message),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_write_raw_body),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
