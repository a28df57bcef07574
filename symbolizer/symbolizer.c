// SPDX-License-Identifier: Apache-2.0
/*
 * The symbolizer object and its symbol-table cache.
 *
 * Tables are keyed by build ID (or by file identity for files without one), so identical
 * binaries in many containers share one table. The cache holds at most opts.cache_max_bytes
 * of tables and evicts the least recently used first; the caller drops the tables no lookup
 * used for a while as well (symbolizer__drop_idle()). A dropped table is parsed again from
 * its object's descriptor on the next lookup.
 */
#include <errno.h>
#include <stdio.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer_internal.h"

void sym_log(const struct symbolizer *s, enum sym_log_level level, const char *fmt, ...)
{
	va_list ap;

	if (!s->opts.print)
		return;
	va_start(ap, fmt);
	s->opts.print(level, fmt, ap);
	va_end(ap);
}

int sym_cmp_table(const void *a, const void *b)
{
	return sym_cmp_table_key(&((const struct symtab *)a)->key,
				 &((const struct symtab *)b)->key);
}

int sym_cmp_table_key(const struct symtab_key *x, const struct symtab_key *y)
{
	if (x->kind != y->kind)
		return x->kind - y->kind;
	if (x->len != y->len)
		return x->len - y->len;
	return memcmp(x->data, y->data, x->len);
}

struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts)
{
	struct symbolizer *s;

	if (opts && opts->sz && opts->sz != sizeof(*opts)) {
		errno = EINVAL;
		return NULL;
	}
	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (opts)
		s->opts = *opts;
	if (!s->opts.cache_max_bytes)
		s->opts.cache_max_bytes = SYMBOLIZER_DEFAULT_CACHE_BYTES;
	return s;
}

static void lru_unlink(struct symbolizer *s, struct symtab *t)
{
	if (t->lru_prev)
		t->lru_prev->lru_next = t->lru_next;
	else
		s->lru_head = t->lru_next;
	if (t->lru_next)
		t->lru_next->lru_prev = t->lru_prev;
	else
		s->lru_tail = t->lru_prev;
	t->lru_prev = t->lru_next = NULL;
}

static void lru_push_front(struct symbolizer *s, struct symtab *t)
{
	t->lru_prev = NULL;
	t->lru_next = s->lru_head;
	if (s->lru_head)
		s->lru_head->lru_prev = t;
	s->lru_head = t;
	if (!s->lru_tail)
		s->lru_tail = t;
}

void sym_table_drop(struct symbolizer *s, struct symtab *t)
{
	lru_unlink(s, t);
	tdelete(t, &s->tables, sym_cmp_table);
	s->stats.cache_bytes -= t->bytes;
	s->stats.tables--;
	s->evict_gen++;
	symtab__free(t);
}

static void forget(void *node)
{
	(void)node;
}

void symbolizer__free(struct symbolizer *s)
{
	if (!s)
		return;
	while (s->lru_head)
		sym_table_drop(s, s->lru_head);
	/* Objects still referenced by the caller are the caller's leak; forget the index. */
	tdestroy(s->objects, forget);
	while (s->nr_scratch)
		free(s->scratch[--s->nr_scratch]);
	sym_debug_files_free(s);
	free(s->ksyms);
	free(s->ksym_runs);
	free(s->kernel_names);
	free(s);
}

void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *stats)
{
	*stats = s->stats;
}

/* Close t's DWARF handle, if open. Returns the bytes released. */
static size_t release_dwarf(struct symbolizer *s, struct symtab *t)
{
	size_t before = sym_dwarf__bytes(t->dwarf), released = sym_dwarf__release(t->dwarf);

	if (!released)
		return 0;
	t->bytes -= before - sym_dwarf__bytes(t->dwarf);
	s->stats.cache_bytes -= before - sym_dwarf__bytes(t->dwarf);
	s->stats.dwarf_released++;
	return released;
}

size_t symbolizer__release_dwarf(struct symbolizer *s)
{
	struct symtab *t;
	size_t total = 0;

	for (t = s->lru_head; t; t = t->lru_next)
		total += release_dwarf(s, t);
	return total;
}

/* Keep the cache within budget, never evicting `keep` (the table just used): first close
 * the DWARF handles of the others, least recently used first (cheap: they open again on
 * demand), then drop whole tables. */
static void enforce_budget(struct symbolizer *s, const struct symtab *keep)
{
	struct symtab *t;

	for (t = s->lru_tail; t && s->stats.cache_bytes > s->opts.cache_max_bytes; t = t->lru_prev)
		if (t != keep)
			release_dwarf(s, t);
	while (s->stats.cache_bytes > s->opts.cache_max_bytes && s->lru_tail &&
	       s->lru_tail != keep) {
		sym_table_drop(s, s->lru_tail);
		s->stats.tables_evicted++;
	}
}

size_t symbolizer__drop_idle(struct symbolizer *s, unsigned int max_idle)
{
	size_t before = s->stats.cache_bytes;

	/* The list is in order of last use, so the idle tables are its tail. */
	while (max_idle && s->lru_tail && s->period - s->lru_tail->used >= max_idle) {
		sym_table_drop(s, s->lru_tail);
		s->stats.tables_expired++;
	}
	s->period++;
	return before - s->stats.cache_bytes;
}

static struct symtab *load_table(struct symbolizer *s, struct sym_object *o)
{
	struct symtab *t;
	Elf *elf, *extra = NULL;
	void *mini = NULL;
	size_t mini_size = 0;
	int err, fd;

	/* A separate debug file, when one was accepted for this build, has the symbols. */
	fd = o->image ? -1 : sym_debug_fd(s, &o->key);
	if (fd < 0)
		fd = o->fd;
	if (o->image)
		elf = elf_memory(o->image, o->image_size);
	else
		elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		err = -EINVAL;
		goto err_out;
	}
	/* A stripped binary without a debug file may carry MiniDebugInfo. */
	if (fd == o->fd && !o->has_symtab && !o->has_dwarf &&
	    !sym_minidebug_image(elf, &mini, &mini_size)) {
		extra = elf_memory(mini, mini_size);
		if (extra && elf_kind(extra) != ELF_K_ELF) {
			elf_end(extra);
			extra = NULL;
		}
	}
	t = symtab__build(elf, extra, &o->key);
	err = t ? 0 : -errno;
	/* A Go binary without DWARF (-ldflags=-w, or '-s -w' without .symtab too) still has its
	 * pclntab, with lines and inlined calls that a .symtab lacks. */
	if (t && fd == o->fd && !o->has_dwarf) {
		t->go = sym_gopcln__open(elf);
		if (t->go) {
			t->bytes += sym_gopcln__bytes(t->go);
			sym_log(s, SYM_LOG_DEBUG, "%s: Go pclntab (Go %s), %u functions%s", o->name,
				sym_gopcln__version(t->go) == 118 ? "1.18-1.19" : "1.20+",
				sym_gopcln__count(t->go),
				sym_gopcln__has_inline(t->go) ? " with inline trees" : "");
		} else if (errno != ENOENT) {
			sym_log(s, SYM_LOG_INFO, "%s: Go pclntab not read: %s", o->name,
				errno == ENOTSUP ? "a layout before Go 1.18 or a 32-bit target" :
						   strerror(errno));
		}
	}
	if (extra)
		elf_end(extra);
	free(mini);
	elf_end(elf);
	if (err)
		goto err_out;
	/* DWARF, when the file carries it: names, lines and inline frames. */
	if (!o->image) {
		/* One object's DWARF may take half the budget while open, no more. */
		t->dwarf = sym_dwarf__open(fd, s->opts.cache_max_bytes / 2);
		if (!t->dwarf && errno == E2BIG)
			sym_log(s, SYM_LOG_INFO,
				"%s: DWARF larger than half the symbol cache (%zu MiB): names "
				"from its symbol table only, no inline frames or lines (raise the "
				"cache size to use it)",
				o->name, s->opts.cache_max_bytes >> 20);
		t->bytes += sym_dwarf__bytes(t->dwarf);
	}
	if (!tsearch(t, &s->tables, sym_cmp_table)) {
		symtab__free(t);
		err = -ENOMEM;
		goto err_out;
	}
	lru_push_front(s, t);
	s->stats.cache_bytes += t->bytes;
	s->stats.tables_loaded++;
	s->stats.tables++;
	sym_log(s, SYM_LOG_DEBUG, "%s: %zu symbols%s, %zu bytes", o->name, t->nr_syms,
		t->dwarf ? " and DWARF" : "", t->bytes);
	enforce_budget(s, t);
	return t;

err_out:
	sym_log(s, SYM_LOG_DEBUG, "%s: cannot read symbols: %s", o->name, strerror(-err));
	/* Malformed files stay malformed; memory shortage may pass. */
	if (err != -ENOMEM)
		o->symtab_err = err;
	errno = -err;
	return NULL;
}

/* The object's table, from the object's cached pointer, the cache, or the file. */
static struct symtab *get_table(struct symbolizer *s, struct sym_object *o)
{
	struct symtab key, **found, *t;

	if (o->symtab && o->symtab_gen == s->evict_gen) {
		t = o->symtab;
	} else if (o->symtab_err) {
		errno = -o->symtab_err;
		return NULL;
	} else {
		key.key = o->key;
		found = tfind(&key, &s->tables, sym_cmp_table);
		t = found ? *found : load_table(s, o);
		if (!t)
			return NULL;
		o->symtab = t;
		o->symtab_gen = s->evict_gen;
	}
	if (s->lru_head != t) {
		lru_unlink(s, t);
		lru_push_front(s, t);
	}
	t->used = s->period;
	return t;
}

/*
 * The name users read for a table entry: demangled once, on its first lookup (most symbols
 * of a big C++ library are never sampled), and kept in the table's name buffer, whose growth
 * counts against the cache budget.
 */
static const char *demangled_name(struct symbolizer *s, struct symtab *t, struct sym_entry *e)
{
	char *d, *names;
	size_t len, cap;

	if (e->demangled == SYM_NOT_MANGLED)
		return t->names + e->name;
	if (e->demangled)
		return t->names + e->demangled;
	d = sym_demangle(t->names + e->name);
	if (!d) {
		e->demangled = SYM_NOT_MANGLED;
		return t->names + e->name;
	}
	len = strlen(d) + 1;
	if (t->names_len + len > UINT32_MAX - 1) {
		free(d);
		e->demangled = SYM_NOT_MANGLED;
		return t->names + e->name;
	}
	cap = t->names_cap;
	if (t->names_len + len > cap) {
		cap = (t->names_len + len) * 5 / 4 + 64;
		names = realloc(t->names, cap);
		if (!names) {
			free(d);
			return t->names + e->name; /* try again on the next lookup */
		}
		t->names = names;
		t->bytes += cap - t->names_cap;
		s->stats.cache_bytes += cap - t->names_cap;
		t->names_cap = cap;
	}
	memcpy(t->names + t->names_len, d, len);
	free(d);
	e->demangled = (uint32_t)t->names_len;
	t->names_len += len;
	return t->names + e->demangled;
}

/* A name made for this call, freed by the next one. */
static const char *scratch(struct symbolizer *s, char *name)
{
	if (s->nr_scratch >= SYM_MAX_SCRATCH) {
		free(name);
		return NULL;
	}
	s->scratch[s->nr_scratch++] = name;
	return name;
}

static int dwarf_frames(struct symbolizer *s, struct symtab *t, uint64_t vaddr,
			struct sym_frame *frames, int max)
{
	struct sym_dwarf_frame df[SYM_MAX_SCRATCH];
	const char *name;
	char *d;
	int n, i;

	n = sym_dwarf__lookup(t->dwarf, vaddr, df, max < SYM_MAX_SCRATCH ? max : SYM_MAX_SCRATCH);
	for (i = 0; i < n; i++) {
		name = df[i].name;
		if (df[i].linkage_name) {
			d = sym_demangle(df[i].linkage_name);
			name = d ? scratch(s, d) : NULL;
			if (!name)
				name = df[i].name ? df[i].name : df[i].linkage_name;
		}
		frames[i].name = name;
		frames[i].system_name = df[i].linkage_name ? df[i].linkage_name : df[i].name;
		frames[i].file = df[i].file;
		if (df[i].file && df[i].file[0] != '/' && df[i].comp_dir &&
		    asprintf(&d, "%s/%s", df[i].comp_dir, df[i].file) > 0)
			frames[i].file = scratch(s, d) ?: df[i].file;
		frames[i].line = df[i].line;
		frames[i].start = df[i].start;
	}
	return n;
}

/* DWARF frames of vaddr, from the table's address cache or resolved and then cached. */
static int cached_dwarf_frames(struct symbolizer *s, struct symtab *t, uint64_t vaddr,
			       struct sym_frame *frames, int max)
{
	size_t before;
	int n;

	if (t->cache) {
		n = addr_cache__get(t->cache, vaddr, frames, max);
		if (n >= 0) {
			s->stats.addr_hits++;
			return n;
		}
	} else {
		t->cache = addr_cache__new();
		t->bytes += addr_cache__bytes(t->cache);
		s->stats.cache_bytes += addr_cache__bytes(t->cache);
	}
	before = sym_dwarf__bytes(t->dwarf);
	n = dwarf_frames(s, t, vaddr, frames, max);
	/* A CU's scope index is built on its first lookup: it counts against the budget too. */
	t->bytes += sym_dwarf__bytes(t->dwarf) - before;
	s->stats.cache_bytes += sym_dwarf__bytes(t->dwarf) - before;
	if (t->cache && n >= 0) {
		before = addr_cache__bytes(t->cache);
		if (!addr_cache__put(t->cache, vaddr, frames, n)) {
			t->bytes += addr_cache__bytes(t->cache) - before;
			s->stats.cache_bytes += addr_cache__bytes(t->cache) - before;
			n = addr_cache__get(t->cache, vaddr, frames, max);
			enforce_budget(s, t);
		}
	}
	return n;
}

int symbolizer__prefetch(struct symbolizer *s, struct sym_object *o, const uint64_t *vaddrs,
			 size_t n)
{
	struct sym_frame frames[SYM_MAX_SCRATCH];
	struct symtab *t;
	size_t i;

	t = get_table(s, o);
	if (!t)
		return errno ? -errno : -EINVAL;
	for (i = 0; t->dwarf && i < n; i++) {
		if (i && vaddrs[i] == vaddrs[i - 1])
			continue;
		if (t->cache && addr_cache__get(t->cache, vaddrs[i], frames, SYM_MAX_SCRATCH) >= 0)
			continue;
		cached_dwarf_frames(s, t, vaddrs[i], frames, SYM_MAX_SCRATCH);
		while (s->nr_scratch)
			free(s->scratch[--s->nr_scratch]);
	}
	release_dwarf(s, t);
	return 0;
}

int symbolizer__symbolize(struct symbolizer *s, struct sym_object *o, uint64_t vaddr,
			  struct sym_frame *frames, int max)
{
	const struct sym_entry *e;
	struct symtab *t;
	int n;

	s->stats.lookups++;
	while (s->nr_scratch)
		free(s->scratch[--s->nr_scratch]);
	if (max <= 0)
		return -EINVAL;
	t = get_table(s, o);
	if (!t) {
		s->stats.errors++;
		return errno ? -errno : -EINVAL;
	}
	if (t->dwarf) {
		n = cached_dwarf_frames(s, t, vaddr, frames, max);
		if (n > 0) {
			s->stats.hits++;
			return n;
		}
	}
	if (t->go) {
		n = sym_gopcln__lookup(t->go, vaddr, frames, max);
		if (n > 0) {
			s->stats.hits++;
			return n;
		}
	}
	e = symtab__lookup(t, vaddr);
	if (!e) {
		s->stats.misses++;
		return 0;
	}
	s->stats.hits++;
	memset(&frames[0], 0, sizeof(frames[0]));
	/* Demangling may grow (move) the name buffer: take both names after it. */
	frames[0].name = demangled_name(s, t, (struct sym_entry *)e);
	frames[0].system_name = t->names + e->name;
	frames[0].start = e->start;
	return 1;
}
