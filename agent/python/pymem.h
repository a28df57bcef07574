/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading another process's memory (process_vm_readv(2)) for the Python attach and the code
 * objects. Every byte read is hostile input: callers bound what they read and check what they
 * find.
 */
#ifndef IGNIS_PYMEM_H
#define IGNIS_PYMEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/ignis.h"

/*
 * Read len bytes at addr of process pid into buf. Returns 0, or -EFAULT (not all of it is
 * mapped), -ESRCH (the process is gone), -EPERM, -EINVAL.
 */
int pymem_read(pid_t pid, uint64_t addr, void *buf, size_t len) __must_check;

/* A pointer-sized value at addr. Returns 0 or as pymem_read(). */
int pymem_read_u64(pid_t pid, uint64_t addr, uint64_t *v) __must_check;

#endif /* IGNIS_PYMEM_H */
