/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fake /proc for the process table's and the window builder's tests (ddprof's
 * path_to_proc): one process, PID, with stat, comm, maps and a root/ holding the ELF fixture
 * libfixture.so mapped at LIB_BASE.
 */
#ifndef IGNIS_TESTS_FAKE_PROC_H
#define IGNIS_TESTS_FAKE_PROC_H

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "unit.h"

#include "../../agent/collect/proctab.h"
#include "../../agent/collect/samples.h"
#include "../../symbolizer/symbolizer.h"

#define PID 4242
#define START_NS 123450000000ULL	/* 12345 ticks */
#define LIB_BASE 0x7f0000000000ULL
#define LIB_PATH "/usr/lib/libfixture.so"

struct fake {
	char root[64];			/* the fake /proc */
	char pid_dir[128];
	struct symbolizer *sym;
	struct proctab *pt;
	struct nm_symbol first, second, internal;
	dev_t dev;
	ino_t ino;
};

static inline void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static inline void copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	ssize_t n;

	assert_true(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
}

static inline void write_stat(struct fake *f, unsigned long long ticks)
{
	char path[256], text[256];

	snprintf(path, sizeof(path), "%s/stat", f->pid_dir);
	snprintf(text, sizeof(text),
		 "%d (fake app) S 1 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 %llu 0 0\n", PID,
		 ticks);
	write_file(path, text);
}

/* maps: the library's text at LIB_BASE + 0x1000 (file offset 0x1000), plus `extra`. */
static inline void write_maps(struct fake *f, const char *extra)
{
	char path[256], text[1024];

	snprintf(path, sizeof(path), "%s/maps", f->pid_dir);
	snprintf(text, sizeof(text),
		 "%llx-%llx r--p 00000000 %02x:%02x %lu %s\n"
		 "%llx-%llx r-xp 00001000 %02x:%02x %lu %s\n"
		 "7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0 [stack]\n%s",
		 LIB_BASE, LIB_BASE + 0x1000, major(f->dev), minor(f->dev), (unsigned long)f->ino,
		 LIB_PATH, LIB_BASE + 0x1000, LIB_BASE + 0x2000, major(f->dev), minor(f->dev),
		 (unsigned long)f->ino, LIB_PATH, extra);
	write_file(path, text);
}

static inline int setup(void **state)
{
	struct fake *f = calloc(1, sizeof(*f));
	struct proctab_opts po = { 0 };
	char path[256];
	struct stat st;

	snprintf(f->root, sizeof(f->root), "/tmp/ignis-proc-XXXXXX");
	assert_non_null(mkdtemp(f->root));
	snprintf(f->pid_dir, sizeof(f->pid_dir), "%s/%d", f->root, PID);
	assert_int_equal(mkdir(f->pid_dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/root", f->pid_dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/root/usr", f->pid_dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/root/usr/lib", f->pid_dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/root" LIB_PATH, f->pid_dir);
	copy_file(FIXTURE("libfixture.so"), path);
	assert_int_equal(stat(path, &st), 0);
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	snprintf(path, sizeof(path), "%s/comm", f->pid_dir);
	write_file(path, "fake app\n");
	write_stat(f, START_NS / 10000000);
	write_maps(f, "");

	assert_int_equal(nm_lookup(FIXTURE("libfixture.so"), "fx_exported_first", &f->first), 0);
	assert_int_equal(nm_lookup(FIXTURE("libfixture.so"), "fx_exported_second", &f->second), 0);
	assert_int_equal(nm_lookup(FIXTURE("libfixture.so"), "fx_internal", &f->internal), 0);
	/* The fixture's text must sit in the page the fake maps line maps. */
	assert_true(f->first.addr >= 0x1000 && f->first.addr < 0x2000);

	f->sym = symbolizer__new(NULL);
	po.proc_root = f->root;
	po.symbolizer = f->sym;
	po.min_recapture_ns = 0;
	f->pt = proctab__new(&po);
	assert_non_null(f->pt);
	*state = f;
	return 0;
}

static inline int teardown(void **state)
{
	struct fake *f = *state;
	char cmd[128];

	proctab__free(f->pt);
	symbolizer__free(f->sym);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->root);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static inline struct proc_event event(uint32_t type, uint64_t start_ns)
{
	struct proc_event ev = { .type = type, .tgid = PID, .start_time = start_ns,
				       .exec_id = 1 };

	memcpy(ev.comm, "fake app", 9);
	return ev;
}

static inline struct proc_id the_id(void)
{
	return (struct proc_id){ .tgid = PID, .exec_id = 1, .start_time = START_NS };
}

#endif /* IGNIS_TESTS_FAKE_PROC_H */
