/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The server's settings (options_server.c): their slice of the option table, and the
 * server sink's options made from them.
 */
#ifndef IGNIS_OPTIONS_SERVER_H
#define IGNIS_OPTIONS_SERVER_H

#include "options_internal.h"

extern const struct option_slice server_option_slice;

struct server_sink_opts;

/* The server sink's options from a checked cfg (server_url set); strings borrowed from cfg. */
void config_server_sink_opts(const struct agent_config *cfg, const char *hostname,
			     struct server_sink_opts *opts);

#endif /* IGNIS_OPTIONS_SERVER_H */
