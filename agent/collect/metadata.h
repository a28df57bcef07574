/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Process metadata: what a process's cgroup says about where it runs. The container id, the
 * Kubernetes pod UID and the systemd unit are read from /proc/PID/cgroup (cgroups(7)), whose
 * paths the container runtimes and systemd name after them:
 *
 *   v2, systemd driver, containerd:  0::/kubepods.slice/kubepods-burstable.slice/
 *                                    kubepods-burstable-pod<uid_with_underscores>.slice/
 *                                    cri-containerd-<64 hex>.scope
 *   v1, cgroupfs driver:             4:memory:/kubepods/burstable/pod<uid>/<64 hex>
 *   CRI-O:                           .../crio-<64 hex>.scope  (crio-conmon-... is its monitor)
 *   Docker:                          0::/system.slice/docker-<64 hex>.scope, or /docker/<hex>
 *   podman:                          .../libpod-<64 hex>.scope, or /libpod_parent/libpod-<hex>
 *   systemd:                         0::/system.slice/nginx.service
 *
 * The file is the process's own and hostile: only the shapes above are read from it.
 */
#ifndef IGNIS_METADATA_H
#define IGNIS_METADATA_H

#include <stddef.h>

#include "common/ignis.h"

enum container_runtime {
	RUNTIME_NONE = 0,
	RUNTIME_DOCKER,
	RUNTIME_CONTAINERD,
	RUNTIME_CRIO,
	RUNTIME_PODMAN,
	RUNTIME_OTHER, /* a bare 64-hex id, e.g. under a cgroupfs kubepods tree */
};

struct proc_meta {
	char container_id[65]; /* lowercase hex, "" if none */
	char pod_uid[37];      /* 8-4-4-4-12 with dashes, "" if none */
	char unit[128];	       /* systemd unit ("nginx.service"), "" if none */
	enum container_runtime runtime;
};

/*
 * Parse the text of /proc/PID/cgroup into m (zeroed first). The cgroup v2 line is preferred;
 * cgroup v1 lines fill what it lacks. Returns 0 (also when nothing was found) or -EINVAL for
 * text that is not a cgroup file.
 */
int metadata_parse_cgroup(const char *text, struct proc_meta *m) __must_check;

/* "docker", "containerd", "cri-o", "podman", "other" or "". */
const char *container_runtime_name(enum container_runtime r);

#endif /* IGNIS_METADATA_H */
