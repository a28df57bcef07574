/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One window's samples as the agent holds them: plain data that the drain (drain.c) makes
 * from the BPF records of bpf/profiler.h, so that nothing after the drain depends on BPF
 * layouts. The flag and mark values equal BPF's (the drain checks it at compile time), so
 * the conversion copies.
 */
#ifndef IGNIS_SAMPLES_H
#define IGNIS_SAMPLES_H

#include <stdint.h>

#include "common/hashmap.h"
#include "common/ignis.h"
#include "operate/stats.h"

/* Frames per stack at most, as BPF walks them. */
#define STACK_MAX_DEPTH 256
/* Bytes of a thread or process name, with its NUL (the kernel's TASK_COMM_LEN). */
#define COMM_LEN 16

/* A stack's id: a 128-bit hash of its frames; all zero means "no stack". */
struct stack_id {
	uint64_t lo;
	uint64_t hi;
};

/* sample.flags */
#define SAMPLE_KTHREAD	  (1U << 0) /* a kernel thread: no user stack, no process image */
#define SAMPLE_USTACK_ERR (1U << 1) /* no user stack: its walk failed or it was not stored */
#define SAMPLE_KSTACK_ERR (1U << 2) /* no kernel stack: its walk failed or it was not stored */
/* An off-CPU sample: its thread state in SAMPLE_STATE_MASK (never 0), its time in offcpu_ns,
 * count 0. */
#define SAMPLE_OFFCPU_CAPPED (1U << 3) /* over the per-CPU rate cap: no stacks */
#define SAMPLE_OFFCPU_EXITED (1U << 4) /* short of a period at the thread's exit: none */
#define SAMPLE_STATE_SHIFT   8
#define SAMPLE_STATE_MASK    (3U << SAMPLE_STATE_SHIFT)

/* The thread state an off-CPU sample waited in (SAMPLE_STATE_MASK >> SAMPLE_STATE_SHIFT). */
enum thread_state {
	THREAD_SLEEPING = 1, /* interruptible sleep (S): timers, sockets, futexes, pipes */
	THREAD_DISK,	     /* uninterruptible (D): disk I/O, some kernel locks */
	THREAD_RUNNABLE,     /* preempted (R): runnable, waiting for a CPU */
};

static inline enum thread_state sample_thread_state(uint32_t flags)
{
	return (enum thread_state)((flags & SAMPLE_STATE_MASK) >> SAMPLE_STATE_SHIFT);
}

/* One distinct (thread, process image, stacks, thread name) of a window, and its count. */
struct drained_sample {
	uint32_t tgid;		      /* process id */
	uint32_t pid;		      /* thread id */
	uint64_t start_time;	      /* group leader's start time, ns since boot */
	uint32_t exec_id;	      /* group leader's exec count (low 32 bits) */
	uint32_t flags;		      /* SAMPLE_* */
	struct stack_id user_stack;   /* all zero if none */
	struct stack_id kernel_stack; /* all zero if none */
	char comm[COMM_LEN];	      /* the sampled thread's name */
	uint64_t count;		      /* CPU samples; 0 for an off-CPU sample */
	uint64_t offcpu_ns;	      /* an off-CPU sample's time, ns; 0 for a CPU sample */
};

/* stack.flags: what the unwinder knows about the end of a user stack (0 for kernel stacks
 * and frame-pointer walks, whose end the window builder judges by the outermost frame). */
#define STACK_COMPLETE	(1U << 0) /* ends at a frame whose CFI marks it outermost */
#define STACK_TRUNCATED (1U << 1) /* the unwinder stopped before the outermost frame */
#define STACK_TABLES	(1U << 2) /* unwound with the tables (not frame pointers) */

/* Marks in a user frame of a table-unwound stack (user addresses end below 2^47). */
#define FRAME_EXACT (1ULL << 63) /* an exact pc (a signal's), not a return address */
#define FRAME_BY_FP (1ULL << 62) /* reached through the frame pointer of the frame before */
/* A Python frame in the place of the eval-loop frame that ran it, no address:
 * FRAME_PY | lasti << FRAME_PY_LASTI_SHIFT | serial. serial names a code object the sampler
 * announced (agent/python/pycode.h), never 0; lasti is its instruction in 2-byte code units,
 * FRAME_PY_LASTI_NONE when unknown. Bits 62 and 63 keep their meaning on such a frame. */
#define FRAME_PY	     (1ULL << 61)
#define FRAME_PY_LASTI_SHIFT 37
#define FRAME_PY_LASTI_MASK  0xffffffULL
#define FRAME_PY_LASTI_NONE  FRAME_PY_LASTI_MASK
#define FRAME_PY_SERIAL_MASK ((1ULL << 37) - 1)

/* proc_event.type */
enum proc_event_type {
	PROC_EV_NEW = 1, /* first sample of a process image: capture its mappings */
	PROC_EV_MMAP,	 /* its executable mappings changed (dlopen): capture again */
	PROC_EV_EXEC,	 /* execve() replaced the image */
	PROC_EV_EXIT,	 /* the last thread exited */
	/* A file mapping the BPF unwinder met in an image not published yet: start, end and
	 * offset, the file in exe_dev and exe_inode (both 0: the vDSO). (6: 5 is BPF's Python
	 * code event.) */
	PROC_EV_MAPPING = 6,
};

/* A process event from the sampler's ring buffer (DESIGN.md requirement 4). */
struct proc_event {
	uint32_t type; /* enum proc_event_type */
	uint32_t tgid;
	uint64_t start_time; /* as drained_sample.start_time */
	uint32_t exec_id;    /* as drained_sample.exec_id (the new one for EXEC) */
	uint32_t exe_dev;    /* device of the executable (the kernel's: major << 20 | minor);
			      * PROC_EV_MAPPING: of the mapped file */
	uint64_t exe_inode;  /* inode of the executable, 0 if none; PROC_EV_MAPPING: of the
			      * mapped file */
	char comm[COMM_LEN]; /* the group leader's name ("" for PROC_EV_MAPPING) */
	uint64_t start;	     /* PROC_EV_MAPPING: runtime [start, end) at file offset offset */
	uint64_t end;
	uint64_t offset;
};

/* Bytes of the names a code event carries at most (IGNIS_PY_EVENT_NAME, _FILE). */
#define PY_EVENT_NAME 128
#define PY_EVENT_FILE 256

/* A Python code object the BPF walker met first (struct ignis_py_code_event). */
struct py_code_event {
	uint32_t tgid;
	uint32_t exec_id;
	uint64_t start_time;
	uint64_t serial; /* as the frames carry it */
	uint64_t code;	 /* address of the code object in the process */
	uint32_t identity;
	int32_t firstlineno;		  /* as the walker saw them */
	char name[PY_EVENT_NAME + 1];	  /* its qualified name, "" if not ASCII */
	char filename[PY_EVENT_FILE + 1]; /* its file name, "" if not ASCII */
};

/* A stack, trimmed to its frames, leaf first. */
struct drained_stack {
	struct stack_id id;
	uint32_t len;
	uint32_t flags; /* STACK_* */
	uint64_t ips[];
};

struct drained_window {
	struct drained_sample *samples;
	size_t nr_samples;
	size_t cap_samples;
	struct hashmap stacks;	  /* &id (struct stack_id) -> struct drained_stack */
	struct counters counters; /* the BPF rows: the generation's counters, summed over CPUs */
	uint64_t nr_stack_frames; /* frames held in stacks, for accounting */
	uint64_t nr_counted;	  /* the samples' counts, summed */
	uint64_t offcpu_ns;	  /* the off-CPU samples' time, summed */
};

void drained_window__init(struct drained_window *w);
/* Free every sample and stack, keeping nothing. */
void drained_window__fini(struct drained_window *w);
/* The stack with this id, or NULL (the all-zero id, or a stack that could not be stored). */
const struct drained_stack *drained_window__stack(const struct drained_window *w,
						  const struct stack_id *id);
/* Append a sample (copied). Returns 0 or -ENOMEM. */
int drained_window__add_sample(struct drained_window *w,
			       const struct drained_sample *s) __must_check;
/* Add a stack of len frames (copied; trimmed to STACK_MAX_DEPTH). A second stack with the
 * same id is ignored. Returns 0 or -ENOMEM. */
int drained_window__add_stack(struct drained_window *w, const struct stack_id *id, uint32_t flags,
			      const uint64_t *ips, uint32_t len) __must_check;

#endif /* IGNIS_SAMPLES_H */
