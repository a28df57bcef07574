// SPDX-License-Identifier: Apache-2.0
/*
 * The counter table's rows as data, and the window's figures as text (see stats.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "stats.h"

#define BPF_DEF(id, metric, label, key, help) \
	[CNT_##id] = { STAT_KIND_SUM, 1, metric, label, key, help },
#define AGENT_DEF(id, kind, source, metric, label, key, help) \
	[CNT_##id] = { STAT_KIND_##kind, 0, metric, label, key, help },

const struct stat_def stat_defs[CNT_NR] = { IGNIS_BPF_STATS(BPF_DEF) IGNIS_AGENT_STATS(AGENT_DEF) };

#undef BPF_DEF
#undef AGENT_DEF

uint64_t counters_bpf_drops(const struct counters *c)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < CNT_NR; i++)
		if (stat_defs[i].bpf && !strcmp(stat_defs[i].metric, "ignis_samples_dropped_total"))
			n += c->v[i];
	return n;
}

size_t counters_format_window(const struct counters *c, int nonzero_only, char *buf, size_t size)
{
	size_t len = 0, i;
	int n;

	if (size)
		buf[0] = '\0';
	for (i = 0; i < CNT_NR; i++) {
		const struct stat_def *d = &stat_defs[i];

		if (!d->key || (d->kind != STAT_KIND_SUM && d->kind != STAT_KIND_WINDOW) ||
		    (nonzero_only && !c->v[i]))
			continue;
		n = snprintf(len < size ? buf + len : NULL, len < size ? size - len : 0,
			     " %s=%" PRIu64, d->key, c->v[i]);
		if (n > 0)
			len += (size_t)n;
	}
	return len;
}
