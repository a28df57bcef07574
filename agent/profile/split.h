/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A window's profile, split for a profiling server: one pprof per target (the sample groups
 * the window builder assigned), aggregated across the target's processes, keeping only the
 * sample labels the user opted into (DESIGN.md requirement 9), and each under the server's
 * limits (PROTOCOLS.md section 6: 16000 samples; 2 MB uncompressed, the rate limiter's
 * burst, below the 4 MiB profile limit).
 *
 * A target whose profile exceeds a limit is split by process into several profiles of the
 * same target; a single process still over a limit keeps its hottest stacks and folds the
 * coldest into one [other stacks] sample (DESIGN.md requirement 8). Both are counted and
 * said in the profile's comments, never silent.
 */
#ifndef IGNIS_SPLIT_H
#define IGNIS_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "common/ignis.h"

struct profile;

#define SPLIT_MAX_SAMPLES 16000
#define SPLIT_MAX_BYTES	  (2000 * 1000)

struct split_opts {
	const char *const *sample_labels; /* string label keys kept, e.g. "comm" */
	size_t nr_sample_labels;
	size_t max_samples; /* distinct samples per profile; 0: SPLIT_MAX_SAMPLES */
	size_t max_bytes;   /* encoded, uncompressed; 0: SPLIT_MAX_BYTES */
	int gzip_level;	    /* 1..9 */
};

struct split_part {
	uint32_t group;	  /* the target */
	uint8_t *data;	  /* gzip'd pprof, owned */
	size_t len;	  /* bytes of data */
	size_t raw_len;	  /* bytes before gzip */
	uint64_t samples; /* samples/count in it */
	uint64_t folded;  /* of which folded into [other stacks] */
};

struct split_result {
	struct split_part *parts; /* grouped by target, in group order */
	size_t nr, cap;
	uint64_t split_groups;	 /* targets split by process */
	uint64_t folded_samples; /* samples folded into [other stacks] */
};

/*
 * Split src, whose samples carry groups 0..nr_groups-1, into parts (appended to out, which
 * starts zeroed). On error the parts made so far stay in out. Returns 0 or -errno (-ENOMEM,
 * -EIO from zlib).
 */
int profile_split(const struct profile *src, uint32_t nr_groups, const struct split_opts *opts,
		  struct split_result *out) __must_check;

/* Free the parts' data and the array. */
void split_result_fini(struct split_result *r);

#endif /* IGNIS_SPLIT_H */
