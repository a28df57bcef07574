// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hashmap.h"
#include "http.h"
#include "otlp.h"
#include "otlp_profiles.pb-c.h"
#include "profile/pprof.h"
#include "profile/profile.h"

/* The generated names, shorter. */
#define OT(name) Opentelemetry__Proto__Collector__Profiles__V1development__##name
#define ot(name) opentelemetry__proto__collector__profiles__v1development__##name
typedef OT(ExportProfilesServiceRequest) ot_request;
typedef OT(ExportProfilesServiceResponse) ot_response;
typedef OT(ProfilesDictionary) ot_dictionary;
typedef OT(ResourceProfiles) ot_resource_profiles;
typedef OT(ScopeProfiles) ot_scope_profiles;
typedef OT(Profile) ot_profile;
typedef OT(Link) ot_link;
typedef OT(ValueType) ot_value_type;
typedef OT(Sample) ot_sample;
typedef OT(Mapping) ot_mapping;
typedef OT(Stack) ot_stack;
typedef OT(Location) ot_location;
typedef OT(Line) ot_line;
typedef OT(Function) ot_function;
typedef OT(KeyValueAndUnit) ot_kvu;
typedef OT(Resource) ot_resource;
typedef OT(AnyValue) ot_any;
typedef OT(KeyValue) ot_kv;
typedef OT(InstrumentationScope) ot_scope;
typedef OT(Status) ot_status;

#define GZIP_LEVEL 6
#define MAX_TYPES  4

/* Target labels and the resource attributes they become (semantic conventions). */
static const struct {
	const char *label, *attribute;
} resource_names[] = {
	{ "service_name", "service.name" },    { "hostname", "host.name" },
	{ "namespace", "k8s.namespace.name" }, { "pod", "k8s.pod.name" },
	{ "container", "k8s.container.name" }, { "container_id", "container.id" },
};

/* Sample labels and the attributes they become. */
static const struct {
	const char *label, *attribute;
} sample_names[] = {
	{ "comm", "process.executable.name" },
	{ "thread_name", "thread.name" },
};

/* One request's messages, in arrays freed together. */
struct build {
	struct profile *p;
	ot_request req;
	ot_dictionary dict;
	ot_resource_profiles rp, *rp_list[1];
	ot_resource res;
	ot_kv *res_attrs, **res_attr_list;
	ot_any *res_values;
	ot_scope_profiles sp, *sp_list[1];
	ot_scope scope;
	ot_mapping *mappings, **mapping_list;
	ot_location *locations, **location_list;
	ot_line *lines, **line_list;
	ot_function *functions, **function_list;
	ot_link link0, *link_list[1];
	ot_stack *stacks, **stack_list;
	int32_t *stack_of; /* per sample: its stack's index */
	ot_kvu *attrs, **attr_list;
	ot_any *attr_values;
	int32_t *sample_attrs;	/* per sample label: its attribute's index */
	int32_t *mapping_attrs; /* per mapping: its build id's attribute's index */
	ot_profile profiles[MAX_TYPES], *profile_list[MAX_TYPES];
	ot_value_type types[MAX_TYPES], period_type;
	ot_sample *samples[MAX_TYPES], **sample_list[MAX_TYPES];
	int64_t *values[MAX_TYPES];
	uint8_t profile_ids[MAX_TYPES][16];
};

static void *alloc_n(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

static void build_fini(struct build *b)
{
	size_t i;

	free(b->res_attrs);
	free(b->res_attr_list);
	free(b->res_values);
	free(b->mappings);
	free(b->mapping_list);
	free(b->locations);
	free(b->location_list);
	free(b->lines);
	free(b->line_list);
	free(b->functions);
	free(b->function_list);
	free(b->stacks);
	free(b->stack_list);
	free(b->stack_of);
	free(b->attrs);
	free(b->attr_list);
	free(b->attr_values);
	free(b->sample_attrs);
	free(b->mapping_attrs);
	for (i = 0; i < MAX_TYPES; i++) {
		free(b->samples[i]);
		free(b->sample_list[i]);
		free(b->values[i]);
	}
	profile__free(b->p);
}

/* A string's index, interned into the decoded profile's table (the dictionary's). */
static int32_t str_of(struct build *b, const char *s)
{
	int64_t i = profile__string(b->p, s);

	return i < 0 || i > INT32_MAX ? -1 : (int32_t)i;
}

static int build_resource(struct build *b, const struct upload *u)
{
	uint32_t i, n = 0;
	size_t j;

	b->res_attrs = alloc_n(u->nr_labels, sizeof(*b->res_attrs));
	b->res_attr_list = alloc_n(u->nr_labels, sizeof(*b->res_attr_list));
	b->res_values = alloc_n(u->nr_labels, sizeof(*b->res_values));
	if (!b->res_attrs || !b->res_attr_list || !b->res_values)
		return -ENOMEM;
	for (i = 0; i < u->nr_labels; i++) {
		const char *key = u->labels[i].name;

		if (!strcmp(key, "__name__"))
			continue; /* process_cpu or offcpu: the sample types say it */
		for (j = 0; j < ARRAY_SIZE(resource_names); j++)
			if (!strcmp(key, resource_names[j].label))
				key = resource_names[j].attribute;
		ot(key_value__init)(&b->res_attrs[n]);
		ot(any_value__init)(&b->res_values[n]);
		b->res_attrs[n].key = (char *)key;
		b->res_values[n].value_case =
			OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__ANY_VALUE__VALUE_STRING_VALUE;
		b->res_values[n].string_value = u->labels[i].value;
		b->res_attrs[n].value = &b->res_values[n];
		b->res_attr_list[n] = &b->res_attrs[n];
		n++;
	}
	ot(resource__init)(&b->res);
	b->res.n_attributes = n;
	b->res.attributes = b->res_attr_list;
	return 0;
}

static int build_tables(struct build *b)
{
	const struct profile *p = b->p;
	size_t i, j, nr_lines = 0;

	b->mappings = alloc_n(p->nr_mappings + 1, sizeof(*b->mappings));
	b->mapping_list = alloc_n(p->nr_mappings + 1, sizeof(*b->mapping_list));
	b->functions = alloc_n(p->nr_functions + 1, sizeof(*b->functions));
	b->function_list = alloc_n(p->nr_functions + 1, sizeof(*b->function_list));
	b->locations = alloc_n(p->nr_locations + 1, sizeof(*b->locations));
	b->location_list = alloc_n(p->nr_locations + 1, sizeof(*b->location_list));
	for (i = 0; i < p->nr_locations; i++)
		nr_lines += p->locations[i].nr_lines;
	b->lines = alloc_n(nr_lines, sizeof(*b->lines));
	b->line_list = alloc_n(nr_lines, sizeof(*b->line_list));
	if (!b->mappings || !b->mapping_list || !b->functions || !b->function_list ||
	    !b->locations || !b->location_list || !b->lines || !b->line_list)
		return -ENOMEM;
	/* Element 0 of each table is the zero value; the pprof's ids are the indexes. */
	for (i = 0; i <= p->nr_mappings; i++) {
		ot(mapping__init)(&b->mappings[i]);
		b->mapping_list[i] = &b->mappings[i];
		if (!i)
			continue;
		b->mappings[i].memory_start = p->mappings[i - 1].memory_start;
		b->mappings[i].memory_limit = p->mappings[i - 1].memory_limit;
		b->mappings[i].file_offset = p->mappings[i - 1].file_offset;
		b->mappings[i].filename_strindex = (int32_t)p->mappings[i - 1].filename;
	}
	for (i = 0; i <= p->nr_functions; i++) {
		ot(function__init)(&b->functions[i]);
		b->function_list[i] = &b->functions[i];
		if (!i)
			continue;
		b->functions[i].name_strindex = (int32_t)p->functions[i - 1].name;
		b->functions[i].system_name_strindex = (int32_t)p->functions[i - 1].system_name;
		b->functions[i].filename_strindex = (int32_t)p->functions[i - 1].filename;
		b->functions[i].start_line = p->functions[i - 1].start_line;
	}
	nr_lines = 0;
	for (i = 0; i <= p->nr_locations; i++) {
		const struct profile_location *l = i ? &p->locations[i - 1] : NULL;

		ot(location__init)(&b->locations[i]);
		b->location_list[i] = &b->locations[i];
		if (!l)
			continue;
		b->locations[i].mapping_index = (int32_t)l->mapping_id;
		b->locations[i].address = l->address;
		b->locations[i].lines = &b->line_list[nr_lines];
		b->locations[i].n_lines = l->nr_lines;
		for (j = 0; j < l->nr_lines; j++, nr_lines++) {
			const struct profile_line *pl = &p->lines[l->first_line + j];

			ot(line__init)(&b->lines[nr_lines]);
			b->lines[nr_lines].function_index = (int32_t)pl->function_id;
			b->lines[nr_lines].line = pl->line;
			b->line_list[nr_lines] = &b->lines[nr_lines];
		}
	}
	return 0;
}

/* Stacks: one per distinct location list, found through a map keyed by sample. */
struct stack_key {
	const struct profile_sample *s;
};

static uint64_t hash_stack(const void *k)
{
	const struct profile_sample *s = k;

	return hash_bytes(s->locations, s->nr_locations * sizeof(*s->locations), 7);
}

static bool equal_stack(const void *a, const void *b)
{
	const struct profile_sample *x = a, *y = b;

	return x->nr_locations == y->nr_locations &&
	       !memcmp(x->locations, y->locations, x->nr_locations * sizeof(*x->locations));
}

static int build_stacks(struct build *b)
{
	const struct profile *p = b->p;
	struct hashmap seen;
	size_t i, n = 1, nr_locs = 0;
	int32_t *locs;
	int err = 0;

	for (i = 0; i < p->nr_samples; i++)
		nr_locs += p->samples[i].nr_locations;
	b->stacks = alloc_n(p->nr_samples + 1, sizeof(*b->stacks));
	b->stack_list = alloc_n(p->nr_samples + 1, sizeof(*b->stack_list));
	b->stack_of = alloc_n(p->nr_samples, sizeof(*b->stack_of));
	/* The location indexes, kept in the stack_of array's shadow: one int32 per location. */
	locs = alloc_n(nr_locs, sizeof(*locs));
	if (!b->stacks || !b->stack_list || !b->stack_of || !locs) {
		free(locs);
		return -ENOMEM;
	}
	hashmap__init(&seen, hash_stack, equal_stack);
	ot(stack__init)(&b->stacks[0]);
	b->stack_list[0] = &b->stacks[0];
	nr_locs = 0;
	for (i = 0; i < p->nr_samples && !err; i++) {
		const struct profile_sample *s = &p->samples[i];
		uintptr_t found = (uintptr_t)hashmap__find(&seen, s);
		uint32_t j;

		if (found) {
			b->stack_of[i] = (int32_t)(found - 1);
			continue;
		}
		ot(stack__init)(&b->stacks[n]);
		b->stacks[n].location_indices = &locs[nr_locs];
		b->stacks[n].n_location_indices = s->nr_locations;
		for (j = 0; j < s->nr_locations; j++)
			locs[nr_locs++] = (int32_t)s->locations[j];
		b->stack_list[n] = &b->stacks[n];
		b->stack_of[i] = (int32_t)n;
		err = hashmap__insert(&seen, s, (void *)(uintptr_t)(n + 1));
		n++;
	}
	hashmap__fini(&seen);
	b->dict.stack_table = b->stack_list;
	b->dict.n_stack_table = n;
	/* locs is owned by the first real stack (freed in otlp_export_body). */
	if (n == 1)
		free(locs);
	return err;
}

/* The sample labels as attributes: (key, value) pairs found by a linear scan (few); then
 * each mapping's build id. */
static int build_attributes(struct build *b)
{
	const struct profile *p = b->p;
	size_t i, j, k, n = 1, nr = 0, li = 0;

	for (i = 0; i < p->nr_samples; i++)
		nr += p->samples[i].nr_labels;
	nr += p->nr_mappings; /* a build id each, at most */
	b->attrs = alloc_n(nr + 1, sizeof(*b->attrs));
	b->attr_list = alloc_n(nr + 1, sizeof(*b->attr_list));
	b->attr_values = alloc_n(nr + 1, sizeof(*b->attr_values));
	b->sample_attrs = alloc_n(nr - p->nr_mappings, sizeof(*b->sample_attrs));
	if (!b->attrs || !b->attr_list || !b->attr_values || !b->sample_attrs)
		return -ENOMEM;
	ot(key_value_and_unit__init)(&b->attrs[0]);
	b->attr_list[0] = &b->attrs[0];
	for (i = 0; i < p->nr_samples; i++) {
		for (j = 0; j < p->samples[i].nr_labels; j++, li++) {
			const struct profile_label *l = &p->samples[i].labels[j];
			const char *key = profile__str(p, l->key);
			int32_t key_ix;

			for (k = 0; k < ARRAY_SIZE(sample_names); k++)
				if (!strcmp(key, sample_names[k].label))
					key = sample_names[k].attribute;
			key_ix = str_of(b, key);
			if (key_ix < 0)
				return -ENOMEM;
			for (k = 1; k < n; k++) {
				const ot_kvu *a = &b->attrs[k];
				const ot_any *v = a->value;

				if (a->key_strindex == key_ix &&
				    (l->str ?
					     v->string_value == b->p->strings[l->str] :
					     v->value_case !=
							     OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__ANY_VALUE__VALUE_STRING_VALUE &&
						     v->int_value == l->num))
					break;
			}
			if (k == n) {
				ot(key_value_and_unit__init)(&b->attrs[n]);
				ot(any_value__init)(&b->attr_values[n]);
				b->attrs[n].key_strindex = key_ix;
				if (l->str) {
					b->attr_values[n].value_case =
						OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__ANY_VALUE__VALUE_STRING_VALUE;
					b->attr_values[n].string_value = b->p->strings[l->str];
				} else {
					b->attr_values[n].value_case =
						OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__ANY_VALUE__VALUE_INT_VALUE;
					b->attr_values[n].int_value = l->num;
				}
				b->attrs[n].value = &b->attr_values[n];
				b->attr_list[n] = &b->attrs[n];
				n++;
			}
			b->sample_attrs[li] = (int32_t)k;
		}
	}
	/* A mapping's GNU build id, as the OpenTelemetry eBPF profiler names it, so that a
	 * backend can fetch its symbols. */
	b->mapping_attrs = alloc_n(p->nr_mappings, sizeof(*b->mapping_attrs));
	if (!b->mapping_attrs)
		return -ENOMEM;
	for (i = 0; i < p->nr_mappings; i++) {
		int32_t key_ix;

		if (!p->mappings[i].build_id)
			continue;
		key_ix = str_of(b, "process.executable.build_id.gnu");
		if (key_ix < 0)
			return -ENOMEM;
		ot(key_value_and_unit__init)(&b->attrs[n]);
		ot(any_value__init)(&b->attr_values[n]);
		b->attrs[n].key_strindex = key_ix;
		b->attr_values[n].value_case =
			OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__ANY_VALUE__VALUE_STRING_VALUE;
		b->attr_values[n].string_value = b->p->strings[p->mappings[i].build_id];
		b->attrs[n].value = &b->attr_values[n];
		b->attr_list[n] = &b->attrs[n];
		b->mapping_attrs[i] = (int32_t)n;
		b->mappings[i + 1].attribute_indices = &b->mapping_attrs[i];
		b->mappings[i + 1].n_attribute_indices = 1;
		n++;
	}
	b->dict.attribute_table = b->attr_list;
	b->dict.n_attribute_table = n;
	return 0;
}

/* A profile id from the target and the window: a retry sends the same one. */
static void profile_id(const struct upload *u, size_t type, uint8_t id[16])
{
	uint64_t a = hash_bytes(u->key, strlen(u->key), u->time_ns + type);
	uint64_t b = hash_bytes(u->key, strlen(u->key), ~(u->time_ns + type));

	memcpy(id, &a, 8);
	memcpy(id + 8, &b, 8);
	if (!a && !b)
		id[0] = 1; /* all zero means "none" */
}

/* One Profile per sample type; sample i's value of type t is values[t]. */
static int build_profiles(struct build *b, const struct upload *u, size_t *nr)
{
	const struct profile *p = b->p;
	/* values[] index of each type: samples/count, cpu, offcpu, wall (cpu + offcpu). */
	static const int which[] = { 0, 1, 2, -1 };
	size_t first, last, t, i, n, li;

	switch (p->opts.types) {
	case PROFILE_OFFCPU:
		first = last = 2;
		break;
	case PROFILE_CPU_OFFCPU:
		first = 0, last = 3;
		break;
	default:
		first = 0, last = 1;
	}
	ot(value_type__init)(&b->period_type);
	b->period_type.type_strindex = str_of(b, "cpu");
	b->period_type.unit_strindex = str_of(b, "nanoseconds");
	*nr = 0;
	for (t = first; t <= last; t++) {
		static const char *const names[][2] = { { "samples", "count" },
							{ "cpu", "nanoseconds" },
							{ "offcpu", "nanoseconds" },
							{ "wall", "nanoseconds" } };
		ot_profile *pr = &b->profiles[*nr];
		ot_value_type *vt = &b->types[*nr];

		ot(profile__init)(pr);
		ot(value_type__init)(vt);
		vt->type_strindex = str_of(b, names[t][0]);
		vt->unit_strindex = str_of(b, names[t][1]);
		if (vt->type_strindex < 0 || vt->unit_strindex < 0 ||
		    b->period_type.type_strindex < 0 || b->period_type.unit_strindex < 0)
			return -ENOMEM;
		b->samples[*nr] = alloc_n(p->nr_samples, sizeof(ot_sample));
		b->sample_list[*nr] = alloc_n(p->nr_samples, sizeof(ot_sample *));
		b->values[*nr] = alloc_n(p->nr_samples, sizeof(int64_t));
		if (!b->samples[*nr] || !b->sample_list[*nr] || !b->values[*nr])
			return -ENOMEM;
		for (i = 0, n = 0, li = 0; i < p->nr_samples; li += p->samples[i].nr_labels, i++) {
			const struct profile_sample *s = &p->samples[i];
			int64_t v = which[t] >= 0 ? s->values[which[t]] :
						    s->values[1] + s->values[2];
			ot_sample *os = &b->samples[*nr][n];

			if (!v)
				continue; /* an off-CPU sample has no CPU value, and so on */
			ot(sample__init)(os);
			os->stack_index = b->stack_of[i];
			os->n_attribute_indices = s->nr_labels;
			os->attribute_indices = s->nr_labels ? &b->sample_attrs[li] : NULL;
			b->values[*nr][n] = v;
			os->values = &b->values[*nr][n];
			os->n_values = 1;
			b->sample_list[*nr][n] = os;
			n++;
		}
		pr->sample_type = vt;
		pr->samples = b->sample_list[*nr];
		pr->n_samples = n;
		pr->time_unix_nano = p->opts.time_ns ? p->opts.time_ns : u->time_ns;
		pr->duration_nano = p->opts.duration_ns ? p->opts.duration_ns : u->duration_ns;
		if (p->opts.types != PROFILE_OFFCPU && p->opts.period_ns) {
			pr->period_type = &b->period_type;
			pr->period = (int64_t)p->opts.period_ns;
		}
		profile_id(u, t, b->profile_ids[*nr]);
		pr->profile_id.data = b->profile_ids[*nr];
		pr->profile_id.len = 16;
		b->profile_list[*nr] = pr;
		(*nr)++;
	}
	return 0;
}

int otlp_export_body(const struct upload *u, uint8_t **out, size_t *len, size_t *nr_profiles,
		     const char **why)
{
	struct build b = { 0 };
	int32_t *locs = NULL;
	int err;

	*out = NULL;
	*why = NULL;
	err = pprof_decode(u->data, u->len, &b.p, why);
	if (err)
		return err;
	/* Every index must fit the format's int32; the profile's caps keep them far below. */
	if (b.p->nr_strings > INT32_MAX / 2 || b.p->nr_locations > INT32_MAX / 2 ||
	    b.p->nr_samples > INT32_MAX / 2) {
		*why = "a table past the format's int32 indexes";
		err = -E2BIG;
		goto out;
	}
	ot(export_profiles_service_request__init)(&b.req);
	ot(profiles_dictionary__init)(&b.dict);
	err = build_resource(&b, u);
	if (!err)
		err = build_tables(&b);
	if (!err)
		err = build_stacks(&b);
	if (b.dict.n_stack_table > 1)
		locs = b.stacks[1].location_indices;
	if (!err)
		err = build_attributes(&b);
	if (!err)
		err = build_profiles(&b, u, nr_profiles);
	if (err)
		goto out;
	ot(link__init)(&b.link0);
	b.link_list[0] = &b.link0;
	b.dict.mapping_table = b.mapping_list;
	b.dict.n_mapping_table = b.p->nr_mappings + 1;
	b.dict.location_table = b.location_list;
	b.dict.n_location_table = b.p->nr_locations + 1;
	b.dict.function_table = b.function_list;
	b.dict.n_function_table = b.p->nr_functions + 1;
	b.dict.link_table = b.link_list;
	b.dict.n_link_table = 1;
	/* Last: build_attributes() and build_profiles() interned strings. */
	b.dict.string_table = b.p->strings;
	b.dict.n_string_table = b.p->nr_strings;

	ot(instrumentation_scope__init)(&b.scope);
	b.scope.name = "ignis";
	b.scope.version = IGNIS_VERSION_SHORT;
	ot(scope_profiles__init)(&b.sp);
	b.sp.scope = &b.scope;
	b.sp.profiles = b.profile_list;
	b.sp.n_profiles = *nr_profiles;
	b.sp_list[0] = &b.sp;
	ot(resource_profiles__init)(&b.rp);
	b.rp.resource = &b.res;
	b.rp.scope_profiles = b.sp_list;
	b.rp.n_scope_profiles = 1;
	b.rp_list[0] = &b.rp;
	b.req.resource_profiles = b.rp_list;
	b.req.n_resource_profiles = 1;
	b.req.dictionary = &b.dict;
	*len = ot(export_profiles_service_request__get_packed_size)(&b.req);
	*out = malloc(*len + 1);
	if (!*out) {
		err = -ENOMEM;
		goto out;
	}
	ot(export_profiles_service_request__pack)(&b.req, *out);
out:
	free(locs);
	build_fini(&b);
	return err;
}

void otlp_classify(long status, int err, const uint8_t *body, size_t len, size_t nr_profiles,
		   struct send_result *r)
{
	r->status = status;
	r->message[0] = '\0';
	if (err || !status) {
		r->outcome = SEND_RETRY;
		r->code = UPLOAD_ERR_NETWORK;
		return;
	}
	snprintf(r->what, sizeof(r->what), "HTTP %ld", status);
	if (status >= 200 && status < 300) {
		ot_response *resp =
			len ? ot(export_profiles_service_response__unpack)(NULL, len, body) : NULL;
		int64_t rejected = resp && resp->partial_success ?
					   resp->partial_success->rejected_profiles :
					   0;

		if (resp && resp->partial_success && resp->partial_success->error_message)
			snprintf(r->message, sizeof(r->message), "%s",
				 resp->partial_success->error_message);
		if (resp)
			ot(export_profiles_service_response__free_unpacked)(resp, NULL);
		r->outcome = SEND_OK;
		if (rejected > 0 && (uint64_t)rejected >= nr_profiles) {
			/* Success in form, refusal in substance (OTLP "Partial Success"). */
			r->outcome = SEND_DROP;
			r->code = UPLOAD_ERR_4XX;
			snprintf(r->what, sizeof(r->what), "partial success, %" PRId64 " rejected",
				 rejected);
		}
		return;
	}
	if (len) {
		ot_status *st = ot(status__unpack)(NULL, len, body);

		if (st && st->message && st->message[0])
			snprintf(r->message, sizeof(r->message), "%s", st->message);
		else
			snprintf(r->message, sizeof(r->message), "%.*s",
				 (int)(len < 200 ? len : 200), (const char *)body);
		if (st)
			ot(status__free_unpacked)(st, NULL);
	}
	if (!r->message[0])
		snprintf(r->message, sizeof(r->message), "(no message)");
	switch (status) {
	case 400:
		r->code = UPLOAD_ERR_400;
		break;
	case 401:
		r->code = UPLOAD_ERR_401;
		break;
	case 413:
		r->code = UPLOAD_ERR_413;
		break;
	case 429:
		r->code = UPLOAD_ERR_429;
		break;
	default:
		r->code = status >= 500 ? UPLOAD_ERR_5XX : UPLOAD_ERR_4XX;
	}
	/* OTLP/HTTP "Retryable Response Codes": these four; every other one is final. */
	r->outcome = status == 429 || status == 502 || status == 503 || status == 504 ? SEND_RETRY :
											SEND_DROP;
}

/* ---- The encoder (encoder.h) ------------------------------------------------------------- */

struct otlp {
	char *url;
	struct http_client *http;
};

static void *otlp_open(const struct encoder_opts *o)
{
	struct otlp *c = calloc(1, sizeof(*c));
	size_t n = strlen(o->url);
	int err = ENOMEM;

	if (!c)
		return NULL;
	while (n && o->url[n - 1] == '/')
		n--;
	if (asprintf(&c->url, "%.*s" OTLP_PROFILES_PATH, (int)n, o->url) < 0) {
		c->url = NULL;
		goto err_out;
	}
	c->http = http_client__new(o->http);
	if (!c->http) {
		err = errno;
		goto err_out;
	}
	return c;
err_out:
	free(c->url);
	free(c);
	errno = err;
	return NULL;
}

static void otlp_close(void *client)
{
	struct otlp *c = client;

	if (!c)
		return;
	http_client__free(c->http);
	free(c->url);
	free(c);
}

/* Keep the whole answer: a google.rpc.Status or an ExportProfilesServiceResponse. */
struct answer {
	uint8_t buf[16384];
	size_t len;
};

static bool keep_answer(void *ctx, const char *data, size_t len)
{
	struct answer *a = ctx;
	size_t room = sizeof(a->buf) - a->len;

	if (len > room)
		len = room; /* the rest is read and dropped */
	memcpy(a->buf + a->len, data, len);
	a->len += len;
	return true;
}

static void otlp_send(void *client, const struct upload *u, const atomic_bool *abort,
		      struct send_result *r)
{
	static const char *const headers[] = { "Content-Encoding: gzip", NULL };
	struct otlp *c = client;
	struct http_request req = {
		.method = "POST",
		.url = c->url,
		.content_type = "application/x-protobuf",
		.headers = headers,
		.on_body = keep_answer,
		.abort = abort,
	};
	struct http_response resp = { 0 };
	struct answer *a = calloc(1, sizeof(*a));
	uint8_t *body = NULL, *gz = NULL;
	size_t len = 0, gz_len = 0, nr = 0;
	const char *why = NULL;
	int err;

	err = a ? otlp_export_body(u, &body, &len, &nr, &why) : -ENOMEM;
	if (!err)
		err = gzip_compress(body, len, GZIP_LEVEL, &gz, &gz_len);
	if (err == -ENOMEM || err == -EIO) {
		/* Out of memory here is transient: try again later. */
		r->outcome = SEND_RETRY;
		r->code = UPLOAD_ERR_NETWORK;
		snprintf(r->message, sizeof(r->message), "out of memory");
		goto out;
	}
	if (err) {
		/* The queued pprof cannot be read (a damaged spool file): sending cannot help. */
		r->outcome = SEND_DROP;
		r->code = UPLOAD_ERR_4XX;
		snprintf(r->what, sizeof(r->what), "not sent");
		snprintf(r->message, sizeof(r->message), "its pprof cannot be read: %s",
			 why ? why : strerror(-err));
		goto out;
	}
	req.body = gz;
	req.len = gz_len;
	req.ctx = a;
	err = http_client__perform(c->http, &req, &resp);
	otlp_classify(resp.status, err, a->buf, a->len, nr, r);
	if (err)
		snprintf(r->message, sizeof(r->message), "%s", resp.error);
	r->retry_after_sec = resp.retry_after_sec;
	r->bytes = gz_len;
	http_response_fini(&resp);
out:
	free(a);
	free(body);
	free(gz);
}

const struct encoder_ops otlp_encoder = {
	.name = "otlp",
	.open = otlp_open,
	.close = otlp_close,
	.send = otlp_send,
};
