// SPDX-License-Identifier: Apache-2.0
/*
 * Kernel symbols and the vDSO, probed on this host (see kernel.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../symbolizer/symbolizer.h"
#include "kernel.h"
#include "operate/log.h"
#include "procfs.h"

static long read_sysctl(const char *path)
{
	char *text;
	long n, v;

	n = procfs_read_file(AT_FDCWD, path, 64, &text);
	if (n < 0)
		return -1;
	v = strtol(text, NULL, 10);
	free(text);
	return v;
}

/* Say why /proc/kallsyms shows zeros (kallsyms_show_value() in kernel/kallsyms.c). */
static void explain_hidden_kallsyms(void)
{
	long kptr = read_sysctl("/proc/sys/kernel/kptr_restrict");
	long paranoid = read_sysctl("/proc/sys/kernel/perf_event_paranoid");

	if (kptr >= 2)
		pr_warn("kernel symbol addresses are hidden (kernel.kptr_restrict=%ld hides them "
			"from everyone): kernel frames stay unnamed; set kernel.kptr_restrict=1 "
			"and grant CAP_SYSLOG to name them",
			kptr);
	else
		pr_warn("kernel symbol addresses are hidden from this process "
			"(kernel.kptr_restrict=%ld, kernel.perf_event_paranoid=%ld): kernel frames "
			"stay unnamed; grant CAP_SYSLOG (or run as root) to name them",
			kptr, paranoid);
}

bool kernel_load_kallsyms(struct symbolizer *s)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	int n;

	if (!f) {
		pr_warn("cannot read /proc/kallsyms (%s): kernel frames stay unnamed",
			strerror(errno));
		return false;
	}
	n = symbolizer__load_kallsyms(s, f);
	fclose(f);
	if (n == -EPERM) {
		explain_hidden_kallsyms();
		return false;
	}
	if (n < 0) {
		pr_warn("cannot parse /proc/kallsyms: %s; kernel frames stay unnamed",
			strerror(-n));
		return false;
	}
	pr_debug("kallsyms: %d kernel text symbols", n);
	return true;
}

/* The vDSO is the same kernel image in every process: symbolize it from our own copy. */
struct sym_object *kernel_open_vdso(struct symbolizer *s)
{
	char *maps, *line, *next;
	struct sym_object *o = NULL;
	long n;

	n = procfs_read_file(AT_FDCWD, "/proc/self/maps", 1 << 20, &maps);
	if (n < 0)
		return NULL;
	for (line = maps; line && *line; line = next) {
		struct procmaps_entry e;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (procmaps_parse_line(line, &e) || strcmp(e.path, "[vdso]"))
			continue;
		o = symbolizer__open_memory(s, (const void *)(uintptr_t)e.start, e.end - e.start,
					    "[vdso]");
		break;
	}
	free(maps);
	if (!o)
		pr_debug("no vDSO image: its frames stay unnamed");
	return o;
}
