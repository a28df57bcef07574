/* SPDX-License-Identifier: Apache-2.0 */
/* The --top report: a window's hottest functions by self and by total share. */
#ifndef IGNIS_TOP_H
#define IGNIS_TOP_H

#include <stdint.h>
#include <stdio.h>

#include "common/ignis.h"

struct profile;

/* What a ranking counts. */
enum top_value {
	TOP_CPU,    /* CPU samples (samples/count) */
	TOP_OFFCPU, /* off-CPU time (offcpu/nanoseconds) */
};

/* One function's share of a profile's samples. */
struct top_entry {
	char name[256];	 /* function, or "[binary]" for unnamed frames (cut) */
	char binary[64]; /* basename of its mapping, "" if none (cut) */
	uint64_t self;	 /* samples (or ns off CPU) where it is the leaf */
	uint64_t total;	 /* samples (or ns off CPU) where it is anywhere on the stack */
};

/*
 * Rank the functions of p by value, by self (by_total = 0) or by total. Fills up to max
 * entries into out and returns how many; -ENOMEM on failure. Strings are borrowed from p.
 */
int top_rank(const struct profile *p, enum top_value value, int by_total, struct top_entry *out,
	     unsigned int max) __must_check;

/* Print the N hottest by self and by total to out, and the N longest waits when p has
 * off-CPU time. Returns 0 or -ENOMEM. */
int top_print(FILE *out, const struct profile *p, unsigned int n) __must_check;

#endif /* IGNIS_TOP_H */
