// SPDX-License-Identifier: Apache-2.0
/*
 * lifecycle: open, configure, load (the verifier runs), attach, flip, drain and free the
 * sampler three times in one process, and check that no file descriptor is left behind
 * (the link owns the perf event fd once attached; the rest is ours to close).
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../agent/collect/drain.h"
#include "../../agent/operate/log.h"
#include "../../agent/collect/sampler.h"

static int count_fds(void)
{
	struct dirent *de;
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* the directory's own descriptor */
}

int main(void)
{
	struct sampler_opts o = {
		.frequency_hz = 997, .user_stacks = true, .kernel_stacks = true, .window_sec = 1,
		.mmap_event_gap_ns = 1000000000ULL,
	};
	int before = count_fds(), round;

	log_max_level = LOG_LEVEL_WARN;
	for (round = 0; round < 3; round++) {
		struct drained_window w;
		struct sampler *s = sampler__new(&o);
		unsigned int idle;
		uint64_t at;

		if (!s || sampler__attach(s)) {
			fprintf(stderr, "round %d: cannot load or attach\n", round);
			return 1;
		}
		usleep(200000);
		sampler__poll(s, 0, -1);
		if (sampler__flip(s, &idle, &at)) {
			fprintf(stderr, "round %d: flip failed\n", round);
			return 1;
		}
		drained_window__init(&w);
		if (drain__read(s, idle, &w) || !w.counters.v[CNT_SAMPLES]) {
			fprintf(stderr, "round %d: drain failed or no sample counted\n", round);
			return 1;
		}
		drained_window__fini(&w);
		sampler__free(s);
	}
	if (count_fds() != before) {
		fprintf(stderr, "descriptors: %d before, %d after\n", before, count_fds());
		return 1;
	}
	printf("3 lifecycles, %d descriptors before and after\n", before);
	return 0;
}
