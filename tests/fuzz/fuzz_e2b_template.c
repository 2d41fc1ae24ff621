// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: E2B's serialized template (the untrusted body of POST
 * /v2/templates/{templateID}/builds/{buildID}) made into a Dockerfile
 * (api/e2b/template_spec.h).  Nothing may crash, leak or read past the
 * input; whatever translates must be a Dockerfile that ember's parser
 * (api/sandbox/dockerfile.h) accepts (but for its limits and a FROM SRC
 * the image code refuses, said at build time), FROM what it named, one
 * upload per distinct COPY hash, and every line's step name defined.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/e2b/template_spec.h"
#include "api/sandbox/dockerfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512], step[TEMPLATE_SPEC_STEP_MAX], name[32];
	struct template_spec s;
	struct dockerfile df;
	json_t *j;
	int rc;

	j = json_loadb((const char *)data, size, JSON_DISABLE_EOF_CHECK, NULL);
	if (!j)
		return 0;
	rc = template_spec__parse(j, "default", size & 1 ? "user" : NULL, &s,
				  err, sizeof(err), step, sizeof(step));
	json_decref(j);
	if (rc) {
		if (!err[0] || !step[0] || s.dockerfile)
			abort();
		return 0;
	}
	if (!s.dockerfile || strlen(s.dockerfile) != s.len)
		abort();
	for (unsigned int l = 0; l <= s.n_lines + 1; l++)
		template_spec__step_name(&s, l, name, sizeof(name));
	rc = dockerfile__parse(s.dockerfile, s.len, NULL, &df, err,
			       sizeof(err));
	/* A limit of the parser (a value over 64 KiB after the quoting, too
	   many variables) or a FROM SRC the image code refuses (line 1) are
	   the only ways to fail: never a syntax error in a step. */
	if (rc && rc != -E2BIG && strncmp(err, "line 1:", 7)) {
		fprintf(stderr, "%s\n---\n%s\n", err, s.dockerfile);
		abort();
	}
	if (!rc && df.from_template != s.from_template)
		abort();
	dockerfile__free(&df);
	for (size_t i = 0; i < s.n_hashes; i++)
		for (size_t k = i + 1; k < s.n_hashes; k++)
			if (!strcmp(s.hashes[i], s.hashes[k]))
				abort();
	template_spec__free(&s);
	return 0;
}
