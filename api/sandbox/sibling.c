// SPDX-License-Identifier: Apache-2.0
/* The files beside this binary: see sibling.h. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sibling.h"

int sibling__path(const char *given, const char *env, const char *rel,
		  char *tried, size_t triedsz, char *out, size_t outsz)
{
	const char *e = getenv(env);
	char self[PATH_MAX];
	ssize_t n;

	tried[0] = '\0';
	out[0] = '\0';
	if (given || (e && *e)) {
		if ((size_t)snprintf(tried, triedsz, "%s", given ? given : e) >=
		    triedsz)
			return -ENAMETOOLONG;
	} else {
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n <= 0)
			return n < 0 ? -errno : -ENOENT;
		self[n] = '\0';
		if ((size_t)snprintf(tried, triedsz, "%s/%s", dirname(self),
				     rel) >= triedsz) {
			tried[0] = '\0';
			return -ENAMETOOLONG;
		}
	}
	if (!realpath(tried, self))
		return -errno;
	if (strlen(self) >= outsz)
		return -ENAMETOOLONG;
	strcpy(out, self);
	return 0;
}
