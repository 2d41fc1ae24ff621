// SPDX-License-Identifier: Apache-2.0
/* ember-jailer's one-line errors (see jailer.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "jailer.h"

int jail_err__set(struct jail_err *e, int errnum, const char *why,
		  const char *fmt, ...)
{
	va_list ap;

	e->errnum = errnum > 0 ? errnum : EIO;
	e->why = why;
	va_start(ap, fmt);
	vsnprintf(e->step, sizeof(e->step), fmt, ap);
	va_end(ap);
	return -e->errnum;
}

void jail_err__print(const struct jail_err *e)
{
	fprintf(stderr, "ember-jailer: %s: %s (errno %d)\n", e->step,
		e->why ? e->why : strerror(e->errnum), e->errnum);
}
