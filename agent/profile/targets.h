/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Targets: the series a profiling server stores a process's samples under (DESIGN.md
 * requirement 9; PROTOCOLS.md sections 2.2, 3 and 7). A target is a label set:
 *
 *   __name__      process_cpu
 *   service_name  from the first rule that applies (below)
 *   hostname      NODE_NAME (--node-name), else the host's name
 *   namespace, pod, container   where Kubernetes names the process's pod
 *   container_id  the cgroup's container id, with targets_opts.container_id only
 *   static labels (--label name=value), in the order given, names as Pyroscope stores them
 *
 * service_name, first match wins: an explicit --service-name-rule (exe:GLOB=NAME or
 * comm:GLOB=NAME, fnmatch(3) globs, in the order given); the pod's pyroscope.io/service_name
 * annotation; NAMESPACE/CONTAINER of a Kubernetes pod; NAME of a systemd NAME.service; the
 * first 12 hex digits of a container id; the executable's basename (the process's name when
 * the executable is unknown; "kernel" for kernel threads). Characters outside
 * [A-Za-z0-9_.-/] become '_' (the /ingest application-name charset), so getty@tty1 becomes
 * getty_tty1.
 *
 * The table is per window, and this module alone turns it over: ids are dense from 0 within
 * the window (the sequence number the callers pass), and the first targets__resolve() of a
 * new window forgets the previous one. The window builder resolves into it and the server
 * sink reads it back under the same window number; neither resets it.
 */
#ifndef IGNIS_TARGETS_H
#define IGNIS_TARGETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hashmap.h"
#include "common/ignis.h"

struct pod_meta;
struct proc_meta;

/* Pyroscope's limit on label names per series, sample labels included (PROTOCOLS.md 2.2). */
#define TARGET_MAX_LABELS 30
/* Labels the agent sets itself, and the sample labels a user may opt into. */
#define TARGET_FIXED_LABELS 6 /* __name__ service_name hostname namespace pod container */
/* ...and container_id where asked for (OTLP, which has no label limit): l[] has room. */
#define TARGET_SAMPLE_LABELS 2 /* comm thread_name */
#define TARGET_MAX_STATIC    (TARGET_MAX_LABELS - TARGET_FIXED_LABELS - TARGET_SAMPLE_LABELS)
#define TARGET_MAX_NAME	     1024 /* bytes */
#define TARGET_MAX_VALUE     2048 /* bytes */
#define SERVICE_NAME_MAX     255  /* bytes, ours */

/* What a target is derived from. Strings may be "" when unknown. */
struct target_process {
	const char *exe;	      /* the executable's path as the process sees it */
	const char *comm;	      /* the process's name */
	bool kthread;		      /* a kernel thread: no executable */
	bool offcpu;		      /* its off-CPU series (__name__ offcpu, as Alloy names
				       * it), not its CPU one (process_cpu) */
	const struct proc_meta *meta; /* cgroup metadata, or NULL */
	const struct pod_meta *pod;   /* Kubernetes names, or NULL */
};

struct target_label {
	char *name;
	char *value;
};

struct target {
	uint32_t id;
	uint32_t nr_labels;
	const char *service_name;     /* the value of labels[1] */
	char *key;		      /* canonical "name=value\n..." text: the identity */
	struct target_label labels[]; /* __name__ first, then service_name */
};

struct targets_opts {
	const char *hostname;
	char *const *rules; /* "exe:GLOB=NAME" or "comm:GLOB=NAME", checked */
	size_t nr_rules;
	char *const *labels; /* "name=value", checked */
	size_t nr_labels;
	bool container_id;   /* also container_id (the full id from the cgroup), after the
			    * Kubernetes labels: OTLP's container.id resource attribute */
	bool names_as_given; /* static labels keep their names as given (service.version), for
			      * OTLP's attributes; else as Pyroscope stores them (service_version) */
};

struct targets;

/* NULL with errno set: EINVAL for a rule or label that targets_check_*() rejects. */
struct targets *targets__new(const struct targets_opts *opts);
void targets__free(struct targets *t);

/*
 * The id of the target of process p in window `window` (interned). A window other than the
 * table's starts a new table: the previous window's targets are freed and ids start again
 * at 0. Returns the id or -ENOMEM.
 */
int64_t targets__resolve(struct targets *t, uint64_t window,
			 const struct target_process *p) __must_check;

/* The number of targets of window `window`: 0 if nothing was resolved in it. */
size_t targets__count(const struct targets *t, uint64_t window);

/* The target with this id in window `window`, borrowed until the next window's first
 * targets__resolve(); NULL if out of range or of another window. */
const struct target *targets__get(const struct targets *t, uint64_t window, uint32_t id);

/*
 * The service name of p alone (no interning), sanitized, into out (size bytes). Returns
 * which rule chose it: "rule", "annotation", "kubernetes", "systemd", "container", "exe",
 * "comm" or "kernel".
 */
const char *targets__service_name(const struct targets *t, const struct target_process *p,
				  char *out, size_t size);

/* Replace characters outside [A-Za-z0-9_.-/] with '_'; "" becomes "unknown". */
void service_name_sanitize(const char *in, char *out, size_t size);

/* Config checks: 0, or -EINVAL with what is allowed written into why (len bytes). A label's
 * name is checked as label_name_store() converts it, and refused when it is (or becomes) a
 * name ignis sets itself or starts with __. */
int targets_check_rule(const char *rule, char *why, size_t len);
int targets_check_label(const char *name_value, char *why, size_t len);

/* Whether name is a label name as ignis sends it: [a-zA-Z_][a-zA-Z0-9_]*, not __*. */
bool label_name_valid(const char *name);

/*
 * A label name a user gives (the first n bytes of name) as Pyroscope stores it, into out
 * (size bytes, NUL-terminated): OTel-style dots become '_' (service.version ->
 * service_version), as the server's label sanitization does (grafana/pyroscope PR 3335,
 * SanitizeLegacyLabelName in pkg/validation/validate.go). Every server since 1.0 stores the
 * result under the same name, and query clients without UTF-8 support see it. Names the
 * sanitizing server refuses (other characters, a leading digit, empty, longer than
 * TARGET_MAX_NAME) give -EINVAL, as does an out too small. Does not refuse __* names:
 * targets_check_label() does.
 */
int label_name_store(const char *name, size_t n, char *out, size_t size);

/* The stored name (label_name_store()) of a "NAME=VALUE" option: 0, or -EINVAL. */
int targets_label_name(const char *name_value, char *out, size_t size);

#endif /* IGNIS_TARGETS_H */
