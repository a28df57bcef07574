// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>
#include <bpf/bpf.h>

#include "../../bpf/profiler.h"
#include "../../symbolizer/symbolizer.h"
#include "collect/proctab.h"
#include "collect/samples.h"
#include "operate/log.h"
#include "python.h"

/* Attach again while an interpreter starts: every 20 ms for a second, then every 250 ms,
 * until 10 s after the image was first seen. Not only "not ready": an interpreter caught
 * half-way through its start-up, or one of its threads half-way through being made, reads
 * as a mismatch for an instant (a frame being pushed, a thread state not bound to its
 * thread yet: py_interp.changing), so only what cannot change is final at once. */
#define RETRY_FAST_NS	 (20 * NSEC_PER_MSEC)
#define RETRY_SLOW_NS	 (250 * NSEC_PER_MSEC)
#define RETRY_FAST_UNTIL (1 * NSEC_PER_SEC)
#define RETRY_UNTIL	 (10 * NSEC_PER_SEC)
/* Attempts python__poll() makes in one call: until this much time went (ns). */
#define POLL_BUDGET_NS (20 * NSEC_PER_MSEC)

_Static_assert(PY_LASTI_KIND_INT_BYTES == PY_LASTI_INT_BYTES &&
		       PY_LASTI_KIND_INT_UNITS == PY_LASTI_INT_UNITS &&
		       PY_LASTI_KIND_PTR == PY_LASTI_PTR,
	       "lasti kinds of pylayout.h and bpf/profiler.h");
_Static_assert(PY_ENTRY_KIND_EVAL == PY_ENTRY_EVAL && PY_ENTRY_KIND_FLAG == PY_ENTRY_FLAG &&
		       PY_ENTRY_KIND_OWNER == PY_ENTRY_OWNER,
	       "entry kinds of pylayout.h and bpf/profiler.h");
_Static_assert(PY_FIELD_NONE == IGNIS_PY_NONE, "the absent field of pylayout.h");

enum py_state {
	PY_PENDING,  /* not ready, or caught changing: attach again at next_ns */
	PY_ATTACHED, /* in py_procs */
	PY_REFUSED,  /* not Python, or not supported: native frames only */
	PY_GONE,     /* exited or exec'd: forgotten after gone_window is drained */
};

struct py_image {
	struct proc_id id; /* the key */
	enum py_state state;
	enum py_attach_result last; /* the last attempt's result */
	uint64_t first_ns;	    /* CLOCK_MONOTONIC when first seen */
	uint64_t next_ns;	    /* PY_PENDING: the next attempt */
	uint64_t gone_window;
	uint32_t attempts;
	bool counted; /* its final result is in stats.results */
	struct py_interp interp;
};

/* Executables known to hold no interpreter, by build ID: a host execs the same few binaries
 * over and over, and looking for _PyRuntime reads their symbol tables. */
#define NOT_PYTHON_MAX 4096
struct build_key {
	uint8_t len;
	uint8_t id[64];
};

struct python {
	struct python_opts opts;
	struct hashmap images;	   /* &py_image.id -> struct py_image */
	struct hashmap not_python; /* struct build_key * -> itself */
	struct pycode_cache *codes;
	struct python_stats stats;
};

static uint64_t hash_build(const void *k)
{
	const struct build_key *b = k;

	return hash_bytes(b->id, b->len, b->len);
}

static bool equal_build(const void *a, const void *b)
{
	const struct build_key *x = a, *y = b;

	return x->len == y->len && !memcmp(x->id, y->id, x->len);
}

/* The build ID of img's executable, false when it has none (or no object). */
static bool exe_build_key(const struct proc_image *img, struct build_key *k)
{
	const uint8_t *id;
	size_t i, len;

	for (i = 0; i < img->nr_maps; i++) {
		const struct proc_mapping *m = &img->maps[i];

		if (!m->object || !m->name || strcmp(m->name, img->exe))
			continue;
		len = sym_object__build_id(m->object, &id);
		if (!len || len > sizeof(k->id))
			return false;
		memset(k, 0, sizeof(*k));
		k->len = (uint8_t)len;
		memcpy(k->id, id, len);
		return true;
	}
	return false;
}

static void forget_not_python(struct python *py)
{
	struct hashmap_entry *e;

	hashmap__for_each(&py->not_python, e)
		free(e->value);
	hashmap__clear(&py->not_python);
}

static uint64_t hash_id(const void *k)
{
	const struct proc_id *id = k;

	return hash_u64(id->tgid ^ ((uint64_t)id->exec_id << 32) ^ hash_u64(id->start_time));
}

static bool equal_id(const void *a, const void *b)
{
	const struct proc_id *x = a, *y = b;

	return x->tgid == y->tgid && x->exec_id == y->exec_id && x->start_time == y->start_time;
}

struct python *python__new(const struct python_opts *opts)
{
	struct python *py = calloc(1, sizeof(*py));

	if (!py)
		return NULL;
	py->opts = *opts;
	hashmap__init(&py->images, hash_id, equal_id);
	hashmap__init(&py->not_python, hash_build, equal_build);
	py->codes = pycode_cache__new(opts->max_code_bytes);
	if (!py->codes) {
		free(py);
		errno = ENOMEM;
		return NULL;
	}
	return py;
}

void python__free(struct python *py)
{
	struct hashmap_entry *e;

	if (!py)
		return;
	hashmap__for_each(&py->images, e)
		free(e->value);
	hashmap__fini(&py->images);
	forget_not_python(py);
	hashmap__fini(&py->not_python);
	pycode_cache__free(py->codes);
	free(py);
}

void python_bpf_proc(const struct proc_id *id, const struct py_interp *in,
		     struct ignis_py_proc *out)
{
	const struct py_layout *l = &in->layout;
	size_t i;

	memset(out, 0, sizeof(*out));
	out->tgid = id->tgid;
	out->start_time = id->start_time;
	out->exec_id = id->exec_id;
	for (i = 0; i < IGNIS_PY_EVAL_RANGES; i++) {
		out->eval_start[i] = in->eval_start[i];
		out->eval_end[i] = in->eval_end[i];
	}
	out->tss_data_off = in->tss_data_off;
	out->tss_key = in->tss_key;
	out->version = in->version_hex;
	out->layout.tstate_frame = l->tstate_frame;
	out->layout.cframe_frame = l->cframe_frame;
	out->layout.frame_previous = l->frame_previous;
	out->layout.frame_code = l->frame_code;
	out->layout.frame_lasti = l->frame_lasti;
	out->layout.frame_entry = l->frame_entry;
	out->layout.code_name = l->code_qualname != PY_FIELD_NONE ? l->code_qualname : l->code_name;
	out->layout.code_firstlineno = l->code_firstlineno;
	out->layout.code_filename = l->code_filename;
	out->layout.code_code = l->code_code;
	out->layout.unicode_length = l->unicode_length;
	out->layout.unicode_data = l->unicode_ascii_data;
	out->layout.unicode_state = l->unicode_state;
	out->layout.lasti_kind = (__u8)l->lasti_kind;
	out->layout.entry_kind = (__u8)l->entry_kind;
	out->layout.owner_cstack = l->owner_cstack;
	out->layout.code_type = in->code_type;
}

static void count_final(struct python *py, struct py_image *pi)
{
	if (pi->counted)
		return;
	/* Gone while it was being tried again: what it last showed was not final. */
	if (pi->state == PY_PENDING)
		pi->last = PY_ATTACH_NOT_READY;
	pi->counted = true;
	py->stats.results[pi->last]++;
	if (pi->last != PY_ATTACH_NOT_PYTHON)
		py->stats.seen++;
}

static bool maps_libpython(const struct proc_image *img)
{
	size_t i;

	for (i = 0; i < img->nr_maps; i++)
		if (img->maps[i].name && strstr(img->maps[i].name, "libpython"))
			return true;
	return false;
}

static void try_attach(struct python *py, struct py_image *pi, const struct proc_image *img)
{
	struct ignis_py_proc v;
	const char *detail = NULL;
	uint64_t now = now_mono_ns(), t0;
	enum py_attach_result r;

	struct build_key bk, *copy;
	bool known_exe = exe_build_key(img, &bk);

	if (known_exe && !maps_libpython(img) && hashmap__find(&py->not_python, &bk)) {
		pi->last = PY_ATTACH_NOT_PYTHON;
		pi->state = PY_REFUSED;
		count_final(py, pi);
		return;
	}
	if (pi->attempts++)
		py->stats.retries++;
	t0 = now;
	r = py_attach((pid_t)pi->id.tgid, img, py->opts.symbolizer, &pi->interp, &detail);
	now = now_mono_ns();
	if (now - t0 > 20 * NSEC_PER_MSEC)
		pr_debug("pid %u: looking for Python took %llu ms", img->id.tgid,
			 (unsigned long long)((now - t0) / NSEC_PER_MSEC));
	if (r == PY_ATTACH_NOT_PYTHON && known_exe && !maps_libpython(img)) {
		if (hashmap__size(&py->not_python) >= NOT_PYTHON_MAX)
			forget_not_python(py);
		copy = malloc(sizeof(*copy));
		if (copy) {
			*copy = bk;
			if (hashmap__insert(&py->not_python, copy, copy))
				free(copy);
		}
	}
	pi->last = r;
	if ((r == PY_ATTACH_NOT_READY || pi->interp.changing) && now - pi->first_ns < RETRY_UNTIL) {
		pi->state = PY_PENDING;
		pi->next_ns = now + (now - pi->first_ns < RETRY_FAST_UNTIL ? RETRY_FAST_NS :
									     RETRY_SLOW_NS);
		return;
	}
	if (r != PY_ATTACH_OK) {
		pi->state = PY_REFUSED;
		count_final(py, pi);
		if (r != PY_ATTACH_NOT_PYTHON)
			pr_info("pid %u (%s): Python frames off, native frames only: %s%s%s",
				img->id.tgid, img->comm, py_attach_result_name(r),
				detail ? ": " : "", detail ? detail : "");
		return;
	}
	python_bpf_proc(&pi->id, &pi->interp, &v);
	if (bpf_map_update_elem(py->opts.procs_fd, &pi->id.tgid, &v, BPF_ANY)) {
		py->stats.publish_errors++;
		pr_debug("pid %u: cannot publish its Python interpreter: %s", img->id.tgid,
			 strerror(errno));
		pi->state = PY_REFUSED;
		return;
	}
	pi->state = PY_ATTACHED;
	py->stats.attached++;
	count_final(py, pi);
	pr_debug("pid %u (%s): Python %x.%x attached (%s; %u threads, %u frames checked)",
		 img->id.tgid, img->comm, pi->interp.version_hex >> 24,
		 (pi->interp.version_hex >> 16) & 0xff, pi->interp.object ? pi->interp.object : "",
		 pi->interp.threads, pi->interp.frames_checked);
}

void python__captured(struct python *py, const struct proc_image *img)
{
	struct py_image *pi = hashmap__find(&py->images, &img->id);

	if (!pi) {
		pi = calloc(1, sizeof(*pi));
		if (!pi)
			return;
		pi->id = img->id;
		pi->first_ns = now_mono_ns();
		if (hashmap__insert(&py->images, &pi->id, pi)) {
			free(pi);
			return;
		}
	} else if (pi->state == PY_ATTACHED || pi->state == PY_GONE ||
		   (pi->state == PY_REFUSED &&
		    (pi->last != PY_ATTACH_NOT_PYTHON || !maps_libpython(img)))) {
		/* Refused for good, unless a libpython was loaded since (an embedder). */
		return;
	} else if (pi->state == PY_PENDING && now_mono_ns() < pi->next_ns) {
		return; /* captured again (a library mapped) before its next attempt */
	}
	try_attach(py, pi, img);
}

static void unpublish(struct python *py, struct py_image *pi)
{
	struct ignis_py_proc v;

	/* Only this image's entry: a new image of the tgid may be published already. */
	if (!bpf_map_lookup_elem(py->opts.procs_fd, &pi->id.tgid, &v) &&
	    v.start_time == pi->id.start_time && v.exec_id == pi->id.exec_id)
		bpf_map_delete_elem(py->opts.procs_fd, &pi->id.tgid);
	if (pi->state == PY_ATTACHED && py->stats.attached)
		py->stats.attached--;
}

void python__gone(struct python *py, uint32_t tgid, uint64_t start_time,
		  const uint32_t *keep_exec_id, uint64_t window)
{
	struct hashmap_entry *e;

	hashmap__for_each(&py->images, e) {
		struct py_image *pi = e->value;

		if (pi->id.tgid != tgid || pi->id.start_time != start_time ||
		    pi->state == PY_GONE || (keep_exec_id && pi->id.exec_id == *keep_exec_id))
			continue;
		unpublish(py, pi);
		if (pi->state == PY_PENDING)
			count_final(py, pi);
		pi->state = PY_GONE;
		pi->gone_window = window;
	}
}

int python__code_event(struct python *py, const struct py_code_event *ev)
{
	struct proc_id id = { .tgid = ev->tgid,
			      .exec_id = ev->exec_id,
			      .start_time = ev->start_time };
	struct py_image *pi = hashmap__find(&py->images, &id);
	struct pycode_seen seen;
	int err;

	py->stats.code_events++;
	if (!pi || pi->state != PY_ATTACHED) {
		py->stats.code_unknown++;
		return 0;
	}
	seen = (struct pycode_seen){ .name = ev->name,
				     .filename = ev->filename,
				     .firstlineno = ev->firstlineno };
	err = pycode_cache__add(py->codes, (pid_t)ev->tgid, ev->tgid, ev->start_time, ev->exec_id,
				&pi->interp.layout, pi->interp.version_hex, pi->interp.code_type,
				ev->serial, ev->code, ev->identity, &seen);
	if (err && err != -ESTALE && err != -ESRCH && err != -EFAULT)
		pr_debug("pid %u: Python code object %#llx: %s", ev->tgid,
			 (unsigned long long)ev->code, strerror(-err));
	return 0;
}

int python__poll(struct python *py)
{
	struct hashmap_entry *e;
	uint64_t now = now_mono_ns(), next = UINT64_MAX;
	struct py_image *pi;
	bool spent = false;

	/* The proctab holds the image (its mappings as last captured). */
	hashmap__for_each(&py->images, e) {
		pi = e->value;
		if (pi->state != PY_PENDING)
			continue;
		/* Many images due at once (a burst of interpreters, or processes that never
		 * check out) take turns: the main loop goes on between the turns. */
		if (pi->next_ns <= now && !spent &&
		    !(spent = now_mono_ns() - now > POLL_BUDGET_NS)) {
			const struct proc_image *img = proctab__find(py->opts.proctab, &pi->id);

			if (!img) {
				count_final(py, pi); /* gone while pending */
				pi->state = PY_REFUSED;
				continue;
			}
			try_attach(py, pi, img);
			if (pi->state != PY_PENDING)
				continue;
		}
		if (pi->next_ns < next)
			next = pi->next_ns;
	}
	if (next == UINT64_MAX)
		return -1;
	return next <= now ? 0 : (int)((next - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC);
}

void python__release(struct python *py, uint64_t drained)
{
	struct hashmap_entry *e;
	struct py_image *gone[64];
	size_t n, i;

	/* Images the process table let go of without our seeing an exit (the event was lost:
	 * its rescan found them gone) go now. */
	hashmap__for_each(&py->images, e) {
		struct py_image *pi = e->value;

		if (pi->state != PY_GONE && !proctab__find(py->opts.proctab, &pi->id)) {
			unpublish(py, pi);
			if (pi->state == PY_PENDING)
				count_final(py, pi);
			pi->state = PY_GONE;
			pi->gone_window = drained;
		}
	}
	do {
		n = 0;
		hashmap__for_each(&py->images, e) {
			struct py_image *pi = e->value;

			if (pi->state == PY_GONE && pi->gone_window <= drained &&
			    n < ARRAY_SIZE(gone))
				gone[n++] = pi;
		}
		for (i = 0; i < n; i++) {
			pycode_cache__forget(py->codes, gone[i]->id.tgid, gone[i]->id.start_time,
					     gone[i]->id.exec_id);
			hashmap__delete(&py->images, &gone[i]->id);
			free(gone[i]);
		}
	} while (n == ARRAY_SIZE(gone));
}

bool python__frame(struct python *py, const struct proc_image *img, uint64_t serial, uint32_t lasti,
		   struct pycode_frame *out)
{
	return pycode_cache__frame(py->codes, img->id.tgid, img->id.start_time, img->id.exec_id,
				   serial, lasti, out);
}

void python__stats(const struct python *py, struct python_stats *stats)
{
	*stats = py->stats;
	pycode_cache__stats(py->codes, &stats->code);
}
