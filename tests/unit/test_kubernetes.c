// SPDX-License-Identifier: Apache-2.0
/* Pod objects of the Kubernetes API (v1 Pod) to the names a lookup returns. */
#include <errno.h>

#include "unit.h"

#include "../../agent/collect/kubernetes.h"

#define CID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static const char pod[] =
	"{\"metadata\":{\"name\":\"web-1\",\"namespace\":\"shop\","
	"\"uid\":\"1f5e2a8c-3b4d-4e6f-8a9b-0c1d2e3f4a5b\","
	"\"labels\":{\"app.kubernetes.io/name\":\"store\",\"team\":\"a\"},"
	"\"annotations\":{\"pyroscope.io/service_name\":\"shop-web\"}},"
	"\"status\":{\"containerStatuses\":[{\"name\":\"web\",\"containerID\":\"containerd://" CID
	"\"},{\"name\":\"sidecar\",\"containerID\":\"containerd://short\"}],"
	"\"initContainerStatuses\":[{\"name\":\"init\"}]}}";

static void test_pod(void **state)
{
	char *labels[] = { "app.kubernetes.io/name", "missing" };
	struct kube_opts o = { .pod_labels = labels, .nr_pod_labels = 2 };
	struct pod_meta m;
	char uid[37];

	(void)state;
	assert_int_equal(kube_parse_pod(pod, &o, CID, uid, &m), 0);
	assert_string_equal(uid, "1f5e2a8c-3b4d-4e6f-8a9b-0c1d2e3f4a5b");
	assert_string_equal(m.namespace_, "shop");
	assert_string_equal(m.pod, "web-1");
	assert_string_equal(m.container, "web");
	assert_string_equal(m.service_name, "shop-web");
	assert_int_equal(m.nr_labels, 1);
	assert_string_equal(m.labels[0].key, "app_kubernetes_io_name");
	assert_string_equal(m.labels[0].value, "store");
	/* A container the pod does not list: the pod is named, the container not. */
	assert_int_equal(kube_parse_pod(pod, &o, "ff" CID, uid, &m), 0);
	assert_string_equal(m.container, "");
}

static void test_hostile(void **state)
{
	static const char *const bad[] = {
		"",
		"[]",
		"{\"metadata\":{}}",
		"{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\",\"uid\":\"too-short\"}}",
		"{\"metadata\":{\"name\":1,\"namespace\":\"b\","
		"\"uid\":\"1f5e2a8c-3b4d-4e6f-8a9b-0c1d2e3f4a5b\"}}",
		"{\"metadata\":\"x\"}",
		"{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\",",
	};
	struct kube_opts o = { 0 };
	struct pod_meta m;
	char uid[37];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (kube_parse_pod(bad[i], &o, "", uid, &m) != -EINVAL)
			fail_msg("accepted %s", bad[i]);
	/* Wrong types deeper down are skipped, not fatal. */
	assert_int_equal(kube_parse_pod("{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\","
					"\"uid\":\"1f5e2a8c-3b4d-4e6f-8a9b-0c1d2e3f4a5b\","
					"\"labels\":7},\"status\":{\"containerStatuses\":{}}}",
					&o, "", uid, &m),
			 0);
}

UNIT_MAIN("kubernetes", cmocka_unit_test(test_pod), cmocka_unit_test(test_hostile))
