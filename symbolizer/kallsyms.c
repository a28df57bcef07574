// SPDX-License-Identifier: Apache-2.0
/*
 * Kernel symbols from /proc/kallsyms (kernel/kallsyms.c, s_show()):
 *
 *   ffffffff81000000 T _stext
 *   ffffffffc0a01000 t nft_do_chain	[nf_tables]
 *
 * kallsyms has no sizes: a text symbol names the addresses up to the next symbol of any
 * type. Non-text symbols are kept only as boundaries, so that an address in data is never
 * named after the last function before it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer_internal.h"

/* How far past the last symbol of all an address is still named after it, bytes. */
#define LAST_SYMBOL_SPAN 0x10000

/* Interned module names: most modules have hundreds of symbols. */
struct module_cache {
	char name[64];
	uint32_t off;
};

static bool is_text(char type)
{
	return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

/* A symbol as parsed, before the table is packed into runs. */
struct ksym_full {
	uint64_t addr;
	uint32_t name;
	uint32_t module;
};

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym_full *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return 0;
}

static int append_name(char **names, size_t *len, size_t *cap, const char *s, size_t n,
		       uint32_t *off)
{
	int err;

	if (*len + n + 1 > UINT32_MAX)
		return -E2BIG;
	err = sym_grow((void **)names, cap, *len + n + 1, 1);
	if (err)
		return err;
	memcpy(*names + *len, s, n);
	(*names)[*len + n] = '\0';
	*off = (uint32_t)*len;
	*len += n + 1;
	return 0;
}

/*
 * Parse "ADDR TYPE NAME[\t[MODULE]]". Sets *name and *module to NUL-terminated strings inside
 * line (module is NULL for the core kernel). Returns 0 or -EINVAL.
 */
static int parse_line(char *line, uint64_t *addr, char *type, char **name, char **module)
{
	char *end, *tab;

	errno = 0;
	*addr = strtoull(line, &end, 16);
	if (errno || end == line || end[0] != ' ' || !end[1] || end[2] != ' ' || !end[3])
		return -EINVAL;
	*type = end[1];
	*name = end + 3;
	(*name)[strcspn(*name, "\n")] = '\0';
	*module = NULL;
	tab = strchr(*name, '\t');
	if (tab) {
		*tab = '\0';
		*module = tab + 1;
		if (**module != '[' || (*module)[strlen(*module) - 1] != ']')
			return -EINVAL;
	}
	if (!**name || strchr(*name, ' '))
		return -EINVAL;
	return 0;
}

int symbolizer__load_kallsyms(struct symbolizer *s, FILE *f)
{
	struct module_cache mods[8] = {};
	size_t nr = 0, cap = 0, names_len = 0, names_cap = 0, next_mod = 0, i, text = 0;
	struct ksym_full *syms = NULL;
	struct ksym *packed = NULL;
	struct ksym_run *runs = NULL;
	size_t nr_runs = 0, cap_runs = 0;
	char *names = NULL, *line = NULL, *name, *module;
	size_t line_cap = 0, lineno = 0;
	bool all_zero = true;
	uint64_t addr;
	char type;
	int err = 0;

	err = append_name(&names, &names_len, &names_cap, "", 0, &(uint32_t){ 0 });
	if (err)
		goto err_out;
	while (getline(&line, &line_cap, f) > 0) {
		uint32_t name_off = 0, mod_off = 0;

		lineno++;
		if (parse_line(line, &addr, &type, &name, &module)) {
			sym_log(s, SYM_LOG_WARN, "kallsyms: malformed line %zu", lineno);
			err = -EINVAL;
			goto err_out;
		}
		if (addr)
			all_zero = false;
		/* Absolute symbols are not addresses in the kernel image. */
		if (type == 'a' || type == 'A' || addr == 0)
			continue;
		if (is_text(type)) {
			err = append_name(&names, &names_len, &names_cap, name,
					  strnlen(name, SYM_MAX_NAME - 1), &name_off);
			if (err)
				goto err_out;
			text++;
		}
		if (module && is_text(type)) {
			for (i = 0; i < sizeof(mods) / sizeof(mods[0]); i++) {
				if (mods[i].off && !strcmp(mods[i].name, module)) {
					mod_off = mods[i].off;
					break;
				}
			}
			if (!mod_off) {
				err = append_name(&names, &names_len, &names_cap, module,
						  strnlen(module, sizeof(mods[0].name) - 1),
						  &mod_off);
				if (err)
					goto err_out;
				i = next_mod++ % (sizeof(mods) / sizeof(mods[0]));
				snprintf(mods[i].name, sizeof(mods[i].name), "%s", module);
				mods[i].off = mod_off;
			}
		}
		err = sym_grow((void **)&syms, &cap, nr + 1, sizeof(*syms));
		if (err)
			goto err_out;
		syms[nr].addr = addr;
		syms[nr].name = name_off; /* 0: a boundary, not a name */
		syms[nr].module = mod_off;
		nr++;
	}
	if (ferror(f)) {
		err = -EIO;
		goto err_out;
	}
	if (lineno && all_zero) {
		err = -EPERM;
		goto err_out;
	}
	/* Modules follow the core kernel in load order, not address order. */
	if (nr > 1)
		qsort(syms, nr, sizeof(*syms), cmp_ksym);
	if (nr > UINT32_MAX) {
		err = -E2BIG;
		goto err_out;
	}
	/* Packed: 8 bytes a symbol, the upper address bits and the module once per run. */
	packed = malloc((nr ? nr : 1) * sizeof(*packed));
	if (!packed) {
		err = -ENOMEM;
		goto err_out;
	}
	for (i = 0; i < nr; i++) {
		uint64_t hi = syms[i].addr & ~0xffffffffULL;

		if (!nr_runs || runs[nr_runs - 1].hi != hi ||
		    runs[nr_runs - 1].module != syms[i].module) {
			err = sym_grow((void **)&runs, &cap_runs, nr_runs + 1, sizeof(*runs));
			if (err)
				goto err_out;
			runs[nr_runs++] = (struct ksym_run){ hi, (uint32_t)i, syms[i].module };
		}
		packed[i] = (struct ksym){ (uint32_t)syms[i].addr, syms[i].name };
	}
	free(syms);
	/* Trimmed to size: the table stays for the agent's life. */
	if (names_len < names_cap)
		names = realloc(names, names_len) ?: names;

	free(s->ksyms);
	free(s->ksym_runs);
	free(s->kernel_names);
	s->ksyms = packed;
	s->nr_ksyms = nr;
	s->ksym_runs = runs;
	s->nr_ksym_runs = nr_runs;
	s->kernel_names = names;
	s->stats.kernel_symbols = text;
	free(line);
	return (int)(text > INT32_MAX ? INT32_MAX : text);

err_out:
	free(line);
	free(syms);
	free(packed);
	free(runs);
	free(names);
	return err;
}

/* The run holding ksym k. */
static const struct ksym_run *ksym_run_of(const struct symbolizer *s, size_t k)
{
	size_t lo = 0, hi = s->nr_ksym_runs;

	while (lo + 1 < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->ksym_runs[mid].first <= k)
			lo = mid;
		else
			hi = mid;
	}
	return &s->ksym_runs[lo];
}

static uint64_t ksym_addr(const struct symbolizer *s, size_t k)
{
	return ksym_run_of(s, k)->hi | s->ksyms[k].lo;
}

/* One past the last ksym at or below addr (0: none). */
static size_t ksym_upper_bound(const struct symbolizer *s, uint64_t addr)
{
	size_t lo = 0, hi = s->nr_ksym_runs, end;
	const struct ksym_run *r;

	/* The last run starting at or below addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if ((s->ksym_runs[mid].hi | s->ksyms[s->ksym_runs[mid].first].lo) <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return 0;
	r = &s->ksym_runs[lo - 1];
	end = lo < s->nr_ksym_runs ? s->ksym_runs[lo].first : s->nr_ksyms;
	/* Past the run's upper bits: every symbol of the run is below addr. */
	if ((addr & ~0xffffffffULL) != r->hi)
		return end;
	lo = r->first;
	hi = end;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->ksyms[mid].lo <= (uint32_t)addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int symbolizer__symbolize_kernel(struct symbolizer *s, uint64_t addr, struct sym_frame *frame)
{
	size_t lo, k;
	uint64_t at;

	/* One past the last entry at or below addr. */
	lo = ksym_upper_bound(s, addr);
	if (!lo)
		return 0;
	at = ksym_addr(s, lo - 1);
	/* Nothing bounds the last symbol: name only addresses close to it. */
	if (lo == s->nr_ksyms && addr - at > LAST_SYMBOL_SPAN)
		return 0;
	/* Among entries at the same address prefer one with a name. */
	for (k = lo; k > 0 && ksym_addr(s, k - 1) == at; k--) {
		const struct ksym_run *r = ksym_run_of(s, k - 1);

		if (!s->ksyms[k - 1].name)
			continue;
		memset(frame, 0, sizeof(*frame));
		frame->name = s->kernel_names + s->ksyms[k - 1].name;
		frame->system_name = frame->name;
		frame->file = r->module ? s->kernel_names + r->module : NULL;
		frame->start = at;
		return 1;
	}
	return 0;
}
