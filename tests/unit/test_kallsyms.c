// SPDX-License-Identifier: Apache-2.0
#include <errno.h>

#include "unit.h"

#include "../../symbolizer/symbolizer.h"

static const char kallsyms[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff81000000 T startup_64\n"
	"ffffffff81001000 t early_helper\n"
	"ffffffff81002000 D some_data\n"
	"ffffffff81003000 T do_syscall_64\n"
	"ffffffff81004000 T _etext\n"
	"0000000000000000 A fixed_percpu_data\n"
	"ffffffffc0a01000 t nft_do_chain\t[nf_tables]\n"
	"ffffffffc0a02000 t nft_lookup_eval\t[nf_tables]\n"
	"ffffffffc0b00000 t bpf_prog_6deef7357e7b4530_ignis_sample\t[bpf]\n"
	/* Modules come after the core kernel, not in address order. */
	"ffffffffc0900000 T ext4_mount\t[ext4]\n";

static struct symbolizer *load(const char *text, int *ret)
{
	struct symbolizer *s = symbolizer__new(NULL);
	FILE *f = fmemopen((void *)text, strlen(text), "r");

	assert_non_null(s);
	assert_non_null(f);
	*ret = symbolizer__load_kallsyms(s, f);
	fclose(f);
	return s;
}

static void expect(struct symbolizer *s, uint64_t addr, const char *name, const char *module)
{
	struct sym_frame f;

	if (!name) {
		if (symbolizer__symbolize_kernel(s, addr, &f))
			fail_msg("%#llx named %s", (unsigned long long)addr, f.name);
		return;
	}
	assert_int_equal(symbolizer__symbolize_kernel(s, addr, &f), 1);
	assert_string_equal(f.name, name);
	if (module)
		assert_string_equal(f.file, module);
	else
		assert_null(f.file);
}

static void test_lookup(void **state)
{
	struct symbolizer *s;
	int n;

	(void)state;
	s = load(kallsyms, &n);
	assert_int_equal(n, 9);	/* text symbols */
	expect(s, 0xffffffff81001234ULL, "early_helper", NULL);
	/* Data ends the function before it: not early_helper. */
	expect(s, 0xffffffff81002010ULL, NULL, NULL);
	expect(s, 0xffffffff81003fffULL, "do_syscall_64", NULL);
	expect(s, 0xffffffffc0a01010ULL, "nft_do_chain", "[nf_tables]");
	expect(s, 0xffffffffc0a02000ULL, "nft_lookup_eval", "[nf_tables]");
	expect(s, 0xffffffffc0900100ULL, "ext4_mount", "[ext4]");
	expect(s, 0xffffffffc0b00042ULL, "bpf_prog_6deef7357e7b4530_ignis_sample", "[bpf]");
	/* Below everything, and far past the last symbol. */
	expect(s, 0xffffffff80000000ULL, NULL, NULL);
	expect(s, 0xffffffffc0f00000ULL, NULL, NULL);
	symbolizer__free(s);
}

static void test_same_address_prefers_a_name(void **state)
{
	struct sym_frame f;
	struct symbolizer *s;
	int n;

	(void)state;
	s = load(kallsyms, &n);
	assert_int_equal(symbolizer__symbolize_kernel(s, 0xffffffff81000000ULL, &f), 1);
	assert_true(!strcmp(f.name, "_stext") || !strcmp(f.name, "startup_64"));
	symbolizer__free(s);
}

static void test_hidden_addresses(void **state)
{
	struct symbolizer *s;
	int n;

	(void)state;
	s = load("0000000000000000 T _stext\n0000000000000000 t foo\t[mod]\n", &n);
	assert_int_equal(n, -EPERM);
	symbolizer__free(s);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
		"ffffffff81000000 T\n",
		"zzzz T foo\n",
		"ffffffff81000000 Tfoo\n",
		"ffffffff81000000 T foo\t[unterminated\n",
		"ffffffff81000000 T foo bar\n",
	};
	struct symbolizer *s;
	size_t i;
	int n;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		s = load(bad[i], &n);
		if (n != -EINVAL)
			fail_msg("accepted \"%s\"", bad[i]);
		symbolizer__free(s);
	}
}

/* A reload replaces the previous table. */
/* The table keeps 32 address bits a symbol: symbols whose upper bits differ (a module area
 * 4 GiB or more away from the kernel's text, as arm64's may be) are named all the same, and
 * an address past a run's upper bits belongs to that run's last symbol. */
static void test_upper_address_bits(void **state)
{
	static const char text[] =
		"ffff800080000000 T _stext\n"
		"ffff800080001000 T far_core_fn\n"
		"ffff8000fffff000 t last_below\n"
		"ffff800100000000 D data_after\n"
		"ffff800100000010 T above_fn\n"
		"ffff800200000000 t mod_fn\t[far]\n"
		"ffff800200000100 t mod_fn2\t[far]\n"
		"ffff800200000200 T core_again\n";
	struct symbolizer *s;
	int n;

	(void)state;
	s = load(text, &n);
	assert_int_equal(n, 7);
	expect(s, 0xffff800080001010ULL, "far_core_fn", NULL);
	expect(s, 0xffff8000fffff123ULL, "last_below", NULL);
	expect(s, 0xffff800100000008ULL, NULL, NULL); /* data */
	expect(s, 0xffff800100000018ULL, "above_fn", NULL);
	expect(s, 0xffff800180000000ULL, "above_fn", NULL); /* bounded by mod_fn only */
	expect(s, 0xffff800200000000ULL, "mod_fn", "[far]");
	expect(s, 0xffff8002000001ffULL, "mod_fn2", "[far]");
	expect(s, 0xffff800200000201ULL, "core_again", NULL);
	expect(s, 0xffff80007fffffffULL, NULL, NULL);
	symbolizer__free(s);
}

static void test_reload(void **state)
{
	struct symbolizer *s;
	FILE *f;
	int n;

	(void)state;
	s = load(kallsyms, &n);
	f = fmemopen((void *)"ffffffff82000000 T other\n", 25, "r");
	assert_int_equal(symbolizer__load_kallsyms(s, f), 1);
	fclose(f);
	expect(s, 0xffffffff81001234ULL, NULL, NULL);
	expect(s, 0xffffffff82000010ULL, "other", NULL);
	symbolizer__free(s);
}

UNIT_MAIN("kallsyms", cmocka_unit_test(test_lookup),
	  cmocka_unit_test(test_same_address_prefers_a_name),
	  cmocka_unit_test(test_hidden_addresses), cmocka_unit_test(test_malformed),
	  cmocka_unit_test(test_upper_address_bits),
	  cmocka_unit_test(test_reload))
