// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <sys/uio.h>

#include "pymem.h"

int pymem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n;

	if (!len)
		return 0;
	if (!addr || addr + len < addr)
		return -EFAULT;
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

int pymem_read_u64(pid_t pid, uint64_t addr, uint64_t *v)
{
	return pymem_read(pid, addr, v, sizeof(*v));
}
