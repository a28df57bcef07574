// SPDX-License-Identifier: Apache-2.0
/*
 * Workloads for off-CPU time: threads that wait in known places, and print what each thread
 * did, one JSON line per thread: its tid, its wall time from start to end, its CPU time
 * (CLOCK_THREAD_CPUTIME_ID) and the time it spent in the wait the mode is about, as the
 * thread measured it around that wait (CLOCK_MONOTONIC); in io mode also the CPU time it
 * spent inside those calls (wait_cpu_ns: the kernel's work of a system call that also
 * waits, on a VM a large part of a fast disk's I/O).
 *
 *   offcpu sleep THREADS SECONDS     each thread: spin 5 ms in work_part(), nanosleep 20 ms
 *                                    in wait_part()
 *   offcpu migrate THREADS SECONDS   the same, moving to another CPU every loop
 *   offcpu io FILE SECONDS           pwrite + fdatasync in sync_part(), an O_DIRECT pread
 *                                    in read_part()
 *   offcpu lock SECONDS              two threads taking one mutex in lock_part(), holding it
 *                                    for 2 ms in hold_part()
 *   offcpu pingpong SECONDS          two threads passing a byte through two pipes
 *                                    (pass_part()): waits of tens of microseconds
 *   offcpu churn RATE SECONDS        RATE short processes a second, each sleeping 1 ms
 *   offcpu idle THREADS SECONDS      THREADS threads sleeping 1 s at a time
 *
 * Started with "wait" as first argument, it waits for a line on stdin first, so that a test
 * can start the profiler with the workload's pid known.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "workload.h"

struct thread_report {
	pthread_t thread;
	int index;
	int tid;
	uint64_t wall_ns, cpu_ns, wait_ns, wait_cpu_ns;
	unsigned long loops;
};

static double seconds = 6;
static int nr_cpus = 1;
static const char *io_file;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int pipes[2][2];
static volatile int stop;

static NOINLINE void spin_ns(uint64_t ns)
{
	uint64_t end = thread_cpu_ns() + ns;
	volatile uint64_t x = 0;

	while (thread_cpu_ns() < end)
		for (int i = 0; i < 1000; i++)
			x += (uint64_t)i * i;
}

static NOINLINE void work_part(void)
{
	spin_ns(5000000);
}

static NOINLINE void wait_part(struct thread_report *r)
{
	struct timespec ts = { 0, 20000000 };
	uint64_t t0 = mono_ns();

	nanosleep(&ts, NULL);
	r->wait_ns += mono_ns() - t0;
}

static void move_cpu(struct thread_report *r)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET((int)((r->loops + (unsigned long)r->index) % (unsigned long)nr_cpus), &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *sleeper(void *arg, int migrate)
{
	struct thread_report *r = arg;
	uint64_t end = mono_ns() + (uint64_t)(seconds * 1e9);

	while (mono_ns() < end) {
		if (migrate)
			move_cpu(r);
		work_part();
		wait_part(r);
		r->loops++;
	}
	return NULL;
}

static void *sleep_thread(void *arg)
{
	return sleeper(arg, 0);
}

static void *migrate_thread(void *arg)
{
	return sleeper(arg, 1);
}

static NOINLINE void sync_part(int fd, struct thread_report *r, const char *buf)
{
	uint64_t t0 = mono_ns(), c0 = thread_cpu_ns();

	if (pwrite(fd, buf, 4096, (off_t)(r->loops % 256) * 4096) != 4096 || fdatasync(fd)) {
		perror("offcpu io: write");
		exit(1);
	}
	r->wait_ns += mono_ns() - t0;
	r->wait_cpu_ns += thread_cpu_ns() - c0;
}

static NOINLINE void read_part(int fd, struct thread_report *r, char *buf)
{
	uint64_t t0 = mono_ns(), c0 = thread_cpu_ns();

	/* 1 MiB apart, so that the device's read-ahead does not serve the next one. */
	/* A file system without O_DIRECT (tmpfs, overlayfs) fails here: say so, not later. */
	if (pread(fd, buf, 4096, (off_t)((r->loops * 257) % 1024) * 1048576) < 0) {
		perror("offcpu io: O_DIRECT read");
		exit(1);
	}
	r->wait_ns += mono_ns() - t0;
	r->wait_cpu_ns += thread_cpu_ns() - c0;
}

static void *io_thread(void *arg)
{
	struct thread_report *r = arg;
	uint64_t end = mono_ns() + (uint64_t)(seconds * 1e9);
	char *buf;
	int fd, rfd;

	fd = open(io_file, O_RDWR | O_CREAT, 0600);
	rfd = open(io_file, O_RDONLY | O_DIRECT);
	if (fd < 0 || rfd < 0 || posix_memalign((void **)&buf, 4096, 4096)) {
		perror("offcpu io: open");
		exit(1);
	}
	memset(buf, 'x', 4096);
	/* A sparse file of 1 GiB: every read reaches the device (or at least the block layer). */
	if (ftruncate(fd, 1024LL * 1048576)) {
		perror("offcpu io: ftruncate");
		exit(1);
	}
	for (int i = 0; i < 1024; i++)
		if (pwrite(fd, buf, 4096, (off_t)i * 1048576) != 4096)
			perror("offcpu io: fill");
	fsync(fd);
	while (mono_ns() < end) {
		if (r->index == 0)
			sync_part(fd, r, buf);
		else
			read_part(rfd, r, buf);
		r->loops++;
	}
	close(fd);
	close(rfd);
	free(buf);
	return NULL;
}

static NOINLINE void hold_part(void)
{
	spin_ns(2000000);
}

static NOINLINE void lock_part(struct thread_report *r)
{
	uint64_t t0 = mono_ns();

	pthread_mutex_lock(&lock);
	r->wait_ns += mono_ns() - t0;
	hold_part();
	pthread_mutex_unlock(&lock);
}

static void *lock_thread(void *arg)
{
	struct thread_report *r = arg;
	uint64_t end = mono_ns() + (uint64_t)(seconds * 1e9);

	while (mono_ns() < end) {
		lock_part(r);
		/* A moment outside the lock: the other thread takes it, this one waits. */
		spin_ns(200000);
		r->loops++;
	}
	return NULL;
}

static NOINLINE void pass_part(struct thread_report *r, int in, int out)
{
	char c = 'p';
	uint64_t t0;

	if (r->index == 0 && write(out, &c, 1) != 1)
		stop = 1;
	t0 = mono_ns();
	if (read(in, &c, 1) != 1)
		stop = 1;
	r->wait_ns += mono_ns() - t0;
	if (r->index == 1 && write(out, &c, 1) != 1)
		stop = 1;
}

static void *pingpong_thread(void *arg)
{
	struct thread_report *r = arg;
	uint64_t end = mono_ns() + (uint64_t)(seconds * 1e9);
	int in = pipes[r->index][0], out = pipes[!r->index][1];

	while (!stop) {
		pass_part(r, in, out);
		r->loops++;
		if (r->index == 0 && mono_ns() >= end)
			stop = 1;
	}
	/* Let the other side out of its read. */
	if (write(out, "x", 1) != 1)
		return NULL;
	return NULL;
}

struct start {
	void *(*fn)(void *);
	struct thread_report *r;
};

static void *report_wrapper(void *arg)
{
	struct start *s = arg;
	struct thread_report *r = s->r;
	uint64_t t0 = mono_ns(), c0 = thread_cpu_ns();

	r->tid = (int)syscall(SYS_gettid);
	s->fn(r);
	r->cpu_ns = thread_cpu_ns() - c0;
	r->wall_ns = mono_ns() - t0;
	free(s);
	return NULL;
}

static int run_threads(int n, void *(*fn)(void *))
{
	struct thread_report *r = calloc((size_t)n, sizeof(*r));

	if (!r)
		return 1;
	for (int i = 0; i < n; i++) {
		struct start *s = malloc(sizeof(*s));

		if (!s)
			return 1;
		s->fn = fn;
		s->r = &r[i];
		r[i].index = i;
		if (pthread_create(&r[i].thread, NULL, report_wrapper, s))
			return 1;
	}
	for (int i = 0; i < n; i++)
		pthread_join(r[i].thread, NULL);
	for (int i = 0; i < n; i++)
		printf("{\"tid\":%d,\"wall_ns\":%llu,\"cpu_ns\":%llu,\"wait_ns\":%llu,"
		       "\"wait_cpu_ns\":%llu,\"loops\":%lu}\n",
		       r[i].tid, (unsigned long long)r[i].wall_ns, (unsigned long long)r[i].cpu_ns,
		       (unsigned long long)r[i].wait_ns, (unsigned long long)r[i].wait_cpu_ns,
		       r[i].loops);
	fflush(stdout);
	free(r);
	return 0;
}

static NOINLINE void child_part(void)
{
	struct timespec ts = { 0, 1000000 };

	nanosleep(&ts, NULL);
}

static void *idle_thread(void *arg)
{
	uint64_t end = mono_ns() + (uint64_t)(seconds * 1e9);
	struct timespec ts = { 1, 0 };

	(void)arg;
	while (mono_ns() < end)
		nanosleep(&ts, NULL);
	return NULL;
}

static int idle(int n)
{
	pthread_attr_t attr;
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	int started = 0;

	if (!t || pthread_attr_init(&attr) || pthread_attr_setstacksize(&attr, 64 * 1024))
		return 1;
	for (int i = 0; i < n; i++)
		if (!pthread_create(&t[i], &attr, idle_thread, NULL))
			started++;
	printf("{\"threads\":%d}\n", started);
	fflush(stdout);
	for (int i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	free(t);
	return 0;
}

static int churn(double rate)
{
	uint64_t end = mono_ns() + (uint64_t)(seconds * 1e9), gap = (uint64_t)(1e9 / rate);
	uint64_t next = mono_ns();
	unsigned long started = 0, reaped = 0;
	int status;

	signal(SIGCHLD, SIG_DFL);
	while (mono_ns() < end) {
		pid_t pid = fork();

		if (pid == 0) {
			child_part();
			_exit(0);
		}
		if (pid > 0)
			started++;
		while (waitpid(-1, &status, WNOHANG) > 0)
			reaped++;
		next += gap;
		while (mono_ns() < next) {
			struct timespec ts = { 0, 100000 };

			nanosleep(&ts, NULL);
		}
	}
	while (waitpid(-1, &status, 0) > 0)
		reaped++;
	printf("{\"started\":%lu,\"reaped\":%lu}\n", started, reaped);
	return 0;
}

int main(int argc, char **argv)
{
	char line[16];

	if (argc > 1 && !strcmp(argv[1], "wait")) {
		if (!fgets(line, sizeof(line), stdin))
			return 1;
		argv++;
		argc--;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: offcpu [wait] sleep|migrate|io|lock|pingpong|churn ...\n");
		return 2;
	}
	nr_cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (nr_cpus < 1)
		nr_cpus = 1;
	if (!strcmp(argv[1], "sleep") || !strcmp(argv[1], "migrate")) {
		seconds = arg_seconds(argc, argv, 3, 6);
		return run_threads(atoi(argv[2]),
				   argv[1][0] == 's' ? sleep_thread : migrate_thread);
	}
	if (!strcmp(argv[1], "io")) {
		io_file = argv[2];
		seconds = arg_seconds(argc, argv, 3, 4);
		return run_threads(2, io_thread);
	}
	if (!strcmp(argv[1], "lock")) {
		seconds = arg_seconds(argc, argv, 2, 4);
		return run_threads(2, lock_thread);
	}
	if (!strcmp(argv[1], "pingpong")) {
		seconds = arg_seconds(argc, argv, 2, 4);
		if (pipe(pipes[0]) || pipe(pipes[1]))
			return 1;
		return run_threads(2, pingpong_thread);
	}
	if (!strcmp(argv[1], "idle")) {
		seconds = arg_seconds(argc, argv, 3, 10);
		return idle(atoi(argv[2]));
	}
	if (!strcmp(argv[1], "churn")) {
		seconds = arg_seconds(argc, argv, 3, 10);
		return churn(atof(argv[2]));
	}
	fprintf(stderr, "offcpu: unknown mode %s\n", argv[1]);
	return 2;
}
