// SPDX-License-Identifier: Apache-2.0
/*
 * /proc/PID/maps lines, as printed by show_map_vma() in the kernel's fs/proc/task_mmu.c:
 *
 *   start-end perms offset major:minor inode [padding] [path]
 *   7f2c1e428000-7f2c1e5bd000 r-xp 00028000 fd:01 1054866    /usr/lib/libc.so.6
 *
 * Numbers are hex except the inode (decimal). The path is everything after the padding; it
 * may contain spaces, ends in " (deleted)" when the file was unlinked, and newlines in it
 * are escaped by the kernel as "\012", so one mapping is always one line.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer.h"

#define DELETED_SUFFIX " (deleted)"

/* Parse an unsigned number in base `base` ending at `stop`; advance *p past the stop char. */
static int parse_num(char **p, int base, char stop, uint64_t *out)
{
	char *end;

	if (!**p || **p == '-' || **p == '+' || **p == ' ')
		return -EINVAL;
	errno = 0;
	*out = strtoull(*p, &end, base);
	if (errno || end == *p || *end != stop)
		return -EINVAL;
	*p = stop ? end + 1 : end;
	return 0;
}

int procmaps_parse_line(char *line, struct procmaps_entry *e)
{
	char *p = line, *path;
	uint64_t major, minor;
	size_t len;

	memset(e, 0, sizeof(*e));
	if (parse_num(&p, 16, '-', &e->start) || parse_num(&p, 16, ' ', &e->end) ||
	    e->end < e->start)
		return -EINVAL;

	if (strnlen(p, 5) < 5 || p[4] != ' ')
		return -EINVAL;
	if ((p[0] != 'r' && p[0] != '-') || (p[1] != 'w' && p[1] != '-') ||
	    (p[2] != 'x' && p[2] != '-') || (p[3] != 'p' && p[3] != 's'))
		return -EINVAL;
	e->read = p[0] == 'r';
	e->write = p[1] == 'w';
	e->exec = p[2] == 'x';
	e->shared = p[3] == 's';
	p += 5;

	if (parse_num(&p, 16, ' ', &e->offset) || parse_num(&p, 16, ':', &major) ||
	    parse_num(&p, 16, ' ', &minor) || major > UINT32_MAX || minor > UINT32_MAX)
		return -EINVAL;
	e->dev_major = (uint32_t)major;
	e->dev_minor = (uint32_t)minor;

	/* The inode ends at a space, or at the end of the line for unnamed mappings. */
	len = strcspn(p, " \n");
	if (len == 0)
		return -EINVAL;
	if (p[len] == '\n' || p[len] == '\0') {
		p[len] = '\0';
		if (parse_num(&p, 10, '\0', &e->inode))
			return -EINVAL;
		e->path = p; /* the empty string at the end of the line */
		return 0;
	}
	p[len] = '\0';
	if (parse_num(&p, 10, '\0', &e->inode))
		return -EINVAL;
	p++; /* past the NUL that replaced the space */

	path = p + strspn(p, " ");
	len = strlen(path);
	if (len && path[len - 1] == '\n')
		path[--len] = '\0';
	if (len >= sizeof(DELETED_SUFFIX) - 1 &&
	    !strcmp(path + len - (sizeof(DELETED_SUFFIX) - 1), DELETED_SUFFIX)) {
		len -= sizeof(DELETED_SUFFIX) - 1;
		path[len] = '\0';
		e->deleted = true;
	}
	e->path = path;
	return 0;
}
