// SPDX-License-Identifier: Apache-2.0
/* Process metadata from /proc/PID/cgroup, for each runtime's layout (fixtures written from
 * the runtimes' cgroup naming: containerd, CRI-O, Docker, podman, systemd; v1 and v2). */
#include <errno.h>

#include "unit.h"

#include "../../agent/collect/metadata.h"

#define ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID "1f5e2a8c-3b4d-4e6f-8a9b-0c1d2e3f4a5b"
#define UID_ "1f5e2a8c_3b4d_4e6f_8a9b_0c1d2e3f4a5b"

struct expect {
	const char *name;
	const char *cgroup;
	const char *container_id;
	const char *pod_uid;
	const char *unit;
	enum container_runtime runtime;
};

static const struct expect cases[] = {
	{ "containerd, systemd driver, v2",
	  "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
	  ".slice/cri-containerd-" ID ".scope\n",
	  ID, UID, "", RUNTIME_CONTAINERD },
	{ "containerd, cgroupfs driver, v1",
	  "12:memory:/kubepods/burstable/pod" UID "/" ID "\n11:cpu,cpuacct:/kubepods/burstable/pod" UID
	  "/" ID "\n1:name=systemd:/kubepods/burstable/pod" UID "/" ID "\n",
	  ID, UID, "", RUNTIME_OTHER },
	{ "guaranteed QoS pod, v2 cgroupfs",
	  "0::/kubepods/pod" UID "/" ID "\n", ID, UID, "", RUNTIME_OTHER },
	{ "CRI-O, systemd driver",
	  "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
	  ".slice/crio-" ID ".scope\n",
	  ID, UID, "", RUNTIME_CRIO },
	{ "CRI-O's monitor is no container",
	  "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
	  ".slice/crio-conmon-" ID ".scope\n",
	  "", UID, "", RUNTIME_NONE },
	{ "Docker, systemd driver", "0::/system.slice/docker-" ID ".scope\n", ID, "", "",
	  RUNTIME_DOCKER },
	{ "Docker, cgroupfs driver, v1",
	  "13:pids:/docker/" ID "\n4:memory:/docker/" ID "\n1:name=systemd:/docker/" ID "\n0::/\n",
	  ID, "", "", RUNTIME_DOCKER },
	{ "rootless podman",
	  "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID ".scope\n", ID,
	  "", "", RUNTIME_PODMAN },
	{ "podman, cgroupfs", "0::/libpod_parent/libpod-" ID "\n", ID, "", "", RUNTIME_PODMAN },
	{ "systemd service", "0::/system.slice/nginx.service\n", "", "", "nginx.service",
	  RUNTIME_NONE },
	{ "user service", "0::/user.slice/user-1000.slice/user@1000.service/app.slice/sync.service\n",
	  "", "", "sync.service", RUNTIME_NONE },
	{ "session scope: no unit", "0::/user.slice/user-1000.slice/session-2.scope\n", "", "", "",
	  RUNTIME_NONE },
	{ "hybrid: v2 root, v1 says the service",
	  "9:name=systemd:/system.slice/cron.service\n4:memory:/system.slice/cron.service\n0::/\n", "",
	  "", "cron.service", RUNTIME_NONE },
	{ "root", "0::/\n", "", "", "", RUNTIME_NONE },
	{ "a short id is not an id", "0::/system.slice/docker-0123abcd.scope\n", "", "", "",
	  RUNTIME_NONE },
	{ "upper-case hex is not an id", "0::/docker/0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef\n",
	  "", "", "", RUNTIME_NONE },
};

static void test_layouts(void **state)
{
	struct proc_meta m;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct expect *e = &cases[i];

		assert_int_equal(metadata_parse_cgroup(e->cgroup, &m), 0);
		if (strcmp(m.container_id, e->container_id) || strcmp(m.pod_uid, e->pod_uid) ||
		    strcmp(m.unit, e->unit) || m.runtime != e->runtime)
			fail_msg("%s: got container \"%s\" pod \"%s\" unit \"%s\" runtime %s", e->name,
				 m.container_id, m.pod_uid, m.unit, container_runtime_name(m.runtime));
	}
}

static void test_not_a_cgroup_file(void **state)
{
	struct proc_meta m;

	(void)state;
	assert_int_equal(metadata_parse_cgroup("hello world\n", &m), -EINVAL);
	assert_int_equal(metadata_parse_cgroup("0::relative\n", &m), -EINVAL);
	assert_int_equal(metadata_parse_cgroup("", &m), 0);
}

UNIT_MAIN("metadata", cmocka_unit_test(test_layouts),
	  cmocka_unit_test(test_not_a_cgroup_file))
