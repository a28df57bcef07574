/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The `ignis report` and `ignis diff` commands: read profiles from the local folder (or given
 * files), never load BPF, need no privileges beyond reading the files.
 */
#ifndef IGNIS_REPORT_CLI_H
#define IGNIS_REPORT_CLI_H

/*
 * Run `ignis report` with argv[0] == "report". Returns the exit status: 0, 1 when nothing
 * could be reported (no profiles selected, an output that cannot be written), 2 for a usage
 * error (said on stderr with what to fix).
 */
int report_main(int argc, char **argv);

/* Run `ignis diff` with argv[0] == "diff". As report_main(), and 3 when a --fail-if
 * condition holds. */
int diff_main(int argc, char **argv);

#endif /* IGNIS_REPORT_CLI_H */
