// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "procfs.h"

int procfs_open_pid(const char *proc_root, uint32_t pid)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%u", proc_root, pid);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	return fd;
}

long procfs_read_file(int dirfd, const char *name, size_t max, char **out)
{
	size_t len = 0, cap = 0;
	char *buf = NULL;
	ssize_t n;
	int fd, err = 0;

	*out = NULL;
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			if (cap >= max + 1) {
				err = -E2BIG;
				break;
			}
			err = grow_array((void **)&buf, &cap, len + 4096 + 1, 1);
			if (err)
				break;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			err = -E2BIG;
			break;
		}
	}
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	if (!buf) {
		buf = malloc(1);
		if (!buf)
			return -ENOMEM;
	}
	buf[len] = '\0';
	*out = buf;
	return (long)len;
}

int procfs_parse_stat_start(const char *stat, uint64_t *ticks)
{
	const char *p = strrchr(stat, ')');
	unsigned long long v;
	char *end;
	int field;

	/* "pid (comm) state ppid ...": comm may hold spaces and parentheses; field 3 (state)
	 * follows the last ')', and starttime is field 22. */
	if (!p)
		return -EINVAL;
	p++;
	for (field = 3; field <= 22; field++) {
		if (*p != ' ')
			return -EINVAL;
		p++;
		if (field == 22)
			break;
		p += strcspn(p, " ");
	}
	errno = 0;
	v = strtoull(p, &end, 10);
	if (errno || end == p || (*end != ' ' && *end != '\n' && *end))
		return -EINVAL;
	*ticks = v;
	return 0;
}

int procfs_start_ticks(int pid_fd, uint64_t *ticks)
{
	char *stat;
	long n;
	int err;

	n = procfs_read_file(pid_fd, "stat", 4096, &stat);
	if (n < 0)
		return (int)n;
	err = procfs_parse_stat_start(stat, ticks);
	free(stat);
	return err;
}

uint64_t procfs_ns_to_ticks(uint64_t ns)
{
	static uint64_t ns_per_tick;

	if (!ns_per_tick) {
		long hz = sysconf(_SC_CLK_TCK);

		ns_per_tick = NSEC_PER_SEC / (uint64_t)(hz > 0 ? hz : 100);
	}
	return ns / ns_per_tick;
}

void procfs_comm(int pid_fd, char *buf, size_t size)
{
	char *comm;
	long n;

	if (!size)
		return;
	buf[0] = '\0';
	n = procfs_read_file(pid_fd, "comm", 64, &comm);
	if (n < 0)
		return;
	comm[strcspn(comm, "\n")] = '\0';
	snprintf(buf, size, "%s", comm);
	free(comm);
}

uint64_t procfs_exe_inode(int pid_fd)
{
	struct stat st;

	if (fstatat(pid_fd, "exe", &st, 0))
		return 0;
	return st.st_ino;
}

int procfs_open_in_root(int root_fd, const char *path)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	fd = syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
	if (fd < 0)
		return -errno;
	return (int)fd;
}

int procfs_open_map_file(int pid_fd, uint64_t start, uint64_t end)
{
	char name[64];
	int fd;

	snprintf(name, sizeof(name), "map_files/%llx-%llx", (unsigned long long)start,
		 (unsigned long long)end);
	fd = openat(pid_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	return fd;
}

int notes_build_id(const uint8_t *notes, size_t len, char *buf, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	size_t off = 0, i;

	/* Each note: namesz, descsz, type (u32 each), name and desc padded to 4 bytes. */
	while (off + 12 <= len) {
		uint32_t namesz, descsz, type;
		size_t name_off = off + 12, desc_off, next;

		memcpy(&namesz, notes + off, 4);
		memcpy(&descsz, notes + off + 4, 4);
		memcpy(&type, notes + off + 8, 4);
		desc_off = name_off + (((size_t)namesz + 3) & ~(size_t)3);
		next = desc_off + (((size_t)descsz + 3) & ~(size_t)3);
		if (desc_off > len || next > len || next <= off)
			return -EINVAL;
		if (type == 3 /* NT_GNU_BUILD_ID */ && namesz == 4 &&
		    !memcmp(notes + name_off, "GNU", 4)) {
			if (!descsz || 2 * (size_t)descsz + 1 > size)
				return -E2BIG;
			for (i = 0; i < descsz; i++) {
				buf[2 * i] = hex[notes[desc_off + i] >> 4];
				buf[2 * i + 1] = hex[notes[desc_off + i] & 15];
			}
			buf[2 * i] = '\0';
			return 0;
		}
		off = next;
	}
	return -ENOENT;
}

int sysfs_kernel_build_id(char *buf, size_t size)
{
	char *notes;
	long n;
	int err;

	n = procfs_read_file(AT_FDCWD, "/sys/kernel/notes", 65536, &notes);
	if (n < 0)
		return (int)n;
	err = notes_build_id((const uint8_t *)notes, (size_t)n, buf, size);
	free(notes);
	return err;
}

long procfs_tgid_of(const char *proc_root, uint32_t pid)
{
	unsigned int tgid = 0;
	char *status, *line;
	int fd = procfs_open_pid(proc_root, pid);
	long n;

	if (fd < 0)
		return -ESRCH;
	n = procfs_read_file(fd, "status", 65536, &status);
	close(fd);
	if (n < 0)
		return 0;
	line = strstr(status, "\nTgid:");
	if (line && sscanf(line, "\nTgid: %u", &tgid) != 1)
		tgid = 0;
	free(status);
	return tgid;
}
