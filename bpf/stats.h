/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The BPF programs' counters, as rows of the agent's one counter table (agent/operate/stats.h,
 * ddprof's STATS_TABLE). Macros only, no types: bpf/profiler.h makes the BPF enum of them, the
 * agent its accounting, Prometheus series and log keys, so that the agent's modules past the
 * drain use the table without seeing a BPF layout.
 *
 * Every sample lands in exactly one of: STAT_IDLE, STAT_FILTERED, a record of the sample log,
 * a counts entry (STAT_LOG_FULL: the log was full), or one of the drop reasons STAT_DROP_*.
 * STAT_*_ERR and STAT_STACKS_LOST mark samples that were recorded but with a stack missing.
 *
 * Each row gives the BPF enum (STAT_<id>), the agent's accounting, the Prometheus series
 * (family and label), the key in the window's debug line and the help text. A new counter is
 * one row here and its increment in BPF. Rows of one Prometheus family need not be adjacent;
 * the first row of a family carries its help.
 *
 *   X(id, metric, label, key, help)
 */
#ifndef IGNIS_BPF_STATS_H
#define IGNIS_BPF_STATS_H

#define IGNIS_BPF_STATS(X)                                                                              \
	X(SAMPLES, "ignis_samples_total", "", "samples", "Samples taken by the BPF program.")           \
	X(IDLE, "ignis_samples_idle_total", "", "idle", "Samples of idle CPUs, counted only.")          \
	X(FILTERED, "ignis_samples_filtered_total", "", "filtered",                                     \
	  "Samples outside --pid, or of kernel threads under --no-kernel.")                             \
	X(USTACK_ERR, "ignis_stack_walk_errors_total", "stack=\"user\"", "ustack_err",                  \
	  "Samples kept without one of their stacks: the walk failed.")                                 \
	X(KSTACK_ERR, "ignis_stack_walk_errors_total", "stack=\"kernel\"", "kstack_err", "")            \
	X(DROP_NO_GEN, "ignis_samples_dropped_total", "reason=\"no_generation\"", "no_gen",             \
	  "Samples lost, by reason.")                                                                   \
	X(DROP_COUNTS_FULL, "ignis_samples_dropped_total", "reason=\"counts_map_full\"",                \
	  "counts_full", "")                                                                            \
	X(EVENTS_LOST, "ignis_process_events_lost_total", "", "events_lost",                            \
	  "Process events lost to a full ring buffer (recovered by the rescan).")                       \
	/* The table unwinder (--unwind auto|dwarf). Per sample unless it says frames. */               \
	X(UNWIND_SAMPLES, "ignis_unwind_samples_total", "", "unwind_samples",                           \
	  "User stacks unwound with unwind tables (.eh_frame) in BPF.")                                 \
	X(UNWIND_NO_TABLES, "ignis_unwind_no_tables_total", "", "unwind_no_tables",                     \
	  "Samples of processes without unwind tables (yet), walked with frame pointers.")              \
	X(UNWIND_FP_FRAMES, "ignis_unwind_frame_pointer_frames_total", "reason=\"no_table\"",           \
	  "unwind_fp_frames",                                                                           \
	  "Frames the table unwinder walked with the frame pointer: in no table (JIT, "                 \
	  "anonymous code) or in code its table has no CFI for.")                                       \
	X(UNWIND_NO_CFI, "ignis_unwind_frame_pointer_frames_total", "reason=\"no_cfi\"",                \
	  "unwind_no_cfi", "")                                                                          \
	X(UNWIND_READ_FAULT, "ignis_unwind_truncated_total", "reason=\"read_fault\"",                   \
	  "unwind_read_fault",                                                                          \
	  "Stacks the table unwinder stopped before the outermost frame, by reason.")                   \
	X(UNWIND_DEPTH, "ignis_unwind_truncated_total", "reason=\"depth_limit\"", "unwind_depth",       \
	  "")                                                                                           \
	X(UNWIND_UNSUPPORTED, "ignis_unwind_truncated_total", "reason=\"unsupported_rule\"",            \
	  "unwind_unsupported", "")                                                                     \
	X(UNWIND_STALE, "ignis_unwind_truncated_total", "reason=\"tables_changed\"",                    \
	  "unwind_stale", "")                                                                           \
	X(UNWIND_TAIL_CALL, "ignis_unwind_truncated_total", "reason=\"tail_call\"",                     \
	  "unwind_tail_call", "")                                                                       \
	X(UNWIND_LOST, "ignis_unwind_truncated_total", "reason=\"chain_lost\"", "unwind_lost", "")      \
	/* The Python walker (bpf/python.bpf.h). */                                                     \
	X(PY_SAMPLES, "ignis_python_samples_total", "", "py_samples",                                   \
	  "User stacks with Python frames.")                                                            \
	X(PY_FRAMES, "ignis_python_frames_total", "", "py_frames",                                      \
	  "Python frames recorded in user stacks.")                                                     \
	X(PY_READ_FAULT, "ignis_python_walk_stopped_total", "reason=\"read_fault\"",                    \
	  "py_read_fault",                                                                              \
	  "Python walks that stopped before the outermost Python frame, by reason (native "             \
	  "frames only from there).")                                                                   \
	X(PY_BAD_CODE, "ignis_python_walk_stopped_total", "reason=\"not_a_code_object\"",               \
	  "py_bad_code", "")                                                                            \
	X(PY_NO_THREAD_STATE, "ignis_python_walk_stopped_total", "reason=\"no_thread_state\"",          \
	  "py_no_tstate", "")                                                                           \
	X(PY_UNMATCHED, "ignis_python_walk_stopped_total", "reason=\"frames_left\"",                    \
	  "py_unmatched", "")                                                                           \
	X(PY_CODES_NEW, "ignis_python_code_objects_announced_total", "", "py_codes_new",                \
	  "Python code objects met for the first time and announced to the agent.")                     \
	X(PY_CODES_LOST, "ignis_python_code_objects_lost_total", "", "py_codes_lost",                   \
	  "Python code objects that could not be announced (ring buffer or map full): their "           \
	  "frames stay unnamed.")                                                                       \
	X(UNWIND_EXE_ONLY, "ignis_unwind_executable_only_total", "", "unwind_exe_only",                 \
	  "Samples of processes whose tables were not published yet, unwound with their "               \
	  "executable's table (from an earlier process of the same file), frame pointers "              \
	  "elsewhere.")                                                                                 \
	X(UNWIND_FILE_TABLE, "ignis_unwind_file_lookups_total", "result=\"table\"",                     \
	  "unwind_file_table",                                                                          \
	  "Frames of processes not published yet whose mapping was looked up by address in BPF "        \
	  "(bpf_find_vma, 5.17), by result: its file's table applied (table), a file or "               \
	  "anonymous memory without one (no_table), its build ID in memory not the table's "            \
	  "(build_id), the lookup refused (busy: one per interrupt, or the mm being changed).")         \
	X(UNWIND_FILE_NONE, "ignis_unwind_file_lookups_total", "result=\"no_table\"",                   \
	  "unwind_file_none", "")                                                                       \
	X(UNWIND_FILE_BUILD_ID, "ignis_unwind_file_lookups_total", "result=\"build_id\"",               \
	  "unwind_file_build_id", "")                                                                   \
	X(UNWIND_FILE_BUSY, "ignis_unwind_file_lookups_total", "result=\"busy\"",                       \
	  "unwind_file_busy", "")                                                                       \
	X(UNWIND_VDSO_TABLE, "ignis_unwind_vdso_walks_total", "result=\"table\"",                       \
	  "unwind_vdso_table",                                                                          \
	  "Walks of processes not published yet that met the vDSO (found from mm->context.vdso, "       \
	  "without a lookup), by result: its frames unwound with the vDSO's table (table), or by "      \
	  "frame pointer (no_table: the agent has not entered it yet, or the build ID in memory "       \
	  "is another image's, as a 32-bit process's).")                                                \
	X(UNWIND_VDSO_NONE, "ignis_unwind_vdso_walks_total", "result=\"no_table\"",                     \
	  "unwind_vdso_none", "")                                                                       \
	X(UNWIND_UNMAPPED, "ignis_unwind_unmapped_total", "", "unwind_unmapped",                        \
	  "User stacks left out of samples inside execve(), whose registers are still the old "         \
	  "image's: its code is not loaded yet (mm->start_code 0), or its pc is in no mapping "         \
	  "(bpf_find_vma, 5.17).")                                                                      \
	X(MAPPING_EVENTS, "ignis_mapping_events_total", "", "mapping_events",                           \
	  "File mappings of processes not published yet sent to the agent (the files to name their "    \
	  "frames by when the process is gone before its mappings are read); lost ones count as "       \
	  "lost process events.")                                                                       \
	/* Off-CPU time (bpf/offcpu.bpf.c); the _NS rows count nanoseconds (a "_seconds" family:   \
	 * /metrics shows seconds). */    \
	X(OFFCPU_SWITCHES, "ignis_offcpu_switches_total", "", "offcpu_switches",                        \
	  "Switches back onto a CPU of threads whose switch-out was seen (--off-cpu).")                 \
	X(OFFCPU_SAMPLES, "ignis_offcpu_samples_total", "", "offcpu_samples",                           \
	  "Off-CPU samples recorded with a stack (walked, or a kernel stack and the user leaf).")       \
	X(OFFCPU_WALKED_NS, "ignis_offcpu_seconds_total", "result=\"walked\"", "offcpu_walked_ns",      \
	  "Off-CPU time by what became of it: in samples with whole stacks (walked), with the "         \
	  "kernel stack and only the user leaf (user_leaf: not in a system call, or a kernel thread), " \
	  "without stacks (rate_capped; at_exit: a thread's waits short of a period when it "           \
	  "exits), left out (below_min_block).")                                                        \
	X(OFFCPU_LEAF_NS, "ignis_offcpu_seconds_total", "result=\"user_leaf\"", "offcpu_leaf_ns",       \
	  "")                                                                                           \
	X(OFFCPU_CAPPED_NS, "ignis_offcpu_seconds_total", "result=\"rate_capped\"",                     \
	  "offcpu_capped_ns", "")                                                                       \
	X(OFFCPU_EXITED_NS, "ignis_offcpu_seconds_total", "result=\"at_exit\"",                         \
	  "offcpu_exited_ns", "")                                                                       \
	X(OFFCPU_SHORT_NS, "ignis_offcpu_seconds_total", "result=\"below_min_block\"",                  \
	  "offcpu_short_ns", "")                                                                        \
	X(OFFCPU_NO_STATE, "ignis_offcpu_state_missed_total", "", "offcpu_no_state",                    \
	  "Threads whose state could not be stored (allocation failed, or its recursion guard): "       \
	  "their wait is not counted.")                                                                 \
	X(OFFCPU_DROPS, "ignis_offcpu_samples_dropped_total", "", "offcpu_drops",                       \
	  "Off-CPU samples lost to a full map (their nanoseconds are in no sample).")                   \
	X(STACKS_CUT, "ignis_stacks_cut_total", "", "stacks_cut",                                       \
	  "Stacks kept with their first 32 frames only: the stacks map had no room for the rest "       \
	  "(they end in [truncated]).")                                                                 \
	X(STACKS_LOST, "ignis_stacks_lost_total", "reason=\"stacks_map_full\"", "stacks_full",          \
	  "Stacks not stored: the window's stacks map was full (raise --max-stacks). Their samples "    \
	  "and off-CPU time are kept without that stack.")                                              \
	X(LOG_FULL, "ignis_samples_log_full_total", "", "log_full",                                     \
	  "Samples counted in the counts map, not logged: their CPU's run of the sample log was "       \
	  "full (the window ran longer than the log is sized for).")

#endif /* IGNIS_BPF_STATS_H */
