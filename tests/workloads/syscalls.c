// SPDX-License-Identifier: Apache-2.0
/*
 * syscalls [SECONDS]: main -> do_reads -> sys_read, reading /dev/zero in 1 MiB chunks so that
 * most time is spent in the kernel (clearing user memory), under the program's own frames.
 * The system call is issued inline so that no frameless libc wrapper hides sys_read.
 */
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "workload.h"

static char buf[1 << 20];
static volatile long sink;

NOINLINE static void note(long n)
{
	sink += n;
}

NOINLINE static long sys_read(int fd, void *p, unsigned long len)
{
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_read), "D"((long)fd), "S"(p), "d"(len)
			 : "rcx", "r11", "memory");
	note(ret);
	return ret;
}

NOINLINE static void do_reads(int fd, double seconds)
{
	struct until end = until_start(seconds);

	while (!until_over(&end))
		sys_read(fd, buf, sizeof(buf));
}

int main(int argc, char **argv)
{
	int fd = open("/dev/zero", O_RDONLY);

	if (fd < 0)
		return 1;
	do_reads(fd, arg_seconds(argc, argv, 1, 5));
	close(fd);
	return 0;
}
