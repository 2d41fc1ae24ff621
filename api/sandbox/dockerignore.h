/* SPDX-License-Identifier: Apache-2.0 */
/*
 * .dockerignore: the files of a Dockerfile's build context that COPY and
 * ADD never see, and that a COPY's files digest leaves out (issue 22).
 *
 * Spec: Docker's "Dockerfile reference", section ".dockerignore file",
 * as Docker's pattern matcher implements it: one pattern a line; a line
 * whose first character is '#' is a comment; each line is trimmed of
 * spaces, cleaned as a path (".", "..", "//" and a trailing '/' folded
 * away) and a leading '/' dropped; '*' is any run of characters but '/',
 * '?' one character but '/', "[...]" a class ("[^...]" its complement,
 * a-z ranges), '\' takes the next character as it is, and "**" any
 * number of directories, none included ("**" at the end: anything).  A
 * pattern matches the whole path relative to the context, or one of its
 * parent directories (so "build" excludes build/a/b).  A line starting
 * with '!' is an exception: it puts back what earlier lines excluded.
 * The last pattern that matches a path decides.
 *
 * dockerignore__parse() and the matchers are pure (fuzzed); _load() and
 * _tar_list() read files.  Functions taking @err/@errlen leave one line
 * there on failure (see sandbox__errf); all return 0 or a negative errno
 * unless said otherwise.
 */
#ifndef EMBER_API_DOCKERIGNORE_H
#define EMBER_API_DOCKERIGNORE_H

#include <stdbool.h>
#include <stddef.h>

#define DOCKERIGNORE_NAME     ".dockerignore"
#define DOCKERIGNORE_MAX      (1u << 20) /* bytes of the file, at most */
#define DOCKERIGNORE_MAX_PATS 65536 /* patterns, at most */

/* The parsed patterns (opaque): dockerignore__free() releases them. */
struct dockerignore;

/*
 * dockerignore__parse() - the patterns of the .dockerignore text @text
 * (@len bytes; NUL bytes end a line's pattern) into a new *@out.  An
 * empty or comment-only text gives a set that matches nothing.  -ENOMEM,
 * -E2BIG (over DOCKERIGNORE_MAX bytes or DOCKERIGNORE_MAX_PATS lines),
 * -EINVAL for an unclosed '[' ("line N: ..."); then *@out is NULL.
 */
int dockerignore__parse(const char *text, size_t len, struct dockerignore **out,
			char *err, size_t errlen);

/*
 * dockerignore__load() - <@ctx>/.dockerignore parsed into *@out; NULL
 * (no error) when the context has none.  A symbolic link is refused
 * (-ELOOP), as is a file over DOCKERIGNORE_MAX bytes (-E2BIG).
 */
int dockerignore__load(const char *ctx, struct dockerignore **out, char *err,
		       size_t errlen);

/* Free @d (NULL: nothing). */
void dockerignore__free(struct dockerignore *d);

/*
 * dockerignore__match() - whether @d excludes @rel, a path relative to
 * the context ("a/b", no leading "./" or '/'; "." and empty are the
 * context itself, never excluded).  Pure; @d NULL excludes nothing.
 */
bool dockerignore__match(const struct dockerignore *d, const char *rel);

/*
 * dockerignore__match_under() - dockerignore__match() for @path, a path
 * that starts with the context's path @ctx as the caller spelt it (glob's
 * matches of "@ctx/PATTERN"): the part after @ctx and its '/' is the
 * relative path, with "./" and repeated '/' folded.  A @path outside
 * @ctx is not excluded.  Pure.
 */
bool dockerignore__match_under(const struct dockerignore *d, const char *ctx,
			       const char *path);

/*
 * dockerignore__skip_dir() - whether a walk may leave out the whole
 * directory @rel: @d excludes it and has no exception ('!') that could
 * put back something under it.  Pure.
 */
bool dockerignore__skip_dir(const struct dockerignore *d, const char *rel);

/*
 * dockerignore__tar_list() - for `tar -C @dir --no-recursion --null -T -`:
 * a new fd (a memfd, at offset 0, O_CLOEXEC; the caller closes it) holding
 * ".", then every entry under @dir (not following links) that @d does not
 * exclude, each relative to @dir, NUL-terminated, parents before their
 * entries.  @dir is @ctx or under it (as spelt from @ctx); the paths
 * matched are relative to @ctx.  The fd, or a negative errno with @err.
 */
int dockerignore__tar_list(const struct dockerignore *d, const char *ctx,
			   const char *dir, char *err, size_t errlen);

#endif /* EMBER_API_DOCKERIGNORE_H */
