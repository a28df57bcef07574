// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <stdbool.h>
#include <stdlib.h>

#include "log.h"

enum log_level log_max_level = LOG_LEVEL_INFO;

/* stderr goes to journald: it sets JOURNAL_STREAM for the services it logs. */
static bool to_journal(void)
{
	static int cached = -1;

	if (cached < 0)
		cached = getenv("JOURNAL_STREAM") != NULL;
	return cached;
}

static const char *level_name(enum log_level level)
{
	switch (level) {
	case LOG_LEVEL_ERROR:
		return "error";
	case LOG_LEVEL_WARN:
		return "warning";
	case LOG_LEVEL_INFO:
		return "info";
	default:
		return "debug";
	}
}

int log_parse_level(const char *s, enum log_level *level)
{
	static const struct {
		const char *name;
		enum log_level level;
	} names[] = {
		{ "error", LOG_LEVEL_ERROR },
		{ "warn", LOG_LEVEL_WARN },
		{ "info", LOG_LEVEL_INFO },
		{ "debug", LOG_LEVEL_DEBUG },
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(s, names[i].name)) {
			*level = names[i].level;
			return 0;
		}
	}
	return -EINVAL;
}

void log_vprintf(enum log_level level, const char *fmt, va_list ap)
{
	char small[1024], *text = small, *line, *next;
	va_list copy;
	int n;

	/* Format first, then write line by line: a verifier log is one message of many lines. */
	va_copy(copy, ap);
	n = vsnprintf(small, sizeof(small), fmt, copy);
	va_end(copy);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(small) && vasprintf(&text, fmt, ap) < 0)
		text = small; /* out of memory: the cut message is better than none */
	for (line = text; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (to_journal())
			fprintf(stderr, "<%d>%s\n", (int)level, line);
		else
			fprintf(stderr, "ignis: %s: %s\n", level_name(level), line);
	}
	if (text != small)
		free(text);
}

void log_printf(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vprintf(level, fmt, ap);
	va_end(ap);
}
