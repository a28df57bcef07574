/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The configuration's sources and what is made of the option table (options.h): config.c
 * assembles the table from the options files' slices, reads the defaults, the file
 * (YAML), the environment and argv into struct agent_config, checks the settings that only
 * make sense together, and prints the usage text, --print-config and the README's reference.
 */
#ifndef IGNIS_CONFIG_H
#define IGNIS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "options.h"

/* The table: option_count() entries, option_at(0) to option_at(option_count() - 1). */
size_t option_count(void);
const struct option_desc *option_at(size_t i);

/* The option with this long name ("foo-bar") or file key ("foo_bar"), or NULL. */
const struct option_desc *option_find(const char *name);

/*
 * Check value and store it in cfg. Boolean values may be true/false, yes/no, on/off, 1/0.
 * On a bad value writes what is allowed into why and returns -EINVAL.
 */
int option_apply(struct agent_config *cfg, const struct option_desc *o, const char *value,
		 char *why, size_t len) __must_check;

struct config_trace;
void config_trace_free(struct config_trace *t);

/* Fill cfg with the defaults. */
void config_init(struct agent_config *cfg);
void config_fini(struct agent_config *cfg);

/*
 * Load the configuration: defaults, then the file (--config, or IGNIS_CONFIG), then the
 * environment (IGNIS_*, NODE_NAME ...), then argv, each overriding the one before; a
 * repeatable setting takes all its values from the strongest source that has it. On an
 * error writes one line naming the setting, where it came from (file and line, variable,
 * flag) and what is allowed to err, and returns -EINVAL.
 */
int config_load(struct agent_config *cfg, int argc, char **argv, char **envp,
		FILE *err) __must_check;

/* Parse argv only (for tests and tools). As config_load() without file and environment. */
int config_parse_args(struct agent_config *cfg, int argc, char **argv, FILE *err) __must_check;

/*
 * Check the settings that only make sense together (for the server: credentials and TLS
 * files, with --server-url only) and read the secrets that come from files into cfg, once,
 * after config_load() and the actions. On a problem writes one line saying what to fix to
 * err and returns -EINVAL; warns (pr_warn) about settings that work but are unsafe.
 */
int config_check(struct agent_config *cfg, FILE *err) __must_check;

/* The usage text, from the option table. */
void config_usage(FILE *out);

/* Do what an action option asks (--help, --version, --print-config, --print-reference) on
 * out. Returns true when one was given: the agent then has nothing else to do. */
bool config_act(const struct agent_config *cfg, FILE *out);

/* The effective configuration as YAML, each value with its origin; secrets redacted. */
void config_print(const struct agent_config *cfg, FILE *out);

/* The configuration reference (markdown) that the README carries. */
void config_reference(FILE *out);

#endif /* IGNIS_CONFIG_H */
