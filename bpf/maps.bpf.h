/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What every BPF program of ignis shares: the maps, the read-only configuration, the
 * generation, the per-CPU working state, and the helpers that count, store a stack and
 * record a sample. Included by each program file (bpf/sampler.bpf.c, bpf/unwind.bpf.c,
 * bpf/offcpu.bpf.c).
 *
 * One BPF object: each *.bpf.c is compiled on its own and bpftool's static linker joins them
 * (`bpftool gen object`, see the Makefile), so one skeleton serves the agent. Every map, `cfg`
 * and `gen` is defined once, in bpf/maps.bpf.c; here they are declared `extern` with the same
 * named map types, which the linker checks against the definition and resolves to it. The map
 * layout and the generation flip are described in bpf/profiler.h.
 *
 * Also defines, over these maps, the four functions through which the unwinder's logic
 * (bpf/unwind.bpf.h) reaches the world.
 */
#ifndef IGNIS_BPF_MAPS_BPF_H
#define IGNIS_BPF_MAPS_BPF_H

#include <bpf/bpf_core_read.h>

#include "profiler.h"
#include "stack.bpf.h"
#include "unwind.bpf.h"

#ifndef EEXIST
#define EEXIST 17
#endif

/* Read-only configuration, set by the agent between open and load (skel->rodata->cfg). */
extern const volatile struct ignis_config cfg;

/* The generation the sampler writes; flipped by the agent (agent/collect/sampler.c). */
extern __u32 gen;

/* CLOCK_MONOTONIC of the last event written with the default flags (events_flags()). */
extern __u64 events_woken_ns;

/* ---- Map types: one definition each, for the declarations here and the definitions in
 * bpf/maps.bpf.c. The agent sizes every map marked so before load. */

/* Inner map templates of the generations (sized by the agent). */
struct stacks_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct ignis_stack_id);
	__type(value, struct ignis_stack_part); /* part 0 */
};

struct tails_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct ignis_stack_part_key); /* parts 1 and on */
	__type(value, struct ignis_stack_part);
};

struct counts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct ignis_sample_key);
	__type(value, __u64);
};

/* The CPU samples of a window, a record each: generation g's run of CPU c is the log_cap
 * records from (g * nr_cpus + c) * log_cap (sized by the agent). */
struct sample_log_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ignis_sample_key);
};

/* What each CPU did in each generation's window. */
struct cpu_windows_map {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, IGNIS_NR_GENS);
	__type(key, __u32);
	__type(value, struct ignis_cpu_window);
};

struct stacks_gen_map {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, IGNIS_NR_GENS);
	__type(key, __u32);
	__array(values, struct stacks_map);
};

struct tails_gen_map {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, IGNIS_NR_GENS);
	__type(key, __u32);
	__array(values, struct tails_map);
};

struct counts_gen_map {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, IGNIS_NR_GENS);
	__type(key, __u32);
	__array(values, struct counts_map);
};

struct stats_map {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, IGNIS_NR_GENS *STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
};

struct procs_map {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct ignis_proc_state);
};

struct pid_filter_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by the agent (--pid) */
	__type(key, __u32);
	__type(value, __u8);
};

struct events_map {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
};

struct unwind_rows_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);		   /* sized by the agent (--unwind-table-size) */
	__uint(map_flags, BPF_F_MMAPABLE); /* the agent writes tables through a mapping */
	__type(key, __u32);
	__type(value, struct ignis_unwind_row);
};

struct unwind_maps_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* sized by the agent */
	__type(key, __u32);
	__type(value, struct ignis_unwind_mapping);
};

struct unwind_procs_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by the agent */
	__type(key, __u32);
	__type(value, struct ignis_unwind_proc);
};

struct unwind_exes_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by the agent */
	__type(key, struct ignis_unwind_exe_key);
	__type(value, struct ignis_unwind_exe);
};

struct py_procs_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by the agent */
	__type(key, __u32);
	__type(value, struct ignis_py_proc);
};

struct py_codes_map {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1); /* sized by the agent */
	__type(key, struct ignis_py_code_key);
	__type(value, __u64);
};

/* Per-thread off-CPU state, freed with the thread (Linux 5.13+ for tracing programs). */
struct offcpu_tasks_map {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ignis_offcpu_task);
};

struct offcpu_cpus_map {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ignis_offcpu_cpu);
};

/* Filled by the agent after load (a program it did not load leaves its slot empty). */
struct progs_map {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
};

/*
 * Per-CPU working state, one lookup per sample: room for one stack walk (too large for the
 * 512-byte BPF stack), the table unwinder's state, and the process images this CPU found
 * announced and unchanged in this window, so that their samples skip the procs lookup (a
 * cold hash bucket and element: about a microsecond per sample on a VM).
 */
/* A file mapping this CPU announced (announce_mapping()). */
struct mapping_sent {
	__u64 start_time;
	__u64 start;
	__u32 tgid;
	__u32 exec_id;
};

#define MAPPINGS_SENT 8 /* a power of 2 */

/* A process image this CPU found announced and unchanged (announce_process()). */
struct image_seen {
	__u64 start_time;
	__u64 exec_vm;
	__u32 tgid; /* 0: none */
	__u32 exec_id;
	__u32 epoch; /* cpu_state.seen_epoch when it was found */
	__u32 pad;
};

/* Entries of cpu_state.seen, by tgid (a power of 2): the processes that share a CPU. */
#define IMAGES_SEEN 16

struct cpu_state {
	union {
		struct ignis_stack stack;
		/* The stacks and tails maps' value type, named here for the linker (see
		 * below): a view of the stack's first part. */
		struct ignis_stack_part stack_part0;
	};
	struct uw_state uw;
	struct image_seen seen[IMAGES_SEEN];
	__u32 seen_epoch; /* bumped when the generation flips: an entry lasts one window */
	__u32 seen_gen;	  /* the generation of seen_epoch */
	__u64 py_serials; /* serials this CPU handed out (bpf/python.bpf.h) */
	struct mapping_sent sent[MAPPINGS_SENT]; /* the last mappings it announced */
	__u32 sent_next;
	__u32 pad;
	struct ignis_stack_part_key part_key; /* unused: the tails maps' key type, named */
};

/* cpu_states entries: one per kind of walk, since a CPU sample (the perf event's interrupt,
 * or an NMI) can come in the middle of an off-CPU walk in a tracepoint. */
#define CPU_STATE_SAMPLE 0 /* ignis_sample and its unwinder */
#define CPU_STATE_OFFCPU 1 /* ignis_switch, ignis_offcpu and its unwinder */

struct cpu_states_map {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct cpu_state);
};

/*
 * ---- The maps programs use (the generations' inner maps and gen_sync only in maps.bpf.c).
 *
 * stacks_gen, tails_gen and counts_gen are declared without SEC(".maps"). For a map that
 * several objects name, bpftool's static linker (libbpf 1.1; its current linker.c alike) recomputes
 * the map's size in BTF from its type, which for a map-in-map with a .values initializer
 * leaves out the initial slots; libbpf then refuses the object ("cannot find map
 * 'stacks_0'"). Clang puts an unannotated extern in BTF's .extern section, which the linker
 * resolves without resizing; it still checks the declaration against the definition, which
 * needs the inner maps' key and value types complete in the file's BTF, where clang puts only
 * a forward declaration of a struct reached through a pointer. struct cpu_state contains
 * them (the stacks and tails maps' as stack_part0 and part_key), so a file that uses
 * cpu_states as well links; one that does not fails to link with "map 'stacks_gen.inner':
 * can't determine key size".
 */
extern struct stacks_gen_map stacks_gen;
extern struct tails_gen_map tails_gen;
extern struct counts_gen_map counts_gen;
extern struct counts_gen_map offcpu_gen;
extern struct stats_map stats SEC(".maps");
extern struct sample_log_map sample_log SEC(".maps");
extern struct cpu_windows_map cpu_windows SEC(".maps");
extern struct procs_map procs SEC(".maps");
extern struct pid_filter_map pid_filter SEC(".maps");
extern struct events_map events SEC(".maps");
extern struct unwind_rows_map unwind_rows SEC(".maps");
extern struct unwind_maps_map unwind_maps SEC(".maps");
extern struct unwind_procs_map unwind_procs SEC(".maps");
extern struct unwind_exes_map unwind_exes SEC(".maps");
extern struct progs_map progs SEC(".maps");
extern struct py_procs_map py_procs SEC(".maps");
extern struct py_codes_map py_codes SEC(".maps");

extern struct offcpu_tasks_map offcpu_tasks SEC(".maps");
extern struct offcpu_cpus_map offcpu_cpus SEC(".maps");
extern struct progs_map offcpu_progs SEC(".maps");

extern struct cpu_states_map cpu_states SEC(".maps");

/* ---- Helpers --------------------------------------------------------------------------------- */

static __always_inline void stat_inc(__u32 g, enum ignis_stat stat)
{
	__u32 idx = g * STAT_NR + stat;
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	/* Atomic: a sample can interrupt a tracepoint program on the same CPU. */
	if (v)
		__sync_fetch_and_add(v, 1);
}

/* Add n to a counter (nanoseconds). */
static __always_inline void stat_add(__u32 g, enum ignis_stat stat, __u64 n)
{
	__u32 idx = g * STAT_NR + stat;
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		__sync_fetch_and_add(v, n);
}

static __always_inline __u32 read_gen(void)
{
	return *(volatile __u32 *)&gen & 1;
}

/*
 * The ring buffer flags of an event written now: none, the kernel's default (wake the agent
 * if it has read every event before this one), if no event took that default in the last
 * IGNIS_EVENTS_WAKEUP_GAP_NS; else no wakeup: the agent reads it within that gap of the
 * events it read last (see profiler.h). Two CPUs may both take the default: harmless.
 */
static __always_inline __u64 events_flags(void)
{
	__u64 now = bpf_ktime_get_ns();

	if (now - *(volatile __u64 *)&events_woken_ns < IGNIS_EVENTS_WAKEUP_GAP_NS)
		return BPF_RB_NO_WAKEUP;
	*(volatile __u64 *)&events_woken_ns = now;
	return 0;
}

/*
 * Store the stack under its id in the generation's maps, in parts (struct ignis_stack_part):
 * the parts after the first in its tails map, then the first in stacks, which tells that
 * the stack is whole. Part 0 has a map of its own, sized for every stack a window can bring,
 * so deep stacks never take a stack's first part's room. When a later part finds no room,
 * the first is stored alone, cut to its frames and flagged truncated (counted), so the
 * sample keeps its leaf frames; st is changed then. Returns 0, or -1 with *id zeroed when the
 * stacks map has no room (counted: the sample is kept without this stack).
 */
static __always_inline int store_stack(__u32 g, void *stacks, struct ignis_stack *st,
				       struct ignis_stack_id *id)
{
	struct ignis_stack_part_key k = {};
	__u32 len = st->len, part;
	void *tails;
	long err;

	stack_hash128(st->ips, len, st->flags, id);
	if (bpf_map_lookup_elem(stacks, id))
		return 0;
	if (len > IGNIS_STACK_PART_FRAMES) {
		tails = bpf_map_lookup_elem(&tails_gen, &g);
		k.id = *id;
		for (part = 1; part < IGNIS_STACK_PARTS; part++) {
			if (part * IGNIS_STACK_PART_FRAMES >= len)
				break;
			k.part = part;
			/* The part's value starts 8 bytes before its first frame (struct
			 * ignis_stack_part): within st, since part >= 1. */
			err = tails ? bpf_map_update_elem(
					      tails, &k,
					      &st->ips[part * IGNIS_STACK_PART_FRAMES - 1],
					      BPF_NOEXIST) :
				      -1;
			if (err && err != -EEXIST) {
				st->len = IGNIS_STACK_PART_FRAMES;
				st->flags |= STACK_F_TRUNCATED;
				stat_inc(g, STAT_STACKS_CUT);
				break;
			}
		}
	}
	err = bpf_map_update_elem(stacks, id, st, BPF_NOEXIST);
	if (!err || err == -EEXIST) /* -EEXIST: another CPU stored it meanwhile */
		return 0;
	stat_inc(g, STAT_STACKS_LOST);
	id->lo = id->hi = 0;
	return -1;
}

/*
 * Add v to the value under key in a generation's counts or offcpu map, inserting it if new.
 * Returns 0, or -1 after counting `full` (the map is full).
 */
static __always_inline int add_to(__u32 g, void *map, struct ignis_sample_key *key, __u64 v,
				  enum ignis_stat full)
{
	__u64 *value;
	long err;

	value = bpf_map_lookup_elem(map, key);
	if (value) {
		__sync_fetch_and_add(value, v);
		return 0;
	}
	err = bpf_map_update_elem(map, key, &v, BPF_NOEXIST);
	if (!err)
		return 0;
	if (err == -EEXIST) { /* another CPU inserted it meanwhile */
		value = bpf_map_lookup_elem(map, key);
		if (value) {
			__sync_fetch_and_add(value, v);
			return 0;
		}
	}
	stat_inc(g, full);
	return -1;
}

/*
 * Count a CPU sample: a record appended to this CPU's run of the generation's sample log,
 * or, when the run is full, an add to its key in the generation's counts map. Only the CPU
 * sampler and its unwinder call this, one run per CPU at a time: cw->logged needs no atomic.
 */
static __always_inline void record(__u32 g, struct ignis_sample_key *key)
{
	struct ignis_sample_key *rec;
	struct ignis_cpu_window *cw;
	void *counts;
	__u32 idx;

	cw = bpf_map_lookup_elem(&cpu_windows, &g);
	if (cw && cw->logged < cfg.log_cap) {
		idx = (g * cfg.nr_cpus + bpf_get_smp_processor_id()) * cfg.log_cap +
		      (__u32)cw->logged;
		rec = bpf_map_lookup_elem(&sample_log, &idx);
		if (rec) {
			__builtin_memcpy(rec, key, sizeof(*rec));
			cw->logged++;
			return;
		}
	}
	counts = bpf_map_lookup_elem(&counts_gen, &g);
	if (!counts) {
		stat_inc(g, STAT_DROP_NO_GEN);
		return;
	}
	if (!add_to(g, counts, key, 1, STAT_DROP_COUNTS_FULL))
		stat_inc(g, STAT_LOG_FULL);
}

/* Add ns to the key's off-CPU time in a generation's offcpu map. Returns 0 or -1 (counted). */
static __always_inline int record_ns(__u32 g, void *offcpu, struct ignis_sample_key *key, __u64 ns)
{
	return add_to(g, offcpu, key, ns, STAT_OFFCPU_DROPS);
}

/* The unwinder's world (bpf/unwind.bpf.h): its maps and the user's memory. */
static __always_inline const struct ignis_unwind_mapping *lookup_mapping(__u32 idx)
{
	return bpf_map_lookup_elem(&unwind_maps, &idx);
}

static __always_inline const struct ignis_unwind_row *lookup_row(__u32 idx)
{
	return bpf_map_lookup_elem(&unwind_rows, &idx);
}

static __always_inline long read_user(void *dst, __u32 size, __u64 addr)
{
	return bpf_probe_read_user(dst, size, (const void *)addr);
}

/* The file mapping that holds pc, into uw's m_* (bpf/unwind.bpf.c; only the unwinder program
 * built with lookups by file calls it). */
int unwind_find_file(__u32 slot, __u64 pc);

static __always_inline int lookup_file(struct uw_state *uw, __u64 pc)
{
	return unwind_find_file(uw->py.slot, pc);
}

/* The vDSO's table, into uw's vdso_* (bpf/unwind.bpf.c). */
int unwind_find_vdso(__u32 slot);

static __always_inline void lookup_vdso(struct uw_state *uw)
{
	unwind_find_vdso(uw->py.slot);
}

/*
 * Tell the agent about a file mapping of a process image not published yet, or mapped since
 * it was (struct
 * ignis_mapping_event), unless this CPU told it lately: the samples of a short process come
 * on one CPU, one after the other. A duplicate from another CPU costs the agent a lookup.
 */
static __always_inline void announce_mapping(__u32 g, struct cpu_state *cs,
					     const struct ignis_sample_key *key, __u32 dev,
					     __u64 ino, __u64 start, __u64 end, __u64 offset)
{
	struct ignis_mapping_event *ev;
	struct mapping_sent *sent;
	__u32 i;

	for (i = 0; i < MAPPINGS_SENT; i++) {
		sent = &cs->sent[i];
		if (sent->start == start && sent->tgid == key->tgid &&
		    sent->start_time == key->start_time && sent->exec_id == key->exec_id)
			return;
	}
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		stat_inc(g, STAT_EVENTS_LOST);
		return;
	}
	ev->type = PROC_EVENT_MAPPING;
	ev->tgid = key->tgid;
	ev->start_time = key->start_time;
	ev->exec_id = key->exec_id;
	ev->dev = dev;
	ev->ino = ino;
	ev->start = start;
	ev->end = end;
	ev->offset = offset;
	bpf_ringbuf_submit(ev, events_flags());
	stat_inc(g, STAT_MAPPING_EVENTS);
	i = cs->sent_next++ & (MAPPINGS_SENT - 1);
	sent = &cs->sent[i];
	sent->start = start;
	sent->tgid = key->tgid;
	sent->start_time = key->start_time;
	sent->exec_id = key->exec_id;
}

/* An inode's size and modification time, as struct ignis_unwind_exe keeps them. */
struct file_stamp {
	__u64 size;
	__s64 mtime_sec;
	__u32 mtime_nsec;
	__u32 ok; /* 0: this kernel's inode has no modification time CO-RE found */
};

/* struct inode's modification time before 6.7, 6.7-6.10, and from 6.11. */
struct inode___mtime_ts {
	struct timespec64 i_mtime;
} __attribute__((preserve_access_index));

struct inode___mtime_hidden {
	struct timespec64 __i_mtime;
} __attribute__((preserve_access_index));

struct inode___mtime_split {
	time64_t i_mtime_sec;
	u32 i_mtime_nsec;
} __attribute__((preserve_access_index));

static __always_inline void read_stamp(struct inode *inode, struct file_stamp *st)
{
	st->size = BPF_CORE_READ(inode, i_size);
	st->ok = 1;
	if (bpf_core_field_exists(struct inode___mtime_split, i_mtime_sec)) {
		struct inode___mtime_split *i = (void *)inode;

		st->mtime_sec = BPF_CORE_READ(i, i_mtime_sec);
		st->mtime_nsec = BPF_CORE_READ(i, i_mtime_nsec);
	} else if (bpf_core_field_exists(struct inode___mtime_hidden, __i_mtime)) {
		struct inode___mtime_hidden *i = (void *)inode;

		st->mtime_sec = BPF_CORE_READ(i, __i_mtime.tv_sec);
		st->mtime_nsec = (__u32)BPF_CORE_READ(i, __i_mtime.tv_nsec);
	} else if (bpf_core_field_exists(struct inode___mtime_ts, i_mtime)) {
		struct inode___mtime_ts *i = (void *)inode;

		st->mtime_sec = BPF_CORE_READ(i, i_mtime.tv_sec);
		st->mtime_nsec = (__u32)BPF_CORE_READ(i, i_mtime.tv_nsec);
	} else {
		st->ok = 0;
	}
}

/*
 * Whether a table found by its file's inode applies (struct ignis_unwind_exe): the build ID
 * at addr in the process's memory is the table's, or, where that page is not present (a
 * read fault, not other bytes), the inode's stamp is the one the agent saw.
 */
static __always_inline bool same_file(__u64 addr, const struct ignis_unwind_exe *e,
				      const struct file_stamp *st)
{
	__u32 len = e->build_id_len, i;
	__u8 mem[20];

	if (!len || len > sizeof(mem))
		return false;
	/* The verifier bounds the size by the register passed, which clang may not be the one
	 * it checked: the barrier keeps a mask the verifier sees. */
	barrier_var(len);
	len &= 31;
	if (len > sizeof(mem))
		return false;
	if (bpf_probe_read_user(mem, len, (const void *)addr))
		return st->ok && e->size && st->size == e->size && st->mtime_sec == e->mtime_sec &&
		       st->mtime_nsec == e->mtime_nsec;
	for (i = 0; i < sizeof(mem); i++)
		if (i < len && mem[i] != e->build_id[i])
			return false;
	return true;
}

/* The Python walker's world (bpf/python.bpf.h). */
static __always_inline __u64 py_fsbase(void)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();

	return BPF_CORE_READ(task, thread.fsbase);
}

/*
 * The serial of a code object: its py_codes entry's, or a new one, announced to the agent
 * (the entry is kept only if the announcement is in the ring buffer, so a lost one is retried
 * on the next sample). 0 when neither worked (counted).
 */
static __always_inline __u64 py_code_serial(const struct ignis_py_code_key *key,
					    struct uw_python *py, __s32 firstlineno)
{
	struct ignis_py_code_event *ev;
	__u32 g = read_gen(), slot = py->slot & 1;
	struct cpu_state *cs;
	__u64 *found, serial;
	long err;

	found = bpf_map_lookup_elem(&py_codes, key);
	if (found)
		return *found;
	cs = bpf_map_lookup_elem(&cpu_states, &slot);
	if (!cs)
		return 0;
	/* No other walk of this slot runs on this CPU meanwhile: a plain increment. The slot
	 * is the highest bit under the CPU's. */
	cs->py_serials++;
	serial = (__u64)(bpf_get_smp_processor_id() & ((1U << IGNIS_PY_SERIAL_CPU_BITS) - 1))
			 << (37 - IGNIS_PY_SERIAL_CPU_BITS) |
		 (__u64)slot << (36 - IGNIS_PY_SERIAL_CPU_BITS) |
		 (cs->py_serials & ((1ULL << (36 - IGNIS_PY_SERIAL_CPU_BITS)) - 1));
	if (!serial)
		serial = ++cs->py_serials;
	err = bpf_map_update_elem(&py_codes, key, &serial, BPF_NOEXIST);
	if (err == -EEXIST) {
		found = bpf_map_lookup_elem(&py_codes, key);
		return found ? *found : 0;
	}
	if (err) {
		stat_inc(g, STAT_PY_CODES_LOST);
		return 0;
	}
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		bpf_map_delete_elem(&py_codes, key);
		stat_inc(g, STAT_PY_CODES_LOST);
		return 0;
	}
	ev->type = PROC_EVENT_PY_CODE;
	ev->tgid = key->tgid;
	ev->start_time = key->start_time;
	ev->exec_id = key->exec_id;
	ev->identity = key->identity;
	ev->serial = serial;
	ev->code = key->code;
	ev->firstlineno = firstlineno;
	ev->name_len = (__u16)py_ascii(py, ev->name, sizeof(ev->name),
				       py_u64(py->co, IGNIS_PY_CODE_READ, py->l.code_name));
	ev->file_len = (__u16)py_ascii(py, ev->file, sizeof(ev->file),
				       py_u64(py->co, IGNIS_PY_CODE_READ, py->l.code_filename));
	bpf_ringbuf_submit(ev, events_flags());
	stat_inc(g, STAT_PY_CODES_NEW);
	return serial;
}

#endif /* IGNIS_BPF_MAPS_BPF_H */
