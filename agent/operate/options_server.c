// SPDX-License-Identifier: Apache-2.0
/*
 * The settings of the server sink: where, how to authenticate, how much to queue, and how
 * to name what is sent. Their slice of the option table, the check of those that only make
 * sense together, and the server sink's options made from them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "options_internal.h"
#include "options_server.h"
#include "ship/sink_server.h"
#include "profile/targets.h"

#define MAX_SECRET_BYTES 4096

static int opt_server_url(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	const char *host = strstr(arg, "://");

	if ((strncmp(arg, "https://", 8) && strncmp(arg, "http://", 7)) || !host[3] ||
	    host[3] == '/' || strpbrk(arg, " ?#\r\n"))
		return WHY("must be an http:// or https:// URL without query "
			   "(e.g. http://pyroscope:4040)");
	if (memchr(host + 3, '@', strcspn(host + 3, "/")))
		return WHY("must not carry credentials: use --basic-auth-user and "
			   "--basic-auth-password-file");
	return option_set_string(&cfg->server_url, arg, why, len);
}

static int opt_pyroscope_api(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	if (!strcmp(arg, "push"))
		cfg->pyroscope_ingest = false;
	else if (!strcmp(arg, "ingest"))
		cfg->pyroscope_ingest = true;
	else
		return WHY("must be push or ingest");
	return 0;
}

static int opt_server_protocol(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	if (!strcmp(arg, "pyroscope"))
		cfg->server_protocol = SERVER_PYROSCOPE;
	else if (!strcmp(arg, "parca"))
		cfg->server_protocol = SERVER_PARCA;
	else if (!strcmp(arg, "otlp"))
		cfg->server_protocol = SERVER_OTLP;
	else
		return WHY("must be pyroscope, parca or otlp");
	return 0;
}

static int file_arg(char **field, const char *arg, char *why, size_t len)
{
	if (!*arg)
		return WHY("must name a file");
	return option_set_string(field, arg, why, len);
}

static int opt_tls_ca_file(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	return file_arg(&cfg->tls_ca_file, arg, why, len);
}

static int opt_tls_cert_file(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	return file_arg(&cfg->tls_cert_file, arg, why, len);
}

static int opt_tls_key_file(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	return file_arg(&cfg->tls_key_file, arg, why, len);
}

static int opt_tls_insecure(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	return option_set_flag(&cfg->tls_insecure, false, arg, why, len);
}

static int opt_basic_auth_user(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	if (!*arg || strpbrk(arg, ":\r\n"))
		return WHY("must be a user name without ':' (Grafana Cloud: the stack's numeric "
			   "profiles user)");
	return option_set_string(&cfg->basic_auth_user, arg, why, len);
}

static int opt_basic_auth_password_file(struct agent_config *cfg, const char *arg, char *why,
					size_t len)
{
	return file_arg(&cfg->basic_auth_password_file, arg, why, len);
}

static int opt_basic_auth_password(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	if (!*arg || strpbrk(arg, "\r\n"))
		return WHY("must be one line of text");
	if (cfg->basic_auth_password)
		memset(cfg->basic_auth_password, 0, strlen(cfg->basic_auth_password));
	return option_set_string(&cfg->basic_auth_password, arg, why, len);
}

static int opt_bearer_token_file(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	return file_arg(&cfg->bearer_token_file, arg, why, len);
}

static int opt_tenant_id(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	/* Tenant ids (Cortex, Mimir, Pyroscope): up to 150 of [A-Za-z0-9!-_.*'()]. */
	if (!*arg || strlen(arg) > 150 ||
	    strspn(arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!-_.*'()") !=
		    strlen(arg))
		return WHY("must be 1 to 150 of A-Z a-z 0-9 ! - _ . * ' ( )");
	return option_set_string(&cfg->tenant_id, arg, why, len);
}

static int opt_header(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	static const char *const ours[] = {
		"Content-Type",	     "Content-Length",		 "Content-Encoding", "Host",
		"Transfer-Encoding", "Connect-Protocol-Version", "X-Scope-OrgID",
	};
	const char *colon = strchr(arg, ':');
	size_t n, i;

	if (!colon || colon == arg || strpbrk(arg, "\r\n"))
		return WHY("must be 'Name: value' (e.g. 'X-Team: payments')");
	n = (size_t)(colon - arg);
	if (strspn(arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
			"!#$%&'*+-.^_`|~") != n)
		return WHY("the header name '%.*s' is not an HTTP token", (int)n, arg);
	for (i = 0; i < ARRAY_SIZE(ours); i++)
		if (strlen(ours[i]) == n && !strncasecmp(arg, ours[i], n))
			return WHY("%s is set by ignis itself%s", ours[i],
				   i == 6 ? ": use --tenant-id" : "");
	return option_list_add(&cfg->headers, &cfg->nr_headers, 64, arg, why, len);
}

static int seconds(unsigned int *field, const char *arg, uint64_t min, uint64_t max, char *why,
		   size_t len)
{
	uint64_t v;

	if (parse_duration(arg, &v) || v < min || v > max)
		return WHY("must be a duration from %llus to %llus (e.g. 10s, 1m)",
			   (unsigned long long)min, (unsigned long long)max);
	*field = (unsigned int)v;
	return 0;
}

static int opt_upload_connect_timeout(struct agent_config *cfg, const char *arg, char *why,
				      size_t len)
{
	return seconds(&cfg->upload_connect_timeout_sec, arg, 1, 300, why, len);
}

static int opt_upload_timeout(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	return seconds(&cfg->upload_timeout_sec, arg, 1, 600, why, len);
}

static int opt_upload_concurrency(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	uint64_t v;

	if (option_parse_uint(arg, 1, 64, &v))
		return WHY("must be a number of requests from 1 to 64");
	cfg->upload_concurrency = (unsigned int)v;
	return 0;
}

static int opt_queue_max_bytes(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	uint64_t v;

	if (parse_size(arg, &v) || v < (64ULL << 10))
		return WHY("must be a size of at least 64KiB (e.g. 16MiB)");
	cfg->queue_max_bytes = v;
	return 0;
}

static int opt_spool_dir(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	if (!*arg)
		return WHY("must name a folder");
	return option_set_string(&cfg->spool_dir, arg, why, len);
}

static int opt_spool_max_bytes(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	uint64_t v;

	if (parse_size(arg, &v) || v < (1ULL << 20))
		return WHY("must be a size of at least 1MiB (e.g. 512MiB)");
	cfg->spool_max_bytes = v;
	return 0;
}

static int opt_upload_max_age(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	uint64_t v;

	if (parse_duration(arg, &v) || v < 10 || v > 86400)
		return WHY("must be a duration from 10s to 1d (the server's ingestion window is "
			   "about 1h)");
	cfg->upload_max_age_sec = v;
	return 0;
}

static int opt_upload_max_bytes(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	uint64_t v;

	if (parse_size(arg, &v) || v < 1024 || v > (64ULL << 20))
		return WHY("must be a size from 1KiB to 64MiB");
	cfg->upload_max_bytes = v;
	return 0;
}

static int opt_upload_max_samples(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	uint64_t v;

	if (option_parse_uint(arg, 2, 1000000, &v))
		return WHY("must be a number from 2 to 1000000");
	cfg->upload_max_samples = v;
	return 0;
}

static int opt_service_name_rule(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	int err = targets_check_rule(arg, why, len);

	if (err)
		return err;
	return option_list_add(&cfg->service_name_rules, &cfg->nr_service_name_rules, 256, arg, why,
			       len);
}

static int opt_label(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	char name[TARGET_MAX_NAME + 1], other[TARGET_MAX_NAME + 1];
	size_t i, n = strcspn(arg, "=");
	int err = targets_check_label(arg, why, len);

	if (err)
		return err;
	/* Compared as Pyroscope stores them: a.b and a_b are one label there. */
	targets_label_name(arg, name, sizeof(name));
	for (i = 0; i < cfg->nr_labels; i++) {
		size_t m = strcspn(cfg->labels[i], "=");

		if (targets_label_name(cfg->labels[i], other, sizeof(other)) || strcmp(name, other))
			continue;
		if (m == n && !strncmp(cfg->labels[i], arg, n))
			return WHY("'%.*s' is given twice", (int)n, arg);
		return WHY("'%.*s' and '%.*s' are both %s in Pyroscope", (int)m, cfg->labels[i],
			   (int)n, arg, name);
	}
	if (cfg->nr_labels >= TARGET_MAX_STATIC)
		return WHY("is given too often: a series has at most %d labels, and ignis "
			   "needs %d of them, so at most %d static labels",
			   TARGET_MAX_LABELS, TARGET_FIXED_LABELS + TARGET_SAMPLE_LABELS,
			   TARGET_MAX_STATIC);
	return option_list_add(&cfg->labels, &cfg->nr_labels, TARGET_MAX_STATIC, arg, why, len);
}

static int opt_sample_labels(struct agent_config *cfg, const char *arg, char *why, size_t len)
{
	char name[16];
	size_t i;

	/* As Pyroscope stores the name: OTel's thread.name is thread_name. */
	if (strlen(arg) >= sizeof(name) || label_name_store(arg, strlen(arg), name, sizeof(name)) ||
	    (strcmp(name, "comm") && strcmp(name, "thread_name")))
		return WHY("must be comm or thread_name (or thread.name; each becomes a series "
			   "label in Pyroscope)");
	for (i = 0; i < cfg->nr_sample_labels; i++)
		if (!strcmp(cfg->sample_labels[i], name))
			return 0;
	return option_list_add(&cfg->sample_labels, &cfg->nr_sample_labels, TARGET_SAMPLE_LABELS,
			       name, why, len);
}

static void server_init(struct agent_config *cfg)
{
	cfg->upload_connect_timeout_sec = 5;
	cfg->upload_timeout_sec = 30;
	cfg->upload_concurrency = 4;
	cfg->queue_max_bytes = 16ULL << 20;
	cfg->spool_max_bytes = 512ULL << 20;
	cfg->upload_max_age_sec = 3600;
}

static void server_fini(struct agent_config *cfg)
{
	free(cfg->server_url);
	free(cfg->tls_ca_file);
	free(cfg->tls_cert_file);
	free(cfg->tls_key_file);
	free(cfg->basic_auth_user);
	free(cfg->basic_auth_password_file);
	if (cfg->basic_auth_password)
		memset(cfg->basic_auth_password, 0, strlen(cfg->basic_auth_password));
	free(cfg->basic_auth_password);
	free(cfg->bearer_token_file);
	free(cfg->tenant_id);
	option_list_free(cfg->headers, cfg->nr_headers);
	free(cfg->spool_dir);
	option_list_free(cfg->service_name_rules, cfg->nr_service_name_rules);
	option_list_free(cfg->labels, cfg->nr_labels);
	option_list_free(cfg->sample_labels, cfg->nr_sample_labels);
}

/* ---- Settings that only make sense together ------------------------------------------- */

/* A secret from a file: one line, at most MAX_SECRET_BYTES, into *out (malloc'd). */
static int read_secret(const char *path, const char *what, char **out, char *why, size_t len)
{
	char buf[MAX_SECRET_BYTES + 1];
	struct stat st;
	ssize_t n;
	size_t end;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return WHY("%s %s: cannot read it: %s", what, path, strerror(errno));
	if (!fstat(fd, &st) && (st.st_mode & S_IROTH))
		pr_warn("%s %s is readable by every user: make it 0600 or 0640", what, path);
	n = read(fd, buf, MAX_SECRET_BYTES + 1);
	err = n < 0 ? errno : 0;
	close(fd);
	if (n < 0 || n > MAX_SECRET_BYTES)
		return WHY("%s %s: %s", what, path,
			   n < 0 ? strerror(err) : "longer than 4096 bytes");
	buf[n] = '\0';
	end = strcspn(buf, "\r\n");
	buf[end] = '\0';
	if (!end)
		return WHY("%s %s is empty", what, path);
	*out = strdup(buf);
	return *out ? 0 : WHY("out of memory");
}

static int readable_file(const char *path, const char *flag, char *why, size_t len)
{
	if (!path || !access(path, R_OK))
		return 0;
	return WHY("--%s %s: cannot read it: %s", flag, path, strerror(errno));
}

static int check_combinations(const struct agent_config *cfg, char *why, size_t len)
{
	int err = readable_file(cfg->tls_ca_file, "tls-ca-file", why, len);

	if (!err)
		err = readable_file(cfg->tls_cert_file, "tls-cert-file", why, len);
	if (!err)
		err = readable_file(cfg->tls_key_file, "tls-key-file", why, len);
	if (!err)
		err = readable_file(cfg->bearer_token_file, "bearer-token-file", why, len);
	if (err)
		return err;
	if (!cfg->tls_cert_file != !cfg->tls_key_file)
		return WHY("--tls-cert-file and --tls-key-file go together");
	if ((cfg->basic_auth_password || cfg->basic_auth_password_file) && !cfg->basic_auth_user)
		return WHY("a basic auth password needs --basic-auth-user");
	if (cfg->basic_auth_password && cfg->basic_auth_password_file)
		return WHY("give the basic auth password once: either "
			   "--basic-auth-password-file or basic_auth_password");
	if (cfg->basic_auth_user && !cfg->basic_auth_password && !cfg->basic_auth_password_file)
		return WHY("--basic-auth-user needs a password: "
			   "--basic-auth-password-file FILE or IGNIS_BASIC_AUTH_PASSWORD");
	if (cfg->basic_auth_user && cfg->bearer_token_file)
		return WHY("choose basic auth or --bearer-token-file, not both");
	if (cfg->pyroscope_ingest && cfg->server_protocol != SERVER_PYROSCOPE)
		return WHY("--pyroscope-api ingest is Pyroscope's: not with --server-protocol %s",
			   cfg->server_protocol == SERVER_PARCA ? "parca" : "otlp");
	if ((cfg->tls_ca_file || cfg->tls_cert_file || cfg->tls_insecure) &&
	    strncmp(cfg->server_url, "https://", 8))
		return WHY("TLS settings given, but --server-url %s is not https://",
			   cfg->server_url);
	/* /ingest adds __delta__ and pyroscope_spy to each series (createLabels in
	 * pkg/og/convert/pprof/profile.go): two labels of Pyroscope's 30 fewer for ours. */
	if (cfg->pyroscope_ingest && cfg->nr_labels > TARGET_MAX_STATIC - 2)
		return WHY("--pyroscope-api ingest: the server adds __delta__ and pyroscope_spy to "
			   "each series, so at most %d --label fit in its %d labels (%zu given)",
			   TARGET_MAX_STATIC - 2, TARGET_MAX_LABELS, cfg->nr_labels);
	return 0;
}

/*
 * With --server-url only: the combinations, then the password file, read into
 * basic_auth_password (so that an unreadable or empty file is a config error), then the
 * warnings about settings that work but are unsafe.
 */
static int server_check(struct agent_config *cfg, char *why, size_t len)
{
	int err;

	if (!cfg->server_url)
		return 0;
	err = check_combinations(cfg, why, len);
	if (!err && cfg->basic_auth_password_file)
		err = read_secret(cfg->basic_auth_password_file, "--basic-auth-password-file",
				  &cfg->basic_auth_password, why, len);
	if (err)
		return err;
	if (cfg->tls_insecure)
		pr_warn("TLS VERIFICATION IS OFF (--tls-insecure-skip-verify): anyone between this "
			"host and %s can read and change the profiles and the credentials sent",
			cfg->server_url);
	if ((cfg->basic_auth_password || cfg->bearer_token_file) &&
	    !strncmp(cfg->server_url, "http://", 7))
		pr_warn("credentials go to %s in clear text: use https://", cfg->server_url);
	return 0;
}

void config_server_sink_opts(const struct agent_config *cfg, const char *hostname,
			     struct server_sink_opts *o)
{
	*o = (struct server_sink_opts){
		.sz = sizeof(*o),
		.url = cfg->server_url,
		.ingest = cfg->pyroscope_ingest,
		.protocol = (enum server_protocol)cfg->server_protocol,
		.hostname = hostname,
		.service_name_rules = cfg->service_name_rules,
		.nr_service_name_rules = cfg->nr_service_name_rules,
		.labels = cfg->labels,
		.nr_labels = cfg->nr_labels,
		.sample_labels = cfg->sample_labels,
		.nr_sample_labels = cfg->nr_sample_labels,
		.max_profile_bytes = cfg->upload_max_bytes,
		.max_profile_samples = cfg->upload_max_samples,
		.connect_timeout_sec = cfg->upload_connect_timeout_sec,
		.timeout_sec = cfg->upload_timeout_sec,
		.tls_ca_file = cfg->tls_ca_file,
		.tls_cert_file = cfg->tls_cert_file,
		.tls_key_file = cfg->tls_key_file,
		.tls_insecure = cfg->tls_insecure,
		.basic_auth_user = cfg->basic_auth_user,
		.basic_auth_password = cfg->basic_auth_password,
		.bearer_token_file = cfg->bearer_token_file,
		.tenant_id = cfg->tenant_id,
		.headers = cfg->headers,
		.nr_headers = cfg->nr_headers,
		.workers = cfg->upload_concurrency,
		.queue_max_bytes = cfg->queue_max_bytes,
		.spool_dir = cfg->spool_dir,
		.spool_max_bytes = cfg->spool_max_bytes,
		.max_age_sec = cfg->upload_max_age_sec,
	};
}

/* ---- The slice -------------------------------------------------------------------------- */

static const struct option_desc server_options[] = {
	{ "server-url", 0, "URL",
	  "send profiles to this server (e.g. http://pyroscope:4040); without "
	  "--output-dir, nothing is written locally",
	  NULL, 0, NULL, opt_server_url },
	{ "server-protocol", 0, "PROTOCOL",
	  "the server's protocol: pyroscope (push or ingest), parca (gRPC WriteRaw), otlp "
	  "(OpenTelemetry profiles over OTLP/HTTP, experimental)",
	  "pyroscope", 0, NULL, opt_server_protocol },
	{ "pyroscope-api", 0, "API", "push (the Connect push API) or ingest (the /ingest API)",
	  "push", 0, NULL, opt_pyroscope_api },
	{ "service-name-rule", 0, "RULE",
	  "name processes whose executable (exe:GLOB=NAME) or name (comm:GLOB=NAME) matches "
	  "(repeatable; first match wins)",
	  NULL, OPT_REPEATABLE, NULL, opt_service_name_rule },
	{ "label", 0, "NAME=VALUE", "add this label to every series sent (repeatable)", NULL,
	  OPT_REPEATABLE, NULL, opt_label },
	{ "sample-labels", 0, "LABEL",
	  "also send these sample labels: comm, thread_name (each becomes a series label)", NULL,
	  OPT_REPEATABLE, NULL, opt_sample_labels },
	{ "tls-ca-file", 0, "FILE", "trust the server certificates this CA file (PEM) signs",
	  "the system's", 0, NULL, opt_tls_ca_file },
	{ "tls-cert-file", 0, "FILE", "client certificate (PEM) for mutual TLS", NULL, 0, NULL,
	  opt_tls_cert_file },
	{ "tls-key-file", 0, "FILE", "key (PEM) of the client certificate", NULL, 0, NULL,
	  opt_tls_key_file },
	{ "tls-insecure-skip-verify", 0, NULL,
	  "do not verify the server's certificate (unsafe: for tests only)", NULL, OPT_FLAG, NULL,
	  opt_tls_insecure },
	{ "basic-auth-user", 0, "USER", "HTTP basic auth user (Grafana Cloud: the stack's user id)",
	  NULL, 0, NULL, opt_basic_auth_user },
	{ "basic-auth-password-file", 0, "FILE", "read the basic auth password from FILE", NULL, 0,
	  NULL, opt_basic_auth_password_file },
	{ "basic-auth-password", 0, "PASSWORD",
	  "the basic auth password itself: from the environment or the file, never a flag", NULL,
	  OPT_SECRET, NULL, opt_basic_auth_password },
	{ "bearer-token-file", 0, "FILE", "send 'Authorization: Bearer' with the token in FILE",
	  NULL, 0, NULL, opt_bearer_token_file },
	{ "tenant-id", 0, "ID", "send X-Scope-OrgID: ID (multi-tenant Pyroscope)", NULL, 0, NULL,
	  opt_tenant_id },
	{ "header", 0, "'NAME: VALUE'",
	  "send this HTTP header with every request (repeatable; shown by ps: no secrets)", NULL,
	  OPT_REPEATABLE | OPT_REDACT, NULL, opt_header },
	{ "upload-connect-timeout", 0, "DURATION", "give up connecting after this long", "5s", 0,
	  NULL, opt_upload_connect_timeout },
	{ "upload-timeout", 0, "DURATION", "give up on one request after this long", "30s", 0, NULL,
	  opt_upload_timeout },
	{ "upload-concurrency", 0, "N", "requests in flight at most", "4", 0, NULL,
	  opt_upload_concurrency },
	{ "queue-max-bytes", 0, "SIZE", "memory for profiles waiting to be sent", "16MiB", 0, NULL,
	  opt_queue_max_bytes },
	{ "spool-dir", 0, "DIR",
	  "keep profiles the memory queue cannot hold here, and across restarts", NULL, 0, NULL,
	  opt_spool_dir },
	{ "spool-max-bytes", 0, "SIZE", "disk for the spool; past it the oldest profiles go",
	  "512MiB", 0, NULL, opt_spool_max_bytes },
	{ "upload-max-age", 0, "DURATION",
	  "drop profiles not sent within this long (the server refuses older ones)", "1h",
	  OPT_HIDDEN, NULL, opt_upload_max_age },
	{ "upload-max-profile-bytes", 0, "SIZE", "tests: per-profile size limit", "2000000",
	  OPT_HIDDEN, NULL, opt_upload_max_bytes },
	{ "upload-max-profile-samples", 0, "N", "tests: per-profile sample limit", "16000",
	  OPT_HIDDEN, NULL, opt_upload_max_samples },
};

const struct option_slice server_option_slice = {
	.options = server_options,
	.nr = ARRAY_SIZE(server_options),
	.init = server_init,
	.fini = server_fini,
	.check = server_check,
};
