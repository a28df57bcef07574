/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's configuration and the one table that describes every setting: its
 * command-line form, its environment variable and YAML key, its help and default, and the
 * parser that checks a value and stores it. Each options file holds its slice of the table
 * (options.c: the agent's settings and the actions; options_server.c: the server's);
 * config.c assembles it and reads the sources into it. The usage text, the README's
 * configuration reference and --print-config are all made from this table.
 *
 * Names: --foo-bar on the command line, IGNIS_FOO_BAR in the environment, foo_bar in the
 * configuration file.
 */
#ifndef IGNIS_OPTIONS_H
#define IGNIS_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/ignis.h"
#include "log.h"
#include "collect/sampler_types.h"

struct agent_config {
	unsigned int frequency_hz;   /* samples per second per CPU */
	unsigned int interval_sec;   /* window length */
	unsigned int duration_sec;   /* stop after this long; 0: until SIGINT/SIGTERM */
	char *output_dir;	     /* local sink folder */
	uint64_t output_max_bytes;   /* the folder's size cap, bytes */
	uint64_t output_max_age_sec; /* files older than this are removed */
	uint32_t *pids;		     /* --pid filter, tgids */
	size_t nr_pids;
	bool kernel_stacks;
	bool python; /* walk Python frames (--no-python: off) */
	bool offcpu; /* record off-CPU time (--off-cpu) */
	bool offcpu_kthreads;
	unsigned int offcpu_period_ms;	  /* weight of one off-CPU sample */
	unsigned int offcpu_min_block_us; /* shorter waits are left out */
	unsigned int offcpu_max_rate;	  /* off-CPU samples per second per CPU, 0: no cap */
	unsigned int top;		  /* print the N hottest functions after each window */
	enum log_level log_level;
	enum sampler_event event;
	enum sampler_unwind unwind;  /* --unwind */
	uint64_t unwind_table_bytes; /* the row map, bytes */
	uint64_t symbol_cache_bytes;
	uint64_t symbol_cache_idle_sec;	 /* drop symbol tables unused this long, 0: never */
	char *debug_dir;		 /* host folder of separate debug files, "/usr/lib/debug" */
	char *debuginfod_urls;		 /* space-separated servers, NULL: none */
	uint64_t debuginfod_timeout_sec; /* per fetch */
	uint32_t max_stacks;		 /* stacks per generation, 0: sized from CPUs and Hz */
	char *metrics_address;		 /* HOST:PORT of the Prometheus endpoint, NULL: off */
	char *node_name; /* this host's name in labels (NODE_NAME), NULL: hostname */
	bool kubernetes; /* name pods and containers from the API server */
	char *kubernetes_api_url;
	char *kubernetes_token_file;
	char *kubernetes_ca_file;
	char **kubernetes_pod_labels; /* pod labels copied to profiles */
	size_t nr_kubernetes_pod_labels;
	/* The server's protocol: enum server_protocol (ship/encoder.h), 0 Pyroscope. */
	unsigned int server_protocol;
	/* Sending to a profiling server (Grafana Pyroscope). */
	char *server_url;      /* NULL: no server */
	bool pyroscope_ingest; /* the /ingest API instead of push */
	char *tls_ca_file;     /* extra trust anchors, PEM */
	char *tls_cert_file;   /* client certificate (mTLS) */
	char *tls_key_file;    /* its key */
	bool tls_insecure;     /* skip verification */
	char *basic_auth_user; /* with a password from the file or the secret */
	char *basic_auth_password_file;
	char *basic_auth_password; /* secret: environment or file only */
	char *bearer_token_file;
	char *tenant_id; /* X-Scope-OrgID */
	char **headers;	 /* "Name: value" */
	size_t nr_headers;
	unsigned int upload_connect_timeout_sec;
	unsigned int upload_timeout_sec;
	unsigned int upload_concurrency; /* requests in flight */
	uint64_t queue_max_bytes;
	char *spool_dir; /* NULL: no spool */
	uint64_t spool_max_bytes;
	uint64_t upload_max_age_sec; /* drop profiles older than this */
	uint64_t upload_max_bytes;   /* hidden: per-profile size limit (tests) */
	uint64_t upload_max_samples; /* hidden: per-profile sample limit (tests) */
	char **service_name_rules;   /* "exe:GLOB=NAME", "comm:GLOB=NAME" */
	size_t nr_service_name_rules;
	char **labels; /* "name=value" series labels */
	size_t nr_labels;
	char **sample_labels; /* "comm", "thread_name" */
	size_t nr_sample_labels;
	char *config_file;    /* where file settings came from, NULL: none */
	bool skip_walk;	      /* benchmark only: sample without walking stacks */
	uint32_t log_records; /* tests only: records of a CPU's run in the sample log, 0: sized */
	bool show_version;
	bool show_help;
	bool print_config;
	bool print_reference;	    /* the README's configuration reference, markdown */
	struct config_trace *trace; /* where each setting came from (config.c) */
};

#define DEFAULT_OUTPUT_DIR "./ignis-profiles"

enum option_flags {
	OPT_FLAG = 1 << 0,	 /* boolean: no value on the command line */
	OPT_REPEATABLE = 1 << 1, /* many values: repeated flag, YAML list, comma-separated env */
	OPT_SECRET = 1 << 2,	 /* no command-line form (argv is public); redacted in output */
	OPT_CLI_ONLY = 1 << 3,	 /* an action or --config: not from the environment or file */
	OPT_HIDDEN = 1 << 4,	 /* a benchmark or test aid: not documented */
	OPT_REDACT = 1 << 5,	 /* may hold a secret: redacted in --print-config */
};

typedef int (*option_parse_fn)(struct agent_config *cfg, const char *value, char *why, size_t len);

struct option_desc {
	const char *name; /* long option, without dashes */
	char short_name;  /* one-letter alias, or 0 */
	const char *arg;  /* metavariable; NULL for OPT_FLAG */
	const char *help;
	const char *def;       /* default as shown to users, or NULL */
	unsigned int flags;    /* OPT_* */
	const char *env_alias; /* a third-party variable for it (NODE_NAME), or NULL */
	option_parse_fn parse; /* booleans get "true" or "false" */
};

/* Value parsers, exposed for tests: sizes ("64MiB", "1G", "4096"), durations ("90s", "3h",
 * "7d", "60"). Return 0 or -EINVAL. */
int parse_size(const char *s, uint64_t *bytes) __must_check;
int parse_duration(const char *s, uint64_t *seconds) __must_check;

#endif /* IGNIS_OPTIONS_H */
