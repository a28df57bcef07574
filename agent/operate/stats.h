/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every counter and gauge of ignis in one table (ddprof's STATS_TABLE): the BPF rows
 * (IGNIS_BPF_STATS in bpf/stats.h, which BPF compiles too and so lives there) followed
 * by the agent's own (IGNIS_AGENT_STATS below). From the table come the enum of counters,
 * the accounting after each window (cycle.c), the Prometheus series and their help
 * (metrics.c), the window's debug line and the profile's comments (stats.c). A new counter
 * is one row, plus the code that counts it.
 *
 *   X(id, kind, source, metric, label, key, help)
 *
 * A row whose family has "_seconds" in its name counts nanoseconds: /metrics shows seconds.
 *
 * kind    SUM     a figure per window, added into a total (a Prometheus counter)
 *         WINDOW  a figure per window, exported as the last window's value (a gauge)
 *         TOTAL   a running total a module keeps, copied (a counter)
 *         GAUGE   a module's current value, copied (a gauge)
 * source  an expression the accounting evaluates (cycle.c defines the names): BPF, the
 *         drained generation's counter of the same id; CYCLE, counted by the window cycle
 *         itself; WIN(f), a field of struct window_stats; PROC(f) of struct proctab_stats;
 *         SYM(f) of struct symbolizer_stats; UNW(f) of struct unwinder_stats; SRV(f) of
 *         struct server_sink_stats; PY(f) of struct python_stats; AGENT(f), a figure of
 *         the agent's wiring
 * metric  the Prometheus family (https://prometheus.io/docs/instrumenting/writing_exporters/:
 *         ignis_ prefix, base units, _total for counters)
 * label   the row's label pair within its family, or ""
 * key     its key in the `window seq=N key=value ...` debug line (SUM and WINDOW rows), or
 *         NULL for none
 * help    the family's help text, given on the family's first row ("" on the others; the rows
 *         of one family need not be adjacent)
 */
#ifndef IGNIS_STATS_H
#define IGNIS_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "../../bpf/stats.h"

/* clang-format off */
#define IGNIS_AGENT_STATS(X)								\
	/* The window builder (window.c): symbolization of one window. */		\
	X(PROFILED, SUM, WIN(samples), "ignis_samples_profiled_total", "", "profiled",	\
	  "Samples in the profiles.")							\
	X(CAP_DROPPED, SUM, WIN(dropped_profile_cap), "ignis_samples_dropped_total",	\
	  "reason=\"profile_size_cap\"", "cap_dropped", "")				\
	X(KTHREAD, SUM, WIN(kthread_samples), "ignis_samples_kernel_threads_total", "",	\
	  "kthread", "Samples of kernel threads (no user stack).")			\
	X(NO_IMAGE, SUM, WIN(no_image_samples), "ignis_samples_without_mappings_total",	\
	  "reason=\"exited\"", "no_image",						\
	  "Samples of processes without captured mappings (frames [unknown], addresses "	\
	  "kept), by reason: exited before the capture, or mappings not readable "	\
	  "(permission denied: CAP_SYS_PTRACE).")					\
	X(DENIED, SUM, WIN(denied_samples), "ignis_samples_without_mappings_total",	\
	  "reason=\"denied\"", "denied", "")						\
	X(TRUNCATED, SUM, WIN(truncated_stacks), "ignis_samples_truncated_total", "",	\
	  "truncated", "Samples whose stack ends in [truncated].")			\
	X(ROOT_UNKNOWN, SUM, WIN(root_unknown_stacks),					\
	  "ignis_samples_root_unverified_total", "", "root_unknown",			\
	  "Samples whose outermost frame could not be checked (an unnamed root).")	\
	X(FRAMES, SUM, WIN(frames), "ignis_frames_resolved_total", "", "frames",	\
	  "Frames resolved, once per distinct stack of a window.")			\
	X(UNKNOWN_FRAMES, SUM, WIN(unknown_frames), "ignis_frames_unknown_total", "",	\
	  "unknown_frames", "Addresses in no mapping ([unknown]), per distinct stack.")	\
	X(UNNAMED_FRAMES, SUM, WIN(unnamed_frames), "ignis_frames_unnamed_total", "",	\
	  "unnamed_frames",								\
	  "Addresses in a mapping that no symbol covers, per distinct stack.")		\
	X(FILE_DENIED_FRAMES, SUM, WIN(file_denied_frames),				\
	  "ignis_frames_file_unreadable_total", "reason=\"denied\"",			\
	  "file_denied_frames",								\
	  "Addresses in a mapped file the agent could not open (address and mapping "	\
	  "kept, no name), per distinct location, by reason: permission denied "	\
	  "(CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, CAP_CHECKPOINT_RESTORE), or another "	\
	  "error (deleted, replaced, not ELF).")						\
	X(FILE_ERROR_FRAMES, SUM, WIN(file_error_frames),				\
	  "ignis_frames_file_unreadable_total", "reason=\"error\"",			\
	  "file_error_frames", "")							\
	X(KERNEL_UNNAMED, SUM, WIN(kernel_unnamed), "ignis_frames_kernel_unnamed_total",	\
	  "", "kernel_unnamed", "Kernel addresses no kallsyms symbol covers.")		\
	X(PY_NAMED, SUM, WIN(python_frames), "ignis_python_frames_symbolized_total",	\
	  "result=\"named\"", "py_named",						\
	  "Python frames symbolized, named or [unnamed Python frame], per distinct "	\
	  "stack.")									\
	X(PY_UNNAMED, SUM, WIN(python_unnamed), "ignis_python_frames_symbolized_total",	\
	  "result=\"unnamed\"", "py_unnamed", "")					\
	X(SYMBOLIZE_ERRORS, SUM, WIN(symbolize_errors),					\
	  "ignis_frames_symbolize_errors_total", "", "symbolize_errors",		\
	  "Frames of objects whose symbols could not be read.")				\
	X(BROKEN_CHAINS, SUM, WIN(broken_chains), "ignis_stacks_broken_chain_total", "",	\
	  "broken_chains",								\
	  "Distinct user stacks cut at a return address in no mapping (a broken "	\
	  "frame-pointer chain).")							\
	X(FP_CUT, SUM, WIN(fp_walks_cut), "ignis_stacks_frame_pointer_cut_total", "",	\
	  "fp_cut",									\
	  "Distinct frame-pointer walks cut where the unwind table shows the function "	\
	  "keeps no frame pointer.")							\
	X(OFFCPU_PROFILED_NS, SUM, WIN(offcpu_ns),					\
	  "ignis_offcpu_profiled_seconds_total", "", "offcpu_ns",			\
	  "Off-CPU time in the profiles, placeholders included.")			\
	X(OFFCPU_TRUNCATED_NS, SUM, WIN(offcpu_truncated_ns),				\
	  "ignis_offcpu_truncated_seconds_total", "", "offcpu_truncated_ns",	\
	  "Off-CPU time on stacks that end in [truncated].")				\
	X(OFFCPU_CAP_DROPPED_NS, SUM, WIN(offcpu_dropped_ns),				\
	  "ignis_offcpu_dropped_seconds_total", "reason=\"profile_size_cap\"",	\
	  "offcpu_cap_dropped_ns", "Off-CPU time lost, by reason.")			\
	X(PROCESSES, WINDOW, WIN(processes), "ignis_window_processes", "", "processes",	\
	  "Distinct processes in the last window's profile.")				\
	/* The window cycle (cycle.c). */						\
	X(WINDOWS, SUM, CYCLE, "ignis_windows_total", "", NULL, "Windows drained.")	\
	X(UNIQUE_STACKS, WINDOW, CYCLE, "ignis_unique_stacks", "", "stacks",		\
	  "Distinct stacks in the last window.")					\
	X(PROFILES_WRITTEN, SUM, CYCLE, "ignis_profiles_written_total", "", NULL,	\
	  "Profiles written to --output-dir.")						\
	X(BYTES_WRITTEN, SUM, CYCLE, "ignis_profile_written_bytes_total", "", "bytes",	\
	  "Bytes written to --output-dir.")						\
	X(WRITE_ERRORS, SUM, CYCLE, "ignis_profile_write_errors_total", "", NULL,	\
	  "Profiles that could not be written.")					\
	/* The sampler and its maps. */							\
	X(CPUS, GAUGE, AGENT(cpus), "ignis_cpus_sampled", "", NULL,			\
	  "CPUs with an attached perf event.")						\
	X(CPUS_DETACHED, GAUGE, AGENT(cpus_detached), "ignis_cpus_detached", "", NULL,	\
	  "Perf events whose BPF link disappeared.")					\
	X(BPF_MAP_BYTES, GAUGE, AGENT(bpf_map_bytes), "ignis_bpf_map_bytes", "", NULL,	\
	  "Kernel memory pinned by the BPF maps.")					\
	/* The process table (proctab.c). */						\
	X(PROCESSES_TRACKED, GAUGE, PROC(images), "ignis_processes_tracked", "", NULL,	\
	  "Process images held by the agent.")						\
	X(CAPTURES, TOTAL, PROC(captures), "ignis_process_captures_total",		\
	  "result=\"ok\"", NULL, "Captures of process mappings.")			\
	X(CAPTURE_ERRORS, TOTAL, PROC(capture_errors), "ignis_process_captures_total",	\
	  "result=\"error\"", NULL, "")							\
	X(PROCESSES_DENIED, GAUGE, PROC(denied), "ignis_processes_unreadable", "", NULL,	\
	  "Process images held whose mappings may not be read (permission denied).")	\
	X(EXITS_MISSED, TOTAL, PROC(exits_missed), "ignis_process_exits_missed_total",	\
	  "", NULL, "Process exits found by the rescan, not by an event.")		\
	X(UNCAPTURED, TOTAL, PROC(uncaptured), "ignis_processes_gone_before_capture_total",	\
	  "", NULL,									\
	  "Processes gone before their mappings were read, named from the file mappings "	\
	  "BPF announced.")								\
	X(BPF_MAPPINGS, TOTAL, PROC(bpf_mappings), "ignis_bpf_mappings_total",		\
	  "result=\"added\"", NULL,							\
	  "File mappings announced by BPF for processes not published yet: added to an "	\
	  "image, known from a capture already, of a file the agent held no object of "	\
	  "(its frames keep their addresses), or of no image held.")			\
	X(BPF_MAPPINGS_KNOWN, TOTAL, PROC(bpf_mappings_known), "ignis_bpf_mappings_total",	\
	  "result=\"known\"", NULL, "")							\
	X(BPF_MAPPINGS_NO_FILE, TOTAL, PROC(bpf_mappings_no_file),			\
	  "ignis_bpf_mappings_total", "result=\"file_unknown\"", NULL, "")		\
	X(BPF_MAPPINGS_NO_IMAGE, TOTAL, PROC(bpf_mappings_no_image),			\
	  "ignis_bpf_mappings_total", "result=\"no_image\"", NULL, "")			\
	X(OBJECTS_LINGERING, GAUGE, PROC(lingering), "ignis_objects_lingering", "", NULL,	\
	  "Files of exited processes kept open a few windows for the next short ones.")	\
	X(DEBUG_FOUND, TOTAL, PROC(debug_files), "ignis_debug_files_total",		\
	  "result=\"found\"", NULL,							\
	  "Separate debug files for binaries without DWARF: used, none found, or "	\
	  "refused (another build).")							\
	X(DEBUG_MISSING, TOTAL, PROC(debug_misses), "ignis_debug_files_total",		\
	  "result=\"missing\"", NULL, "")						\
	X(DEBUG_REFUSED, TOTAL, SYM(debug_files_refused), "ignis_debug_files_total",	\
	  "result=\"refused\"", NULL, "")						\
	X(JIT_MAPS_READ, TOTAL, PROC(perfmaps_read), "ignis_jit_maps_read_total", "",	\
	  NULL, "JIT symbol maps (/tmp/perf-PID.map) read.")				\
	X(JIT_MALFORMED, TOTAL, PROC(perfmap_malformed),				\
	  "ignis_jit_map_lines_malformed_total", "", NULL,				\
	  "Lines of JIT symbol maps skipped as malformed.")				\
	/* The symbolizer. */								\
	X(SYMBOL_HITS, TOTAL, SYM(hits), "ignis_symbolizations_total", "result=\"hit\"",	\
	  NULL, "Address lookups in symbol tables.")					\
	X(SYMBOL_MISSES, TOTAL, SYM(misses), "ignis_symbolizations_total",		\
	  "result=\"miss\"", NULL, "")							\
	X(SYMBOL_ERRORS, TOTAL, SYM(errors), "ignis_symbolizations_total",		\
	  "result=\"error\"", NULL, "")							\
	X(SYMBOL_CACHE_BYTES, GAUGE, SYM(cache_bytes), "ignis_symbol_cache_bytes", "",	\
	  NULL, "Memory held by cached symbol tables.")					\
	X(SYMBOL_TABLES_LOADED, TOTAL, SYM(tables_loaded),				\
	  "ignis_symbol_tables_loaded_total", "", NULL, "Symbol tables parsed.")	\
	X(SYMBOL_TABLES_EVICTED, TOTAL, SYM(tables_evicted),				\
	  "ignis_symbol_tables_evicted_total", "", NULL,				\
	  "Symbol tables dropped to stay within the cache budget.")			\
	X(SYMBOL_TABLES_EXPIRED, TOTAL, SYM(tables_expired),				\
	  "ignis_symbol_tables_expired_total", "", NULL,				\
	  "Symbol tables dropped after --symbol-cache-idle without use.")		\
	X(SYMBOL_TABLES, GAUGE, SYM(tables), "ignis_symbol_tables", "", NULL,		\
	  "Symbol tables cached now.")							\
	X(SYMBOL_ADDR_HITS, TOTAL, SYM(addr_hits),					\
	  "ignis_symbol_address_cache_hits_total", "", NULL,				\
	  "Lookups answered from addresses resolved through DWARF before.")		\
	X(SYMBOL_DWARF_RELEASED, TOTAL, SYM(dwarf_released),				\
	  "ignis_symbol_dwarf_closed_total", "", NULL,					\
	  "DWARF files closed after a window (their sections leave memory; opened again "	\
	  "for addresses not resolved before).")					\
	/* The table unwinder's tables (unwinder.c). */					\
	X(UNWIND_TABLES, GAUGE, UNW(tables), "ignis_unwind_tables", "", NULL,		\
	  "Unwind tables in the BPF row map.")						\
	X(UNWIND_ROWS, GAUGE, UNW(rows), "ignis_unwind_table_rows", "", NULL,		\
	  "Rows in the BPF row map (8 bytes each).")					\
	X(UNWIND_ROW_CAPACITY, GAUGE, AGENT(unwind_row_capacity),			\
	  "ignis_unwind_table_rows_capacity", "", NULL,					\
	  "Rows the BPF row map can hold.")						\
	X(UNWIND_TABLES_BUILT, TOTAL, UNW(tables_built),				\
	  "ignis_unwind_tables_built_total", "", NULL, "Unwind tables built from CFI.")	\
	X(UNWIND_TABLE_ERRORS, TOTAL, UNW(table_errors) + UNW(tables_no_room),		\
	  "ignis_unwind_table_errors_total", "", NULL,					\
	  "Objects left without a table: unreadable CFI, or too large for the row map.")	\
	X(UNWIND_TABLES_EVICTED, TOTAL, UNW(tables_evicted),				\
	  "ignis_unwind_tables_evicted_total", "", NULL,				\
	  "Unused tables dropped from the row map to make room.")			\
	X(UNWIND_TABLES_EVICTED_COLD, TOTAL, UNW(tables_evicted_cold),			\
	  "ignis_unwind_tables_evicted_in_use_total", "", NULL,				\
	  "Tables of running processes dropped from the row map to make room: their "	\
	  "objects were in no stack for two windows, or they were in a large table's way "	\
	  "(rebuilt when sampled again).")						\
	X(UNWIND_TABLES_NO_ROOM, TOTAL, UNW(tables_no_room),				\
	  "ignis_unwind_tables_no_room_total", "", NULL,				\
	  "Tables that found no room in the row map even after eviction: stacks through "	\
	  "their objects end in [truncated] (raise --unwind-table-size).")		\
	X(UNWIND_TABLES_REBUILT, TOTAL, UNW(tables_rebuilt),				\
	  "ignis_unwind_tables_rebuilt_total", "", NULL,				\
	  "Tables built again when room could be made after no room or eviction.")	\
	X(UNWIND_PROCESSES, GAUGE, UNW(processes), "ignis_unwind_processes", "", NULL,	\
	  "Processes unwound with tables.")						\
	X(UNWIND_EXECUTABLES, GAUGE, UNW(executables), "ignis_unwind_executables", "",	\
	  NULL, "Main executables whose table applies to a process before it is "	\
	  "published.")									\
	/* Python processes and code objects (agent/python/). */			\
	X(PY_ATTACHED_TOTAL, TOTAL, PY(results[PY_ATTACH_OK]),				\
	  "ignis_python_processes_total", "result=\"attached\"", NULL,			\
	  "Process images running CPython, by the result of attaching (attached: Python "	\
	  "frames; any other: native frames only).")					\
	X(PY_NOT_READY, TOTAL, PY(results[PY_ATTACH_NOT_READY]),			\
	  "ignis_python_processes_total", "result=\"not_ready\"", NULL, "")		\
	X(PY_UNSUPPORTED, TOTAL, PY(results[PY_ATTACH_UNSUPPORTED]),			\
	  "ignis_python_processes_total", "result=\"unsupported_version\"", NULL, "")	\
	X(PY_FREE_THREADED, TOTAL, PY(results[PY_ATTACH_FREE_THREADED]),		\
	  "ignis_python_processes_total", "result=\"free_threaded\"", NULL, "")		\
	X(PY_LAYOUT_MISMATCH, TOTAL, PY(results[PY_ATTACH_LAYOUT_MISMATCH]),		\
	  "ignis_python_processes_total", "result=\"layout_mismatch\"", NULL, "")	\
	X(PY_TLS_UNSUPPORTED, TOTAL, PY(results[PY_ATTACH_TLS_UNSUPPORTED]),		\
	  "ignis_python_processes_total", "result=\"tls_unsupported\"", NULL, "")	\
	X(PY_ATTACH_FAULT, TOTAL, PY(results[PY_ATTACH_READ_FAULT]),			\
	  "ignis_python_processes_total", "result=\"read_fault\"", NULL, "")		\
	X(PY_PROCESSES, GAUGE, PY(attached), "ignis_python_processes", "", NULL,	\
	  "Python processes attached now.")						\
	X(PY_CODE_READ, TOTAL, PY(code.read), "ignis_python_code_reads_total",		\
	  "result=\"read\"", NULL,							\
	  "Code objects read from a process's memory, by result (stale: freed and its "	\
	  "address reused before it was read; no name).")				\
	X(PY_CODE_STALE, TOTAL, PY(code.stale), "ignis_python_code_reads_total",	\
	  "result=\"stale\"", NULL, "")							\
	X(PY_CODE_FAULT, TOTAL, PY(code.faults), "ignis_python_code_reads_total",	\
	  "result=\"fault\"", NULL, "")							\
	X(PY_CODE_MALFORMED, TOTAL, PY(code.malformed), "ignis_python_code_reads_total",	\
	  "result=\"malformed\"", NULL, "")						\
	X(PY_CODE_UNKNOWN, TOTAL, PY(code_unknown), "ignis_python_code_reads_total",	\
	  "result=\"process_unknown\"", NULL, "")					\
	X(PY_CODE_BYTES, GAUGE, PY(code.bytes), "ignis_python_code_cache_bytes", "",	\
	  NULL, "Memory of the code objects held (names, line tables), bytes.")		\
	/* Shipping to a server (sink_server.c and the uploader). */			\
	X(PROFILES_SENT, TOTAL, SRV(upload.sent), "ignis_profiles_sent_total", "", NULL,	\
	  "Profiles accepted by the server.")						\
	X(BYTES_SENT, TOTAL, SRV(upload.bytes_sent), "ignis_profile_sent_bytes_total", "",	\
	  NULL, "Bytes of profiles sent.")						\
	X(UPLOAD_NETWORK, TOTAL, SRV(upload.errors[UPLOAD_ERR_NETWORK]),			\
	  "ignis_upload_errors_total", "code=\"network\"", NULL,			\
	  "Failed uploads, by class.")							\
	X(UPLOAD_4XX, TOTAL, SRV(upload.errors[UPLOAD_ERR_4XX]), "ignis_upload_errors_total",	\
	  "code=\"4xx\"", NULL, "")							\
	X(UPLOAD_400, TOTAL, SRV(upload.errors[UPLOAD_ERR_400]), "ignis_upload_errors_total",	\
	  "code=\"400\"", NULL, "")							\
	X(UPLOAD_401, TOTAL, SRV(upload.errors[UPLOAD_ERR_401]), "ignis_upload_errors_total",	\
	  "code=\"401\"", NULL, "")							\
	X(UPLOAD_408, TOTAL, SRV(upload.errors[UPLOAD_ERR_408]), "ignis_upload_errors_total",	\
	  "code=\"408\"", NULL, "")							\
	X(UPLOAD_413, TOTAL, SRV(upload.errors[UPLOAD_ERR_413]), "ignis_upload_errors_total",	\
	  "code=\"413\"", NULL, "")							\
	X(UPLOAD_429, TOTAL, SRV(upload.errors[UPLOAD_ERR_429]), "ignis_upload_errors_total",	\
	  "code=\"429\"", NULL, "")							\
	X(UPLOAD_5XX, TOTAL, SRV(upload.errors[UPLOAD_ERR_5XX]), "ignis_upload_errors_total",	\
	  "code=\"5xx\"", NULL, "")							\
	X(UPLOAD_RETRIES, TOTAL, SRV(upload.retries), "ignis_upload_retries_total", "", NULL,	\
	  "Failed uploads that are retried (network errors, 408, 429, 5xx).")		\
	X(DROPPED_QUEUE_FULL, TOTAL, SRV(upload.dropped[DROP_QUEUE_FULL]),			\
	  "ignis_profiles_dropped_total", "reason=\"queue_full\"", NULL,		\
	  "Profiles given up, by reason: queue and spool full, older than the server "	\
	  "accepts, refused by the server, queued at exit without a spool, spool "	\
	  "damage.")									\
	X(DROPPED_TOO_OLD, TOTAL, SRV(upload.dropped[DROP_TOO_OLD]),				\
	  "ignis_profiles_dropped_total", "reason=\"too_old\"", NULL, "")		\
	X(DROPPED_REJECTED, TOTAL, SRV(upload.dropped[DROP_REJECTED]),				\
	  "ignis_profiles_dropped_total", "reason=\"rejected\"", NULL, "")		\
	X(DROPPED_SHUTDOWN, TOTAL, SRV(upload.dropped[DROP_SHUTDOWN]),				\
	  "ignis_profiles_dropped_total", "reason=\"shutdown\"", NULL, "")		\
	X(DROPPED_SPOOL_ERROR, TOTAL, SRV(upload.dropped[DROP_SPOOL_ERROR]),			\
	  "ignis_profiles_dropped_total", "reason=\"spool_error\"", NULL, "")		\
	X(PROFILES_SPLIT, TOTAL, SRV(profiles_split), "ignis_profiles_split_total", "",	\
	  NULL, "Server profiles split by process to stay under the server's limits.")	\
	X(SAMPLES_FOLDED, TOTAL, SRV(samples_folded), "ignis_samples_folded_total", "",	\
	  NULL, "Samples folded into [other stacks] to stay under the server's limits.")	\
	X(QUEUE_PROFILES, GAUGE, SRV(upload.queued), "ignis_upload_queue_profiles", "", NULL,	\
	  "Profiles waiting to be sent.")						\
	X(QUEUE_BYTES, GAUGE, SRV(upload.queue_bytes), "ignis_upload_queue_bytes", "", NULL,	\
	  "Bytes of profiles waiting in memory.")					\
	X(SPOOL_BYTES, GAUGE, SRV(upload.spool_bytes), "ignis_upload_spool_bytes", "", NULL,	\
	  "Bytes of profiles waiting on disk.")
/* clang-format on */

enum stat_id {
#define STAT_ID(id, ...) CNT_##id,
	IGNIS_BPF_STATS(STAT_ID) IGNIS_AGENT_STATS(STAT_ID)
#undef STAT_ID
		CNT_NR,
};

enum stat_kind {
	STAT_KIND_SUM,
	STAT_KIND_WINDOW,
	STAT_KIND_TOTAL,
	STAT_KIND_GAUGE,
};

/* One row of the table, without its source (which only the accounting evaluates). */
struct stat_def {
	enum stat_kind kind;
	int bpf;	    /* 1: a BPF row (summed from the drained generation) */
	const char *metric; /* Prometheus family */
	const char *label;  /* 'name="value"' or "" */
	const char *key;    /* in the window's debug line, or NULL */
	const char *help;   /* on the family's first row, "" on the others */
};

/* Every row, indexed by enum stat_id. */
extern const struct stat_def stat_defs[CNT_NR];

/* A value for every row: one window's figures, or the totals since start. */
struct counters {
	uint64_t v[CNT_NR];
};

/* The samples BPF dropped in a window: the BPF rows of ignis_samples_dropped_total. */
uint64_t counters_bpf_drops(const struct counters *c);

/*
 * Write " key=value" for every SUM and WINDOW row with a key into buf (size bytes, always
 * NUL-terminated), as the window's debug line shows them. With nonzero_only, rows whose
 * value is 0 are left out (the profile's comment). Returns the length it needed, as snprintf.
 */
size_t counters_format_window(const struct counters *c, int nonzero_only, char *buf, size_t size);

#endif /* IGNIS_STATS_H */
