// SPDX-License-Identifier: Apache-2.0
/*
 * The userspace pipeline without BPF: process events against a fake /proc (a folder per
 * process with stat, comm, maps and root/), captures of mapped ELF fixtures, and the window
 * builder turning synthetic drained samples into a profile.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/types.h>

#include "unit.h"

#include "../../agent/samples.h"
#include "../../agent/procfs.h"
#include "../../agent/proctab.h"
#include "../../agent/profile.h"
#include "../../agent/window.h"
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

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void copy_file(const char *from, const char *to)
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

static void write_stat(struct fake *f, unsigned long long ticks)
{
	char path[256], text[256];

	snprintf(path, sizeof(path), "%s/stat", f->pid_dir);
	snprintf(text, sizeof(text),
		 "%d (fake app) S 1 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 %llu 0 0\n", PID,
		 ticks);
	write_file(path, text);
}

/* maps: the library's text at LIB_BASE + 0x1000 (file offset 0x1000), plus `extra`. */
static void write_maps(struct fake *f, const char *extra)
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

static int setup(void **state)
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

static int teardown(void **state)
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

static struct proc_event event(uint32_t type, uint64_t start_ns)
{
	struct proc_event ev = { .type = type, .tgid = PID, .start_time = start_ns,
				       .exec_id = 1 };

	memcpy(ev.comm, "fake app", 9);
	return ev;
}

static struct proc_id the_id(void)
{
	return (struct proc_id){ .tgid = PID, .exec_id = 1, .start_time = START_NS };
}

static void test_capture_and_lookup(void **state)
{
	struct fake *f = *state;
	struct proc_event ev = event(PROC_EV_NEW, START_NS);
	struct proc_id id = the_id();
	const struct proc_mapping *m;
	struct proc_image *img;
	struct proctab_stats st;
	uint64_t vaddr;

	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), 0);
	img = proctab__find(f->pt, &id);
	assert_non_null(img);
	assert_string_equal(img->comm, "fake app");
	assert_int_equal(img->nr_maps, 1);	/* only the executable mapping */
	m = proctab__mapping(f->pt, img, LIB_BASE + f->first.addr, 0, false);
	assert_non_null(m);
	assert_non_null(m->object);
	assert_string_equal(m->name, LIB_PATH);
	assert_int_equal(sym_object__vaddr(m->object, LIB_BASE + f->first.addr - m->start +
							 m->offset, &vaddr),
			 0);
	assert_int_equal(vaddr, f->first.addr);
	assert_null(proctab__mapping(f->pt, img, LIB_BASE + 0x5000, 0, false));
	assert_true(proctab__knows(f->pt, PID, START_NS, 1));
	assert_false(proctab__knows(f->pt, PID, START_NS, 2));

	/* Announced again: same image, captured again. */
	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), 0);
	assert_ptr_equal(proctab__find(f->pt, &id), img);
	proctab__stats(f->pt, &st);
	assert_int_equal(st.images, 1);
	assert_int_equal(st.captures, 2);
	assert_int_equal(st.files_opened, 1);	/* the second capture reused the object */
}

/* The PID now belongs to a process that started at another time: nothing is captured. */
static void test_pid_reused(void **state)
{
	struct fake *f = *state;
	struct proc_event ev = event(PROC_EV_NEW, START_NS + 5000000000ULL);
	struct proc_id id = the_id();

	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), -ESRCH);
	id.start_time = ev.start_time;
	assert_null(proctab__find(f->pt, &id));
}

/* An exited process lives until its last window is drained. */
static void test_exit_and_release(void **state)
{
	struct fake *f = *state;
	struct proc_event ev = event(PROC_EV_NEW, START_NS);
	struct proc_id id = the_id();

	assert_int_equal(proctab__handle_event(f->pt, &ev, 3), 0);
	ev.type = PROC_EV_EXIT;
	assert_int_equal(proctab__handle_event(f->pt, &ev, 5), 0);
	proctab__release(f->pt, 4);
	assert_non_null(proctab__find(f->pt, &id));
	proctab__release(f->pt, 5);
	assert_null(proctab__find(f->pt, &id));
}

/* execve() retires the old image, not the new one, even when a sample inside execve()
 * announced the new image before the exec event arrived. */
static void test_exec_retires_only_the_old_image(void **state)
{
	struct fake *f = *state;
	struct proc_event ev = event(PROC_EV_NEW, START_NS);
	struct proc_id old = the_id(), new = the_id();

	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), 0);
	ev.exec_id = 2;
	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), 0);	/* inside execve() */
	ev.type = PROC_EV_EXEC;
	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), 0);
	proctab__release(f->pt, 0);
	new.exec_id = 2;
	assert_null(proctab__find(f->pt, &old));
	assert_non_null(proctab__find(f->pt, &new));
	/* The exec event also arrives when no sample announced the new image yet. */
	ev.exec_id = 3;
	assert_int_equal(proctab__handle_event(f->pt, &ev, 1), 0);
	proctab__release(f->pt, 1);
	assert_null(proctab__find(f->pt, &new));
}

/* An image retired by mistake (a lost event, a race) comes back when announced again. */
static void test_announced_image_revives(void **state)
{
	struct fake *f = *state;
	struct proc_event ev = event(PROC_EV_NEW, START_NS);
	struct proc_id id = the_id();

	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), 0);
	ev.type = PROC_EV_EXIT;
	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), 0);
	ev.type = PROC_EV_MMAP;
	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), 0);
	proctab__release(f->pt, 0);
	assert_non_null(proctab__find(f->pt, &id));
}

/* Exit events can be lost: the rescan notices the process is gone. */
static void test_rescan(void **state)
{
	struct fake *f = *state;
	struct proc_event ev = event(PROC_EV_NEW, START_NS);
	struct proc_id id = the_id();
	struct proctab_stats st;

	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), 0);
	assert_int_equal(proctab__rescan(f->pt, 1), 0);
	write_stat(f, START_NS / 10000000 + 1);	/* pid reused by another process */
	assert_int_equal(proctab__rescan(f->pt, 1), 1);
	proctab__release(f->pt, 1);
	assert_null(proctab__find(f->pt, &id));
	proctab__stats(f->pt, &st);
	assert_int_equal(st.exits_missed, 1);
}

/* A library unmapped since the last capture stays until the window is drained; one mapped
 * over it replaces it at once. */
static void test_recapture_keeps_stale(void **state)
{
	struct fake *f = *state;
	struct proc_event ev = event(PROC_EV_NEW, START_NS);
	struct proc_id id = the_id();
	struct proc_image *img;
	char extra[256];

	snprintf(extra, sizeof(extra), "%llx-%llx r-xp 00001000 %02x:%02x %lu %s\n",
		 LIB_BASE + 0x101000, LIB_BASE + 0x102000, major(f->dev), minor(f->dev),
		 (unsigned long)f->ino, LIB_PATH);
	write_maps(f, extra);
	assert_int_equal(proctab__handle_event(f->pt, &ev, 7), 0);
	img = proctab__find(f->pt, &id);
	assert_int_equal(img->nr_maps, 2);

	write_maps(f, "");	/* the second copy went away (dlclose) */
	ev.type = PROC_EV_MMAP;
	assert_int_equal(proctab__handle_event(f->pt, &ev, 8), 0);
	assert_int_equal(img->nr_maps, 2);
	assert_non_null(proctab__mapping(f->pt, img, LIB_BASE + 0x101000 + 0x10, 8, false));
	proctab__release(f->pt, 8);
	assert_int_equal(img->nr_maps, 1);
	assert_null(proctab__mapping(f->pt, img, LIB_BASE + 0x101000 + 0x10, 9, false));
}

/* ---- The window builder --------------------------------------------------------------- */

static void add_stack_flags(struct drained_window *w, uint64_t id, const uint64_t *ips,
			    uint32_t n, uint32_t flags)
{
	struct stack_id sid = { .lo = id, .hi = ~id };

	assert_int_equal(drained_window__add_stack(w, &sid, flags, ips, n), 0);
}

static void add_stack(struct drained_window *w, uint64_t id, const uint64_t *ips, uint32_t n)
{
	add_stack_flags(w, id, ips, n, 0);
}

static void add_sample(struct drained_window *w, uint32_t tid, uint64_t ustack,
		       uint64_t kstack, uint32_t flags, const char *comm, uint64_t count)
{
	struct drained_sample k = { .tgid = PID, .pid = tid, .start_time = START_NS,
				    .exec_id = 1, .flags = flags, .count = count };

	if (ustack)
		k.user_stack = (struct stack_id){ .lo = ustack, .hi = ~ustack };
	if (kstack)
		k.kernel_stack = (struct stack_id){ .lo = kstack, .hi = ~kstack };

	snprintf(k.comm, sizeof(k.comm), "%s", comm);
	assert_int_equal(drained_window__add_sample(w, &k), 0);
}

static const char *loc_name(const struct profile *p, uint64_t id)
{
	const struct profile_location *l = profile__location(p, id);

	if (!l || !l->nr_lines)
		return NULL;
	return profile__str(p, profile__function_by_id(p, p->lines[l->first_line].function_id)->name);
}

static void test_window_builder(void **state)
{
	struct fake *f = *state;
	struct proc_event ev = event(PROC_EV_NEW, START_NS);
	struct window_builder_opts wo = { .proctab = f->pt, .symbolizer = f->sym };
	struct profile_opts po = { .period_ns = 10000000, .time_ns = 1, .duration_ns = 1 };
	struct window_stats ws = { 0 };
	struct drained_window w;
	struct window_builder *wb;
	struct profile *p;
	const struct profile_sample *s;
	const struct profile_location *l;
	const struct profile_mapping *m;
	/* Leaf in fx_exported_first, called from fx_exported_second (return address inside it);
	 * then a return address in no mapping: a broken frame-pointer chain. */
	uint64_t good[2] = { LIB_BASE + f->first.addr + 1, LIB_BASE + f->second.addr + 4 };
	uint64_t broken[3] = { LIB_BASE + f->first.addr + 2, LIB_BASE + f->second.addr + 4,
			       0x1234 };
	uint64_t unmapped[1] = { 0x5000 };
	uint64_t kernel[2] = { 0xffffffff81003010ULL, 0xffffffff81000100ULL };

	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), 0);
	wb = window_builder__new(&wo);
	drained_window__init(&w);
	add_stack(&w, 11, good, 2);
	add_stack(&w, 12, broken, 3);
	add_stack(&w, 13, unmapped, 1);
	add_stack(&w, 14, kernel, 2);
	add_sample(&w, PID, 11, 0, 0, "main", 5);
	add_sample(&w, PID + 1, 11, 14, 0, "worker", 3);
	add_sample(&w, PID + 2, 12, 0, 0, "main", 2);
	add_sample(&w, PID, 13, 0, 0, "main", 1);
	add_sample(&w, 77, 0, 14, SAMPLE_KTHREAD, "kworker/0:1", 4);

	p = profile__new(&po);
	assert_int_equal(window_builder__add(wb, &w, 0, p, &ws), 0);
	assert_int_equal(ws.samples, 15);
	assert_int_equal(p->total_count, 15);
	assert_int_equal(ws.kthread_samples, 4);
	assert_int_equal(ws.no_image_samples, 0);
	assert_int_equal(ws.unknown_frames, 1);
	assert_int_equal(ws.broken_chains, 1);
	assert_int_equal(ws.truncated_stacks, 10);	/* 5 + 3 + 2 */
	assert_int_equal(p->nr_samples, 5);

	/* Sample 0: fx_exported_first <- fx_exported_second, ELF addresses, one mapping. Its
	 * outermost frame is named but starts no thread: the chain broke, [truncated]. */
	s = &p->samples[0];
	assert_int_equal(s->nr_locations, 3);
	assert_string_equal(loc_name(p, s->locations[0]), "fx_exported_first");
	assert_string_equal(loc_name(p, s->locations[1]), "fx_exported_second");
	assert_string_equal(loc_name(p, s->locations[2]), "[truncated]");
	l = profile__location(p, s->locations[0]);
	assert_int_equal(l->address, f->first.addr + 1);		/* the leaf as is */
	assert_int_equal(profile__location(p, s->locations[1])->address, f->second.addr + 3);
	m = &p->mappings[l->mapping_id - 1];
	assert_string_equal(profile__str(p, m->filename), LIB_PATH);
	assert_int_equal(m->memory_start, 0);
	assert_int_equal(m->memory_limit, UINT64_MAX);
	assert_true(profile__str(p, m->build_id)[0] != '\0');
	assert_int_equal(s->values[0], 5);
	assert_int_equal(s->nr_labels, 4);
	assert_int_equal(s->labels[0].num, PID);
	assert_string_equal(profile__str(p, s->labels[2].str), "fake app");
	assert_string_equal(profile__str(p, s->labels[3].str), "main");

	/* Sample 1: kernel frames leafward, unnamed (no kallsyms), then the user frames. */
	s = &p->samples[1];
	assert_int_equal(s->nr_locations, 5);
	l = profile__location(p, s->locations[0]);
	assert_int_equal(l->nr_lines, 0);
	assert_string_equal(profile__str(p, p->mappings[l->mapping_id - 1].filename),
			    "[kernel.kallsyms]");
	assert_int_equal(l->address, kernel[0]);
	assert_int_equal(profile__location(p, s->locations[1])->address, kernel[1] - 1);
	assert_string_equal(loc_name(p, s->locations[2]), "fx_exported_first");
	assert_string_equal(profile__str(p, s->labels[3].str), "worker");

	/* Sample 2: cut at the broken link, [truncated] at the root end. */
	s = &p->samples[2];
	assert_int_equal(s->nr_locations, 3);
	assert_string_equal(loc_name(p, s->locations[1]), "fx_exported_second");
	assert_string_equal(loc_name(p, s->locations[2]), "[truncated]");
	assert_int_equal(profile__location(p, s->locations[2])->mapping_id, 0);

	/* Sample 3: a leaf in no mapping is [unknown] and keeps its address. */
	s = &p->samples[3];
	assert_int_equal(s->nr_locations, 1);
	assert_string_equal(loc_name(p, s->locations[0]), "[unknown]");
	assert_int_equal(profile__location(p, s->locations[0])->address, 0x5000);

	/* Sample 4: a kernel thread, kernel frames only. */
	s = &p->samples[4];
	assert_int_equal(s->nr_locations, 2);
	assert_string_equal(profile__str(p, s->labels[2].str), "kworker/0:1");

	profile__free(p);
	drained_window__fini(&w);
	window_builder__free(wb);
}

/*
 * Stacks from the table unwinder say how they ended: complete (an outermost frame per CFI)
 * needs no root-function check; truncated gets [truncated] even with a root-looking end; a
 * frame marked exact (the pc a signal interrupted) and the signal trampoline before it are
 * looked up as they are, not as return addresses.
 */
static void test_window_table_stacks(void **state)
{
	struct fake *f = *state;
	struct proc_event ev = event(PROC_EV_NEW, START_NS);
	struct window_builder_opts wo = { .proctab = f->pt, .symbolizer = f->sym };
	struct profile_opts po = { .period_ns = 10000000, .time_ns = 1, .duration_ns = 1 };
	struct window_stats ws = { 0 };
	struct drained_window w;
	struct window_builder *wb;
	struct profile *p;
	uint64_t ips[2] = { LIB_BASE + f->first.addr + 1, LIB_BASE + f->second.addr + 4 };
	uint64_t exact[3] = { LIB_BASE + f->first.addr + 1, LIB_BASE + f->second.addr,
			      (LIB_BASE + f->second.addr + 2) | FRAME_EXACT };
	/* A caller the unwinder reached by frame pointer: marked, looked up as any other. */
	uint64_t by_fp[2] = { LIB_BASE + f->first.addr + 1,
			      (LIB_BASE + f->second.addr + 4) | FRAME_BY_FP };

	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), 0);
	wb = window_builder__new(&wo);
	drained_window__init(&w);
	add_stack_flags(&w, 31, ips, 2, STACK_TABLES | STACK_COMPLETE);
	add_stack_flags(&w, 32, ips, 2, STACK_TABLES | STACK_TRUNCATED);
	add_stack_flags(&w, 33, exact, 3, STACK_TABLES | STACK_COMPLETE);
	add_sample(&w, PID, 31, 0, 0, "main", 2);
	add_sample(&w, PID + 1, 32, 0, 0, "main", 3);
	add_stack_flags(&w, 34, by_fp, 2, STACK_TABLES | STACK_COMPLETE);
	add_sample(&w, PID + 2, 33, 0, 0, "main", 1);
	add_sample(&w, PID + 3, 34, 0, 0, "main", 1);
	p = profile__new(&po);
	assert_int_equal(window_builder__add(wb, &w, 0, p, &ws), 0);
	assert_int_equal(ws.truncated_stacks, 3);
	assert_int_equal(p->nr_samples, 4);
	/* Complete: fx_exported_second starts no thread, yet no [truncated]. */
	assert_int_equal(p->samples[0].nr_locations, 2);
	assert_string_equal(loc_name(p, p->samples[0].locations[1]), "fx_exported_second");
	/* Truncated by the unwinder. */
	assert_int_equal(p->samples[1].nr_locations, 3);
	assert_string_equal(loc_name(p, p->samples[1].locations[2]), "[truncated]");
	/* The trampoline at the start of fx_exported_second and the interrupted pc: exact
	 * addresses; as return addresses the first would fall before the function. */
	assert_int_equal(p->samples[2].nr_locations, 3);
	assert_int_equal(profile__location(p, p->samples[2].locations[1])->address,
			 f->second.addr);
	assert_string_equal(loc_name(p, p->samples[2].locations[1]), "fx_exported_second");
	assert_int_equal(profile__location(p, p->samples[2].locations[2])->address,
			 f->second.addr + 2);
	/* The mark is not part of the address (no table to check the step against here). */
	assert_int_equal(p->samples[3].nr_locations, 2);
	assert_int_equal(profile__location(p, p->samples[3].locations[1])->address,
			 f->second.addr + 3);
	assert_string_equal(loc_name(p, p->samples[3].locations[1]), "fx_exported_second");
	profile__free(p);
	drained_window__fini(&w);
	window_builder__free(wb);
}

/* Samples of a process never captured keep their time under [unknown] frames. */
static void test_window_without_image(void **state)
{
	struct fake *f = *state;
	struct window_builder_opts wo = { .proctab = f->pt, .symbolizer = f->sym };
	struct profile_opts po = { .period_ns = 10000000, .time_ns = 1, .duration_ns = 1 };
	struct window_stats ws = { 0 };
	struct drained_window w;
	struct window_builder *wb = window_builder__new(&wo);
	struct profile *p = profile__new(&po);
	uint64_t ips[2] = { LIB_BASE + f->first.addr, LIB_BASE + f->second.addr + 4 };

	drained_window__init(&w);
	add_stack(&w, 21, ips, 2);
	add_sample(&w, PID, 21, 0, SAMPLE_USTACK_ERR, "main", 6);
	assert_int_equal(window_builder__add(wb, &w, 0, p, &ws), 0);
	assert_int_equal(ws.no_image_samples, 6);
	assert_int_equal(p->samples[0].nr_locations, 3);
	assert_string_equal(loc_name(p, p->samples[0].locations[0]), "[unknown]");
	assert_string_equal(loc_name(p, p->samples[0].locations[2]), "[truncated]");
	/* Without an image the thread's comm names the process. */
	assert_string_equal(profile__str(p, p->samples[0].labels[2].str), "main");
	profile__free(p);
	drained_window__fini(&w);
	window_builder__free(wb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_capture_and_lookup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pid_reused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exit_and_release, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_retires_only_the_old_image, setup, teardown),
		cmocka_unit_test_setup_teardown(test_announced_image_revives, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rescan, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recapture_keeps_stale, setup, teardown),
		cmocka_unit_test_setup_teardown(test_window_builder, setup, teardown),
		cmocka_unit_test_setup_teardown(test_window_table_stacks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_window_without_image, setup, teardown),
	};

	return cmocka_run_group_tests_name("proctab", tests, NULL, NULL);
}
