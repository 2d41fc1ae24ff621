/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ember's log: one line per event on stderr (or the file PUT /logger
 * names), "ember: " prefixed, with the milliseconds since process start.
 * Thread-safe (one write(2) per line).
 */
#ifndef EMBER_VMM_LOG_H
#define EMBER_VMM_LOG_H

/* LOG_NOTE is for what the user asked to see (--boot-timer): always shown. */
enum log_level { LOG_NOTE = -1, LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* log__set_level() - lines above @level are dropped (default LOG_WARN). */
void log__set_level(enum log_level level);

/*
 * log__set_fd() - lines go to @fd (not owned; -1: back to stderr), one
 * write(2) each, as before.  Any thread.
 */
void log__set_fd(int fd);

/*
 * log__fd() - the fd lines go to, -1 for stderr.  Async-signal-safe (the
 * seccomp SIGSYS handler writes its line there too).
 */
int log__fd(void);

/*
 * log__last_error() - the text of the last error line the calling thread
 * logged (without "ember: [ms] error: "), "" after log__clear_error() or
 * when none; valid until that thread logs again.  It lets a control call
 * hand the builder's reason to an API client.
 */
const char *log__last_error(void);
void log__clear_error(void);

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
