/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the option parsers of options.c and options_server.c. */
#ifndef IGNIS_OPTIONS_INTERNAL_H
#define IGNIS_OPTIONS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "options.h"

#define WHY(...) (snprintf(why, len, __VA_ARGS__), -EINVAL)

/* Parse an unsigned decimal in [min, max]. Returns 0 or -EINVAL. */
int option_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Replace *field with a copy of value. */
int option_set_string(char **field, const char *value, char *why, size_t len);
/* A boolean, inverted for --no-* flags. */
int option_set_flag(bool *field, bool invert, const char *value, char *why, size_t len);
/* Append a copy of value to a list of at most max items. */
int option_list_add(char ***list, size_t *nr, size_t max, const char *value, char *why, size_t len);

/* The server settings' parsers (options_server.c). */
int opt_server_url(struct agent_config *cfg, const char *arg, char *why, size_t len);
int opt_pyroscope_api(struct agent_config *cfg, const char *arg, char *why, size_t len);
int opt_tls_ca_file(struct agent_config *cfg, const char *arg, char *why, size_t len);
int opt_tls_cert_file(struct agent_config *cfg, const char *arg, char *why, size_t len);
int opt_tls_key_file(struct agent_config *cfg, const char *arg, char *why, size_t len);
int opt_tls_insecure(struct agent_config *cfg, const char *arg, char *why, size_t len);
int opt_basic_auth_user(struct agent_config *cfg, const char *arg, char *why, size_t len);
int opt_basic_auth_password_file(struct agent_config *cfg, const char *arg, char *why, size_t len);
int opt_basic_auth_password(struct agent_config *cfg, const char *arg, char *why, size_t len);
int opt_bearer_token_file(struct agent_config *cfg, const char *arg, char *why, size_t len);
int opt_tenant_id(struct agent_config *cfg, const char *arg, char *why, size_t len);
int opt_header(struct agent_config *cfg, const char *arg, char *why, size_t len);
int opt_upload_connect_timeout(struct agent_config *cfg, const char *arg, char *why, size_t len);
int opt_upload_timeout(struct agent_config *cfg, const char *arg, char *why, size_t len);
int opt_upload_concurrency(struct agent_config *cfg, const char *arg, char *why, size_t len);
int opt_queue_max_bytes(struct agent_config *cfg, const char *arg, char *why, size_t len);
int opt_spool_dir(struct agent_config *cfg, const char *arg, char *why, size_t len);
int opt_spool_max_bytes(struct agent_config *cfg, const char *arg, char *why, size_t len);
int opt_upload_max_age(struct agent_config *cfg, const char *arg, char *why, size_t len);
int opt_upload_max_bytes(struct agent_config *cfg, const char *arg, char *why, size_t len);
int opt_upload_max_samples(struct agent_config *cfg, const char *arg, char *why, size_t len);
int opt_service_name_rule(struct agent_config *cfg, const char *arg, char *why, size_t len);
int opt_label(struct agent_config *cfg, const char *arg, char *why, size_t len);
int opt_sample_labels(struct agent_config *cfg, const char *arg, char *why, size_t len);

/* Free the server settings. */
void config_server_fini(struct agent_config *cfg);

#endif /* IGNIS_OPTIONS_INTERNAL_H */
