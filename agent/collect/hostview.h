/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the agent can see of the host (issue 20): whether it runs in the host's PID namespace
 * with the host's /proc, and which capabilities it holds, so that a blind agent says so at
 * start instead of writing profiles of [unknown] frames.
 *
 * BPF reports the kernel's process ids (those of the initial PID namespace) and the process
 * table reads /proc/PID by them: both only agree when the agent runs in the initial PID
 * namespace and /proc is that namespace's procfs. Everything is read from /proc without BPF,
 * so the check runs before the sampler loads; the parsers are pure, for the unit tests.
 */
#ifndef IGNIS_HOSTVIEW_H
#define IGNIS_HOSTVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/ignis.h"

/* Inode of the initial PID namespace's nsfs file (PROC_PID_INIT_INO, include/linux/proc_ns.h):
 * fixed since Linux 3.8; every other PID namespace gets one from 0xF0000000 up. */
#define HOSTVIEW_INIT_PID_NS_INO 0xEFFFFFFCULL

/* Capability numbers (linux/capability.h), spelled here for kernels' headers without them. */
#define HOSTVIEW_CAP_DAC_OVERRIDE	1
#define HOSTVIEW_CAP_DAC_READ_SEARCH	2
#define HOSTVIEW_CAP_SYS_PTRACE		19
#define HOSTVIEW_CAP_SYS_ADMIN		21
#define HOSTVIEW_CAP_SYSLOG		34
#define HOSTVIEW_CAP_PERFMON		38
#define HOSTVIEW_CAP_BPF		39
#define HOSTVIEW_CAP_CHECKPOINT_RESTORE 40

/* What /proc says about the agent's own PID namespace. */
struct hostview_pidns {
	pid_t self;	   /* getpid(): the agent's pid in its own namespace */
	long proc_self;	   /* the pid /proc/self names; -errno when it names none */
	int nspid_levels;  /* fields of "NSpid:" in /proc/self/status; -errno unreadable */
	uint64_t ns_inode; /* inode of /proc/self/ns/pid; 0 when unreadable */
};

/* The agent's capabilities and identity, from /proc/self/status and
 * /proc/sys/kernel/cap_last_cap. */
struct hostview_caps {
	uint64_t effective; /* CapEff */
	int cap_last;	    /* highest capability this kernel knows; -1 when unknown */
	uid_t euid;
};

/*
 * The number of fields of the "NSpid:" line of a /proc/PID/status text (one per PID
 * namespace level, as seen from the namespace of that procfs) and the last one, the id in
 * the innermost namespace, into *inner (may be NULL). Returns the count (>= 1), -ENOENT
 * without such a line, -EINVAL for a malformed one.
 */
int hostview_parse_nspid(const char *status, uint32_t *inner) __must_check;

/* The "CapEff:" bits (hex) of a /proc/PID/status text into *caps. Returns 0, -ENOENT without
 * such a line, or -EINVAL. */
int hostview_parse_capeff(const char *status, uint64_t *caps) __must_check;

/* Fill *out from proc_root ("/proc" outside tests) for the process `self`. Returns 0 or
 * -errno when not even proc_root/self/status can be read. */
int hostview_read_pidns(const char *proc_root, pid_t self, struct hostview_pidns *out);

/*
 * NULL when the facts show the host's PID namespace and its /proc; else what is wrong, in
 * words for the log (a static string).
 */
const char *hostview_pidns_problem(const struct hostview_pidns *f);

/* Fill *out from proc_root. Returns 0 or -errno (the status file unreadable or without
 * CapEff). */
int hostview_read_caps(const char *proc_root, struct hostview_caps *out);

static inline bool hostview_has(const struct hostview_caps *c, int cap)
{
	return cap >= 0 && cap < 64 && (c->effective >> cap) & 1;
}

/* Whether this kernel has CAP_BPF and CAP_PERFMON (Linux 5.8); before, CAP_SYS_ADMIN does
 * their work. Unknown (cap_last -1) counts as yes. */
bool hostview_split_bpf_caps(const struct hostview_caps *c);

/*
 * The capabilities BPF loading needs and *c lacks, as text ("CAP_BPF and CAP_PERFMON",
 * "CAP_SYS_ADMIN"), into buf; "" when none is missing. Returns buf.
 */
const char *hostview_missing_bpf_caps(const struct hostview_caps *c, char *buf, size_t size);

#endif /* IGNIS_HOSTVIEW_H */
