// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for E2B's serialized template made into a Dockerfile
 * (api/e2b/template_spec.h): every step type, what stays literal (RUN's
 * command, ENV's value with quotes and $, paths with spaces), the user
 * put back after a RUN or COPY as another user, the COPY's upload and
 * script, the step names of lines; the output parsed again by ember's
 * Dockerfile parser (api/sandbox/dockerfile.h) to the same values; and
 * what cannot map refused with its message and step.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../api/e2b/template_spec.h"
#include "../../api/sandbox/dockerfile.h"

#define HASH "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static int spec(const char *json, const char *base_user,
		struct template_spec *s, char *err, size_t errlen, char *step)
{
	json_error_t je;
	json_t *j = json_loads(json, 0, &je);
	int rc;

	assert_non_null(j);
	rc = template_spec__parse(j, "default", base_user, s, err, errlen, step,
				  TEMPLATE_SPEC_STEP_MAX);
	json_decref(j);
	return rc;
}

static void ok(const char *json, const char *base_user, struct template_spec *s,
	       struct dockerfile *df)
{
	char err[512] = "", step[TEMPLATE_SPEC_STEP_MAX];
	int rc = spec(json, base_user, s, err, sizeof(err), step);

	if (rc)
		fail_msg("parse: %d %s (step %s)", rc, err, step);
	rc = dockerfile__parse(s->dockerfile, s->len, NULL, df, err,
			       sizeof(err));
	if (rc)
		fail_msg("the Dockerfile does not parse: %s\n%s", err,
			 s->dockerfile);
}

static void bad(const char *json, const char *want_err, const char *want_step)
{
	struct template_spec s;
	char err[512] = "", step[TEMPLATE_SPEC_STEP_MAX] = "";
	int rc = spec(json, NULL, &s, err, sizeof(err), step);

	assert_int_not_equal(rc, 0);
	if (!strstr(err, want_err))
		fail_msg("error '%s', wanted '%s'", err, want_err);
	assert_string_equal(step, want_step);
	assert_null(s.dockerfile);
}

static const char *env_of(const struct dockerfile *df, const char *k)
{
	size_t n = strlen(k);

	for (size_t i = 0; i < df->n_env; i++)
		if (!strncmp(df->env[i], k, n) && df->env[i][n] == '=')
			return df->env[i] + n + 1;
	return NULL;
}

static void test_steps(void **state)
{
	struct template_spec s;
	struct dockerfile df;
	char step[TEMPLATE_SPEC_STEP_MAX];

	(void)state;
	ok("{\"fromTemplate\": \"base\", \"steps\": ["
	   "{\"type\": \"RUN\", \"args\": [\"echo \\\"$HOME\\\" 'x' && ls\"]},"
	   "{\"type\": \"RUN\", \"args\": [\"apt-get update\", \"root\"]},"
	   "{\"type\": \"ENV\", \"args\": [\"A\", \"it's $HOME \\\\ \\\"q\\\"\", \"B\", \"\"]},"
	   "{\"type\": \"WORKDIR\", \"args\": [\"/my dir\"]},"
	   "{\"type\": \"COPY\", \"args\": [\"src dir\", \"rel/\", \"user\", \"0640\"], \"filesHash\": \"" HASH
	   "\"},"
	   "{\"type\": \"USER\", \"args\": [\"user\"]}],"
	   "\"startCmd\": \"python3 -m http.server\", \"readyCmd\": \"true\", \"force\": true}",
	   "user", &s, &df);
	assert_true(df.from_template);
	assert_string_equal(df.from, "default");
	assert_true(s.from_template);
	assert_string_equal(s.start_cmd, "python3 -m http.server");
	assert_string_equal(s.ready_cmd, "true");
	assert_int_equal(s.n_hashes, 1);
	assert_string_equal(s.hashes[0], HASH);
	/* USER user (E2B's start); RUN; USER root, RUN, USER user; ENV x2;
	   WORKDIR; ADD; USER root, RUN, USER user; USER user. */
	assert_int_equal(df.n_steps, 13);
	assert_int_equal(df.steps[1].kind, DOCKERFILE_RUN);
	assert_int_equal(df.steps[1].argc, 3);
	assert_string_equal(df.steps[1].argv[2], "echo \"$HOME\" 'x' && ls");
	assert_string_equal(df.steps[1].user, "user");
	assert_string_equal(df.steps[3].argv[2], "apt-get update");
	assert_string_equal(df.steps[3].user, "root");
	assert_string_equal(df.steps[4].user, "user");
	/* ENV: literal. */
	assert_string_equal(env_of(&df, "A"), "it's $HOME \\ \"q\"");
	assert_string_equal(env_of(&df, "B"), "");
	/* COPY: the upload, then the script as root in the WORKDIR. */
	assert_int_equal(df.steps[8].kind, DOCKERFILE_COPY);
	assert_true(df.steps[8].add);
	assert_string_equal(df.steps[8].src[0], HASH ".tar");
	assert_string_equal(df.steps[8].dest, "/.ember-copy/" HASH "/");
	assert_string_equal(df.steps[10].user, "root");
	assert_string_equal(df.steps[10].workdir, "/my dir");
	assert_int_equal(df.steps[10].argc, 9);
	assert_string_equal(df.steps[10].argv[4], HASH);
	assert_string_equal(df.steps[10].argv[5], "src dir");
	assert_string_equal(df.steps[10].argv[6], "rel/");
	assert_string_equal(df.steps[10].argv[7], "user");
	assert_string_equal(df.steps[10].argv[8], "0640");
	assert_string_equal(df.user, "user");
	assert_string_equal(df.workdir, "/my dir");
	/* The lines' E2B steps: FROM and the USER after it the base, then
	   1.. per instruction. */
	template_spec__step_name(&s, 1, step, sizeof(step));
	assert_string_equal(step, "base");
	template_spec__step_name(&s, df.steps[0].line, step, sizeof(step));
	assert_string_equal(step, "base");
	template_spec__step_name(&s, df.steps[1].line, step, sizeof(step));
	assert_string_equal(step, "1");
	template_spec__step_name(&s, df.steps[3].line, step, sizeof(step));
	assert_string_equal(step, "2");
	template_spec__step_name(&s, df.steps[10].line, step, sizeof(step));
	assert_string_equal(step, "5");
	template_spec__step_name(&s, 1000, step, sizeof(step));
	assert_string_equal(step, "finalize");
	dockerfile__free(&df);
	template_spec__free(&s);
}

static void test_from_image(void **state)
{
	struct template_spec s;
	struct dockerfile df;

	(void)state;
	/* No base user known: root, put back after a RUN as another. */
	ok("{\"fromImage\": \"/srv/img/app.tar\", \"steps\": ["
	   "{\"type\": \"RUN\", \"args\": [\"id\", \"user\"]},"
	   "{\"type\": \"RUN\", \"args\": [\"id\", \"\"]}]}",
	   NULL, &s, &df);
	assert_false(df.from_template);
	assert_string_equal(df.from, "/srv/img/app.tar");
	assert_int_equal(df.n_steps, 4);
	assert_string_equal(df.steps[1].user, "user");
	assert_string_equal(df.steps[3].user, "root");
	assert_null(s.start_cmd);
	assert_int_equal(s.n_hashes, 0);
	dockerfile__free(&df);
	template_spec__free(&s);

	/* A template by its own name; no steps at all. */
	ok("{\"fromTemplate\": \"my-tpl\"}", "", &s, &df);
	assert_string_equal(df.from, "my-tpl");
	assert_int_equal(df.n_steps, 0);
	dockerfile__free(&df);
	template_spec__free(&s);
}

static const char *const hostile[] = {
	"a'b",		"'",	    "''",	  "\\",	  "x\\",     "\\'",
	"'\\''",	"$HOME",    "${HOME:-x}", "`id`", "$(id)",   "a\tb",
	" lead",	"trail ",   "#c",	  "\"",	  "[\"a\"]", "-- x",
	"\xc3\xa9",	"\x01\x7f", "a\\ b",	  "\\$A", "a b  c",  "\\\\",
	"\xe2\x80\xa8", "\t",	    "\f\v",	  "=",	  "a=b",
};

/* Every hostile value comes out of the Dockerfile as it went in. */
static void test_hostile(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(hostile) / sizeof(*hostile); i++) {
		const char *v = hostile[i];
		json_t *b = json_pack(
			"{s:s, s:[{s:s, s:[s,s]}, {s:s, s:[s, s]}, {s:s, s:[s,s]},"
			" {s:s, s:[s]}, {s:s, s:[s,s,s], s:s}, {s:s, s:[s]}]}",
			"fromTemplate", "t", "steps", "type", "ENV", "args",
			"V", v, "type", "RUN", "args", v, v, "type", "ENV",
			"args", "W", v, "type", "WORKDIR", "args", v, "type",
			"COPY", "args", v, v, v, "filesHash", HASH, "type",
			"USER", "args", v);
		struct template_spec s;
		struct dockerfile df;
		char err[512] = "", step[TEMPLATE_SPEC_STEP_MAX];
		int rc;

		assert_non_null(b);
		rc = template_spec__parse(b, "default", NULL, &s, err,
					  sizeof(err), step, sizeof(step));
		json_decref(b);
		if (rc)
			fail_msg("value %zu: parse: %s", i, err);
		rc = dockerfile__parse(s.dockerfile, s.len, NULL, &df, err,
				       sizeof(err));
		if (rc)
			fail_msg("value %zu: %s\n%s", i, err, s.dockerfile);
		if (strcmp(env_of(&df, "V"), v) || strcmp(env_of(&df, "W"), v))
			fail_msg("value %zu: ENV [%s]", i, env_of(&df, "V"));
		for (size_t k = 0; k < df.n_steps; k++) {
			const struct dockerfile_step *st = &df.steps[k];

			if (st->kind == DOCKERFILE_RUN && st->argc == 3 &&
			    strcmp(st->argv[2], v))
				fail_msg("value %zu: RUN [%s]", i, st->argv[2]);
			if (st->kind == DOCKERFILE_RUN && st->argc == 3 &&
			    (!st->user || strcmp(st->user, v)))
				fail_msg("value %zu: RUN user [%s]", i,
					 st->user);
			if (st->kind == DOCKERFILE_RUN && st->argc == 9 &&
			    (strcmp(st->argv[5], v) || strcmp(st->argv[6], v) ||
			     strcmp(st->argv[7], v)))
				fail_msg("value %zu: COPY", i);
		}
		if (!df.user || strcmp(df.user, v))
			fail_msg("value %zu: USER [%s]", i, df.user);
		dockerfile__free(&df);
		template_spec__free(&s);
	}
}

/* A template of E2B's steps whose Dockerfile is over the parser's limit
   is refused at once, naming the step that went over; one just under it
   parses. */
static void test_too_many_lines(void **state)
{
	for (int n = 333; n <= 400; n += 67) {
		json_t *steps = json_array(), *b;
		struct template_spec s;
		struct dockerfile df;
		char err[512] = "", step[TEMPLATE_SPEC_STEP_MAX] = "";
		int rc;

		(void)state;
		for (int i = 0; i < n; i++)
			json_array_append_new(steps,
					      json_pack("{s:s, s:[s, s]}",
							"type", "RUN", "args",
							"true", "other"));
		b = json_pack("{s:s, s:o}", "fromTemplate", "t", "steps",
			      steps);
		rc = template_spec__parse(b, "default", NULL, &s, err,
					  sizeof(err), step, sizeof(step));
		json_decref(b);
		if (n == 333) {
			assert_int_equal(rc, 0);
			rc = dockerfile__parse(s.dockerfile, s.len, NULL, &df,
					       err, sizeof(err));
			if (rc)
				fail_msg("%s", err);
			assert_int_equal(df.n_steps, 999);
			dockerfile__free(&df);
			template_spec__free(&s);
			continue;
		}
		assert_int_equal(rc, -E2BIG);
		if (!strstr(err, "1200 Dockerfile instructions"))
			fail_msg("%s", err);
		assert_string_equal(step, "334");
		assert_null(s.dockerfile);
	}
}

static void test_refused(void **state)
{
	(void)state;
	bad("{\"fromImage\": \"python:3\"}", "local images only", "base");
	bad("{\"fromImage\": \"e2bdev/base\"}", "docker save", "base");
	bad("{\"fromImage\": \"/x\", \"fromImageRegistry\": {\"type\": \"aws\"}}",
	    "registry", "base");
	bad("{\"fromImage\": \"/a b\"}", "a path of letters", "base");
	bad("{\"fromImage\": \"/x\", \"fromTemplate\": \"t\"}", "both", "base");
	bad("{\"steps\": []}", "no base", "base");
	bad("{\"fromTemplate\": \"../x\"}", "not an ember template name",
	    "base");
	bad("[]", "not a JSON object", "base");
	bad("{\"fromTemplate\": \"t\", \"steps\": {}}", "not an array", "base");
	bad("{\"fromTemplate\": \"t\", \"steps\": [{\"type\": \"RUN\", "
	    "\"args\": [\"true\"]}, {\"type\": \"HEALTHCHECK\", \"args\": []}]}",
	    "not supported by ember", "2");
	bad("{\"fromTemplate\": \"t\", \"steps\": [{\"type\": \"RUN\", \"args\": []}]}",
	    "RUN: args", "1");
	bad("{\"fromTemplate\": \"t\", \"steps\": [{\"type\": \"RUN\", \"args\": [\"\"]}]}",
	    "empty command", "1");
	bad("{\"fromTemplate\": \"t\", \"steps\": [{\"type\": \"ENV\", \"args\": [\"A B\", \"1\"]}]}",
	    "not a variable name", "1");
	bad("{\"fromTemplate\": \"t\", \"steps\": [{\"type\": \"ENV\", \"args\": [\"A\", \"1\\n2\"]}]}",
	    "newline", "1");
	bad("{\"fromTemplate\": \"t\", \"steps\": [{\"type\": \"ENV\", \"args\": [\"A\"]}]}",
	    "ENV: args", "1");
	bad("{\"fromTemplate\": \"t\", \"steps\": [{\"type\": \"WORKDIR\", \"args\": [\"/a\\nRUN x\"]}]}",
	    "without newline", "1");
	bad("{\"fromTemplate\": \"t\", \"steps\": [{\"type\": \"COPY\", \"args\": [\"a\", \"/b\"]}]}",
	    "filesHash", "1");
	bad("{\"fromTemplate\": \"t\", \"steps\": [{\"type\": \"COPY\", \"args\": [\"a\", \"/b\", \"\", \"9\"], "
	    "\"filesHash\": \"" HASH "\"}]}",
	    "not octal", "1");
	bad("{\"fromTemplate\": \"t\", \"startCmd\": 5}", "startCmd",
	    "finalize");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_steps),
		cmocka_unit_test(test_from_image),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_too_many_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
