// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: dockerfile__parse() (api/sandbox/dockerfile.h) on
 * untrusted Dockerfile text.  The first byte picks the options: bit 0
 * passes build args (A=1, B=x y), bit 1 a base image's Env and
 * WorkingDir.  Every parsed step then gets its cache key, chained as a
 * builder would, and the keys must be 64 lowercase hex digits.
 * Oracle: the sanitizers (LeakSanitizer: dockerfile__free() frees all)
 * and the key's shape.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/sandbox/dockerfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const args[] = { "A=1", "B=x y" };
	static const char *const env[] = { "PATH=/usr/bin:/bin", "HOME=/root" };
	struct dockerfile_opts o = { 0 };
	uint8_t digest[32] = { 1 };
	struct dockerfile df;
	char err[256], key[65], prev[65] = "sha256:base";

	if (!size)
		return 0;
	if (data[0] & 1) {
		o.build_args = args;
		o.n_build_args = 2;
	}
	if (data[0] & 2) {
		o.base_env = env;
		o.n_base_env = 2;
		o.base_workdir = "/srv/app";
		o.base_user = "app";
	}
	if (!dockerfile__parse((const char *)data + 1, size - 1, &o, &df, err,
			       sizeof(err))) {
		for (size_t i = 0; i < df.n_steps; i++) {
			const struct dockerfile_step *s = &df.steps[i];

			if (dockerfile__step_key(
				    s, prev,
				    s->kind == DOCKERFILE_COPY ? digest : NULL,
				    key))
				abort();
			if (strlen(key) != 64 ||
			    strspn(key, "0123456789abcdef") != 64)
				abort();
			memcpy(prev, key, sizeof(key));
		}
	}
	dockerfile__free(&df);
	return 0;
}
