/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The profile builder: the deduplicated tables of one pprof profile (profile.proto,
 * github.com/google/pprof; ../shared/design/PROTOCOLS.md section 5), filled while a window
 * is symbolized and read by the encoder (pprof.c) and the top-N report.
 *
 * Strings, mappings, functions and locations are interned: adding one twice returns the id
 * of the first. Ids are dense, 1..N in insertion order (0 means none); string index 0 is "".
 * Every string is stored as valid UTF-8: invalid bytes become U+FFFD. Samples with the same
 * locations and labels are merged. Every table has a cap (struct profile_opts); adding past
 * it fails with -E2BIG, so a hostile window cannot take unbounded memory.
 */
#ifndef IGNIS_PROFILE_H
#define IGNIS_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hashmap.h"
#include "common/ignis.h"

struct profile_mapping {
	uint64_t id;
	uint64_t memory_start;
	uint64_t memory_limit;
	uint64_t file_offset;
	int64_t filename; /* string index */
	int64_t build_id; /* string index, hex */
	bool has_functions;
	bool has_filenames;
	bool has_line_numbers;
	bool has_inline_frames;
	uint64_t nr_unnamed; /* locations of this mapping without a Line */
	const void *key;     /* the caller's dedup key (owned copy) */
	size_t key_len;
};

struct profile_function {
	uint64_t id;
	int64_t name;
	int64_t system_name;
	int64_t filename;
	int64_t start_line;
};

struct profile_line {
	uint64_t function_id;
	int64_t line;
};

/* Location tags: placeholders have no mapping and must not merge with each other
 * (DESIGN.md requirement 8). */
enum location_tag {
	TAG_NONE = 0,
	TAG_TRUNCATED = 1,	/* "[truncated]": the walk stopped before the outermost frame */
	TAG_UNKNOWN = 2,	/* "[unknown]": an address in no mapping */
	TAG_OTHER = 3,		/* "[other stacks]": cold stacks folded to fit a server's limits */
	TAG_PYTHON_UNNAMED = 4, /* "[unnamed Python frame]": a Python frame whose code object
				 * could not be read or was not the one the walker met */
	TAG_OFFCPU_CAPPED = 5,	/* "[off-CPU samples over the rate cap]": time, no stack */
	TAG_OFFCPU_EXITED = 6,	/* "[short off-CPU waits before exit]": time, no stack */
	TAG_MAX,
};

/* The placeholder function name of a tag ("" for TAG_NONE). */
const char *location_tag_name(enum location_tag tag);

struct profile_location {
	uint64_t id;
	uint64_t mapping_id; /* 0: none */
	uint64_t address;
	uint32_t nr_lines;   /* 0: not symbolized */
	uint32_t first_line; /* index into profile.lines */
	uint64_t tag;	     /* part of the dedup key: distinguishes placeholders */
};

/* A label: string value when str != 0, else numeric. */
struct profile_label {
	int64_t key;
	int64_t str;
	int64_t num;
};

struct profile_sample {
	uint32_t nr_locations;
	uint32_t nr_labels;
	uint32_t group;	     /* the caller's grouping (a server's target); part of the identity */
	uint64_t *locations; /* leaf first, ids */
	struct profile_label *labels;
	int64_t values[3]; /* samples/count, cpu/nanoseconds, offcpu/nanoseconds */
	uint64_t hash;
};

/* The sample types a profile is encoded with (values[] always holds all three). */
enum profile_types {
	PROFILE_CPU,	    /* samples/count, cpu/nanoseconds; period type cpu/nanoseconds */
	PROFILE_CPU_OFFCPU, /* those, then offcpu/nanoseconds and wall/nanoseconds (cpu +
			     * offcpu per sample); default sample type cpu */
	PROFILE_OFFCPU,	    /* offcpu/nanoseconds only, no period type: Grafana Alloy's
			     * off-CPU profile (reporter/builder.go in grafana/alloy) */
};

struct profile_opts {
	enum profile_types types;
	uint64_t period_ns;   /* 1e9 / sampling frequency */
	uint64_t time_ns;     /* window start, Unix ns */
	uint64_t duration_ns; /* window length */
	size_t max_strings;   /* caps; 0: defaults (1M strings, 1M locations, ...) */
	size_t max_locations;
	size_t max_samples;
};

struct profile {
	struct profile_opts opts;
	char **strings; /* strings[0] == "" */
	size_t nr_strings, cap_strings;
	struct profile_mapping *mappings;
	size_t nr_mappings, cap_mappings;
	struct profile_function *functions;
	size_t nr_functions, cap_functions;
	struct profile_location *locations;
	size_t nr_locations, cap_locations;
	struct profile_line *lines;
	size_t nr_lines, cap_lines;
	struct profile_sample *samples;
	size_t nr_samples, cap_samples;
	uint64_t total_count;	  /* sum of samples/count */
	uint64_t total_offcpu_ns; /* sum of offcpu/nanoseconds */
	int64_t *comments;	  /* string indexes of Profile.comment */
	size_t nr_comments, cap_comments;
	int64_t str_samples, str_count; /* indexes of the sample and period type names */
	int64_t str_cpu, str_nanoseconds;
	int64_t str_offcpu, str_wall; /* 0 in a PROFILE_CPU profile */

	struct hashmap string_index; /* string -> index + 1 */
	struct hashmap mapping_index;
	struct hashmap function_index;
	struct hashmap location_index;
	struct hashmap sample_index;
};

struct profile *profile__new(const struct profile_opts *opts);
void profile__free(struct profile *p);

/*
 * Make room for this many strings, functions, locations and samples in all (each cut to its
 * cap), so that a profile whose size is known ahead (a decoded one) grows no table while it
 * is filled. Returns 0 or -ENOMEM.
 */
int profile__reserve(struct profile *p, size_t strings, size_t functions, size_t locations,
		     size_t samples) __must_check;

/* Intern s. Returns its index (>= 0) or -ENOMEM / -E2BIG. */
int64_t profile__string(struct profile *p, const char *s) __must_check;

/*
 * Intern a mapping under the caller's key (key_len bytes, copied): e.g. a build ID, so that
 * one binary has one Mapping. `m` gives the fields (id, key ignored) for a new one. Returns
 * the mapping id (> 0) or -errno.
 */
int64_t profile__mapping(struct profile *p, const void *key, size_t key_len,
			 const struct profile_mapping *m) __must_check;

/* Intern a function. Returns its id (> 0) or -errno. */
int64_t profile__function(struct profile *p, const char *name, const char *system_name,
			  const char *filename, int64_t start_line) __must_check;

/*
 * The location (mapping_id, address, tag) of a mapping if interned, else 0. Callers
 * symbolize only locations that are not there yet. (A location without a mapping is known by
 * its first Line as well: profile__add_location() finds it.)
 */
uint64_t profile__find_location(const struct profile *p, uint64_t mapping_id, uint64_t address,
				uint64_t tag);

/*
 * Add a location with its lines (innermost first), or find it: a location of a mapping is
 * known by (mapping_id, address, tag), one without a mapping (mapping_id 0: placeholders,
 * interpreted frames such as Python's, address 0) by (address, tag, function and line of its
 * first Line). Returns its id (> 0) or -errno.
 */
int64_t profile__add_location(struct profile *p, uint64_t mapping_id, uint64_t address,
			      uint64_t tag, const struct profile_line *lines,
			      uint32_t nr_lines) __must_check;

/*
 * Add count CPU samples and offcpu_ns nanoseconds off CPU to the sample of group `group` with
 * these locations (leaf first) and labels (copied), merged with an identical sample of the
 * same group. Returns 0 or -errno.
 */
int profile__add_group_values(struct profile *p, uint32_t group, const uint64_t *locations,
			      uint32_t nr_locations, const struct profile_label *labels,
			      uint32_t nr_labels, uint64_t count, uint64_t offcpu_ns) __must_check;

/* profile__add_group_values() of count CPU samples. */
static inline int __must_check profile__add_group_sample(struct profile *p, uint32_t group,
							 const uint64_t *locations,
							 uint32_t nr_locations,
							 const struct profile_label *labels,
							 uint32_t nr_labels, uint64_t count)
{
	return profile__add_group_values(p, group, locations, nr_locations, labels, nr_labels,
					 count, 0);
}

/* profile__add_group_sample() in group 0. */
static inline int __must_check profile__add_sample(struct profile *p, const uint64_t *locations,
						   uint32_t nr_locations,
						   const struct profile_label *labels,
						   uint32_t nr_labels, uint64_t count)
{
	return profile__add_group_sample(p, 0, locations, nr_locations, labels, nr_labels, count);
}

/*
 * The placeholder location of tag (DESIGN.md requirement 8): mapping 0, one Line whose
 * function is named after the tag; address kept (an [unknown] frame's) or 0. Returns its id
 * (> 0) or -errno.
 */
int64_t profile__placeholder(struct profile *p, enum location_tag tag,
			     uint64_t address) __must_check;

/* Add a free-form comment (Profile.comment; `go tool pprof -comments`). Returns 0 or -errno. */
int profile__comment(struct profile *p, const char *text) __must_check;

/* Accessors by id / index; no bounds beyond assert-level checks. */
static inline const char *profile__str(const struct profile *p, int64_t idx)
{
	return idx >= 0 && (size_t)idx < p->nr_strings ? p->strings[idx] : "";
}

static inline const struct profile_location *profile__location(const struct profile *p, uint64_t id)
{
	return id && id <= p->nr_locations ? &p->locations[id - 1] : NULL;
}

static inline const struct profile_function *profile__function_by_id(const struct profile *p,
								     uint64_t id)
{
	return id && id <= p->nr_functions ? &p->functions[id - 1] : NULL;
}

/* Make sure s is valid UTF-8, replacing invalid sequences with U+FFFD. Returns a malloc'd
 * copy or NULL. */
char *utf8_sanitize(const char *s);

#endif /* IGNIS_PROFILE_H */
