// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "common/hashmap.h"
#include "profile.h"
#include "top.h"

/* Functions are told apart by name and binary; unnamed frames by binary alone. */
struct func_stat {
	int64_t name;	  /* string index of the name, or -1 for an unnamed frame */
	uint64_t mapping; /* mapping id for unnamed frames, else 0 */
	struct top_entry entry;
	size_t last_sample; /* last sample counted in total, + 1 */
};

static uint64_t hash_func(const void *k)
{
	const struct func_stat *f = k;

	return hash_u64((uint64_t)f->name * 31 + f->mapping);
}

static bool equal_func(const void *a, const void *b)
{
	const struct func_stat *x = a, *y = b;

	return x->name == y->name && x->mapping == y->mapping;
}

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static void describe(const struct profile *p, struct func_stat *f, uint64_t mapping_id)
{
	const char *binary = "";

	if (mapping_id && mapping_id <= p->nr_mappings)
		binary = basename_of(profile__str(p, p->mappings[mapping_id - 1].filename));
	snprintf(f->entry.binary, sizeof(f->entry.binary), "%s", binary);
	if (f->name >= 0)
		snprintf(f->entry.name, sizeof(f->entry.name), "%s", profile__str(p, f->name));
	else if (binary[0] == '[' && binary[strlen(binary) - 1] == ']')
		/* Already a pseudo-name ([kernel.kallsyms], [vdso], [anon]): not bracketed again. */
		snprintf(f->entry.name, sizeof(f->entry.name), "%s", binary);
	else
		snprintf(f->entry.name, sizeof(f->entry.name), "[%s]",
			 *binary ? binary : "unknown");
}

static int cmp_self(const void *a, const void *b)
{
	const struct func_stat *x = *(struct func_stat *const *)a,
			       *y = *(struct func_stat *const *)b;

	if (x->entry.self != y->entry.self)
		return x->entry.self > y->entry.self ? -1 : 1;
	return strcmp(x->entry.name, y->entry.name);
}

static int cmp_total(const void *a, const void *b)
{
	const struct func_stat *x = *(struct func_stat *const *)a,
			       *y = *(struct func_stat *const *)b;

	if (x->entry.total != y->entry.total)
		return x->entry.total > y->entry.total ? -1 : 1;
	return strcmp(x->entry.name, y->entry.name);
}

int top_rank(const struct profile *p, enum top_value value, int by_total, struct top_entry *out,
	     unsigned int max)
{
	struct func_stat *stats = NULL, **order = NULL;
	size_t nr = 0, cap = 0, i, j, k;
	struct hashmap index;
	int err = 0;

	hashmap__init(&index, hash_func, equal_func);
	/* Sized up front (entries must not move while the index points at them): one per
	 * function, one per mapping for its unnamed frames, one for frames with neither. */
	cap = p->nr_functions + p->nr_mappings + 1;
	stats = calloc(cap ? cap : 1, sizeof(*stats));
	if (!stats) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < p->nr_samples; i++) {
		const struct profile_sample *s = &p->samples[i];
		uint64_t count = (uint64_t)s->values[value == TOP_OFFCPU ? 2 : 0];

		for (j = 0; j < s->nr_locations; j++) {
			const struct profile_location *l = profile__location(p, s->locations[j]);
			uint32_t nl = l && l->nr_lines ? l->nr_lines : 1;

			if (!l)
				continue;
			for (k = 0; k < nl; k++) {
				struct func_stat probe = { .name = -1 }, *f;

				if (l->nr_lines) {
					const struct profile_function *fn = profile__function_by_id(
						p, p->lines[l->first_line + k].function_id);

					probe.name = fn ? fn->name : 0;
				} else {
					probe.mapping = l->mapping_id;
				}
				f = hashmap__find(&index, &probe);
				if (!f) {
					if (nr >= cap)
						continue;
					f = &stats[nr++];
					*f = probe;
					describe(p, f, l->mapping_id);
					err = hashmap__insert(&index, f, f);
					if (err)
						goto cleanup;
				}
				/* The leaf is the innermost line of the first location. */
				if (j == 0 && k == 0)
					f->entry.self += count;
				if (f->last_sample != i + 1) {
					f->entry.total += count;
					f->last_sample = i + 1;
				}
			}
		}
	}
	order = calloc(nr ? nr : 1, sizeof(*order));
	if (!order) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0, j = 0; i < nr; i++) {
		/* A placeholder for missing callers is on many stacks but is no function. */
		if (by_total && !strcmp(stats[i].entry.name, "[truncated]"))
			continue;
		order[j++] = &stats[i];
	}
	nr = j;
	qsort(order, nr, sizeof(*order), by_total ? cmp_total : cmp_self);
	for (i = 0; i < nr && i < max; i++)
		out[i] = order[i]->entry;
	err = (int)i;
cleanup:
	hashmap__fini(&index);
	free(order);
	free(stats);
	return err;
}

static int print_table(FILE *out, const struct profile *p, enum top_value value, unsigned int n,
		       int by_total)
{
	struct top_entry *e = calloc(n ? n : 1, sizeof(*e));
	uint64_t sum = value == TOP_OFFCPU ? p->total_offcpu_ns : p->total_count;
	double total = sum ? (double)sum : 1.0;
	int nr, i;

	if (!e)
		return -ENOMEM;
	nr = top_rank(p, value, by_total, e, n);
	if (nr < 0) {
		free(e);
		return nr;
	}
	fprintf(out, "  %s%s:\n  %7s %7s  %s\n", value == TOP_OFFCPU ? "off CPU, " : "",
		by_total ? "by total (self + callees)" : "by self", "self", "total", "function");
	for (i = 0; i < nr && (by_total ? e[i].total : e[i].self); i++)
		fprintf(out, "  %6.2f%% %6.2f%%  %s%s%s%s\n", 100.0 * (double)e[i].self / total,
			100.0 * (double)e[i].total / total, e[i].name, e[i].binary[0] ? "  (" : "",
			e[i].binary, e[i].binary[0] ? ")" : "");
	free(e);
	return 0;
}

int top_print(FILE *out, const struct profile *p, unsigned int n)
{
	int err;

	if (!n)
		return 0;
	if (!p->total_count && !p->total_offcpu_ns) {
		fprintf(out, "  (no samples)\n");
		return 0;
	}
	err = p->total_count ? print_table(out, p, TOP_CPU, n, 0) : 0;
	if (!err && p->total_count)
		err = print_table(out, p, TOP_CPU, n, 1);
	if (!err && p->total_offcpu_ns) {
		fprintf(out, "  %.3f s off CPU:\n", (double)p->total_offcpu_ns / 1e9);
		err = print_table(out, p, TOP_OFFCPU, n, 0);
	}
	return err;
}
