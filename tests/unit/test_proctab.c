// SPDX-License-Identifier: Apache-2.0
/*
 * The process table without BPF: process events against a fake /proc (fake_proc.h), captures
 * of mapped ELF fixtures, exits, exec, PID reuse, rescans and recaptures.
 */
#include <errno.h>

#include "fake_proc.h"

#include "../../agent/collect/procfs.h"

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
	assert_int_equal(img->nr_maps, 1); /* only the executable mapping */
	m = proctab__mapping(f->pt, img, LIB_BASE + f->first.addr, 0, false);
	assert_non_null(m);
	assert_non_null(m->object);
	assert_string_equal(m->name, LIB_PATH);
	assert_int_equal(sym_object__vaddr(m->object,
					   LIB_BASE + f->first.addr - m->start + m->offset, &vaddr),
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
	assert_int_equal(st.files_opened, 1); /* the second capture reused the object */
}

/* The PID now belongs to a process that started at another time: nothing is captured; the
 * image is held as gone, without mappings, for what BPF announces of it. */
static void test_pid_reused(void **state)
{
	struct fake *f = *state;
	struct proc_event ev = event(PROC_EV_NEW, START_NS + 5000000000ULL);
	struct proc_id id = the_id();
	struct proc_image *img;

	assert_int_equal(proctab__handle_event(f->pt, &ev, 4), -ESRCH);
	id.start_time = ev.start_time;
	img = proctab__find(f->pt, &id);
	assert_non_null(img);
	assert_int_equal(img->nr_maps, 0);
	assert_int_equal(img->exited_window, 4);
	proctab__release(f->pt, 4);
	assert_null(proctab__find(f->pt, &id));
}

/*
 * A process gone before its mappings were read (issue 20's exec storm): its image is held
 * with the file mappings BPF announces (PROC_EV_MAPPING), their objects the ones the agent
 * holds for that device and inode (an earlier process's, never opened again); a mapping a
 * capture has already, a file the agent holds nothing of, and an image it does not hold are
 * counted. Objects of released images linger a few windows for the next short process.
 */
static void test_gone_before_capture_named_from_bpf(void **state)
{
	struct fake *f = *state;
	struct proc_event ev = event(PROC_EV_NEW, START_NS);
	struct proc_id id = the_id(), gone = the_id();
	const struct proc_mapping *m, *first;
	struct proc_image *img;
	struct proctab_stats st;
	struct sym_object *obj;
	uint32_t kdev = (uint32_t)major(f->dev) << 20 | minor(f->dev);
	uint64_t vaddr;

	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), 0);
	first = proctab__mapping(f->pt, proctab__find(f->pt, &id), LIB_BASE + f->first.addr, 0,
				 false);
	assert_non_null(first);
	ev.tgid = gone.tgid = PID + 1; /* no such process in the fake /proc */
	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), -ESRCH);
	img = proctab__find(f->pt, &gone);
	assert_non_null(img);

	ev = (struct proc_event){ .type = PROC_EV_MAPPING,
				  .tgid = PID + 1,
				  .start_time = START_NS,
				  .exec_id = 1,
				  .exe_dev = kdev,
				  .exe_inode = f->ino,
				  .start = LIB_BASE + 0x1000,
				  .end = LIB_BASE + 0x2000,
				  .offset = 0x1000 };
	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), 0);
	m = proctab__mapping(f->pt, img, LIB_BASE + f->first.addr, 0, true);
	assert_non_null(m);
	assert_ptr_equal(m->object, first->object);
	assert_true(m->from_bpf);
	assert_string_equal(m->name, LIB_PATH);
	assert_int_equal(sym_object__vaddr(m->object,
					   LIB_BASE + f->first.addr - m->start + m->offset, &vaddr),
			 0);
	assert_int_equal(vaddr, f->first.addr);
	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), 0); /* again: known */
	ev.exe_inode = f->ino + 7;
	ev.start = LIB_BASE + 0x8000;
	ev.end = LIB_BASE + 0x9000;
	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), 0); /* a file not held */
	m = proctab__mapping(f->pt, img, LIB_BASE + 0x8010, 0, true);
	assert_non_null(m);
	assert_null(m->object);
	ev.tgid = PID + 2;
	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), 0); /* no image */
	proctab__stats(f->pt, &st);
	assert_int_equal(st.uncaptured, 1);
	assert_int_equal(st.bpf_mappings, 2);
	assert_int_equal(st.bpf_mappings_known, 1);
	assert_int_equal(st.bpf_mappings_no_file, 1);
	assert_int_equal(st.bpf_mappings_no_image, 1);
	assert_int_equal(img->nr_maps, 2);

	/* Both gone: the file stays open a few windows, then goes. */
	ev = event(PROC_EV_EXIT, START_NS);
	assert_int_equal(proctab__handle_event(f->pt, &ev, 1), 0);
	proctab__release(f->pt, 1);
	assert_null(proctab__find(f->pt, &id));
	assert_null(proctab__find(f->pt, &gone));
	proctab__stats(f->pt, &st);
	assert_int_equal(st.lingering, 1);
	obj = symbolizer__find(f->sym, f->dev, f->ino);
	assert_non_null(obj);
	sym_object__put(obj);
	proctab__release(f->pt, 20);
	proctab__stats(f->pt, &st);
	assert_int_equal(st.lingering, 0);
	assert_null(symbolizer__find(f->sym, f->dev, f->ino));
}

/*
 * The exe link may be refused where the maps are not (root without CAP_SYS_PTRACE, issue 20):
 * the fake /proc has none. The maps then decide whether the process still runs the executable
 * BPF saw: one whose inode they show is captured, another one is an exec since.
 */
static void test_exe_unreadable(void **state)
{
	struct fake *f = *state;
	struct proc_event ev = event(PROC_EV_NEW, START_NS);
	struct proc_id id = the_id();

	ev.exe_inode = f->ino + 1;
	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), -ESRCH);
	assert_int_equal(proctab__find(f->pt, &id)->nr_maps, 0); /* held as gone */
	ev.exe_inode = f->ino;
	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), 0); /* announced: alive */
	assert_non_null(proctab__find(f->pt, &id));
	assert_int_equal(proctab__find(f->pt, &id)->nr_maps, 1);
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
	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), 0); /* inside execve() */
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
	write_stat(f, START_NS / 10000000 + 1); /* pid reused by another process */
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

	write_maps(f, ""); /* the second copy went away (dlclose) */
	ev.type = PROC_EV_MMAP;
	assert_int_equal(proctab__handle_event(f->pt, &ev, 8), 0);
	assert_int_equal(img->nr_maps, 2);
	assert_non_null(proctab__mapping(f->pt, img, LIB_BASE + 0x101000 + 0x10, 8, false));
	proctab__release(f->pt, 8);
	assert_int_equal(img->nr_maps, 1);
	assert_null(proctab__mapping(f->pt, img, LIB_BASE + 0x101000 + 0x10, 9, false));
}

UNIT_MAIN("proctab", cmocka_unit_test_setup_teardown(test_capture_and_lookup, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_pid_reused, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_gone_before_capture_named_from_bpf, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_exit_and_release, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_exec_retires_only_the_old_image, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_announced_image_revives, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_rescan, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_recapture_keeps_stale, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_exe_unreadable, setup, teardown))
