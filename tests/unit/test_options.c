// SPDX-License-Identifier: Apache-2.0
#include <errno.h>

#include "unit.h"

#include "../../agent/options.h"

static int parse(struct agent_config *cfg, const char *line, char *err, size_t size)
{
	char copy[512], *argv[32], *tok, *save = NULL;
	int argc = 0, ret;
	FILE *f = fmemopen(err, size, "w");

	snprintf(copy, sizeof(copy), "ignis %s", line);
	for (tok = strtok_r(copy, " ", &save); tok && argc < 31; tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	config_init(cfg);
	ret = config_parse_args(cfg, argc, argv, f);
	fclose(f);
	return ret;
}

static void test_defaults_and_values(void **state)
{
	struct agent_config cfg;
	char err[256] = "";

	(void)state;
	assert_int_equal(parse(&cfg, "", err, sizeof(err)), 0);
	assert_int_equal(cfg.frequency_hz, 100);
	assert_int_equal(cfg.interval_sec, 10);
	assert_true(cfg.kernel_stacks);
	assert_null(cfg.output_dir);
	config_fini(&cfg);

	assert_int_equal(parse(&cfg, "--frequency 997 --interval 2m --duration 30 --pid 12 "
				     "--pid 34 --no-kernel --top 5 --output-dir /tmp/x "
				     "--output-max-bytes 10MiB --output-max-age 2d --log-level debug "
				     "--event cycles --symbol-cache-size 1G --max-stacks 4096",
			       err, sizeof(err)),
			 0);
	assert_int_equal(cfg.frequency_hz, 997);
	assert_int_equal(cfg.interval_sec, 120);
	assert_int_equal(cfg.duration_sec, 30);
	assert_int_equal(cfg.nr_pids, 2);
	assert_int_equal(cfg.pids[1], 34);
	assert_false(cfg.kernel_stacks);
	assert_int_equal(cfg.top, 5);
	assert_string_equal(cfg.output_dir, "/tmp/x");
	assert_int_equal(cfg.output_max_bytes, 10 << 20);
	assert_int_equal(cfg.output_max_age_sec, 2 * 86400);
	assert_int_equal(cfg.log_level, LOG_LEVEL_DEBUG);
	assert_int_equal(cfg.event, SAMPLER_EVENT_CYCLES);
	assert_int_equal(cfg.symbol_cache_bytes, 1ULL << 30);
	assert_int_equal(cfg.max_stacks, 4096);
	config_fini(&cfg);
}

static void test_errors(void **state)
{
	static const struct {
		const char *args;
		const char *message;
	} bad[] = {
		{ "--frequency 0", "--frequency 0: must be a whole number of Hz" },
		{ "--frequency 100000", "from 1 to 10000" },
		{ "--frequency 1e3", "--frequency 1e3" },
		{ "--frequency -5", "must be" },
		{ "--interval 0", "--interval 0: must be a duration" },
		{ "--interval 5x", "must be a duration" },
		{ "--pid abc", "--pid abc: must be a process id" },
		{ "--pid 0", "must be a process id" },
		{ "--log-level loud", "must be one of error, warn, info, debug" },
		{ "--event branches", "must be cpu-clock or cycles" },
		{ "--output-max-bytes 10", "at least 1MiB" },
		{ "--output-max-age 5s", "at least 1m" },
		{ "--max-stacks 5", "1024 to 4194304" },
		{ "--bogus", "--bogus: unknown option" },
		{ "--frequency", "--frequency: missing value" },
		{ "--no-kernel=yes", "--no-kernel takes no value" },
		{ "extra", "extra: unexpected argument" },
	};
	struct agent_config cfg;
	char err[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(err, 0, sizeof(err));
		assert_int_equal(parse(&cfg, bad[i].args, err, sizeof(err)), -EINVAL);
		if (!strstr(err, bad[i].message))
			fail_msg("%s: message \"%s\" lacks \"%s\"", bad[i].args, err,
				 bad[i].message);
		/* One line. */
		assert_ptr_equal(strchr(err, '\n'), err + strlen(err) - 1);
		config_fini(&cfg);
	}
}

static void test_sizes_and_durations(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(parse_size("4096", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(parse_size("2KiB", &v), 0);
	assert_int_equal(v, 2048);
	assert_int_equal(parse_size("3MB", &v), 0);
	assert_int_equal(v, 3000000);
	assert_int_equal(parse_size("1TiB", &v), 0);
	assert_int_equal(v, 1ULL << 40);
	assert_int_equal(parse_size("99999999999999999999", &v), -EINVAL);
	assert_int_equal(parse_size("20000000TiB", &v), -EINVAL);
	assert_int_equal(parse_size("1 MiB", &v), -EINVAL);
	assert_int_equal(parse_size("", &v), -EINVAL);
	assert_int_equal(parse_duration("90", &v), 0);
	assert_int_equal(v, 90);
	assert_int_equal(parse_duration("3h", &v), 0);
	assert_int_equal(v, 10800);
	assert_int_equal(parse_duration("1w", &v), -EINVAL);
	assert_int_equal(parse_duration("-1s", &v), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_and_values),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_sizes_and_durations),
	};

	return cmocka_run_group_tests_name("options", tests, NULL, NULL);
}
