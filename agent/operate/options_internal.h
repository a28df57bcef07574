/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the options files. Each of them exports its slice of the option table (the
 * entries, with the defaults, cleanup and cross-setting checks of the fields they fill);
 * config.c assembles the table from the slices and is the only file that walks it. The
 * slices use the value helpers of options.c and nothing of config.c, so the files form no
 * cycle: config.c -> options_server.c -> options.c, config.c -> options.c.
 */
#ifndef IGNIS_OPTIONS_INTERNAL_H
#define IGNIS_OPTIONS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "options.h"

#define WHY(...) (snprintf(why, len, __VA_ARGS__), -EINVAL)

struct option_slice {
	const struct option_desc *options;
	size_t nr;
	void (*init)(struct agent_config *cfg); /* set the defaults of its fields, or NULL */
	void (*fini)(struct agent_config *cfg); /* free its fields, or NULL */
	/* Settings of the slice that only make sense together, checked once after loading
	 * (config_check()): 0, or -EINVAL with what to fix written into why. May complete
	 * cfg (a secret read from its file). NULL: nothing to check. */
	int (*check)(struct agent_config *cfg, char *why, size_t len);
};

/* In the order of the table: --config and the agent's own settings, then the server's,
 * then the command-line actions. */
extern const struct option_slice agent_option_slice;  /* options.c */
extern const struct option_slice action_option_slice; /* options.c */

/* Value helpers (options.c). */

/* Parse an unsigned decimal in [min, max]. Returns 0 or -EINVAL. */
int option_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Replace *field with a copy of value. */
int option_set_string(char **field, const char *value, char *why, size_t len);
/* A boolean, inverted for --no-* flags. */
int option_set_flag(bool *field, bool invert, const char *value, char *why, size_t len);
/* Append a copy of value to a list of at most max items. */
int option_list_add(char ***list, size_t *nr, size_t max, const char *value, char *why, size_t len);
/* Free the nr strings of list and list itself. */
void option_list_free(char **list, size_t nr);

#endif /* IGNIS_OPTIONS_INTERNAL_H */
