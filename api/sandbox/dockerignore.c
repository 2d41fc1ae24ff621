// SPDX-License-Identifier: Apache-2.0
/*
 * .dockerignore patterns (see dockerignore.h).  Each pattern is compiled
 * into a short list of tokens and matched by simulating its automaton
 * over the path, one character at a time (a set of live states, O(pattern
 * x path), no backtracking: a pattern of many '*' costs no more).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dockerignore.h"
#include "files.h"

#define WALK_DEPTH_MAX 256 /* directories under the copied one */

enum tok_kind {
	TOK_LIT = 0, /* the character c */
	TOK_ANY, /* '?': one character but '/' */
	TOK_CLASS, /* "[...]": set[] */
	TOK_STAR, /* '*': any run of characters but '/' */
	TOK_DSTAR_DIR, /* "**" before more: any path ending in a '/', or none */
	TOK_DSTAR_END, /* "**" at the end: ".*" */
};

struct tok {
	enum tok_kind kind;
	unsigned char c;
	uint8_t set[32]; /* TOK_CLASS: a bit per byte */
};

struct pattern {
	struct tok *t;
	size_t n;
	bool exception; /* a '!' line */
};

struct dockerignore {
	struct pattern *p;
	size_t n, cap;
	bool exceptions; /* some line is a '!' one */
};

/* ---- compiling ---------------------------------------------------------- */

/*
 * filepath.Clean of @s (@len bytes) into @out (>= @len + 2 bytes): '/'
 * runs folded, "." dropped, "x/.." undone, no trailing '/'; "" is ".".
 */
static void clean_path(const char *s, size_t n, char *out)
{
	bool rooted = n && s[0] == '/';
	size_t w = 0, r = 0, dotdot = 0;

	if (rooted) {
		out[w++] = '/';
		r = dotdot = 1;
	}
	while (r < n) {
		if (s[r] == '/') {
			r++;
		} else if (s[r] == '.' && (r + 1 == n || s[r + 1] == '/')) {
			r++;
		} else if (s[r] == '.' && r + 1 < n && s[r + 1] == '.' &&
			   (r + 2 == n || s[r + 2] == '/')) {
			r += 2;
			if (w > dotdot) {
				/* Back to the last '/' (dropped with it). */
				w--;
				while (w > dotdot && out[w] != '/')
					w--;
			} else if (!rooted) {
				if (w)
					out[w++] = '/';
				out[w++] = '.';
				out[w++] = '.';
				dotdot = w;
			}
		} else {
			if ((rooted && w != 1) || (!rooted && w != 0))
				out[w++] = '/';
			while (r < n && s[r] != '/')
				out[w++] = s[r++];
		}
	}
	if (!w)
		out[w++] = '.';
	out[w] = '\0';
}

static void set_bit(uint8_t *set, unsigned char c)
{
	set[c >> 3] |= (uint8_t)(1u << (c & 7));
}

/*
 * One character of a class at *@s (a '\' escape taken): -EINVAL where
 * Go's filepath.Match, which checks Docker's patterns, says
 * ErrBadPattern: a '-' or ']' where a character must be, or the end.
 */
static int class_char(const char *s, size_t *i, unsigned char *c)
{
	if (s[*i] == '-' || s[*i] == ']' || !s[*i])
		return -EINVAL;
	if (s[*i] == '\\' && !s[++*i])
		return -EINVAL;
	*c = (unsigned char)s[(*i)++];
	return 0;
}

/*
 * The class at @s (just after its '['): into @t->set, *@used bytes up to
 * and with the ']'.  '^' first negates, "a-z" is a range, '\' escapes.
 * -EINVAL for a class without ']' or a character (Go's rules).
 */
static int compile_class(const char *s, struct tok *t, size_t *used)
{
	size_t i = 0, nrange = 0;
	bool neg = false;

	memset(t->set, 0, sizeof(t->set));
	if (s[i] == '^') {
		neg = true;
		i++;
	}
	for (;; nrange++) {
		unsigned char lo, hi;

		if (s[i] == ']' && nrange)
			break;
		if (class_char(s, &i, &lo))
			return -EINVAL;
		hi = lo;
		if (s[i] == '-') {
			i++;
			if (class_char(s, &i, &hi))
				return -EINVAL;
		}
		for (unsigned int c = lo; c <= hi; c++)
			set_bit(t->set, (unsigned char)c);
	}
	if (neg)
		for (size_t k = 0; k < sizeof(t->set); k++)
			t->set[k] = (uint8_t)~t->set[k];
	*used = i + 1;
	t->kind = TOK_CLASS;
	return 0;
}

/* The cleaned pattern @s as tokens in @p: 0, -ENOMEM or -EINVAL. */
static int compile(const char *s, struct pattern *p)
{
	size_t len = strlen(s), i = 0;
	int rc;

	p->n = 0;
	p->t = calloc(len + 1, sizeof(*p->t));
	if (!p->t)
		return -ENOMEM;
	while (i < len) {
		struct tok *t = &p->t[p->n];
		size_t used;

		switch (s[i]) {
		case '*':
			if (s[i + 1] != '*') {
				t->kind = TOK_STAR;
				i++;
				break;
			}
			i += 2;
			if (s[i] == '/')
				i++; /* "**" + "/": that '/' is the token's */
			t->kind = i < len ? TOK_DSTAR_DIR : TOK_DSTAR_END;
			break;
		case '?':
			t->kind = TOK_ANY;
			i++;
			break;
		case '[':
			rc = compile_class(s + i + 1, t, &used);
			if (rc)
				return rc;
			i += 1 + used;
			break;
		case '\\':
			if (i + 1 == len)
				return -EINVAL; /* Go's ErrBadPattern */
			i++;
			t->kind = TOK_LIT;
			t->c = (unsigned char)s[i++];
			break;
		default:
			t->kind = TOK_LIT;
			t->c = (unsigned char)s[i++];
			break;
		}
		p->n++;
	}
	return 0;
}

static void pattern_free(struct pattern *p)
{
	free(p->t);
	p->t = NULL;
}

void dockerignore__free(struct dockerignore *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++)
		pattern_free(&d->p[i]);
	free(d->p);
	free(d);
}

/* Trim spaces (Go's unicode.IsSpace, the ASCII ones) from both ends. */
static void trim(const char **s, size_t *len)
{
	while (*len && strchr(" \t\r\n\v\f", (*s)[0]))
		(*s)++, (*len)--;
	while (*len && strchr(" \t\r\n\v\f", (*s)[*len - 1]))
		(*len)--;
}

/* One line @s (@len bytes, line number @line) added to @d. */
static int add_line(struct dockerignore *d, const char *s, size_t len,
		    size_t line, char *err, size_t errlen)
{
	struct pattern p = { 0 };
	char *clean;
	int rc;

	/* No path holds a NUL: such a line matches nothing. */
	if (memchr(s, '\0', len))
		return 0;
	if (line == 1 && len >= 3 && !memcmp(s, "\xef\xbb\xbf", 3)) {
		s += 3; /* a UTF-8 BOM */
		len -= 3;
	}
	if (len && s[0] == '#')
		return 0;
	trim(&s, &len);
	if (!len)
		return 0;
	if (s[0] == '!') {
		p.exception = true;
		s++;
		len--;
		trim(&s, &len);
		if (!len)
			return sandbox__errf(
				err, errlen, -EINVAL,
				"line %zu: a '!' without a pattern", line);
	}
	clean = malloc(len + 2);
	if (!clean)
		return sandbox__errf(err, errlen, -ENOMEM, "out of memory");
	clean_path(s, len, clean);
	if (clean[0] == '/' && clean[1])
		memmove(clean, clean + 1, strlen(clean));
	rc = compile(clean, &p);
	free(clean);
	if (!rc && sandbox__grow((void **)&d->p, &d->cap, d->n, sizeof(p)))
		rc = -ENOMEM;
	if (rc) {
		pattern_free(&p);
		return sandbox__errf(err, errlen, rc,
				     rc == -ENOMEM ?
					     "out of memory" :
					     "line %zu: a bad pattern (a "
					     "'[' without ']', a '-' or "
					     "']' out of place, a '\\' "
					     "at the end)",
				     line);
	}
	d->p[d->n++] = p;
	d->exceptions |= p.exception;
	return 0;
}

int dockerignore__parse(const char *text, size_t len, struct dockerignore **out,
			char *err, size_t errlen)
{
	struct dockerignore *d;
	size_t i = 0, line = 0;
	int rc = 0;

	*out = NULL;
	if (len > DOCKERIGNORE_MAX)
		return sandbox__errf(err, errlen, -E2BIG, "%s: over %u bytes",
				     DOCKERIGNORE_NAME, DOCKERIGNORE_MAX);
	d = calloc(1, sizeof(*d));
	if (!d)
		return sandbox__errf(err, errlen, -ENOMEM, "out of memory");
	while (i < len && !rc) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - text) : len;

		if (++line > DOCKERIGNORE_MAX_PATS)
			rc = sandbox__errf(
				err, errlen, -E2BIG, "%s: over %u lines",
				DOCKERIGNORE_NAME, DOCKERIGNORE_MAX_PATS);
		else
			rc = add_line(d, text + i, end - i, line, err, errlen);
		i = end + 1;
	}
	if (rc) {
		dockerignore__free(d);
		return rc;
	}
	*out = d;
	return 0;
}

int dockerignore__load(const char *ctx, struct dockerignore **out, char *err,
		       size_t errlen)
{
	char path[PATH_MAX];
	struct stat st;
	char *buf;
	ssize_t n;
	int rc;

	*out = NULL;
	if (files__pathf(path, sizeof(path), "%s/" DOCKERIGNORE_NAME, ctx))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "%s: path too long", ctx);
	if (lstat(path, &st)) {
		if (errno == ENOENT)
			return 0;
		return sandbox__errf(err, errlen, -errno, "%s: %s", path,
				     strerror(errno));
	}
	if (S_ISLNK(st.st_mode))
		return sandbox__errf(err, errlen, -ELOOP,
				     "%s: a symbolic link, not a file", path);
	if (!S_ISREG(st.st_mode))
		return sandbox__errf(err, errlen, -EINVAL, "%s: not a file",
				     path);
	if ((uint64_t)st.st_size > DOCKERIGNORE_MAX)
		return sandbox__errf(err, errlen, -E2BIG, "%s: over %u bytes",
				     path, DOCKERIGNORE_MAX);
	buf = malloc(DOCKERIGNORE_MAX + 1);
	if (!buf)
		return sandbox__errf(err, errlen, -ENOMEM, "out of memory");
	n = files__read_text(path, buf, DOCKERIGNORE_MAX + 1);
	if (n < 0) {
		free(buf);
		return sandbox__errf(err, errlen, (int)n, "%s: %s", path,
				     strerror((int)-n));
	}
	rc = dockerignore__parse(buf, (size_t)n, out, err, errlen);
	free(buf);
	return rc;
}

/* ---- matching ----------------------------------------------------------- */

/*
 * The automaton's states: 2 per token (a TOK_DSTAR_DIR's second one is
 * "inside its path, before the '/' that ends it") and the final state
 * 2 * n.
 */
#define ST_IN(i)     (2 * (i))
#define ST_DIR(i)    (2 * (i) + 1)
#define ST_ACCEPT(p) (2 * (p)->n)

/* Add state @s and what it reaches without a character (its closure). */
static void add_state(const struct pattern *p, uint8_t *live, size_t s)
{
	while (!live[s]) {
		live[s] = 1;
		if (s == ST_ACCEPT(p) || (s & 1))
			return;
		switch (p->t[s / 2].kind) {
		case TOK_STAR:
		case TOK_DSTAR_END:
			s += 2; /* none of it */
			break;
		case TOK_DSTAR_DIR:
			add_state(p, live, s + 1);
			s += 2;
			break;
		default:
			return;
		}
	}
}

static bool class_has(const struct tok *t, unsigned char c)
{
	return t->set[c >> 3] & (1u << (c & 7));
}

/* Whether the whole of @s (@len bytes) matches @p. */
static bool pattern_match(const struct pattern *p, const char *s, size_t len,
			  uint8_t *cur, uint8_t *next)
{
	size_t ns = ST_ACCEPT(p) + 1;
	bool any;

	memset(cur, 0, ns);
	add_state(p, cur, 0);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		memset(next, 0, ns);
		any = false;
		for (size_t k = 0; k < p->n; k++) {
			const struct tok *t = &p->t[k];

			if (cur[ST_DIR(k)]) {
				add_state(p, next, ST_DIR(k));
				if (c == '/')
					add_state(p, next, ST_IN(k + 1));
			}
			if (!cur[ST_IN(k)])
				continue;
			switch (t->kind) {
			case TOK_LIT:
				if (c == t->c)
					add_state(p, next, ST_IN(k + 1));
				break;
			case TOK_ANY:
				if (c != '/')
					add_state(p, next, ST_IN(k + 1));
				break;
			case TOK_CLASS:
				if (class_has(t, c))
					add_state(p, next, ST_IN(k + 1));
				break;
			case TOK_STAR:
				if (c != '/')
					add_state(p, next, ST_IN(k));
				break;
			case TOK_DSTAR_END:
				add_state(p, next, ST_IN(k));
				break;
			case TOK_DSTAR_DIR:
				break; /* its ST_DIR consumes */
			}
		}
		for (size_t k = 0; k < ns && !any; k++)
			any = next[k];
		if (!any)
			return false;
		memcpy(cur, next, ns);
	}
	return cur[ST_ACCEPT(p)];
}

/* @p matches @rel (@len bytes) or one of its parent directories. */
static bool match_or_parent(const struct pattern *p, const char *rel,
			    size_t len, uint8_t *cur, uint8_t *next)
{
	if (pattern_match(p, rel, len, cur, next))
		return true;
	for (size_t i = 0; i < len; i++)
		if (rel[i] == '/' && pattern_match(p, rel, i, cur, next))
			return true;
	return false;
}

/* The state buffers for @d's longest pattern: 2 of them, or NULL. */
static uint8_t *states(const struct dockerignore *d, size_t *ns)
{
	size_t max = 0;

	for (size_t i = 0; i < d->n; i++)
		if (d->p[i].n > max)
			max = d->p[i].n;
	*ns = 2 * max + 1;
	return malloc(2 * *ns);
}

bool dockerignore__match(const struct dockerignore *d, const char *rel)
{
	bool excluded = false;
	uint8_t *buf;
	size_t ns, len;

	if (!d || !d->n)
		return false;
	while (rel[0] == '.' && rel[1] == '/')
		rel += 2;
	while (rel[0] == '/')
		rel++;
	len = strlen(rel);
	while (len && rel[len - 1] == '/')
		len--;
	if (!len || (len == 1 && rel[0] == '.'))
		return false;
	buf = states(d, &ns);
	if (!buf)
		return false; /* out of memory: leave nothing out */
	for (size_t i = 0; i < d->n; i++) {
		const struct pattern *p = &d->p[i];

		/* Only a line that could change the answer is tried. */
		if (p->exception != excluded)
			continue;
		if (match_or_parent(p, rel, len, buf, buf + ns))
			excluded = !p->exception;
	}
	free(buf);
	return excluded;
}

bool dockerignore__match_under(const struct dockerignore *d, const char *ctx,
			       const char *path)
{
	size_t cl = strlen(ctx), w = 0;
	const char *r;
	char *rel;
	bool m;

	if (!d || !d->n)
		return false;
	while (cl > 1 && ctx[cl - 1] == '/')
		cl--;
	if (strncmp(path, ctx, cl) || (path[cl] && path[cl] != '/'))
		return false;
	rel = malloc(strlen(path) + 1);
	if (!rel)
		return false;
	/* "./" and '/' runs folded: glob keeps them as the pattern had. */
	for (r = path + cl; *r;) {
		if (*r == '/') {
			r++;
			continue;
		}
		if (r[0] == '.' && (r[1] == '/' || !r[1])) {
			r++;
			continue;
		}
		if (w)
			rel[w++] = '/';
		while (*r && *r != '/')
			rel[w++] = *r++;
	}
	rel[w] = '\0';
	m = dockerignore__match(d, rel);
	free(rel);
	return m;
}

bool dockerignore__skip_dir(const struct dockerignore *d, const char *rel)
{
	return d && !d->exceptions && dockerignore__match(d, rel);
}

/* ---- the list for tar --------------------------------------------------- */

struct list_walk {
	const struct dockerignore *d;
	int fd;
	char rel[PATH_MAX]; /* relative to the context */
	char path[PATH_MAX]; /* "./..." relative to the copied directory */
	size_t base; /* path's length at the copied directory */
	bool emitted[WALK_DEPTH_MAX + 1]; /* the ancestor at each depth */
	size_t ends[WALK_DEPTH_MAX + 1]; /* path's length at each depth */
	char *err;
	size_t errlen;
};

/* "." and the path at depth @depth under the copied one, to the list. */
static int emit(struct list_walk *w, int depth)
{
	char save = w->path[w->ends[depth]];
	int rc;

	w->path[w->ends[depth]] = '\0';
	rc = files__write_all(w->fd, ".", 1);
	if (!rc)
		rc = files__write_all(w->fd, w->path + w->base,
				      w->ends[depth] - w->base + 1);
	w->path[w->ends[depth]] = save;
	w->emitted[depth] = true;
	return rc;
}

/* The entries of the directory at w->path (depth @depth). */
static int list_dir(struct list_walk *w, int depth)
{
	size_t plen = strlen(w->path), rlen = strlen(w->rel);
	struct dirent *e;
	DIR *dir;
	int rc = 0;

	if (depth >= WALK_DEPTH_MAX)
		return sandbox__errf(w->err, w->errlen, -ELOOP,
				     "%s: directories over %d deep", w->path,
				     WALK_DEPTH_MAX);
	dir = opendir(w->path);
	if (!dir)
		return sandbox__errf(w->err, w->errlen, -errno, "%s: %s",
				     w->path, strerror(errno));
	while (!rc && (errno = 0, e = readdir(dir))) {
		struct stat st;
		bool out;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (files__pathf(w->path + plen, sizeof(w->path) - plen, "/%s",
				 e->d_name) ||
		    files__pathf(w->rel + rlen, sizeof(w->rel) - rlen, "%s%s",
				 rlen ? "/" : "", e->d_name)) {
			rc = sandbox__errf(w->err, w->errlen, -ENAMETOOLONG,
					   "%s/%s: path too long", w->path,
					   e->d_name);
			break;
		}
		w->ends[depth + 1] = strlen(w->path);
		w->emitted[depth + 1] = false;
		if (lstat(w->path, &st)) {
			rc = sandbox__errf(w->err, w->errlen, -errno, "%s: %s",
					   w->path, strerror(errno));
			break;
		}
		out = dockerignore__match(w->d, w->rel);
		if (!out) {
			/* Its directories first, as tar wants them. */
			for (int k = 1; k <= depth && !rc; k++)
				if (!w->emitted[k])
					rc = emit(w, k);
			if (!rc)
				rc = emit(w, depth + 1);
		}
		if (!rc && S_ISDIR(st.st_mode) &&
		    !(out && dockerignore__skip_dir(w->d, w->rel)))
			rc = list_dir(w, depth + 1);
		w->path[plen] = '\0';
		w->rel[rlen] = '\0';
	}
	if (!rc && errno)
		rc = sandbox__errf(w->err, w->errlen, -errno, "%s: %s", w->path,
				   strerror(errno));
	closedir(dir);
	return rc;
}

int dockerignore__tar_list(const struct dockerignore *d, const char *ctx,
			   const char *dir, char *err, size_t errlen)
{
	size_t cl = strlen(ctx);
	struct list_walk *w;
	const char *r;
	int rc, fd;

	while (cl > 1 && ctx[cl - 1] == '/')
		cl--;
	if (strncmp(dir, ctx, cl) || (dir[cl] && dir[cl] != '/'))
		return sandbox__errf(err, errlen, -EINVAL,
				     "%s is not in the build context %s", dir,
				     ctx);
	w = calloc(1, sizeof(*w));
	if (!w)
		return sandbox__errf(err, errlen, -ENOMEM, "out of memory");
	fd = memfd_create("dockerignore", MFD_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		free(w);
		return sandbox__errf(err, errlen, rc, "memfd_create: %s",
				     strerror(-rc));
	}
	w->d = d;
	w->fd = fd;
	w->err = err;
	w->errlen = errlen;
	/* The copied directory's path relative to the context, folded. */
	for (r = dir + cl; *r;) {
		size_t n = strcspn(r, "/");

		if (!n || (n == 1 && r[0] == '.')) {
			r += n + (r[n] == '/');
			continue;
		}
		if (strlen(w->rel) + n + 2 > sizeof(w->rel)) {
			rc = sandbox__errf(err, errlen, -ENAMETOOLONG,
					   "%s: path too long", dir);
			goto out;
		}
		if (w->rel[0])
			strcat(w->rel, "/");
		strncat(w->rel, r, n);
		r += n + (r[n] == '/');
	}
	if (files__pathf(w->path, sizeof(w->path), "%s", dir)) {
		rc = sandbox__errf(err, errlen, -ENAMETOOLONG,
				   "%s: path too long", dir);
		goto out;
	}
	/* The walk opens w->path; the list names entries from ".". */
	rc = files__write_all(fd, ".", 2);
	if (!rc) {
		w->base = strlen(w->path);
		w->ends[0] = w->base;
		w->emitted[0] = true;
		rc = list_dir(w, 0);
	}
out:
	if (!rc && lseek(fd, 0, SEEK_SET) < 0)
		rc = sandbox__errf(err, errlen, -errno, "lseek: %s",
				   strerror(errno));
	free(w);
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}
