/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reason line the snapshot formats leave for their callers: one line
 * of text in a caller-owned buffer, beside a negative errno.
 */
#ifndef EMBER_SNAPSHOT_WHY_H
#define EMBER_SNAPSHOT_WHY_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/*
 * why_set() - format one line into @why (@whylen bytes; nothing when NULL
 * or 0) and return @err for the caller to pass on.
 */
static inline int __attribute__((format(printf, 4, 5)))
why_set(char *why, size_t whylen, int err, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return err;
}

#endif /* EMBER_SNAPSHOT_WHY_H */
