/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's logger: one line per message on stderr, no timestamps (journald adds them).
 * Under systemd (JOURNAL_STREAM set) each line starts with its syslog priority ("<3>"),
 * which journald turns into a level; elsewhere with "ignis: <level>: ".
 * The macros test the level before evaluating their arguments.
 */
#ifndef IGNIS_LOG_H
#define IGNIS_LOG_H

#include <stdarg.h>

enum log_level {
	LOG_LEVEL_ERROR = 3, /* syslog LOG_ERR */
	LOG_LEVEL_WARN = 4,  /* LOG_WARNING */
	LOG_LEVEL_INFO = 6,  /* LOG_INFO */
	LOG_LEVEL_DEBUG = 7, /* LOG_DEBUG */
};

extern enum log_level log_max_level;

/* Parse "error", "warn", "info" or "debug". Returns 0 or -EINVAL. */
int log_parse_level(const char *s, enum log_level *level);

void log_printf(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_vprintf(enum log_level level, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

#define log_enabled(level) ((level) <= log_max_level)

#define __pr(level, ...)                                \
	do {                                            \
		if (log_enabled(level))                 \
			log_printf(level, __VA_ARGS__); \
	} while (0)

#define pr_err(...)   __pr(LOG_LEVEL_ERROR, __VA_ARGS__)
#define pr_warn(...)  __pr(LOG_LEVEL_WARN, __VA_ARGS__)
#define pr_info(...)  __pr(LOG_LEVEL_INFO, __VA_ARGS__)
#define pr_debug(...) __pr(LOG_LEVEL_DEBUG, __VA_ARGS__)

/*
 * Rate-limited variant for conditions that can repeat every window: logs the first `burst`
 * occurrences of a call site, then one in `every`. Per call site, not thread-safe (the agent
 * logs from one thread).
 */
#define pr_warn_ratelimited(burst, every, ...)           \
	do {                                             \
		static unsigned long __n;                \
		if (__n < (burst) || __n % (every) == 0) \
			pr_warn(__VA_ARGS__);            \
		__n++;                                   \
	} while (0)

#endif /* IGNIS_LOG_H */
