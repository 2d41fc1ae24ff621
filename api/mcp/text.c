// SPDX-License-Identifier: Apache-2.0
/* A line of `stat`'s output, as the guest prints it (text.h). */
#include <errno.h>
#include <stdint.h>

#include "text.h"

int text__stat_line(const char *line, size_t len, unsigned long *mode,
		    unsigned long long *size, size_t *name)
{
	unsigned long m = 0;
	unsigned long long sz = 0;
	size_t i = 0, start;
	int d;

	/* By hand: sscanf's blanks would eat the name's leading ones. */
	for (start = i; i < len && i - start < 8; i++) {
		if (line[i] >= '0' && line[i] <= '9')
			d = line[i] - '0';
		else if (line[i] >= 'a' && line[i] <= 'f')
			d = line[i] - 'a' + 10;
		else
			break;
		m = m * 16 + (unsigned long)d;
	}
	if (i == start || i >= len || line[i++] != ' ')
		return -EINVAL;
	for (start = i; i < len && line[i] >= '0' && line[i] <= '9'; i++) {
		if (sz > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		sz = sz * 10 + (unsigned long long)(line[i] - '0');
	}
	if (i == start || i + 1 >= len || line[i++] != ' ')
		return -EINVAL; /* and a name, never empty */
	*mode = m;
	*size = sz;
	*name = i;
	return 0;
}
