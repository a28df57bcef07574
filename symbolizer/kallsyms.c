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

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

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
	struct ksym *syms = NULL;
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

	free(s->ksyms);
	free(s->kernel_names);
	s->ksyms = syms;
	s->nr_ksyms = nr;
	s->kernel_names = names;
	s->stats.kernel_symbols = text;
	free(line);
	return (int)(text > INT32_MAX ? INT32_MAX : text);

err_out:
	free(line);
	free(syms);
	free(names);
	return err;
}

int symbolizer__symbolize_kernel(struct symbolizer *s, uint64_t addr, struct sym_frame *frame)
{
	size_t lo, k;
	const struct ksym *e;

	/* One past the last entry at or below addr. */
	lo = sym_upper_bound(s->ksyms, s->nr_ksyms, sizeof(*s->ksyms), addr);
	if (!lo)
		return 0;
	/* Nothing bounds the last symbol: name only addresses close to it. */
	if (lo == s->nr_ksyms && addr - s->ksyms[lo - 1].addr > LAST_SYMBOL_SPAN)
		return 0;
	/* Among entries at the same address prefer one with a name. */
	for (k = lo; k > 0 && s->ksyms[k - 1].addr == s->ksyms[lo - 1].addr; k--) {
		e = &s->ksyms[k - 1];
		if (!e->name)
			continue;
		memset(frame, 0, sizeof(*frame));
		frame->name = s->kernel_names + e->name;
		frame->system_name = frame->name;
		frame->file = e->module ? s->kernel_names + e->module : NULL;
		frame->start = e->addr;
		return 1;
	}
	return 0;
}
