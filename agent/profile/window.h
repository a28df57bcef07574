/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One window's samples to one profile: every drained sample is turned into pprof locations
 * by way of the process table (which mapping, which file) and the symbolizer (which
 * function), following DESIGN.md requirements 7-9:
 *
 *  - user addresses become ELF virtual addresses, one Mapping per binary (keyed by build
 *    ID), memory_start 0, memory_limit all ones, file_offset 0;
 *  - return addresses (every frame but the first of each stack) are moved back one byte
 *    into the call instruction, so that the address names the caller's line;
 *  - kernel frames sit leafward of the user frames, in a [kernel.kallsyms] mapping;
 *  - a frame no symbol covers keeps its address and mapping and gets no Line;
 *  - placeholders: [truncated] at the root end when a walk stopped early, [unknown] for an
 *    address in no mapping; each counted;
 *  - a Python frame (FRAME_PY in a table-unwound stack) becomes a Location without mapping
 *    or address: one Line of a Function named by the code object's qualified name (no
 *    system_name), its file name and first line, at the line of the frame's instruction; one Location per
 *    (function, line) across the profile. One that cannot be named (opts.python_frame
 *    says no: an unknown serial, a stale or unreadable code object) is the placeholder
 *    [unnamed Python frame], counted; never another code object's name;
 *  - sample labels pid, tid, comm, thread_name, and where known namespace, pod, container and
 *    the chosen pod labels (Kubernetes), container_id (12 hex digits), unit (systemd);
 *  - an off-CPU sample (drained_sample.offcpu_ns) adds its nanoseconds as offcpu/nanoseconds,
 *    with the label thread_state (sleeping, uninterruptible, runnable); one without stacks
 *    has one placeholder frame, [off-CPU samples over the rate cap] or [short off-CPU
 *    waits before exit]; with targets it goes to its target's off-CPU series.
 */
#ifndef IGNIS_WINDOW_H
#define IGNIS_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "common/hashmap.h"
#include "common/ignis.h"

struct drained_window;
struct kube;
struct profile;
struct proctab;
struct symbolizer;
struct targets;

/* Per-window outcome of symbolization. */
struct window_stats {
	uint64_t samples;	      /* samples added to the profile */
	uint64_t kthread_samples;     /* ... of kernel threads */
	uint64_t no_image_samples;    /* ... of processes whose mappings were never captured */
	uint64_t denied_samples;      /* ... of processes whose mappings may not be read */
	uint64_t frames;	      /* frames resolved, per distinct stack */
	uint64_t unknown_frames;      /* addresses in no mapping ([unknown]) */
	uint64_t unnamed_frames;      /* addresses in a mapping that no symbol covers */
	uint64_t file_denied_frames;  /* ... in a file the agent may not open (permission) */
	uint64_t file_error_frames;   /* ... in a file it could not open for another reason */
	uint64_t symbolize_errors;    /* objects whose symbols could not be read */
	uint64_t truncated_stacks;    /* stacks ending in [truncated] */
	uint64_t broken_chains;	      /* distinct user stacks cut at a return address in no
					 * mapping (a broken frame-pointer chain) */
	uint64_t root_unknown_stacks; /* stacks whose outermost frame could not be checked */
	uint64_t fp_walks_cut;	      /* distinct frame-pointer walks cut where the unwind table
					 * shows the function keeps no frame pointer */
	uint64_t kernel_unnamed;      /* kernel addresses no kallsyms symbol covers */
	uint64_t python_frames;	      /* Python frames named, per distinct stack */
	uint64_t python_unnamed;      /* Python frames without a name ([unnamed Python frame]) */
	uint64_t processes;	      /* distinct processes in the window */
	uint64_t dropped_profile_cap; /* samples lost to a profile cap (counted, logged) */
	/* Off-CPU samples (their count is 0, their weight nanoseconds). */
	uint64_t offcpu_ns;	      /* off-CPU time added to the profile, ns */
	uint64_t offcpu_capped_ns;    /* ... of it in the rate cap's placeholder */
	uint64_t offcpu_truncated_ns; /* ... of it on stacks ending in [truncated] */
	uint64_t offcpu_dropped_ns;   /* off-CPU time lost to a profile cap */
};

struct proc_image;
struct pycode_frame;
struct sym_object;
struct window_builder;

/* The Python frame of serial at instruction lasti (code units, FRAME_PY_LASTI_NONE when
 * unknown) of process image img, into *out (strings borrowed until the builder returns):
 * e.g. pycode_cache__frame() under img's proc_id. False when it cannot be named. */
typedef bool (*window_python_frame_fn)(void *ctx, const struct proc_image *img, uint64_t serial,
				       uint32_t lasti, struct pycode_frame *out);

/* Could the caller of the frame at ELF address vaddr of obj be found through the frame
 * pointer? (unwinder__fp_step_ok(): false where the object's unwind table says the function
 * keeps none there.) */
typedef bool (*window_fp_step_fn)(void *ctx, const struct sym_object *obj, uint64_t vaddr);

/* A walk that did not reach the outermost frame ended in obj's code: could it have ended
 * there? (unwinder__fp_end_ok(): false where obj's table is not in the map, so a walk by
 * frame pointer lost its way in it.) */
typedef bool (*window_fp_end_fn)(void *ctx, const struct sym_object *obj);

/* obj has a frame in a stack of this window (unwinder__note_use(): eviction by use). */
typedef void (*window_object_used_fn)(void *ctx, struct sym_object *obj);

struct window_builder_opts {
	struct proctab *proctab;
	struct symbolizer *symbolizer;
	bool kernel_symbols;	      /* kallsyms was loaded and shows addresses */
	const char *kernel_build_id;  /* hex, or NULL */
	struct kube *kube;	      /* Kubernetes names, or NULL */
	struct targets *targets;      /* group samples by target (a server's series), or NULL */
	window_fp_step_fn fp_step_ok; /* checks frame-pointer walks, or NULL (no check) */
	window_fp_end_fn fp_end_ok;   /* checks where incomplete walks ended, or NULL */
	window_object_used_fn object_used; /* told of each object in a stack, or NULL */
	void *fp_step_ctx;		   /* of the three above */
	bool offcpu; /* off-CPU samples go to the targets' offcpu series (targets only) */
	window_python_frame_fn python_frame; /* names Python frames, or NULL (none named) */
	void *python_ctx;
};

struct window_builder *window_builder__new(const struct window_builder_opts *opts);
void window_builder__free(struct window_builder *wb);

/*
 * Add every sample of dw, recorded during window `seq`, to p, each in the group of its
 * target when the builder has targets (resolved under `seq`: targets.h). Errors that
 * touch one sample (a profile cap) are counted in stats and do not stop the window.
 * Returns 0 or -ENOMEM.
 */
int window_builder__add(struct window_builder *wb, const struct drained_window *dw, uint64_t seq,
			struct profile *p, struct window_stats *stats) __must_check;

#endif /* IGNIS_WINDOW_H */
