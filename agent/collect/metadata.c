// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metadata.h"

static bool is_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* Container id in one path segment: "<prefix><64 hex>[.scope]" or a bare 64-hex name. */
static bool container_of(const char *seg, size_t len, struct proc_meta *m)
{
	static const struct {
		const char *prefix;
		enum container_runtime runtime;
	} prefixes[] = {
		{ "cri-containerd-", RUNTIME_CONTAINERD },
		{ "crio-", RUNTIME_CRIO },
		{ "docker-", RUNTIME_DOCKER },
		{ "libpod-", RUNTIME_PODMAN },
		{ "", RUNTIME_OTHER },
	};
	size_t i, plen;

	if (len > 6 && !memcmp(seg + len - 6, ".scope", 6))
		len -= 6;
	for (i = 0; i < ARRAY_SIZE(prefixes); i++) {
		plen = strlen(prefixes[i].prefix);
		if (len != plen + 64 || memcmp(seg, prefixes[i].prefix, plen) ||
		    !is_hex(seg + plen, 64))
			continue;
		memcpy(m->container_id, seg + plen, 64);
		m->container_id[64] = '\0';
		m->runtime = prefixes[i].runtime;
		return true;
	}
	return false;
}

/* Pod UID in "pod<uid>" or "kubepods-<qos>-pod<uid_with_underscores>.slice". */
static bool pod_of(const char *seg, size_t len, struct proc_meta *m)
{
	const char *p = NULL;
	size_t i, n;

	for (i = 0; i + 3 < len; i++) {
		if (!memcmp(seg + i, "pod", 3) && (i == 0 || seg[i - 1] == '-')) {
			p = seg + i + 3;
			break;
		}
	}
	if (!p)
		return false;
	n = (size_t)(seg + len - p);
	if (n > 6 && !memcmp(p + n - 6, ".slice", 6))
		n -= 6;
	if (n != 36)
		return false;
	for (i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		char c = p[i];

		if (dash ? (c != '-' && c != '_') : !is_hex(&c, 1))
			return false;
		m->pod_uid[i] = dash ? '-' : c;
	}
	m->pod_uid[36] = '\0';
	return true;
}

/* Read one cgroup path, filling only what m does not have yet. */
static void parse_path(const char *path, struct proc_meta *m)
{
	struct proc_meta found = { 0 };
	const char *seg = path, *end, *parent = NULL;
	size_t parent_len = 0;

	while (*seg) {
		size_t len;

		while (*seg == '/')
			seg++;
		end = strchr(seg, '/');
		len = end ? (size_t)(end - seg) : strlen(seg);
		if (!len)
			break;
		/* The innermost match wins: later segments overwrite earlier ones. A bare id is
		 * Docker's when it sits under /docker (its cgroupfs driver). */
		if (container_of(seg, len, &found) && found.runtime == RUNTIME_OTHER &&
		    parent_len == 6 && !memcmp(parent, "docker", 6))
			found.runtime = RUNTIME_DOCKER;
		pod_of(seg, len, &found);
		if (len > 8 && len < sizeof(found.unit) && !memcmp(seg + len - 8, ".service", 8)) {
			memcpy(found.unit, seg, len);
			found.unit[len] = '\0';
		}
		parent = seg;
		parent_len = len;
		seg += len;
	}
	if (!m->container_id[0] && found.container_id[0]) {
		memcpy(m->container_id, found.container_id, sizeof(m->container_id));
		m->runtime = found.runtime;
	}
	if (!m->pod_uid[0] && found.pod_uid[0])
		memcpy(m->pod_uid, found.pod_uid, sizeof(m->pod_uid));
	/* A unit is where a process runs only when no container says otherwise. */
	if (!m->unit[0] && found.unit[0] && !found.container_id[0])
		memcpy(m->unit, found.unit, sizeof(m->unit));
}

int metadata_parse_cgroup(const char *text, struct proc_meta *m)
{
	char *copy, *line, *next;
	int pass;

	memset(m, 0, sizeof(*m));
	copy = strdup(text);
	if (!copy)
		return -ENOMEM;
	/* Pass 0: the v2 line ("0::/path"); pass 1: the v1 hierarchies. */
	for (pass = 0; pass < 2; pass++) {
		strcpy(copy, text);
		for (line = copy; line && *line; line = next) {
			char *c1, *c2;

			next = strchr(line, '\n');
			if (next)
				*next++ = '\0';
			c1 = strchr(line, ':');
			c2 = c1 ? strchr(c1 + 1, ':') : NULL;
			if (!c2 || c2[1] != '/') {
				free(copy);
				return -EINVAL;
			}
			if ((pass == 0) != (!strncmp(line, "0::", 3)))
				continue;
			parse_path(c2 + 1, m);
		}
	}
	free(copy);
	return 0;
}

const char *container_runtime_name(enum container_runtime r)
{
	switch (r) {
	case RUNTIME_DOCKER:
		return "docker";
	case RUNTIME_CONTAINERD:
		return "containerd";
	case RUNTIME_CRIO:
		return "cri-o";
	case RUNTIME_PODMAN:
		return "podman";
	case RUNTIME_OTHER:
		return "other";
	default:
		return "";
	}
}
