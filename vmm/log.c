// SPDX-License-Identifier: Apache-2.0
/* The log (see log.h). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* Process-wide settings: written once at start-up by main.c. */
static enum log_level log_level = LOG_WARN;
static struct timespec log_t0;

__attribute__((constructor)) static void log__start(void)
{
	clock_gettime(CLOCK_MONOTONIC, &log_t0);
}

void log__set_level(enum log_level level)
{
	log_level = level;
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
	int n, m;

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
	n += m;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}
