// SPDX-License-Identifier: Apache-2.0
/*
 * pprof_dump FILE: decode a pprof (gzip'd or not) with protobuf-c, check the invariants every
 * consumer relies on (PROTOCOLS.md section 7) and print the profile as JSON for the tests.
 * Exit status 0 when valid, 1 with one line per violation on stderr otherwise, 2 on errors.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;

static int violations;

static void violation(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("pprof_dump: invalid: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	violations++;
}

static unsigned char *read_all(const char *path, size_t *len)
{
	gzFile f = gzopen(path, "rb");	/* reads plain files too */
	unsigned char *buf = NULL;
	size_t cap = 0, n = 0;
	int r;

	if (!f)
		return NULL;
	do {
		if (n + 65536 > cap) {
			cap = cap ? cap * 2 : 1 << 20;
			buf = realloc(buf, cap);
			if (!buf)
				return NULL;
		}
		r = gzread(f, buf + n, 65536);
		if (r > 0)
			n += (size_t)r;
	} while (r > 0);
	gzclose(f);
	if (r < 0) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

static bool valid_utf8(const unsigned char *s)
{
	while (*s) {
		int n = *s < 0x80 ? 1 : (*s >> 5) == 6 ? 2 : (*s >> 4) == 14 ? 3 : (*s >> 3) == 30 ? 4 : 0;

		if (!n || (n == 2 && *s < 0xc2))
			return false;
		for (int i = 1; i < n; i++)
			if ((s[i] & 0xc0) != 0x80)
				return false;
		s += n;
	}
	return true;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static const char *str(const Profile *p, int64_t i)
{
	if (i < 0 || (size_t)i >= p->n_string_table) {
		violation("string index %lld out of range", (long long)i);
		return "";
	}
	return p->string_table[i];
}

static bool offcpu_only;

static void check(const Profile *p)
{
	size_t i, j;

	if (!p->n_string_table || p->string_table[0][0])
		violation("string_table[0] is not empty");
	for (i = 0; i < p->n_string_table; i++)
		if (!valid_utf8((const unsigned char *)p->string_table[i]))
			violation("string %zu is not UTF-8", i);
	/* Three layouts (agent/profile/profile.h, enum profile_types): CPU; CPU with off-CPU
	 * time and wall time; off-CPU time alone, as Alloy sends it. */
	if (p->n_sample_type == 1) {
		offcpu_only = true;
		if (strcmp(str(p, p->sample_type[0]->type), "offcpu") ||
		    strcmp(str(p, p->sample_type[0]->unit), "nanoseconds"))
			violation("a single sample type that is not offcpu/nanoseconds");
		if (p->period_type)
			violation("an off-CPU profile with a period type");
	} else {
		if ((p->n_sample_type != 2 && p->n_sample_type != 4) ||
		    strcmp(str(p, p->sample_type[0]->type), "samples") ||
		    strcmp(str(p, p->sample_type[0]->unit), "count") ||
		    strcmp(str(p, p->sample_type[1]->type), "cpu") ||
		    strcmp(str(p, p->sample_type[1]->unit), "nanoseconds"))
			violation("sample types are not [samples/count, cpu/nanoseconds, ...]");
		if (p->n_sample_type == 4 &&
		    (strcmp(str(p, p->sample_type[2]->type), "offcpu") ||
		     strcmp(str(p, p->sample_type[3]->type), "wall") ||
		     strcmp(str(p, p->sample_type[2]->unit), "nanoseconds") ||
		     strcmp(str(p, p->sample_type[3]->unit), "nanoseconds") ||
		     strcmp(str(p, p->default_sample_type), "cpu")))
			violation("sample types are not [..., offcpu/nanoseconds, wall/nanoseconds] "
				  "with cpu the default");
		if (!p->period_type || strcmp(str(p, p->period_type->type), "cpu") ||
		    strcmp(str(p, p->period_type->unit), "nanoseconds"))
			violation("period type is not cpu/nanoseconds");
	}
	if (p->period <= 0 || p->duration_nanos <= 0 || p->time_nanos <= 0)
		violation("period, duration or time missing");
	for (i = 0; i < p->n_mapping; i++)
		if (p->mapping[i]->id != i + 1)
			violation("mapping %zu has id %llu", i, (unsigned long long)p->mapping[i]->id);
	for (i = 0; i < p->n_function; i++) {
		if (p->function[i]->id != i + 1)
			violation("function %zu has id %llu", i,
				  (unsigned long long)p->function[i]->id);
		str(p, p->function[i]->name);
		str(p, p->function[i]->system_name);
		str(p, p->function[i]->filename);
	}
	for (i = 0; i < p->n_location; i++) {
		const Perftools__Profiles__Location *l = p->location[i];

		if (l->id != i + 1)
			violation("location %zu has id %llu", i, (unsigned long long)l->id);
		if (l->mapping_id > p->n_mapping)
			violation("location %zu: mapping %llu out of range", i,
				  (unsigned long long)l->mapping_id);
		if (!l->n_line && !l->address)
			violation("location %zu has neither a line nor an address", i);
		for (j = 0; j < l->n_line; j++)
			if (!l->line[j]->function_id || l->line[j]->function_id > p->n_function)
				violation("location %zu: function out of range", i);
	}
	for (i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];

		if (s->n_value != p->n_sample_type)
			violation("sample %zu has %zu values", i, s->n_value);
		for (j = 0; j < s->n_value; j++)
			if (s->value[j] < 0)
				violation("sample %zu has a negative value", i);
		if (s->n_value >= 2 && s->value[1] != s->value[0] * p->period)
			violation("sample %zu: cpu != count * period", i);
		if (s->n_value == 4 && s->value[3] != s->value[1] + s->value[2])
			violation("sample %zu: wall != cpu + offcpu", i);
		for (j = 0; j < s->n_location_id; j++)
			if (!s->location_id[j] || s->location_id[j] > p->n_location)
				violation("sample %zu: location out of range", i);
		for (j = 0; j < s->n_label; j++) {
			str(p, s->label[j]->key);
			str(p, s->label[j]->str);
		}
	}
}

static void dump(const Profile *p)
{
	size_t i, j;

	printf("{\"time_nanos\":%lld,\"duration_nanos\":%lld,\"period\":%lld,\"sample_types\":[",
	       (long long)p->time_nanos, (long long)p->duration_nanos, (long long)p->period);
	for (i = 0; i < p->n_sample_type; i++) {
		printf(i ? "," : "");
		json_str(str(p, p->sample_type[i]->type));
	}
	printf("],\"comments\":[");
	for (i = 0; i < p->n_comment; i++) {
		printf(i ? "," : "");
		json_str(str(p, p->comment[i]));
	}
	printf("],\n\"mappings\":[");
	for (i = 0; i < p->n_mapping; i++) {
		const Perftools__Profiles__Mapping *m = p->mapping[i];

		printf("%s\n{\"id\":%llu,\"start\":%llu,\"limit\":%llu,\"offset\":%llu,\"file\":",
		       i ? "," : "", (unsigned long long)m->id, (unsigned long long)m->memory_start,
		       (unsigned long long)m->memory_limit, (unsigned long long)m->file_offset);
		json_str(str(p, m->filename));
		printf(",\"build_id\":");
		json_str(str(p, m->build_id));
		printf(",\"has_functions\":%s,\"has_filenames\":%s,\"has_line_numbers\":%s,"
		       "\"has_inline_frames\":%s}",
		       m->has_functions ? "true" : "false", m->has_filenames ? "true" : "false",
		       m->has_line_numbers ? "true" : "false",
		       m->has_inline_frames ? "true" : "false");
	}
	printf("],\n\"locations\":[");
	for (i = 0; i < p->n_location; i++) {
		const Perftools__Profiles__Location *l = p->location[i];

		printf("%s\n{\"id\":%llu,\"mapping\":%llu,\"address\":%llu,\"lines\":[", i ? "," : "",
		       (unsigned long long)l->id, (unsigned long long)l->mapping_id,
		       (unsigned long long)l->address);
		for (j = 0; j < l->n_line; j++) {
			const Perftools__Profiles__Function *f =
				l->line[j]->function_id && l->line[j]->function_id <= p->n_function ?
					p->function[l->line[j]->function_id - 1] :
					NULL;

			printf("%s{\"function\":", j ? "," : "");
			json_str(f ? str(p, f->name) : "");
			printf(",\"system_name\":");
			json_str(f ? str(p, f->system_name) : "");
			printf(",\"file\":");
			json_str(f ? str(p, f->filename) : "");
			printf(",\"line\":%lld}", (long long)l->line[j]->line);
		}
		printf("]}");
	}
	printf("],\n\"samples\":[");
	for (i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];

		printf("%s\n{\"count\":%lld,\"cpu\":%lld,\"offcpu\":%lld,\"locations\":[",
		       i ? "," : "", (long long)(!offcpu_only && s->n_value > 0 ? s->value[0] : 0),
		       (long long)(s->n_value > 1 ? s->value[1] : 0),
		       (long long)(offcpu_only ? s->value[0] : s->n_value > 2 ? s->value[2] : 0));
		for (j = 0; j < s->n_location_id; j++)
			printf("%s%llu", j ? "," : "", (unsigned long long)s->location_id[j]);
		printf("],\"labels\":{");
		for (j = 0; j < s->n_label; j++) {
			printf(j ? "," : "");
			json_str(str(p, s->label[j]->key));
			putchar(':');
			if (s->label[j]->str)
				json_str(str(p, s->label[j]->str));
			else
				printf("%lld", (long long)s->label[j]->num);
		}
		printf("}}");
	}
	printf("]}\n");
}

int main(int argc, char **argv)
{
	unsigned char *buf;
	size_t len = 0;
	Profile *p;

	if (argc != 2) {
		fprintf(stderr, "usage: pprof_dump FILE\n");
		return 2;
	}
	buf = read_all(argv[1], &len);
	if (!buf) {
		fprintf(stderr, "pprof_dump: %s: cannot read\n", argv[1]);
		return 2;
	}
	p = perftools__profiles__profile__unpack(NULL, len, buf);
	free(buf);
	if (!p) {
		fprintf(stderr, "pprof_dump: %s: not a profile.proto message\n", argv[1]);
		return 1;
	}
	check(p);
	if (!violations)
		dump(p);
	perftools__profiles__profile__free_unpacked(p, NULL);
	return violations ? 1 : 0;
}
