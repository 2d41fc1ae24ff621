/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Dockerfiles for `emberctl template build --dockerfile` (issue 22): the
 * text parsed into a list of steps a builder runs in order, a cache key
 * per step, and the digest of a COPY's files.  The parser is pure (the
 * text, the build args and the base image's defaults come from the
 * caller); only dockerfile__copy_digest() reads files.
 *
 * Spec: Docker's "Dockerfile reference" (docs.docker.com/reference/
 * dockerfile), its sections named below as [Section].
 *
 * Supported:
 *   [Parser directives] `# escape=` (\ or `); `# syntax=` ignored with a
 *   note; `# check=` ignored.  [Format] comments, blank lines, line
 *   continuations (the escape character at the end of a line, comment
 *   and blank lines inside one skipped), a UTF-8 BOM, CRLF ends.
 *   FROM SRC [AS name]: SRC as image__parse_src() takes it, or
 *   "template:NAME" for an ember template; --platform=linux/amd64 only;
 *   ARGs declared before it substitute in it [Understand how ARG and
 *   FROM interact].
 *   RUN, CMD, ENTRYPOINT in exec form (a JSON array of strings) or shell
 *   form (the SHELL in effect, default /bin/sh -c, plus the text, which
 *   is not substituted: the shell does that) [Shell and exec form].
 *   SHELL (exec form only).
 *   ENV K=V K2="v 2" ... and the legacy ENV K V; ARG K[=default] ...,
 *   --build-arg values overriding defaults, ENV winning over an ARG of
 *   the same name [Using ARG variables].
 *   [Environment replacement] $VAR, ${VAR}, ${VAR:-word}, ${VAR:+word},
 *   quotes and the escape character, in FROM, ENV, ARG, COPY, ADD,
 *   WORKDIR and USER (and COPY/ADD's --chown and --chmod).
 *   COPY/ADD src... dest and the JSON form, --chown=, --chmod= (octal),
 *   sources kept inside the context lexically; ADD of a local archive is
 *   marked (Docker extracts it).  --link is accepted and ignored (a note).
 *   WORKDIR (relative to the one before), USER.
 * Ignored, each with a note: LABEL, EXPOSE, VOLUME, STOPSIGNAL,
 *   HEALTHCHECK, MAINTAINER (run-time metadata a template does not keep).
 * Refused (-EINVAL, one line naming the line): a second FROM and COPY
 *   --from (multi-stage builds), FROM scratch, ONBUILD, ADD or COPY of a
 *   URL, RUN --mount/--network/--security/--device, COPY --parents,
 *   --exclude, ADD --checksum/--keep-git-dir, heredocs (<<EOF), an
 *   unknown instruction or flag, a source escaping the context.
 *
 * Every function returns 0 or a negative errno; those taking @err/@errlen
 * leave one line there on failure ("line N: ..."; see sandbox__errf).
 */
#ifndef EMBER_API_DOCKERFILE_H
#define EMBER_API_DOCKERFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Limits on what the parser accepts (-E2BIG beyond them). */
#define DOCKERFILE_MAX_BYTES (1u << 20) /* the text */
#define DOCKERFILE_MAX_STEPS 1000
#define DOCKERFILE_MAX_VARS  1024 /* ENV (with the base's) and ARG names */
#define DOCKERFILE_MAX_VALUE 65536 /* one word after substitution */

enum dockerfile_kind {
	DOCKERFILE_RUN = 1, /* run argv in the guest */
	DOCKERFILE_COPY, /* copy src[] from the context to dest (ADD too) */
	DOCKERFILE_ENV, /* metadata: set[] into the environment */
	DOCKERFILE_ARG, /* metadata: set[] into the build's variables */
	DOCKERFILE_WORKDIR, /* mkdir -p workdir (Docker creates it) */
	DOCKERFILE_USER, /* metadata: user */
	DOCKERFILE_CMD, /* metadata: the image's Cmd is argv */
	DOCKERFILE_ENTRYPOINT, /* metadata: the image's Entrypoint is argv */
	DOCKERFILE_SHELL, /* metadata: argv is the shell of later shell forms */
};

/* The instruction's name for @k ("RUN", ...; "COPY" for ADD too). */
const char *dockerfile__kind_name(enum dockerfile_kind k);

/*
 * One step, executed in order.  Every string and array is owned by the
 * struct dockerfile holding the step (freed by dockerfile__free()).
 * "In effect" values are those after the step has applied, so that a
 * step's key (dockerfile__step_key) covers everything it depends on.
 */
struct dockerfile_step {
	enum dockerfile_kind kind;
	int line; /* 1-based line where the instruction starts */
	/*
	 * RUN, CMD, ENTRYPOINT, SHELL: the argv to run (argc of them; 0 for
	 * CMD [] or ENTRYPOINT []).  In shell form it is the SHELL in effect
	 * followed by the text as written (its last element).
	 */
	char **argv;
	size_t argc;
	bool shell_form;
	/* ENV, ARG: what this step sets, "K=V" (an ARG with no value: "K"). */
	char **set;
	size_t n_set;
	/*
	 * The environment in effect, "K=V": the base image's Env, then ENV
	 * values, then ARG values not hidden by an ENV of the same name (a
	 * RUN sees ARGs, the image keeps only ENVs: see dockerfile.env).
	 */
	char **env;
	size_t n_env;
	const char *workdir; /* absolute, clean; never NULL */
	const char *user; /* NULL: the base image's default */
	/*
	 * COPY and ADD: src[] relative to the context directory, clean, "."
	 * for the whole context (a leading '/' is the context's root, as in
	 * Docker), glob characters kept; dest absolute, clean, ending in '/'
	 * when it names a directory; chown and chmod as given (NULL: not
	 * given; chmod is 1 to 4 octal digits).
	 */
	char **src;
	size_t n_src;
	const char *dest;
	const char *chown, *chmod;
	bool add; /* ADD: local tar archives are to be extracted */
	bool add_archive; /* ADD with a source named like a tar archive */
};

/*
 * What the parser takes besides the text.  The base image's defaults
 * matter to substitution (ENV PATH=$PATH:/x) and to relative WORKDIRs: a
 * builder parses once without them to learn FROM, resolves the base,
 * then parses again with them (parsing is cheap and pure).
 */
struct dockerfile_opts {
	const char *const *build_args; /* "K=V", n_build_args of them */
	size_t n_build_args;
	const char *const *base_env; /* the base's Env, "K=V" */
	size_t n_base_env;
	const char *base_workdir; /* absolute; NULL or "": "/" */
	const char *base_user; /* NULL: none */
};

/* A parsed Dockerfile; everything in it is owned by it. */
struct dockerfile {
	/* FROM: the SRC (after substitution), or NAME for "template:NAME". */
	char *from;
	bool from_template;
	int from_line;
	struct dockerfile_step *steps; /* n_steps, in order */
	size_t n_steps;
	/* Lines for the user about what was ignored, "line N: ..." */
	char **notes;
	size_t n_notes;
	/*
	 * The image's defaults after the last step: its Env (base and ENV,
	 * no ARGs), WorkingDir, User (NULL: the base's) and the last CMD and
	 * ENTRYPOINT steps (NULL: none; an ENTRYPOINT without a later CMD
	 * clears the base's Cmd, as Docker does).
	 */
	char **env;
	size_t n_env;
	const char *workdir, *user;
	const struct dockerfile_step *cmd, *entrypoint;
	void *mem; /* every allocation, for dockerfile__free() */
};

/*
 * dockerfile__parse() - parse the Dockerfile @text (@len bytes, not
 * necessarily NUL-terminated, at most DOCKERFILE_MAX_BYTES) with @opts
 * (NULL: no build args, no base defaults) into @df (zeroed first; free it
 * with dockerfile__free() even on failure).  -EINVAL with "line N: why"
 * in @err for anything refused or malformed ("no FROM" when there is
 * none; "line N: multi-stage builds are not supported (a second FROM)"),
 * -E2BIG past a DOCKERFILE_MAX_* limit, -ENOMEM.
 */
int dockerfile__parse(const char *text, size_t len,
		      const struct dockerfile_opts *opts, struct dockerfile *df,
		      char *err, size_t errlen);

/* Free what @df holds and zero it (@df itself is the caller's). */
void dockerfile__free(struct dockerfile *df);

/*
 * dockerfile__step_key() - the cache key of @s: lowercase hex (64 digits
 * and a NUL in @out) of the SHA-256 of @prev_key (the key of the step
 * before, or the base image's digest for the first step; NULL is ""), a
 * canonical encoding of @s (kind, argv and form, what it sets, the
 * environment, workdir and user in effect, COPY's sources, destination,
 * chown, chmod and ADD flag; not its line, so comments do not matter)
 * and @files_digest (32 bytes from dockerfile__copy_digest() for a COPY;
 * NULL: none).  Pure.  0, or -ENOMEM.
 */
int dockerfile__step_key(const struct dockerfile_step *s, const char *prev_key,
			 const uint8_t *files_digest, char out[65]);

/*
 * dockerfile__copy_digest() - the SHA-256 (32 bytes in @out) of what the
 * COPY or ADD step @s would copy from the context directory @ctx: for
 * each source in order (a glob's matches sorted), its name, then every
 * file below it in sorted order: its path relative to the source, its
 * type, its permission bits and its content (a symbolic link: its
 * target).  A source that is itself a link is followed, and must resolve
 * inside @ctx; a link below it is hashed, not followed, and must not
 * point outside @ctx (an absolute target or one climbing out is
 * refused).  Ownership and times are not hashed.  -EINVAL (not a COPY,
 * a link escaping, a device, fifo or socket), -ENOENT (a source or a
 * glob matching nothing), -ELOOP (deeper than 64 levels), or the failing
 * call's negative errno, each with "line N: why" in @err.
 */
int dockerfile__copy_digest(const char *ctx, const struct dockerfile_step *s,
			    uint8_t out[32], char *err, size_t errlen);

#endif /* EMBER_API_DOCKERFILE_H */
