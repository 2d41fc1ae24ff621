// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: dockerignore__parse() (api/sandbox/dockerignore.h) on
 * untrusted .dockerignore text, then its matchers.  The input is split at
 * its first 0xff byte: before it the .dockerignore, after it paths (one
 * a line) to match, each also under a made-up context and as a directory
 * to skip.  Oracle: the sanitizers (LeakSanitizer: dockerignore__free()
 * frees all), and the rules every match keeps: the context itself is
 * never excluded, "./x" and "x/" answer as "x", and a directory that
 * may be skipped is excluded.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/sandbox/dockerignore.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *split = memchr(data, 0xff, size);
	size_t tlen = split ? (size_t)(split - data) : size;
	struct dockerignore *d = NULL;
	char err[256], *paths, *save = NULL, *p;

	if (dockerignore__parse((const char *)data, tlen, &d, err, sizeof(err)))
		return 0;
	if (!split) {
		dockerignore__free(d);
		return 0;
	}
	paths = malloc(size - tlen);
	if (!paths) {
		dockerignore__free(d);
		return 0;
	}
	memcpy(paths, split + 1, size - tlen - 1);
	paths[size - tlen - 1] = '\0';
	if (dockerignore__match(d, ".") || dockerignore__match(d, ""))
		__builtin_trap();
	for (p = strtok_r(paths, "\n", &save); p;
	     p = strtok_r(NULL, "\n", &save)) {
		char alt[4096 + 8], under[4096 + 16];
		bool m = dockerignore__match(d, p);

		if (strlen(p) > 4096)
			continue;
		if (p[0] != '.' && p[0] != '/' && !strstr(p, "//") &&
		    !strstr(p, "/./") && p[strlen(p) - 1] != '/') {
			snprintf(alt, sizeof(alt), "./%s", p);
			if (dockerignore__match(d, alt) != m)
				__builtin_trap();
			snprintf(alt, sizeof(alt), "%s/", p);
			if (dockerignore__match(d, alt) != m)
				__builtin_trap();
			snprintf(under, sizeof(under), "/ctx/%s", p);
			if (!strstr(p, "/.") && strcmp(p, ".") &&
			    dockerignore__match_under(d, "/ctx", under) != m)
				__builtin_trap();
		}
		if (dockerignore__skip_dir(d, p) && !m)
			__builtin_trap();
	}
	free(paths);
	dockerignore__free(d);
	return 0;
}
