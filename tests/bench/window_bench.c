// SPDX-License-Identifier: Apache-2.0
/*
 * window_bench STACKS PROCESSES: the cost of one window as a function of its size.
 *
 * Loads the real BPF maps (no sampling), starts PROCESSES `sleep` processes and captures them
 * as the agent does, then fills generation 0 with STACKS distinct user stacks and one counts
 * entry each. A stack has 8 to 16 frames drawn from 256 call sites in libc and 256 in the
 * sleep executable (the same file offsets in every process, as the same code is in a real
 * host's processes); half of the samples also have one of 16 kernel stacks of 6 frames
 * from kallsyms. Times drain (read and clear the maps), symbolize
 * and build, and pprof encoding: cold (no symbol table cached) and warm (the same window
 * again). Prints one JSON object.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/types.h>

#include "../../bpf/profiler.h"

#include "../../agent/collect/drain.h"
#include "../../agent/operate/log.h"
#include "../../agent/profile/pprof.h"
#include "../../agent/collect/procfs.h"
#include "../../agent/collect/proctab.h"
#include "../../agent/profile/profile.h"
#include "../../agent/collect/sampler.h"
#include "../../agent/profile/window.h"
#include "../../symbolizer/symbolizer.h"

struct proc {
	pid_t pid;
	uint64_t start_ns;
	uint64_t text[2][2];	/* [libc, sleep] executable mapping [start, end) */
};

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int find_text(struct proc *p)
{
	char *maps, *line, *next;
	int fd = procfs_open_pid("/proc", (uint32_t)p->pid), found = 0;
	long n;

	if (fd < 0)
		return fd;
	n = procfs_read_file(fd, "maps", 1 << 20, &maps);
	close(fd);
	if (n < 0)
		return (int)n;
	for (line = maps; line && *line; line = next) {
		struct procmaps_entry e;
		int slot;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (procmaps_parse_line(line, &e) || !e.exec)
			continue;
		slot = strstr(e.path, "libc.so") ? 0 : strstr(e.path, "/sleep") ? 1 : -1;
		if (slot < 0 || p->text[slot][1])
			continue;
		p->text[slot][0] = e.start;
		p->text[slot][1] = e.end;
		found++;
	}
	free(maps);
	return found == 2 ? 0 : -ENOENT;
}

static int kernel_addresses(uint64_t *out, size_t want)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	unsigned long long a;
	char type, name[256];
	size_t n = 0;

	if (!f)
		return -errno;
	while (n < want && fscanf(f, "%llx %c %255s%*[^\n]", &a, &type, name) == 3)
		if ((type == 't' || type == 'T') && a && (next_rand() & 15) == 0)
			out[n++] = a + 4;
	fclose(f);
	return (int)n;
}

static double ms_since(uint64_t t0)
{
	return (double)(now_mono_ns() - t0) / 1e6;
}

#define KERNEL_STACKS 16
#define KERNEL_BASE 0x100000000ULL
#define USER_BASE 0x200000000ULL
#define CHUNK 1024
#define SITES 256

/* Call sites: offsets into a text mapping, shared by all processes. */
static uint64_t sites[2][SITES];

static int update_batch(int fd, void *keys, void *values, uint32_t n)
{
	uint32_t count = n;

	if (bpf_map_update_batch(fd, keys, values, &count, NULL))
		return -errno;
	return count == n ? 0 : -EIO;
}

/* Fill generation 0: kernel stacks, then nr_stacks user stacks with one counts entry each. */
static int fill(struct sampler *s, const struct proc *procs, int nr_procs, long nr_stacks,
		const uint64_t *kaddrs, int nr_kaddrs)
{
	int sfd = sampler__stacks_fd(s, 0), cfd = sampler__counts_fd(s, 0), err = 0;
	/* Stacks of up to 16 frames: one part each (struct ignis_stack_part). */
	struct ignis_stack_part *stacks = calloc(CHUNK, sizeof(*stacks));
	struct ignis_sample_key *keys = calloc(CHUNK, sizeof(*keys));
	struct ignis_stack_id *ids = calloc(CHUNK, sizeof(*ids));
	uint64_t *counts = calloc(CHUNK, sizeof(*counts));
	uint32_t n = 0;
	long i;
	int j;

	if (!stacks || !keys || !ids || !counts) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < KERNEL_STACKS; i++) {
		ids[i] = (struct ignis_stack_id){ KERNEL_BASE + (uint64_t)i, 1 };
		stacks[i].len = 6;
		for (j = 0; j < 6; j++)
			stacks[i].ips[j] = kaddrs[next_rand() % (uint64_t)nr_kaddrs];
	}
	err = update_batch(sfd, ids, stacks, KERNEL_STACKS);
	for (i = 0; !err && i < nr_stacks; i++) {
		const struct proc *p = &procs[i % nr_procs];
		struct ignis_stack_part *st = &stacks[n];
		struct ignis_sample_key *k = &keys[n];

		memset(st, 0, sizeof(*st));
		st->len = 8 + (uint32_t)(i % 9);
		for (j = 0; j < (int)st->len; j++) {
			int bin = j == 0 || (j & 1) ? 0 : 1;
			const uint64_t *t = p->text[bin];

			st->ips[j] = t[0] + sites[bin][next_rand() % SITES] % (t[1] - t[0]);
		}
		ids[n] = (struct ignis_stack_id){ USER_BASE + (uint64_t)i, 2 };
		memset(k, 0, sizeof(*k));
		k->tgid = k->pid = (uint32_t)p->pid;
		k->start_time = p->start_ns;
		k->exec_id = 1;
		k->user_stack = ids[n];
		if (i & 1)
			k->kernel_stack = (struct ignis_stack_id){
				KERNEL_BASE + (uint64_t)(i % KERNEL_STACKS), 1
			};
		memcpy(k->comm, "sleep", 6);
		counts[n] = 1 + (uint64_t)(i % 3);
		if (++n == CHUNK || i + 1 == nr_stacks) {
			err = update_batch(sfd, ids, stacks, n);
			if (!err)
				err = update_batch(cfd, keys, counts, n);
			n = 0;
		}
	}
out:
	free(stacks);
	free(keys);
	free(ids);
	free(counts);
	return err;
}

struct timing {
	double drain_ms, build_ms, encode_ms;
	size_t bytes;
	uint64_t samples, locations, unnamed;
};

static int one_window(struct sampler *s, struct window_builder *wb, uint64_t seq,
		      struct timing *t)
{
	struct profile_opts po = { .period_ns = 10000000, .time_ns = now_real_ns(),
				   .duration_ns = 10000000000ULL };
	struct window_stats ws = { 0 };
	struct drained_window dw;
	struct profile *p = NULL;
	uint8_t *buf = NULL;
	uint64_t t0;
	int err;

	drained_window__init(&dw);
	t0 = now_mono_ns();
	err = drain__read(s, 0, &dw);
	t->drain_ms = ms_since(t0);
	t0 = now_mono_ns();
	p = err ? NULL : profile__new(&po);
	if (!err && !p)
		err = -ENOMEM;
	if (!err)
		err = window_builder__add(wb, &dw, seq, p, &ws);
	t->build_ms = ms_since(t0);
	t0 = now_mono_ns();
	if (!err)
		err = pprof_encode(p, 6, &buf, &t->bytes);
	t->encode_ms = ms_since(t0);
	t->samples = ws.samples;
	t->locations = p ? p->nr_locations : 0;
	t->unnamed = ws.unnamed_frames;
	free(buf);
	profile__free(p);
	drained_window__fini(&dw);
	return err;
}

static void print_timing(const char *name, const struct timing *t, int comma)
{
	printf("\"%s\": {\"drain_ms\": %.2f, \"build_ms\": %.2f, \"encode_ms\": %.2f, "
	       "\"total_ms\": %.2f, \"bytes\": %zu, \"samples\": %llu, \"locations\": %llu, "
	       "\"unnamed_frames\": %llu}%s",
	       name, t->drain_ms, t->build_ms, t->encode_ms,
	       t->drain_ms + t->build_ms + t->encode_ms, t->bytes, (unsigned long long)t->samples,
	       (unsigned long long)t->locations, (unsigned long long)t->unnamed, comma ? ", " : "");
}

int main(int argc, char **argv)
{
	long nr_stacks = argc > 1 ? atol(argv[1]) : 10000;
	int nr_procs = argc > 2 ? atoi(argv[2]) : 100, i, err = 1, nr_kaddrs;
	struct sampler_opts so = { .frequency_hz = 100, .user_stacks = true, .kernel_stacks = true,
				   .window_sec = 10 };
	struct symbolizer_opts yo = { .sz = sizeof(yo) };
	struct proctab_opts po = { .proc_root = "/proc" };
	struct window_builder_opts wo = { 0 };
	struct symbolizer *sym = NULL;
	struct proctab *pt = NULL;
	struct window_builder *wb = NULL;
	struct sampler *s = NULL;
	struct proc *procs = calloc((size_t)nr_procs, sizeof(*procs));
	static uint64_t kaddrs[4096];
	struct timing cold, warm;
	FILE *kf;

	log_max_level = LOG_LEVEL_WARN;
	if (!procs || nr_stacks < 1 || nr_procs < 1)
		return 2;
	for (i = 0; i < nr_procs; i++) {
		procs[i].pid = fork();
		if (procs[i].pid == 0) {
			execl("/bin/sleep", "sleep", "3600", (char *)NULL);
			_exit(127);
		}
	}
	usleep(200000 + 2000 * nr_procs);	/* let them exec and map libc */
	for (i = 0; i < SITES; i++) {
		sites[0][i] = next_rand() >> 8;
		sites[1][i] = next_rand() >> 8;
	}

	so.max_stacks = (uint32_t)(nr_stacks + KERNEL_STACKS + 1024);
	so.max_samples = (uint32_t)(nr_stacks + 1024);
	s = sampler__new(&so);
	sym = symbolizer__new(&yo);
	po.symbolizer = sym;
	pt = sym ? proctab__new(&po) : NULL;
	if (!s || !pt)
		goto out;
	kf = fopen("/proc/kallsyms", "r");
	if (kf) {
		if (symbolizer__load_kallsyms(sym, kf) > 0)
			wo.kernel_symbols = true;
		fclose(kf);
	}
	wo.proctab = pt;
	wo.symbolizer = sym;
	wb = window_builder__new(&wo);
	nr_kaddrs = kernel_addresses(kaddrs, 4096);
	if (!wb || nr_kaddrs <= 0)
		goto out;

	for (i = 0; i < nr_procs; i++) {
		struct proc_event ev = { .type = PROC_EV_NEW, .exec_id = 1 };
		uint64_t ticks;
		int fd = procfs_open_pid("/proc", (uint32_t)procs[i].pid);

		if (fd < 0 || procfs_start_ticks(fd, &ticks) || find_text(&procs[i])) {
			fprintf(stderr, "window_bench: process %d not ready\n", procs[i].pid);
			goto out;
		}
		close(fd);
		procs[i].start_ns = ticks * 10000000ULL;
		ev.tgid = (uint32_t)procs[i].pid;
		ev.start_time = procs[i].start_ns;
		if (proctab__handle_event(pt, &ev, 0)) {
			fprintf(stderr, "window_bench: cannot capture %d\n", procs[i].pid);
			goto out;
		}
	}

	if (fill(s, procs, nr_procs, nr_stacks, kaddrs, nr_kaddrs) || one_window(s, wb, 0, &cold) ||
	    fill(s, procs, nr_procs, nr_stacks, kaddrs, nr_kaddrs) || one_window(s, wb, 1, &warm)) {
		fprintf(stderr, "window_bench: a window failed\n");
		goto out;
	}
	printf("{\"stacks\": %ld, \"processes\": %d, ", nr_stacks, nr_procs);
	print_timing("cold", &cold, 1);
	print_timing("warm", &warm, 0);
	printf("}\n");
	err = 0;
out:
	for (i = 0; i < nr_procs; i++)
		if (procs[i].pid > 0)
			kill(procs[i].pid, SIGKILL);
	while (wait(NULL) > 0)
		;
	window_builder__free(wb);
	proctab__free(pt);
	symbolizer__free(sym);
	sampler__free(s);
	free(procs);
	return err;
}
