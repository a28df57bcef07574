// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../symbolizer/symbolizer.h"
#include "collect/samples.h"
#include "collect/kubernetes.h"
#include "operate/log.h"
#include "python/pycode.h"
#include "profile.h"
#include "collect/proctab.h"
#include "targets.h"
#include "window.h"

#define MAX_INLINE_FRAMES 16
#define MAX_FRAMES	  (2 * STACK_MAX_DEPTH + 2)
#define KERNEL_MAPPING	  "[kernel.kallsyms]"

/*
 * Functions that start a thread of execution: a user stack whose outermost frame is one of
 * them is complete. Another named function there means the frame-pointer chain broke.
 */
static const char *const root_functions[] = {
	"_start",
	"__libc_start_main",
	"__libc_start_main_impl",
	"__libc_start_call_main",
	"start_thread",
	"thread_start",
	"clone",
	"clone3",
	"__clone",
	"__clone3",
	"__clone_internal",
	"_dl_start_user",
	"runtime.goexit",
	"runtime.goexit.abi0",
	"runtime.rt0_go",
	"runtime.rt0_go.abi0",
	"runtime.mstart",
	"runtime.mstart.abi0",
};

struct window_builder {
	struct window_builder_opts opts;
};

/* A stack converted to location ids, cached per window: (image, stack id) -> locations. */
struct stack_conv {
	const void *image; /* NULL for kernel stacks */
	struct stack_id stack_id;
	uint32_t nr;
	uint32_t flags; /* CONV_* */
	uint64_t locs[];
};

enum {
	CONV_TRUNCATED = 1, /* ends in [truncated] */
};

struct build_ctx {
	struct window_builder *wb;
	struct profile *p;
	struct window_stats *stats;
	uint64_t seq;
	struct hashmap convs;	     /* struct stack_conv (by image, stack id) */
	struct hashmap processes;    /* tgid -> 1, for the count */
	struct hashmap mappings;     /* struct sym_object * -> mapping id */
	struct hashmap image_labels; /* struct proc_image * -> struct image_labels */
	int64_t kernel_mapping;	     /* mapping id, 0 until first needed */
	int64_t key_pid, key_tid, key_comm, key_thread_name, key_thread_state;
};

/* Where a process runs, as sample labels: computed once per image per window. */
#define MAX_IMAGE_LABELS (5 + KUBE_MAX_POD_LABELS)
struct image_labels {
	uint32_t nr;
	uint32_t target;	/* the sample group: a server's target, 0 without targets */
	uint32_t offcpu_target; /* the group of its off-CPU samples (the target's offcpu series) */
	struct profile_label l[MAX_IMAGE_LABELS];
};

static uint64_t hash_conv(const void *k)
{
	const struct stack_conv *c = k;

	return c->stack_id.lo ^ hash_u64((uintptr_t)c->image);
}

static bool equal_conv(const void *a, const void *b)
{
	const struct stack_conv *x = a, *y = b;

	return x->image == y->image && x->stack_id.lo == y->stack_id.lo &&
	       x->stack_id.hi == y->stack_id.hi;
}

static uint64_t hash_tgid(const void *k)
{
	return hash_u64((uintptr_t)k);
}

static bool equal_tgid(const void *a, const void *b)
{
	return a == b;
}

struct window_builder *window_builder__new(const struct window_builder_opts *opts)
{
	struct window_builder *wb = calloc(1, sizeof(*wb));

	if (!wb)
		return NULL;
	wb->opts = *opts;
	return wb;
}

void window_builder__free(struct window_builder *wb)
{
	free(wb);
}

static bool is_root_function(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(root_functions); i++)
		if (!strcmp(name, root_functions[i]))
			return true;
	return false;
}

static int64_t placeholder(struct build_ctx *c, enum location_tag tag, uint64_t address)
{
	return profile__placeholder(c->p, tag, address);
}

static int64_t kernel_mapping(struct build_ctx *c)
{
	struct profile_mapping m = { 0 };
	int64_t name, build_id = 0;

	if (c->kernel_mapping)
		return c->kernel_mapping;
	name = profile__string(c->p, KERNEL_MAPPING);
	if (name < 0)
		return name;
	if (c->wb->opts.kernel_build_id) {
		build_id = profile__string(c->p, c->wb->opts.kernel_build_id);
		if (build_id < 0)
			return build_id;
	}
	m.memory_limit = UINT64_MAX;
	m.filename = name;
	m.build_id = build_id;
	m.has_functions = c->wb->opts.kernel_symbols;
	c->kernel_mapping = profile__mapping(c->p, KERNEL_MAPPING, sizeof(KERNEL_MAPPING), &m);
	return c->kernel_mapping;
}

static int64_t kernel_location(struct build_ctx *c, uint64_t pc)
{
	struct window_builder *wb = c->wb;
	struct profile_line line = { 0 };
	struct sym_frame f;
	int64_t mapping, loc, fn;
	uint64_t found;

	mapping = kernel_mapping(c);
	if (mapping < 0)
		return mapping;
	found = profile__find_location(c->p, (uint64_t)mapping, pc, TAG_NONE);
	if (found)
		return (int64_t)found;
	if (wb->opts.kernel_symbols && symbolizer__symbolize_kernel(wb->opts.symbolizer, pc, &f)) {
		fn = profile__function(c->p, f.name, f.system_name, "", 0);
		if (fn < 0)
			return fn;
		line.function_id = (uint64_t)fn;
		loc = profile__add_location(c->p, (uint64_t)mapping, pc, TAG_NONE, &line, 1);
	} else {
		c->stats->kernel_unnamed++;
		loc = profile__add_location(c->p, (uint64_t)mapping, pc, TAG_NONE, NULL, 0);
	}
	return loc;
}

/* The Mapping of a process mapping: one per binary, keyed by build ID when it has one. */
static int64_t new_user_mapping(struct build_ctx *c, const struct proc_mapping *pm)
{
	struct profile_mapping m = { 0 };
	char build_id[2 * 64 + 1] = "";
	unsigned char key[1 + 256];
	size_t key_len;
	const uint8_t *id;
	size_t id_len = 0;
	int64_t name, bid = 0;

	if (pm->object)
		id_len = sym_object__build_id(pm->object, &id);
	if (id_len && id_len <= 64) {
		key[0] = 'b';
		memcpy(key + 1, id, id_len);
		key_len = 1 + id_len;
		sym_object__build_id_hex(pm->object, build_id, sizeof(build_id));
	} else if (pm->object) {
		key[0] = 'o';
		memcpy(key + 1, &pm->object, sizeof(pm->object));
		key_len = 1 + sizeof(pm->object);
	} else {
		/* No file to read: one mapping per name (an anonymous region, a JIT). */
		key[0] = 'n';
		key_len = strnlen(pm->name, sizeof(key) - 1);
		memcpy(key + 1, pm->name, key_len);
		key_len++;
	}
	name = profile__string(c->p, pm->name);
	if (name < 0)
		return name;
	if (build_id[0]) {
		bid = profile__string(c->p, build_id);
		if (bid < 0)
			return bid;
	}
	m.memory_limit = UINT64_MAX;
	m.filename = name;
	m.build_id = bid;
	/* JIT code is named from the runtime's perf map, when it writes one. */
	m.has_functions = pm->object != NULL || pm->kind == MAPPING_ANON;
	return profile__mapping(c->p, key, key_len, &m);
}

/* As new_user_mapping(), remembered per object for the window: objects are stable while
 * images hold them, unlike the proc_mapping structs a recapture may move. */
static int64_t user_mapping(struct build_ctx *c, const struct proc_mapping *pm)
{
	uintptr_t found;
	int64_t id;

	if (!pm->object)
		return new_user_mapping(c, pm);
	found = (uintptr_t)hashmap__find(&c->mappings, pm->object);
	if (found)
		return (int64_t)found;
	id = new_user_mapping(c, pm);
	if (id > 0 && hashmap__insert(&c->mappings, pm->object, (void *)(uintptr_t)id))
		return -ENOMEM;
	return id;
}

/* Name of the outermost (non-inlined) function of a location, NULL if it has no Line. */
static const char *location_function(const struct profile *p, uint64_t id)
{
	const struct profile_location *l = profile__location(p, id);
	const struct profile_function *f;

	if (!l || !l->nr_lines)
		return NULL;
	f = profile__function_by_id(p, p->lines[l->first_line + l->nr_lines - 1].function_id);
	return f ? profile__str(p, f->name) : NULL;
}

/* Lines for an address of an object; nr 0 when no symbol covers it. */
static int symbolize_lines(struct build_ctx *c, struct sym_object *obj, uint64_t vaddr,
			   struct profile_line *lines)
{
	struct sym_frame frames[MAX_INLINE_FRAMES];
	int n, i;
	int64_t fn;

	n = symbolizer__symbolize(c->wb->opts.symbolizer, obj, vaddr, frames, MAX_INLINE_FRAMES);
	if (n < 0) {
		c->stats->symbolize_errors++;
		return 0;
	}
	for (i = 0; i < n; i++) {
		fn = profile__function(c->p, frames[i].name, frames[i].system_name,
				       frames[i].file ? frames[i].file : "", 0);
		if (fn < 0)
			return (int)fn;
		lines[i].function_id = (uint64_t)fn;
		lines[i].line = frames[i].line;
	}
	return n;
}

/* A Line for JIT code at runtime address pc, from the process's perf map; 0 if unnamed. */
static int jit_lines(struct build_ctx *c, struct proc_image *img, uint64_t pc,
		     struct profile_line *lines)
{
	const char *name = proctab__jit_symbol(c->wb->opts.proctab, img, pc, c->seq);
	int64_t fn;

	if (!name)
		return 0;
	fn = profile__function(c->p, name, name, "", 0);
	if (fn < 0)
		return (int)fn;
	lines[0].function_id = (uint64_t)fn;
	lines[0].line = 0;
	return 1;
}

/*
 * The location of a user address. *named tells whether it has a function; *fn_name (may be
 * NULL) receives the outermost function name for the root check.
 */
static int64_t user_location(struct build_ctx *c, struct proc_image *img, uint64_t ip, bool adjust,
			     bool *named, const char **fn_name)
{
	struct profile_line lines[MAX_INLINE_FRAMES];
	const struct proc_mapping *pm;
	uint64_t pc = adjust ? ip - 1 : ip, addr;
	int64_t mapping, loc;
	uint64_t found;
	bool unopened;
	int n = 0;

	*named = false;
	*fn_name = NULL;
	/* Only an instruction pointer must be mapped: recapture for it, not for a return
	 * address, which may be garbage from a broken frame-pointer chain. */
	pm = img ? proctab__mapping(c->wb->opts.proctab, img, pc, c->seq, !adjust) : NULL;
	if (!pm) {
		c->stats->unknown_frames++;
		return placeholder(c, TAG_UNKNOWN, ip);
	}
	mapping = user_mapping(c, pm);
	if (mapping < 0)
		return mapping;
	unopened = !pm->object && pm->kind == MAPPING_FILE;
	if (pm->object) {
		if (sym_object__vaddr(pm->object, pc - pm->start + pm->offset, &addr)) {
			/* Inside the mapping but in no loadable segment: nothing to name. */
			addr = pc - pm->start + pm->offset;
			pm = NULL;
		}
	} else {
		addr = pc; /* no file: the runtime address is all there is */
	}
	found = profile__find_location(c->p, (uint64_t)mapping, addr, TAG_NONE);
	if (!found) {
		if (pm && pm->object)
			n = symbolize_lines(c, pm->object, addr, lines);
		else if (pm && pm->kind == MAPPING_ANON)
			n = jit_lines(c, img, pc, lines);
		if (n < 0)
			return n;
		if (!n)
			c->stats->unnamed_frames++;
		/* A file the agent could not open: the frame keeps address and mapping. */
		if (unopened && (pm->open_error == -EACCES || pm->open_error == -EPERM))
			c->stats->file_denied_frames++;
		else if (unopened)
			c->stats->file_error_frames++;
		loc = profile__add_location(c->p, (uint64_t)mapping, addr, TAG_NONE, lines,
					    (uint32_t)n);
		if (loc < 0)
			return loc;
		found = (uint64_t)loc;
	}
	*fn_name = location_function(c->p, found);
	*named = *fn_name != NULL;
	return (int64_t)found;
}

/*
 * The location of a Python frame (FRAME_PY): no mapping, no address; one Line of the code
 * object's function at the instruction's line (0 when unknown), so that one (function, line)
 * is one Location across the profile. *fn_name receives the function's name.
 */
static int64_t python_location(struct build_ctx *c, struct proc_image *img, uint64_t ip,
			       const char **fn_name)
{
	uint64_t serial = ip & FRAME_PY_SERIAL_MASK;
	uint32_t lasti = (uint32_t)((ip >> FRAME_PY_LASTI_SHIFT) & FRAME_PY_LASTI_MASK);
	struct profile_line line = { 0 };
	struct pycode_frame f;
	int64_t fn, loc;

	*fn_name = NULL;
	if (!img || !c->wb->opts.python_frame ||
	    !c->wb->opts.python_frame(c->wb->opts.python_ctx, img, serial, lasti, &f)) {
		c->stats->python_unnamed++;
		return placeholder(c, TAG_PYTHON_UNNAMED, 0);
	}
	/* No system_name: `go tool pprof` "demangles" a function whose system_name equals its
	 * name, and its C++ heuristic drops everything between < and > ("<module>" becomes "",
	 * "f.<locals>.g" "f..g"); a Python name is no mangled symbol anyway. */
	fn = profile__function(c->p, f.name, "", f.filename, f.firstlineno);
	if (fn < 0)
		return fn;
	line.function_id = (uint64_t)fn;
	line.line = f.line;
	loc = profile__add_location(c->p, 0, 0, TAG_NONE, &line, 1);
	if (loc < 0)
		return loc;
	c->stats->python_frames++;
	*fn_name = location_function(c->p, (uint64_t)loc);
	return loc;
}

static int remember(struct build_ctx *c, struct stack_conv *conv)
{
	int err = hashmap__insert(&c->convs, conv, conv);

	if (err)
		free(conv);
	return err;
}

/*
 * Whether a frame-pointer step found the real caller of the frame at pc: not where the
 * object's unwind table says the function keeps no frame pointer (opts.fp_step_ok).
 * Such steps are whole walks by bpf_get_stack (--unwind fp, a process without tables) and
 * the steps the table unwinder took by frame pointer (FRAME_BY_FP: e.g. out of a
 * library whose table was not published for the process yet).
 */
static bool fp_step_ok(struct build_ctx *c, struct proc_image *img, uint64_t pc)
{
	const struct proc_mapping *pm;
	uint64_t vaddr;

	if (!c->wb->opts.fp_step_ok || !img)
		return true;
	pm = proctab__mapping(c->wb->opts.proctab, img, pc, c->seq, false);
	if (!pm || !pm->object ||
	    sym_object__vaddr(pm->object, pc - pm->start + pm->offset, &vaddr))
		return true;
	return c->wb->opts.fp_step_ok(c->wb->opts.fp_step_ctx, pm->object, vaddr);
}

/* The object of the user frame at pc (NULL: none, or not opened). */
static struct sym_object *frame_object(struct build_ctx *c, struct proc_image *img, uint64_t pc)
{
	const struct proc_mapping *pm;

	if (!img)
		return NULL;
	pm = proctab__mapping(c->wb->opts.proctab, img, pc, c->seq, false);
	return pm ? pm->object : NULL;
}

/*
 * A stack -> locations, leaf first, once per window for each (image, stack): kernel stacks
 * with img NULL. Marks CONV_TRUNCATED when the walk hit the depth cap.
 *
 * User stacks get the outermost-frame check. A return address in no mapping of a captured
 * image cannot be real: the frame-pointer chain ran into data that is not a frame (code
 * built without frame pointers), so the stack is cut there and ends in [truncated] rather
 * than in made-up callers. A leaf in no mapping stays [unknown].
 *
 * Python frames (FRAME_PY, table-unwound stacks only) have no address: they are named
 * through opts.python_frame, never looked up in a mapping, never adjusted, and no
 * frame-pointer step is checked from one (its eval-loop pc is not in the stack). The native
 * frames around them keep their own rules: the one rootward of a Python frame is the eval
 * loop's caller, a return address like any other.
 */
static struct stack_conv *convert(struct build_ctx *c, struct proc_image *img,
				  const struct drained_stack *st, bool kernel, int *err)
{
	struct stack_conv probe = { .image = img, .stack_id = st->id }, *conv;
	struct sym_object *obj = NULL, *outer_obj = NULL;
	uint64_t outer_pc = 0;
	const char *outer_name = NULL;
	bool named = false;
	uint32_t i;
	int64_t loc;

	conv = hashmap__find(&c->convs, &probe);
	if (conv)
		return conv;
	conv = malloc(sizeof(*conv) + (st->len + 1) * sizeof(conv->locs[0]));
	if (!conv) {
		*err = -ENOMEM;
		return NULL;
	}
	*conv = probe;
	for (i = 0; i < st->len; i++) {
		uint64_t ip = st->ips[i], pc;
		bool exact = false, caller_by_fp = !(st->flags & STACK_TABLES);

		/* Every frame but the first is a return address (its call is at ip - 1), except
		 * the pc a signal interrupted, which the table unwinder marks, and the signal
		 * trampoline just before it. */
		bool python = false;

		if (!kernel && (st->flags & STACK_TABLES)) {
			exact = (ip & FRAME_EXACT) ||
				(i + 1 < st->len && (st->ips[i + 1] & FRAME_EXACT));
			caller_by_fp = i + 1 < st->len && (st->ips[i + 1] & FRAME_BY_FP);
			ip &= ~(FRAME_EXACT | FRAME_BY_FP);
			python = ip & FRAME_PY;
		}
		pc = i && !exact ? ip - 1 : ip;
		if (python) {
			loc = python_location(c, img, ip, &outer_name);
			named = outer_name != NULL;
			caller_by_fp = false;
		} else if (kernel) {
			loc = kernel_location(c, pc);
		} else if (i && img &&
			   !proctab__mapping(c->wb->opts.proctab, img, pc, c->seq, false)) {
			c->stats->broken_chains++;
			conv->flags |= CONV_TRUNCATED;
			break;
		} else {
			loc = user_location(c, img, ip, i > 0 && !exact, &named, &outer_name);
		}
		if (loc < 0) {
			free(conv);
			*err = (int)loc;
			return NULL;
		}
		conv->locs[conv->nr++] = (uint64_t)loc;
		/* Which objects the stacks go through: the unwinder keeps their tables. */
		if (!kernel && !python && (c->wb->opts.object_used || c->wb->opts.fp_end_ok)) {
			obj = frame_object(c, img, pc);
			if (obj && obj != outer_obj && c->wb->opts.object_used)
				c->wb->opts.object_used(c->wb->opts.fp_step_ctx, obj);
			outer_obj = obj;
			outer_pc = pc;
		} else {
			outer_obj = NULL;
		}
		if (!kernel && i + 1 < st->len && caller_by_fp && !fp_step_ok(c, img, pc)) {
			c->stats->fp_walks_cut++;
			conv->flags |= CONV_TRUNCATED;
			break;
		}
	}
	c->stats->frames += conv->nr;
	/* The table unwinder knows how its walk ended; a frame-pointer walk is judged by its
	 * outermost frame. */
	if (st->len >= STACK_MAX_DEPTH || (st->flags & STACK_TRUNCATED) ||
	    (!kernel && !(st->flags & STACK_COMPLETE) && named && outer_name &&
	     !is_root_function(outer_name)))
		conv->flags |= CONV_TRUNCATED;
	/* A walk that ended in code whose table is not loaded (too large for the map, or not
	 * built yet) lost its way there, named or not: never a bare frame as the stack's root. */
	else if (!kernel && !(st->flags & STACK_COMPLETE) && !(conv->flags & CONV_TRUNCATED) &&
		 outer_obj && c->wb->opts.fp_end_ok &&
		 !c->wb->opts.fp_end_ok(c->wb->opts.fp_step_ctx, outer_obj)) {
		c->stats->fp_walks_cut++;
		conv->flags |= CONV_TRUNCATED;
	}
	/* A walk that is not known complete ended by frame pointer (rbp or the return address
	 * 0: bpf_get_stack, and the table unwinder on its own): that last step is checked like
	 * any other, and where the table says the function keeps no frame pointer, the chain's
	 * end proves nothing (a frame is missing or more). A named root function stays the
	 * root. */
	else if (!kernel && !(st->flags & STACK_COMPLETE) && !(conv->flags & CONV_TRUNCATED) &&
		 outer_obj && !named && !fp_step_ok(c, img, outer_pc)) {
		c->stats->fp_walks_cut++;
		conv->flags |= CONV_TRUNCATED;
	}
	*err = remember(c, conv);
	return *err ? NULL : conv;
}

static int add_label(struct build_ctx *c, struct image_labels *il, const char *key,
		     const char *value)
{
	int64_t k, v;

	if (!value[0] || il->nr >= MAX_IMAGE_LABELS)
		return 0;
	k = profile__string(c->p, key);
	v = k < 0 ? k : profile__string(c->p, value);
	if (v < 0)
		return (int)v;
	il->l[il->nr++] = (struct profile_label){ .key = k, .str = v };
	return 0;
}

static struct image_labels *labels_of(struct build_ctx *c, const struct proc_image *img, int *err)
{
	struct image_labels *il = hashmap__find(&c->image_labels, img);
	const struct proc_meta *m = &img->meta;
	struct pod_meta pod;
	char short_id[13];
	bool known;
	size_t i;

	if (il)
		return il;
	il = calloc(1, sizeof(*il));
	if (!il) {
		*err = -ENOMEM;
		return NULL;
	}
	*err = 0;
	known = kube__lookup(c->wb->opts.kube, m->pod_uid, m->container_id, &pod);
	if (c->wb->opts.targets) {
		struct target_process tp = {
			.exe = img->exe,
			.comm = img->comm,
			.meta = m,
			.pod = known ? &pod : NULL,
		};
		int64_t id = targets__resolve(c->wb->opts.targets, c->seq, &tp);

		if (id >= 0 && c->wb->opts.offcpu) {
			il->target = (uint32_t)id;
			tp.offcpu = true;
			id = targets__resolve(c->wb->opts.targets, c->seq, &tp);
			il->offcpu_target = (uint32_t)id;
		} else {
			il->target = (uint32_t)id;
		}
		if (id < 0) {
			free(il);
			*err = (int)id;
			return NULL;
		}
	}
	if (known) {
		*err = add_label(c, il, "namespace", pod.namespace_);
		if (!*err)
			*err = add_label(c, il, "pod", pod.pod);
		if (!*err)
			*err = add_label(c, il, "container", pod.container);
		for (i = 0; !*err && i < pod.nr_labels; i++)
			*err = add_label(c, il, pod.labels[i].key, pod.labels[i].value);
	}
	snprintf(short_id, sizeof(short_id), "%.12s", m->container_id);
	if (!*err)
		*err = add_label(c, il, "container_id", short_id);
	if (!*err)
		*err = add_label(c, il, "unit", m->unit);
	if (!*err)
		*err = hashmap__insert(&c->image_labels, img, il);
	if (*err) {
		free(il);
		return NULL;
	}
	return il;
}

/* A [truncated] placeholder at locs[*n], unless the stack already ends in one. */
static int add_truncated(struct build_ctx *c, uint64_t *locs, uint32_t *n)
{
	int64_t t = placeholder(c, TAG_TRUNCATED, 0);

	if (t < 0)
		return (int)t;
	if (!*n || locs[*n - 1] != (uint64_t)t)
		locs[(*n)++] = (uint64_t)t;
	return 0;
}

/*
 * The sample's locations, leaf first: its kernel stack, then its user stack, with the
 * placeholders of DESIGN.md requirement 8. Sets *truncated when the stack ends in
 * [truncated]. Returns the number of locations or -errno.
 */
static int sample_frames(struct build_ctx *c, const struct drained_window *dw,
			 const struct drained_sample *k, struct proc_image *img, uint64_t *locs,
			 bool *truncated)
{
	const struct drained_stack *kst = drained_window__stack(dw, &k->kernel_stack);
	const struct drained_stack *ust = drained_window__stack(dw, &k->user_stack);
	struct stack_conv *uconv = NULL, *kconv;
	uint32_t n = 0;
	int err = 0;

	*truncated = false;
	if (kst) {
		kconv = convert(c, NULL, kst, true, &err);
		if (!kconv)
			return err;
		memcpy(locs, kconv->locs, kconv->nr * sizeof(locs[0]));
		n = kconv->nr;
		/* A kernel walk cut by the depth cap breaks the stack between kernel and user. */
		if (kconv->flags & CONV_TRUNCATED) {
			int64_t t = placeholder(c, TAG_TRUNCATED, 0);

			if (t < 0)
				return (int)t;
			locs[n++] = (uint64_t)t;
			*truncated = true;
		}
	}
	if (ust) {
		uconv = convert(c, img, ust, false, &err);
		if (!uconv)
			return err;
		memcpy(locs + n, uconv->locs, uconv->nr * sizeof(locs[0]));
		n += uconv->nr;
		if (uconv->flags & CONV_TRUNCATED) {
			*truncated = true;
		} else if (!*truncated && uconv->nr) {
			const struct profile_location *outer =
				profile__location(c->p, uconv->locs[uconv->nr - 1]);

			if (!outer || !outer->nr_lines || outer->tag)
				c->stats->root_unknown_stacks += k->count;
		}
	}
	/* A failed user walk, or a cut-off user stack: the root is missing. No frame at all
	 * (both walks empty): the CPU time stays, under [truncated]. */
	if ((k->flags & SAMPLE_USTACK_ERR) || (uconv && (uconv->flags & CONV_TRUNCATED)) || !n) {
		err = add_truncated(c, locs, &n);
		if (err)
			return err;
		*truncated = true;
	}
	return (int)n;
}

/* The sample's labels (pid, tid, comm, thread_name, then its image's) and its group (the
 * server's target). Returns the number of labels or -errno. */
static int sample_labels(struct build_ctx *c, const struct drained_sample *k,
			 struct proc_image *img, struct profile_label *labels, uint32_t *group)
{
	char thread_name[COMM_LEN + 1];
	const char *comm;
	struct image_labels *il;
	int64_t str;
	int err = 0;

	memcpy(thread_name, k->comm, COMM_LEN);
	thread_name[COMM_LEN] = '\0';
	comm = img && img->comm[0] ? img->comm : thread_name;
	labels[0] = (struct profile_label){ .key = c->key_pid, .num = k->tgid };
	labels[1] = (struct profile_label){ .key = c->key_tid, .num = k->pid };
	str = profile__string(c->p, comm);
	if (str < 0)
		return (int)str;
	labels[2] = (struct profile_label){ .key = c->key_comm, .str = str };
	str = profile__string(c->p, thread_name);
	if (str < 0)
		return (int)str;
	labels[3] = (struct profile_label){ .key = c->key_thread_name, .str = str };
	*group = 0;
	if (img) {
		il = labels_of(c, img, &err);
		if (!il)
			return err;
		memcpy(labels + 4, il->l, il->nr * sizeof(il->l[0]));
		/* il->offcpu_target is set only with opts.offcpu. */
		*group = k->offcpu_ns && c->wb->opts.offcpu ? il->offcpu_target : il->target;
		return 4 + (int)il->nr;
	}
	if (c->wb->opts.targets) {
		/* A kernel thread, or a process never captured: named by its comm. */
		struct target_process tp = {
			.comm = thread_name,
			.kthread = k->flags & SAMPLE_KTHREAD,
			.offcpu = k->offcpu_ns && c->wb->opts.offcpu,
		};
		int64_t target = targets__resolve(c->wb->opts.targets, c->seq, &tp);

		if (target < 0)
			return (int)target;
		*group = (uint32_t)target;
	}
	return 4;
}

static const char *const thread_state_names[] = {
	[THREAD_SLEEPING] = "sleeping",
	[THREAD_DISK] = "uninterruptible",
	[THREAD_RUNNABLE] = "runnable",
};

/* An off-CPU sample's stack, or for one that has none its placeholder. Returns the number
 * of locations or -errno. */
static int offcpu_frames(struct build_ctx *c, const struct drained_window *dw,
			 const struct drained_sample *k, struct proc_image *img, uint64_t *locs)
{
	enum location_tag tag = TAG_NONE;
	bool truncated;
	int64_t loc;
	int n;

	if (k->flags & SAMPLE_OFFCPU_CAPPED) {
		tag = TAG_OFFCPU_CAPPED;
		c->stats->offcpu_capped_ns += k->offcpu_ns;
	} else if (k->flags & SAMPLE_OFFCPU_EXITED) {
		tag = TAG_OFFCPU_EXITED;
	}
	if (tag == TAG_NONE) {
		n = sample_frames(c, dw, k, img, locs, &truncated);
		if (n >= 0 && truncated)
			c->stats->offcpu_truncated_ns += k->offcpu_ns;
		return n;
	}
	loc = placeholder(c, tag, 0);
	if (loc < 0)
		return (int)loc;
	locs[0] = (uint64_t)loc;
	return 1;
}

static int add_one(struct build_ctx *c, const struct drained_window *dw,
		   const struct drained_sample *k)
{
	struct proc_id id = { .tgid = k->tgid, .exec_id = k->exec_id, .start_time = k->start_time };
	struct profile_label labels[5 + MAX_IMAGE_LABELS];
	enum thread_state state = sample_thread_state(k->flags);
	uint64_t locs[MAX_FRAMES];
	struct proc_image *img = NULL, *frames_img;
	int n, nr_labels, err;
	uint32_t group = 0;
	bool truncated;

	if (!(k->flags & SAMPLE_KTHREAD)) {
		img = proctab__find(c->wb->opts.proctab, &id);
		if (!img && !state)
			c->stats->no_image_samples += k->count;
		else if (img && img->denied && !state)
			c->stats->denied_samples += k->count;
	} else if (!state) {
		c->stats->kthread_samples += k->count;
	}
	/* A process whose mappings may not be read: its labels, but frames as if it had no
	 * image ([unknown] with their addresses; no chain is judged against no mappings). */
	frames_img = img && img->denied ? NULL : img;
	if (state) {
		n = offcpu_frames(c, dw, k, frames_img, locs);
	} else {
		n = sample_frames(c, dw, k, frames_img, locs, &truncated);
		if (n >= 0 && truncated)
			c->stats->truncated_stacks += k->count;
	}
	if (n < 0)
		return n;
	nr_labels = sample_labels(c, k, img, labels, &group);
	if (nr_labels < 0)
		return nr_labels;
	if (state) {
		/* After the image's labels: labels[] has room for one more. */
		int64_t str = profile__string(c->p, thread_state_names[state]);

		if (str < 0)
			return (int)str;
		labels[nr_labels++] =
			(struct profile_label){ .key = c->key_thread_state, .str = str };
	}
	err = profile__add_group_values(c->p, group, locs, (uint32_t)n, labels, (uint32_t)nr_labels,
					k->count, k->offcpu_ns);
	if (err)
		return err;
	c->stats->samples += k->count;
	c->stats->offcpu_ns += k->offcpu_ns;
	/* Keys are tgid + 1: NULL marks an empty slot. Only a count, so ENOMEM is harmless. */
	err = hashmap__insert(&c->processes, (void *)(uintptr_t)(k->tgid + 1ULL), (void *)1);
	return 0;
}

/* An address of an object some user stack of the window goes through. */
struct ahead {
	struct sym_object *obj;
	uint64_t addr;
};

static int cmp_ahead(const void *a, const void *b)
{
	const struct ahead *x = a, *y = b;

	if (x->obj != y->obj)
		return (uintptr_t)x->obj < (uintptr_t)y->obj ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Addresses seen, direct-mapped: most repeats (the callers stacks share) are never appended
 * twice, so that the sort and the lookups ahead cost about the unique addresses. */
#define AHEAD_SEEN 4096

/* Append the object addresses of user stack st of img, as convert() will look them up
 * (return addresses adjusted, Python frames and unmapped return addresses skipped). */
static int collect_ahead(struct build_ctx *c, struct proc_image *img,
			 const struct drained_stack *st, struct ahead *seen, struct ahead **v,
			 size_t *nr, size_t *cap)
{
	const struct proc_mapping *pm;
	struct ahead *slot;
	uint32_t i;
	int err;

	for (i = 0; i < st->len; i++) {
		uint64_t ip = st->ips[i], pc, addr;
		bool exact = false;

		if (st->flags & STACK_TABLES) {
			exact = (ip & FRAME_EXACT) ||
				(i + 1 < st->len && (st->ips[i + 1] & FRAME_EXACT));
			if (ip & FRAME_PY)
				continue;
			ip &= ~(FRAME_EXACT | FRAME_BY_FP);
		}
		pc = i && !exact ? ip - 1 : ip;
		pm = proctab__mapping(c->wb->opts.proctab, img, pc, c->seq, false);
		if (!pm && i)
			break; /* convert() cuts the stack there */
		if (!pm || !pm->object ||
		    sym_object__vaddr(pm->object, pc - pm->start + pm->offset, &addr))
			continue;
		slot = &seen[hash_u64(addr ^ (uintptr_t)pm->object) % AHEAD_SEEN];
		if (slot->obj == pm->object && slot->addr == addr)
			continue;
		*slot = (struct ahead){ pm->object, addr };
		err = grow_array((void **)v, cap, *nr + 1, sizeof(**v));
		if (err)
			return err;
		(*v)[(*nr)++] = (struct ahead){ pm->object, addr };
	}
	return 0;
}

/*
 * Symbolize the window's user addresses object by object before its stacks are converted
 * (symbolizer__prefetch()): each library's DWARF is then opened once per window and closed
 * before the next one's, where converting stack by stack would interleave the libraries and,
 * past the symbol cache budget, reopen (decompress) their debug sections again and again. The
 * conversion that follows finds the names in the address caches. Best effort: whatever fails
 * here is looked up (and counted) again by the conversion.
 */
static void symbolize_ahead(struct build_ctx *c, const struct drained_window *dw)
{
	struct stack_conv *keys;
	struct ahead *v = NULL, *seen;
	size_t nr = 0, cap = 0, nr_keys = 0, i, j;
	uint64_t *addrs;

	keys = calloc(dw->nr_samples ? dw->nr_samples : 1, sizeof(*keys));
	seen = calloc(AHEAD_SEEN, sizeof(*seen));
	if (!keys || !seen) {
		free(keys);
		free(seen);
		return;
	}
	for (i = 0; i < dw->nr_samples; i++) {
		const struct drained_sample *k = &dw->samples[i];
		struct proc_id id = { .tgid = k->tgid,
				      .exec_id = k->exec_id,
				      .start_time = k->start_time };
		const struct drained_stack *st;
		struct proc_image *img;
		struct stack_conv *key = &keys[nr_keys];

		if (k->flags & SAMPLE_KTHREAD)
			continue;
		st = drained_window__stack(dw, &k->user_stack);
		if (!st)
			continue;
		img = proctab__find(c->wb->opts.proctab, &id);
		if (!img || img->denied)
			continue;
		key->image = img;
		key->stack_id = st->id;
		if (hashmap__find(&c->convs, key))
			continue; /* this image's stack is collected already */
		if (hashmap__insert(&c->convs, key, key) ||
		    collect_ahead(c, img, st, seen, &v, &nr, &cap))
			goto out;
		nr_keys++;
	}
	if (!nr)
		goto out;
	qsort(v, nr, sizeof(*v), cmp_ahead);
	/* The addresses in place of the pairs: a group's addresses are contiguous. */
	addrs = (uint64_t *)v;
	for (i = 0; i < nr; i = j) {
		struct sym_object *obj = v[i].obj;

		for (j = i; j < nr && v[j].obj == obj; j++)
			addrs[j] = v[j].addr;
		symbolizer__prefetch(c->wb->opts.symbolizer, obj, addrs + i, j - i);
	}
out:
	/* The keys only marked stacks seen: the conversion fills the map for real. */
	hashmap__fini(&c->convs);
	hashmap__init(&c->convs, hash_conv, equal_conv);
	free(keys);
	free(seen);
	free(v);
}

int window_builder__add(struct window_builder *wb, const struct drained_window *dw, uint64_t seq,
			struct profile *p, struct window_stats *stats)
{
	struct build_ctx c = { .wb = wb, .p = p, .stats = stats, .seq = seq };
	struct hashmap_entry *e;
	size_t i;
	int err = 0;

	hashmap__init(&c.convs, hash_conv, equal_conv);
	hashmap__init(&c.processes, hash_tgid, equal_tgid);
	hashmap__init(&c.mappings, hash_tgid, equal_tgid);
	hashmap__init(&c.image_labels, hash_tgid, equal_tgid);
	if ((c.key_pid = profile__string(p, "pid")) < 0 ||
	    (c.key_tid = profile__string(p, "tid")) < 0 ||
	    (c.key_comm = profile__string(p, "comm")) < 0 ||
	    (c.key_thread_name = profile__string(p, "thread_name")) < 0 ||
	    (c.key_thread_state = profile__string(p, "thread_state")) < 0) {
		err = -ENOMEM;
		goto cleanup;
	}
	symbolize_ahead(&c, dw);
	for (i = 0; i < dw->nr_samples; i++) {
		err = add_one(&c, dw, &dw->samples[i]);
		if (err == -E2BIG) {
			stats->dropped_profile_cap += dw->samples[i].count;
			stats->offcpu_dropped_ns += dw->samples[i].offcpu_ns;
			err = 0;
			continue;
		}
		if (err)
			goto cleanup;
	}
	if (stats->dropped_profile_cap)
		pr_warn("window %llu: %llu samples dropped at the profile's size caps",
			(unsigned long long)seq, (unsigned long long)stats->dropped_profile_cap);
	stats->processes = hashmap__size(&c.processes);
cleanup:
	hashmap__for_each(&c.convs, e)
		free(e->value);
	hashmap__fini(&c.convs);
	hashmap__fini(&c.processes);
	hashmap__fini(&c.mappings);
	hashmap__for_each(&c.image_labels, e)
		free(e->value);
	hashmap__fini(&c.image_labels);
	return err;
}
