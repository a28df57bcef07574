// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hashmap.h"
#include "pprof.h"
#include "profile.h"
#include "split.h"

#define MAX_KEPT_LABELS 8

/* Copies samples of one profile into another, re-interning what they reference. */
struct copier {
	const struct profile *src;
	struct profile *dst;
	struct hashmap locations;      /* src location id -> dst location id */
	struct hashmap functions;      /* src function id -> dst function id */
	int64_t keep[MAX_KEPT_LABELS]; /* src string indexes of the kept label keys */
	size_t nr_keep;
};

static uint64_t hash_id(const void *k)
{
	return hash_u64((uintptr_t)k);
}

static bool equal_id(const void *a, const void *b)
{
	return a == b;
}

/* The string index of s in p, or -1 (a scan: done once per split). */
static int64_t find_string(const struct profile *p, const char *s)
{
	size_t i;

	for (i = 1; i < p->nr_strings; i++)
		if (!strcmp(p->strings[i], s))
			return (int64_t)i;
	return -1;
}

static int copier_init(struct copier *cp, const struct profile *src, const struct split_opts *o,
		       enum profile_types types)
{
	struct profile_opts po = src->opts;
	size_t i;

	po.types = types;

	memset(cp, 0, sizeof(*cp));
	cp->src = src;
	hashmap__init(&cp->locations, hash_id, equal_id);
	hashmap__init(&cp->functions, hash_id, equal_id);
	for (i = 0; o && i < o->nr_sample_labels && cp->nr_keep < MAX_KEPT_LABELS; i++) {
		int64_t k = find_string(src, o->sample_labels[i]);

		if (k > 0)
			cp->keep[cp->nr_keep++] = k;
	}
	cp->dst = profile__new(&po);
	if (!cp->dst)
		return -ENOMEM;
	for (i = 0; i < src->nr_comments; i++)
		if (profile__comment(cp->dst, profile__str(src, src->comments[i])))
			return -ENOMEM;
	return 0;
}

/* Release the copier; the destination profile unless taken. */
static void copier_fini(struct copier *cp)
{
	hashmap__fini(&cp->locations);
	hashmap__fini(&cp->functions);
	profile__free(cp->dst);
	cp->dst = NULL;
}

static struct profile *copier_take(struct copier *cp)
{
	struct profile *p = cp->dst;

	cp->dst = NULL;
	copier_fini(cp);
	return p;
}

static int64_t copy_string(struct copier *cp, int64_t idx)
{
	return idx ? profile__string(cp->dst, profile__str(cp->src, idx)) : 0;
}

static int64_t copy_function(struct copier *cp, uint64_t id)
{
	const struct profile_function *f = profile__function_by_id(cp->src, id);
	uintptr_t found = (uintptr_t)hashmap__find(&cp->functions, (void *)(uintptr_t)id);
	int64_t fn;
	int err;

	if (found)
		return (int64_t)found;
	if (!f)
		return -EINVAL;
	fn = profile__function(cp->dst, profile__str(cp->src, f->name),
			       profile__str(cp->src, f->system_name),
			       profile__str(cp->src, f->filename), f->start_line);
	if (fn < 0)
		return fn;
	err = hashmap__insert(&cp->functions, (void *)(uintptr_t)id, (void *)(uintptr_t)fn);
	return err ? err : fn;
}

static int64_t copy_mapping(struct copier *cp, uint64_t id)
{
	const struct profile_mapping *m;
	struct profile_mapping copy;

	if (!id)
		return 0;
	if (id > cp->src->nr_mappings)
		return -EINVAL;
	m = &cp->src->mappings[id - 1];
	copy = *m;
	copy.filename = copy_string(cp, m->filename);
	copy.build_id = copy.filename < 0 ? copy.filename : copy_string(cp, m->build_id);
	if (copy.build_id < 0)
		return copy.build_id;
	return profile__mapping(cp->dst, m->key, m->key_len, &copy);
}

#define MAX_LINES 64

static int64_t copy_location(struct copier *cp, uint64_t id)
{
	const struct profile_location *l = profile__location(cp->src, id);
	uintptr_t found = (uintptr_t)hashmap__find(&cp->locations, (void *)(uintptr_t)id);
	struct profile_line lines[MAX_LINES];
	int64_t mapping, fn, loc;
	uint32_t i, n;
	int err;

	if (found)
		return (int64_t)found;
	if (!l)
		return -EINVAL;
	mapping = copy_mapping(cp, l->mapping_id);
	if (mapping < 0)
		return mapping;
	n = l->nr_lines < MAX_LINES ? l->nr_lines : MAX_LINES;
	for (i = 0; i < n; i++) {
		const struct profile_line *sl = &cp->src->lines[l->first_line + i];

		fn = copy_function(cp, sl->function_id);
		if (fn < 0)
			return fn;
		lines[i] = (struct profile_line){ .function_id = (uint64_t)fn, .line = sl->line };
	}
	loc = profile__add_location(cp->dst, (uint64_t)mapping, l->address, l->tag, lines, n);
	if (loc < 0)
		return loc;
	err = hashmap__insert(&cp->locations, (void *)(uintptr_t)id, (void *)(uintptr_t)loc);
	return err ? err : loc;
}

/* Copy one sample, its labels reduced to the kept ones; the group is dropped. */
static int copy_sample(struct copier *cp, const struct profile_sample *s)
{
	uint64_t locs[2 * 1024 + 8];
	struct profile_label labels[MAX_KEPT_LABELS];
	uint32_t i, nr_labels = 0;
	size_t j;

	if (s->nr_locations > ARRAY_SIZE(locs))
		return -E2BIG;
	for (i = 0; i < s->nr_locations; i++) {
		int64_t loc = copy_location(cp, s->locations[i]);

		if (loc < 0)
			return (int)loc;
		locs[i] = (uint64_t)loc;
	}
	for (i = 0; i < s->nr_labels && nr_labels < MAX_KEPT_LABELS; i++) {
		const struct profile_label *l = &s->labels[i];

		for (j = 0; j < cp->nr_keep; j++) {
			if (l->key != cp->keep[j] || !l->str)
				continue;
			labels[nr_labels].key = copy_string(cp, l->key);
			labels[nr_labels].str = copy_string(cp, l->str);
			labels[nr_labels].num = 0;
			if (labels[nr_labels].key < 0 || labels[nr_labels].str < 0)
				return -ENOMEM;
			nr_labels++;
		}
	}
	return profile__add_group_values(cp->dst, 0, locs, s->nr_locations, labels, nr_labels,
					 (uint64_t)s->values[0], (uint64_t)s->values[2]);
}

/* ---- Limits ----------------------------------------------------------------------------- */

struct splitter {
	const struct profile *src;
	const struct split_opts *o;
	struct split_result *out;
	int64_t pid_key;	   /* src string index of "pid", or -1 */
	enum profile_types *types; /* per group: what its samples carry */
	size_t max_samples, max_bytes;
};

struct pid_weight {
	int64_t pid;
	uint64_t weight; /* distinct samples */
};

static int64_t pid_of(const struct splitter *sp, const struct profile_sample *s)
{
	uint32_t i;

	for (i = 0; i < s->nr_labels; i++)
		if (s->labels[i].key == sp->pid_key && !s->labels[i].str)
			return s->labels[i].num;
	return -1;
}

static int cmp_pid(const void *a, const void *b)
{
	const struct pid_weight *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int cmp_weight_desc(const void *a, const void *b)
{
	const struct pid_weight *x = a, *y = b;

	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	return cmp_pid(a, b);
}

/* Whether pid is in the set (sorted by pid). */
static bool has_pid(const struct pid_weight *set, size_t nr, int64_t pid)
{
	struct pid_weight key = { .pid = pid };

	return bsearch(&key, set, nr, sizeof(*set), cmp_pid) != NULL;
}

static int add_part(struct splitter *sp, uint32_t group, struct profile *p, const uint8_t *raw,
		    size_t raw_len, uint64_t folded)
{
	struct split_part *part;
	int err;

	err = grow_array((void **)&sp->out->parts, &sp->out->cap, sp->out->nr + 1,
			 sizeof(*sp->out->parts));
	if (err)
		return err;
	part = &sp->out->parts[sp->out->nr];
	memset(part, 0, sizeof(*part));
	err = gzip_compress(raw, raw_len, sp->o->gzip_level, &part->data, &part->len);
	if (err)
		return err;
	part->group = group;
	part->raw_len = raw_len;
	part->samples = p->total_count;
	part->folded = folded;
	sp->out->nr++;
	return 0;
}

static bool fits(const struct splitter *sp, const struct profile *p, size_t raw_len)
{
	return raw_len <= sp->max_bytes && p->nr_samples <= sp->max_samples;
}

static int cmp_sample_desc(const void *a, const void *b, void *ctx)
{
	const struct profile *p = ctx;
	const struct profile_sample *x = &p->samples[*(const size_t *)a];
	const struct profile_sample *y = &p->samples[*(const size_t *)b];

	/* By time: CPU and off-CPU nanoseconds alike. */
	if (x->values[1] + x->values[2] != y->values[1] + y->values[2])
		return x->values[1] + x->values[2] > y->values[1] + y->values[2] ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/*
 * p (one process, or what cannot be split further) exceeds a limit: keep its hottest
 * samples and fold the rest into one [other stacks] sample, shrinking until it fits.
 */
static int fold(struct splitter *sp, uint32_t group, const struct profile *p, size_t raw_len)
{
	size_t *order = malloc((p->nr_samples + 1) * sizeof(*order)), keep, i;
	struct profile *q = NULL;
	uint8_t *raw = NULL;
	size_t len = 0;
	int err = 0;

	if (!order)
		return -ENOMEM;
	for (i = 0; i < p->nr_samples; i++)
		order[i] = i;
	qsort_r(order, p->nr_samples, sizeof(*order), cmp_sample_desc, (void *)p);
	keep = p->nr_samples;
	if (keep >= sp->max_samples)
		keep = sp->max_samples - 1;
	if (raw_len > sp->max_bytes)
		keep = (size_t)((double)keep * (double)sp->max_bytes / (double)raw_len * 0.9);
	for (;;) {
		struct copier cp;
		uint64_t folded = 0, folded_ns = 0, loc;
		int64_t other;
		char text[160];

		err = copier_init(&cp, p, sp->o, p->opts.types);
		for (i = 0; !err && i < p->nr_samples; i++) {
			const struct profile_sample *s = &p->samples[order[i]];

			/* All labels are kept: p holds only the kept ones already. */
			if (i < keep) {
				err = copy_sample(&cp, s);
			} else {
				folded += (uint64_t)s->values[0];
				folded_ns += (uint64_t)s->values[2];
			}
		}
		if (!err && (folded || folded_ns)) {
			other = profile__placeholder(cp.dst, TAG_OTHER, 0);
			loc = (uint64_t)other;
			err = other < 0 ? (int)other :
					  profile__add_group_values(cp.dst, 0, &loc, 1, NULL, 0,
								    folded, folded_ns);
		}
		snprintf(text, sizeof(text),
			 "%" PRIu64 " samples and %" PRIu64
			 " ns off CPU of %zu cold stacks folded into [other stacks] to stay "
			 "under the server's limits",
			 folded, folded_ns, p->nr_samples - keep);
		if (!err && (folded || folded_ns))
			err = profile__comment(cp.dst, text);
		if (err) {
			copier_fini(&cp);
			break;
		}
		q = copier_take(&cp);
		free(raw);
		raw = NULL;
		err = pprof_encode(q, -1, &raw, &len);
		if (err)
			break;
		if (fits(sp, q, len) || !keep) {
			err = add_part(sp, group, q, raw, len, folded);
			sp->out->folded_samples += folded;
			break;
		}
		keep = keep * 7 / 10;
		profile__free(q);
		q = NULL;
	}
	profile__free(q);
	free(raw);
	free(order);
	return err;
}

/* Emit the samples of group whose process is in set (sorted by pid); split it while over
 * the limits, fold what one process alone cannot fit. */
static int emit(struct splitter *sp, uint32_t group, struct pid_weight *set, size_t nr)
{
	const struct profile *src = sp->src;
	struct pid_weight *a = NULL, *b = NULL;
	struct profile *p = NULL;
	struct copier cp;
	uint64_t wa = 0, wb = 0;
	size_t i, na = 0, nb = 0;
	uint8_t *raw = NULL;
	size_t len = 0;
	int err;

	err = copier_init(&cp, src, sp->o, sp->types[group]);
	for (i = 0; !err && i < src->nr_samples; i++) {
		const struct profile_sample *s = &src->samples[i];

		if (s->group == group && has_pid(set, nr, pid_of(sp, s)))
			err = copy_sample(&cp, s);
	}
	if (err) {
		copier_fini(&cp);
		return err;
	}
	p = copier_take(&cp);
	err = pprof_encode(p, -1, &raw, &len);
	if (err)
		goto out;
	if (fits(sp, p, len)) {
		err = add_part(sp, group, p, raw, len, 0);
		goto out;
	}
	if (nr == 1) {
		err = fold(sp, group, p, len);
		goto out;
	}
	/* Two halves of about equal weight, heaviest processes first. */
	a = malloc(nr * sizeof(*a));
	b = malloc(nr * sizeof(*b));
	if (!a || !b) {
		err = -ENOMEM;
		goto out;
	}
	qsort(set, nr, sizeof(*set), cmp_weight_desc);
	for (i = 0; i < nr; i++) {
		if (wa <= wb) {
			a[na++] = set[i];
			wa += set[i].weight;
		} else {
			b[nb++] = set[i];
			wb += set[i].weight;
		}
	}
	qsort(a, na, sizeof(*a), cmp_pid);
	qsort(b, nb, sizeof(*b), cmp_pid);
	profile__free(p);
	p = NULL;
	free(raw);
	raw = NULL;
	err = emit(sp, group, a, na);
	if (!err)
		err = emit(sp, group, b, nb);
out:
	free(a);
	free(b);
	free(raw);
	profile__free(p);
	return err;
}

/* The group's profile is over a limit: split it by process. */
static int split_group(struct splitter *sp, uint32_t group, const struct profile *whole,
		       size_t raw_len)
{
	const struct profile *src = sp->src;
	struct pid_weight *set = NULL;
	size_t nr = 0, cap = 0, i, j;
	int err = 0;

	sp->out->split_groups++;
	if (sp->pid_key < 0)
		return fold(sp, group, whole, raw_len);
	for (i = 0; i < src->nr_samples; i++) {
		if (src->samples[i].group != group)
			continue;
		err = grow_array((void **)&set, &cap, nr + 1, sizeof(*set));
		if (err)
			goto out;
		set[nr++] = (struct pid_weight){ .pid = pid_of(sp, &src->samples[i]), .weight = 1 };
	}
	/* Merge the entries of each process. */
	qsort(set, nr, sizeof(*set), cmp_pid);
	for (i = 0, j = 0; i < nr; i++) {
		if (j && set[j - 1].pid == set[i].pid)
			set[j - 1].weight++;
		else
			set[j++] = set[i];
	}
	if (j == 1)
		err = fold(sp, group, whole, raw_len);
	else
		err = emit(sp, group, set, j);
out:
	free(set);
	return err;
}

int profile_split(const struct profile *src, uint32_t nr_groups, const struct split_opts *opts,
		  struct split_result *out)
{
	struct splitter sp = {
		.src = src,
		.o = opts,
		.out = out,
		.max_samples = opts->max_samples ? opts->max_samples : SPLIT_MAX_SAMPLES,
		.max_bytes = opts->max_bytes ? opts->max_bytes : SPLIT_MAX_BYTES,
	};
	struct copier *cps = calloc(nr_groups + 1, sizeof(*cps));
	uint8_t *kinds = calloc(nr_groups + 1, 1); /* bit 0: CPU samples, bit 1: off-CPU */
	uint32_t g, ready = 0;
	size_t i;
	int err = 0;

	sp.types = calloc(nr_groups + 1, sizeof(*sp.types));
	if (!cps || !kinds || !sp.types) {
		err = -ENOMEM;
		goto out;
	}
	sp.pid_key = find_string(src, "pid");
	/* A server's series holds one profile type: a group gets only the sample types its
	 * samples carry (a target's CPU and off-CPU series are groups of their own). */
	for (i = 0; i < src->nr_samples; i++) {
		const struct profile_sample *s = &src->samples[i];

		if (s->group < nr_groups)
			kinds[s->group] |= (s->values[0] ? 1 : 0) | (s->values[2] ? 2 : 0);
	}
	for (g = 0; g < nr_groups; g++)
		sp.types[g] = src->opts.types == PROFILE_CPU ? PROFILE_CPU :
			      kinds[g] == 2		     ? PROFILE_OFFCPU :
			      kinds[g] == 1		     ? PROFILE_CPU :
							       PROFILE_CPU_OFFCPU;
	for (g = 0; g < nr_groups && !err; g++, ready++)
		err = copier_init(&cps[g], src, opts, sp.types[g]);
	/* One pass over the window: each sample to its target's profile. */
	for (i = 0; !err && i < src->nr_samples; i++) {
		const struct profile_sample *s = &src->samples[i];

		if (s->group < nr_groups)
			err = copy_sample(&cps[s->group], s);
	}
	for (g = 0; g < nr_groups && !err; g++) {
		struct profile *p = cps[g].dst;
		uint8_t *raw = NULL;
		size_t len = 0;

		if (!p->nr_samples)
			continue;
		err = pprof_encode(p, -1, &raw, &len);
		if (!err && fits(&sp, p, len))
			err = add_part(&sp, g, p, raw, len, 0);
		else if (!err)
			err = split_group(&sp, g, p, len);
		free(raw);
		/* The whole is no longer needed: keep memory at about one window's worth. */
		copier_fini(&cps[g]);
	}
	for (g = 0; g < ready; g++)
		copier_fini(&cps[g]);
out:
	free(cps);
	free(kinds);
	free(sp.types);
	return err;
}

void split_result_fini(struct split_result *r)
{
	size_t i;

	for (i = 0; i < r->nr; i++)
		free(r->parts[i].data);
	free(r->parts);
	memset(r, 0, sizeof(*r));
}
