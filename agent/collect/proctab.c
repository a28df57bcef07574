// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../../symbolizer/symbolizer.h"
#include "operate/log.h"
#include "procfs.h"
#include "proctab.h"
#include "samples.h"

/* Caps on what one process can make us hold. */
#define MAX_MAPS_BYTES	  (64UL << 20)
#define MAX_EXEC_MAPPINGS 16384

/* Objects of released images stay open this many windows (and at most this many of them),
 * so that a process gone before its mappings were read finds its files by device and inode
 * (PROC_EV_MAPPING) when the last process that mapped them went a little earlier. */
#define LINGER_WINDOWS 6
#define LINGER_MAX     512

struct proctab {
	struct proctab_opts opts;
	struct hashmap images;	/* &img->id -> img */
	struct hashmap by_tgid; /* &img->id.tgid -> the newest image of that tgid */
	struct hashmap linger;	/* struct sym_object * (a reference) -> last window + 1 */
	struct proctab_stats stats;
};

static uint64_t hash_id(const void *key)
{
	return hash_bytes(key, sizeof(struct proc_id), 0);
}

static bool equal_id(const void *a, const void *b)
{
	return !memcmp(a, b, sizeof(struct proc_id));
}

static uint64_t hash_tgid(const void *key)
{
	return hash_u64(*(const uint32_t *)key);
}

static bool equal_tgid(const void *a, const void *b)
{
	return *(const uint32_t *)a == *(const uint32_t *)b;
}

static uint64_t hash_ptr(const void *key)
{
	return hash_u64((uintptr_t)key);
}

static bool equal_ptr(const void *a, const void *b)
{
	return a == b;
}

/* Keep a reference to obj until LINGER_WINDOWS windows after `window`. */
static void linger_keep(struct proctab *pt, struct sym_object *obj, uint64_t window)
{
	struct hashmap_entry *e;
	uint64_t oldest = UINT64_MAX;

	if (!obj)
		return;
	if (hashmap__find(&pt->linger, obj)) {
		hashmap__delete(&pt->linger, obj);
		if (hashmap__add(&pt->linger, obj, (void *)(uintptr_t)(window + 1)))
			sym_object__put(obj); /* the reference it held */
		return;
	}
	if (hashmap__size(&pt->linger) >= LINGER_MAX) {
		/* Full: the one that has waited longest goes. */
		hashmap__for_each(&pt->linger, e)
			if ((uintptr_t)e->value < oldest)
				oldest = (uintptr_t)e->value;
		hashmap__for_each(&pt->linger, e) {
			if ((uintptr_t)e->value == oldest) {
				struct sym_object *gone = (struct sym_object *)e->key;

				hashmap__delete(&pt->linger, gone);
				sym_object__put(gone);
				break;
			}
		}
	}
	if (!hashmap__add(&pt->linger, obj, (void *)(uintptr_t)(window + 1)))
		sym_object__get(obj);
}

/* Drop the lingering objects last kept before window `drained` - LINGER_WINDOWS. */
static void linger_expire(struct proctab *pt, uint64_t drained)
{
	struct sym_object *gone[64];
	struct hashmap_entry *e;
	size_t n, i;

	do {
		n = 0;
		hashmap__for_each(&pt->linger, e) {
			if ((uintptr_t)e->value - 1 + LINGER_WINDOWS < drained &&
			    n < ARRAY_SIZE(gone))
				gone[n++] = (struct sym_object *)e->key;
		}
		for (i = 0; i < n; i++) {
			hashmap__delete(&pt->linger, gone[i]);
			sym_object__put(gone[i]);
		}
	} while (n == ARRAY_SIZE(gone));
}

struct proctab *proctab__new(const struct proctab_opts *opts)
{
	struct proctab *pt = calloc(1, sizeof(*pt));

	if (!pt)
		return NULL;
	pt->opts = *opts;
	if (!pt->opts.proc_root)
		pt->opts.proc_root = "/proc";
	hashmap__init(&pt->images, hash_id, equal_id);
	hashmap__init(&pt->by_tgid, hash_tgid, equal_tgid);
	hashmap__init(&pt->linger, hash_ptr, equal_ptr);
	return pt;
}

static void mapping_fini(struct proc_mapping *m)
{
	sym_object__put(m->object);
	free(m->name);
	memset(m, 0, sizeof(*m));
}

static void image_free(struct proc_image *img)
{
	size_t i;

	for (i = 0; i < img->nr_maps; i++)
		mapping_fini(&img->maps[i]);
	free(img->maps);
	sym_perfmap__free(img->perfmap);
	free(img);
}

static void image_remove(struct proctab *pt, struct proc_image *img)
{
	if (img->denied)
		pt->stats.denied--;
	if (hashmap__find(&pt->by_tgid, &img->id.tgid) == img)
		hashmap__delete(&pt->by_tgid, &img->id.tgid);
	hashmap__delete(&pt->images, &img->id);
	pt->stats.images--;
	image_free(img);
}

void proctab__free(struct proctab *pt)
{
	struct hashmap_entry *e;

	if (!pt)
		return;
	hashmap__for_each(&pt->images, e)
		image_free(e->value);
	hashmap__for_each(&pt->linger, e)
		sym_object__put((struct sym_object *)e->key);
	hashmap__fini(&pt->images);
	hashmap__fini(&pt->by_tgid);
	hashmap__fini(&pt->linger);
	free(pt);
}

static int cmp_mapping(const void *a, const void *b)
{
	const struct proc_mapping *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

#define SYSTEM_DEBUG_DIR "/usr/lib/debug"

/* Try one candidate debug file; true when accepted. */
static bool try_debug_file(struct proctab *pt, struct sym_object *obj, int root_fd,
			   const char *path)
{
	int fd, err;

	/* Inside the process's root nothing may lead out of it; on the host (root_fd < 0) the
	 * agent's own files. O_NONBLOCK: a FIFO planted there must not block. */
	if (root_fd >= 0)
		fd = procfs_open_in_root(root_fd, path);
	else
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return false;
	err = symbolizer__set_debug_file(pt->opts.symbolizer, obj, fd);
	close(fd);
	if (err) {
		pr_debug("%s: debug file %s%s not used: %s", sym_object__name(obj),
			 root_fd >= 0 ? "(in its root) " : "", path,
			 err == -ENOKEY ? "another build" : strerror(-err));
		return false;
	}
	pr_debug("%s: debug file %s%s", sym_object__name(obj), root_fd >= 0 ? "(in its root) " : "",
		 path);
	return true;
}

/*
 * A separate debug file for an object without DWARF, looked up as GDB does: by build ID
 * under the debug folder, then by the .gnu_debuglink name beside the binary, in its .debug/
 * folder and under the debug folder; each inside the process's root first, then on the host
 * (--debug-dir). The symbolizer refuses a file of another build.
 */
static void find_debug_file(struct proctab *pt, struct sym_object *obj, int pid_fd, int *root_fd,
			    const char *path)
{
	const char *host = pt->opts.debug_dir ? pt->opts.debug_dir : SYSTEM_DEBUG_DIR;
	char hex[2 * 64 + 1], dir[PATH_MAX], cand[PATH_MAX + 256];
	const char *link, *slash;
	int pass, rfd;

	sym_object__build_id_hex(obj, hex, sizeof(hex));
	link = sym_object__debuglink(obj, NULL);
	slash = strrchr(path, '/');
	if (!slash || (size_t)(slash - path) >= sizeof(dir))
		link = NULL;
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (*root_fd < 0)
		*root_fd = openat(pid_fd, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (pass = 0; pass < 2; pass++) {
		const char *debug_dir = pass == 0 ? SYSTEM_DEBUG_DIR : host;

		rfd = pass == 0 ? *root_fd : -1;
		if (pass == 0 && rfd < 0)
			continue;
		if (strlen(hex) > 2) {
			snprintf(cand, sizeof(cand), "%s/.build-id/%.2s/%s.debug", debug_dir, hex,
				 hex + 2);
			if (try_debug_file(pt, obj, rfd, cand))
				goto found;
		}
		if (!link)
			continue;
		if (pass == 0) {
			snprintf(cand, sizeof(cand), "%s/%s", dir, link);
			if (try_debug_file(pt, obj, rfd, cand))
				goto found;
			snprintf(cand, sizeof(cand), "%s/.debug/%s", dir, link);
			if (try_debug_file(pt, obj, rfd, cand))
				goto found;
		}
		snprintf(cand, sizeof(cand), "%s%s/%s", debug_dir, dir, link);
		if (try_debug_file(pt, obj, rfd, cand))
			goto found;
	}
	pt->stats.debug_misses++;
	if (pt->opts.debug_missing)
		pt->opts.debug_missing(pt->opts.debug_missing_ctx, obj);
	return;
found:
	pt->stats.debug_files++;
}

/* Open the object behind a file mapping: through map_files (exact, survives deletion),
 * else by path inside the process's root, accepted only if it is the mapped inode. */
static struct sym_object *open_object(struct proctab *pt, int pid_fd, int *root_fd,
				      const struct procmaps_entry *e, int *error)
{
	dev_t dev = makedev(e->dev_major, e->dev_minor);
	struct sym_object *obj;
	struct stat st;
	int fd, err;

	obj = symbolizer__find(pt->opts.symbolizer, dev, e->inode);
	if (obj)
		return obj;

	fd = procfs_open_map_file(pid_fd, e->start, e->end);
	if (fd < 0 && !e->deleted) {
		if (*root_fd < 0)
			*root_fd = openat(pid_fd, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
		fd = *root_fd >= 0 ? procfs_open_in_root(*root_fd, e->path) : -errno;
		if (*root_fd < 0 && (fd == -EACCES || fd == -EPERM))
			fd = -EACCES; /* /proc/PID/root itself refused (no CAP_SYS_PTRACE) */
		if (fd >= 0 && (fstat(fd, &st) || st.st_dev != dev || st.st_ino != e->inode)) {
			/* Replaced on disk since it was mapped: not the file the process runs. */
			close(fd);
			fd = -ESTALE;
		}
	}
	if (fd < 0) {
		pt->stats.file_errors++;
		*error = fd;
		pr_debug("%s: cannot open mapped file: %s", e->path, strerror(-fd));
		return NULL;
	}
	obj = symbolizer__open_fd(pt->opts.symbolizer, fd, e->path, dev, e->inode);
	err = obj ? 0 : -errno;
	close(fd);
	if (err) {
		pt->stats.file_errors++;
		*error = err;
		pr_debug("%s: not symbolizable: %s", e->path, strerror(-err));
		return NULL;
	}
	pt->stats.files_opened++;
	if (sym_object__needs_debug_file(obj))
		find_debug_file(pt, obj, pid_fd, root_fd, e->path);
	return obj;
}

/* The inode of the initial pid namespace (include/linux/proc_ns.h), fixed since Linux 3.8. */
#define PROC_PID_INIT_INO 0xEFFFFFFCU

/* The last field of "NSpid:" in /proc/PID/status: the id in the innermost pid namespace.
 * A process of the initial pid namespace has no other id: a stat of its ns/pid link (a
 * quarter of the cost of having the kernel format status, which takes the mm's lock for
 * its memory figures) answers for most processes of a host. */
static uint32_t read_nspid(int pid_fd, uint32_t tgid)
{
	char *status = NULL, *line, *last;
	unsigned long v;
	uint32_t nspid = tgid;
	struct stat st;

	if (!fstatat(pid_fd, "ns/pid", &st, 0) && st.st_ino == PROC_PID_INIT_INO)
		return tgid;
	if (procfs_read_file(pid_fd, "status", 65536, &status) < 0)
		return tgid;
	line = strstr(status, "\nNSpid:");
	if (line) {
		line += 7;
		line[strcspn(line, "\n")] = '\0';
		last = strrchr(line, '\t') ? strrchr(line, '\t') + 1 : line;
		v = strtoul(last, NULL, 10);
		if (v && v <= UINT32_MAX)
			nspid = (uint32_t)v;
	}
	free(status);
	return nspid;
}

/* Executable path and cgroup metadata: best effort, a process may hide neither. */
static void capture_identity(int pid_fd, struct proc_image *img)
{
	char *cgroup = NULL;
	ssize_t n;

	img->nspid = read_nspid(pid_fd, img->id.tgid);
	n = readlinkat(pid_fd, "exe", img->exe, sizeof(img->exe) - 1);
	img->exe[n > 0 ? n : 0] = '\0';
	if (procfs_read_file(pid_fd, "cgroup", 65536, &cgroup) >= 0 &&
	    metadata_parse_cgroup(cgroup, &img->meta))
		memset(&img->meta, 0, sizeof(img->meta));
	free(cgroup);
}

#define MAX_PERFMAP_BYTES (64 << 20)

const char *proctab__jit_symbol(struct proctab *pt, struct proc_image *img, uint64_t addr,
				uint64_t window)
{
	int pid_fd = -1, root_fd = -1, fd = -1;
	struct sym_perfmap *m;
	char path[64], *text = NULL;
	uint64_t ticks, malformed;
	struct stat st;
	size_t len = 0;
	ssize_t n;

	if (img->perfmap_window == window || img->exited_window != UINT64_MAX)
		return sym_perfmap__lookup(img->perfmap, addr, NULL);
	img->perfmap_window = window;
	pid_fd = procfs_open_pid(pt->opts.proc_root, img->id.tgid);
	if (pid_fd < 0 || procfs_start_ticks(pid_fd, &ticks) ||
	    ticks != procfs_ns_to_ticks(img->id.start_time))
		goto out;
	root_fd = openat(pid_fd, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/tmp/perf-%u.map", img->nspid ? img->nspid : img->id.tgid);
	fd = root_fd >= 0 ? procfs_open_in_root(root_fd, path) : -1;
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size == img->perfmap_size)
		goto out;
	if (st.st_size > MAX_PERFMAP_BYTES) {
		pr_warn_ratelimited(3, 600, "pid %u: %s is over %d MiB: JIT frames stay unnamed",
				    img->id.tgid, path, MAX_PERFMAP_BYTES >> 20);
		goto out;
	}
	text = malloc((size_t)st.st_size + 1);
	while (text && len < (size_t)st.st_size &&
	       (n = pread(fd, text + len, (size_t)st.st_size - len, (off_t)len)) > 0)
		len += (size_t)n;
	/* Parse whole lines only: the runtime may be writing the last one now. */
	while (len && text && text[len - 1] != '\n')
		len--;
	m = text ? sym_perfmap__parse(text, len) : NULL;
	if (m) {
		sym_perfmap__free(img->perfmap);
		img->perfmap = m;
		img->perfmap_size = (uint64_t)st.st_size;
		pt->stats.perfmaps_read++;
		sym_perfmap__count(m, &malformed);
		pt->stats.perfmap_malformed += malformed;
		pr_debug("pid %u: %s: %zu JIT functions, %llu malformed lines skipped",
			 img->id.tgid, path, sym_perfmap__count(m, NULL),
			 (unsigned long long)malformed);
	}
out:
	free(text);
	if (fd >= 0)
		close(fd);
	if (root_fd >= 0)
		close(root_fd);
	if (pid_fd >= 0)
		close(pid_fd);
	return sym_perfmap__lookup(img->perfmap, addr, NULL);
}

/* Does an existing mapping describe the same thing as a maps entry? */
static bool same_mapping(const struct proc_mapping *m, const struct procmaps_entry *e,
			 enum mapping_kind kind)
{
	return m->start == e->start && m->end == e->end && m->offset == e->offset &&
	       m->kind == kind && m->stale_window == UINT64_MAX && !strcmp(m->name, e->path);
}

static enum mapping_kind kind_of(const struct procmaps_entry *e)
{
	if (e->path[0] == '/')
		return MAPPING_FILE;
	if (!strcmp(e->path, "[vdso]"))
		return MAPPING_VDSO;
	return MAPPING_ANON;
}

static bool overlaps(const struct proc_mapping *m, const struct proc_mapping *maps, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (m->start < maps[i].end && maps[i].start < m->end)
			return true;
	return false;
}

/*
 * Read the maps of the process into a new mapping list for img, reusing the objects of
 * mappings that did not change. Mappings that disappeared stay, marked stale in `window`,
 * unless a new mapping overlaps them.
 */
/* A growable list of mappings being captured. */
struct mapping_list {
	struct proc_mapping *maps;
	size_t nr, cap;
};

/* One executable mapping of a maps line, its object reused from the image's unchanged
 * mapping or opened through the process (open_object). */
static int add_mapping(struct proctab *pt, struct proc_image *img, int pid_fd, int *root_fd,
		       const struct procmaps_entry *e, struct mapping_list *l)
{
	enum mapping_kind kind = kind_of(e);
	struct proc_mapping *m;
	size_t j;
	int err;

	err = grow_array((void **)&l->maps, &l->cap, l->nr + 1, sizeof(*l->maps));
	if (err)
		return err;
	m = &l->maps[l->nr];
	memset(m, 0, sizeof(*m));
	m->start = e->start;
	m->end = e->end;
	m->offset = e->offset;
	m->inode = e->inode;
	m->dev = (uint32_t)e->dev_major << 20 | e->dev_minor;
	m->kind = kind;
	m->stale_window = UINT64_MAX;
	m->name = strdup(kind == MAPPING_ANON && !e->path[0] ? "[anon]" : e->path);
	if (!m->name)
		return -ENOMEM;
	l->nr++;
	/* Reuse the object of an unchanged mapping. */
	for (j = 0; j < img->nr_maps; j++) {
		if (same_mapping(&img->maps[j], e, kind)) {
			m->object = sym_object__get(img->maps[j].object);
			m->open_error = img->maps[j].open_error;
			return 0;
		}
	}
	if (kind == MAPPING_FILE)
		m->object = open_object(pt, pid_fd, root_fd, e, &m->open_error);
	else if (kind == MAPPING_VDSO)
		m->object = sym_object__get(pt->opts.vdso);
	return 0;
}

/*
 * The executable mappings of a maps file (text, modified: lines are cut in place), and into
 * *exec_pages the kernel's mm->exec_vm for them: the pages of mappings executable and not
 * writable (is_exec_mapping() in mm/internal.h; [vsyscall] is no VMA of the process).
 */
static int parse_maps(struct proctab *pt, struct proc_image *img, int pid_fd, int *root_fd,
		      char *text, struct mapping_list *l, uint64_t exe_inode, bool *exe_seen,
		      uint64_t *exec_pages)
{
	char *line, *next;
	int err;

	*exec_pages = 0;

	for (line = text; line && *line; line = next) {
		struct procmaps_entry e;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (procmaps_parse_line(line, &e)) {
			pr_debug("pid %u: malformed maps line skipped", img->id.tgid);
			continue;
		}
		if (exe_inode && e.inode == exe_inode)
			*exe_seen = true;
		if (!e.exec || !strcmp(e.path, "[vsyscall]"))
			continue;
		if (!e.write)
			*exec_pages += (e.end - e.start) >> 12;
		if (l->nr >= MAX_EXEC_MAPPINGS) {
			pr_warn_ratelimited(5, 1000,
					    "pid %u: over %d executable mappings, rest "
					    "ignored",
					    img->id.tgid, MAX_EXEC_MAPPINGS);
			break;
		}
		err = add_mapping(pt, img, pid_fd, root_fd, &e, l);
		if (err)
			return err;
	}
	return 0;
}

/* Make l the image's mappings (taking them), keeping what disappeared until this window is
 * drained, unless something replaced it. */
static int install_maps(struct proc_image *img, struct mapping_list *l, uint64_t window)
{
	struct proc_mapping *old = img->maps;
	size_t i;
	int err;

	for (i = 0; i < img->nr_maps; i++) {
		struct proc_mapping *m = &old[i];

		if (!overlaps(m, l->maps, l->nr)) {
			err = grow_array((void **)&l->maps, &l->cap, l->nr + 1, sizeof(*l->maps));
			if (err)
				return err;
			if (m->stale_window == UINT64_MAX)
				m->stale_window = window;
			l->maps[l->nr++] = *m; /* moves the object reference */
			memset(m, 0, sizeof(*m));
		} else {
			mapping_fini(m);
		}
	}
	free(old);
	if (l->nr > 1)
		qsort(l->maps, l->nr, sizeof(*l->maps), cmp_mapping);
	img->maps = l->maps;
	img->nr_maps = l->nr;
	img->cap_maps = l->cap;
	*l = (struct mapping_list){ 0 };
	img->incomplete = false;
	for (i = 0; i < img->nr_maps; i++)
		if (img->maps[i].kind != MAPPING_ANON && !img->maps[i].object)
			img->incomplete = true;
	return 0;
}

/* Maps refused: what anyone may read (name, cgroup) for the image's labels. */
static void capture_denied(int pid_fd, struct proc_image *img)
{
	char comm[sizeof(img->comm)];

	procfs_comm(pid_fd, comm, sizeof(comm));
	if (comm[0])
		memcpy(img->comm, comm, sizeof(comm));
	capture_identity(pid_fd, img);
}

static int capture(struct proctab *pt, struct proc_image *img, uint64_t exe_inode, uint64_t window)
{
	struct mapping_list l = { 0 };
	int pid_fd, root_fd = -1, err;
	uint64_t ticks, exe_now, exec_pages = 0;
	bool exe_seen = false;
	char *text = NULL;
	size_t i;
	long len;

	pid_fd = procfs_open_pid(pt->opts.proc_root, img->id.tgid);
	if (pid_fd < 0)
		return pid_fd;
	err = procfs_start_ticks(pid_fd, &ticks);
	if (!err && ticks != procfs_ns_to_ticks(img->id.start_time)) {
		pr_debug("pid %u: started at tick %llu, not %llu: another process now",
			 img->id.tgid, (unsigned long long)ticks,
			 (unsigned long long)procfs_ns_to_ticks(img->id.start_time));
		err = -ESRCH;
	}
	if (err)
		goto cleanup;
	len = procfs_read_file(pid_fd, "maps", MAX_MAPS_BYTES, &text);
	if (len < 0) {
		err = (int)len;
		if ((err == -EACCES || err == -EPERM) && !img->nr_maps)
			capture_denied(pid_fd, img);
		goto cleanup;
	}
	/* After reading the maps: an execve() since the event makes them another image's. The
	 * exe link may be refused where the maps are not (root without CAP_SYS_PTRACE reading a
	 * process with more capabilities): then the maps must show the executable's inode. */
	exe_now = exe_inode ? procfs_exe_inode(pid_fd) : 0;
	if (exe_now && exe_now != exe_inode) {
		pr_debug("pid %u: runs another executable than when sampled (exec since)",
			 img->id.tgid);
		err = -ESRCH;
		goto cleanup;
	}
	procfs_comm(pid_fd, img->comm, sizeof(img->comm));
	capture_identity(pid_fd, img);
	err = parse_maps(pt, img, pid_fd, &root_fd, text, &l, exe_now ? 0 : exe_inode, &exe_seen,
			 &exec_pages);
	if (err)
		goto cleanup;
	if (exe_inode && !exe_now && !exe_seen) {
		pr_debug("pid %u: its maps show another executable than when sampled (exec since)",
			 img->id.tgid);
		err = -ESRCH;
		goto cleanup;
	}
	/* A process that has exited but not yet been reaped shows no mappings at all. */
	if (!l.nr) {
		pr_debug("pid %u: no executable mappings: exiting", img->id.tgid);
		err = -ESRCH;
		goto cleanup;
	}
	err = install_maps(img, &l, window);
	if (err)
		goto cleanup;
	img->exec_vm = exec_pages;
	img->captured_ns = now_mono_ns();
	pt->stats.captures++;
	if (img->denied) {
		img->denied = false;
		pt->stats.denied--;
	}
	if (pt->opts.captured)
		pt->opts.captured(pt->opts.captured_ctx, img);

cleanup:
	for (i = 0; i < l.nr; i++)
		mapping_fini(&l.maps[i]);
	free(l.maps);
	free(text);
	if (root_fd >= 0)
		close(root_fd);
	close(pid_fd);
	if (err)
		pt->stats.capture_errors++;
	return err;
}

/* Mark every older image of this tgid as gone in `window`. */
static void retire_tgid(struct proctab *pt, uint32_t tgid, const struct proc_id *keep,
			uint64_t window)
{
	struct proc_image *img = hashmap__find(&pt->by_tgid, &tgid);

	if (!img || (keep && equal_id(&img->id, keep)))
		return;
	if (img->exited_window == UINT64_MAX)
		img->exited_window = window;
	hashmap__delete(&pt->by_tgid, &tgid);
}

static int new_image(struct proctab *pt, const struct proc_event *ev, uint64_t window)
{
	struct proc_id id = { .tgid = ev->tgid,
			      .exec_id = ev->exec_id,
			      .start_time = ev->start_time };
	struct proc_image *img = hashmap__find(&pt->images, &id);
	int err;

	if (img) {
		/* Announced again (BPF's table forgot it, or the mappings changed). An image
		 * retired by mistake is alive: only a running process is sampled. */
		img->exited_window = UINT64_MAX;
		if (hashmap__find(&pt->by_tgid, &id.tgid) != img) {
			retire_tgid(pt, id.tgid, &id, window);
			if (hashmap__insert(&pt->by_tgid, &img->id.tgid, img))
				pr_debug("pid %u: cannot index by tgid", id.tgid);
		}
		img->exe_inode = ev->exe_inode;
		img->exe_dev = ev->exe_dev;
		return capture(pt, img, ev->exe_inode, window);
	}
	img = calloc(1, sizeof(*img));
	if (!img)
		return -ENOMEM;
	img->id = id;
	img->perfmap_window = UINT64_MAX;
	img->exited_window = UINT64_MAX;
	memcpy(img->comm, ev->comm, sizeof(img->comm));
	img->comm[sizeof(img->comm) - 1] = '\0';
	img->exe_inode = ev->exe_inode;
	img->exe_dev = ev->exe_dev;
	err = capture(pt, img, ev->exe_inode, window);
	if (err == -EACCES || err == -EPERM) {
		/* Held without mappings: its samples keep their labels and are counted. */
		img->denied = true;
		pt->stats.denied++;
		pr_warn_ratelimited(3, 1000,
				    "pid %u (%s): cannot read /proc/%u/maps: %s; its frames stay "
				    "[unknown] with their addresses (CAP_SYS_PTRACE?)",
				    id.tgid, img->comm, id.tgid, strerror(-err));
	} else if (err == -ESRCH) {
		/* Gone (or exec'd) before its mappings were read: held as exited, with the
		 * mappings BPF announces (PROC_EV_MAPPING), for the samples it left. */
		pr_debug("pid %u (%s): gone before its mappings were read", id.tgid, img->comm);
		img->exited_window = window;
		pt->stats.uncaptured++;
	} else if (err) {
		pr_debug("pid %u (%s): cannot capture mappings: %s", id.tgid, img->comm,
			 strerror(-err));
		image_free(img);
		return err;
	}
	err = hashmap__insert(&pt->images, &img->id, img);
	if (err) {
		image_free(img);
		return err;
	}
	pt->stats.images++;
	if (img->exited_window != UINT64_MAX)
		return -ESRCH; /* held; the tgid's newest image may be a later one already */
	retire_tgid(pt, id.tgid, &id, window);
	err = hashmap__insert(&pt->by_tgid, &img->id.tgid, img);
	if (err) {
		/* Still findable by id; only exit handling by tgid misses it (rescan covers). */
		pr_debug("pid %u: cannot index by tgid: %s", id.tgid, strerror(-err));
	}
	return 0;
}

/*
 * A file mapping BPF met in an image before it was published, or mapped since it was
 * (PROC_EV_MAPPING): added to the image unless a capture already holds something there,
 * with the object the agent holds for that device and inode (none is opened: the process
 * may be gone, and a file seen once is not read again per process). A live image's mapping
 * of a file without an object is left to its next capture.
 */
static void add_bpf_mapping(struct proctab *pt, const struct proc_event *ev)
{
	struct proc_id id = { .tgid = ev->tgid,
			      .exec_id = ev->exec_id,
			      .start_time = ev->start_time };
	struct proc_image *img = hashmap__find(&pt->images, &id);
	struct proc_mapping *m;
	char name[PATH_MAX];
	size_t i;

	if (!img || img->denied) {
		pt->stats.bpf_mappings_no_image++;
		return;
	}
	if (ev->end <= ev->start || ev->end - ev->start > (1ULL << 40) ||
	    (!ev->exe_inode && ev->exe_dev))
		return; /* not what BPF sends */
	for (i = 0; i < img->nr_maps; i++) {
		if (ev->start < img->maps[i].end && img->maps[i].start < ev->end) {
			pt->stats.bpf_mappings_known++;
			return;
		}
	}
	if (grow_array((void **)&img->maps, &img->cap_maps, img->nr_maps + 1, sizeof(*img->maps)))
		return;
	m = &img->maps[img->nr_maps];
	memset(m, 0, sizeof(*m));
	m->start = ev->start;
	m->end = ev->end;
	m->offset = ev->offset;
	m->inode = ev->exe_inode;
	m->dev = ev->exe_dev;
	m->kind = MAPPING_FILE;
	m->from_bpf = true;
	m->stale_window = UINT64_MAX;
	if (!ev->exe_inode) {
		m->kind = MAPPING_VDSO;
		m->object = sym_object__get(pt->opts.vdso);
		snprintf(name, sizeof(name), "[vdso]");
	} else {
		m->object = symbolizer__find(pt->opts.symbolizer,
					     makedev(ev->exe_dev >> 20, ev->exe_dev & 0xfffff),
					     (ino_t)ev->exe_inode);
		if (m->object) {
			snprintf(name, sizeof(name), "%s", sym_object__name(m->object));
		} else if (img->captured_ns && img->exited_window == UINT64_MAX) {
			/* A live image mapping a file the agent never opened (a dlopen() since its
			 * capture): the capture its change brings reads the file, named. A mapping
			 * without it here would spare its addresses that capture. */
			pt->stats.bpf_mappings_no_file++;
			return;
		} else {
			/* Its frames keep their addresses, counted as an unopened file's. */
			m->open_error = -ENOENT;
			snprintf(name, sizeof(name), "[inode %llu on %u:%u]",
				 (unsigned long long)ev->exe_inode, ev->exe_dev >> 20,
				 ev->exe_dev & 0xfffff);
			pt->stats.bpf_mappings_no_file++;
		}
	}
	m->name = strdup(name);
	if (!m->name) {
		mapping_fini(m);
		return;
	}
	img->nr_maps++;
	if (img->nr_maps > 1)
		qsort(img->maps, img->nr_maps, sizeof(*img->maps), cmp_mapping);
	if (!m->object && m->kind == MAPPING_FILE)
		img->incomplete = true;
	if (!img->exe[0] && ev->exe_inode == img->exe_inode && m->object)
		snprintf(img->exe, sizeof(img->exe), "%s", sym_object__name(m->object));
	pt->stats.bpf_mappings++;
}

int proctab__handle_event(struct proctab *pt, const struct proc_event *ev, uint64_t window)
{
	struct proc_image *img;

	switch (ev->type) {
	case PROC_EV_NEW:
	case PROC_EV_MMAP:
		return new_image(pt, ev, window);
	case PROC_EV_EXEC: {
		/* The next sample announces the new image; the old one lives out the window. A
		 * sample taken inside execve() may have announced the new image already. */
		struct proc_id keep = { .tgid = ev->tgid,
					.exec_id = ev->exec_id,
					.start_time = ev->start_time };

		retire_tgid(pt, ev->tgid, &keep, window);
		return 0;
	}
	case PROC_EV_EXIT:
		img = hashmap__find(&pt->by_tgid, &ev->tgid);
		if (img && img->id.start_time == ev->start_time)
			retire_tgid(pt, ev->tgid, NULL, window);
		return 0;
	case PROC_EV_MAPPING:
		add_bpf_mapping(pt, ev);
		return 0;
	default:
		return -EINVAL;
	}
}

struct proc_image *proctab__find(struct proctab *pt, const struct proc_id *id)
{
	return hashmap__find(&pt->images, id);
}

bool proctab__knows(struct proctab *pt, uint32_t tgid, uint64_t start_time, uint32_t exec_id)
{
	struct proc_id id = { .tgid = tgid, .exec_id = exec_id, .start_time = start_time };

	return proctab__find(pt, &id) != NULL;
}

static const struct proc_mapping *lookup_mapping(const struct proc_image *img, uint64_t addr)
{
	size_t lo = 0, hi = img->nr_maps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct proc_mapping *m = &img->maps[mid];

		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}

const struct proc_mapping *proctab__mapping(struct proctab *pt, struct proc_image *img,
					    uint64_t addr, uint64_t window, bool recapture)
{
	const struct proc_mapping *m = lookup_mapping(img, addr);

	if (m || !recapture || img->denied || img->exited_window != UINT64_MAX ||
	    now_mono_ns() - img->captured_ns < pt->opts.min_recapture_ns)
		return m;
	/* A library loaded since the last capture (dlopen): look again, once for a while. */
	if (capture(pt, img, 0, window))
		return NULL;
	return lookup_mapping(img, addr);
}

void proctab__release(struct proctab *pt, uint64_t drained)
{
	struct proc_image **gone = NULL;
	struct hashmap_entry *e;
	size_t nr = 0, cap = 0, i, j;

	hashmap__for_each(&pt->images, e) {
		struct proc_image *img = e->value;

		if (img->exited_window <= drained) {
			if (!grow_array((void **)&gone, &cap, nr + 1, sizeof(*gone)))
				gone[nr++] = img;
			continue;
		}
		for (i = 0, j = 0; i < img->nr_maps; i++) {
			if (img->maps[i].stale_window <= drained)
				mapping_fini(&img->maps[i]);
			else
				img->maps[j++] = img->maps[i];
		}
		img->nr_maps = j;
	}
	for (i = 0; i < nr; i++) {
		for (j = 0; j < gone[i]->nr_maps; j++)
			linger_keep(pt, gone[i]->maps[j].object, drained);
		image_remove(pt, gone[i]);
	}
	free(gone);
	linger_expire(pt, drained);
}

int proctab__rescan(struct proctab *pt, uint64_t window)
{
	struct hashmap_entry *e;
	int found = 0;

	hashmap__for_each(&pt->images, e) {
		struct proc_image *img = e->value;
		uint64_t ticks;
		int fd, err;

		if (img->exited_window != UINT64_MAX)
			continue;
		fd = procfs_open_pid(pt->opts.proc_root, img->id.tgid);
		if (fd >= 0) {
			err = procfs_start_ticks(fd, &ticks);
			close(fd);
			if (!err && ticks == procfs_ns_to_ticks(img->id.start_time))
				continue;
			if (err && err != -ESRCH)
				continue; /* unreadable is not gone */
		} else if (fd != -ESRCH) {
			continue;
		}
		img->exited_window = window;
		pt->stats.exits_missed++;
		found++;
	}
	/* by_tgid may still point at images found gone; harmless, they are released by id. */
	return found;
}

void proctab__stats(const struct proctab *pt, struct proctab_stats *stats)
{
	*stats = pt->stats;
	stats->lingering = hashmap__size(&pt->linger);
}
