// SPDX-License-Identifier: Apache-2.0
/*
 * What the agent can see of the host: its PID namespace and its capabilities (hostview.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostview.h"
#include "procfs.h"

/* The text after "\nNAME:" (or "NAME:" at the start), NULL when absent. */
static const char *field(const char *status, const char *name)
{
	size_t len = strlen(name);
	const char *p = status;

	while (p && *p) {
		if (!strncmp(p, name, len) && p[len] == ':')
			return p + len + 1;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

int hostview_parse_nspid(const char *status, uint32_t *inner)
{
	const char *p = field(status, "NSpid");
	unsigned long v = 0;
	int n = 0;
	char *end;

	if (!p)
		return -ENOENT;
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p || *p == '\n')
			break;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		errno = 0;
		v = strtoul(p, &end, 10);
		if (errno || !v || v > UINT32_MAX)
			return -EINVAL;
		p = end;
		n++;
	}
	if (!n)
		return -EINVAL;
	if (inner)
		*inner = (uint32_t)v;
	return n;
}

int hostview_parse_capeff(const char *status, uint64_t *caps)
{
	const char *p = field(status, "CapEff");
	unsigned long long v;
	char *end;

	if (!p)
		return -ENOENT;
	while (*p == ' ' || *p == '\t')
		p++;
	/* The kernel prints 16 hex digits; anything but hex up to the line's end is malformed. */
	if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F')))
		return -EINVAL;
	errno = 0;
	v = strtoull(p, &end, 16);
	if (errno || end - p > 16 || (*end && *end != '\n'))
		return -EINVAL;
	*caps = v;
	return 0;
}

static long read_status(const char *proc_root, char **text)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/self/status", proc_root);
	return procfs_read_file(AT_FDCWD, path, 65536, text);
}

int hostview_read_pidns(const char *proc_root, pid_t self, struct hostview_pidns *out)
{
	char path[4096], link[64];
	struct stat st;
	char *status = NULL;
	ssize_t n;
	long len;

	memset(out, 0, sizeof(*out));
	out->self = self;
	snprintf(path, sizeof(path), "%s/self", proc_root);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0) {
		out->proc_self = errno == EINVAL ? -EINVAL : -errno;
	} else {
		link[n] = '\0';
		out->proc_self = strtol(link, NULL, 10);
		if (out->proc_self <= 0)
			out->proc_self = -EINVAL;
	}
	snprintf(path, sizeof(path), "%s/self/ns/pid", proc_root);
	if (!stat(path, &st))
		out->ns_inode = st.st_ino;
	len = read_status(proc_root, &status);
	if (len < 0) {
		out->nspid_levels = (int)len;
		return (int)len;
	}
	out->nspid_levels = hostview_parse_nspid(status, NULL);
	free(status);
	return 0;
}

const char *hostview_pidns_problem(const struct hostview_pidns *f)
{
	if (f->proc_self < 0)
		return "/proc is not the procfs of the agent's PID namespace (/proc/self names no "
		       "process)";
	if (f->proc_self != f->self)
		return "/proc belongs to another PID namespace than the agent (/proc/self is not "
		       "the agent's pid)";
	if (f->nspid_levels > 1)
		return "the agent runs in a nested PID namespace (NSpid in /proc/self/status has "
		       "more than one id)";
	if (f->ns_inode && f->ns_inode != HOSTVIEW_INIT_PID_NS_INO)
		return "the agent runs in a PID namespace of its own, not the host's "
		       "(/proc/self/ns/pid)";
	return NULL;
}

int hostview_read_caps(const char *proc_root, struct hostview_caps *out)
{
	char path[4096], *text = NULL;
	long len;
	int err;

	memset(out, 0, sizeof(*out));
	out->euid = geteuid();
	out->cap_last = -1;
	snprintf(path, sizeof(path), "%s/sys/kernel/cap_last_cap", proc_root);
	if (procfs_read_file(AT_FDCWD, path, 64, &text) > 0) {
		long v = strtol(text, NULL, 10);

		if (v > 0 && v < 64)
			out->cap_last = (int)v;
	}
	free(text);
	len = read_status(proc_root, &text);
	if (len < 0)
		return (int)len;
	err = hostview_parse_capeff(text, &out->effective);
	free(text);
	return err;
}

bool hostview_split_bpf_caps(const struct hostview_caps *c)
{
	return c->cap_last < 0 || c->cap_last >= HOSTVIEW_CAP_BPF;
}

const char *hostview_missing_bpf_caps(const struct hostview_caps *c, char *buf, size_t size)
{
	bool bpf, perfmon;

	if (size)
		buf[0] = '\0';
	if (hostview_has(c, HOSTVIEW_CAP_SYS_ADMIN))
		return buf; /* does the work of both, on every kernel */
	if (!hostview_split_bpf_caps(c)) {
		snprintf(buf, size, "CAP_SYS_ADMIN");
		return buf;
	}
	bpf = hostview_has(c, HOSTVIEW_CAP_BPF);
	perfmon = hostview_has(c, HOSTVIEW_CAP_PERFMON);
	snprintf(buf, size, "%s%s%s", bpf ? "" : "CAP_BPF", !bpf && !perfmon ? " and " : "",
		 perfmon ? "" : "CAP_PERFMON");
	return buf;
}
