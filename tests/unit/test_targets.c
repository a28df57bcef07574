// SPDX-License-Identifier: Apache-2.0
#include "unit.h"

#include "../../agent/collect/kubernetes.h"
#include "../../agent/collect/metadata.h"
#include "../../agent/profile/targets.h"

static const char *label(const struct target *t, const char *name)
{
	uint32_t i;

	for (i = 0; i < t->nr_labels; i++)
		if (!strcmp(t->labels[i].name, name))
			return t->labels[i].value;
	return NULL;
}

static const char *name_of(struct targets *t, const struct target_process *p, char *out,
			   size_t size)
{
	targets__service_name(t, p, out, size);
	return out;
}

static void test_service_name_order(void **state)
{
	char *rules[] = { "exe:/opt/billing/*=billing", "comm:pg_*=postgres" };
	struct targets_opts o = { .hostname = "web-1", .rules = rules, .nr_rules = 2 };
	struct targets *t = targets__new(&o);
	struct proc_meta unit = { .unit = "getty@tty1.service" };
	struct proc_meta scope = { .unit = "session-3.scope" };
	struct proc_meta docker = { .container_id = "3f4e5a6b7c8d9e0f3f4e5a6b7c8d9e0f3f4e5a6b7c8d9e0f"
						    "3f4e5a6b7c8d9e0f",
				    .runtime = RUNTIME_DOCKER };
	struct pod_meta pod = { .namespace_ = "shop", .pod = "cart-7d9f", .container = "cart" };
	struct pod_meta annotated = pod;
	struct target_process p = { 0 };
	char out[SERVICE_NAME_MAX + 1];

	(void)state;
	assert_non_null(t);
	snprintf(annotated.service_name, sizeof(annotated.service_name), "shop cart!");

	/* Executable basename, last resort comm, kernel threads. */
	p = (struct target_process){ .exe = "/usr/sbin/nginx", .comm = "nginx: worker" };
	assert_string_equal(name_of(t, &p, out, sizeof(out)), "nginx");
	p.exe = "/usr/bin/python3.11 (deleted)";
	assert_string_equal(name_of(t, &p, out, sizeof(out)), "python3.11");
	p.exe = "/memfd:runc_cloned:/proc/self/exe (deleted)";
	p.comm = "runc:[2:INIT]";
	assert_string_equal(name_of(t, &p, out, sizeof(out)), "runc__2_INIT_");
	p = (struct target_process){ .comm = "kworker/0:1", .kthread = true };
	assert_string_equal(name_of(t, &p, out, sizeof(out)), "kernel");
	p = (struct target_process){ .exe = "", .comm = "" };
	assert_string_equal(name_of(t, &p, out, sizeof(out)), "unknown");

	/* Container id prefix, then a systemd service (not a scope), then Kubernetes. */
	p = (struct target_process){ .exe = "/app/server", .comm = "server", .meta = &docker };
	assert_string_equal(name_of(t, &p, out, sizeof(out)), "3f4e5a6b7c8d");
	p.meta = &scope;
	assert_string_equal(name_of(t, &p, out, sizeof(out)), "server");
	p.meta = &unit;
	assert_string_equal(name_of(t, &p, out, sizeof(out)), "getty_tty1");
	p.meta = &docker;
	p.pod = &pod;
	assert_string_equal(name_of(t, &p, out, sizeof(out)), "shop/cart");
	pod.container[0] = '\0';
	assert_string_equal(name_of(t, &p, out, sizeof(out)), "shop/cart-7d9f");
	p.pod = &annotated;
	assert_string_equal(targets__service_name(t, &p, out, sizeof(out)), "annotation");
	assert_string_equal(out, "shop_cart_");

	/* Explicit rules win over everything, in order; exe and comm globs. */
	p.exe = "/opt/billing/bin/worker";
	assert_string_equal(targets__service_name(t, &p, out, sizeof(out)), "rule");
	assert_string_equal(out, "billing");
	p = (struct target_process){ .exe = "/usr/lib/postgresql/15/bin/postgres",
				     .comm = "pg_walwriter" };
	assert_string_equal(name_of(t, &p, out, sizeof(out)), "postgres");
	p.comm = "postgres";
	assert_string_equal(name_of(t, &p, out, sizeof(out)), "postgres"); /* basename */
	p = (struct target_process){ .comm = "pg_kthread", .kthread = true };
	assert_string_equal(name_of(t, &p, out, sizeof(out)), "postgres");
	targets__free(t);
}

static void test_resolve_labels_and_interning(void **state)
{
	char *labels[] = { "env=prod", "region=eu-west-1" };
	struct targets_opts o = { .hostname = "node-7", .labels = labels, .nr_labels = 2 };
	struct targets *t = targets__new(&o);
	struct pod_meta pod = { .namespace_ = "shop", .pod = "cart-1", .container = "cart" };
	struct target_process a = { .exe = "/usr/sbin/nginx", .comm = "nginx" };
	struct target_process b = { .exe = "/usr/local/sbin/nginx", .comm = "nginx" };
	struct target_process c = { .exe = "/app/cart", .comm = "cart", .pod = &pod };
	const struct target *tg;

	(void)state;
	assert_non_null(t);
	assert_int_equal(targets__resolve(t, 7, &a), 0);
	assert_int_equal(targets__resolve(t, 7, &b), 0); /* same label set: same target */
	assert_int_equal(targets__resolve(t, 7, &c), 1);
	assert_int_equal(targets__count(t, 7), 2);

	tg = targets__get(t, 7, 0);
	assert_string_equal(tg->labels[0].name, "__name__");
	assert_string_equal(tg->labels[0].value, "process_cpu");
	assert_string_equal(tg->labels[1].name, "service_name");
	assert_string_equal(tg->service_name, "nginx");
	assert_string_equal(label(tg, "hostname"), "node-7");
	assert_string_equal(label(tg, "env"), "prod");
	assert_string_equal(label(tg, "region"), "eu-west-1");
	assert_null(label(tg, "namespace"));
	assert_null(label(tg, "pid"));
	assert_int_equal(tg->nr_labels, 5);

	tg = targets__get(t, 7, 1);
	assert_string_equal(tg->service_name, "shop/cart");
	assert_string_equal(label(tg, "namespace"), "shop");
	assert_string_equal(label(tg, "pod"), "cart-1");
	assert_string_equal(label(tg, "container"), "cart");
	assert_int_equal(tg->nr_labels, 8);
	assert_non_null(strstr(tg->key, "pod=cart-1\n"));
	assert_null(targets__get(t, 7, 2));
	/* Nothing resolved in window 8 yet: it has no targets, window 7's are still there. */
	assert_int_equal(targets__count(t, 8), 0);
	assert_null(targets__get(t, 8, 0));
	assert_non_null(targets__get(t, 7, 1));

	/* A new window: its first resolution forgets the old one, ids restart. */
	assert_int_equal(targets__resolve(t, 8, &c), 0);
	assert_int_equal(targets__count(t, 8), 1);
	assert_int_equal(targets__count(t, 7), 0);
	assert_null(targets__get(t, 7, 0));
	assert_string_equal(targets__get(t, 8, 0)->service_name, "shop/cart");
	targets__free(t);
}

static void test_checks(void **state)
{
	char why[256];
	char long_value[TARGET_MAX_VALUE + 8];
	char *bad_rules[] = { "exe:=x" };
	struct targets_opts o = { .rules = bad_rules, .nr_rules = 1 };

	(void)state;
	assert_int_equal(targets_check_label("env=prod", why, sizeof(why)), 0);
	assert_int_equal(targets_check_label("team_2=a b/c", why, sizeof(why)), 0);
	assert_int_equal(targets_check_label("env", why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "NAME=VALUE"));
	assert_int_equal(targets_check_label("=x", why, sizeof(why)), -EINVAL);
	assert_int_equal(targets_check_label("a-b=x", why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "[a-zA-Z_.]"));
	assert_non_null(strstr(why, "e.g. 'a_b'"));
	assert_int_equal(targets_check_label("2a=x", why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "e.g. '_2a'"));
	assert_int_equal(targets_check_label("__name__=x", why, sizeof(why)), -EINVAL);
	assert_int_equal(targets_check_label("service_name=x", why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "--service-name-rule"));
	assert_int_equal(targets_check_label("hostname=x", why, sizeof(why)), -EINVAL);
	assert_int_equal(targets_check_label("env=", why, sizeof(why)), -EINVAL);
	assert_int_equal(targets_check_label("env=a,b", why, sizeof(why)), -EINVAL);
	assert_int_equal(targets_check_label("env=a}", why, sizeof(why)), -EINVAL);
	assert_int_equal(targets_check_label("env=\xff\xfe", why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "UTF-8"));
	assert_int_equal(targets_check_label("env=caf\xc3\xa9", why, sizeof(why)), 0);
	memset(long_value, 'v', sizeof(long_value));
	memcpy(long_value, "k=", 2);
	long_value[sizeof(long_value) - 1] = '\0';
	assert_int_equal(targets_check_label(long_value, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "2048"));

	assert_int_equal(targets_check_rule("exe:/usr/bin/*=svc", why, sizeof(why)), 0);
	assert_int_equal(targets_check_rule("comm:java=payments/api", why, sizeof(why)), 0);
	assert_int_equal(targets_check_rule("path:/x=y", why, sizeof(why)), -EINVAL);
	assert_int_equal(targets_check_rule("exe:/x", why, sizeof(why)), -EINVAL);
	assert_int_equal(targets_check_rule("exe:=y", why, sizeof(why)), -EINVAL);
	assert_int_equal(targets_check_rule("exe:/x=", why, sizeof(why)), -EINVAL);
	assert_int_equal(targets_check_rule("exe:/x=a b", why, sizeof(why)), -EINVAL);
	assert_null(targets__new(&o));
	assert_int_equal(errno, EINVAL);

	assert_true(label_name_valid("env"));
	assert_true(label_name_valid("_x9"));
	assert_false(label_name_valid(""));
	assert_false(label_name_valid("__x"));
	assert_false(label_name_valid("a.b"));
}

/* Label names as Pyroscope takes them (SanitizeLegacyLabelName, pkg/validation/validate.go
 * of grafana/pyroscope): dots become '_', other characters and a leading digit are refused. */
static void test_label_names(void **state)
{
	static const struct {
		const char *in, *stored; /* stored NULL: refused */
	} cases[] = {
		{ "env", "env" },
		{ "service.version", "service_version" },
		{ "otel.scope.name", "otel_scope_name" },
		{ "k8s.pod.uid", "k8s_pod_uid" },
		{ ".x", "_x" },
		{ "a..b.", "a__b_" },
		{ "_9", "_9" },
		{ "A9_z", "A9_z" },
		{ "9a", NULL },
		{ "a-b", NULL },
		{ "a/b", NULL },
		{ "a b", NULL },
		{ "caf\xc3\xa9", NULL },
		{ "a:b", NULL },
		{ "", NULL },
	};
	char out[TARGET_MAX_NAME + 1], why[256], arg[64], big[TARGET_MAX_NAME + 2];
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		int err = label_name_store(cases[i].in, strlen(cases[i].in), out, sizeof(out));

		if (!cases[i].stored) {
			assert_int_equal(err, -EINVAL);
			continue;
		}
		assert_int_equal(err, 0);
		assert_string_equal(out, cases[i].stored);
		assert_true(label_name_valid(out));
		snprintf(arg, sizeof(arg), "%s=v", cases[i].in);
		assert_int_equal(targets_label_name(arg, out, sizeof(out)), 0);
		assert_string_equal(out, cases[i].stored);
	}
	/* Only n bytes are read; out must hold the name. */
	assert_int_equal(label_name_store("a.b=c", 3, out, sizeof(out)), 0);
	assert_string_equal(out, "a_b");
	assert_int_equal(label_name_store("abcd", 4, out, 4), -EINVAL);
	memset(big, 'a', sizeof(big));
	assert_int_equal(label_name_store(big, TARGET_MAX_NAME, out, sizeof(out)), 0);
	assert_int_equal(label_name_store(big, TARGET_MAX_NAME + 1, out, sizeof(out)), -EINVAL);

	/* The option: OTel names taken; what the server refuses, or what becomes a name ignis
	 * sets or a reserved __ name, refused with the fix. */
	assert_int_equal(targets_check_label("service.version=1.2", why, sizeof(why)), 0);
	assert_int_equal(targets_check_label("deployment.environment.name=prod", why, sizeof(why)),
			 0);
	assert_int_equal(targets_check_label("service.name=x", why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "stored as service_name"));
	assert_non_null(strstr(why, "--service-name-rule"));
	assert_int_equal(targets_check_label("host.name.x=x", why, sizeof(why)), 0);
	assert_int_equal(targets_check_label("thread.name=x", why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "set by ignis"));
	assert_int_equal(targets_check_label("._x=1", why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "stored as __x"));
	assert_int_equal(targets_check_label("team-name=x", why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "e.g. 'team_name'"));
	assert_int_equal(targets_check_label("r\xc3\xa9gion=x", why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "e.g. 'r_gion'"));
	assert_int_equal(targets_check_label("app.kubernetes.io/name=x", why, sizeof(why)),
			 -EINVAL);
	assert_non_null(strstr(why, "e.g. 'app_kubernetes_io_name'"));
}

/* A static label with dots is sent under its stored name, in the target's labels. */
static void test_static_label_stored_name(void **state)
{
	char *labels[] = { "service.version=1.2", "env=ci" };
	struct targets_opts o = { .hostname = "h", .labels = labels, .nr_labels = 2 };
	struct target_process p = { .exe = "/usr/bin/app", .comm = "app" };
	struct targets *t = targets__new(&o);
	const struct target *tg;

	(void)state;
	assert_non_null(t);
	assert_int_equal(targets__resolve(t, 1, &p), 0);
	tg = targets__get(t, 1, 0);
	assert_non_null(tg);
	assert_int_equal(tg->nr_labels, 5);
	assert_string_equal(tg->labels[3].name, "service_version");
	assert_string_equal(tg->labels[3].value, "1.2");
	assert_string_equal(tg->labels[4].name, "env");
	assert_non_null(strstr(tg->key, "service_version=1.2\n"));
	targets__free(t);
}

static void test_sanitize(void **state)
{
	char out[16];

	(void)state;
	service_name_sanitize("getty@tty1", out, sizeof(out));
	assert_string_equal(out, "getty_tty1");
	service_name_sanitize("ns/app-1.2_x", out, sizeof(out));
	assert_string_equal(out, "ns/app-1.2_x");
	service_name_sanitize("a{b=c,d}", out, sizeof(out));
	assert_string_equal(out, "a_b_c_d_");
	service_name_sanitize("caf\xc3\xa9", out, sizeof(out));
	assert_string_equal(out, "caf__");
	service_name_sanitize("0123456789abcdefghij", out, sizeof(out));
	assert_string_equal(out, "0123456789abcde"); /* cut to size */
	service_name_sanitize("", out, sizeof(out));
	assert_string_equal(out, "unknown");
}

/* A process's off-CPU series is a target of its own: __name__ offcpu, the other labels as
 * its CPU series'. */
static void test_offcpu_series(void **state)
{
	char *labels[] = { "env=prod" };
	struct targets_opts o = { .hostname = "node-7", .labels = labels, .nr_labels = 1 };
	struct targets *t = targets__new(&o);
	struct pod_meta pod = { .namespace_ = "shop", .pod = "cart-1", .container = "cart" };
	struct target_process cpu = { .exe = "/app/cart", .comm = "cart", .pod = &pod };
	struct target_process off = cpu;
	const struct target *tc, *to;
	uint32_t i;

	(void)state;
	assert_non_null(t);
	off.offcpu = true;
	assert_int_equal(targets__resolve(t, 3, &cpu), 0);
	assert_int_equal(targets__resolve(t, 3, &off), 1);
	assert_int_equal(targets__resolve(t, 3, &cpu), 0);
	assert_int_equal(targets__resolve(t, 3, &off), 1); /* interned too */
	assert_int_equal(targets__count(t, 3), 2);
	tc = targets__get(t, 3, 0);
	to = targets__get(t, 3, 1);
	assert_string_equal(tc->labels[0].name, "__name__");
	assert_string_equal(tc->labels[0].value, "process_cpu");
	assert_string_equal(to->labels[0].name, "__name__");
	assert_string_equal(to->labels[0].value, "offcpu");
	assert_string_not_equal(tc->key, to->key);
	assert_string_equal(to->service_name, "shop/cart");
	assert_int_equal(to->nr_labels, tc->nr_labels);
	for (i = 1; i < tc->nr_labels; i++) {
		assert_string_equal(to->labels[i].name, tc->labels[i].name);
		assert_string_equal(to->labels[i].value, tc->labels[i].value);
	}

	/* Kernel threads too. */
	cpu = (struct target_process){ .comm = "kworker/0:1", .kthread = true };
	off = cpu;
	off.offcpu = true;
	assert_int_equal(targets__resolve(t, 3, &cpu), 2);
	assert_int_equal(targets__resolve(t, 3, &off), 3);
	assert_string_equal(targets__get(t, 3, 3)->labels[0].value, "offcpu");
	assert_string_equal(targets__get(t, 3, 3)->service_name, "kernel");
	targets__free(t);
}

UNIT_MAIN("targets", cmocka_unit_test(test_service_name_order),
	  cmocka_unit_test(test_resolve_labels_and_interning), cmocka_unit_test(test_checks),
	  cmocka_unit_test(test_sanitize), cmocka_unit_test(test_offcpu_series),
	  cmocka_unit_test(test_label_names), cmocka_unit_test(test_static_label_stored_name))
