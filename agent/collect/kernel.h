/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kernel's own images, probed on this host: its symbols (/proc/kallsyms) and the vDSO it
 * maps into every process. They are the same for every process, so the agent reads them once
 * (kallsyms again when modules were loaded) and hands them to the symbolizer.
 */
#ifndef IGNIS_KERNEL_H
#define IGNIS_KERNEL_H

#include <stdbool.h>

struct sym_object;
struct symbolizer;

/*
 * Load /proc/kallsyms into the symbolizer. Returns true when kernel addresses can be named;
 * false when the file cannot be read or shows no addresses, after logging why and what to
 * change (kernel.kptr_restrict, CAP_SYSLOG).
 */
bool kernel_load_kallsyms(struct symbolizer *s);

/*
 * The vDSO as this process maps it (the same kernel image in every process), as a
 * symbolizer object the caller puts; NULL when it has none (its frames stay unnamed).
 */
struct sym_object *kernel_open_vdso(struct symbolizer *s);

#endif /* IGNIS_KERNEL_H */
