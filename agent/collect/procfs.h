/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading other processes' /proc entries and opening their files safely.
 *
 * Everything is read relative to a descriptor of /proc/PID opened once: if the process
 * exits and its PID is reused meanwhile, reads through the old descriptor fail with ESRCH
 * instead of describing the new process. Files of a process are opened inside its own root
 * (/proc/PID/root) with openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS), so a symlink in a
 * container resolves inside the container and never out of it, or through
 * /proc/PID/map_files, the kernel's own reference to a mapped file.
 */
#ifndef IGNIS_PROCFS_H
#define IGNIS_PROCFS_H

#include <stddef.h>
#include <stdint.h>

#include "common/ignis.h"

/* Open proc_root/PID (proc_root is "/proc" outside tests). Returns an fd or -errno (-ESRCH
 * when the process does not exist). */
int procfs_open_pid(const char *proc_root, uint32_t pid) __must_check;

/*
 * Read the whole of a small file `name` under dirfd into a NUL-terminated malloc'd buffer
 * (*out, the caller frees), failing with -E2BIG past max bytes. Returns the length or -errno.
 */
long procfs_read_file(int dirfd, const char *name, size_t max, char **out) __must_check;

/*
 * The process (tgid) that thread id pid belongs to, from proc_root/PID/status. Returns the
 * tgid; 0 when the status cannot be read or names none (the thread is exiting); -ESRCH when
 * there is no such thread.
 */
long procfs_tgid_of(const char *proc_root, uint32_t pid);

/* Start time of the process, in clock ticks since boot (field 22 of /proc/PID/stat). */
int procfs_start_ticks(int pid_fd, uint64_t *ticks) __must_check;

/* Parse the start time out of the text of /proc/PID/stat. Returns 0 or -EINVAL. */
int procfs_parse_stat_start(const char *stat, uint64_t *ticks) __must_check;

/* Convert a task's start_boottime (ns) to the clock ticks /proc/PID/stat shows. */
uint64_t procfs_ns_to_ticks(uint64_t ns);

/* The process name (/proc/PID/comm) into buf; "" when unreadable. */
void procfs_comm(int pid_fd, char *buf, size_t size);

/* Inode of the executable (stat of /proc/PID/exe), 0 when unreadable. */
uint64_t procfs_exe_inode(int pid_fd);

/*
 * Open `path` (absolute, as a process sees it) inside the root `root_fd`, read-only and
 * close-on-exec, never leaving that root and never following magic links. Returns an fd
 * or -errno.
 */
int procfs_open_in_root(int root_fd, const char *path) __must_check;

/* Open the file mapped at [start, end) through /proc/PID/map_files. Returns an fd or -errno
 * (-EPERM without CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE). */
int procfs_open_map_file(int pid_fd, uint64_t start, uint64_t end) __must_check;

/*
 * The running kernel's GNU build ID from /sys/kernel/notes (ELF notes), as lowercase hex
 * into buf. Returns 0, or -ENOENT when the kernel has none, or -errno.
 */
int sysfs_kernel_build_id(char *buf, size_t size) __must_check;

/* Parse a block of ELF notes (4-byte aligned, as /sys/kernel/notes) for NT_GNU_BUILD_ID. */
int notes_build_id(const uint8_t *notes, size_t len, char *buf, size_t size) __must_check;

#endif /* IGNIS_PROCFS_H */
