// SPDX-License-Identifier: Apache-2.0
/* The log (see log.h). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* Process-wide settings: written once at start-up by ember's main. */
static enum log_level log_level = LOG_WARN;
static struct timespec log_t0;
static int log_fd = -1; /* -1: stderr */
/* The last error line this thread logged, without its prefix. */
static __thread char log_last_error[512];

__attribute__((constructor)) static void log__start(void)
{
	clock_gettime(CLOCK_MONOTONIC, &log_t0);
}

void log__set_level(enum log_level level)
{
	log_level = level;
}

const char *log__last_error(void)
{
	return log_last_error;
}

void log__clear_error(void)
{
	log_last_error[0] = '\0';
}

void log__set_fd(int fd)
{
	__atomic_store_n(&log_fd, fd, __ATOMIC_RELEASE);
}

int log__fd(void)
{
	return __atomic_load_n(&log_fd, __ATOMIC_ACQUIRE);
}

double log__ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - log_t0.tv_sec) * 1e3 +
	       (double)(t.tv_nsec - log_t0.tv_nsec) / 1e6;
}

void log__printf(enum log_level level, const char *fmt, ...)
{
	static const char *const names[] = { "note", "error", "warn", "info",
					     "debug" };
	char line[1024];
	va_list ap;
	int n, m, fd;

	if (level > log_level)
		return;
	n = snprintf(line, sizeof(line), "ember: [%9.3f ms] %s: ", log__ms(),
		     names[level + 1]);
	if (n < 0)
		return;
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	if (level == LOG_ERROR)
		snprintf(log_last_error, sizeof(log_last_error), "%s",
			 line + n);
	n += m;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	fd = __atomic_load_n(&log_fd, __ATOMIC_ACQUIRE);
	if (write(fd >= 0 ? fd : STDERR_FILENO, line, (size_t)n) < 0)
		return;
}
