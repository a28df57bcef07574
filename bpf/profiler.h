/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The contract between the BPF programs and the agent. The programs are bpf/sampler.bpf.c
 * (ignis_sample, ignis_exec, ignis_exit), bpf/unwind.bpf.c (ignis_unwind and its off-CPU
 * copy ignis_offcpu_unwind) and bpf/offcpu.bpf.c (ignis_switch, ignis_offcpu), linked into
 * one
 * object with the maps, `cfg` and `gen` of bpf/maps.bpf.c (declared for the programs in
 * bpf/maps.bpf.h); the agent sees them through one skeleton, build/profiler.skel.h.
 *
 * This header includes nothing but bpf/stats.h (the counters' rows, macros only): the BPF side
 * includes vmlinux.h first, userspace <linux/types.h>. Every struct has fixed-width fields, explicit padding and a size check,
 * because hash-map keys are compared byte for byte and both sides must agree on the layout.
 *
 * Map layout (defined in bpf/maps.bpf.c, all sized by the agent before load; see
 * agent/collect/sampler.c):
 *
 *   stacks_gen[2]   ARRAY_OF_MAPS -> HASH  struct ignis_stack_id -> struct ignis_stack_part (#0)
 *   tails_gen[2]    ARRAY_OF_MAPS -> HASH  struct ignis_stack_part_key -> struct ignis_stack_part
 *   sample_log      ARRAY         [(gen * nr_cpus + cpu) * log_cap + i] -> struct ignis_sample_key
 *   cpu_windows     PERCPU_ARRAY  [gen] -> struct ignis_cpu_window
 *   counts_gen[2]   ARRAY_OF_MAPS -> HASH  struct ignis_sample_key -> __u64 sample count
 *   stats           PERCPU_ARRAY  [gen * STAT_NR + stat] -> __u64
 *   procs           LRU_HASH      tgid -> struct ignis_proc_state   (what BPF already announced)
 *   pid_filter      HASH          tgid -> __u8                (only with cfg.filter_pids)
 *   events          RINGBUF       struct ignis_proc_event
 *   unwind_*, progs   the table unwinder's maps, described at struct ignis_unwind_row
 *   py_*              the Python walker's, described at struct ignis_py_proc
 *   offcpu_*          off-CPU time's (offcpu_gen in generations too), described at
 *                     struct ignis_offcpu_task
 *
 * A CPU sample is a record appended to its CPU's run of the window's sample_log: a write to
 * memory only this CPU writes, with no hashing, where adding to a counts entry costs a hash
 * of the key, a bucket and an element. When the run is full (a window longer than the log is
 * sized for) the sample is added to its key's entry in counts_gen instead. The off-CPU
 * programs add to their keys' entries in offcpu_gen (their values are nanoseconds).
 *
 * Two generations of the stack and count maps let the agent drain one while the sampler
 * writes the other: the agent flips `gen` (a global in .bss), waits for an RCU grace period
 * (an update of the map-in-map `gen_sync`, which the kernel follows with synchronize_rcu()),
 * and only then reads and clears the idle generation. Every program run reads `gen` once.
 */
#ifndef IGNIS_BPF_PROFILER_H
#define IGNIS_BPF_PROFILER_H

#include "stats.h"

#ifndef IGNIS_MAX_STACK_DEPTH
/* Frames per stack, native and Python together. A frame-pointer walk (bpf_get_stack) stops
 * at the kernel's kernel.perf_event_max_stack, 127 by default. */
#define IGNIS_MAX_STACK_DEPTH 256
#endif

#ifndef IGNIS_COMM_LEN
#define IGNIS_COMM_LEN 16
#endif

#ifndef IGNIS_NR_GENS
#define IGNIS_NR_GENS 2
#endif

/*
 * The events ring buffer wakes the agent at most once per this many nanoseconds
 * (CLOCK_MONOTONIC): an event within this gap of the last one written with the default flags
 * (which wake the agent unless it has events unread) is written without a wakeup, and the
 * agent, after reading events, polls again this much later (sampler__poll()) to pick such
 * events up. A wakeup is an irq_work self-interrupt in the
 * sample's program: on a VM, an exit to the hypervisor that cost 7 us or more per announced
 * process (docs/performance.md, section 1). 10 ms, a sampling period at 100 Hz: what the
 * agent learns of a new process can come that much later.
 */
#define IGNIS_EVENTS_WAKEUP_GAP_NS 10000000ULL

/*
 * A stack's id: a 128-bit hash of its frames (stack_hash128() in bpf/stack.bpf.h). Two
 * different stacks get the same id with probability 2^-128 per pair (about 10^-29 for a
 * window of 100 000 stacks), so an id names one stack without comparing frames. All zero
 * means "no stack" (a kernel thread's user stack, a user-mode sample's kernel stack).
 */
struct ignis_stack_id {
	__u64 lo;
	__u64 hi;
};
_Static_assert(sizeof(struct ignis_stack_id) == 16, "ignis_stack_id size");

/*
 * A stack as walked by the kernel, leaf first: the walk's scratch, stored in the stacks maps
 * in parts (struct ignis_stack_part) under its ignis_stack_id. Entries are immutable once
 * inserted.
 */
struct ignis_stack {
	__u32 len;			  /* frames used in ips[] */
	__u32 flags;			  /* STACK_F_* */
	__u64 ips[IGNIS_MAX_STACK_DEPTH]; /* instruction pointers; ips[0] is the leaf */
};
_Static_assert(sizeof(struct ignis_stack) == 8 + 8 * IGNIS_MAX_STACK_DEPTH, "ignis_stack size");

/*
 * How a stack is kept: in parts of IGNIS_STACK_PART_FRAMES frames, so that the maps' memory
 * follows the frames stored, not the deepest stack possible. Part 0 carries the stack's len
 * and flags and its first frames, in the stacks map under the stack's id; part k (k >= 1)
 * frames [k * IGNIS_STACK_PART_FRAMES, (k + 1) * IGNIS_STACK_PART_FRAMES), in the tails map
 * under (id, k), after 8 bytes it does not use (they let BPF copy a part straight from struct
 * ignis_stack: the 8 bytes before ips[k * IGNIS_STACK_PART_FRAMES] are a frame of the part
 * before). The later parts are stored before part 0, so a part 0 in the map means all of its
 * stack's parts are there; when the tails map has no room for them, part 0 is stored alone,
 * cut to its frames and flagged STACK_F_TRUNCATED (counted: STAT_STACKS_CUT). Part 0 has a
 * map of its own, sized for every stack a window can bring, so deep stacks never take the
 * room of another stack's first part. Most stacks are one part: a 256-frame stack in one
 * entry would make every entry 2 KiB (bpf/maps.bpf.h store_stack(), agent/collect/drain.c,
 * sizing in agent/collect/sampler.c).
 */
#ifndef IGNIS_STACK_PART_FRAMES
#define IGNIS_STACK_PART_FRAMES 32
#define IGNIS_STACK_PARTS	(IGNIS_MAX_STACK_DEPTH / IGNIS_STACK_PART_FRAMES)
#endif

struct ignis_stack_part_key {
	struct ignis_stack_id id;
	__u32 part; /* 1 .. IGNIS_STACK_PARTS - 1 */
	__u32 pad;
};
_Static_assert(sizeof(struct ignis_stack_part_key) == 24, "ignis_stack_part_key size");

struct ignis_stack_part {
	__u32 len;   /* part 0: the stack's frames (ignis_stack.len); others: unused */
	__u32 flags; /* part 0: STACK_F_*; others: unused */
	__u64 ips[IGNIS_STACK_PART_FRAMES];
};
_Static_assert(sizeof(struct ignis_stack_part) == 8 + 8 * IGNIS_STACK_PART_FRAMES,
	       "ignis_stack_part size");
_Static_assert(IGNIS_MAX_STACK_DEPTH % IGNIS_STACK_PART_FRAMES == 0, "stack parts");

/* stack.flags: what the unwinder knows about the end of a user stack (0 for kernel stacks and
 * frame-pointer walks, whose end the agent judges by the outermost-frame rule). */
#ifndef STACK_F_COMPLETE
#define STACK_F_COMPLETE  (1U << 0) /* ends at a frame whose CFI marks it outermost */
#define STACK_F_TRUNCATED (1U << 1) /* the unwinder stopped before the outermost frame */
#define STACK_F_TABLES	  (1U << 2) /* unwound with the tables (not bpf_get_stack) */
#endif

/*
 * Set in a user frame of a table-unwound stack whose address is not a return address but an
 * exact instruction: the pc a signal interrupted. The frame before it is then the signal
 * trampoline the handler returns to, whose address is exact as well. The agent looks such
 * frames up as they are, not at address - 1. User addresses never have this bit (x86_64
 * user space ends below 2^47).
 */
#ifndef IGNIS_USER_IP_EXACT
#define IGNIS_USER_IP_EXACT (1ULL << 63)
#endif

/*
 * Set in a user frame of a table-unwound stack that the unwinder reached through the frame
 * pointer of the frame before it, whose pc was in no table it had (JIT code, or a library of
 * a process not published yet; not a table's gap without CFI, which the agent's tables cannot
 * judge either). The agent checks such a step against the table of the frame before, when it
 * has one, as it checks frame-pointer walks.
 */
#ifndef IGNIS_USER_IP_FP
#define IGNIS_USER_IP_FP (1ULL << 62)
#endif

/*
 * A Python frame in a table-unwound user stack, in the place of the native eval-loop frame
 * that ran it (bpf/python.bpf.h): IGNIS_USER_IP_PY | lasti << IGNIS_PY_LASTI_SHIFT | serial.
 * serial names the code object: the sampler announced (tgid, image, code object address,
 * identity) under it with a PROC_EVENT_PY_CODE (struct ignis_py_code_event) the first time it
 * met it; 0 when it could not (counted). Serials are made per CPU, without atomics (the
 * fetching ones need 5.12): the CPU's number in the high IGNIS_PY_SERIAL_CPU_BITS bits, a
 * count in the others. lasti is the instruction the frame runs, in 2-byte code units from the
 * start of its bytecode (f_lasti / 2 on 3.8-3.9, f_lasti on 3.10, (prev_instr or instr_ptr) -
 * co_code_adaptive on 3.11+), or IGNIS_PY_LASTI_NONE. Native addresses never have bit 61 set.
 */
#ifndef IGNIS_USER_IP_PY
#define IGNIS_USER_IP_PY	 (1ULL << 61)
#define IGNIS_PY_LASTI_SHIFT	 37
#define IGNIS_PY_LASTI_MASK	 0xffffffULL
#define IGNIS_PY_LASTI_NONE	 IGNIS_PY_LASTI_MASK
#define IGNIS_PY_SERIAL_MASK	 ((1ULL << 37) - 1)
#define IGNIS_PY_SERIAL_CPU_BITS 10 /* CPUs beyond 1024 share serials: the agent refuses */
#endif

/* sample_key.flags */
#ifndef SAMPLE_F_KTHREAD
#define SAMPLE_F_KTHREAD    (1U << 0) /* a kernel thread: no user stack, no process image */
#define SAMPLE_F_USTACK_ERR (1U << 1) /* no user stack: its walk failed or it was not stored */
#define SAMPLE_F_KSTACK_ERR (1U << 2) /* no kernel stack: its walk failed or it was not stored */
#endif

/*
 * An off-CPU sample (bpf/offcpu.bpf.c): its key is in the offcpu_gen maps, its value the
 * nanoseconds it carries, and its flags say the thread state it waited in. Two kinds of time
 * are recorded without stacks: over the rate cap, and a thread's waits still short of a
 * period when it exits.
 */
#ifndef SAMPLE_F_OFFCPU_CAPPED
#define SAMPLE_F_OFFCPU_CAPPED (1U << 3) /* over the per-CPU rate cap: no stacks */
#define SAMPLE_F_OFFCPU_EXITED (1U << 4) /* short of a period at the thread's exit */
#define SAMPLE_F_STATE_SHIFT   8
#define SAMPLE_F_STATE_MASK    (3U << SAMPLE_F_STATE_SHIFT)
#define IGNIS_STATE_SLEEPING   1 /* interruptible sleep (S): timers, sockets, futexes */
#define IGNIS_STATE_DISK       2 /* uninterruptible (D): disk I/O, some kernel locks */
#define IGNIS_STATE_RUNNABLE   3 /* preempted (R): waiting for a CPU */
#endif

/*
 * What one CPU did in one generation's window (cpu_windows, a per-CPU array indexed by
 * generation), cleared by the agent when it drains the generation. Written only by the CPU
 * sampler and its unwinder, which do not run twice at once on a CPU.
 */
struct ignis_cpu_window {
	__u64 samples; /* samples taken: STAT_SAMPLES (the agent adds them to that counter) */
	__u64 logged;  /* records this CPU appended to its run of sample_log */
};
_Static_assert(sizeof(struct ignis_cpu_window) == 16, "ignis_cpu_window size");

/*
 * A record of sample_log: one CPU sample. Key of the counts maps: one entry per distinct (thread, process image, stacks, thread name)
 * in a window. A process image is identified by (tgid, start_time, exec_id): tgids are
 * reused, and execve() keeps the tgid and start time but replaces every mapping.
 */
struct ignis_sample_key {
	__u32 tgid;			    /* process id (kernel tgid) */
	__u32 pid;			    /* thread id (kernel pid) */
	__u64 start_time;		    /* group leader's start_boottime, ns since boot */
	__u32 exec_id;			    /* group leader's self_exec_id (low 32 bits) */
	__u32 flags;			    /* SAMPLE_F_* */
	struct ignis_stack_id user_stack;   /* id in the stacks map, all zero if none */
	struct ignis_stack_id kernel_stack; /* id in the stacks map, all zero if none */
	char comm[IGNIS_COMM_LEN];	    /* the sampled thread's comm */
};
_Static_assert(sizeof(struct ignis_sample_key) == 72, "ignis_sample_key size");

/*
 * Per-CPU counters, one set per generation so that each window's figures are exact: the rows
 * of IGNIS_BPF_STATS (bpf/stats.h), in that order.
 */
#define IGNIS_BPF_STAT_ENUM(id, ...) STAT_##id,
enum ignis_stat {
	IGNIS_BPF_STATS(IGNIS_BPF_STAT_ENUM) STAT_NR,
};
#undef IGNIS_BPF_STAT_ENUM

/* What the sampler has announced for a tgid, so each process image is announced once. */
struct ignis_proc_state {
	__u64 start_time;    /* as sample_key.start_time */
	__u64 exec_vm;	     /* mm->exec_vm (pages) at the last announcement */
	__u64 last_event_ns; /* bpf_ktime_get_ns() of the last announcement */
	__u32 exec_id;	     /* as sample_key.exec_id */
	__u32 pad;
};
_Static_assert(sizeof(struct ignis_proc_state) == 32, "ignis_proc_state size");

/* proc_event.type */
#ifndef PROC_EVENT_NEW
#define PROC_EVENT_NEW	1 /* first sample of a process image: capture its mappings */
#define PROC_EVENT_MMAP 2 /* its executable mappings changed (dlopen): capture again */
#define PROC_EVENT_EXEC 3 /* execve() replaced the image */
#define PROC_EVENT_EXIT 4 /* the last thread exited */
#define PROC_EVENT_PY_CODE \
	5		     /* a Python code object met for the first time: struct
			     * ignis_py_code_event, not ignis_proc_event */
#define PROC_EVENT_MAPPING 6 /* a file mapping the unwinder found: struct ignis_mapping_event */
#endif

/* Ring-buffer record for process tracking (DESIGN.md requirement 4). */
struct ignis_proc_event {
	__u32 type; /* PROC_EVENT_* */
	__u32 tgid;
	__u64 start_time;	   /* as sample_key.start_time */
	__u32 exec_id;		   /* as sample_key.exec_id (the new one for EXEC) */
	__u32 exe_dev;		   /* device of mm->exe_file (the kernel's: major << 20 | minor) */
	__u64 exe_inode;	   /* inode of mm->exe_file, 0 if none: lets the agent see
					 * that /proc/PID shows a later execve() than this event */
	char comm[IGNIS_COMM_LEN]; /* the group leader's comm */
};
_Static_assert(sizeof(struct ignis_proc_event) == 48, "ignis_proc_event size");

/*
 * A file-backed executable mapping of a process image that the unwinder met before the
 * process was published (its executable's text from mm->start_code, a library's VMA from
 * bpf_find_vma()), sent once per CPU and mapping: what the agent needs to name its frames
 * when the process is gone before /proc/PID/maps could be read. Runtime address a in
 * [start, end) is at file offset a - start + offset of the file (dev, ino); dev and ino 0:
 * the vDSO's code (no file; the agent has the kernel's image of it).
 */
struct ignis_mapping_event {
	__u32 type; /* PROC_EVENT_MAPPING */
	__u32 tgid;
	__u64 start_time; /* as sample_key.start_time */
	__u32 exec_id;	  /* as sample_key.exec_id */
	__u32 dev;	  /* the file's device (the kernel's encoding: major << 20 | minor) */
	__u64 ino;	  /* the file's inode */
	__u64 start;	  /* first runtime address */
	__u64 end;	  /* one past the last */
	__u64 offset;	  /* file offset of start */
};
_Static_assert(sizeof(struct ignis_mapping_event) == 56, "ignis_mapping_event size");

/*
 * A code object the Python walker met for the first time (in this process image, at this
 * address, with this identity): the agent reads its names and line table from the process's
 * memory at once, while the process lives, and keeps them under the serial the stack frames
 * carry. identity is ignis_py_identity() (bpf/pyident.bpf.h) of the code object's name and
 * first line, as the walker read them: the agent checks it when it reads the code object, so
 * a code object freed and its address reused is never named after the new one. The walker
 * also copies the name and file name (compact ASCII strings only, else name_len and file_len
 * are 0; cut at the arrays' size) and the first line as it saw them: when the agent comes too
 * late (the function ran for a millisecond and its code object is gone), those name it.
 */
#ifndef IGNIS_PY_EVENT_NAME
#define IGNIS_PY_EVENT_NAME 128 /* bytes of the qualified name an event carries at most */
#define IGNIS_PY_EVENT_FILE 256 /* bytes of the file name */
#endif

struct ignis_py_code_event {
	__u32 type; /* PROC_EVENT_PY_CODE */
	__u32 tgid;
	__u64 start_time; /* as sample_key.start_time */
	__u32 exec_id;	  /* as sample_key.exec_id */
	__u32 identity;
	__u64 serial; /* as in the frames: never 0 */
	__u64 code;   /* address of the PyCodeObject in the process */
	__s32 firstlineno;
	__u16 name_len; /* bytes in name[] */
	__u16 file_len; /* bytes in file[] */
	char name[IGNIS_PY_EVENT_NAME];
	char file[IGNIS_PY_EVENT_FILE];
};
_Static_assert(sizeof(struct ignis_py_code_event) == 48 + IGNIS_PY_EVENT_NAME + IGNIS_PY_EVENT_FILE,
	       "ignis_py_code_event size");

/*
 * The Python walker (CPython 3.8-3.13, bpf/python.bpf.h), entered from the table unwinder
 * when a native frame's pc lies in the eval loop of a process the agent attached:
 *
 *   py_procs   HASH      tgid -> struct ignis_py_proc   the process's interpreter: where
 *                        the eval loop is, how to find a thread's state, the struct layout
 *   py_codes   LRU_HASH  struct ignis_py_code_key -> __u32 serial   code objects announced
 *
 * A thread's own PyThreadState is its value of the interpreter's gilstate TSS key, read as
 * glibc's pthread_getspecific() does: for key < 32, the data of specific_1stblock[key] in the
 * thread's struct pthread, which starts at the thread's fs base. tss_data_off is where the
 * data of key 0 is from the fs base (key k's is 16 k bytes further), found by the agent in
 * the process's own memory at attach (agent/python/).
 */
#ifndef IGNIS_PY_NONE
#define IGNIS_PY_NONE 0xffff /* a layout field the version does not have */

/* layout.lasti_kind: what frame_lasti holds */
#define PY_LASTI_INT_BYTES 0 /* an int, in bytes (f_lasti, 3.8-3.9; -1 before the first) */
#define PY_LASTI_INT_UNITS 1 /* an int, in code units (f_lasti, 3.10) */
#define PY_LASTI_PTR	   2 /* a pointer into the code object's bytecode (3.11+) */

/* layout.entry_kind: which Python frames one native eval-loop frame runs */
#define PY_ENTRY_EVAL 0 /* one (3.8-3.10: every Python call is a C call of the eval loop) */
#define PY_ENTRY_FLAG \
	1 /* up to and including the frame whose byte at frame_entry is
			  * nonzero (3.11: is_entry) */
#define PY_ENTRY_OWNER \
	2		       /* up to a frame whose byte at frame_entry is owner_cstack, which is
			  * no Python frame but the eval call's own marker (3.12+:
			  * FRAME_OWNED_BY_CSTACK) */
#define IGNIS_PY_EVAL_RANGES 2 /* the eval loop and its .cold part */
#define IGNIS_PY_FRAME_READ  128 /* bytes of a frame the walker reads: every field below it */
#define IGNIS_PY_CODE_READ   256 /* bytes of a code object the walker reads */
#define IGNIS_PY_NAME_BYTES  32	 /* bytes of a name the identity covers at most */
#endif

/* Byte offsets into CPython's structs, per version (agent/python/pylayout.c; 3.13's read
 * from the process's _Py_DebugOffsets). Frame fields are below IGNIS_PY_FRAME_READ - 8, code
 * object fields below IGNIS_PY_CODE_READ - 8; the agent refuses a layout that is not. */
struct ignis_py_layout {
	__u16 tstate_frame;   /* PyThreadState: frame (3.8-3.10), cframe (3.11-3.12),
			       * current_frame (3.13) */
	__u16 cframe_frame;   /* _PyCFrame: current_frame (3.11-3.12); IGNIS_PY_NONE when
			       * tstate_frame is the frame itself */
	__u16 frame_previous; /* PyFrameObject.f_back (3.8-3.10), _PyInterpreterFrame.previous */
	__u16 frame_code;     /* f_code; f_executable (3.13) */
	__u16 frame_lasti;    /* f_lasti; prev_instr (3.11-3.12); instr_ptr (3.13) */
	__u16 frame_entry;    /* is_entry (3.11), owner (3.12+): a byte; IGNIS_PY_NONE */
	__u16 code_name;      /* PyCodeObject: co_qualname (3.11+), co_name before */
	__u16 code_firstlineno;
	__u16 code_code;      /* co_code_adaptive (3.11+): the bytecode; IGNIS_PY_NONE before */
	__u16 unicode_length; /* PyASCIIObject.length */
	__u16 unicode_data;   /* sizeof(PyASCIIObject): a compact ASCII string's bytes */
	__u16 unicode_state;  /* PyASCIIObject.state: bit 5 compact, bit 6 ascii */
	__u16 code_filename;  /* co_filename */
	__u8 lasti_kind;      /* PY_LASTI_* */
	__u8 entry_kind;      /* PY_ENTRY_* */
	__u8 owner_cstack;    /* PY_ENTRY_OWNER's marker value */
	__u8 pad[3];
	__u64 code_type; /* runtime address of PyCode_Type: every frame's code's ob_type */
};
_Static_assert(sizeof(struct ignis_py_layout) == 40, "ignis_py_layout size");

/* A process image the agent attached as CPython. */
struct ignis_py_proc {
	__u64 start_time;			/* as sample_key.start_time */
	__u32 exec_id;				/* as sample_key.exec_id */
	__u32 tgid;				/* its own key: a reused element is noticed */
	__u64 eval_start[IGNIS_PY_EVAL_RANGES]; /* runtime [start, end) of the eval loop's */
	__u64 eval_end[IGNIS_PY_EVAL_RANGES];	/* parts; an unused range is 0, 0 */
	__s32 tss_data_off; /* fs base + tss_data_off + 16 * tss_key: the thread's state */
	__u32 tss_key;	    /* < 32 */
	__u32 version;	    /* PY_VERSION_HEX of the interpreter, e.g. 0x030b07f0 */
	__u32 pad;
	struct ignis_py_layout layout;
};
_Static_assert(sizeof(struct ignis_py_proc) == 104, "ignis_py_proc size");

struct ignis_py_code_key {
	__u32 tgid;
	__u32 exec_id;
	__u64 start_time;
	__u64 code;
	__u32 identity;
	__u32 pad;
};
_Static_assert(sizeof(struct ignis_py_code_key) == 32, "ignis_py_code_key size");

/*
 * The table unwinder (x86_64): user stacks of code without frame pointers, unwound from
 * tables the agent derives from each object's .eh_frame (symbolizer/unwind.c).
 *
 *   unwind_rows   ARRAY  index -> struct ignis_unwind_row      every table, one extent each
 *   unwind_maps   ARRAY  index -> struct ignis_unwind_mapping  every process's executable
 *                        mappings, one extent per process, sorted by start, not overlapping
 *   unwind_procs  HASH   tgid -> struct ignis_unwind_proc      where a process's extent is
 *   unwind_exes   HASH   struct ignis_unwind_exe_key -> struct ignis_unwind_exe
 *                        files with a table (executables, libraries): for a process not
 *                        published yet
 *   progs         PROG_ARRAY [IGNIS_PROG_UNWIND] the unwinder, which tail-calls itself:
 *                        ignis_unwind_files where the kernel has bpf_find_vma() (5.17),
 *                        ignis_unwind before (offcpu_progs: ignis_offcpu_unwind_files or
 *                        ignis_offcpu_unwind)
 *
 * For a pc of process tgid: unwind_procs gives the extent of its mappings; a binary search
 * finds the mapping whose [start, end) holds pc; rel = pc - mapping.base is the offset in
 * the table (the table's pcs are relative to its first row's ELF address); a binary search
 * of the table's extent finds the last row with row.pc <= rel.
 *
 * Updates never expose a half-written table: the agent writes rows and mappings into
 * extents no published entry points to, then publishes the process's unwind_procs entry;
 * an extent an entry stops pointing to is reused only after the next generation flip's RCU
 * grace period (sampler__flip), when no program can still be reading it. Every mapping
 * carries its process's tgid and version, which the unwinder checks against the entry it
 * read and its image's exec id, which it checks against the sample's, so that a hash element
 * the kernel reused under it (a torn read) is detected (STAT_UNWIND_STALE).
 */
#ifndef IGNIS_PROG_UNWIND
#define IGNIS_PROG_UNWIND 0
#endif

/* row.cfa_type: how to compute the Canonical Frame Address; the return address is at
 * CFA - 8 for every type that continues the walk. Values match enum sym_cfa_rule. */
#ifndef UNWIND_CFA_NONE
#define UNWIND_CFA_NONE	       0 /* no CFI here: walk this frame with the frame pointer */
#define UNWIND_CFA_RSP	       1 /* CFA = rsp + cfa_off */
#define UNWIND_CFA_RBP	       2 /* CFA = rbp + cfa_off */
#define UNWIND_CFA_PLT	       3 /* CFA = rsp + cfa_off + ((pc & 15) >= rbp_off ? 8 : 0) */
#define UNWIND_CFA_OUTERMOST   4 /* the outermost frame: the stack is complete */
#define UNWIND_CFA_UNSUPPORTED 5 /* a rule the unwinder does not follow: stop, truncated */
#define UNWIND_CFA_SIGNAL      6 /* signal trampoline: rip, rsp, rbp at rsp + 168, 160, 120 */
#endif

/* row.rbp_type: where the caller's rbp is. Values match enum sym_rbp_rule. */
#ifndef UNWIND_RBP_SAME
#define UNWIND_RBP_SAME	     0 /* unchanged */
#define UNWIND_RBP_AT_CFA    1 /* saved at CFA + rbp_off */
#define UNWIND_RBP_UNDEFINED 2 /* unknown from here on */
#endif

/*
 * One row of an unwind table: valid from pc up to the next row's pc. 8 bytes, which is also
 * what an array element costs the kernel (values are rounded up to 8). Offsets are in units
 * of 8 bytes, the size of a stack slot: CFA offsets up to 256 KiB, rbp within 1 KiB of the
 * CFA; a rule outside that (or not a multiple of 8) is stored as unsupported.
 */
struct ignis_unwind_row {
	__u32 pc;      /* offset from the table's base */
	__s16 cfa_off; /* in 8-byte units */
	__s8 rbp_off;  /* in 8-byte units (UNWIND_RBP_AT_CFA); the threshold of UNWIND_CFA_PLT */
	__u8 type;     /* UNWIND_CFA_* | UNWIND_RBP_* << 4 */
};
_Static_assert(sizeof(struct ignis_unwind_row) == 8, "ignis_unwind_row size");

/* An executable mapping of a process. */
struct ignis_unwind_mapping {
	__u64 start;	 /* first runtime address */
	__u64 end;	 /* one past the last */
	__u64 base;	 /* runtime address of the table's pc 0 */
	__u32 row_start; /* first row in unwind_rows */
	__u32 nr_rows;	 /* 0: no table (no CFI, not ELF, JIT): frame pointers */
	__u32 tgid;	 /* the owner, as in its unwind_procs entry */
	__u32 version;	 /* the owner's version when written */
	__u32 exec_id;	 /* the owner's image (sample_key.exec_id) */
	__u32 pad;
};
_Static_assert(sizeof(struct ignis_unwind_mapping) == 48, "ignis_unwind_mapping size");

/* A process image's mappings: used only for samples of that image (a tgid is reused, and
 * execve() keeps it), so a late removal never applies one image's tables to another. */
struct ignis_unwind_proc {
	__u32 tgid;
	__u32 version;	  /* changes with every update of the process's mappings */
	__u32 map_start;  /* first mapping in unwind_maps */
	__u32 nr_maps;	  /* at most IGNIS_MAX_UNWIND_MAPS */
	__u64 start_time; /* as sample_key.start_time */
	__u32 exec_id;	  /* as sample_key.exec_id */
	__u32 exec_vm;	  /* mm->exec_vm (pages, low 32 bits) of the capture the mappings come
			   * from: another value means code mapped or unmapped since (dlopen()), and
			   * a pc in no mapping is looked up by its file, as before publication */
};
_Static_assert(sizeof(struct ignis_unwind_proc) == 32, "ignis_unwind_proc size");

/*
 * A file whose table is in unwind_rows (unwind_exes: every file with a table that a process
 * ran or mapped, executables and libraries, and the vDSO under inode and device 0), found by
 * its inode and device. A process's
 * first samples come before its entry in unwind_procs (the first one is what announces it):
 * the unwinder then finds the executable's table by the file mm->exe_file refers to (load
 * bias mm->start_code - text_vaddr) and, where the kernel has bpf_find_vma() (5.17), a
 * library's by the file of the VMA that holds the pc (the executable segment's runtime
 * start is vm_start - vm_pgoff * 4096 + text_offset); the rest is walked with frame
 * pointers. A table applies only if the build ID in the process's memory at its place (load
 * bias + build_id_vaddr) is the table's, so a reused inode or a file rewritten in place
 * never gets another file's table; or, when that page is not present yet (a sample in the
 * dynamic loader's start-up), if the inode's size and modification time are the file's the
 * agent holds open (so its inode number cannot have been reused). The agent deletes an entry before its rows are freed;
 * the unwinder copies an entry and checks the copy's key, since a deleted element of a hash
 * map may be reused at once for another key.
 */
struct ignis_unwind_exe_key {
	__u64 ino;
	__u32 dev; /* the kernel's encoding: major << 20 | minor */
	__u32 pad;
};
_Static_assert(sizeof(struct ignis_unwind_exe_key) == 16, "ignis_unwind_exe_key size");

struct ignis_unwind_exe {
	struct ignis_unwind_exe_key key; /* its own key: a reused element is noticed */
	__u64 text_vaddr;		 /* lowest ELF address of its executable segments */
	__u64 text_offset;		 /* file offset of that segment */
	__u64 text_size;		 /* its bytes in the file: a library's pc is looked up */
					 /* only there */
	__u64 base;			 /* ELF address of the table's pc 0 */
	__u64 build_id_vaddr;		 /* ELF address of its build ID bytes */
	__u32 row_start;
	__u32 nr_rows;
	__u8 build_id[20]; /* the first build_id_len bytes are compared */
	__u32 build_id_len;
	/* The file as the agent found it (fstat of the file it holds open, which pins the
	 * inode): its size and modification time. Where the build ID's page is not in the
	 * process's memory yet (the dynamic loader runs before it touches it), these must be
	 * the inode's for the table to apply: a file rewritten in place changed them. */
	__u64 size;
	__s64 mtime_sec;
	__u32 mtime_nsec;
	__u32 pad;
};
_Static_assert(sizeof(struct ignis_unwind_exe) == 112, "ignis_unwind_exe size");

#ifndef IGNIS_MAX_UNWIND_MAPS
#define IGNIS_MAX_UNWIND_MAPS 1024 /* mappings per process the unwinder searches (2^10) */
#define IGNIS_UNWIND_MAPS_LOG 10
#define IGNIS_MAX_UNWIND_ROWS (1U << 24) /* rows per table (2^24) */
#define IGNIS_UNWIND_ROWS_LOG 24
#endif

/*
 * Off-CPU time (bpf/offcpu.bpf.c): sampled by time, not by event. At every switch a thread's
 * time off CPU is added to its accumulator for the state it waited in; when an accumulator
 * reaches cfg.offcpu_period_ns, the thread owes a sample of that weight. Its kernel stack is
 * taken as it comes back on CPU; its user stack, which only the thread itself can walk, at
 * the end of the system call it waited in, where its user registers are still the ones it
 * blocked with. Totals are exact: every nanosecond lands in a sample or a counter.
 *
 *   offcpu_gen[2]  ARRAY_OF_MAPS -> HASH  struct ignis_sample_key -> __u64 nanoseconds
 *   offcpu_tasks   TASK_STORAGE  struct ignis_offcpu_task   per thread, freed with it
 *   offcpu_cpus    PERCPU_ARRAY  struct ignis_offcpu_cpu    the rate cap's credit
 *   offcpu_progs   PROG_ARRAY    [IGNIS_PROG_UNWIND] the table unwinder's off-CPU copy
 */
struct ignis_offcpu_task {
	__u64 off_ns;	 /* bpf_ktime_get_ns() when it went off CPU; 0: on CPU or untracked */
	__u64 acc_ns[4]; /* time off CPU not in a sample yet, per IGNIS_STATE_* (0 unused) */
	__u64 owed_ns;	 /* a sample's weight, not recorded yet; 0: none */
	__u64 owed_ip;	 /* the user registers it blocked with: the walk at the end of the */
	__u64 owed_sp;	 /* system call happens only if they are still the same */
	struct ignis_stack_id owed_kstack; /* its kernel stack as it came back on CPU */
	__u32 owed_kstack_lost; /* 1: that stack could not be walked or stored (counted then) */
	__u32 owed_exec_id;	/* its image's: a user pc means nothing after execve() */
	__u32 state;		/* IGNIS_STATE_* of the wait that began at off_ns */
	__u32 owed_state;	/* IGNIS_STATE_* of owed_ns */
};
_Static_assert(sizeof(struct ignis_offcpu_task) == 96, "ignis_offcpu_task size");

struct ignis_offcpu_cpu {
	__u64 credit_ns; /* the rate cap's credit: one sample costs cfg.offcpu_cost_ns */
	__u64 last_ns;	 /* when it was last topped up */
};
_Static_assert(sizeof(struct ignis_offcpu_cpu) == 16, "ignis_offcpu_cpu size");

/* Read-only configuration, set by the agent between open and load. */
struct ignis_config {
	__u32 filter_pids;	 /* 1: record only tgids present in pid_filter */
	__u32 user_stacks;	 /* 1: walk user stacks */
	__u32 kernel_stacks;	 /* 1: walk kernel stacks */
	__u32 skip_walk;	 /* 1: benchmark mode, record empty stacks without walking */
	__u64 mmap_event_gap_ns; /* min time between two PROC_EVENT_MMAP of one tgid, ns (a
				  * quarter of the process's age if shorter) */
	__u32 unwind_tables; /* 1: unwind user stacks with the tables where a process has them */
	__u32 python;	     /* 1: walk Python frames of the processes in py_procs */
	/* Off-CPU time (struct ignis_offcpu_task). */
	__u32 offcpu;		   /* 1: the switch programs are attached */
	__u32 offcpu_kthreads;	   /* 1: kernel threads too */
	__u64 offcpu_period_ns;	   /* an accumulator's weight that makes a sample */
	__u64 offcpu_min_block_ns; /* waits shorter than this are not counted (0: all) */
	__u64 offcpu_cost_ns;	   /* 1e9 / the cap in samples per second per CPU; 0: no cap */
	__u64 offcpu_burst_ns;	   /* the most credit a CPU keeps */
	__u32 switch_prev_state;   /* 1: sched_switch passes prev_state (5.18+) */
	__u32 log_cap;		   /* records of each CPU's run in sample_log; 0: no log */
	__u32 nr_cpus;		   /* possible CPUs: runs per generation in sample_log */
	__u32 pad;
};
_Static_assert(sizeof(struct ignis_config) == 88, "ignis_config size");

#endif /* IGNIS_BPF_PROFILER_H */
