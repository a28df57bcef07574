// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "report.h"

/* Caps: far past a day of a busy host's windows, short of what would exhaust memory. */
#define MAX_FRAMES (4u << 20)
#define MAX_STACKS (4u << 20)
#define MAX_PAIRS  (1ull << 30)
#define MAX_DEPTH  4096 /* frames in one stack, inline frames included */

static uint64_t hash_string_key(const void *k)
{
	return hash_str(k);
}

static bool equal_string_key(const void *a, const void *b)
{
	return !strcmp(a, b);
}

/* Interned strings: a frame is known by the two pointers. */
static uint64_t frame_hash(const struct report_frame *f)
{
	return hash_u64((uintptr_t)f->name) ^ hash_u64(~(uintptr_t)f->binary);
}

static uint64_t hash_frame_key(const void *k)
{
	return frame_hash(k);
}

/* Interned strings compare by pointer. */
static bool equal_frame_key(const void *a, const void *b)
{
	const struct report_frame *x = a, *y = b;

	return x->name == y->name && x->binary == y->binary;
}

static uint64_t hash_stack_key(const void *k)
{
	return ((const struct report_stack *)k)->hash;
}

static bool equal_stack_key(const void *a, const void *b)
{
	const struct report_stack *x = a, *y = b;

	return x->nr == y->nr && !memcmp(x->frames, y->frames, x->nr * sizeof(x->frames[0]));
}

static uint64_t hash_ptr_key(const void *k)
{
	return hash_u64((uintptr_t)k);
}

static bool equal_ptr_key(const void *a, const void *b)
{
	return a == b;
}

struct report *report__new(enum report_type type, const struct report_filter *filter)
{
	struct report *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->type = type;
	if (filter)
		r->filter = *filter;
	hashmap__init(&r->strings, hash_string_key, equal_string_key);
	hashmap__init(&r->frame_index, hash_frame_key, equal_frame_key);
	hashmap__init(&r->stack_index, hash_stack_key, equal_stack_key);
	hashmap__init(&r->window_stacks, hash_ptr_key, equal_ptr_key);
	return r;
}

void report__free(struct report *r)
{
	struct hashmap_entry *e;
	size_t i;

	if (!r)
		return;
	hashmap__for_each(&r->strings, e)
		free(e->value);
	for (i = 0; i < r->nr_frames; i++)
		free(r->frames[i]);
	for (i = 0; i < r->nr_stacks; i++)
		free(r->stacks[i]);
	free(r->frames);
	free(r->stacks);
	free(r->windows);
	free(r->pairs);
	free(r->loc_first);
	free(r->loc_nr);
	free(r->loc_frames);
	hashmap__fini(&r->strings);
	hashmap__fini(&r->frame_index);
	hashmap__fini(&r->stack_index);
	hashmap__fini(&r->window_stacks);
	free(r);
}

/* The one copy of s. NULL on allocation failure. */
static const char *intern(struct report *r, const char *s)
{
	char *copy = hashmap__find(&r->strings, s);

	if (copy)
		return copy;
	copy = strdup(s);
	if (!copy)
		return NULL;
	if (hashmap__insert(&r->strings, copy, copy)) {
		free(copy);
		return NULL;
	}
	return copy;
}

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* The frame (name, binary), added if new; binary is interned already. Returns its id or
 * -errno. */
static int64_t frame_id(struct report *r, const char *name, const char *binary, const char *file,
			int64_t line)
{
	struct report_frame probe = { .name = intern(r, name), .binary = binary };
	struct report_frame *f;
	uintptr_t found;
	int err;

	if (!probe.name || !probe.binary)
		return -ENOMEM;
	found = (uintptr_t)hashmap__find(&r->frame_index, &probe);
	if (found) {
		f = r->frames[found - 1];
		if (!f->line && line) /* a later location may know more */
			f->line = line;
		if (!f->file[0] && file[0] && !(f->file = intern(r, file)))
			return -ENOMEM;
		return (int64_t)found - 1;
	}
	if (r->nr_frames >= MAX_FRAMES)
		return -E2BIG;
	err = grow_array((void **)&r->frames, &r->cap_frames, r->nr_frames + 1, sizeof(*r->frames));
	if (err)
		return err;
	f = malloc(sizeof(*f));
	if (!f)
		return -ENOMEM;
	*f = probe;
	f->file = intern(r, file);
	f->line = line;
	if (!f->file ||
	    hashmap__insert(&r->frame_index, f, (void *)(uintptr_t)(r->nr_frames + 1))) {
		free(f);
		return -ENOMEM;
	}
	r->frames[r->nr_frames] = f;
	return (int64_t)r->nr_frames++;
}

/* The stack of nr frames (root first), added if new. Returns its id or -errno. */
static int64_t stack_id(struct report *r, const uint32_t *frames, uint32_t nr)
{
	struct report_stack *s, *probe;
	uintptr_t found;
	int err;

	probe = malloc(sizeof(*probe) + nr * sizeof(probe->frames[0]));
	if (!probe)
		return -ENOMEM;
	probe->nr = nr;
	memcpy(probe->frames, frames, nr * sizeof(frames[0]));
	probe->hash = hash_bytes(frames, nr * sizeof(frames[0]), nr);
	found = (uintptr_t)hashmap__find(&r->stack_index, probe);
	if (found) {
		free(probe);
		return (int64_t)found - 1;
	}
	s = probe;
	if (r->nr_stacks >= MAX_STACKS)
		err = -E2BIG;
	else
		err = grow_array((void **)&r->stacks, &r->cap_stacks, r->nr_stacks + 1,
				 sizeof(*r->stacks));
	if (!err)
		err = hashmap__insert(&r->stack_index, s, (void *)(uintptr_t)(r->nr_stacks + 1));
	if (err) {
		free(s);
		return err;
	}
	r->stacks[r->nr_stacks] = s;
	return (int64_t)r->nr_stacks++;
}

/*
 * The frames of location loc of p, innermost first, into out (room for max). Returns how many
 * or -errno.
 */
static int location_frames(struct report *r, const struct profile *p, uint64_t loc, uint32_t *out,
			   uint32_t max)
{
	const struct profile_location *l = profile__location(p, loc);
	const struct profile_mapping *m = NULL;
	const char *binary = "";
	char unnamed[300];
	uint32_t i, n = 0;
	int64_t id;

	if (!l)
		return -EINVAL;
	if (l->mapping_id && l->mapping_id <= p->nr_mappings) {
		m = &p->mappings[l->mapping_id - 1];
		binary = basename_of(profile__str(p, m->filename));
	}
	binary = intern(r, binary);
	if (!binary)
		return -ENOMEM;
	for (i = 0; i < l->nr_lines && n < max; i++) {
		const struct profile_line *ln = &p->lines[l->first_line + i];
		const struct profile_function *f = profile__function_by_id(p, ln->function_id);
		const char *name = f ? profile__str(p, f->name) : "";

		if (!name[0])
			continue;
		id = frame_id(r, name, binary, f ? profile__str(p, f->filename) : "",
			      f && f->start_line ? f->start_line : ln->line);
		if (id < 0)
			return (int)id;
		out[n++] = (uint32_t)id;
	}
	if (n || !max)
		return (int)n;
	/* No name: the binary's, bracketed once ("[kernel.kallsyms]" already is). */
	if (binary[0] == '[')
		snprintf(unnamed, sizeof(unnamed), "%s", binary);
	else if (binary[0])
		snprintf(unnamed, sizeof(unnamed), "[%s]", binary);
	else
		snprintf(unnamed, sizeof(unnamed), "[unknown]");
	id = frame_id(r, unnamed, binary, "", 0);
	if (id < 0)
		return (int)id;
	out[0] = (uint32_t)id;
	return 1;
}

const char *report_service_of(const char *namespace_, const char *container, const char *unit,
			      const char *container_id, const char *comm, char *out, size_t size)
{
	size_t n;

	if (namespace_ && namespace_[0] && container && container[0])
		snprintf(out, size, "%s/%s", namespace_, container);
	else if (unit && (n = strlen(unit)) > 8 && !strcmp(unit + n - 8, ".service"))
		snprintf(out, size, "%.*s", (int)(n - 8), unit);
	else if (container_id && container_id[0])
		snprintf(out, size, "%.12s", container_id);
	else
		snprintf(out, size, "%s", comm ? comm : "");
	return out;
}

static bool any_glob(char *const *globs, size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!fnmatch(globs[i], s, 0))
			return true;
	return false;
}

/* The string value of label key of s, else its number printed into num; NULL if absent. */
static const char *label_of(const struct profile *p, const struct profile_sample *s,
			    const char *key, char *num, size_t size)
{
	uint32_t i;

	for (i = 0; i < s->nr_labels; i++) {
		const struct profile_label *l = &s->labels[i];

		if (strcmp(profile__str(p, l->key), key))
			continue;
		if (l->str)
			return profile__str(p, l->str);
		snprintf(num, size, "%" PRId64, l->num);
		return num;
	}
	return NULL;
}

static bool label_matches(const struct profile *p, const struct profile_sample *s, const char *spec)
{
	const char *eq = strchr(spec, '='), *v;
	char key[256], num[32];

	if (!eq || (size_t)(eq - spec) >= sizeof(key))
		return false;
	snprintf(key, sizeof(key), "%.*s", (int)(eq - spec), spec);
	v = label_of(p, s, key, num, sizeof(num));
	return v && !fnmatch(eq + 1, v, 0);
}

static bool sample_selected(const struct report *r, const struct profile *p,
			    const struct profile_sample *s)
{
	const struct report_filter *f = &r->filter;
	char num[32], service[600];
	const char *v;
	size_t i;

	if (f->nr_pids) {
		v = label_of(p, s, "pid", num, sizeof(num));
		for (i = 0; v && i < f->nr_pids; i++)
			if (strtoull(v, NULL, 10) == f->pids[i])
				break;
		if (!v || i == f->nr_pids)
			return false;
	}
	if (f->nr_comms) {
		v = label_of(p, s, "comm", num, sizeof(num));
		if (!v || !any_glob(f->comms, f->nr_comms, v))
			return false;
	}
	if (f->nr_services) {
		char b1[32], b2[32], b3[32], b4[32], b5[32];

		v = label_of(p, s, "service_name", num, sizeof(num));
		if (!v)
			v = report_service_of(label_of(p, s, "namespace", b1, sizeof(b1)),
					      label_of(p, s, "container", b2, sizeof(b2)),
					      label_of(p, s, "unit", b3, sizeof(b3)),
					      label_of(p, s, "container_id", b4, sizeof(b4)),
					      label_of(p, s, "comm", b5, sizeof(b5)), service,
					      sizeof(service));
		if (!any_glob(f->services, f->nr_services, v))
			return false;
	}
	for (i = 0; i < f->nr_labels; i++)
		if (!label_matches(p, s, f->labels[i]))
			return false;
	return true;
}

/* The agent's comments: "ignis VERSION on HOST, window N" and the sample accounting. */
static void read_comments(struct report *r, const struct profile *p, struct report_window *w)
{
	size_t i;

	for (i = 0; i < p->nr_comments; i++) {
		const char *c = profile__str(p, p->comments[i]), *on, *win;
		unsigned long long taken, idle, filtered, profiled, dropped;
		unsigned int cpus;
		double rate;
		char host[256];

		if (!strncmp(c, "ignis ", 6) && (win = strstr(c, ", window ")) != NULL) {
			/* The version may hold spaces ("0.1.0 (git abc)"): the last " on ". */
			for (on = NULL; (c = strstr(c + 1, " on ")) && c < win;)
				on = c;
			if (on && win - on - 4 > 0 && (size_t)(win - on - 4) < sizeof(host)) {
				snprintf(host, sizeof(host), "%.*s", (int)(win - on - 4), on + 4);
				w->host = intern(r, host) ?: w->host;
			}
			w->seq = strtoull(win + 9, NULL, 10);
		} else if (sscanf(c,
				  "samples %llu (%lf Hz per CPU on %u CPUs): %llu idle, %llu "
				  "filtered, %llu profiled, %llu dropped",
				  &taken, &rate, &cpus, &idle, &filtered, &profiled,
				  &dropped) == 7) {
			w->has_accounting = true;
			w->taken = taken;
			w->idle = idle;
			w->filtered = filtered;
			w->profiled = profiled;
			w->dropped = dropped;
			w->nr_cpus = cpus;
			w->rate_hz = rate;
		}
	}
}

/* "YYYYmmddTHHMMSSZ_<host>_w<seq>...": the host, into out. */
static void host_of_name(const char *path, char *out, size_t size)
{
	const char *name = basename_of(path), *end;

	out[0] = '\0';
	if (strlen(name) < 18 || name[8] != 'T' || name[15] != 'Z' || name[16] != '_')
		return;
	end = strstr(name + 17, "_w");
	if (end && (size_t)(end - name - 17) < size)
		snprintf(out, size, "%.*s", (int)(end - name - 17), name + 17);
}

static int add_pair(struct report *r, struct report_window *w, int64_t stack, uint64_t value)
{
	struct report_stack *s = r->stacks[stack];
	uintptr_t found = (uintptr_t)hashmap__find(&r->window_stacks, s);
	int err;

	if (found) {
		r->pairs[found - 1].value += value;
		return 0;
	}
	if (r->nr_pairs >= MAX_PAIRS)
		return -E2BIG;
	err = grow_array((void **)&r->pairs, &r->cap_pairs, r->nr_pairs + 1, sizeof(*r->pairs));
	if (err)
		return err;
	err = hashmap__insert(&r->window_stacks, s, (void *)(uintptr_t)(r->nr_pairs + 1));
	if (err)
		return err;
	r->pairs[r->nr_pairs++] = (struct report_pair){ (uint32_t)stack, value };
	w->nr_pairs++;
	return 0;
}

/* The frames of location id of p (innermost first) into out, from the scratch once found.
 * Returns how many, or -errno. */
static int cached_frames(struct report *r, const struct profile *p, uint64_t id, uint32_t *out,
			 uint32_t max)
{
	uint32_t buf[MAX_DEPTH], n;
	int got, err;

	if (!id || id > p->nr_locations)
		return -EINVAL;
	if (r->loc_nr[id] == UINT32_MAX) {
		got = location_frames(r, p, id, buf, MAX_DEPTH);
		if (got < 0)
			return got;
		err = grow_array((void **)&r->loc_frames, &r->cap_loc_frames,
				 r->nr_loc_frames + (size_t)got + 1, sizeof(*r->loc_frames));
		if (err)
			return err;
		memcpy(r->loc_frames + r->nr_loc_frames, buf, (size_t)got * sizeof(buf[0]));
		r->loc_first[id] = (uint32_t)r->nr_loc_frames;
		r->loc_nr[id] = (uint32_t)got;
		r->nr_loc_frames += (size_t)got;
	}
	n = r->loc_nr[id] < max ? r->loc_nr[id] : max;
	memcpy(out, r->loc_frames + r->loc_first[id], n * sizeof(out[0]));
	return (int)n;
}

int report__add_profile(struct report *r, const struct profile *p, const char *path, uint32_t side)
{
	uint32_t frames[MAX_DEPTH];
	struct report_window *w;
	char host[256];
	size_t i, j;
	int err;

	err = grow_array((void **)&r->windows, &r->cap_windows, r->nr_windows + 1,
			 sizeof(*r->windows));
	if (err)
		return err;
	w = &r->windows[r->nr_windows];
	*w = (struct report_window){ .time_ns = p->opts.time_ns,
				     .duration_ns = p->opts.duration_ns,
				     .side = side,
				     .first_pair = r->nr_pairs };
	host_of_name(path, host, sizeof(host));
	w->path = intern(r, path);
	w->host = intern(r, host);
	if (!w->path || !w->host)
		return -ENOMEM;
	read_comments(r, p, w);
	if (!r->period_ns && r->type == REPORT_CPU && p->opts.types != PROFILE_OFFCPU)
		r->period_ns = p->opts.period_ns;
	hashmap__clear(&r->window_stacks);
	if (p->nr_locations + 1 > r->cap_locs) {
		size_t cap = r->cap_locs;

		err = grow_array((void **)&r->loc_first, &cap, p->nr_locations + 1,
				 sizeof(*r->loc_first));
		cap = r->cap_locs;
		if (!err)
			err = grow_array((void **)&r->loc_nr, &cap, p->nr_locations + 1,
					 sizeof(*r->loc_nr));
		if (err)
			return err;
		r->cap_locs = cap;
	}
	memset(r->loc_nr, 0xff, (p->nr_locations + 1) * sizeof(*r->loc_nr));
	r->nr_loc_frames = 0;
	for (i = 0; i < p->nr_samples; i++) {
		const struct profile_sample *s = &p->samples[i];
		uint64_t value = (uint64_t)(r->type == REPORT_CPU ? s->values[0] : s->values[2]);
		uint32_t n = 0, k;
		int64_t stack;

		if (!value)
			continue;
		w->value_all += value;
		if (!sample_selected(r, p, s))
			continue;
		/* Locations leaf first, each one's frames innermost first: reversed, root first. */
		for (j = 0; j < s->nr_locations && n < MAX_DEPTH; j++) {
			int got = cached_frames(r, p, s->locations[j], frames + n, MAX_DEPTH - n);

			if (got < 0)
				return got;
			n += (uint32_t)got;
		}
		for (k = 0; k < n / 2; k++) {
			uint32_t t = frames[k];

			frames[k] = frames[n - 1 - k];
			frames[n - 1 - k] = t;
		}
		stack = stack_id(r, frames, n);
		if (stack < 0)
			return (int)stack;
		err = add_pair(r, w, stack, value);
		if (err)
			return err;
		w->value += value;
	}
	r->nr_windows++;
	return 0;
}

static int cmp_window(const void *a, const void *b)
{
	const struct report_window *x = a, *y = b;

	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return strcmp(x->path, y->path);
}

void report__sort(struct report *r)
{
	if (r->nr_windows > 1)
		qsort(r->windows, r->nr_windows, sizeof(*r->windows), cmp_window);
}

bool report_range_has(const struct report_range *rg, const struct report_window *w)
{
	return (rg->side < 0 || (uint32_t)rg->side == w->side) && w->time_ns >= rg->start_ns &&
	       (!rg->end_ns || w->time_ns < rg->end_ns);
}

uint64_t report__sum_stacks(const struct report *r, const struct report_range *rg,
			    uint64_t *stack_values)
{
	uint64_t total = 0;
	size_t i, j;

	memset(stack_values, 0, r->nr_stacks * sizeof(*stack_values));
	for (i = 0; i < r->nr_windows; i++) {
		const struct report_window *w = &r->windows[i];

		if (!report_range_has(rg, w))
			continue;
		for (j = 0; j < w->nr_pairs; j++) {
			const struct report_pair *pr = &r->pairs[w->first_pair + j];

			stack_values[pr->stack] += pr->value;
			total += pr->value;
		}
	}
	return total;
}

int report__frame_values(const struct report *r, const uint64_t *stack_values, uint64_t *self,
			 uint64_t *total)
{
	/* The last stack that counted each frame: a recursive frame counts once. */
	size_t *seen = malloc((r->nr_frames ? r->nr_frames : 1) * sizeof(*seen)), i;
	uint32_t j;

	if (!seen)
		return -ENOMEM;
	memset(self, 0, r->nr_frames * sizeof(*self));
	memset(total, 0, r->nr_frames * sizeof(*total));
	for (i = 0; i < r->nr_frames; i++)
		seen[i] = SIZE_MAX;
	for (i = 0; i < r->nr_stacks; i++) {
		const struct report_stack *s = r->stacks[i];

		if (!stack_values[i] || !s->nr)
			continue;
		self[s->frames[s->nr - 1]] += stack_values[i];
		for (j = 0; j < s->nr; j++) {
			if (seen[s->frames[j]] == i)
				continue;
			seen[s->frames[j]] = i;
			total[s->frames[j]] += stack_values[i];
		}
	}
	free(seen);
	return 0;
}

/* The merged profile's string of src's string idx. */
static int64_t merge_string(struct profile *dst, const struct profile *src, int64_t idx)
{
	return profile__string(dst, profile__str(src, idx));
}

static int64_t merge_mapping(struct profile *dst, const struct profile *src, uint64_t id)
{
	const struct profile_mapping *m = &src->mappings[id - 1];
	struct profile_mapping pm = *m;
	struct {
		int64_t filename, build_id;
		uint64_t start, limit, offset;
	} key;

	pm.filename = merge_string(dst, src, m->filename);
	pm.build_id = merge_string(dst, src, m->build_id);
	if (pm.filename < 0 || pm.build_id < 0)
		return pm.filename < 0 ? pm.filename : pm.build_id;
	memset(&key, 0, sizeof(key));
	key.filename = pm.filename;
	key.build_id = pm.build_id;
	key.start = m->memory_start;
	key.limit = m->memory_limit;
	key.offset = m->file_offset;
	return profile__mapping(dst, &key, sizeof(key), &pm);
}

/* Lines of one merged location, at most (as pprof_decode() keeps). */
#define MERGE_MAX_LINES 256

static int64_t merge_location(struct profile *dst, const struct profile *src, uint64_t id)
{
	const struct profile_location *l = profile__location(src, id);
	struct profile_line lines[MERGE_MAX_LINES];
	int64_t mapping = 0, fn;
	uint32_t i, n;

	if (!l)
		return -EINVAL;
	if (l->mapping_id && l->mapping_id <= src->nr_mappings) {
		mapping = merge_mapping(dst, src, l->mapping_id);
		if (mapping < 0)
			return mapping;
	}
	n = l->nr_lines < MERGE_MAX_LINES ? l->nr_lines : MERGE_MAX_LINES;
	for (i = 0; i < n; i++) {
		const struct profile_line *ln = &src->lines[l->first_line + i];
		const struct profile_function *f = profile__function_by_id(src, ln->function_id);

		if (!f)
			return -EINVAL;
		fn = profile__function(dst, profile__str(src, f->name),
				       profile__str(src, f->system_name),
				       profile__str(src, f->filename), f->start_line);
		if (fn < 0)
			return fn;
		lines[i] = (struct profile_line){ .function_id = (uint64_t)fn, .line = ln->line };
	}
	return profile__add_location(dst, (uint64_t)mapping, l->address, l->tag, lines, n);
}

int report__merge(struct report *r, const struct profile *p)
{
	struct profile *dst = r->merged;
	uint64_t *loc_ids = NULL, locs[MAX_DEPTH], end;
	struct profile_label labels[64];
	size_t i, j;
	int64_t v;
	int err = 0;

	if (!dst)
		return 0;
	loc_ids = calloc(p->nr_locations + 1, sizeof(*loc_ids));
	if (!loc_ids)
		return -ENOMEM;
	if (p->opts.time_ns && (!dst->opts.time_ns || p->opts.time_ns < dst->opts.time_ns)) {
		end = dst->opts.time_ns + dst->opts.duration_ns;
		dst->opts.time_ns = p->opts.time_ns;
		dst->opts.duration_ns = end > p->opts.time_ns ? end - p->opts.time_ns : 0;
	}
	end = p->opts.time_ns + p->opts.duration_ns;
	if (end > dst->opts.time_ns + dst->opts.duration_ns)
		dst->opts.duration_ns = end - dst->opts.time_ns;
	if (!dst->opts.period_ns)
		dst->opts.period_ns = p->opts.period_ns;
	for (i = 0; !err && i < p->nr_samples; i++) {
		const struct profile_sample *s = &p->samples[i];
		uint32_t nr_labels = 0, n = 0;

		if (!(r->type == REPORT_CPU ? s->values[0] : s->values[2]) ||
		    !sample_selected(r, p, s))
			continue;
		for (j = 0; j < s->nr_locations && n < MAX_DEPTH; j++) {
			uint64_t id = s->locations[j];

			if (!id || id > p->nr_locations) {
				err = -EINVAL;
				break;
			}
			if (!loc_ids[id]) {
				v = merge_location(dst, p, id);
				if (v < 0) {
					err = (int)v;
					break;
				}
				loc_ids[id] = (uint64_t)v;
			}
			locs[n++] = loc_ids[id];
		}
		for (j = 0; !err && j < s->nr_labels && nr_labels < ARRAY_SIZE(labels); j++) {
			const struct profile_label *l = &s->labels[j];
			int64_t key = merge_string(dst, p, l->key);
			int64_t str = l->str ? merge_string(dst, p, l->str) : 0;

			if (key < 0 || str < 0)
				err = key < 0 ? (int)key : (int)str;
			else
				labels[nr_labels++] = (struct profile_label){ .key = key,
									      .str = str,
									      .num = l->num };
		}
		if (!err)
			err = profile__add_group_values(dst, 0, locs, n, labels, nr_labels,
							(uint64_t)s->values[0],
							(uint64_t)s->values[2]);
	}
	free(loc_ids);
	return err;
}
