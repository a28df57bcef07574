// SPDX-License-Identifier: Apache-2.0
/*
 * The window builder: synthetic drained samples (samples.h) of a process in a fake /proc
 * (fake_proc.h) turned into a profile: locations, placeholders, labels, flags of the table
 * unwinder's stacks, and the window's figures.
 */
#include <errno.h>
#include <grp.h>
#include <sys/wait.h>

#include "fake_proc.h"

#include "../../agent/profile/profile.h"
#include "../../agent/profile/targets.h"
#include "../../agent/profile/window.h"
#include "../../agent/python/pycode.h"

static void add_stack_flags(struct drained_window *w, uint64_t id, const uint64_t *ips, uint32_t n,
			    uint32_t flags)
{
	struct stack_id sid = { .lo = id, .hi = ~id };

	assert_int_equal(drained_window__add_stack(w, &sid, flags, ips, n), 0);
}

static void add_stack(struct drained_window *w, uint64_t id, const uint64_t *ips, uint32_t n)
{
	add_stack_flags(w, id, ips, n, 0);
}

static void add_sample(struct drained_window *w, uint32_t tid, uint64_t ustack, uint64_t kstack,
		       uint32_t flags, const char *comm, uint64_t count)
{
	struct drained_sample k = { .tgid = PID,
				    .pid = tid,
				    .start_time = START_NS,
				    .exec_id = 1,
				    .flags = flags,
				    .count = count };

	if (ustack)
		k.user_stack = (struct stack_id){ .lo = ustack, .hi = ~ustack };
	if (kstack)
		k.kernel_stack = (struct stack_id){ .lo = kstack, .hi = ~kstack };

	snprintf(k.comm, sizeof(k.comm), "%s", comm);
	assert_int_equal(drained_window__add_sample(w, &k), 0);
}

/* An off-CPU sample: ns in thread state `state`, flags SAMPLE_OFFCPU_* (or 0) in flags. */
static void add_offcpu(struct drained_window *w, uint32_t tid, uint64_t ustack, uint64_t kstack,
		       uint32_t flags, enum thread_state state, uint64_t ns)
{
	struct drained_sample k = { .tgid = PID,
				    .pid = tid,
				    .start_time = START_NS,
				    .exec_id = 1,
				    .offcpu_ns = ns,
				    .flags = flags | (uint32_t)state << SAMPLE_STATE_SHIFT };

	if (ustack)
		k.user_stack = (struct stack_id){ .lo = ustack, .hi = ~ustack };
	if (kstack)
		k.kernel_stack = (struct stack_id){ .lo = kstack, .hi = ~kstack };
	snprintf(k.comm, sizeof(k.comm), "%s", (flags & SAMPLE_KTHREAD) ? "kworker/0:1" : "main");
	assert_int_equal(drained_window__add_sample(w, &k), 0);
}

static const char *loc_name(const struct profile *p, uint64_t id)
{
	const struct profile_location *l = profile__location(p, id);

	if (!l || !l->nr_lines)
		return NULL;
	return profile__str(p,
			    profile__function_by_id(p, p->lines[l->first_line].function_id)->name);
}

/* One window's profile of the samples in w, of these sample types, built with the options wo
 * (the caller frees it). */
static struct profile *build_types(const struct window_builder_opts *wo,
				   const struct drained_window *w, enum profile_types types,
				   struct window_stats *ws)
{
	struct profile_opts po = {
		.types = types, .period_ns = 10000000, .time_ns = 1, .duration_ns = 1
	};
	struct window_builder *wb = window_builder__new(wo);
	struct profile *p = profile__new(&po);

	assert_non_null(wb);
	assert_non_null(p);
	memset(ws, 0, sizeof(*ws));
	assert_int_equal(window_builder__add(wb, w, 0, p, ws), 0);
	window_builder__free(wb);
	return p;
}

static struct profile *build(const struct window_builder_opts *wo, const struct drained_window *w,
			     struct window_stats *ws)
{
	return build_types(wo, w, PROFILE_CPU, ws);
}

static void test_window_builder(void **state)
{
	struct fake *f = *state;
	struct proc_event ev = event(PROC_EV_NEW, START_NS);
	struct window_builder_opts wo = { .proctab = f->pt, .symbolizer = f->sym };
	struct window_stats ws;
	struct drained_window w;
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

	p = build(&wo, &w, &ws);
	assert_int_equal(ws.samples, 15);
	assert_int_equal(p->total_count, 15);
	assert_int_equal(ws.kthread_samples, 4);
	assert_int_equal(ws.no_image_samples, 0);
	assert_int_equal(ws.unknown_frames, 1);
	assert_int_equal(ws.broken_chains, 1);
	assert_int_equal(ws.truncated_stacks, 10); /* 5 + 3 + 2 */
	assert_int_equal(p->nr_samples, 5);

	/* Sample 0: fx_exported_first <- fx_exported_second, ELF addresses, one mapping. Its
	 * outermost frame is named but starts no thread: the chain broke, [truncated]. */
	s = &p->samples[0];
	assert_int_equal(s->nr_locations, 3);
	assert_string_equal(loc_name(p, s->locations[0]), "fx_exported_first");
	assert_string_equal(loc_name(p, s->locations[1]), "fx_exported_second");
	assert_string_equal(loc_name(p, s->locations[2]), "[truncated]");
	l = profile__location(p, s->locations[0]);
	assert_int_equal(l->address, f->first.addr + 1); /* the leaf as is */
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
	struct window_stats ws;
	struct drained_window w;
	struct profile *p;
	uint64_t ips[2] = { LIB_BASE + f->first.addr + 1, LIB_BASE + f->second.addr + 4 };
	uint64_t exact[3] = { LIB_BASE + f->first.addr + 1, LIB_BASE + f->second.addr,
			      (LIB_BASE + f->second.addr + 2) | FRAME_EXACT };
	/* A caller the unwinder reached by frame pointer: marked, looked up as any other. */
	uint64_t by_fp[2] = { LIB_BASE + f->first.addr + 1,
			      (LIB_BASE + f->second.addr + 4) | FRAME_BY_FP };

	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), 0);
	drained_window__init(&w);
	add_stack_flags(&w, 31, ips, 2, STACK_TABLES | STACK_COMPLETE);
	add_stack_flags(&w, 32, ips, 2, STACK_TABLES | STACK_TRUNCATED);
	add_stack_flags(&w, 33, exact, 3, STACK_TABLES | STACK_COMPLETE);
	add_sample(&w, PID, 31, 0, 0, "main", 2);
	add_sample(&w, PID + 1, 32, 0, 0, "main", 3);
	add_stack_flags(&w, 34, by_fp, 2, STACK_TABLES | STACK_COMPLETE);
	add_sample(&w, PID + 2, 33, 0, 0, "main", 1);
	add_sample(&w, PID + 3, 34, 0, 0, "main", 1);
	p = build(&wo, &w, &ws);
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
	assert_int_equal(profile__location(p, p->samples[2].locations[1])->address, f->second.addr);
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
}

/* A stand-in for the unwinder's check: the step out of fx_exported_first is not to be trusted
 * (as when its table says it keeps no frame pointer); every other step is. */
struct fp_check {
	uint64_t bad_vaddr_lo, bad_vaddr_hi; /* [lo, hi): fx_exported_first */
	int calls;
};

static bool fake_fp_step_ok(void *ctx, const struct sym_object *obj, uint64_t vaddr)
{
	struct fp_check *fc = ctx;

	assert_non_null(obj);
	fc->calls++;
	return vaddr < fc->bad_vaddr_lo || vaddr >= fc->bad_vaddr_hi;
}

/*
 * Frame-pointer steps are checked against the unwind tables (opts.fp_step_ok): a whole
 * frame-pointer walk is cut, [truncated], after the first frame whose step cannot be trusted;
 * so is a table-unwound stack at a caller marked FRAME_BY_FP. A step the check accepts
 * keeps the whole stack.
 */
static void test_window_fp_steps_checked(void **state)
{
	struct fake *f = *state;
	struct proc_event ev = event(PROC_EV_NEW, START_NS);
	struct fp_check fc = { .bad_vaddr_lo = f->first.addr,
			       .bad_vaddr_hi =
				       f->first.addr + (f->first.size ? f->first.size : 1) };
	struct window_builder_opts wo = { .proctab = f->pt,
					  .symbolizer = f->sym,
					  .fp_step_ok = fake_fp_step_ok,
					  .fp_step_ctx = &fc };
	struct window_stats ws;
	struct drained_window w;
	struct profile *p;
	/* Leaf in fx_exported_first (its step is bad), caller fx_exported_second. */
	uint64_t bad[2] = { LIB_BASE + f->first.addr + 1, LIB_BASE + f->second.addr + 4 };
	/* Leaf in fx_exported_second (its step is good), caller fx_exported_first. */
	uint64_t good[2] = { LIB_BASE + f->second.addr + 1, LIB_BASE + f->first.addr + 4 };
	uint64_t tables_bad[2] = { LIB_BASE + f->first.addr + 1,
				   (LIB_BASE + f->second.addr + 4) | FRAME_BY_FP };
	uint64_t tables_unmarked[2] = { LIB_BASE + f->first.addr + 1,
					LIB_BASE + f->second.addr + 4 };

	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), 0);
	drained_window__init(&w);
	add_stack_flags(&w, 41, bad, 2, 0);
	add_stack_flags(&w, 42, good, 2, 0);
	add_stack_flags(&w, 43, tables_bad, 2, STACK_TABLES | STACK_COMPLETE);
	add_stack_flags(&w, 44, tables_unmarked, 2, STACK_TABLES | STACK_COMPLETE);
	add_sample(&w, PID, 41, 0, 0, "main", 1);
	add_sample(&w, PID + 1, 42, 0, 0, "main", 1);
	add_sample(&w, PID + 2, 43, 0, 0, "main", 1);
	add_sample(&w, PID + 3, 44, 0, 0, "main", 1);
	p = build(&wo, &w, &ws);
	assert_int_equal(p->nr_samples, 4);
	assert_int_equal(ws.fp_walks_cut, 2);
	/* Cut after the leaf: the leaf, then [truncated] where a made-up caller would be. */
	assert_int_equal(p->samples[0].nr_locations, 2);
	assert_string_equal(loc_name(p, p->samples[0].locations[0]), "fx_exported_first");
	assert_string_equal(loc_name(p, p->samples[0].locations[1]), "[truncated]");
	/* A trusted step keeps its caller. */
	assert_string_equal(loc_name(p, p->samples[1].locations[1]), "fx_exported_first");
	/* A table-unwound stack is checked only where the unwinder took a frame pointer. */
	assert_int_equal(p->samples[2].nr_locations, 2);
	assert_string_equal(loc_name(p, p->samples[2].locations[1]), "[truncated]");
	assert_int_equal(p->samples[3].nr_locations, 2);
	assert_string_equal(loc_name(p, p->samples[3].locations[1]), "fx_exported_second");
	assert_true(fc.calls >= 3);
	profile__free(p);
	drained_window__fini(&w);
}

/* Stand-ins for the unwinder's end check (the object's table is not loaded when not_loaded)
 * and its note of use. */
struct end_check {
	bool not_loaded;
	int end_calls, used_calls;
};

static bool fake_fp_end_ok(void *ctx, const struct sym_object *obj)
{
	struct end_check *ec = ctx;

	assert_non_null(obj);
	ec->end_calls++;
	return !ec->not_loaded;
}

static bool fake_fp_step_all_ok(void *ctx, const struct sym_object *obj, uint64_t vaddr)
{
	(void)ctx;
	(void)obj;
	(void)vaddr;
	return true;
}

static void fake_object_used(void *ctx, struct sym_object *obj)
{
	struct end_check *ec = ctx;

	assert_non_null(obj);
	ec->used_calls++;
}

/*
 * Issue 20: a walk that did not reach the outermost frame and ended in code whose table is
 * not loaded (opts.fp_end_ok false: too large for the row map, not built yet) ends in
 * [truncated], even at an unnamed frame (a PLT entry here) that the root-function rule
 * cannot judge; a complete stack is left alone; and the unwinder hears of every object the
 * stacks go through, once per run of frames in it.
 */
static void test_window_fp_end_checked(void **state)
{
	struct fake *f = *state;
	struct proc_event ev = event(PROC_EV_NEW, START_NS);
	struct end_check ec = { .not_loaded = true };
	struct window_builder_opts wo = { .proctab = f->pt,
					  .symbolizer = f->sym,
					  .fp_step_ok = fake_fp_step_all_ok,
					  .fp_end_ok = fake_fp_end_ok,
					  .object_used = fake_object_used,
					  .fp_step_ctx = &ec };
	struct window_stats ws;
	struct drained_window w;
	struct profile *p;
	/* Leaf fx_exported_second, its caller in the PLT (.plt at 0x1020: no symbol). */
	uint64_t ips[2] = { LIB_BASE + f->second.addr + 1, LIB_BASE + 0x1030 };

	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), 0);
	drained_window__init(&w);
	add_stack_flags(&w, 51, ips, 2, 0);
	add_stack_flags(&w, 52, ips, 2, STACK_TABLES | STACK_COMPLETE);
	add_sample(&w, PID, 51, 0, 0, "main", 1);
	add_sample(&w, PID + 1, 52, 0, 0, "main", 1);
	p = build(&wo, &w, &ws);
	assert_int_equal(p->nr_samples, 2);
	assert_int_equal(p->samples[0].nr_locations, 3);
	assert_string_equal(loc_name(p, p->samples[0].locations[2]), "[truncated]");
	assert_int_equal(p->samples[1].nr_locations, 2);
	assert_int_equal(ws.fp_walks_cut, 1);
	assert_int_equal(ec.end_calls, 1);
	assert_int_equal(ec.used_calls, 2); /* one object per stack */
	profile__free(p);
	drained_window__fini(&w);

	/* The table loaded: the same walk keeps its unnamed end, not judged. */
	ec = (struct end_check){ .not_loaded = false };
	drained_window__init(&w);
	add_stack_flags(&w, 51, ips, 2, 0);
	add_sample(&w, PID, 51, 0, 0, "main", 1);
	p = build(&wo, &w, &ws);
	assert_int_equal(p->samples[0].nr_locations, 2);
	assert_int_equal(ws.fp_walks_cut, 0);
	profile__free(p);
	drained_window__fini(&w);
}

/* Samples of a process never captured keep their time under [unknown] frames. */
static void test_window_without_image(void **state)
{
	struct fake *f = *state;
	struct window_builder_opts wo = { .proctab = f->pt, .symbolizer = f->sym };
	struct window_stats ws;
	struct drained_window w;
	struct profile *p;
	uint64_t ips[2] = { LIB_BASE + f->first.addr, LIB_BASE + f->second.addr + 4 };

	drained_window__init(&w);
	add_stack(&w, 21, ips, 2);
	add_sample(&w, PID, 21, 0, SAMPLE_USTACK_ERR, "main", 6);
	p = build(&wo, &w, &ws);
	assert_int_equal(ws.no_image_samples, 6);
	assert_int_equal(p->samples[0].nr_locations, 3);
	assert_string_equal(loc_name(p, p->samples[0].locations[0]), "[unknown]");
	assert_string_equal(loc_name(p, p->samples[0].locations[2]), "[truncated]");
	/* Without an image the thread's comm names the process. */
	assert_string_equal(profile__str(p, p->samples[0].labels[2].str), "main");
	profile__free(p);
	drained_window__fini(&w);
}

/* The checks of test_window_denied_maps, in a child without privileges: 0 when all hold,
 * else the number of the first that failed. */
static int denied_maps_child(struct fake *f)
{
	struct window_builder_opts wo = { .proctab = f->pt, .symbolizer = f->sym };
	struct proc_event ev = event(PROC_EV_NEW, START_NS);
	uint64_t ips[3] = { LIB_BASE + f->first.addr, LIB_BASE + f->second.addr + 4,
			    LIB_BASE + 0x1100 };
	struct proc_id id = the_id();
	struct proctab_stats st;
	struct window_stats ws;
	struct drained_window w;
	struct proc_image *img;
	struct profile *p;
	uint32_t i;

	if (proctab__handle_event(f->pt, &ev, 0))
		return 1;
	img = proctab__find(f->pt, &id);
	if (!img || !img->denied || img->nr_maps || strcmp(img->comm, "fake app"))
		return 2;
	proctab__stats(f->pt, &st);
	if (st.denied != 1 || st.images != 1 || !proctab__knows(f->pt, PID, START_NS, 1))
		return 3;
	/* No recapture per frame: the maps stay refused. */
	if (proctab__mapping(f->pt, img, ips[0], 0, true))
		return 4;
	drained_window__init(&w);
	add_stack(&w, 31, ips, 3);
	add_sample(&w, PID, 31, 0, 0, "worker", 5);
	p = build(&wo, &w, &ws);
	if (ws.denied_samples != 5 || ws.no_image_samples || ws.broken_chains)
		return 5;
	/* Every frame kept: [unknown] with its address (return addresses as sampled). */
	if (p->nr_samples != 1 || p->samples[0].nr_locations != 3)
		return 6;
	for (i = 0; i < 3; i++) {
		const struct profile_location *l = profile__location(p, p->samples[0].locations[i]);
		const char *name = loc_name(p, p->samples[0].locations[i]);

		if (!l || l->address != ips[i] || l->mapping_id || !name ||
		    strcmp(name, "[unknown]"))
			return 7;
	}
	/* The process's name from its image, not the thread's. */
	if (strcmp(profile__str(p, p->samples[0].labels[2].str), "fake app"))
		return 8;
	profile__free(p);
	drained_window__fini(&w);
	return 0;
}

/*
 * A process whose maps may not be read (issue 20: no CAP_SYS_PTRACE on kernels that ask for
 * it): held as denied with its name, its frames [unknown] with their addresses, its samples
 * counted. The maps are made unreadable (mode 000) for a child that drops root, if it has it.
 */
static void test_window_denied_maps(void **state)
{
	struct fake *f = *state;
	char path[256];
	int status;
	pid_t child;

	snprintf(path, sizeof(path), "%s/maps", f->pid_dir);
	assert_int_equal(chmod(path, 0), 0);
	assert_int_equal(chmod(f->root, 0755), 0);
	child = fork();
	assert_true(child >= 0);
	if (!child) {
		if (geteuid() == 0 && (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
				       setresuid(65534, 65534, 65534)))
			_exit(100);
		_exit(denied_maps_child(f));
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* A stand-in for the code-object cache: serials 1 and 2 are known, any other is not. */
struct py_fake {
	int calls;
};

#define PY_WORD(serial, lasti) (FRAME_PY | (uint64_t)(lasti) << FRAME_PY_LASTI_SHIFT | (serial))

static bool fake_python_frame(void *ctx, const struct proc_image *img, uint64_t serial,
			      uint32_t lasti, struct pycode_frame *out)
{
	struct py_fake *pf = ctx;

	pf->calls++;
	assert_non_null(img);
	assert_int_equal(img->id.tgid, PID);
	assert_int_equal(img->id.start_time, START_NS);
	if (serial == 1) {
		*out = (struct pycode_frame){ .name = "Holder.hot",
					      .filename = "/app/x.py",
					      .firstlineno = 10,
					      .line = 10 + (int32_t)lasti };
		return true;
	}
	if (serial == 2) {
		*out = (struct pycode_frame){
			.name = "<module>", .filename = "/app/x.py", .firstlineno = 1, .line = 0
		};
		return lasti == FRAME_PY_LASTI_NONE || lasti == 7;
	}
	return false;
}

static const struct profile_function *loc_function(const struct profile *p, uint64_t id)
{
	const struct profile_location *l = profile__location(p, id);

	assert_non_null(l);
	assert_int_equal(l->nr_lines, 1);
	return profile__function_by_id(p, p->lines[l->first_line].function_id);
}

static int64_t loc_line(const struct profile *p, uint64_t id)
{
	return p->lines[profile__location(p, id)->first_line].line;
}

/*
 * Python frames (FRAME_PY) among native ones in a table-unwound stack: in order, each a
 * Location without mapping or address, one Line of its function at its line; one Location
 * per (function, line) across stacks; the native frames around them keep their rules (a
 * return address rootward of a Python frame is adjusted; one in no mapping still cuts the
 * chain); an unknown serial is [unnamed Python frame], counted, never a made-up name.
 */
static void test_window_python_frames(void **state)
{
	struct fake *f = *state;
	struct proc_event ev = event(PROC_EV_NEW, START_NS);
	struct py_fake pf = { 0 };
	struct window_builder_opts wo = { .proctab = f->pt,
					  .symbolizer = f->sym,
					  .python_frame = fake_python_frame,
					  .python_ctx = &pf };
	struct window_stats ws;
	struct drained_window w;
	struct profile *p;
	const struct profile_sample *s;
	const struct profile_function *fn;
	const struct profile_location *l;
	/* A C function called from Python, two Python frames, the eval loop's caller, an
	 * unknown serial, then hot again at the same line (recursion) and at another line. */
	uint64_t mixed[7] = { LIB_BASE + f->first.addr + 1,
			      PY_WORD(1, 2),
			      PY_WORD(2, 7),
			      LIB_BASE + f->second.addr + 4,
			      PY_WORD(99, 3),
			      PY_WORD(1, 2),
			      PY_WORD(1, 5) };
	/* The same frames again in another stack; a Python leaf; a stale-looking lasti. */
	uint64_t again[3] = { PY_WORD(1, 2), PY_WORD(2, FRAME_PY_LASTI_NONE),
			      LIB_BASE + f->second.addr + 4 };
	/* A return address in no mapping rootward of a Python frame: a broken chain still. */
	uint64_t broken[3] = { PY_WORD(1, 2), 0x1234, LIB_BASE + f->second.addr + 4 };
	/* Without tables the bit means nothing: an address in no mapping. */
	uint64_t fp_walk[1] = { PY_WORD(1, 2) };

	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), 0);
	drained_window__init(&w);
	add_stack_flags(&w, 51, mixed, 7, STACK_TABLES | STACK_COMPLETE);
	add_stack_flags(&w, 52, again, 3, STACK_TABLES | STACK_COMPLETE);
	add_stack_flags(&w, 53, broken, 3, STACK_TABLES | STACK_COMPLETE);
	add_stack_flags(&w, 54, fp_walk, 1, 0);
	add_sample(&w, PID, 51, 0, 0, "main", 4);
	add_sample(&w, PID, 52, 0, 0, "main", 2);
	add_sample(&w, PID, 53, 0, 0, "main", 1);
	add_sample(&w, PID, 54, 0, 0, "main", 1);
	p = build(&wo, &w, &ws);
	assert_int_equal(p->nr_samples, 4);
	assert_int_equal(ws.python_frames, 4 + 2 + 1);
	assert_int_equal(ws.python_unnamed, 1);
	assert_int_equal(ws.broken_chains, 1);
	assert_int_equal(ws.unknown_frames, 1);

	s = &p->samples[0];
	assert_int_equal(s->nr_locations, 7);
	assert_string_equal(loc_name(p, s->locations[0]), "fx_exported_first");
	assert_int_equal(profile__location(p, s->locations[0])->address, f->first.addr + 1);
	l = profile__location(p, s->locations[1]);
	assert_int_equal(l->mapping_id, 0);
	assert_int_equal(l->address, 0);
	assert_int_equal(l->tag, TAG_NONE);
	fn = loc_function(p, s->locations[1]);
	assert_string_equal(profile__str(p, fn->name), "Holder.hot");
	assert_string_equal(profile__str(p, fn->system_name), "");
	assert_string_equal(profile__str(p, fn->filename), "/app/x.py");
	assert_int_equal(fn->start_line, 10);
	assert_int_equal(loc_line(p, s->locations[1]), 12);
	assert_string_equal(loc_name(p, s->locations[2]), "<module>");
	assert_int_equal(loc_line(p, s->locations[2]), 0);
	/* The eval loop's caller: a return address, moved into its call. */
	assert_string_equal(loc_name(p, s->locations[3]), "fx_exported_second");
	assert_int_equal(profile__location(p, s->locations[3])->address, f->second.addr + 3);
	assert_string_equal(loc_name(p, s->locations[4]), "[unnamed Python frame]");
	assert_int_equal(profile__location(p, s->locations[4])->mapping_id, 0);
	assert_int_equal(profile__location(p, s->locations[4])->tag, TAG_PYTHON_UNNAMED);
	/* The same (function, line) is the same Location; another line another one, with
	 * the same Function. */
	assert_int_equal(s->locations[5], s->locations[1]);
	assert_true(s->locations[6] != s->locations[1]);
	assert_int_equal(loc_line(p, s->locations[6]), 15);
	assert_ptr_equal(loc_function(p, s->locations[6]), loc_function(p, s->locations[1]));
	/* Complete per the unwinder: no [truncated] although <module>'s callers are native. */

	/* Across stacks: the same Locations; a Python leaf; an unknown lasti is line 0, as
	 * <module> at line 0 above: one Location. */
	s = &p->samples[1];
	assert_int_equal(s->nr_locations, 3);
	assert_int_equal(s->locations[0], p->samples[0].locations[1]);
	assert_int_equal(s->locations[1], p->samples[0].locations[2]);
	assert_int_equal(profile__location(p, s->locations[2])->address, f->second.addr + 3);

	s = &p->samples[2];
	assert_int_equal(s->nr_locations, 2);
	assert_string_equal(loc_name(p, s->locations[0]), "Holder.hot");
	assert_string_equal(loc_name(p, s->locations[1]), "[truncated]");

	s = &p->samples[3];
	assert_string_equal(loc_name(p, s->locations[0]), "[unknown]");

	/* Locations without a mapping: Holder.hot at 12 and 15, <module> at 0, the unnamed
	 * placeholder, [truncated], [unknown]. */
	{
		size_t i, nomap = 0;

		for (i = 0; i < p->nr_locations; i++)
			nomap += !p->locations[i].mapping_id;
		assert_int_equal(nomap, 6);
	}
	profile__free(p);

	/* No callback: every Python frame is unnamed. */
	wo.python_frame = NULL;
	p = build(&wo, &w, &ws);
	assert_int_equal(ws.python_frames, 0);
	assert_int_equal(ws.python_unnamed, 5 + 2 + 1); /* the frame-pointer walk has none */
	assert_string_equal(loc_name(p, p->samples[0].locations[1]), "[unnamed Python frame]");
	profile__free(p);
	drained_window__fini(&w);
}

/* The string value of label key of s, or NULL. */
static const char *label_str(const struct profile *p, const struct profile_sample *s,
			     const char *key)
{
	uint32_t i;

	for (i = 0; i < s->nr_labels; i++)
		if (!strcmp(profile__str(p, s->labels[i].key), key) && s->labels[i].str)
			return profile__str(p, s->labels[i].str);
	return NULL;
}

/*
 * Off-CPU samples: their nanoseconds as offcpu/nanoseconds with count 0, the label
 * thread_state after the others, the stacks of a CPU sample; one over the rate cap or
 * flushed at exit has one placeholder frame instead. The window's figures.
 */
static void test_window_offcpu(void **state)
{
	struct fake *f = *state;
	struct proc_event ev = event(PROC_EV_NEW, START_NS);
	struct window_builder_opts wo = { .proctab = f->pt, .symbolizer = f->sym };
	struct window_stats ws;
	struct drained_window w;
	struct profile *p;
	const struct profile_sample *s;
	const struct profile_location *l;
	uint64_t good[2] = { LIB_BASE + f->first.addr + 1, LIB_BASE + f->second.addr + 4 };
	static const char *const states[] = { "sleeping", "uninterruptible", "runnable" };
	size_t i;

	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), 0);
	drained_window__init(&w);
	add_stack(&w, 11, good, 2);
	add_sample(&w, PID, 11, 0, 0, "main", 5);
	add_offcpu(&w, PID, 11, 0, 0, THREAD_SLEEPING, 4000000);
	add_offcpu(&w, PID, 11, 0, 0, THREAD_DISK, 2000000);
	add_offcpu(&w, PID, 11, 0, 0, THREAD_RUNNABLE, 1000000);
	add_offcpu(&w, PID, 0, 0, SAMPLE_OFFCPU_CAPPED, THREAD_SLEEPING, 3000000);
	add_offcpu(&w, PID, 0, 0, SAMPLE_OFFCPU_EXITED, THREAD_RUNNABLE, 500000);
	p = build_types(&wo, &w, PROFILE_CPU_OFFCPU, &ws);
	assert_int_equal(ws.samples, 5);
	assert_int_equal(p->total_count, 5);
	assert_int_equal(ws.offcpu_ns, 10500000);
	assert_int_equal(p->total_offcpu_ns, 10500000);
	assert_int_equal(ws.offcpu_capped_ns, 3000000);
	/* fx_exported_second starts no thread: the stack ends in [truncated]. */
	assert_int_equal(ws.offcpu_truncated_ns, 7000000);
	assert_int_equal(ws.truncated_stacks, 5); /* CPU samples only */
	assert_int_equal(ws.offcpu_dropped_ns, 0);
	assert_int_equal(p->nr_samples, 6);

	/* The CPU sample: no thread_state, no off-CPU time. */
	s = &p->samples[0];
	assert_int_equal(s->values[0], 5);
	assert_int_equal(s->values[2], 0);
	assert_int_equal(s->nr_labels, 4);
	assert_null(label_str(p, s, "thread_state"));

	/* Off CPU on the same stack: the same locations, a sample per state. */
	for (i = 0; i < 3; i++) {
		s = &p->samples[1 + i];
		assert_int_equal(s->values[0], 0);
		assert_int_equal(s->values[1], 0);
		assert_int_equal(s->values[2], (int64_t)(4000000 >> i));
		assert_int_equal(s->nr_locations, p->samples[0].nr_locations);
		assert_memory_equal(s->locations, p->samples[0].locations,
				    s->nr_locations * sizeof(s->locations[0]));
		assert_int_equal(s->nr_labels, 5);
		assert_memory_equal(s->labels, p->samples[0].labels, 4 * sizeof(s->labels[0]));
		assert_string_equal(profile__str(p, s->labels[4].key), "thread_state");
		assert_string_equal(profile__str(p, s->labels[4].str), states[i]);
	}
	assert_string_equal(loc_name(p, p->samples[1].locations[0]), "fx_exported_first");

	/* Over the rate cap, and short waits at exit: one placeholder frame each. */
	s = &p->samples[4];
	assert_int_equal(s->nr_locations, 1);
	l = profile__location(p, s->locations[0]);
	assert_int_equal(l->mapping_id, 0);
	assert_int_equal(l->tag, TAG_OFFCPU_CAPPED);
	assert_string_equal(loc_name(p, s->locations[0]), "[off-CPU samples over the rate cap]");
	assert_int_equal(s->values[0], 0);
	assert_int_equal(s->values[2], 3000000);
	assert_string_equal(label_str(p, s, "thread_state"), "sleeping");
	assert_int_equal(s->labels[0].num, PID);
	s = &p->samples[5];
	assert_int_equal(s->nr_locations, 1);
	assert_int_equal(profile__location(p, s->locations[0])->tag, TAG_OFFCPU_EXITED);
	assert_string_equal(loc_name(p, s->locations[0]), "[short off-CPU waits before exit]");
	assert_int_equal(s->values[2], 500000);
	assert_string_equal(label_str(p, s, "thread_state"), "runnable");
	profile__free(p);
	drained_window__fini(&w);
}

/* With targets and opts.offcpu, a process's (and a kernel thread's) off-CPU samples go to
 * its offcpu series, its CPU samples to its process_cpu one; without opts.offcpu both stay
 * in the CPU series. */
static void test_window_offcpu_targets(void **state)
{
	struct fake *f = *state;
	struct proc_event ev = event(PROC_EV_NEW, START_NS);
	struct targets_opts to = { .hostname = "node-1" };
	struct targets *t = targets__new(&to);
	struct window_builder_opts wo = {
		.proctab = f->pt, .symbolizer = f->sym, .targets = t, .offcpu = true
	};
	struct window_stats ws;
	struct drained_window w;
	struct profile *p;
	const struct target *tg[4];
	uint64_t good[2] = { LIB_BASE + f->first.addr + 1, LIB_BASE + f->second.addr + 4 };
	uint64_t kernel[1] = { 0xffffffff81003010ULL };
	size_t i;

	assert_non_null(t);
	assert_int_equal(proctab__handle_event(f->pt, &ev, 0), 0);
	drained_window__init(&w);
	add_stack(&w, 11, good, 2);
	add_stack(&w, 14, kernel, 1);
	/* A kernel thread first, so that the process's targets are not the first ids. */
	add_sample(&w, 77, 0, 14, SAMPLE_KTHREAD, "kworker/0:1", 2);
	add_sample(&w, PID, 11, 0, 0, "main", 5);
	add_offcpu(&w, PID, 11, 0, 0, THREAD_SLEEPING, 4000000);
	add_offcpu(&w, PID, 0, 0, SAMPLE_OFFCPU_CAPPED, THREAD_DISK, 1000000);
	add_offcpu(&w, 77, 0, 14, SAMPLE_KTHREAD, THREAD_SLEEPING, 3000000);
	p = build_types(&wo, &w, PROFILE_CPU_OFFCPU, &ws);
	assert_int_equal(p->nr_samples, 5);
	for (i = 0; i < 4; i++) {
		tg[i] = targets__get(t, 0, p->samples[i < 3 ? i : 4].group);
		assert_non_null(tg[i]);
	}
	/* Kernel thread CPU, process CPU, process off-CPU, kernel thread off-CPU. */
	assert_string_equal(tg[0]->labels[0].value, "process_cpu");
	assert_string_equal(tg[0]->service_name, "kernel");
	assert_string_equal(tg[1]->labels[0].value, "process_cpu");
	assert_string_equal(tg[2]->labels[0].value, "offcpu");
	assert_string_equal(tg[2]->service_name, tg[1]->service_name);
	assert_string_not_equal(tg[1]->service_name, "kernel");
	assert_string_equal(tg[3]->labels[0].value, "offcpu");
	assert_string_equal(tg[3]->service_name, "kernel");
	assert_true(p->samples[1].group != p->samples[0].group);
	assert_true(p->samples[2].group != p->samples[1].group);
	assert_true(p->samples[4].group != p->samples[0].group);
	assert_true(p->samples[4].group != p->samples[2].group);
	/* The capped sample goes to its process's off-CPU series too. */
	assert_int_equal(p->samples[3].group, p->samples[2].group);
	assert_int_equal(targets__count(t, 0), 4);
	profile__free(p);

	/* Without opts.offcpu: one series per process, off-CPU samples in it. */
	wo.offcpu = false;
	p = build_types(&wo, &w, PROFILE_CPU_OFFCPU, &ws);
	assert_int_equal(p->nr_samples, 5);
	assert_int_equal(p->samples[2].group, p->samples[1].group);
	assert_int_equal(p->samples[3].group, p->samples[1].group);
	assert_int_equal(p->samples[4].group, p->samples[0].group);
	assert_true(p->samples[1].group != p->samples[0].group);
	for (i = 0; i < p->nr_samples; i++)
		assert_string_equal(targets__get(t, 0, p->samples[i].group)->labels[0].value,
				    "process_cpu");
	profile__free(p);
	drained_window__fini(&w);
	targets__free(t);
}

UNIT_MAIN("window", cmocka_unit_test_setup_teardown(test_window_builder, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_window_table_stacks, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_window_without_image, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_window_denied_maps, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_window_fp_end_checked, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_window_fp_steps_checked, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_window_python_frames, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_window_offcpu, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_window_offcpu_targets, setup, teardown))
