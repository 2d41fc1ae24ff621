// SPDX-License-Identifier: Apache-2.0
/*
 * Dockerfiles: the text into steps, each step's cache key, a COPY's
 * files digest (see dockerfile.h).  The parser is pure and fuzzed
 * (tests/fuzz/fuzz_dockerfile.c); every allocation goes through one list
 * (struct df_mem) so that a failure anywhere is one dockerfile__free().
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "dockerfile.h"
#include "dockerignore.h"
#include "files.h"
#include "image.h"

/* ---- memory ----------------------------------------------------------- */

struct df_mem {
	void **p;
	size_t n, cap;
};

static void *df_alloc(struct dockerfile *df, size_t size)
{
	struct df_mem *m = df->mem;
	void *v;

	if (!m) {
		m = calloc(1, sizeof(*m));
		if (!m)
			return NULL;
		df->mem = m;
	}
	if (sandbox__grow((void **)&m->p, &m->cap, m->n, sizeof(void *)))
		return NULL;
	v = calloc(1, size ? size : 1);
	if (v)
		m->p[m->n++] = v;
	return v;
}

static char *df_strndup(struct dockerfile *df, const char *s, size_t n)
{
	char *d = df_alloc(df, n + 1);

	if (d)
		memcpy(d, s, n);
	return d;
}

static char *df_strdup(struct dockerfile *df, const char *s)
{
	return df_strndup(df, s, strlen(s));
}

void dockerfile__free(struct dockerfile *df)
{
	struct df_mem *m = df->mem;

	if (m) {
		for (size_t i = 0; i < m->n; i++)
			free(m->p[i]);
		free(m->p);
		free(m);
	}
	free(df->steps);
	free(df->notes);
	memset(df, 0, sizeof(*df));
}

const char *dockerfile__kind_name(enum dockerfile_kind k)
{
	switch (k) {
	case DOCKERFILE_RUN:
		return "RUN";
	case DOCKERFILE_COPY:
		return "COPY";
	case DOCKERFILE_ENV:
		return "ENV";
	case DOCKERFILE_ARG:
		return "ARG";
	case DOCKERFILE_WORKDIR:
		return "WORKDIR";
	case DOCKERFILE_USER:
		return "USER";
	case DOCKERFILE_CMD:
		return "CMD";
	case DOCKERFILE_ENTRYPOINT:
		return "ENTRYPOINT";
	case DOCKERFILE_SHELL:
		return "SHELL";
	}
	return "?";
}

/* ---- growing strings -------------------------------------------------- */

struct sbuf {
	char *s;
	size_t n, cap;
	bool big; /* went past DOCKERFILE_MAX_VALUE */
};

static int sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->n + n > DOCKERFILE_MAX_VALUE) {
		b->big = true;
		return -E2BIG;
	}
	if (b->n + n + 1 > b->cap) {
		size_t c = b->cap ? b->cap : 64;
		char *ns;

		while (c < b->n + n + 1)
			c *= 2;
		ns = realloc(b->s, c);
		if (!ns)
			return -ENOMEM;
		b->s = ns;
		b->cap = c;
	}
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = '\0';
	return 0;
}

static int sb_addc(struct sbuf *b, char c)
{
	return sb_add(b, &c, 1);
}

/* ---- the parser's state ------------------------------------------------- */

struct var {
	const char *name, *value; /* value NULL: an ARG declared, unset */
	const char *kv; /* "K=V", or "K" when unset */
};

struct vars {
	struct var *v;
	size_t n, cap;
};

struct parser {
	struct dockerfile *df;
	const struct dockerfile_opts *opts;
	char *err;
	size_t errlen;
	char esc;
	int line; /* where the instruction being parsed starts */
	size_t steps_cap, notes_cap;
	struct vars env, args, meta; /* meta: ARGs before FROM */
	bool *arg_used; /* per build arg */
	bool seen_from;
	const char *workdir, *user;
	char **shell;
	size_t n_shell;
	int depth; /* of ${...:-word} nesting */
};

__attribute__((format(printf, 3, 4))) static int fail(struct parser *p, int rc,
						      const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (rc == -ENOMEM)
		return sandbox__errf(p->err, p->errlen, rc, "out of memory");
	return sandbox__errf(p->err, p->errlen, rc, "line %d: %s", p->line,
			     msg);
}

__attribute__((format(printf, 2, 3))) static int note(struct parser *p,
						      const char *fmt, ...)
{
	struct dockerfile *df = p->df;
	char msg[512];
	va_list ap;
	char *s;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (sandbox__grow((void **)&df->notes, &p->notes_cap, df->n_notes,
			  sizeof(char *)))
		return -ENOMEM;
	s = df_alloc(df, strlen(msg) + 32);
	if (!s)
		return -ENOMEM;
	sprintf(s, "line %d: %s", p->line, msg);
	df->notes[df->n_notes++] = s;
	return 0;
}

static struct var *vars_find(struct vars *vs, const char *name, size_t n)
{
	for (size_t i = 0; i < vs->n; i++)
		if (strlen(vs->v[i].name) == n &&
		    !memcmp(vs->v[i].name, name, n))
			return &vs->v[i];
	return NULL;
}

/* Set @name to @value (NULL: declared, unset) in @vs. */
static int vars_set(struct parser *p, struct vars *vs, const char *name,
		    const char *value)
{
	struct var *v = vars_find(vs, name, strlen(name));
	size_t nl = strlen(name), vl = value ? strlen(value) : 0;
	char *kv;

	kv = df_alloc(p->df, nl + vl + 2);
	if (!kv)
		return -ENOMEM;
	memcpy(kv, name, nl);
	if (value) {
		kv[nl] = '=';
		memcpy(kv + nl + 1, value, vl);
	}
	if (!v) {
		if (p->env.n + p->args.n + p->meta.n >= DOCKERFILE_MAX_VARS)
			return fail(p, -E2BIG, "over %d variables",
				    DOCKERFILE_MAX_VARS);
		if (sandbox__grow((void **)&vs->v, &vs->cap, vs->n,
				  sizeof(*vs->v)))
			return -ENOMEM;
		v = &vs->v[vs->n++];
		v->name = df_strndup(p->df, name, nl);
		if (!v->name) {
			vs->n--;
			return -ENOMEM;
		}
	}
	v->kv = kv;
	v->value = value ? kv + nl + 1 : NULL;
	return 0;
}

/* The value of $@name (@n bytes) in scope; NULL when unset. */
static const char *lookup(struct parser *p, const char *name, size_t n)
{
	struct var *v;

	if (!p->seen_from) {
		v = vars_find(&p->meta, name, n);
		return v ? v->value : NULL;
	}
	v = vars_find(&p->env, name, n);
	if (v)
		return v->value;
	v = vars_find(&p->args, name, n);
	return v ? v->value : NULL;
}

/* ---- [Environment replacement] -------------------------------------------- */

static int lex(struct parser *p, const char *s, size_t n, size_t *i, char stop,
	       struct sbuf *out);

static bool name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* A $ at s[*i]: substitute into @out. */
static int dollar(struct parser *p, const char *s, size_t n, size_t *i,
		  struct sbuf *out)
{
	size_t j = *i + 1, start;
	const char *val;
	int rc;

	if (j < n && s[j] == '{') {
		char mod = 0;
		struct sbuf word = { 0 };

		start = ++j;
		while (j < n && name_char(s[j]))
			j++;
		if (j == start || j >= n)
			return fail(
				p, -EINVAL,
				"bad substitution: ${ without a name and }");
		val = lookup(p, s + start, j - start);
		if (s[j] == ':' && j + 1 < n &&
		    (s[j + 1] == '-' || s[j + 1] == '+')) {
			mod = s[j + 1];
			j += 2;
			if (++p->depth > 16)
				return fail(p, -EINVAL,
					    "substitutions nested too deep");
			rc = lex(p, s, n, &j, '}', &word);
			p->depth--;
			if (rc) {
				free(word.s);
				return rc;
			}
		} else if (s[j] != '}') {
			return fail(
				p, -EINVAL,
				"unsupported substitution ${%.*s%c...} (${VAR}, ${VAR:-word} and ${VAR:+word} are)",
				(int)(j - start), s + start, s[j]);
		}
		*i = j + 1;
		if (mod == '-')
			rc = (val && *val) ?
				     sb_add(out, val, strlen(val)) :
				     sb_add(out, word.s ? word.s : "", word.n);
		else if (mod == '+')
			rc = (val && *val) ?
				     sb_add(out, word.s ? word.s : "", word.n) :
				     0;
		else
			rc = val ? sb_add(out, val, strlen(val)) : 0;
		free(word.s);
		return rc;
	}
	if (j < n && (isalpha((unsigned char)s[j]) || s[j] == '_')) {
		start = j;
		while (j < n && name_char(s[j]))
			j++;
		*i = j;
		val = lookup(p, s + start, j - start);
		return val ? sb_add(out, val, strlen(val)) : 0;
	}
	*i = j;
	return sb_addc(out, '$');
}

/*
 * Process s[*i..n) as Docker's shell lexer does one word: quotes removed
 * ('...' literal, "..." substituted), the escape character quoting the
 * next one, $ substituted; until @stop (0: the end), which must come when
 * given.  *@i ends on @stop.
 */
static int lex(struct parser *p, const char *s, size_t n, size_t *i, char stop,
	       struct sbuf *out)
{
	size_t j = *i;
	int rc = 0;

	while (j < n && !rc) {
		char c = s[j];

		if (stop && c == stop) {
			*i = j;
			return 0;
		}
		if (c == p->esc) {
			if (j + 1 < n) {
				rc = sb_addc(out, s[j + 1]);
				j += 2;
			} else {
				rc = sb_addc(out, c);
				j++;
			}
		} else if (c == '$') {
			rc = dollar(p, s, n, &j, out);
		} else if (c == '\'') {
			size_t e = j + 1;

			while (e < n && s[e] != '\'')
				e++;
			if (e >= n)
				return fail(p, -EINVAL,
					    "a ' without its closing '");
			rc = sb_add(out, s + j + 1, e - j - 1);
			j = e + 1;
		} else if (c == '"') {
			j++;
			while (!rc && j < n && s[j] != '"') {
				if (s[j] == p->esc && j + 1 < n &&
				    (s[j + 1] == '"' || s[j + 1] == '$' ||
				     s[j + 1] == p->esc)) {
					rc = sb_addc(out, s[j + 1]);
					j += 2;
				} else if (s[j] == '$') {
					rc = dollar(p, s, n, &j, out);
				} else {
					rc = sb_addc(out, s[j++]);
				}
			}
			if (rc)
				break;
			if (j >= n)
				return fail(p, -EINVAL,
					    "a \" without its closing \"");
			j++;
		} else {
			rc = sb_addc(out, c);
			j++;
		}
	}
	if (rc == -E2BIG && out->big)
		return fail(p, -E2BIG,
			    "a value over %d bytes after substitution",
			    DOCKERFILE_MAX_VALUE);
	if (rc)
		return rc == -ENOMEM ? fail(p, rc, "oom") : rc;
	if (stop)
		return fail(p, -EINVAL, "a ${ without its closing }");
	*i = j;
	return 0;
}

/* The word @s (@n bytes) processed, into the arena: *@out. */
static int expand(struct parser *p, const char *s, size_t n, char **out)
{
	struct sbuf b = { 0 };
	size_t i = 0;
	int rc = lex(p, s, n, &i, 0, &b);

	if (!rc) {
		*out = df_strndup(p->df, b.s ? b.s : "", b.n);
		if (!*out)
			rc = fail(p, -ENOMEM, "oom");
	}
	free(b.s);
	return rc;
}

/*
 * Split @s into raw words at unquoted blanks, quotes and escapes kept
 * (Docker's parseWords): pointers into a copy in the arena, *@n of them.
 */
static int split_raw(struct parser *p, const char *s, char ***words, size_t *n)
{
	size_t len = strlen(s), cap = 0, k = 0;
	char **w = NULL;
	char *c;

	*n = 0;
	*words = NULL;
	for (size_t i = 0; i < len;) {
		size_t st;
		char q = 0;

		while (i < len && isblank((unsigned char)s[i]))
			i++;
		if (i >= len)
			break;
		st = i;
		while (i < len && (q || !isblank((unsigned char)s[i]))) {
			if (s[i] == p->esc && i + 1 < len && q != '\'') {
				i += 2;
				continue;
			}
			if (!q && (s[i] == '"' || s[i] == '\''))
				q = s[i];
			else if (q && s[i] == q)
				q = 0;
			i++;
		}
		if (sandbox__grow((void **)&w, &cap, k, sizeof(char *)))
			goto oom;
		c = df_strndup(p->df, s + st, i - st);
		if (!c)
			goto oom;
		w[k++] = c;
	}
	if (k) {
		*words = df_alloc(p->df, k * sizeof(char *));
		if (!*words)
			goto oom;
		memcpy(*words, w, k * sizeof(char *));
	}
	free(w);
	*n = k;
	return 0;
oom:
	free(w);
	return fail(p, -ENOMEM, "oom");
}

/* ---- steps ---------------------------------------------------------------- */

/* The environment in effect: ENV, then ARGs not hidden by an ENV. */
static int snapshot(struct parser *p, char ***env, size_t *n, bool with_args)
{
	size_t k = 0;
	char **e = df_alloc(p->df, (p->env.n + p->args.n) * sizeof(char *));

	if (!e)
		return fail(p, -ENOMEM, "oom");
	for (size_t i = 0; i < p->env.n; i++)
		e[k++] = (char *)p->env.v[i].kv;
	for (size_t i = 0; with_args && i < p->args.n; i++) {
		struct var *a = &p->args.v[i];

		if (a->value && !vars_find(&p->env, a->name, strlen(a->name)))
			e[k++] = (char *)a->kv;
	}
	*env = e;
	*n = k;
	return 0;
}

static int new_step(struct parser *p, enum dockerfile_kind kind,
		    struct dockerfile_step **out)
{
	struct dockerfile *df = p->df;

	if (df->n_steps >= DOCKERFILE_MAX_STEPS)
		return fail(p, -E2BIG, "over %d steps", DOCKERFILE_MAX_STEPS);
	if (sandbox__grow((void **)&df->steps, &p->steps_cap, df->n_steps,
			  sizeof(*df->steps)))
		return fail(p, -ENOMEM, "oom");
	*out = &df->steps[df->n_steps++];
	memset(*out, 0, sizeof(**out));
	(*out)->kind = kind;
	(*out)->line = p->line;
	return 0;
}

/* Fill in what is in effect after @s (call when it has applied). */
static int finish_step(struct parser *p, struct dockerfile_step *s)
{
	s->workdir = p->workdir;
	s->user = p->user;
	return snapshot(p, &s->env, &s->n_env, true);
}

/* An argv array of @n from @v into the arena. */
static char **argv_dup(struct parser *p, char *const *v, size_t n)
{
	char **a = df_alloc(p->df, (n + 1) * sizeof(char *));

	for (size_t i = 0; a && i < n; i++) {
		a[i] = df_strdup(p->df, v[i]);
		if (!a[i])
			return NULL;
	}
	return a;
}

/*
 * @s is a JSON array of strings (exec form): 1 with *@argv, *@n; 0 when
 * it is not one (the shell form, as Docker falls back to).
 */
static int json_form(struct parser *p, const char *s, char ***argv, size_t *n)
{
	json_t *j;
	char **a;
	size_t k;

	if (*s != '[')
		return 0;
	j = json_loads(s, 0, NULL);
	if (!j || !json_is_array(j)) {
		json_decref(j);
		return 0;
	}
	k = json_array_size(j);
	for (size_t i = 0; i < k; i++)
		if (!json_is_string(json_array_get(j, i))) {
			json_decref(j);
			return 0;
		}
	a = df_alloc(p->df, (k + 1) * sizeof(char *));
	for (size_t i = 0; a && i < k; i++) {
		json_t *e = json_array_get(j, i);

		a[i] = df_strndup(p->df, json_string_value(e),
				  json_string_length(e));
		if (!a[i])
			a = NULL;
	}
	json_decref(j);
	if (!a)
		return fail(p, -ENOMEM, "oom");
	*argv = a;
	*n = k;
	return 1;
}

/* Take a leading "--flag[=value]" off *@rest into @flag: 1, or 0 when none. */
static int take_flag(const char **rest, char *flag, size_t size)
{
	const char *s = *rest;
	size_t n = 0;

	if (strncmp(s, "--", 2))
		return 0;
	while (s[n] && !isblank((unsigned char)s[n]))
		n++;
	snprintf(flag, size, "%.*s", (int)n, s);
	s += n;
	while (isblank((unsigned char)*s))
		s++;
	*rest = s;
	return 1;
}

/* The flag's name (upto '='), compared to @name. */
static bool flag_is(const char *flag, const char *name)
{
	size_t n = strlen(name);

	return !strncmp(flag, name, n) && (flag[n] == '=' || !flag[n]);
}

static const char *flag_value(const char *flag)
{
	const char *eq = strchr(flag, '=');

	return eq ? eq + 1 : "";
}

/* RUN, CMD, ENTRYPOINT, SHELL: the exec or the shell form of @rest. */
static int cmd_like(struct parser *p, const char *kw, enum dockerfile_kind kind,
		    const char *rest)
{
	struct dockerfile_step *s;
	char flag[128], **argv;
	size_t n;
	int rc, json;

	while (take_flag(&rest, flag, sizeof(flag))) {
		if (kind == DOCKERFILE_RUN &&
		    (flag_is(flag, "--mount") || flag_is(flag, "--network") ||
		     flag_is(flag, "--security") || flag_is(flag, "--device")))
			return fail(
				p, -EINVAL,
				"RUN %.*s is not supported (ember's builds run in a plain microVM)",
				(int)strcspn(flag, "="), flag);
		return fail(p, -EINVAL, "%s: unknown flag %s", kw, flag);
	}
	if (!*rest)
		return fail(p, -EINVAL, "%s needs an argument", kw);
	if (!strncmp(rest, "<<", 2))
		return fail(p, -EINVAL, "heredocs (%s <<...) are not supported",
			    kw);
	json = json_form(p, rest, &argv, &n);
	if (json < 0)
		return json;
	if (!json && kind == DOCKERFILE_SHELL)
		return fail(
			p, -EINVAL,
			"SHELL needs the exec form, a JSON array: SHELL [\"/bin/bash\", \"-c\"]");
	if (json && !n && (kind == DOCKERFILE_RUN || kind == DOCKERFILE_SHELL))
		return fail(p, -EINVAL, "%s [] has no command", kw);
	rc = new_step(p, kind, &s);
	if (rc)
		return rc;
	if (json) {
		s->argv = argv;
		s->argc = n;
	} else {
		/* The SHELL in effect, then the text as written. */
		s->shell_form = true;
		s->argc = p->n_shell + 1;
		s->argv = df_alloc(p->df, (p->n_shell + 2) * sizeof(char *));
		if (!s->argv)
			return fail(p, -ENOMEM, "oom");
		memcpy(s->argv, p->shell, p->n_shell * sizeof(char *));
		s->argv[p->n_shell] = df_strdup(p->df, rest);
		if (!s->argv[p->n_shell])
			return fail(p, -ENOMEM, "oom");
	}
	if (kind == DOCKERFILE_SHELL) {
		p->shell = s->argv;
		p->n_shell = s->argc;
	}
	return finish_step(p, s);
}

/* A source Docker would fetch: refused, ember fetches nothing. */
static bool is_url(const char *s)
{
	return strstr(s, "://") || !strncmp(s, "git@", 4);
}

/*
 * Clean the '/'-separated @path lexically into @b: "." and empty parts
 * dropped, ".." taking one off (an error, 1, when there is none to take
 * off and @strict).  Absolute: a leading '/' in @b.
 */
static int clean_path(const char *path, bool absolute, bool strict,
		      struct sbuf *b)
{
	const char *s = path;
	int rc = 0;

	if (absolute)
		rc = sb_addc(b, '/');
	while (*s && !rc) {
		size_t n = strcspn(s, "/");

		if (!n || (n == 1 && s[0] == '.')) {
			/* nothing */
		} else if (n == 2 && s[0] == '.' && s[1] == '.') {
			size_t floor = absolute ? 1 : 0;

			if (b->n <= floor) {
				if (strict)
					return 1;
			} else {
				while (b->n > floor && b->s[b->n - 1] != '/')
					b->n--;
				if (b->n > floor)
					b->n--;
				b->s[b->n] = '\0';
			}
		} else {
			if (b->n > (absolute ? 1u : 0u))
				rc = sb_addc(b, '/');
			if (!rc)
				rc = sb_add(b, s, n);
		}
		s += n;
		if (*s)
			s++;
	}
	if (!rc && !b->n)
		rc = sb_addc(b, '.');
	return rc;
}

/* @path made absolute against the workdir in effect, and clean. */
static int abs_path(struct parser *p, const char *path, bool keep_slash,
		    char **out)
{
	struct sbuf raw = { 0 }, b = { 0 };
	size_t len = strlen(path);
	bool dir = keep_slash && (path[len - 1] == '/' || !strcmp(path, ".") ||
				  (len >= 2 && !strcmp(path + len - 2, "/.")) ||
				  !strcmp(path, "..") ||
				  (len >= 3 && !strcmp(path + len - 3, "/..")));
	int rc = 0;

	if (path[0] != '/')
		rc = sb_add(&raw, p->workdir, strlen(p->workdir));
	if (!rc)
		rc = sb_addc(&raw, '/');
	if (!rc)
		rc = sb_add(&raw, path, len);
	if (!rc)
		rc = clean_path(raw.s, true, false, &b);
	if (!rc && dir && b.s[b.n - 1] != '/')
		rc = sb_addc(&b, '/');
	if (!rc) {
		*out = df_strndup(p->df, b.s, b.n);
		if (!*out)
			rc = -ENOMEM;
	}
	free(raw.s);
	free(b.s);
	if (rc == -E2BIG)
		return fail(p, rc, "a path over %d bytes",
			    DOCKERFILE_MAX_VALUE);
	return rc ? fail(p, rc, "oom") : 0;
}

static bool archive_name(const char *s)
{
	static const char *const ext[] = { ".tar",     ".tar.gz", ".tgz",
					   ".tar.bz2", ".tbz2",	  ".tbz",
					   ".tar.xz",  ".txz",	  ".tar.zst",
					   ".tzst" };
	size_t n = strlen(s);

	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		size_t e = strlen(ext[i]);

		if (n > e && !strcasecmp(s + n - e, ext[i]))
			return true;
	}
	return false;
}

static bool chmod_ok(const char *m)
{
	size_t n = strlen(m);

	if (!n || n > 4)
		return false;
	return strspn(m, "01234567") == n;
}

/* [COPY], [ADD] */
static int copy(struct parser *p, const char *kw, bool add, const char *rest)
{
	struct dockerfile_step *s;
	char flag[PATH_MAX], **w, *chown = NULL, *chmod = NULL;
	size_t n;
	int rc;

	while (take_flag(&rest, flag, sizeof(flag))) {
		if (flag_is(flag, "--from"))
			return fail(
				p, -EINVAL,
				"multi-stage builds are not supported (%s --from)",
				kw);
		if (flag_is(flag, "--chown") || flag_is(flag, "--chmod")) {
			const char *v = flag_value(flag);
			char *x;

			if (!*v)
				return fail(p, -EINVAL, "%s: %s needs a value",
					    kw, flag);
			rc = expand(p, v, strlen(v), &x);
			if (rc)
				return rc;
			if (flag[4] == 'o')
				chown = x;
			else if (!chmod_ok(x))
				return fail(
					p, -EINVAL,
					"%s --chmod=%s: an octal mode (such as 0755) is needed",
					kw, x);
			else
				chmod = x;
		} else if (flag_is(flag, "--link")) {
			rc = note(
				p,
				"%s --link ignored (ember does not rebase layers)",
				kw);
			if (rc)
				return fail(p, rc, "oom");
		} else if (flag_is(flag, "--parents") ||
			   flag_is(flag, "--exclude") ||
			   (add && (flag_is(flag, "--checksum") ||
				    flag_is(flag, "--keep-git-dir")))) {
			return fail(p, -EINVAL, "%s %.*s is not supported", kw,
				    (int)strcspn(flag, "="), flag);
		} else {
			return fail(p, -EINVAL, "%s: unknown flag %s", kw,
				    flag);
		}
	}
	if (!strncmp(rest, "<<", 2) || strstr(rest, " <<"))
		return fail(p, -EINVAL, "heredocs (%s <<...) are not supported",
			    kw);
	rc = json_form(p, rest, &w, &n);
	if (rc < 0)
		return rc;
	if (!rc) {
		rc = split_raw(p, rest, &w, &n);
		if (rc)
			return rc;
	}
	for (size_t i = 0; i < n; i++) {
		rc = expand(p, w[i], strlen(w[i]), &w[i]);
		if (rc)
			return rc;
	}
	if (n < 2)
		return fail(p, -EINVAL, "%s needs a source and a destination",
			    kw);
	rc = new_step(p, DOCKERFILE_COPY, &s);
	if (rc)
		return rc;
	s->add = add;
	s->chown = chown;
	s->chmod = chmod;
	s->n_src = n - 1;
	s->src = df_alloc(p->df, n * sizeof(char *));
	if (!s->src)
		return fail(p, -ENOMEM, "oom");
	for (size_t i = 0; i + 1 < n; i++) {
		struct sbuf b = { 0 };

		if (!*w[i])
			return fail(p, -EINVAL, "%s: an empty source", kw);
		if (is_url(w[i]))
			return fail(
				p, -EINVAL,
				"%s %s: a URL is not supported (ember fetches nothing on the host; RUN curl or wget in the build)",
				kw, w[i]);
		rc = clean_path(w[i], false, true, &b);
		if (rc) {
			free(b.s);
			if (rc == 1)
				return fail(
					p, -EINVAL,
					"%s source %s is outside the build context",
					kw, w[i]);
			return fail(p, rc, "a path over %d bytes",
				    DOCKERFILE_MAX_VALUE);
		}
		s->src[i] = df_strndup(p->df, b.s, b.n);
		free(b.s);
		if (!s->src[i])
			return fail(p, -ENOMEM, "oom");
		if (add && archive_name(s->src[i]))
			s->add_archive = true;
	}
	if (!*w[n - 1])
		return fail(p, -EINVAL, "%s: an empty destination", kw);
	rc = abs_path(p, w[n - 1], true, (char **)&s->dest);
	if (rc)
		return rc;
	if (s->n_src > 1 && s->dest[strlen(s->dest) - 1] != '/')
		return fail(
			p, -EINVAL,
			"%s of more than one source needs a destination ending in /",
			kw);
	return finish_step(p, s);
}

/* [ENV] K=V ... or the legacy K V */
static int env(struct parser *p, const char *rest)
{
	struct dockerfile_step *s;
	char **w, **names, **vals;
	size_t n;
	int rc;

	rc = split_raw(p, rest, &w, &n);
	if (rc)
		return rc;
	if (!n)
		return fail(p, -EINVAL, "ENV needs a name and a value");
	names = df_alloc(p->df, n * sizeof(char *));
	vals = df_alloc(p->df, n * sizeof(char *));
	if (!names || !vals)
		return fail(p, -ENOMEM, "oom");
	if (!strchr(w[0], '=')) {
		/* ENV K V...: the value is the rest of the line, one word. */
		const char *v = rest + strlen(w[0]);

		while (isblank((unsigned char)*v))
			v++;
		if (!*v)
			return fail(p, -EINVAL,
				    "ENV %s needs a value (ENV K=V or ENV K V)",
				    w[0]);
		names[0] = w[0];
		rc = expand(p, v, strlen(v), &vals[0]);
		if (rc)
			return rc;
		n = 1;
	} else {
		for (size_t i = 0; i < n; i++) {
			char *eq = strchr(w[i], '=');

			if (!eq || eq == w[i])
				return fail(p, -EINVAL, "ENV %s: not K=V",
					    w[i]);
			*eq = '\0';
			names[i] = w[i];
			/* All from the environment before this ENV. */
			rc = expand(p, eq + 1, strlen(eq + 1), &vals[i]);
			if (rc)
				return rc;
		}
	}
	rc = new_step(p, DOCKERFILE_ENV, &s);
	if (rc)
		return rc;
	s->set = df_alloc(p->df, n * sizeof(char *));
	if (!s->set)
		return fail(p, -ENOMEM, "oom");
	for (size_t i = 0; i < n; i++) {
		rc = vars_set(p, &p->env, names[i], vals[i]);
		if (rc)
			return rc == -ENOMEM ? fail(p, rc, "oom") : rc;
		s->set[s->n_set++] =
			(char *)vars_find(&p->env, names[i], strlen(names[i]))
				->kv;
	}
	return finish_step(p, s);
}

static const char *build_arg(struct parser *p, const char *name)
{
	size_t n = strlen(name);

	if (!p->opts)
		return NULL;
	for (size_t i = 0; i < p->opts->n_build_args; i++) {
		const char *a = p->opts->build_args[i];

		if (!strncmp(a, name, n) && a[n] == '=') {
			p->arg_used[i] = true;
			return a + n + 1;
		}
	}
	return NULL;
}

/* [ARG] K[=default] ... */
static int arg(struct parser *p, const char *rest)
{
	struct dockerfile_step *s = NULL;
	struct vars *vs = p->seen_from ? &p->args : &p->meta;
	char **w;
	size_t n;
	int rc;

	rc = split_raw(p, rest, &w, &n);
	if (rc)
		return rc;
	if (!n)
		return fail(p, -EINVAL, "ARG needs a name");
	if (p->seen_from) {
		rc = new_step(p, DOCKERFILE_ARG, &s);
		if (rc)
			return rc;
		s->set = df_alloc(p->df, n * sizeof(char *));
		if (!s->set)
			return fail(p, -ENOMEM, "oom");
	}
	for (size_t i = 0; i < n; i++) {
		char *eq = strchr(w[i], '='), *def = NULL;
		const char *v;

		if (eq) {
			*eq = '\0';
			rc = expand(p, eq + 1, strlen(eq + 1), &def);
			if (rc)
				return rc;
		}
		if (!*w[i] || strchr(w[i], '$') || strchr(w[i], '"') ||
		    strchr(w[i], '\''))
			return fail(p, -EINVAL, "ARG %s: not a name", w[i]);
		v = build_arg(p, w[i]);
		if (!v)
			v = def;
		if (!v && p->seen_from) {
			/* ARG K after FROM takes the value K had before. */
			struct var *m = vars_find(&p->meta, w[i], strlen(w[i]));

			v = m ? m->value : NULL;
		}
		rc = vars_set(p, vs, w[i], v);
		if (rc)
			return rc == -ENOMEM ? fail(p, rc, "oom") : rc;
		if (s)
			s->set[s->n_set++] =
				(char *)vars_find(vs, w[i], strlen(w[i]))->kv;
	}
	return s ? finish_step(p, s) : 0;
}

/* [FROM] [--platform=P] SRC [AS name] */
static int from(struct parser *p, const char *rest)
{
	struct dockerfile *df = p->df;
	char flag[128], **w, *src, path[PATH_MAX], tag[256];
	enum image_kind k;
	size_t n;
	int rc;

	if (p->seen_from)
		return fail(
			p, -EINVAL,
			"multi-stage builds are not supported (a second FROM at line %d)",
			p->line);
	while (take_flag(&rest, flag, sizeof(flag))) {
		char *v;

		if (!flag_is(flag, "--platform"))
			return fail(p, -EINVAL, "FROM: unknown flag %s", flag);
		rc = expand(p, flag_value(flag), strlen(flag_value(flag)), &v);
		if (rc)
			return rc;
		if (strcmp(v, "linux/amd64"))
			return fail(
				p, -EINVAL,
				"FROM --platform=%s: ember builds linux/amd64 only",
				v);
	}
	rc = split_raw(p, rest, &w, &n);
	if (rc)
		return rc;
	if (n != 1 && !(n == 3 && !strcasecmp(w[1], "AS")))
		return fail(p, -EINVAL, "FROM takes SRC or SRC AS NAME");
	rc = expand(p, w[0], strlen(w[0]), &src);
	if (rc)
		return rc;
	if (!*src)
		return fail(p, -EINVAL, "FROM %s: empty after substitution",
			    w[0]);
	if (!strcmp(src, "scratch"))
		return fail(
			p, -EINVAL,
			"FROM scratch is not supported (a build runs in the base image's root file system)");
	if (!strncmp(src, "template:", 9)) {
		if (!src[9] || strchr(src + 9, '/'))
			return fail(p, -EINVAL, "FROM %s: not a template name",
				    src);
		df->from_template = true;
		src += 9;
	} else if ((rc = image__parse_src(src, &k, path, sizeof(path), tag,
					  sizeof(tag)))) {
		return fail(p, -EINVAL, "FROM %s: not an image SRC (%s)", src,
			    strerror(-rc));
	}
	df->from = src;
	df->from_line = p->line;
	p->seen_from = true;
	return 0;
}

static bool upper_eq(const char *kw, const char *name)
{
	return !strcasecmp(kw, name);
}

/* One logical line: the instruction @kw, its arguments @rest. */
static int instruction(struct parser *p, const char *kw, const char *rest)
{
	static const struct {
		const char *kw, *why;
	} ignored[] = {
		{ "LABEL", "a template keeps no labels" },
		{ "EXPOSE", "a sandbox's ports are reached through ember" },
		{ "VOLUME", "the path stays on the template's disk" },
		{ "STOPSIGNAL", "ember stops a sandbox's whole VM" },
		{ "HEALTHCHECK",
		  "a template's ready command checks readiness" },
		{ "MAINTAINER", "a template keeps no labels" },
	};
	char *x;
	int rc;

	if (upper_eq(kw, "FROM"))
		return from(p, rest);
	if (upper_eq(kw, "ARG"))
		return arg(p, rest);
	if (upper_eq(kw, "ONBUILD"))
		return fail(
			p, -EINVAL,
			"ONBUILD is not supported (it acts in builds FROM this one's result)");
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		if (upper_eq(kw, ignored[i].kw)) {
			if (!p->seen_from)
				break;
			rc = note(p, "%s ignored (%s)", ignored[i].kw,
				  ignored[i].why);
			return rc ? fail(p, rc, "oom") : 0;
		}
	if (!p->seen_from)
		return fail(p, -EINVAL,
			    "%s before FROM (only ARG may come before FROM)",
			    kw);
	if (upper_eq(kw, "RUN"))
		return cmd_like(p, "RUN", DOCKERFILE_RUN, rest);
	if (upper_eq(kw, "CMD"))
		return cmd_like(p, "CMD", DOCKERFILE_CMD, rest);
	if (upper_eq(kw, "ENTRYPOINT"))
		return cmd_like(p, "ENTRYPOINT", DOCKERFILE_ENTRYPOINT, rest);
	if (upper_eq(kw, "SHELL"))
		return cmd_like(p, "SHELL", DOCKERFILE_SHELL, rest);
	if (upper_eq(kw, "COPY"))
		return copy(p, "COPY", false, rest);
	if (upper_eq(kw, "ADD"))
		return copy(p, "ADD", true, rest);
	if (upper_eq(kw, "ENV"))
		return env(p, rest);
	if (upper_eq(kw, "WORKDIR") || upper_eq(kw, "USER")) {
		struct dockerfile_step *s;
		bool wd = toupper((unsigned char)kw[0]) == 'W';

		if (!*rest)
			return fail(p, -EINVAL, "%s needs an argument",
				    wd ? "WORKDIR" : "USER");
		rc = expand(p, rest, strlen(rest), &x);
		if (rc)
			return rc;
		if (!*x)
			return fail(p, -EINVAL,
				    "%s is empty after substitution",
				    wd ? "WORKDIR" : "USER");
		if (wd) {
			rc = abs_path(p, x, false, &x);
			if (rc)
				return rc;
			p->workdir = x;
		} else {
			p->user = x;
		}
		rc = new_step(p, wd ? DOCKERFILE_WORKDIR : DOCKERFILE_USER, &s);
		return rc ? rc : finish_step(p, s);
	}
	return fail(p, -EINVAL, "unknown instruction %s", kw);
}

/* ---- lines ---------------------------------------------------------------- */

/* A physical line at *@pos: [*@s, *@s + *@n) without its end; advances. */
static bool next_line(const char *text, size_t len, size_t *pos, const char **s,
		      size_t *n)
{
	const char *nl;

	if (*pos >= len)
		return false;
	*s = text + *pos;
	nl = memchr(*s, '\n', len - *pos);
	*n = nl ? (size_t)(nl - *s) : len - *pos;
	*pos += *n + (nl ? 1 : 0);
	if (*n && (*s)[*n - 1] == '\r')
		(*n)--;
	return true;
}

static bool blank_or_comment(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && isspace((unsigned char)s[i]))
		i++;
	return i == n || s[i] == '#';
}

/*
 * A parser directive line "# name=value" [Parser directives]: 1 (with
 * the escape set or a note), 0 when it is not one.
 */
static int directive(struct parser *p, const char *s, size_t n, bool *seen_esc)
{
	size_t i = 0, ns, ne, vs, ve;

	while (i < n && isblank((unsigned char)s[i]))
		i++;
	if (i >= n || s[i++] != '#')
		return 0;
	while (i < n && isblank((unsigned char)s[i]))
		i++;
	ns = i;
	while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '_'))
		i++;
	ne = i;
	while (i < n && isblank((unsigned char)s[i]))
		i++;
	if (ne == ns || i >= n || s[i] != '=')
		return 0;
	i++;
	while (i < n && isblank((unsigned char)s[i]))
		i++;
	vs = i;
	ve = n;
	while (ve > vs && isblank((unsigned char)s[ve - 1]))
		ve--;
	if (ne - ns == 6 && !strncasecmp(s + ns, "escape", 6)) {
		if (*seen_esc)
			return fail(p, -EINVAL, "a second escape directive");
		if (ve - vs != 1 || (s[vs] != '\\' && s[vs] != '`'))
			return fail(
				p, -EINVAL,
				"escape=%.*s: the escape character is \\ or `",
				(int)(ve - vs), s + vs);
		p->esc = s[vs];
		*seen_esc = true;
		return 1;
	}
	if (ne - ns == 6 && !strncasecmp(s + ns, "syntax", 6)) {
		int rc = note(
			p,
			"# syntax=%.*s ignored (ember parses Dockerfiles itself)",
			(int)(ve - vs), s + vs);

		return rc ? fail(p, rc, "oom") : 1;
	}
	if (ne - ns == 5 && !strncasecmp(s + ns, "check", 5))
		return 1;
	return 0; /* an unknown one is a comment */
}

/* The escape character at the end of [s, s + n), blanks after it allowed. */
static bool continued(struct parser *p, const char *s, size_t *n)
{
	size_t e = *n;

	while (e && isblank((unsigned char)s[e - 1]))
		e--;
	if (!e || s[e - 1] != p->esc)
		return false;
	*n = e - 1;
	return true;
}

static int parse_lines(struct parser *p, const char *text, size_t len)
{
	struct sbuf b = { 0 };
	bool directives = true, seen_esc = false;
	size_t pos = 0, n;
	const char *s;
	int lineno = 0, rc = 0;

	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		pos = 3;
	while (!rc && next_line(text, len, &pos, &s, &n)) {
		const char *kw, *rest;
		size_t k;
		bool more;

		p->line = ++lineno;
		if (directives) {
			rc = directive(p, s, n, &seen_esc);
			if (rc) {
				rc = rc > 0 ? 0 : rc;
				continue;
			}
			directives = false;
		}
		if (blank_or_comment(s, n))
			continue;
		b.n = 0;
		more = continued(p, s, &n);
		rc = sb_add(&b, s, n);
		while (!rc && more) {
			if (!next_line(text, len, &pos, &s, &n))
				break;
			lineno++;
			if (blank_or_comment(s, n))
				continue;
			more = continued(p, s, &n);
			rc = sb_add(&b, s, n);
		}
		if (rc) {
			rc = rc == -E2BIG ? fail(p, rc, "a line over %d bytes",
						 DOCKERFILE_MAX_VALUE) :
					    fail(p, rc, "oom");
			break;
		}
		/* The keyword, then its arguments without the blanks around. */
		kw = b.s;
		while (isspace((unsigned char)*kw))
			kw++;
		k = 0;
		while (kw[k] && !isspace((unsigned char)kw[k]))
			k++;
		rest = kw + k;
		while (isspace((unsigned char)*rest))
			rest++;
		while (b.n && isspace((unsigned char)b.s[b.n - 1]))
			b.s[--b.n] = '\0';
		{
			char word[32];

			if (k >= sizeof(word)) {
				rc = fail(p, -EINVAL,
					  "unknown instruction %.*s", (int)k,
					  kw);
				break;
			}
			memcpy(word, kw, k);
			word[k] = '\0';
			rc = instruction(p, word, rest);
		}
	}
	free(b.s);
	return rc;
}

int dockerfile__parse(const char *text, size_t len,
		      const struct dockerfile_opts *opts, struct dockerfile *df,
		      char *err, size_t errlen)
{
	static const char *const sh[] = { "/bin/sh", "-c", NULL };
	struct parser p = {
		.df = df,
		.opts = opts,
		.err = err,
		.errlen = errlen,
		.esc = '\\',
		.workdir = "/",
	};
	size_t n_args = opts ? opts->n_build_args : 0;
	int rc;

	memset(df, 0, sizeof(*df));
	if (len > DOCKERFILE_MAX_BYTES)
		return sandbox__errf(err, errlen, -E2BIG,
				     "a Dockerfile over %u bytes",
				     DOCKERFILE_MAX_BYTES);
	if (memchr(text, '\0', len))
		return sandbox__errf(err, errlen, -EINVAL,
				     "a Dockerfile holds text, not a NUL byte");
	p.shell = argv_dup(&p, (char *const *)sh, 2);
	p.n_shell = 2;
	p.arg_used = calloc(n_args ? n_args : 1, sizeof(bool));
	if (!p.shell || !p.arg_used) {
		rc = sandbox__errf(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n_args; i++) {
		const char *a = opts->build_args[i];

		if (!strchr(a, '=') || a[0] == '=') {
			rc = sandbox__errf(err, errlen, -EINVAL,
					   "--build-arg %s: not K=V", a);
			goto out;
		}
	}
	if (opts && opts->base_workdir && *opts->base_workdir) {
		if (opts->base_workdir[0] != '/') {
			rc = sandbox__errf(
				err, errlen, -EINVAL,
				"the base image's WorkingDir %s is not absolute",
				opts->base_workdir);
			goto out;
		}
		p.workdir = opts->base_workdir;
		rc = abs_path(&p, opts->base_workdir, false,
			      (char **)&p.workdir);
		if (rc)
			goto out;
	}
	p.user =
		opts && opts->base_user ? df_strdup(df, opts->base_user) : NULL;
	for (size_t i = 0; opts && i < opts->n_base_env; i++) {
		const char *e = opts->base_env[i], *eq = strchr(e, '=');
		char *name;

		if (!eq || eq == e) {
			rc = sandbox__errf(err, errlen, -EINVAL,
					   "the base image's Env %s is not K=V",
					   e);
			goto out;
		}
		name = df_strndup(df, e, (size_t)(eq - e));
		rc = name ? vars_set(&p, &p.env, name, eq + 1) : -ENOMEM;
		if (rc) {
			if (rc == -ENOMEM)
				sandbox__errf(err, errlen, rc, "out of memory");
			goto out;
		}
	}
	rc = parse_lines(&p, text, len);
	if (rc)
		goto out;
	if (!p.seen_from) {
		rc = sandbox__errf(err, errlen, -EINVAL, "no FROM");
		goto out;
	}
	for (size_t i = 0; i < n_args; i++)
		if (!p.arg_used[i]) {
			p.line = df->from_line;
			rc = note(&p,
				  "--build-arg %.*s not used (no ARG for it)",
				  (int)strcspn(opts->build_args[i], "="),
				  opts->build_args[i]);
			if (rc) {
				rc = sandbox__errf(err, errlen, rc,
						   "out of memory");
				goto out;
			}
		}
	rc = snapshot(&p, &df->env, &df->n_env, false);
	if (rc)
		goto out;
	df->workdir = p.workdir;
	df->user = p.user;
	for (size_t i = 0; i < df->n_steps; i++) {
		if (df->steps[i].kind == DOCKERFILE_CMD)
			df->cmd = &df->steps[i];
		if (df->steps[i].kind == DOCKERFILE_ENTRYPOINT) {
			df->entrypoint = &df->steps[i];
			df->cmd = NULL;
		}
	}
out:
	free(p.env.v);
	free(p.args.v);
	free(p.meta.v);
	free(p.arg_used);
	return rc;
}

/* ---- keys ------------------------------------------------------------------ */

/* A field: its tag, its length (8 bytes, big-endian), its bytes. */
static void put(EVP_MD_CTX *c, char tag, const void *v, size_t n)
{
	uint8_t h[9];

	h[0] = (uint8_t)tag;
	for (int i = 0; i < 8; i++)
		h[1 + i] = (uint8_t)((uint64_t)n >> (56 - 8 * i));
	EVP_DigestUpdate(c, h, sizeof(h));
	if (n)
		EVP_DigestUpdate(c, v, n);
}

static void put_str(EVP_MD_CTX *c, char tag, const char *s)
{
	if (s)
		put(c, tag, s, strlen(s));
	else
		put(c, (char)tolower((unsigned char)tag), NULL, 0);
}

/* A number as a field of its decimal digits. */
static void put_num(EVP_MD_CTX *c, char tag, uint64_t v)
{
	char d[24];

	snprintf(d, sizeof(d), "%llu", (unsigned long long)v);
	put_str(c, tag, d);
}

static void put_strv(EVP_MD_CTX *c, char tag, char *const *v, size_t n)
{
	put_num(c, tag, n);
	for (size_t i = 0; i < n; i++)
		put_str(c, '.', v[i]);
}

static void hex(const uint8_t *md, size_t n, char *out)
{
	static const char d[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = d[md[i] >> 4];
		out[2 * i + 1] = d[md[i] & 15];
	}
	out[2 * n] = '\0';
}

int dockerfile__step_key(const struct dockerfile_step *s, const char *prev_key,
			 const uint8_t *files_digest, char out[65])
{
	static const char domain[] = "ember dockerfile step v1";
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	uint8_t md[EVP_MAX_MD_SIZE];
	uint8_t flags;

	if (!c || !EVP_DigestInit_ex(c, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(c);
		return -ENOMEM;
	}
	put(c, 'V', domain, sizeof(domain) - 1);
	put_str(c, 'P', prev_key ? prev_key : "");
	put_str(c, 'K', dockerfile__kind_name(s->kind));
	flags = (uint8_t)(s->shell_form | s->add << 1);
	put(c, 'F', &flags, 1);
	put_strv(c, 'A', s->argv, s->argc);
	put_strv(c, 'S', s->set, s->n_set);
	put_strv(c, 'E', s->env, s->n_env);
	put_str(c, 'W', s->workdir);
	put_str(c, 'U', s->user);
	put_strv(c, 'C', s->src, s->n_src);
	put_str(c, 'D', s->dest);
	put_str(c, 'O', s->chown);
	put_str(c, 'M', s->chmod);
	if (files_digest)
		put(c, 'H', files_digest, 32);
	else
		put(c, 'h', NULL, 0);
	EVP_DigestFinal_ex(c, md, NULL);
	EVP_MD_CTX_free(c);
	hex(md, 32, out);
	return 0;
}

/* ---- the files of a COPY -------------------------------------------------- */

#define WALK_DEPTH 64

struct walk {
	EVP_MD_CTX *c;
	const char *ctx_real; /* realpath of the context */
	struct dockerignore *ign; /* its .dockerignore; NULL: none */
	int line;
	char *err;
	size_t errlen;
	char buf[65536];
};

/* @rel (a link at @dir_rel/name, both relative to the context) stays in. */
static bool link_inside(const char *dir_rel, const char *target)
{
	struct sbuf raw = { 0 }, b = { 0 };
	int rc;

	if (target[0] == '/')
		return false;
	rc = sb_add(&raw, dir_rel, strlen(dir_rel));
	if (!rc)
		rc = sb_addc(&raw, '/');
	if (!rc)
		rc = sb_add(&raw, target, strlen(target));
	if (!rc)
		rc = clean_path(raw.s, false, true, &b);
	free(raw.s);
	free(b.s);
	return rc == 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The entry @name of the directory @crel (the fd @at) is out of the
 * context (.dockerignore), and so is all it holds: not hashed, not
 * counted.
 */
static bool ignored(const struct walk *w, int at, const char *crel,
		    const char *name)
{
	char rel[PATH_MAX];
	struct stat st;

	if (!w->ign || files__pathf(rel, sizeof(rel), "%s/%s", crel, name) ||
	    !dockerignore__match(w->ign, rel))
		return false;
	return dockerignore__skip_dir(w->ign, rel) ||
	       (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		!S_ISDIR(st.st_mode));
}

/*
 * Hash the entry @name of the open directory @at: @rel its path from
 * the source (for the hash), @crel its path from the context (for links).
 */
static int walk_entry(struct walk *w, int at, const char *name, const char *rel,
		      const char *crel, int depth)
{
	struct stat st;
	uint32_t mode;
	int fd = -1, rc = 0;

	if (depth > WALK_DEPTH)
		return sandbox__errf(w->err, w->errlen, -ELOOP,
				     "line %d: %s: deeper than %d levels",
				     w->line, crel, WALK_DEPTH);
	if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW))
		return sandbox__errf(w->err, w->errlen, -errno,
				     "line %d: %s: %s", w->line, crel,
				     strerror(errno));
	/* Not in the context (.dockerignore): neither copied nor hashed. */
	if (dockerignore__match(w->ign, crel) &&
	    (!S_ISDIR(st.st_mode) || dockerignore__skip_dir(w->ign, crel)))
		return 0;
	mode = (uint32_t)st.st_mode & 07777;
	put_str(w->c, 'N', rel);
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX], *slash, dir[PATH_MAX];
		ssize_t n = readlinkat(at, name, target, sizeof(target) - 1);

		if (n < 0)
			return sandbox__errf(w->err, w->errlen, -errno,
					     "line %d: %s: %s", w->line, crel,
					     strerror(errno));
		target[n] = '\0';
		snprintf(dir, sizeof(dir), "%s", crel);
		slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		else
			strcpy(dir, ".");
		if (!link_inside(dir, target))
			return sandbox__errf(
				w->err, w->errlen, -EINVAL,
				"line %d: %s: a symbolic link to %s, outside the build context",
				w->line, crel, target);
		put(w->c, 'l', NULL, 0);
		put_str(w->c, 'T', target);
		return 0;
	}
	if (S_ISREG(st.st_mode)) {
		uint64_t size = 0;
		ssize_t n;

		fd = openat(at, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return sandbox__errf(w->err, w->errlen, -errno,
					     "line %d: %s: %s", w->line, crel,
					     strerror(errno));
		put_num(w->c, 'f', mode);
		put_num(w->c, 'Z', (uint64_t)st.st_size);
		while ((n = read(fd, w->buf, sizeof(w->buf))) > 0) {
			EVP_DigestUpdate(w->c, w->buf, (size_t)n);
			size += (uint64_t)n;
		}
		if (n < 0)
			rc = sandbox__errf(w->err, w->errlen, -errno,
					   "line %d: %s: %s", w->line, crel,
					   strerror(errno));
		else if (size != (uint64_t)st.st_size)
			rc = sandbox__errf(w->err, w->errlen, -EIO,
					   "line %d: %s changed while read",
					   w->line, crel);
		close(fd);
		return rc;
	}
	if (S_ISDIR(st.st_mode)) {
		char **names = NULL, sub[PATH_MAX], csub[PATH_MAX];
		size_t n = 0, cap = 0;
		struct dirent *d;
		DIR *dir;

		fd = openat(at, name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return sandbox__errf(w->err, w->errlen, -errno,
					     "line %d: %s: %s", w->line, crel,
					     strerror(errno));
		dir = fdopendir(fd);
		if (!dir) {
			close(fd);
			return sandbox__errf(w->err, w->errlen, -errno,
					     "line %d: %s: %s", w->line, crel,
					     strerror(errno));
		}
		put_num(w->c, 'd', mode);
		while ((d = readdir(dir))) {
			char *c;

			if (!strcmp(d->d_name, ".") ||
			    !strcmp(d->d_name, "..") ||
			    ignored(w, dirfd(dir), crel, d->d_name))
				continue;
			c = strdup(d->d_name);
			if (!c || sandbox__grow((void **)&names, &cap, n,
						sizeof(char *))) {
				free(c);
				rc = sandbox__errf(w->err, w->errlen, -ENOMEM,
						   "out of memory");
				goto dir_out;
			}
			names[n++] = c;
		}
		if (n)
			qsort(names, n, sizeof(char *), cmp_names);
		put_num(w->c, 'n', n);
		for (size_t i = 0; i < n && !rc; i++) {
			if (files__pathf(sub, sizeof(sub), "%s%s%s", rel,
					 *rel ? "/" : "", names[i]) ||
			    files__pathf(csub, sizeof(csub), "%s/%s", crel,
					 names[i])) {
				rc = sandbox__errf(w->err, w->errlen,
						   -ENAMETOOLONG,
						   "line %d: %s/%s: too long",
						   w->line, crel, names[i]);
				break;
			}
			rc = walk_entry(w, dirfd(dir), names[i], sub, csub,
					depth + 1);
		}
	dir_out:
		for (size_t i = 0; i < n; i++)
			free(names[i]);
		free(names);
		closedir(dir);
		return rc;
	}
	return sandbox__errf(w->err, w->errlen, -EINVAL,
			     "line %d: %s: not a file, directory or link",
			     w->line, crel);
}

/* Hash the source @path (absolute, from glob or ctx/src). */
static int walk_source(struct walk *w, const char *path)
{
	char real[PATH_MAX], *rel;
	size_t cl = strlen(w->ctx_real);

	if (!realpath(path, real))
		return sandbox__errf(w->err, w->errlen, -errno,
				     "line %d: %s: %s", w->line, path,
				     strerror(errno));
	if (strncmp(real, w->ctx_real, cl) ||
	    (real[cl] && real[cl] != '/' && strcmp(w->ctx_real, "/")))
		return sandbox__errf(
			w->err, w->errlen, -EINVAL,
			"line %d: %s resolves to %s, outside the build context",
			w->line, path, real);
	rel = real + cl;
	while (*rel == '/')
		rel++;
	put_str(w->c, 'R', rel);
	return walk_entry(w, AT_FDCWD, real, "", *rel ? rel : ".", 0);
}

/* A source's last component is "." or ".." (glob's, not Docker's). */
static bool dot_entry(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return !strcmp(b, ".") || !strcmp(b, "..");
}

/*
 * Hash the matches of the glob @src in the context @real, sorted by
 * strcmp: like Docker's (Go's filepath.Match), a '*' matches a leading
 * '.', never "." or "..", and '\\' escapes.
 */
static int walk_glob(struct walk *w, const char *real, const char *src)
{
	struct sbuf pat = { 0 };
	char **v;
	size_t n = 0;
	glob_t g;
	int rc = 0, grc;

	for (const char *c = real; *c && !rc; c++) {
		if (strchr("*?[\\", *c))
			rc = sb_addc(&pat, '\\');
		if (!rc)
			rc = sb_addc(&pat, *c);
	}
	if (!rc)
		rc = sb_addc(&pat, '/');
	if (!rc)
		rc = sb_add(&pat, src, strlen(src));
	if (rc) {
		free(pat.s);
		return sandbox__errf(w->err, w->errlen, -ENAMETOOLONG,
				     "line %d: %s: too long", w->line, src);
	}
	memset(&g, 0, sizeof(g));
	grc = glob(pat.s, GLOB_PERIOD | GLOB_NOSORT, NULL, &g);
	free(pat.s);
	if (grc && grc != GLOB_NOMATCH) {
		globfree(&g);
		return sandbox__errf(
			w->err, w->errlen, grc == GLOB_NOSPACE ? -ENOMEM : -EIO,
			"line %d: %s: %s", w->line, src,
			grc == GLOB_NOSPACE ? "out of memory" :
					      "a directory could not be read");
	}
	v = grc ? NULL : calloc(g.gl_pathc ? g.gl_pathc : 1, sizeof(char *));
	if (!grc && !v) {
		globfree(&g);
		return sandbox__errf(w->err, w->errlen, -ENOMEM,
				     "out of memory");
	}
	for (size_t k = 0; !grc && k < g.gl_pathc; k++)
		if (!dot_entry(g.gl_pathv[k]))
			v[n++] = g.gl_pathv[k];
	if (n)
		qsort(v, n, sizeof(char *), cmp_names);
	else
		rc = sandbox__errf(
			w->err, w->errlen, -ENOENT,
			"line %d: %s matches nothing in the build context",
			w->line, src);
	put_num(w->c, 'G', n);
	for (size_t k = 0; k < n && !rc; k++)
		rc = walk_source(w, v[k]);
	free(v);
	globfree(&g);
	return rc;
}

int dockerfile__copy_digest(const char *ctx, const struct dockerfile_step *s,
			    uint8_t out[32], char *err, size_t errlen)
{
	struct walk *w;
	char real[PATH_MAX], path[PATH_MAX];
	uint8_t md[EVP_MAX_MD_SIZE];
	int rc = 0;

	if (s->kind != DOCKERFILE_COPY)
		return sandbox__errf(err, errlen, -EINVAL,
				     "line %d: not a COPY or ADD", s->line);
	if (!realpath(ctx, real))
		return sandbox__errf(err, errlen, -errno, "%s: %s", ctx,
				     strerror(errno));
	w = calloc(1, sizeof(*w));
	if (!w)
		return sandbox__errf(err, errlen, -ENOMEM, "out of memory");
	w->c = EVP_MD_CTX_new();
	if (!w->c || !EVP_DigestInit_ex(w->c, EVP_sha256(), NULL)) {
		rc = sandbox__errf(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	w->ctx_real = real;
	w->line = s->line;
	w->err = err;
	w->errlen = errlen;
	rc = dockerignore__load(real, &w->ign, err, errlen);
	for (size_t i = 0; i < s->n_src && !rc; i++) {
		const char *src = s->src[i];

		put_str(w->c, 'S', src);
		if (files__pathf(path, sizeof(path), "%s/%s", real, src)) {
			rc = sandbox__errf(err, errlen, -ENAMETOOLONG,
					   "line %d: %s: too long", s->line,
					   src);
			break;
		}
		if (strpbrk(src, "*?["))
			rc = walk_glob(w, real, src);
		else
			rc = walk_source(w, path);
	}
	if (!rc) {
		EVP_DigestFinal_ex(w->c, md, NULL);
		memcpy(out, md, 32);
	}
out:
	dockerignore__free(w->ign);
	EVP_MD_CTX_free(w->c);
	free(w);
	return rc;
}
