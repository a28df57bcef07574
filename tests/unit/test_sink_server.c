// SPDX-License-Identifier: Apache-2.0
/* The server sink made from its options alone: what it refuses, what it takes, no network
 * (nothing is sent: no window reaches it). */
#include <errno.h>
#include <sys/file.h>
#include <unistd.h>

#include <curl/curl.h>

#include "unit.h"

#include "../../agent/ship/sink_server.h"
#include "../../agent/collect/metadata.h"
#include "../../agent/profile/targets.h"

static char *rules[] = { "comm:cart*=cart" };
static char *labels[] = { "env=prod" };

static struct server_sink_opts valid(void)
{
	return (struct server_sink_opts){
		.sz = sizeof(struct server_sink_opts),
		.url = "http://127.0.0.1:9",
		.hostname = "node-7",
		.service_name_rules = rules,
		.nr_service_name_rules = 1,
		.labels = labels,
		.nr_labels = 1,
		.connect_timeout_sec = 1,
		.timeout_sec = 1,
		.workers = 1,
		.queue_max_bytes = 1 << 20,
		.max_age_sec = 60,
	};
}

static void refused(const struct server_sink_opts *o, const char *what)
{
	struct server_sink *s;

	errno = 0;
	s = server_sink__new(o);
	if (s) {
		server_sink__free(s, 0);
		fail_msg("accepted: %s", what);
	}
	if (errno != EINVAL)
		fail_msg("%s: errno %d, not EINVAL", what, errno);
}

/* Valid opts but for the change in __VA_ARGS__ (on o): refused. */
#define REFUSED(what, ...)         \
	do {                       \
		o = valid();       \
		__VA_ARGS__;       \
		refused(&o, what); \
	} while (0)

static void test_refuses_what_it_cannot_use(void **state)
{
	struct server_sink_opts o;

	(void)state;
	refused(NULL, "no opts");
	REFUSED("no sz", o.sz = 0);
	REFUSED("another sz", o.sz = sizeof(o) - sizeof(size_t));
	REFUSED("no URL", o.url = NULL);
	REFUSED("not http(s)", o.url = "ftp://127.0.0.1:9");
	REFUSED("an unknown protocol", o.protocol = SERVER_PROTOCOLS);
	REFUSED("a certificate without its key", o.tls_cert_file = "/etc/hostname");
	REFUSED("a key without its certificate", o.tls_key_file = "/etc/hostname");
	REFUSED("a user without a password", o.basic_auth_user = "u");
	REFUSED("a rule targets_check_rule() refuses",
		o.service_name_rules = (char *[]){ "bogus" });
}

static void test_takes_valid_opts(void **state)
{
	struct server_sink_opts o = valid();
	struct target_process p = { .exe = "/app/cart", .comm = "cart-worker" };
	struct server_sink_stats st = { 0 };
	struct server_sink *s;
	struct targets *t;
	const struct target *tg;
	char password[] = "secret";
	uint32_t i;

	(void)state;
	o.basic_auth_user = "u";
	o.basic_auth_password = password;
	o.ingest = true;
	s = server_sink__new(&o);
	assert_non_null(s);
	/* The password is the sink's own copy. */
	memset(password, 'x', sizeof(password) - 1);

	/* The targets carry the hostname, the rules and the labels of the opts. */
	t = server_sink__targets(s);
	assert_non_null(t);
	assert_int_equal(targets__count(t, 1), 0);
	assert_int_equal(targets__resolve(t, 1, &p), 0);
	tg = targets__get(t, 1, 0);
	assert_non_null(tg);
	assert_string_equal(tg->service_name, "cart");
	for (i = 0; i < tg->nr_labels; i++)
		if (!strcmp(tg->labels[i].name, "hostname"))
			assert_string_equal(tg->labels[i].value, "node-7");
		else if (!strcmp(tg->labels[i].name, "env"))
			assert_string_equal(tg->labels[i].value, "prod");
	assert_int_equal(tg->nr_labels, 4);

	server_sink__stats(s, &st);
	assert_int_equal(st.upload.sent, 0);
	assert_int_equal(st.upload.queued, 0);
	assert_int_equal(st.profiles_split, 0);
	server_sink__free(s, 0);
	server_sink__free(NULL, 0);
}

/* container_id rides along only where OTLP sends it as container.id: the Pyroscope and
 * Parca series keep their labels. */
static void test_container_id_for_otlp_only(void **state)
{
	struct proc_meta meta = { .container_id = "0123456789abcdef0123456789abcdef"
						  "0123456789abcdef0123456789abcdef" };
	struct target_process p = { .exe = "/app/cart", .comm = "cart", .meta = &meta };
	struct server_sink_opts o;
	struct server_sink *s;
	const struct target *tg;
	int proto;
	uint32_t i;

	(void)state;
	for (proto = 0; proto < SERVER_PROTOCOLS; proto++) {
		bool found = false;

		o = valid();
		o.protocol = (enum server_protocol)proto;
		s = server_sink__new(&o);
		assert_non_null(s);
		assert_int_equal(targets__resolve(server_sink__targets(s), 1, &p), 0);
		tg = targets__get(server_sink__targets(s), 1, 0);
		for (i = 0; i < tg->nr_labels; i++)
			if (!strcmp(tg->labels[i].name, "container_id")) {
				assert_string_equal(tg->labels[i].value, meta.container_id);
				found = true;
			}
		assert_int_equal(found, proto == SERVER_OTLP);
		server_sink__free(s, 0);
	}
}

static void test_spool_in_use(void **state)
{
	char dir[] = "/tmp/ignis-sink-server-XXXXXX", cmd[64];
	struct server_sink_opts o = valid();
	struct server_sink *a, *b;

	(void)state;
	assert_non_null(mkdtemp(dir));
	o.spool_dir = dir;
	o.spool_max_bytes = 1 << 20;
	a = server_sink__new(&o);
	assert_non_null(a);
	/* A second agent on the same spool: refused, and not as a settings error. */
	errno = 0;
	b = server_sink__new(&o);
	assert_null(b);
	assert_int_equal(errno, EBUSY);
	server_sink__free(a, 0);
	b = server_sink__new(&o); /* free released the lock */
	assert_non_null(b);
	server_sink__free(b, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refuses_what_it_cannot_use),
		cmocka_unit_test(test_takes_valid_opts),
		cmocka_unit_test(test_spool_in_use),
		cmocka_unit_test(test_container_id_for_otlp_only),
	};
	int ret;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	ret = cmocka_run_group_tests_name("sink_server", tests, NULL, NULL);
	curl_global_cleanup();
	return ret;
}
