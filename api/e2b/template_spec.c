// SPDX-License-Identifier: Apache-2.0
/*
 * E2B's serialized template made into a Dockerfile (template_spec.h
 * says what maps to what).  Values go into the Dockerfile so that they
 * stay literal: RUN in exec form (JSON, nothing substituted), the rest
 * in single quotes (a ' inside as '\'' does in sh: Docker's lexer reads
 * it the same).  The COPY script is one exec-form RUN whose arguments
 * are the step's, so no value is ever part of its text.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sandbox/dockerfile.h"
#include "template_spec.h"

#define VALUE_MAX (64u << 10) /* bytes of one value (Dockerfile's word) */
#define TEXT_MAX  (1u << 20) /* bytes of the Dockerfile (its parser's) */

/* The names E2B's SDKs use for their default templates. */
static const char *const default_names[] = {
	"base",
	"code-interpreter-v1",
	"code-interpreter",
	"code-interpreter-beta",
};

bool template_spec__is_default(const char *name)
{
	for (size_t i = 0; i < sizeof(default_names) / sizeof(*default_names);
	     i++)
		if (!strcmp(name, default_names[i]))
			return true;
	return false;
}

/*
 * Docker COPY from the upload: $1 the hash, $2 src (a glob: the upload
 * holds its matches at their paths in the SDK's context), $3 dest
 * (relative: in the WORKDIR, this RUN's cwd), $4 owner, $5 mode.  A
 * directory's contents go into dest; a file goes into dest/ when dest
 * ends in / or there is more than one match, else to dest.  Only what
 * was copied gets owner and mode (and dest when this made it).
 */
static const char copy_script[] =
	"set -e\n"
	"d=" TEMPLATE_SPEC_COPY_DIR "/$1 src=$2 dest=$3 own=$4 mode=$5\n"
	"case $dest in /*) ;; *) dest=$PWD/$dest ;; esac\n"
	"fix() { [ -z \"$own\" ] || chown -R -- \"$own\" \"$1\"\n"
	"  [ -z \"$mode\" ] || chmod -R -- \"$mode\" \"$1\"; }\n"
	"cd \"$d\"\n"
	"IFS='\n'\n"
	"set -- $src\n"
	"[ -e \"$1\" ] || [ -L \"$1\" ] || "
	"{ echo \"COPY $src: no such file or directory in the upload\" >&2; "
	"exit 1; }\n"
	"many=; [ $# -gt 1 ] && many=1\n"
	"case $dest in */) many=1 ;; esac\n"
	"for f; do\n"
	"  if [ -d \"$f\" ] && [ ! -L \"$f\" ]; then\n"
	"    [ -d \"$dest\" ] || { mkdir -p -- \"$dest\"; fix \"$dest\"; }\n"
	"    for e in \"$f\"/* \"$f\"/.[!.]* \"$f\"/..?*; do\n"
	"      [ -e \"$e\" ] || [ -L \"$e\" ] || continue\n"
	"      t=${dest%/}/${e##*/}; rm -rf -- \"$t\"; cp -a -- \"$e\" \"$t\"; "
	"fix \"$t\"\n"
	"    done\n"
	"  else\n"
	"    if [ -n \"$many\" ]; then mkdir -p -- \"$dest\"; "
	"t=${dest%/}/${f##*/}\n"
	"    else mkdir -p -- \"${dest%/*}/\"; t=$dest; fi\n"
	"    rm -rf -- \"$t\"; cp -a -- \"$f\" \"$t\"; fix \"$t\"\n"
	"  fi\n"
	"done\n"
	"cd /; rm -rf -- \"$d\"\n";

struct out {
	char *s;
	size_t n, cap;
	unsigned int line; /* lines written */
	unsigned int *line_step;
	size_t step_cap;
	bool oom;
};

static void add(struct out *o, const char *p, size_t n)
{
	char *ns;

	if (o->oom)
		return;
	if (o->n + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 4096;

		while (cap < o->n + n + 1)
			cap *= 2;
		ns = realloc(o->s, cap);
		if (!ns) {
			o->oom = true;
			return;
		}
		o->s = ns;
		o->cap = cap;
	}
	memcpy(o->s + o->n, p, n);
	o->n += n;
	o->s[o->n] = '\0';
}

static void adds(struct out *o, const char *s)
{
	add(o, s, strlen(s));
}

/* @s in single quotes, a ' as '\''. */
static void quoted(struct out *o, const char *s)
{
	adds(o, "'");
	for (const char *p = s; *p; p++) {
		if (*p == '\'')
			adds(o, "'\\''");
		else
			add(o, p, 1);
	}
	adds(o, "'");
}

/* End a line that E2B's step @step (0: base) made. */
static void end_line(struct out *o, unsigned int step)
{
	unsigned int *ns;

	adds(o, "\n");
	if (o->oom)
		return;
	if (o->line + 2 > o->step_cap) {
		size_t cap = o->step_cap ? o->step_cap * 2 : 64;

		ns = realloc(o->line_step, cap * sizeof(*ns));
		if (!ns) {
			o->oom = true;
			return;
		}
		o->line_step = ns;
		o->step_cap = cap;
	}
	o->line_step[++o->line] = step;
}

/* A line "KW 'value'". */
static void kw_line(struct out *o, const char *kw, const char *v,
		    unsigned int step)
{
	adds(o, kw);
	adds(o, " ");
	quoted(o, v);
	end_line(o, step);
}

/* A RUN in exec form of @argv (@n strings). */
static void run_line(struct out *o, const char *const *argv, size_t n,
		     unsigned int step)
{
	json_t *a = json_array();
	char *j;

	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_string(argv[i]));
	j = a ? json_dumps(a, JSON_COMPACT) : NULL;
	json_decref(a);
	if (!j) {
		o->oom = true;
		return;
	}
	adds(o, "RUN ");
	adds(o, j);
	free(j);
	end_line(o, step);
}

/* The message into @err: -EINVAL. */
__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen,
						      const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/*
 * Whether @s is a string fit for one Dockerfile line (no newline, CR or
 * NUL, at most VALUE_MAX bytes); @empty_ok: "" too.
 */
static bool line_ok(const json_t *v, bool empty_ok)
{
	const char *s;
	size_t n;

	if (!json_is_string(v))
		return false;
	s = json_string_value(v);
	n = json_string_length(v);
	return n <= VALUE_MAX && strlen(s) == n && !strpbrk(s, "\r\n") &&
	       (empty_ok || n);
}

static bool env_name_ok(const char *s)
{
	if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
	      *s == '_'))
		return false;
	for (s++; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

/* A path or template name written bare after FROM: no quoting needed. */
static bool bare_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= '0' && *s <= '9') || strchr("/._-+:@,=", *s)))
			return false;
	return true;
}

static bool hash_ok(const char *s)
{
	return strlen(s) == TEMPLATE_SPEC_HASH_LEN &&
	       strspn(s, "0123456789abcdef") == TEMPLATE_SPEC_HASH_LEN;
}

/* A string member @key of @o: NULL when absent or null; @bad when not. */
static const char *opt_str(const json_t *o, const char *key, bool *bad)
{
	const json_t *v = json_object_get(o, key);

	if (!v || json_is_null(v))
		return NULL;
	if (!json_is_string(v) ||
	    strlen(json_string_value(v)) != json_string_length(v)) {
		*bad = true;
		return NULL;
	}
	return json_string_value(v);
}

/* The FROM line. */
static int from_line(const json_t *body, const char *dflt, struct out *o,
		     struct template_spec *out, char *err, size_t errlen)
{
	bool bad = false;
	const char *img = opt_str(body, "fromImage", &bad);
	const char *tpl = opt_str(body, "fromTemplate", &bad);
	const json_t *reg = json_object_get(body, "fromImageRegistry");

	if (bad)
		return fail(err, errlen,
			    "fromImage and fromTemplate must be strings");
	if (reg && !json_is_null(reg))
		return fail(err, errlen,
			    "ember builds from local images only: registry "
			    "credentials (fromImage with credentials, "
			    "fromAWSRegistry, fromGCPRegistry) are not "
			    "supported; docker save the image and give the "
			    "archive's path to fromImage");
	if (img && tpl)
		return fail(err, errlen,
			    "both fromImage and fromTemplate are given");
	if (!img && !tpl)
		return fail(err, errlen,
			    "no base: fromImage or fromTemplate is needed");
	if (tpl) {
		if (template_spec__is_default(tpl))
			tpl = dflt;
		if (!bare_ok(tpl) || strchr(tpl, '/') || strchr(tpl, ':'))
			return fail(err, errlen,
				    "fromTemplate %.128s: not an ember "
				    "template name",
				    tpl);
		adds(o, "FROM template:");
		adds(o, tpl);
		out->from_template = true;
	} else {
		if (img[0] != '/')
			return fail(err, errlen,
				    "ember builds from local images only: "
				    "fromImage %.200s is not a path on the "
				    "ember host (docker save it and give the "
				    "archive's absolute path, or an OCI "
				    "layout, a root filesystem directory or "
				    "an ext4 image)",
				    img);
		if (!bare_ok(img) || strlen(img) > 4000)
			return fail(err, errlen,
				    "fromImage %.200s: a path of letters, "
				    "digits and /._-+:@,= only",
				    img);
		adds(o, "FROM ");
		adds(o, img);
	}
	end_line(o, 0);
	return 0;
}

/* Switch to @want around a step when it is not @cur; returns @cur. */
static void user_to(struct out *o, const char *want, const char *cur,
		    unsigned int step)
{
	if (strcmp(want, cur))
		kw_line(o, "USER", want, step);
}

static int add_hash(struct template_spec *s, const char *h)
{
	void *n;

	for (size_t i = 0; i < s->n_hashes; i++)
		if (!strcmp(s->hashes[i], h))
			return 0;
	n = realloc(s->hashes, (s->n_hashes + 1) * sizeof(*s->hashes));
	if (!n)
		return -ENOMEM;
	s->hashes = n;
	snprintf(s->hashes[s->n_hashes++], TEMPLATE_SPEC_HASH_LEN + 1, "%s", h);
	return 0;
}

/* The string args of step @st: @n of them (1..@max), @min at least. */
static int step_args(const json_t *st, size_t min, size_t max,
		     const json_t **args, size_t *n)
{
	const json_t *a = json_object_get(st, "args");

	*args = a;
	*n = json_is_array(a) ? json_array_size(a) : 0;
	if (!json_is_array(a) || *n < min || *n > max)
		return -EINVAL;
	for (size_t i = 0; i < *n; i++)
		if (!json_is_string(json_array_get(a, i)))
			return -EINVAL;
	return 0;
}

static const char *arg(const json_t *args, size_t i)
{
	return json_string_value(json_array_get(args, i));
}

/* One step, E2B's step @k (1-based); @user: the USER in effect. */
static int one_step(const json_t *st, unsigned int k, struct out *o,
		    struct template_spec *out, char *user, size_t userlen,
		    char *err, size_t errlen)
{
	const char *type =
		json_is_object(st) ?
			json_string_value(json_object_get(st, "type")) :
			NULL;
	const json_t *args;
	size_t n;

	if (!type)
		return fail(err, errlen, "a step without a type");
	if (!strcmp(type, "RUN")) {
		const char *argv[3] = { "/bin/sh", "-c", NULL };
		const char *u;

		if (step_args(st, 1, 2, &args, &n) ||
		    (n == 2 && !line_ok(json_array_get(args, 1), true)))
			return fail(err, errlen,
				    "RUN: args are [command, user?]");
		argv[2] = arg(args, 0);
		if (strlen(argv[2]) !=
			    json_string_length(json_array_get(args, 0)) ||
		    !*argv[2] || strlen(argv[2]) > VALUE_MAX)
			return fail(err, errlen,
				    "RUN: an empty command, or one with NUL "
				    "or over %u bytes",
				    VALUE_MAX);
		u = n == 2 && *arg(args, 1) ? arg(args, 1) : user;
		user_to(o, u, user, k);
		run_line(o, argv, 3, k);
		user_to(o, user, u, k);
		return 0;
	}
	if (!strcmp(type, "COPY")) {
		const char *hash =
			json_string_value(json_object_get(st, "filesHash"));
		char dir[sizeof(TEMPLATE_SPEC_COPY_DIR) +
			 TEMPLATE_SPEC_HASH_LEN + 2];
		const char *argv[9];

		if (step_args(st, 2, 4, &args, &n))
			return fail(err, errlen,
				    "COPY: args are [src, dest, user?, mode?]");
		for (size_t i = 0; i < n; i++)
			if (!line_ok(json_array_get(args, i), i >= 2))
				return fail(err, errlen,
					    "COPY: an empty src or dest, or a "
					    "value with a newline or NUL");
		if (n == 4 && *arg(args, 3) &&
		    strspn(arg(args, 3), "01234567") != strlen(arg(args, 3)))
			return fail(err, errlen,
				    "COPY: mode %.32s is not octal",
				    arg(args, 3));
		if (!hash || !hash_ok(hash))
			return fail(err, errlen,
				    "COPY: filesHash is not 64 hex digits "
				    "(an SDK that uploads files)");
		if (add_hash(out, hash))
			return -ENOMEM;
		snprintf(dir, sizeof(dir), "%s/%s/", TEMPLATE_SPEC_COPY_DIR,
			 hash);
		adds(o, "ADD ");
		adds(o, hash);
		adds(o, ".tar ");
		adds(o, dir);
		end_line(o, k);
		argv[0] = "/bin/sh";
		argv[1] = "-c";
		argv[2] = copy_script;
		argv[3] = "ember-copy";
		argv[4] = hash;
		argv[5] = arg(args, 0);
		argv[6] = arg(args, 1);
		argv[7] = n > 2 ? arg(args, 2) : "";
		argv[8] = n > 3 ? arg(args, 3) : "";
		user_to(o, "root", user, k);
		run_line(o, argv, 9, k);
		user_to(o, user, "root", k);
		return 0;
	}
	if (!strcmp(type, "ENV")) {
		if (step_args(st, 2, 2 * 256, &args, &n) || n % 2)
			return fail(err, errlen,
				    "ENV: args are [name, value, ...]");
		for (size_t i = 0; i < n; i += 2) {
			if (!line_ok(json_array_get(args, i), false) ||
			    !env_name_ok(arg(args, i)))
				return fail(err, errlen,
					    "ENV: %.64s is not a variable "
					    "name",
					    arg(args, i));
			if (!line_ok(json_array_get(args, i + 1), true))
				return fail(err, errlen,
					    "ENV %.64s: a value with a newline "
					    "or NUL",
					    arg(args, i));
			adds(o, "ENV ");
			adds(o, arg(args, i));
			adds(o, "=");
			quoted(o, arg(args, i + 1));
			end_line(o, k);
		}
		return 0;
	}
	if (!strcmp(type, "WORKDIR") || !strcmp(type, "USER")) {
		if (step_args(st, 1, 1, &args, &n) ||
		    !line_ok(json_array_get(args, 0), false))
			return fail(err, errlen,
				    "%s: args are [a value without newline]",
				    type);
		kw_line(o, type, arg(args, 0), k);
		if (!strcmp(type, "USER")) {
			if (strlen(arg(args, 0)) >= userlen)
				return fail(err, errlen,
					    "USER: a name over %zu bytes",
					    userlen - 1);
			snprintf(user, userlen, "%s", arg(args, 0));
		}
		return 0;
	}
	return fail(err, errlen,
		    "step type %.32s is not supported by ember (RUN, COPY, "
		    "ENV, WORKDIR, USER are)",
		    type);
}

int template_spec__parse(const json_t *body, const char *dflt,
			 const char *base_user, struct template_spec *out,
			 char *err, size_t errlen, char *step, size_t steplen)
{
	struct out o = { 0 };
	const json_t *steps;
	char user[256];
	bool bad = false;
	const char *start, *ready;
	int rc;

	memset(out, 0, sizeof(*out));
	snprintf(step, steplen, "base");
	if (!json_is_object(body))
		return fail(err, errlen, "the template is not a JSON object");
	snprintf(user, sizeof(user), "%s",
		 base_user && *base_user ? base_user : "root");
	rc = from_line(body, dflt, &o, out, err, errlen);
	if (rc)
		goto fail;
	if (base_user && *base_user) {
		if (strlen(base_user) >= sizeof(user) ||
		    strpbrk(base_user, "\r\n")) {
			rc = fail(err, errlen, "a bad user");
			goto fail;
		}
		kw_line(&o, "USER", base_user, 0);
	}
	steps = json_object_get(body, "steps");
	if (steps && !json_is_null(steps) && !json_is_array(steps)) {
		rc = fail(err, errlen, "steps is not an array");
		goto fail;
	}
	if (json_array_size(steps) > TEMPLATE_SPEC_MAX_STEPS) {
		snprintf(err, errlen, "more than %d steps",
			 TEMPLATE_SPEC_MAX_STEPS);
		rc = -E2BIG;
		goto fail;
	}
	for (size_t i = 0; i < json_array_size(steps); i++) {
		rc = one_step(json_array_get(steps, i), (unsigned int)i + 1, &o,
			      out, user, sizeof(user), err, errlen);
		if (rc) {
			snprintf(step, steplen, "%zu", i + 1);
			goto fail;
		}
	}
	/* Past the parser's limit emberctl would refuse it (FROM aside):
	   said now, with the step that went over. */
	if (o.line > DOCKERFILE_MAX_STEPS + 1 && o.line_step) {
		snprintf(step, steplen, "%u",
			 o.line_step[DOCKERFILE_MAX_STEPS + 2]);
		snprintf(err, errlen,
			 "the template makes %u Dockerfile instructions, over "
			 "ember's %d (a RUN or COPY as another user takes 3, "
			 "a COPY 2 to 4, an ENV one per variable)",
			 o.line - 1, DOCKERFILE_MAX_STEPS);
		rc = -E2BIG;
		goto fail;
	}
	start = opt_str(body, "startCmd", &bad);
	ready = opt_str(body, "readyCmd", &bad);
	if (bad || (start && strlen(start) > VALUE_MAX) ||
	    (ready && strlen(ready) > VALUE_MAX)) {
		snprintf(step, steplen, "finalize");
		rc = fail(err, errlen,
			  "startCmd and readyCmd: strings of at most %u bytes",
			  VALUE_MAX);
		goto fail;
	}
	if (o.n > TEXT_MAX) {
		snprintf(err, errlen,
			 "the template is over %u bytes as a "
			 "Dockerfile",
			 TEXT_MAX);
		rc = -E2BIG;
		goto fail;
	}
	out->start_cmd = start && *start ? strdup(start) : NULL;
	out->ready_cmd = ready && *ready ? strdup(ready) : NULL;
	if (o.oom || (start && *start && !out->start_cmd) ||
	    (ready && *ready && !out->ready_cmd)) {
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	out->dockerfile = o.s;
	out->len = o.n;
	out->line_step = o.line_step;
	out->n_lines = o.line;
	return 0;
fail:
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	free(o.s);
	free(o.line_step);
	template_spec__free(out);
	return rc;
}

void template_spec__free(struct template_spec *s)
{
	free(s->dockerfile);
	free(s->start_cmd);
	free(s->ready_cmd);
	free(s->hashes);
	free(s->line_step);
	memset(s, 0, sizeof(*s));
}

void template_spec__step_name(const struct template_spec *s, unsigned int line,
			      char *step, size_t steplen)
{
	if (!line || line > s->n_lines || !s->line_step || !s->line_step[line])
		snprintf(step, steplen,
			 line > s->n_lines ? "finalize" : "base");
	else
		snprintf(step, steplen, "%u", s->line_step[line]);
}
