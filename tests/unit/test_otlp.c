// SPDX-License-Identifier: Apache-2.0
/*
 * The OTLP profiles request (otlp.c) made from a window's pprof, unpacked with the code
 * protobuf-c generated from the same pinned schema: the dictionary's zero elements, every
 * index resolving to the profile's own names, one profile per sample type, the resource
 * attributes; and the classification of answers. The OTLP/HTTP exchange itself runs against a
 * receiver that decodes with python3-protobuf in tests/integration/test_otlp.py.
 */
#include "unit.h"

#include "../../agent/ship/otlp.h"
#include "../../agent/profile/pprof.h"
#include "../../agent/profile/profile.h"
#include "../../agent/profile/targets.h"
#include "../../agent/ship/uploader.h"
#include "otlp_profiles.pb-c.h"

#define OT(name) Opentelemetry__Proto__Collector__Profiles__V1development__##name
#define ot(name) opentelemetry__proto__collector__profiles__v1development__##name

/* A window of one target: main -> work -> hot (3 samples, comm "app") and main -> idle
 * (1 sample, comm "app", 5 ms off CPU), as a gzip'd pprof with off-CPU time. */
static void make_pprof(uint8_t **out, size_t *len)
{
	struct profile_opts o = { .types = PROFILE_CPU_OFFCPU,
				  .period_ns = 10000000,
				  .time_ns = 1764441290000000000ULL,
				  .duration_ns = 10000000000ULL };
	struct profile *p = profile__new(&o);
	struct profile_mapping m = { .memory_start = 0x1000, .memory_limit = 0x9000 };
	const char *names[] = { "hot", "work", "main", "idle" };
	uint64_t locs[4], hot[3], idle[2];
	struct profile_label l;
	int64_t mapping;
	int i;

	assert_non_null(p);
	m.filename = profile__string(p, "/usr/bin/app");
	m.build_id = profile__string(p, "0123abcd");
	mapping = profile__mapping(p, "app", 3, &m);
	assert_true(mapping > 0);
	for (i = 0; i < 4; i++) {
		struct profile_line line = { .line = 10 + i };
		int64_t fn = profile__function(p, names[i], names[i], "app.c", 1);

		assert_true(fn > 0);
		line.function_id = (uint64_t)fn;
		locs[i] = (uint64_t)profile__add_location(p, (uint64_t)mapping, 0x1100 + 16 * i, 0,
							  &line, 1);
	}
	hot[0] = locs[0], hot[1] = locs[1], hot[2] = locs[2];
	idle[0] = locs[3], idle[1] = locs[2];
	l.key = profile__string(p, "comm");
	l.str = profile__string(p, "app");
	l.num = 0;
	assert_int_equal(profile__add_group_values(p, 0, hot, 3, &l, 1, 3, 0), 0);
	assert_int_equal(profile__add_group_values(p, 0, idle, 2, &l, 1, 1, 5000000), 0);
	assert_int_equal(pprof_encode(p, 6, out, len), 0);
	profile__free(p);
}

static const char *str(const OT(ProfilesDictionary) * d, int32_t i)
{
	assert_true(i >= 0 && (size_t)i < d->n_string_table);
	return d->string_table[i];
}

/* The function names of a stack, leaf first, "|"-joined. */
static void frames(const OT(ProfilesDictionary) * d, int32_t stack, char *buf, size_t size)
{
	size_t i, n = 0;

	assert_true(stack > 0 && (size_t)stack < d->n_stack_table);
	buf[0] = '\0';
	for (i = 0; i < d->stack_table[stack]->n_location_indices; i++) {
		int32_t li = d->stack_table[stack]->location_indices[i];
		const OT(Location) * l;

		assert_true(li > 0 && (size_t)li < d->n_location_table);
		l = d->location_table[li];
		assert_int_equal(l->n_lines, 1);
		assert_true(l->mapping_index > 0 && (size_t)l->mapping_index < d->n_mapping_table);
		assert_string_equal(str(d, d->mapping_table[l->mapping_index]->filename_strindex),
				    "/usr/bin/app");
		n += (size_t)snprintf(
			buf + n, size - n, "%s%s", i ? "|" : "",
			str(d, d->function_table[l->lines[0]->function_index]->name_strindex));
	}
}

static void test_export_body(void **state)
{
	struct target_label labels[] = { { "__name__", "process_cpu" }, { "service_name", "app" },
					 { "hostname", "node-1" },	{ "namespace", "shop" },
					 { "pod", "cart-7" },		{ "container", "cart" },
					 { "container_id", "ab12" },	{ "env", "prod" } };
	static const char *const want_keys[] = {
		"service.name", "host.name",	      "k8s.namespace.name",
		"k8s.pod.name", "k8s.container.name", "container.id",
		"env"
	};
	static const char *const want_types[] = { "samples", "cpu", "offcpu", "wall" };
	static const int64_t want_hot[] = { 3, 30000000, 0, 30000000 };
	static const int64_t want_idle[] = { 1, 10000000, 5000000, 15000000 };
	struct upload u = { .key = "k",
			    .labels = labels,
			    .nr_labels = 8,
			    .time_ns = 1764441290000000000ULL,
			    .duration_ns = 10000000000ULL };
	OT(ExportProfilesServiceRequest) * req;
	const OT(ProfilesDictionary) * d;
	const OT(ScopeProfiles) * sp;
	const OT(Resource) * res;
	const char *why = NULL;
	uint8_t *body = NULL;
	size_t len = 0, nr = 0, i, j;
	char buf[256];

	(void)state;
	make_pprof(&u.data, &u.len);
	assert_int_equal(otlp_export_body(&u, &body, &len, &nr, &why), 0);
	assert_int_equal(nr, 4);
	req = ot(export_profiles_service_request__unpack)(NULL, len, body);
	assert_non_null(req);
	d = req->dictionary;
	assert_non_null(d);
	/* Element 0 of every table is the zero value. */
	assert_string_equal(d->string_table[0], "");
	assert_true(d->n_mapping_table > 1 && d->n_location_table > 1 && d->n_function_table > 1);
	assert_int_equal(d->n_link_table, 1);
	assert_int_equal(d->n_stack_table, 3); /* the two stacks, once each */
	assert_int_equal(d->mapping_table[0]->filename_strindex, 0);
	assert_int_equal(d->location_table[0]->n_lines, 0);
	assert_int_equal(d->function_table[0]->name_strindex, 0);
	assert_int_equal(d->stack_table[0]->n_location_indices, 0);
	/* Zero, comm=app once, the mapping's build id. */
	assert_int_equal(d->n_attribute_table, 3);
	assert_string_equal(str(d, d->attribute_table[1]->key_strindex), "process.executable.name");
	assert_string_equal(d->attribute_table[1]->value->string_value, "app");
	assert_int_equal(d->n_mapping_table, 2);
	assert_int_equal(d->mapping_table[1]->n_attribute_indices, 1);
	assert_int_equal(d->mapping_table[1]->attribute_indices[0], 2);
	assert_string_equal(str(d, d->attribute_table[2]->key_strindex),
			    "process.executable.build_id.gnu");
	assert_string_equal(d->attribute_table[2]->value->string_value, "0123abcd");
	assert_int_equal(d->mapping_table[1]->memory_start, 0x1000);

	assert_int_equal(req->n_resource_profiles, 1);
	res = req->resource_profiles[0]->resource;
	assert_int_equal(res->n_attributes, 7); /* __name__ left out */
	for (i = 0; i < res->n_attributes; i++)
		assert_string_equal(res->attributes[i]->key, want_keys[i]);
	assert_string_equal(res->attributes[0]->value->string_value, "app");
	assert_string_equal(res->attributes[5]->value->string_value, "ab12");
	assert_int_equal(req->resource_profiles[0]->n_scope_profiles, 1);
	sp = req->resource_profiles[0]->scope_profiles[0];
	assert_string_equal(sp->scope->name, "ignis");
	assert_int_equal(sp->n_profiles, 4);
	for (i = 0; i < 4; i++) {
		const OT(Profile) *pr = sp->profiles[i];

		assert_string_equal(str(d, pr->sample_type->type_strindex), want_types[i]);
		assert_string_equal(str(d, pr->sample_type->unit_strindex),
				    i ? "nanoseconds" : "count");
		assert_int_equal(pr->time_unix_nano, u.time_ns);
		assert_int_equal(pr->duration_nano, u.duration_ns);
		assert_int_equal(pr->period, 10000000);
		assert_string_equal(str(d, pr->period_type->type_strindex), "cpu");
		assert_int_equal(pr->profile_id.len, 16);
		/* Samples without a value of this type are left out (hot has no off-CPU). */
		assert_int_equal(pr->n_samples, i == 2 ? 1 : 2);
		for (j = 0; j < pr->n_samples; j++) {
			const OT(Sample) *s = pr->samples[j];

			assert_int_equal(s->n_values, 1);
			assert_int_equal(s->n_attribute_indices, 1);
			assert_int_equal(s->attribute_indices[0], 1);
			frames(d, s->stack_index, buf, sizeof(buf));
			if (!strcmp(buf, "hot|work|main"))
				assert_int_equal(s->values[0], want_hot[i]);
			else if (!strcmp(buf, "idle|main"))
				assert_int_equal(s->values[0], want_idle[i]);
			else
				fail_msg("stack %s", buf);
		}
	}
	ot(export_profiles_service_request__free_unpacked)(req, NULL);
	free(body);

	/* A pprof that is not one: refused with a reason, nothing allocated. */
	u.data[u.len / 2] ^= 0xff;
	u.len = 10;
	assert_true(otlp_export_body(&u, &body, &len, &nr, &why) < 0);
	assert_non_null(why);
	free(u.data);
}

static void test_classify(void **state)
{
	OT(Status) st = OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__STATUS__INIT;
	OT(ExportProfilesServiceResponse)
	resp = OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_RESPONSE__INIT;
	OT(ExportProfilesPartialSuccess)
	ps = OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_PARTIAL_SUCCESS__INIT;
	uint8_t buf[256];
	struct send_result r;
	size_t n;

	(void)state;
	memset(&r, 0, sizeof(r));
	otlp_classify(200, 0, NULL, 0, 2, &r);
	assert_int_equal(r.outcome, SEND_OK);
	otlp_classify(0, -ECONNREFUSED, NULL, 0, 2, &r);
	assert_int_equal(r.outcome, SEND_RETRY);
	assert_int_equal(r.code, UPLOAD_ERR_NETWORK);
	/* The four retryable statuses of OTLP/HTTP, and no other. */
	otlp_classify(429, 0, NULL, 0, 2, &r);
	assert_int_equal(r.outcome, SEND_RETRY);
	assert_int_equal(r.code, UPLOAD_ERR_429);
	otlp_classify(503, 0, NULL, 0, 2, &r);
	assert_int_equal(r.outcome, SEND_RETRY);
	otlp_classify(500, 0, NULL, 0, 2, &r);
	assert_int_equal(r.outcome, SEND_DROP);
	otlp_classify(408, 0, NULL, 0, 2, &r);
	assert_int_equal(r.outcome, SEND_DROP);
	/* A 400 with a google.rpc.Status: dropped, the server's words kept. */
	st.code = 3;
	st.message = "unsupported profiles version";
	n = ot(status__pack)(&st, buf);
	otlp_classify(400, 0, buf, n, 2, &r);
	assert_int_equal(r.outcome, SEND_DROP);
	assert_int_equal(r.code, UPLOAD_ERR_400);
	assert_string_equal(r.message, "unsupported profiles version");
	assert_string_equal(r.what, "HTTP 400");
	/* A partial success that rejected every profile: dropped; some of them: sent. */
	ps.rejected_profiles = 2;
	ps.error_message = "bad stacks";
	resp.partial_success = &ps;
	n = ot(export_profiles_service_response__pack)(&resp, buf);
	otlp_classify(200, 0, buf, n, 2, &r);
	assert_int_equal(r.outcome, SEND_DROP);
	assert_string_equal(r.message, "bad stacks");
	otlp_classify(200, 0, buf, n, 4, &r);
	assert_int_equal(r.outcome, SEND_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_export_body),
		cmocka_unit_test(test_classify),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
