// SPDX-License-Identifier: Apache-2.0
/*
 * mkwindows: write the window files of a made-up busy host, as the agent's local folder holds
 * them (agent/ship/sink_file.c names, agent/profile/window.c tables, agent/cycle.c comments),
 * built and encoded by the agent's own profile builder and pprof encoder. For `ignis report`
 * and `ignis diff`: their tests (golden outputs) and the bench (a day of windows).
 *
 * The host is fixed by --seed: ~30 binaries (the kernel, libc, libpython, a JVM, servers with
 * C++ and Go names), a few thousand functions, --processes processes and a pool of stacks
 * (depth 10-40) with Zipf weights. Each window is seeded by (seed, seq) alone, so a file is
 * the same whatever --windows or --jobs. See usage() for the options.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "profile/pprof.h"
#include "profile/profile.h"

#ifndef IGNIS_VERSION_SHORT
#define IGNIS_VERSION_SHORT "0.0.0"
#endif

enum kind { K_KERNEL, K_C, K_CXX, K_GO, K_PY };

/* A binary: its fixed (real) function names, then generated ones up to nr. */
struct binary {
	const char *path, *prefix; /* prefix: C name prefix, C++ namespace or Go package */
	enum kind kind;
	uint32_t nr;
	int debug; /* has DWARF: file names, line numbers, inline frames */
	const char *fixed;
	uint32_t first; /* index of its first function */
	char build_id[41];
	int64_t mapping; /* in the current profile */
};

enum { B_KERNEL, B_LIBC, B_PYTHON_EXE, B_LIBPYTHON, B_PY, B_JAVA, B_LIBJVM, B_FIRST_APP };

static struct binary bins[] = {
	{ "[kernel.kallsyms]", "", K_KERNEL, 420, 0,
	  "entry_SYSCALL_64_after_hwframe do_syscall_64 asm_exc_page_fault exc_page_fault "
	  "asm_sysvec_apic_timer_interrupt sysvec_apic_timer_interrupt __schedule schedule "
	  "ret_from_fork_asm ret_from_fork kthread worker_thread process_one_work" },
	{ "/usr/lib/x86_64-linux-gnu/libc.so.6", "__", K_C, 160, 0,
	  "__libc_start_main_impl __libc_start_call_main __clone3 start_thread malloc _int_malloc "
	  "free _int_free __memmove_avx_unaligned_erms __memset_avx2_unaligned_erms __strlen_avx2 "
	  "read write __poll epoll_wait pthread_cond_wait ___pthread_mutex_lock qsort_r "
	  "__vfprintf_internal __futex_abstimed_wait_common" },
	{ "/usr/bin/python3.11", "", K_C, 3, 0, "_start main" },
	{ "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", "_Py", K_C, 300, 0,
	  "Py_BytesMain Py_RunMain pymain_run_python _PyRun_SimpleFileObject run_mod PyEval_EvalCode "
	  "_PyEval_EvalFrameDefault _PyFunction_Vectorcall PyObject_Vectorcall _PyObject_MakeTpCall "
	  "method_vectorcall dict_subscript _PyObject_Malloc list_dealloc unicode_hash" },
	{ "", "", K_PY, 500, 1, "<module> __init__ wrapper <listcomp> __call__" },
	{ "/usr/lib/jvm/java-17-openjdk-amd64/bin/java", "", K_C, 3, 0, "_start main" },
	{ "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so", "", K_CXX, 1400, 1,
	  "thread_native_entry(Thread*)|Thread::call_run()|JavaThread::thread_main_inner()|"
	  "WorkerThread::run()|VMThread::run()|CompileBroker::compiler_thread_loop()" },
	{ "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30", "std", K_CXX, 160, 0, "" },
	{ "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "_dl_", K_C, 30, 0, "" },
	{ "/usr/lib/x86_64-linux-gnu/libm.so.6", "__ieee754_", K_C, 40, 0, "" },
	{ "/usr/lib/x86_64-linux-gnu/libssl.so.3", "ssl3_", K_C, 120, 0, "SSL_read SSL_write" },
	{ "/usr/lib/x86_64-linux-gnu/libcrypto.so.3", "EVP_", K_C, 200, 0, "aesni_gcm_encrypt" },
	{ "/usr/lib/x86_64-linux-gnu/libz.so.1.2.13", "", K_C, 40, 0, "deflate longest_match" },
	{ "/usr/lib/x86_64-linux-gnu/libzstd.so.1.5.4", "ZSTD_", K_C, 60, 0, "" },
	{ "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0.8.6", "sqlite3", K_C, 150, 0, "" },
	{ "/usr/lib/x86_64-linux-gnu/libcurl.so.4.8.0", "Curl_", K_C, 80, 0, "" },
	{ "/usr/lib/x86_64-linux-gnu/libsystemd.so.0.35.0", "sd_", K_C, 60, 0, "" },
	{ "/usr/lib/x86_64-linux-gnu/libgcc_s.so.1", "_Unwind_", K_C, 12, 0, "" },
	{ "/usr/lib/x86_64-linux-gnu/libpcre2-8.so.0.11.2", "pcre2_", K_C, 40, 0, "" },
	{ "/usr/lib/x86_64-linux-gnu/liblzma.so.5.4.1", "lzma_", K_C, 40, 0, "" },
	{ "/usr/sbin/nginx", "ngx_http_", K_C, 250, 1, "_start main" },
	{ "/usr/lib/postgresql/15/bin/postgres", "Exec", K_C, 400, 1, "_start main" },
	{ "/usr/local/bin/envoy", "Envoy::Http", K_CXX, 600, 1, "_start|main" },
	{ "/usr/bin/redis-server", "redis", K_C, 150, 1, "_start main" },
	{ "/usr/bin/node", "v8::internal", K_CXX, 500, 1, "_start|main" },
	{ "/usr/sbin/sshd", "ssh_", K_C, 60, 0, "_start main" },
	{ "/usr/lib/systemd/systemd-journald", "journal_", K_C, 60, 0, "_start main" },
	{ "/usr/bin/dockerd", "github.com/docker/docker/daemon", K_GO, 300, 1,
	  "runtime.goexit.abi0" },
	{ "/usr/bin/containerd", "github.com/containerd/containerd", K_GO, 250, 1,
	  "runtime.goexit.abi0" },
	{ "/usr/sbin/rsyslogd", "rs_", K_C, 60, 0, "_start main" },
};

/* clang-format off */
static const char *const verbs[] = {
	"read", "write", "parse", "init", "handle", "process", "find", "insert", "update", "flush",
	"send", "recv", "alloc", "free", "hash", "lookup", "encode", "decode", "copy", "merge",
	"scan", "sort", "compare", "emit" };
static const char *const nouns[] = {
	"request", "header", "buffer", "chunk", "table", "index", "page", "tuple", "conn", "event",
	"timer", "block", "entry", "node", "key", "value", "list", "cache", "frame", "packet", "file",
	"stream", "state", "record" };
static const char *const classes[] = {
	"ConnectionManager", "FilterChain", "Codec", "Dispatcher", "Parser", "Buffer", "Router",
	"Cluster", "Stream", "Heap", "Allocator", "Session", "Worker", "Scheduler", "Encoder",
	"G1CollectedHeap", "PhaseIdealLoop", "Compile", "Matcher", "ObjectMonitor", "SharedRuntime",
	"InstanceKlass" };
static const char *const py_modules[] = {
	"app", "views", "models", "db", "serializers", "cache", "auth", "utils", "tasks", "handlers" };
/* clang-format on */
/* Argument lists, demangled and as the Itanium ABI mangles them. */
static const char *const args[][2] = {
	{ "()", "v" },
	{ "(int)", "i" },
	{ "(unsigned long)", "m" },
	{ "(char const*, unsigned long)", "PKcm" },
	{ "(bool)", "b" },
	{ "(void*, int)", "Pvi" },
	{ "(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&)",
	  "RKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE" },
};

struct func {
	char *name, *system_name;
	const char *file;
	uint32_t bin, line;
	uint64_t addr;
	int inl; /* its locations have inline frames */
};

/* Processes: a spec per program, instances taken round-robin. */
struct proc_spec {
	const char *comm, *unit, *threads;
	int exe, kind, libs[4], heat;
};
enum { P_NATIVE, P_PYTHON, P_JVM, P_GO, P_KTHREAD };
/* clang-format off */
static const struct proc_spec specs[] = {
	{ "gunicorn", "app.service", "gunicorn", B_PYTHON_EXE, P_PYTHON, { 10, 11, 14 }, 8 },
	{ "java", "kafka.service", "GC Thread#|C2 CompilerThre|data-plane-kafk", B_JAVA, P_JVM,
	  { 7, 12 }, 9 },
	{ "postgres", "postgresql@15-main.service", "postgres", 21, P_NATIVE, { 9, 12 }, 6 },
	{ "nginx", "nginx.service", "nginx", 20, P_NATIVE, { 10, 11, 12, 18 }, 4 },
	{ "envoy", NULL, "wrk:worker_|envoy", 22, P_NATIVE, { 7, 10, 11, 17 }, 7 },
	{ "node", NULL, "node|libuv-worker", 24, P_NATIVE, { 7, 10, 11, 9 }, 5 },
	{ "redis-server", "redis-server.service", "redis-server|bio_close_file", 23, P_NATIVE, { 9 },
	  3 },
	{ "python3", "celery.service", "python3", B_PYTHON_EXE, P_PYTHON, { 13, 19 }, 4 },
	{ "dockerd", "docker.service", "dockerd", 27, P_GO, { 0 }, 2 },
	{ "containerd", "containerd.service", "containerd", 28, P_GO, { 0 }, 2 },
	{ "kworker/0:1", NULL, "kworker/0:1", 0, P_KTHREAD, { 0 }, 1 },
	{ "sshd", "ssh.service", "sshd", 25, P_NATIVE, { 10, 11, 19 }, 1 },
	{ "systemd-journal", "systemd-journald.service", "systemd-journal", 26, P_NATIVE,
	  { 16, 19 }, 1 },
	{ "rsyslogd", "rsyslog.service", "rs:main Q:Reg", 29, P_NATIVE, { 12 }, 1 },
};
/* clang-format on */

struct proc {
	int64_t pid;
	const struct proc_spec *spec;
	char tnames[8][16];
	int nr_threads;
};

enum { F_TRUNCATED = 1, F_UNKNOWN = 2 };
#define MAX_DEPTH 96 /* of a pool stack, with the phase's leaf */
struct stack {
	uint32_t proc, thread, depth, kdepth, flags;
	double weight;
	uint32_t *frames; /* root first, user then kernel; each fn << 3 | call site */
};

/* clang-format off */
static struct opts {
	const char *dir, *host, *version, *phase;
	uint64_t windows, start, interval, cpus, hz, processes, stacks, seed, jobs, gzip_level;
	int offcpu;
	int64_t corrupt, garbage;
} o = { .host = "busy-host", .version = IGNIS_VERSION_SHORT, .windows = 1, .start = 1767225600,
	.interval = 10, .cpus = 2, .hz = 100, .processes = 40, .stacks = 300, .seed = 1, .jobs = 1,
	.gzip_level = 6, .corrupt = -1, .garbage = -1 };
/* clang-format on */

static struct func *funcs;
static uint32_t nr_funcs, phase_fn[2];
static struct proc *procs;
static struct stack *stacks;
static uint32_t nr_stacks;
static double *cum; /* cumulative stack weights */

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t rng;
static uint32_t below(uint32_t n)
{
	rng += 0x9e3779b97f4a7c15ULL;
	return n ? (uint32_t)(mix(rng) % n) : 0;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p) {
		fprintf(stderr, "mkwindows: out of memory\n");
		exit(2);
	}
	return p;
}

static char *xstrdup(const char *s)
{
	return strcpy(xcalloc(1, strlen(s) + 1), s);
}

static uint32_t add_func(uint32_t bin, const char *name, const char *system_name)
{
	struct binary *b = &bins[bin];
	struct func *f = &funcs[nr_funcs];
	static char file[64];

	f->bin = bin;
	f->name = xstrdup(name);
	f->system_name = xstrdup(system_name);
	f->addr = (b->kind == K_KERNEL ? 0xffffffff81000000ULL : 0x1000) + 0x40ULL * nr_funcs +
		  0x100ULL * below(64);
	f->file = "";
	if (b->kind == K_PY) {
		snprintf(file, sizeof(file), "/app/%s.py",
			 py_modules[below(ARRAY_SIZE(py_modules))]);
		f->file = xstrdup(file);
	} else if (b->debug) {
		snprintf(file, sizeof(file), "src/%s_%s.%s", verbs[below(ARRAY_SIZE(verbs))],
			 nouns[below(ARRAY_SIZE(nouns))],
			 b->kind == K_CXX ? "cc" :
			 b->kind == K_GO  ? "go" :
					    "c");
		f->file = xstrdup(file);
	}
	if (b->debug)
		f->line = 10 + below(2000);
	f->inl = b->debug && b->kind != K_PY && below(100) < 15;
	return nr_funcs++;
}

/* One generated name of b's kind. */
static void gen_name(const struct binary *b, char *name, char *sys, size_t size)
{
	const char *v = verbs[below(ARRAY_SIZE(verbs))], *n = nouns[below(ARRAY_SIZE(nouns))];
	const char *n2 = nouns[below(ARRAY_SIZE(nouns))], *cl = classes[below(ARRAY_SIZE(classes))];
	uint32_t a = below(ARRAY_SIZE(args)), c = below(4) == 0;
	char ns[64], mns[96] = "", *tok, *save = NULL;

	switch (b->kind) {
	case K_CXX:
		snprintf(ns, sizeof(ns), "%s", b->prefix);
		for (tok = strtok_r(ns, ":", &save); tok; tok = strtok_r(NULL, ":", &save))
			snprintf(mns + strlen(mns), sizeof(mns) - strlen(mns), "%zu%s", strlen(tok),
				 tok);
		snprintf(name, size, "%s%s%s::%s%c%s%s%s", b->prefix, *b->prefix ? "::" : "", cl, v,
			 n[0] - 32, n + 1, args[a][0], c ? " const" : "");
		snprintf(sys, size, "_ZN%s%s%zu%s%zu%s%c%sE%s", c ? "K" : "", mns, strlen(cl), cl,
			 strlen(v) + strlen(n), v, n[0] - 32, n + 1, args[a][1]);
		break;
	case K_GO:
		snprintf(name, size, "%s/%s.(*%s).%c%s%c%s", b->prefix, n, cl, v[0] - 32, v + 1,
			 n2[0] - 32, n2 + 1);
		snprintf(sys, size, "%s", name);
		break;
	case K_KERNEL: {
		static const char *const kp[] = { "tcp_", "ext4_", "__x64_sys_", "mm_",	 "sched_",
						  "blk_", "nvme_", "sock_",	 "skb_", "vfs_",
						  "" };

		snprintf(name, size, "%s%s_%s", kp[below(ARRAY_SIZE(kp))], v, n);
		snprintf(sys, size, "%s", name);
		break;
	}
	case K_PY:
		snprintf(name, size, "%s_%s%s%s", v, n, c ? "_" : "", c ? n2 : "");
		sys[0] = '\0'; /* as window.c: a Python name is no mangled symbol */
		break;
	default:
		snprintf(name, size, "%s%s_%s%s%s", b->prefix, v, n, c ? "_" : "", c ? n2 : "");
		snprintf(sys, size, "%s", name);
	}
}

static uint32_t fn_named(uint32_t bin, const char *name)
{
	uint32_t i;

	for (i = bins[bin].first; i < bins[bin].first + bins[bin].nr; i++)
		if (!strcmp(funcs[i].name, name))
			return i;
	fprintf(stderr, "mkwindows: no %s in %s\n", name, bins[bin].path);
	exit(2);
}

/* A callee of fn in bin: a few per caller, fewer near the root, so that stacks share their
 * outer paths and part near the leaves, as real ones do. */
static uint32_t callee(uint32_t fn, uint32_t bin, uint32_t depth, uint32_t *site)
{
	uint32_t k = below(16) < (depth < 12 ? 15 : 10) ? 0 : below(4);
	uint32_t to = bins[bin].first + (uint32_t)(mix(fn * 31ULL + k) % bins[bin].nr);

	*site = k;
	return to != fn ? to : bins[bin].first + (to - bins[bin].first + 1) % bins[bin].nr;
}

static void push(struct stack *s, uint32_t fn, uint32_t site)
{
	s->frames[s->depth++] = fn << 3 | site;
}

static void walk(struct stack *s, uint32_t bin, uint32_t n)
{
	uint32_t fn = s->depth ? s->frames[s->depth - 1] >> 3 : bins[bin].first, site;

	while (n--) {
		fn = callee(fn, bin, s->depth, &site);
		push(s, fn, site);
	}
}

/* The stack pool: roots by process kind, a walk through its binaries, some kernel frames. */
static void make_stack(struct stack *s, uint32_t pi)
{
	const struct proc *p = &procs[pi];
	const struct proc_spec *sp = p->spec;
	uint32_t want = 10 + below(31), lib, k;

	s->proc = pi;
	s->thread = below((uint32_t)p->nr_threads);
	s->frames = xcalloc(MAX_DEPTH, sizeof(uint32_t));
	if (sp->kind == P_KTHREAD) {
		for (k = 8; k < 13; k++)
			push(s, bins[B_KERNEL].first + k, 0);
		walk(s, B_KERNEL, want / 3);
		s->kdepth = s->depth;
		return;
	}
	if (sp->kind == P_GO) {
		push(s, bins[sp->exe].first, 0);
		walk(s, (uint32_t)sp->exe, want - 3);
	} else if (sp->kind == P_JVM || s->thread) {
		push(s, fn_named(B_LIBC, "__clone3"), 0);
		push(s, fn_named(B_LIBC, "start_thread"), 0);
		if (sp->kind == P_PYTHON) /* a threading.Thread: into the eval loop */
			push(s, bins[B_LIBPYTHON].first + 7, 0);
		else
			walk(s, sp->kind == P_JVM ? B_LIBJVM : (uint32_t)sp->exe, want - 6);
	} else {
		push(s, fn_named((uint32_t)sp->exe, "_start"), 0);
		push(s, fn_named(B_LIBC, "__libc_start_main_impl"), 1);
		push(s, fn_named(B_LIBC, "__libc_start_call_main"), 0);
		push(s, fn_named((uint32_t)sp->exe, "main"), 2);
		if (sp->kind == P_PYTHON)
			for (k = 0; k < 6; k++)
				push(s, bins[B_LIBPYTHON].first + k, 0);
		else
			walk(s, (uint32_t)sp->exe, want > 8 ? want - 8 : 1);
	}
	if (sp->kind == P_PYTHON) {
		push(s, fn_named(B_LIBPYTHON, "_PyEval_EvalFrameDefault"), 3);
		do { /* Python frames, then back into C */
			walk(s, B_PY, 3 + below(8));
			walk(s, B_LIBPYTHON, 1 + below(2));
			push(s, fn_named(B_LIBPYTHON, "_PyEval_EvalFrameDefault"), 3);
		} while (s->depth + 6 < want);
	}
	lib = below(4) && sp->libs[0] ? (uint32_t)sp->libs[below(2)] : B_LIBC;
	walk(s, lib ? lib : B_LIBC, 1 + below(3));
	if (below(3) == 0)
		walk(s, B_LIBC, 1 + below(2));
	if (below(100) < 40) { /* on CPU in the kernel: a system call, a fault, an interrupt */
		uint32_t user = s->depth;

		k = below(3);
		push(s, bins[B_KERNEL].first + 2 * k, 0);
		push(s, bins[B_KERNEL].first + 2 * k + 1, 0);
		walk(s, B_KERNEL, 2 + below(7));
		s->kdepth = s->depth - user;
	}
	if (below(100) < 3)
		s->flags |= F_TRUNCATED;
	else if (below(100) < 2)
		s->flags |= F_UNKNOWN;
}

static void make_host(void)
{
	char name[256], sys[256], *fixed, *tok, *save;
	uint32_t total = 0, i, j;
	double w;

	for (i = 0; i < ARRAY_SIZE(bins); i++)
		total += bins[i].nr;
	funcs = xcalloc(total + 2, sizeof(*funcs));
	rng = mix(o.seed);
	for (i = 0; i < ARRAY_SIZE(bins); i++) {
		struct binary *b = &bins[i];

		b->first = nr_funcs;
		for (j = 0; j < 20; j++)
			sprintf(b->build_id + 2 * j, "%02x", below(256));
		fixed = xstrdup(b->fixed);
		save = NULL;
		for (tok = strtok_r(fixed, b->kind == K_CXX ? "|" : " ", &save); tok;
		     tok = strtok_r(NULL, b->kind == K_CXX ? "|" : " ", &save))
			add_func(i, tok, b->kind == K_PY ? "" : tok);
		free(fixed);
		while (nr_funcs < b->first + b->nr) {
			gen_name(b, name, sys, sizeof(name));
			add_func(i, name, sys);
		}
	}
	procs = xcalloc(o.processes, sizeof(*procs));
	for (i = 0; i < o.processes; i++) {
		struct proc *p = &procs[i];
		char tn[128], *t;
		uint32_t k;

		p->spec = &specs[i % ARRAY_SIZE(specs)];
		p->pid = (i ? procs[i - 1].pid : 700) + 1 + below(3000);
		p->nr_threads = p->spec->kind == P_KTHREAD ? 1 : 1 + (int)below(8);
		/* Thread 0 is the process's comm, the others the spec's names in turn ("GC
		 * Thread#" numbered). */
		snprintf(p->tnames[0], 16, "%s", p->spec->comm);
		for (j = 1; j < (uint32_t)p->nr_threads; j++) {
			snprintf(tn, sizeof(tn), "%s|", p->spec->threads);
			for (t = tn, k = 1 + j % 3; --k && strchr(t, '|')[1];)
				t = strchr(t, '|') + 1;
			*strchr(t, '|') = '\0';
			if (strchr("#_", t[strlen(t) - 1]))
				snprintf(p->tnames[j], 16, "%.12s%u", t, (j - 1) & 7);
			else
				snprintf(p->tnames[j], 16, "%.15s", t);
		}
	}
	nr_stacks = (uint32_t)o.stacks * 8;
	stacks = xcalloc(nr_stacks, sizeof(*stacks));
	cum = xcalloc(nr_stacks, sizeof(*cum));
	for (i = 0, w = 0; i < nr_stacks; i++) {
		uint32_t pi = below((uint32_t)o.processes);

		/* Hot processes take more stacks; ranks are random: Zipf weights. */
		if (below(10) >= (uint32_t)procs[pi].spec->heat)
			pi = below((uint32_t)o.processes);
		make_stack(&stacks[i], pi);
		stacks[i].weight = 1.0 / (1.0 + below(nr_stacks));
		cum[i] = w += stacks[i].weight;
	}
}

static uint32_t window_stamp; /* the window location() caches for, plus one */

static int64_t location(struct profile *p, uint32_t frame)
{
	static uint64_t *cache; /* per window: frame -> location id */
	static uint32_t *cache_win;
	struct profile_line lines[3] = { { 0 } };
	const struct func *f = &funcs[frame >> 3];
	struct binary *b = &bins[f->bin];
	struct profile_mapping m = { .memory_limit = UINT64_MAX, .has_functions = true };
	uint64_t addr = b->kind == K_PY ? 0 : f->addr + 0x14 + 0x1c * (frame & 7);
	uint32_t n = 0, i;
	int64_t id, fn;
	unsigned char key[21] = "b";

	if (!cache) {
		cache = xcalloc((size_t)nr_funcs << 3, sizeof(*cache));
		cache_win = xcalloc((size_t)nr_funcs << 3, sizeof(*cache_win));
	}
	if (cache_win[frame] == window_stamp)
		return (int64_t)cache[frame];
	if (b->kind != K_PY && !b->mapping) {
		m.filename = profile__string(p, b->path);
		m.build_id = profile__string(p, b->build_id);
		if (m.filename < 0 || m.build_id < 0)
			return -ENOMEM;
		for (i = 0; i < 20; i++)
			sscanf(b->build_id + 2 * i, "%2hhx", &key[1 + i]);
		b->mapping = f->bin == B_KERNEL ?
				     profile__mapping(p, b->path, strlen(b->path) + 1, &m) :
				     profile__mapping(p, key, sizeof(key), &m);
		if (b->mapping < 0)
			return b->mapping;
	}
	/* Inline frames, innermost first: callees from the same binary, fixed per address. */
	if (f->inl)
		for (n = 0; n < 1 + (frame & 1); n++)
			lines[n].function_id = b->first + mix(frame + n) % b->nr;
	lines[n++].function_id = frame >> 3;
	for (i = 0; i < n; i++) {
		const struct func *g = &funcs[lines[i].function_id];

		fn = profile__function(p, g->name, g->system_name, g->file, g->line);
		if (fn < 0)
			return fn;
		lines[i].function_id = (uint64_t)fn;
		lines[i].line = g->line ? g->line + 3 + 7 * (frame & 7) : 0;
	}
	id = profile__add_location(p, b->kind == K_PY ? 0 : (uint64_t)b->mapping, addr, TAG_NONE,
				   lines, n);
	if (id > 0) {
		cache[frame] = (uint64_t)id;
		cache_win[frame] = window_stamp;
	}
	return id;
}

struct window_stats {
	uint64_t frames, truncated, unknown, kthread, py, stacks, offcpu_samples, offcpu_ns;
};

/* Add a sample of stack s: leaf first, its kernel frames then its user frames. With offcpu_ns,
 * an off-CPU sample: its user frames under the scheduler's, labelled with a thread state. */
static int add_sample(struct profile *p, const struct stack *s, uint64_t count, uint64_t offcpu_ns,
		      int64_t state, const int64_t *keys, struct window_stats *ws)
{
	uint64_t locs[MAX_DEPTH + 8];
	uint32_t n = 0, i, user = s->depth - s->kdepth, cut = 0;
	struct profile_label l[6];
	const struct proc *pr = &procs[s->proc];
	int64_t id, nl = 4;

	if (offcpu_ns) {
		/* __schedule, schedule, do_syscall_64, entry_SYSCALL_64_after_hwframe */
		static const uint32_t sched[] = { 6, 7, 1, 0 };

		for (i = 0; i < ARRAY_SIZE(sched); i++)
			if ((id = location(p, (bins[B_KERNEL].first + sched[i]) << 3)) < 0)
				return (int)id;
			else
				locs[n++] = (uint64_t)id;
	} else {
		for (i = s->depth; i > user; i--)
			if ((id = location(p, s->frames[i - 1])) < 0)
				return (int)id;
			else
				locs[n++] = (uint64_t)id;
	}
	if (s->flags & F_TRUNCATED)
		cut = 2 + s->depth % 3;
	for (i = user; i > cut; i--) {
		if (i == user && (s->flags & F_UNKNOWN))
			id = profile__placeholder(p, TAG_UNKNOWN,
						  0x7f0000001000ULL + s->depth * 64);
		else
			id = location(p, s->frames[i - 1]);
		if (id < 0)
			return (int)id;
		locs[n++] = (uint64_t)id;
	}
	if (cut && (id = profile__placeholder(p, TAG_TRUNCATED, 0)) < 0)
		return (int)id;
	if (cut)
		locs[n++] = (uint64_t)id;
	l[0] = (struct profile_label){ .key = keys[0], .num = pr->pid };
	l[1] = (struct profile_label){ .key = keys[1], .num = pr->pid + s->thread };
	l[2] = (struct profile_label){ .key = keys[2], .str = profile__string(p, pr->spec->comm) };
	l[3] = (struct profile_label){ .key = keys[3],
				       .str = profile__string(p, pr->tnames[s->thread]) };
	if (pr->spec->unit)
		l[nl++] = (struct profile_label){ .key = keys[5],
						  .str = profile__string(p, pr->spec->unit) };
	if (state)
		l[nl++] = (struct profile_label){ .key = keys[4], .str = state };
	if (l[2].str < 0 || l[3].str < 0 || l[nl - 1].str < 0)
		return -ENOMEM;
	if (offcpu_ns) {
		ws->offcpu_samples++;
		ws->offcpu_ns += offcpu_ns;
	} else {
		ws->truncated += cut ? count : 0;
		ws->kthread += pr->spec->kind == P_KTHREAD ? count : 0;
	}
	return profile__add_group_values(p, 0, locs, n, l, (uint32_t)nl, count, offcpu_ns);
}

static uint32_t pick(const double *c, uint32_t n)
{
	double u = (double)below(1u << 30) / (1u << 30) * c[n - 1];
	uint32_t lo = 0, hi = n - 1;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (c[mid] <= u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Window seq's profile, encoded. Returns 0 or -errno. */
static int build_window(uint64_t seq, uint8_t **buf, size_t *len)
{
	static uint32_t *picked, *counts, *chosen, *seen;
	static double *ccum;
	static const char *const states[] = { "sleeping", "uninterruptible", "runnable" };
	static const char *const key_names[] = { "pid",		"tid",		"comm",
						 "thread_name", "thread_state", "unit" };
	struct profile_opts po = { .types = o.offcpu ? PROFILE_CPU_OFFCPU : PROFILE_CPU };
	struct window_stats ws = { 0 };
	uint64_t total, idle, profiled, phase_n = 0, i, nc = 0, tries, nproc = 0;
	int64_t keys[6];
	struct profile *p;
	char line[1024];
	int err = 0;

	if (!picked) {
		picked = xcalloc(nr_stacks, sizeof(*picked));
		seen = xcalloc(o.processes, sizeof(*seen));
		chosen = xcalloc(o.stacks + 1, sizeof(*chosen));
		counts = xcalloc(o.stacks + 1, sizeof(*counts));
		ccum = xcalloc(o.stacks + 1, sizeof(*ccum));
	}
	rng = mix(o.seed ^ mix(seq + 1));
	window_stamp++;
	po.period_ns = NSEC_PER_SEC / o.hz;
	/* The agent's clock: windows a little late, a little longer than the interval. */
	po.time_ns = (o.start + seq * o.interval) * NSEC_PER_SEC + below(5000) * NSEC_PER_USEC;
	po.duration_ns = o.interval * NSEC_PER_SEC + below(4000) * NSEC_PER_USEC;
	p = profile__new(&po);
	if (!p)
		return -errno;
	for (i = 0; i < ARRAY_SIZE(bins); i++)
		bins[i].mapping = 0;
	for (i = 0; i < ARRAY_SIZE(keys); i++) /* window.c's order, then image labels' */
		if ((keys[i] = profile__string(p, key_names[i])) < 0) {
			err = (int)keys[i];
			goto out;
		}
	total = o.hz * o.interval * o.cpus;
	total -= total > 100 ? below(3) : 0; /* a window is a few ms longer or shorter */
	idle = total * (10 + below(31)) / 100;
	profiled = total - idle;
	if (o.phase)
		phase_n = profiled / 4;
	/* A few hundred distinct stacks, by weight; each gets a sample, the rest by weight. */
	for (tries = 0; nc < o.stacks && nc < profiled - phase_n && tries < 20 * o.stacks;
	     tries++) {
		uint32_t s = pick(cum, nr_stacks);

		if (picked[s] == window_stamp)
			continue;
		picked[s] = window_stamp;
		chosen[nc] = s;
		counts[nc] = 1;
		ccum[nc] = (nc ? ccum[nc - 1] : 0) + stacks[s].weight;
		nc++;
	}
	for (i = nc + phase_n; i < profiled; i++)
		counts[pick(ccum, (uint32_t)nc)]++;
	for (i = 0; i < nc && !err; i++) {
		const struct stack *s = &stacks[chosen[i]];
		uint32_t f;

		err = add_sample(p, s, counts[i], 0, 0, keys, &ws);
		ws.frames += s->depth + !!(s->flags & F_TRUNCATED);
		ws.unknown += !!(s->flags & F_UNKNOWN);
		ws.stacks += 1 + !!s->kdepth;
		for (f = 0; f < s->depth; f++)
			ws.py += funcs[s->frames[f] >> 3].bin == B_PY;
		nproc += seen[s->proc] != window_stamp;
		seen[s->proc] = window_stamp;
		if (!err && o.offcpu && procs[s->proc].spec->kind != P_KTHREAD && below(4) == 0)
			err = add_sample(p, s, 0, (1 + below(2000)) * NSEC_PER_MSEC,
					 profile__string(p,
							 states[below(10) < 8 ? 0 : 1 + below(2)]),
					 keys, &ws);
	}
	if (!err && phase_n) { /* the phase's hot spot: a leaf under the hottest stack */
		struct stack s = stacks[nr_stacks];
		uint32_t frames[MAX_DEPTH];

		memcpy(frames, s.frames, s.depth * sizeof(frames[0]));
		s.frames = frames;
		s.depth -= s.kdepth;
		s.kdepth = 0;
		s.flags = 0;
		push(&s, phase_fn[seq >= o.windows / 2], 0);
		err = add_sample(p, &s, phase_n, 0, 0, keys, &ws);
	}
	if (err)
		goto out;
	snprintf(line, sizeof(line), "ignis %s on %s, window %" PRIu64, o.version, o.host, seq);
	err = profile__comment(p, line);
	if (err)
		goto out;
	snprintf(line, sizeof(line),
		 "samples %" PRIu64 " (%.1f Hz per CPU on %" PRIu64 " CPUs): %" PRIu64
		 " idle, 0 filtered, %" PRIu64 " profiled, 0 dropped",
		 total, (double)total * NSEC_PER_SEC / (double)po.duration_ns / (double)o.cpus,
		 o.cpus, idle, profiled);
	err = profile__comment(p, line);
	if (err)
		goto out;
	/* The table's order (bpf/stats.h, then agent/operate/stats.h), nonzero figures only. */
	snprintf(line, sizeof(line), "counters: samples=%" PRIu64 " idle=%" PRIu64, total, idle);
	if (ws.offcpu_samples)
		snprintf(line + strlen(line), sizeof(line) - strlen(line),
			 " offcpu_switches=%" PRIu64 " offcpu_samples=%" PRIu64,
			 ws.offcpu_samples * 40, ws.offcpu_samples);
	snprintf(line + strlen(line), sizeof(line) - strlen(line), " profiled=%" PRIu64, profiled);
#define FIG(key, v) \
	if (v)      \
		snprintf(line + strlen(line), sizeof(line) - strlen(line), " " key "=%" PRIu64, v);
	FIG("kthread", ws.kthread)
	FIG("truncated", ws.truncated)
	FIG("frames", ws.frames)
	FIG("unknown_frames", ws.unknown)
	FIG("py_named", ws.py)
	FIG("offcpu_ns", ws.offcpu_ns)
	FIG("processes", nproc)
	FIG("stacks", ws.stacks)
#undef FIG
	err = profile__comment(p, line);
	if (!err)
		err = pprof_encode(p, (int)o.gzip_level, buf, len);
out:
	profile__free(p);
	return err;
}

/* Write window seq into o.dir under the agent's name; cut or garbage for the tests. */
static int write_window(uint64_t seq)
{
	char path[4096], stamp[32], host[64];
	uint8_t *buf = NULL;
	size_t len = 0, i;
	time_t t;
	struct tm tm;
	FILE *f;
	int err = build_window(seq, &buf, &len);

	if (err)
		return err;
	for (i = 0; o.host[i] && i < sizeof(host) - 1; i++) /* as sink_file.c */
		host[i] = isalnum((unsigned char)o.host[i]) || strchr("-.", o.host[i]) ? o.host[i] :
											 '_';
	host[i] = '\0';
	t = (time_t)((o.start + seq * o.interval));
	gmtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(path, sizeof(path), "%s/%s_%s_w%06" PRIu64 ".pb.gz", o.dir, stamp, host, seq);
	if ((int64_t)seq == o.corrupt)
		len /= 2;
	if ((int64_t)seq == o.garbage)
		for (i = 0; i < len; i++)
			buf[i] = (uint8_t)below(256);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len)
		err = -errno;
	if (f && fclose(f) && !err)
		err = -errno;
	free(buf);
	if (err)
		fprintf(stderr, "mkwindows: %s: %s\n", path, strerror(-err));
	return err;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mkwindows --dir DIR [--host NAME] [--windows N] [--start UNIX_SECONDS]\n"
		"                 [--interval SECONDS] [--cpus N] [--hz N] [--processes N]\n"
		"                 [--stacks N] [--seed N] [--offcpu] [--phase FUNC_A:FUNC_B]\n"
		"                 [--corrupt SEQ] [--garbage SEQ] [--jobs N] [--gzip-level 1-9]\n"
		"                 [--agent-version V]\n"
		"Window files of a made-up busy host, as the agent writes them: seq 0..N-1 from\n"
		"--start (default 2026-01-01T00:00:00Z). --stacks: distinct stacks per window (pool:\n"
		"8 times that). --phase: a hot leaf FUNC_A under the hottest stack in the first half\n"
		"of the windows, FUNC_B in the second (a quarter of the samples). --corrupt: that\n"
		"window's file cut in half; --garbage: its bytes random. --jobs: processes writing.\n"
		"--gzip-level: 6 as the agent. Same options and seed, same files.\n");
}

int main(int argc, char **argv)
{
	/* clang-format off */
	static const struct option lo[] = {
		{ "dir", 1, 0, 'd' }, { "host", 1, 0, 'H' }, { "windows", 1, 0, 'w' },
		{ "start", 1, 0, 's' }, { "interval", 1, 0, 'i' }, { "cpus", 1, 0, 'c' },
		{ "hz", 1, 0, 'z' }, { "processes", 1, 0, 'p' }, { "stacks", 1, 0, 'S' },
		{ "seed", 1, 0, 'r' }, { "offcpu", 0, 0, 'o' }, { "phase", 1, 0, 'P' },
		{ "corrupt", 1, 0, 'C' }, { "garbage", 1, 0, 'G' }, { "jobs", 1, 0, 'j' },
		{ "gzip-level", 1, 0, 'g' }, { "agent-version", 1, 0, 'V' }, { "help", 0, 0, 'h' },
		{ 0 } };
	uint64_t *num[128] = {
		['w'] = &o.windows, ['s'] = &o.start, ['i'] = &o.interval, ['c'] = &o.cpus,
		['z'] = &o.hz, ['p'] = &o.processes, ['S'] = &o.stacks, ['r'] = &o.seed,
		['j'] = &o.jobs, ['g'] = &o.gzip_level };
	/* clang-format on */
	char *end, *colon;
	uint64_t seq, j, hot;
	int c, status, failed = 0;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c > 0 && c < 128 && num[c]) {
			errno = 0;
			*num[c] = strtoull(optarg, &end, 10);
			if (errno || *end || !*optarg) {
				fprintf(stderr, "mkwindows: bad number: %s\n", optarg);
				return 2;
			}
			continue;
		}
		switch (c) { /* clang-format off */
		case 'd': o.dir = optarg; break;
		case 'H': o.host = optarg; break;
		case 'o': o.offcpu = 1; break;
		case 'P': o.phase = optarg; break;
		case 'C': o.corrupt = strtoll(optarg, NULL, 10); break;
		case 'G': o.garbage = strtoll(optarg, NULL, 10); break;
		case 'V': o.version = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		} /* clang-format on */
	}
	colon = o.phase ? strchr(o.phase, ':') : NULL;
	if (!o.dir || optind < argc || !o.hz || !o.cpus || !o.interval || !o.processes ||
	    !o.stacks || !o.jobs || !o.gzip_level || o.gzip_level > 9 ||
	    (o.phase && (!colon || colon == o.phase || !colon[1]))) {
		usage(stderr);
		return 2;
	}
	/* Each window allocates and frees the same few MiB: keep them instead of faulting them
	 * in again (a fifth of the time went to page faults). */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
	make_host();
	/* The hottest user stack, copied past the pool's end for the phase samples. */
	for (j = 0, hot = 0; j < nr_stacks; j++)
		if (procs[stacks[j].proc].spec->kind != P_KTHREAD &&
		    (procs[stacks[hot].proc].spec->kind == P_KTHREAD ||
		     stacks[j].weight > stacks[hot].weight))
			hot = j;
	stacks = realloc(stacks, (nr_stacks + 1) * sizeof(*stacks));
	if (!stacks)
		return 2;
	stacks[nr_stacks] = stacks[hot];
	if (o.phase) {
		*colon = '\0';
		phase_fn[0] = add_func(funcs[stacks[hot].frames[0] >> 3].bin, o.phase, o.phase);
		phase_fn[1] = add_func(funcs[stacks[hot].frames[0] >> 3].bin, colon + 1, colon + 1);
	}
	for (j = 0; j < o.jobs; j++) {
		pid_t pid = o.jobs > 1 ? fork() : 0;

		if (pid < 0) {
			perror("mkwindows: fork");
			return 2;
		}
		if (pid)
			continue;
		for (seq = j; seq < o.windows; seq += o.jobs)
			if (write_window(seq))
				return 1;
		if (o.jobs > 1)
			_exit(0);
	}
	while (o.jobs > 1 && wait(&status) > 0)
		failed |= !WIFEXITED(status) || WEXITSTATUS(status);
	return failed;
}
