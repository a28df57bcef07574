// SPDX-License-Identifier: Apache-2.0
/*
 * hostview: the NSpid and CapEff lines of /proc/PID/status, the judgement of the agent's PID
 * namespace, the capabilities BPF needs named, all against texts and a fake /proc.
 */
#include <sys/stat.h>
#include <unistd.h>

#include "unit.h"

#include "../../agent/collect/hostview.h"

static const char status_host[] = "Name:\tignis\n"
				  "Umask:\t0022\n"
				  "Tgid:\t812\n"
				  "NSpid:\t812\n"
				  "CapInh:\t0000000000000000\n"
				  "CapPrm:\t000001ffffffffff\n"
				  "CapEff:\t000001ffffffffff\n";

/* In a pod without hostPID, read through the host's /proc: two levels. */
static const char status_nested[] = "Name:\tignis\n"
				    "NSpid:\t48213\t7\n"
				    "CapEff:\t000000c000000000\n";

static void test_nspid(void **state)
{
	uint32_t inner = 0;

	(void)state;
	assert_int_equal(hostview_parse_nspid(status_host, &inner), 1);
	assert_int_equal(inner, 812);
	assert_int_equal(hostview_parse_nspid(status_nested, &inner), 2);
	assert_int_equal(inner, 7);
	assert_int_equal(hostview_parse_nspid("NSpid:\t9\t5\t1\n", &inner), 3);
	assert_int_equal(inner, 1);
	/* The first line too, and no newline at the end. */
	assert_int_equal(hostview_parse_nspid("NSpid:\t3", NULL), 1);
	/* NSpidX is another field; NSpid inside another line's value is no field. */
	assert_int_equal(hostview_parse_nspid("NSpidX:\t1\t2\nName:\tNSpid:\t1\t2\n", NULL),
			 -ENOENT);
	assert_int_equal(hostview_parse_nspid("Name:\tx\n", NULL), -ENOENT);
	assert_int_equal(hostview_parse_nspid("NSpid:\n", NULL), -EINVAL);
	assert_int_equal(hostview_parse_nspid("NSpid:\t12\tx\n", NULL), -EINVAL);
	assert_int_equal(hostview_parse_nspid("NSpid:\t0\n", NULL), -EINVAL);
	assert_int_equal(hostview_parse_nspid("NSpid:\t99999999999\n", NULL), -EINVAL);
}

static void test_capeff(void **state)
{
	uint64_t caps = 1;

	(void)state;
	assert_int_equal(hostview_parse_capeff(status_host, &caps), 0);
	assert_true(caps == 0x1ffffffffffULL);
	assert_int_equal(hostview_parse_capeff(status_nested, &caps), 0);
	/* CAP_PERFMON (38) and CAP_BPF (39) only. */
	assert_true(caps == ((1ULL << 38) | (1ULL << 39)));
	assert_int_equal(hostview_parse_capeff("CapEff:\t0000000000000000\n", &caps), 0);
	assert_true(caps == 0);
	assert_int_equal(hostview_parse_capeff("CapEff:\t00000000000000000\n", &caps), -EINVAL);
	assert_int_equal(hostview_parse_capeff("CapEff:\tzz\n", &caps), -EINVAL);
	assert_int_equal(hostview_parse_capeff("CapEff:\t12g4\n", &caps), -EINVAL);
	assert_int_equal(hostview_parse_capeff("CapPrm:\t1\n", &caps), -ENOENT);
}

static void test_pidns_problem(void **state)
{
	struct hostview_pidns host = { .self = 812,
				       .proc_self = 812,
				       .nspid_levels = 1,
				       .ns_inode = HOSTVIEW_INIT_PID_NS_INO };
	struct hostview_pidns f;

	(void)state;
	assert_null(hostview_pidns_problem(&host));
	/* nsfs unreadable: the other facts decide. */
	f = host;
	f.ns_inode = 0;
	assert_null(hostview_pidns_problem(&f));
	/* unshare --pid --fork --mount-proc: one level as its own /proc shows it; only the
	 * namespace's inode tells. */
	f = host;
	f.self = f.proc_self = 1;
	f.ns_inode = 4026532179ULL;
	assert_non_null(strstr(hostview_pidns_problem(&f), "PID namespace of its own"));
	/* unshare --pid --fork without a /proc of its own: the host's /proc names another pid. */
	f = host;
	f.self = 1;
	f.proc_self = 2094;
	f.nspid_levels = 2;
	assert_non_null(strstr(hostview_pidns_problem(&f), "another PID namespace"));
	/* A /proc of a namespace the agent is not in: /proc/self names nothing. */
	f = host;
	f.proc_self = -ENOENT;
	assert_non_null(strstr(hostview_pidns_problem(&f), "names no process"));
	f = host;
	f.nspid_levels = 2;
	assert_non_null(strstr(hostview_pidns_problem(&f), "nested"));
}

static void test_missing_bpf_caps(void **state)
{
	struct hostview_caps c = { .cap_last = 40 };
	char buf[64];

	(void)state;
	assert_string_equal(hostview_missing_bpf_caps(&c, buf, sizeof(buf)),
			    "CAP_BPF and CAP_PERFMON");
	c.effective = 1ULL << HOSTVIEW_CAP_BPF;
	assert_string_equal(hostview_missing_bpf_caps(&c, buf, sizeof(buf)), "CAP_PERFMON");
	c.effective = 1ULL << HOSTVIEW_CAP_PERFMON;
	assert_string_equal(hostview_missing_bpf_caps(&c, buf, sizeof(buf)), "CAP_BPF");
	c.effective |= 1ULL << HOSTVIEW_CAP_BPF;
	assert_string_equal(hostview_missing_bpf_caps(&c, buf, sizeof(buf)), "");
	/* CAP_SYS_ADMIN does the work of both. */
	c.effective = 1ULL << HOSTVIEW_CAP_SYS_ADMIN;
	assert_string_equal(hostview_missing_bpf_caps(&c, buf, sizeof(buf)), "");
	/* Before Linux 5.8 (cap_last_cap 37) only CAP_SYS_ADMIN loads BPF. */
	c.cap_last = 37;
	c.effective = 1ULL << HOSTVIEW_CAP_BPF;
	assert_false(hostview_split_bpf_caps(&c));
	assert_string_equal(hostview_missing_bpf_caps(&c, buf, sizeof(buf)), "CAP_SYS_ADMIN");
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* The readers against a fake /proc: self -> 7, 7/status, sys/kernel/cap_last_cap. */
static void test_read_fake_proc(void **state)
{
	char root[] = "/tmp/ignis-hostview-XXXXXX", path[512];
	struct hostview_pidns f;
	struct hostview_caps c;

	(void)state;
	assert_non_null(mkdtemp(root));
	snprintf(path, sizeof(path), "%s/7", root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/sys", root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/sys/kernel", root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/self", root);
	assert_int_equal(symlink("7", path), 0);
	write_file(root, "7/status", status_nested);
	write_file(root, "sys/kernel/cap_last_cap", "40\n");

	assert_int_equal(hostview_read_pidns(root, 7, &f), 0);
	assert_int_equal(f.proc_self, 7);
	assert_int_equal(f.nspid_levels, 2);
	assert_non_null(strstr(hostview_pidns_problem(&f), "nested"));
	assert_int_equal(hostview_read_pidns(root, 8, &f), 0);
	assert_non_null(strstr(hostview_pidns_problem(&f), "another PID namespace"));

	assert_int_equal(hostview_read_caps(root, &c), 0);
	assert_int_equal(c.cap_last, 40);
	assert_true(hostview_has(&c, HOSTVIEW_CAP_BPF));
	assert_false(hostview_has(&c, HOSTVIEW_CAP_SYS_PTRACE));

	/* No /proc at all. */
	assert_int_equal(hostview_read_pidns("/nonexistent", 7, &f), -ESRCH);
	assert_true(f.proc_self < 0);
	assert_non_null(hostview_pidns_problem(&f));

	snprintf(path, sizeof(path), "rm -rf %s", root);
	assert_int_equal(system(path), 0);
}

UNIT_MAIN("hostview", cmocka_unit_test(test_nspid), cmocka_unit_test(test_capeff),
	  cmocka_unit_test(test_pidns_problem), cmocka_unit_test(test_missing_bpf_caps),
	  cmocka_unit_test(test_read_fake_proc))
