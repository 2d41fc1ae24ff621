/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ember's log: one line per event on stderr, "ember: " prefixed, with the
 * milliseconds since process start.  Thread-safe (one write(2) per line).
 */
#ifndef EMBER_VMM_LOG_H
#define EMBER_VMM_LOG_H

/* LOG_NOTE is for what the user asked to see (--boot-timer): always shown. */
enum log_level { LOG_NOTE = -1, LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* log__set_level() - lines above @level are dropped (default LOG_WARN). */
void log__set_level(enum log_level level);

/* log__ms() - milliseconds since the process started (CLOCK_MONOTONIC). */
double log__ms(void);

/* log__printf() - emit one line at @level; a trailing newline is added. */
void log__printf(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_error(...) log__printf(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  log__printf(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log__printf(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log__printf(LOG_DEBUG, __VA_ARGS__)

#endif /* EMBER_VMM_LOG_H */
