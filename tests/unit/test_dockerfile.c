// SPDX-License-Identifier: Apache-2.0
/*
 * The Dockerfile parser, its steps' cache keys and a COPY's files digest
 * (api/sandbox/dockerfile.h): every instruction, continuations and the
 * escape directive, exec and shell forms, substitution, errors naming
 * their line, multi-stage refusal, key stability.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../api/sandbox/dockerfile.h"

static char err[512];

static int parse_o(const char *text, const struct dockerfile_opts *o,
		   struct dockerfile *df)
{
	err[0] = '\0';
	return dockerfile__parse(text, strlen(text), o, df, err, sizeof(err));
}

/* Parse @text, which must succeed. */
static void ok(const char *text, const struct dockerfile_opts *o,
	       struct dockerfile *df)
{
	int rc = parse_o(text, o, df);

	if (rc)
		fail_msg("parse failed (%d): %s\n%s", rc, err, text);
}

/* Parse @text, which must fail with @rc and a message holding @want. */
static void bad(const char *text, int rc, const char *want)
{
	struct dockerfile df;

	assert_int_equal(parse_o(text, NULL, &df), rc);
	if (!strstr(err, want))
		fail_msg("error \"%s\" lacks \"%s\"", err, want);
	dockerfile__free(&df);
}

/* The environment entry of @s for @name ("K=V"), or NULL. */
static const char *env_of(char **env, size_t n, const char *name)
{
	size_t l = strlen(name);

	for (size_t i = 0; i < n; i++)
		if (!strncmp(env[i], name, l) && env[i][l] == '=')
			return env[i] + l + 1;
	return NULL;
}

static bool has_note(const struct dockerfile *df, const char *want)
{
	for (size_t i = 0; i < df->n_notes; i++)
		if (strstr(df->notes[i], want))
			return true;
	return false;
}

/* ---- FROM and the basics ------------------------------------------------ */

static void test_minimal(void **state)
{
	struct dockerfile df;
	const struct dockerfile_step *s;

	(void)state;
	ok("FROM img.tar\nRUN echo hi\n", NULL, &df);
	assert_string_equal(df.from, "img.tar");
	assert_false(df.from_template);
	assert_int_equal(df.from_line, 1);
	assert_int_equal(df.n_steps, 1);
	s = &df.steps[0];
	assert_int_equal(s->kind, DOCKERFILE_RUN);
	assert_int_equal(s->line, 2);
	assert_true(s->shell_form);
	assert_int_equal(s->argc, 3);
	assert_string_equal(s->argv[0], "/bin/sh");
	assert_string_equal(s->argv[1], "-c");
	assert_string_equal(s->argv[2], "echo hi");
	assert_null(s->argv[3]);
	assert_string_equal(s->workdir, "/");
	assert_null(s->user);
	assert_int_equal(s->n_env, 0);
	assert_string_equal(df.workdir, "/");
	assert_null(df.cmd);
	assert_null(df.entrypoint);
	dockerfile__free(&df);
	assert_null(df.steps);
	dockerfile__free(&df); /* twice is harmless */
}

static void test_from(void **state)
{
	struct dockerfile df;

	(void)state;
	ok("from template:py AS base\n", NULL, &df);
	assert_true(df.from_template);
	assert_string_equal(df.from, "py");
	dockerfile__free(&df);
	ok("FROM --platform=linux/amd64 oci:/x/layout:v1\n", NULL, &df);
	assert_string_equal(df.from, "oci:/x/layout:v1");
	dockerfile__free(&df);
	bad("FROM --platform=linux/arm64 a\n", -EINVAL,
	    "line 1: FROM --platform=linux/arm64: ember builds linux/amd64 only");
	bad("FROM scratch\n", -EINVAL, "line 1: FROM scratch is not supported");
	bad("FROM\n", -EINVAL, "line 1: FROM takes SRC");
	bad("FROM a b\n", -EINVAL, "line 1: FROM takes SRC");
	bad("FROM oci:\n", -EINVAL, "line 1: FROM oci:: not an image SRC");
	bad("FROM template:\n", -EINVAL, "not a template name");
	bad("FROM $NOPE\n", -EINVAL, "empty after substitution");
	bad("", -EINVAL, "no FROM");
	bad("# only a comment\n\n", -EINVAL, "no FROM");
	bad("ARG X=1\n", -EINVAL, "no FROM");
	bad("RUN x\nFROM a\n", -EINVAL, "line 1: RUN before FROM");
	bad("LABEL a=b\nFROM a\n", -EINVAL, "line 1: LABEL before FROM");
	bad("FROM a\nRUN x\nFROM b\n", -EINVAL,
	    "line 3: multi-stage builds are not supported (a second FROM at line 3)");
	bad("FROM a\nCOPY --from=build /x /y\n", -EINVAL,
	    "line 2: multi-stage builds are not supported (COPY --from)");
	bad("FROM a\nFROM --platform=x b\n", -EINVAL, "line 2: multi-stage");
	bad("FROM --bogus a\n", -EINVAL, "line 1: FROM: unknown flag --bogus");
}

/* ---- [Format], [Parser directives] --------------------------------------- */

static void test_continuations(void **state)
{
	struct dockerfile df;

	(void)state;
	ok("\xef\xbb\xbf# top\r\n"
	   "FROM a\r\n"
	   "\r\n"
	   "RUN echo one \\\r\n"
	   "  # a comment inside\n"
	   "\n"
	   "   two \\   \n"
	   "three\n"
	   "  run   after   \n"
	   "RUN end\\\n",
	   NULL, &df);
	assert_int_equal(df.n_steps, 3);
	assert_int_equal(df.steps[0].line, 4);
	assert_string_equal(df.steps[0].argv[2], "echo one    two three");
	assert_int_equal(df.steps[1].line, 9);
	assert_string_equal(df.steps[1].argv[2], "after");
	/* A continuation at the end of the text just ends it. */
	assert_int_equal(df.steps[2].line, 10);
	assert_string_equal(df.steps[2].argv[2], "end");
	dockerfile__free(&df);
}

static void test_escape_directive(void **state)
{
	struct dockerfile df;

	(void)state;
	ok("# syntax=docker/dockerfile:1\n"
	   "#escape = `\n"
	   "FROM a\n"
	   "RUN dir c:\\ `\n"
	   "  && x\n"
	   "COPY a\\b `\n"
	   "  c:\\d\\\n",
	   NULL, &df);
	assert_true(
		has_note(&df, "line 1: # syntax=docker/dockerfile:1 ignored"));
	assert_int_equal(df.n_steps, 2);
	assert_string_equal(df.steps[0].argv[2], "dir c:\\   && x");
	/* With `, a backslash is an ordinary character (Windows paths). */
	assert_string_equal(df.steps[1].src[0], "a\\b");
	assert_string_equal(df.steps[1].dest, "/c:\\d\\");
	dockerfile__free(&df);

	/* After an instruction, a comment, or a blank line: a comment. */
	ok("FROM a\n# escape=`\nRUN x `\nRUN y\n", NULL, &df);
	assert_int_equal(df.n_steps, 2);
	assert_string_equal(df.steps[0].argv[2], "x `");
	dockerfile__free(&df);
	ok("# a comment\n# escape=`\nFROM a\nRUN x \\\n y\n", NULL, &df);
	assert_int_equal(df.n_steps, 1);
	assert_string_equal(df.steps[0].argv[2], "x  y");
	dockerfile__free(&df);
	/* Unknown directives are comments (and end the directives). */
	ok("# foo=bar\n# escape=`\nFROM a\nRUN x \\\n y\n", NULL, &df);
	assert_string_equal(df.steps[0].argv[2], "x  y");
	dockerfile__free(&df);
	ok("# check=skip=all\nFROM a\n", NULL, &df);
	assert_int_equal(df.n_notes, 0);
	dockerfile__free(&df);

	bad("# escape=x\nFROM a\n", -EINVAL,
	    "line 1: escape=x: the escape character is \\ or `");
	bad("# escape=\\\n# escape=`\nFROM a\n", -EINVAL,
	    "line 2: a second escape directive");
}

/* ---- [Shell and exec form] ------------------------------------------------ */

static void test_forms(void **state)
{
	struct dockerfile df;
	const struct dockerfile_step *s;

	(void)state;
	/* Flags are parsed on every instruction, as Docker does. */
	assert_int_equal(parse_o("FROM a\nCMD --x\n", NULL, &df), -EINVAL);
	dockerfile__free(&df);
	ok("FROM a\n"
	   "RUN [\"/bin/echo\", \"$HOME\", \"a b\"]\n"
	   "RUN [not json\n"
	   "RUN [\"x\", 1]\n"
	   "CMD []\n"
	   "SHELL [\"/bin/bash\", \"-o\", \"pipefail\", \"-c\"]\n"
	   "RUN echo $X | cat\n"
	   "ENTRYPOINT [\"/app\"]\n"
	   "CMD serve  --port 80\n",
	   NULL, &df);
	assert_int_equal(df.n_steps, 8);
	s = &df.steps[0];
	assert_false(s->shell_form);
	assert_int_equal(s->argc, 3);
	assert_string_equal(s->argv[1], "$HOME"); /* never substituted */
	assert_string_equal(s->argv[2], "a b");
	assert_null(s->argv[3]);
	/* Not a JSON array of strings: the shell form, as Docker does. */
	assert_true(df.steps[1].shell_form);
	assert_string_equal(df.steps[1].argv[2], "[not json");
	assert_true(df.steps[2].shell_form);
	assert_string_equal(df.steps[2].argv[2], "[\"x\", 1]");
	s = &df.steps[3];
	assert_int_equal(s->kind, DOCKERFILE_CMD);
	assert_false(s->shell_form);
	assert_int_equal(s->argc, 0);
	assert_int_equal(df.steps[4].kind, DOCKERFILE_SHELL);
	s = &df.steps[5];
	assert_true(s->shell_form);
	assert_int_equal(s->argc, 5);
	assert_string_equal(s->argv[0], "/bin/bash");
	assert_string_equal(s->argv[3], "-c");
	assert_string_equal(s->argv[4], "echo $X | cat");
	assert_ptr_equal(df.entrypoint, &df.steps[6]);
	assert_ptr_equal(df.cmd, &df.steps[7]);
	assert_int_equal(df.cmd->argc, 5);
	assert_string_equal(df.cmd->argv[4], "serve  --port 80");
	dockerfile__free(&df);

	/* An ENTRYPOINT after the last CMD clears it. */
	ok("FROM a\nCMD [\"x\"]\nENTRYPOINT [\"y\"]\n", NULL, &df);
	assert_null(df.cmd);
	assert_string_equal(df.entrypoint->argv[0], "y");
	dockerfile__free(&df);

	bad("FROM a\nRUN []\n", -EINVAL, "line 2: RUN [] has no command");
	bad("FROM a\nRUN\n", -EINVAL, "line 2: RUN needs an argument");
	bad("FROM a\nCMD   \n", -EINVAL, "line 2: CMD needs an argument");
	bad("FROM a\nSHELL /bin/bash -c\n", -EINVAL,
	    "line 2: SHELL needs the exec form");
	bad("FROM a\nSHELL []\n", -EINVAL, "line 2: SHELL [] has no command");
	bad("FROM a\nRUN --mount=type=cache,target=/x make\n", -EINVAL,
	    "line 2: RUN --mount is not supported");
	bad("FROM a\nRUN --network=none x\n", -EINVAL,
	    "line 2: RUN --network is not supported");
	bad("FROM a\nRUN --weird x\n", -EINVAL,
	    "line 2: RUN: unknown flag --weird");
	bad("FROM a\nRUN <<EOF\necho\nEOF\n", -EINVAL, "line 2: heredocs");
}

/* ---- ENV, ARG and [Environment replacement] --------------------------- */

static void test_env(void **state)
{
	static const char *const base[] = { "PATH=/usr/bin:/bin",
					    "HOME=/root" };
	struct dockerfile_opts o = { .base_env = base, .n_base_env = 2 };
	struct dockerfile df;
	const struct dockerfile_step *s;

	(void)state;
	ok("FROM a\n"
	   "ENV PATH=$PATH:/opt/bin K2=\"v 2\" K3='$HOME' K4=\\$HOME\n"
	   "ENV LEGACY  value with  ${HOME}  \n"
	   "ENV abc=hello\n"
	   "ENV abc=bye def=$abc\n"
	   "ENV D1=${nope:-dflt} D2=${HOME:-dflt} D3=${HOME:+set} D4=${nope:+set}x\n"
	   "ENV Q=\"a \\\"q\\\" $HOME\" E=${nope:-${HOME}/x}\n"
	   "RUN echo $PATH\n",
	   &o, &df);
	assert_int_equal(df.n_steps, 7);
	s = &df.steps[0];
	assert_int_equal(s->kind, DOCKERFILE_ENV);
	assert_int_equal(s->n_set, 4);
	assert_string_equal(s->set[0], "PATH=/usr/bin:/bin:/opt/bin");
	assert_string_equal(s->set[1], "K2=v 2");
	assert_string_equal(s->set[2], "K3=$HOME");
	assert_string_equal(s->set[3], "K4=$HOME");
	assert_string_equal(df.steps[1].set[0], "LEGACY=value with  /root");
	/* One ENV's values come from the environment before it. */
	assert_string_equal(df.steps[3].set[0], "abc=bye");
	assert_string_equal(df.steps[3].set[1], "def=hello");
	s = &df.steps[4];
	assert_string_equal(s->set[0], "D1=dflt");
	assert_string_equal(s->set[1], "D2=/root");
	assert_string_equal(s->set[2], "D3=set");
	assert_string_equal(s->set[3], "D4=x");
	assert_string_equal(df.steps[5].set[0], "Q=a \"q\" /root");
	assert_string_equal(df.steps[5].set[1], "E=/root/x");
	s = &df.steps[6];
	assert_string_equal(s->argv[2], "echo $PATH");
	/* The base's entries stay in place, overridden where set. */
	assert_string_equal(s->env[0], "PATH=/usr/bin:/bin:/opt/bin");
	assert_string_equal(s->env[1], "HOME=/root");
	assert_string_equal(env_of(s->env, s->n_env, "abc"), "bye");
	assert_int_equal(df.n_env, s->n_env);
	dockerfile__free(&df);

	bad("FROM a\nENV\n", -EINVAL, "line 2: ENV needs a name and a value");
	bad("FROM a\nENV K\n", -EINVAL, "line 2: ENV K needs a value");
	bad("FROM a\nENV K=1 =2\n", -EINVAL, "line 2: ENV =2: not K=V");
	bad("FROM a\nENV K=1 J\n", -EINVAL, "line 2: ENV J: not K=V");
	bad("FROM a\nENV K=\"open\n", -EINVAL,
	    "line 2: a \" without its closing \"");
	bad("FROM a\nENV K='open\n", -EINVAL,
	    "line 2: a ' without its closing '");
	bad("FROM a\n\nENV K=${X\n", -EINVAL, "line 3: bad substitution");
	bad("FROM a\nENV K=${X:-word\n", -EINVAL,
	    "line 2: a ${ without its closing }");
	bad("FROM a\nENV K=${X#y}\n", -EINVAL,
	    "line 2: unsupported substitution ${X#...}");
	bad("FROM a\nENV K=${}\n", -EINVAL, "line 2: bad substitution");
	/* Doubling a value each line: refused past the limit, not grown. */
	{
		char text[4096] = "FROM a\nENV A=0123456789abcdef\n";

		for (int i = 0; i < 14; i++)
			strcat(text, "ENV A=$A$A\n");
		bad(text, -E2BIG, "line 15: a value over 65536 bytes");
	}
}

static void test_arg(void **state)
{
	static const char *const args[] = { "V=2.0", "B=from-cli", "UNUSED=1" };
	struct dockerfile_opts o = { .build_args = args, .n_build_args = 3 };
	struct dockerfile df;
	const struct dockerfile_step *s;

	(void)state;
	ok("ARG V=1.0\n"
	   "ARG IMG=img\n"
	   "FROM ${IMG}-${V}.tar\n"
	   "RUN echo $IMG\n"
	   "ARG V\n"
	   "ARG IMG\n"
	   "ARG A=a B=b C\n"
	   "ENV A=env\n"
	   "ARG A=later\n"
	   "RUN make\n"
	   "ENV X=$B-$C-$A\n",
	   &o, &df);
	assert_string_equal(df.from, "img-2.0.tar");
	assert_true(has_note(&df, "line 3: --build-arg UNUSED not used"));
	assert_false(has_note(&df, "--build-arg V"));
	/* ARGs before FROM are not in scope after it until declared. */
	s = &df.steps[0];
	assert_int_equal(s->n_env, 0);
	s = &df.steps[1];
	assert_int_equal(s->kind, DOCKERFILE_ARG);
	assert_string_equal(s->set[0], "V=2.0");
	assert_string_equal(df.steps[2].set[0], "IMG=img");
	s = &df.steps[3];
	assert_int_equal(s->n_set, 3);
	assert_string_equal(s->set[0], "A=a");
	assert_string_equal(s->set[1], "B=from-cli");
	assert_string_equal(s->set[2], "C"); /* declared, no value */
	s = &df.steps[6];
	assert_int_equal(s->kind, DOCKERFILE_RUN);
	/* ENV wins over an ARG of the same name; ARGs are in RUN's env. */
	assert_string_equal(env_of(s->env, s->n_env, "A"), "env");
	assert_string_equal(env_of(s->env, s->n_env, "V"), "2.0");
	assert_string_equal(env_of(s->env, s->n_env, "B"), "from-cli");
	assert_null(env_of(s->env, s->n_env, "C"));
	assert_string_equal(df.steps[7].set[0], "X=from-cli--env");
	/* The image keeps ENVs only. */
	assert_int_equal(df.n_env, 2);
	assert_string_equal(df.env[0], "A=env");
	assert_string_equal(df.env[1], "X=from-cli--env");
	dockerfile__free(&df);

	{
		static const char *const badarg[] = { "NOVALUE" };
		struct dockerfile_opts ob = { .build_args = badarg,
					      .n_build_args = 1 };

		assert_int_equal(parse_o("FROM a\n", &ob, &df), -EINVAL);
		assert_string_equal(err, "--build-arg NOVALUE: not K=V");
		dockerfile__free(&df);
	}
	bad("FROM a\nARG\n", -EINVAL, "line 2: ARG needs a name");
	bad("FROM a\nARG =x\n", -EINVAL, "line 2: ARG : not a name");
}

/* ---- COPY, ADD ------------------------------------------------------------ */

static void test_copy(void **state)
{
	struct dockerfile df;
	const struct dockerfile_step *s;

	(void)state;
	ok("FROM a\n"
	   "ARG U=1000\n"
	   "WORKDIR /srv\n"
	   "COPY --chown=$U:$U --chmod=755 src/./x ./dst/\n"
	   "COPY /abs/../f.txt sub/../g\n"
	   "COPY [\"a b\", \"${U}\", \"out dir/\"]\n"
	   "ADD site.tar.gz /var/www\n"
	   "COPY --link . .\n"
	   "COPY a* ..\n",
	   NULL, &df);
	s = &df.steps[2];
	assert_int_equal(s->kind, DOCKERFILE_COPY);
	assert_false(s->add);
	assert_string_equal(s->chown, "1000:1000");
	assert_string_equal(s->chmod, "755");
	assert_int_equal(s->n_src, 1);
	assert_string_equal(s->src[0], "src/x");
	assert_string_equal(s->dest, "/srv/dst/");
	s = &df.steps[3];
	assert_null(s->chown);
	assert_null(s->chmod);
	assert_string_equal(s->src[0], "f.txt"); /* / is the context's root */
	assert_string_equal(s->dest, "/srv/g");
	s = &df.steps[4];
	assert_int_equal(s->n_src, 2);
	assert_string_equal(s->src[0], "a b");
	assert_string_equal(s->src[1], "1000");
	assert_string_equal(s->dest, "/srv/out dir/");
	s = &df.steps[5];
	assert_true(s->add);
	assert_true(s->add_archive);
	assert_string_equal(s->dest, "/var/www");
	s = &df.steps[6];
	assert_string_equal(s->src[0], ".");
	assert_string_equal(s->dest, "/srv/");
	assert_true(has_note(&df, "line 8: COPY --link ignored"));
	assert_string_equal(df.steps[7].src[0], "a*");
	assert_string_equal(df.steps[7].dest, "/");
	dockerfile__free(&df);

	ok("FROM a\nADD notes.txt /x/\n", NULL, &df);
	assert_true(df.steps[0].add);
	assert_false(df.steps[0].add_archive);
	dockerfile__free(&df);

	bad("FROM a\nCOPY ../secret /x\n", -EINVAL,
	    "line 2: COPY source ../secret is outside the build context");
	bad("FROM a\nADD a/../../b /x\n", -EINVAL,
	    "line 2: ADD source a/../../b is outside the build context");
	bad("FROM a\nADD https://example.com/f.tgz /x\n", -EINVAL,
	    "line 2: ADD https://example.com/f.tgz: a URL is not supported");
	bad("FROM a\nCOPY git@host:r.git /x\n", -EINVAL,
	    "a URL is not supported");
	bad("FROM a\nCOPY onlyone\n", -EINVAL,
	    "line 2: COPY needs a source and a destination");
	bad("FROM a\nCOPY a b /c\n", -EINVAL,
	    "line 2: COPY of more than one source needs a destination ending in /");
	bad("FROM a\nCOPY --chmod=u+x a /b\n", -EINVAL,
	    "line 2: COPY --chmod=u+x: an octal mode");
	bad("FROM a\nCOPY --chmod=77777 a /b\n", -EINVAL, "an octal mode");
	bad("FROM a\nCOPY --chown= a /b\n", -EINVAL,
	    "line 2: COPY: --chown= needs a value");
	bad("FROM a\nCOPY --parents a /b\n", -EINVAL,
	    "line 2: COPY --parents is not supported");
	bad("FROM a\nADD --checksum=sha256:00 a /b\n", -EINVAL,
	    "line 2: ADD --checksum is not supported");
	bad("FROM a\nCOPY --nope a /b\n", -EINVAL,
	    "line 2: COPY: unknown flag --nope");
	bad("FROM a\nCOPY <<EOF /x\nhi\nEOF\n", -EINVAL, "line 2: heredocs");
	bad("FROM a\nCOPY $NONE /x\n", -EINVAL,
	    "line 2: COPY: an empty source");
}

/* ---- WORKDIR, USER, what is ignored or refused ------------------------- */

static void test_workdir_user(void **state)
{
	struct dockerfile_opts o = { .base_workdir = "/home/app/",
				     .base_user = "app" };
	struct dockerfile df;

	(void)state;
	ok("FROM a\n"
	   "WORKDIR src\n"
	   "ENV D=lib\n"
	   "WORKDIR ../$D/./x/\n"
	   "USER ${NOPE:-root}:0\n"
	   "WORKDIR /\n"
	   "WORKDIR ../../opt\n"
	   "RUN pwd\n",
	   &o, &df);
	assert_int_equal(df.steps[0].kind, DOCKERFILE_WORKDIR);
	assert_string_equal(df.steps[0].workdir, "/home/app/src");
	assert_string_equal(df.steps[0].user, "app");
	assert_string_equal(df.steps[2].workdir, "/home/app/lib/x");
	assert_int_equal(df.steps[3].kind, DOCKERFILE_USER);
	assert_string_equal(df.steps[3].user, "root:0");
	assert_string_equal(df.steps[5].workdir, "/opt");
	assert_string_equal(df.steps[6].workdir, "/opt");
	assert_string_equal(df.steps[6].user, "root:0");
	assert_string_equal(df.workdir, "/opt");
	assert_string_equal(df.user, "root:0");
	dockerfile__free(&df);

	bad("FROM a\nWORKDIR\n", -EINVAL, "line 2: WORKDIR needs an argument");
	bad("FROM a\nUSER $NOPE\n", -EINVAL,
	    "line 2: USER is empty after substitution");
	{
		struct dockerfile_opts rel = { .base_workdir = "rel" };

		assert_int_equal(parse_o("FROM a\n", &rel, &df), -EINVAL);
		dockerfile__free(&df);
	}
}

static void test_ignored_refused(void **state)
{
	struct dockerfile df;

	(void)state;
	ok("FROM a\n"
	   "LABEL a=b\n"
	   "expose 80/tcp\n"
	   "VOLUME [\"/data\"]\n"
	   "STOPSIGNAL SIGTERM\n"
	   "HEALTHCHECK --interval=5s CMD curl -f http://x/\n"
	   "MAINTAINER me\n"
	   "RUN true\n",
	   NULL, &df);
	assert_int_equal(df.n_steps, 1);
	assert_int_equal(df.steps[0].line, 8);
	assert_true(has_note(&df, "line 2: LABEL ignored"));
	assert_true(has_note(&df, "line 3: EXPOSE ignored"));
	assert_true(has_note(&df, "line 4: VOLUME ignored"));
	assert_true(has_note(&df, "line 5: STOPSIGNAL ignored"));
	assert_true(has_note(&df, "line 6: HEALTHCHECK ignored"));
	assert_true(has_note(&df, "line 7: MAINTAINER ignored"));
	dockerfile__free(&df);

	bad("FROM a\n\nONBUILD RUN x\n", -EINVAL,
	    "line 3: ONBUILD is not supported");
	bad("FROM a\nFROBNICATE x\n", -EINVAL,
	    "line 2: unknown instruction FROBNICATE");
	bad("FROM a\nAVERYVERYVERYLONGINSTRUCTIONNAMEINDEED x\n", -EINVAL,
	    "line 2: unknown instruction");
	assert_int_equal(dockerfile__parse("FROM a\nRUN \0x\n", 13, NULL, &df,
					   err, sizeof(err)),
			 -EINVAL);
	dockerfile__free(&df);
	{
		char *big = calloc(1, DOCKERFILE_MAX_BYTES + 2);

		assert_non_null(big);
		memset(big, '#', DOCKERFILE_MAX_BYTES + 1);
		assert_int_equal(dockerfile__parse(big,
						   DOCKERFILE_MAX_BYTES + 1,
						   NULL, &df, err, sizeof(err)),
				 -E2BIG);
		dockerfile__free(&df);
		free(big);
	}
}

/* A Dockerfile as people write them, end to end. */
static void test_realistic(void **state)
{
	struct dockerfile df;
	const struct dockerfile_step *s;

	(void)state;
	ok("# syntax=docker/dockerfile:1.4\n"
	   "ARG PY=3.12\n"
	   "FROM template:python-${PY} AS app\n"
	   "ENV PYTHONDONTWRITEBYTECODE=1 \\\n"
	   "    PIP_NO_CACHE_DIR=1\n"
	   "WORKDIR /app\n"
	   "COPY requirements.txt .\n"
	   "RUN pip install -r requirements.txt \\\n"
	   " && rm -rf /root/.cache\n"
	   "COPY --chown=user:user . .\n"
	   "USER user\n"
	   "EXPOSE 8000\n"
	   "HEALTHCHECK CMD curl -f http://localhost:8000/ || exit 1\n"
	   "ENTRYPOINT [\"python\", \"-m\", \"app\"]\n"
	   "CMD [\"--port\", \"8000\"]\n",
	   NULL, &df);
	assert_true(df.from_template);
	assert_string_equal(df.from, "python-3.12");
	assert_int_equal(df.from_line, 3);
	assert_int_equal(df.n_steps, 8);
	assert_int_equal(df.n_notes, 3);
	s = &df.steps[2];
	assert_int_equal(s->kind, DOCKERFILE_COPY);
	assert_string_equal(s->src[0], "requirements.txt");
	assert_string_equal(s->dest, "/app/");
	s = &df.steps[3];
	assert_int_equal(s->line, 8);
	assert_string_equal(
		s->argv[2],
		"pip install -r requirements.txt  && rm -rf /root/.cache");
	assert_string_equal(env_of(s->env, s->n_env, "PIP_NO_CACHE_DIR"), "1");
	assert_string_equal(s->workdir, "/app");
	assert_null(s->user);
	s = &df.steps[4];
	assert_string_equal(s->src[0], ".");
	assert_string_equal(s->chown, "user:user");
	assert_string_equal(df.user, "user");
	assert_string_equal(df.entrypoint->argv[2], "app");
	assert_string_equal(df.cmd->argv[1], "8000");
	assert_int_equal(df.n_env, 2);
	dockerfile__free(&df);
}

/* ---- keys ------------------------------------------------------------------ */

/* The keys of @text's steps, chained from "sha256:base". */
static size_t keys(const char *text, const uint8_t *digest, char k[][65])
{
	struct dockerfile df;
	const char *prev = "sha256:base";
	size_t n;

	ok(text, NULL, &df);
	for (size_t i = 0; i < df.n_steps; i++) {
		const struct dockerfile_step *s = &df.steps[i];

		assert_int_equal(
			dockerfile__step_key(
				s, prev,
				s->kind == DOCKERFILE_COPY ? digest : NULL,
				k[i]),
			0);
		assert_int_equal(strlen(k[i]), 64);
		assert_int_equal(strspn(k[i], "0123456789abcdef"), 64);
		prev = k[i];
	}
	n = df.n_steps;
	dockerfile__free(&df);
	return n;
}

static void test_keys(void **state)
{
	static const char base[] = "FROM a\n"
				   "ENV A=1\n"
				   "RUN make\n"
				   "COPY . /src/\n"
				   "RUN make install\n"
				   "CMD [\"app\"]\n";
	uint8_t d1[32] = { 1 }, d2[32] = { 2 };
	char a[8][65], b[8][65];
	struct dockerfile df;
	char k1[65], k2[65];

	(void)state;
	assert_int_equal(keys(base, d1, a), 5);
	/* Same input, same keys; all distinct. */
	assert_int_equal(keys(base, d1, b), 5);
	for (int i = 0; i < 5; i++) {
		assert_string_equal(a[i], b[i]);
		for (int j = 0; j < i; j++)
			assert_string_not_equal(a[i], a[j]);
	}
	/* Comments, blank lines and continuations change no key. */
	keys("# hi\nFROM a\n\nENV A=1\nRUN \\\nmake\nCOPY . /src/\n"
	     "# x\nRUN make install\nCMD [\"app\"]\n",
	     d1, b);
	for (int i = 0; i < 5; i++)
		assert_string_equal(a[i], b[i]);
	/* Editing the last step changes only the last key. */
	keys("FROM a\nENV A=1\nRUN make\nCOPY . /src/\nRUN make install\n"
	     "CMD [\"app\", \"-v\"]\n",
	     d1, b);
	for (int i = 0; i < 4; i++)
		assert_string_equal(a[i], b[i]);
	assert_string_not_equal(a[4], b[4]);
	/* A file's change: the COPY's key and every one after it. */
	keys(base, d2, b);
	assert_string_equal(a[0], b[0]);
	assert_string_equal(a[1], b[1]);
	for (int i = 2; i < 5; i++)
		assert_string_not_equal(a[i], b[i]);
	/* An ENV before a RUN changes that RUN's key (its environment). */
	keys("FROM a\nENV A=2\nRUN make\nCOPY . /src/\nRUN make install\n"
	     "CMD [\"app\"]\n",
	     d1, b);
	for (int i = 0; i < 5; i++)
		assert_string_not_equal(a[i], b[i]);
	/* So does the base image, through the first key. */
	ok(base, NULL, &df);
	assert_int_equal(
		dockerfile__step_key(&df.steps[0], "sha256:other", NULL, k1),
		0);
	assert_string_not_equal(k1, a[0]);
	assert_int_equal(dockerfile__step_key(&df.steps[0], NULL, NULL, k1), 0);
	assert_int_equal(dockerfile__step_key(&df.steps[0], "", NULL, k2), 0);
	assert_string_equal(k1, k2);
	dockerfile__free(&df);
	/* Exec and shell forms of the same words differ. */
	keys("FROM a\nRUN [\"/bin/sh\", \"-c\", \"make\"]\n", NULL, a);
	keys("FROM a\nRUN make\n", NULL, b);
	assert_string_not_equal(a[0], b[0]);
	/* A different build arg changes the key from its ARG on. */
	{
		static const char *const v1[] = { "V=1" }, *const v2[] = {
			"V=2"
		};
		struct dockerfile_opts o1 = { .build_args = v1,
					      .n_build_args = 1 };
		struct dockerfile_opts o2 = { .build_args = v2,
					      .n_build_args = 1 };
		struct dockerfile x, y;

		ok("FROM a\nRUN a\nARG V\nRUN b\n", &o1, &x);
		ok("FROM a\nRUN a\nARG V\nRUN b\n", &o2, &y);
		dockerfile__step_key(&x.steps[0], "p", NULL, k1);
		dockerfile__step_key(&y.steps[0], "p", NULL, k2);
		assert_string_equal(k1, k2);
		dockerfile__step_key(&x.steps[2], "p", NULL, k1);
		dockerfile__step_key(&y.steps[2], "p", NULL, k2);
		assert_string_not_equal(k1, k2);
		dockerfile__free(&x);
		dockerfile__free(&y);
	}
}

/* ---- the files of a COPY -------------------------------------------------- */

static char ctx[64];

static void put_file(const char *rel, const char *content, mode_t mode)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", ctx, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, strlen(content)),
			 (ssize_t)strlen(content));
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
}

static int digest(const char *text, uint8_t out[32])
{
	struct dockerfile df;
	int rc;

	ok(text, NULL, &df);
	err[0] = '\0';
	rc = dockerfile__copy_digest(ctx, &df.steps[df.n_steps - 1], out, err,
				     sizeof(err));
	dockerfile__free(&df);
	return rc;
}

static void test_copy_digest(void **state)
{
	uint8_t d0[32], d1[32], d2[32];
	struct dockerfile df;
	char path[256];

	(void)state;
	/* Glob characters in the context's own path match only themselves. */
	snprintf(ctx, sizeof(ctx), "/tmp/ember-test-df[*?].XXXXXX");
	assert_non_null(mkdtemp(ctx));
	snprintf(path, sizeof(path), "%s/dir", ctx);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/dir/sub", ctx);
	assert_int_equal(mkdir(path, 0755), 0);
	put_file("dir/b", "bee", 0644);
	put_file("dir/a", "ay", 0644);
	put_file("dir/sub/c", "sea", 0600);
	put_file("top.txt", "top", 0644);
	snprintf(path, sizeof(path), "%s/dir/link", ctx);
	assert_int_equal(symlink("sub/c", path), 0);

	assert_int_equal(digest("FROM a\nCOPY dir /d/\n", d0), 0);
	assert_int_equal(digest("FROM a\nCOPY ./dir/ /elsewhere\n", d1), 0);
	assert_memory_equal(d0, d1, 32); /* the destination is in the key */
	/* Content, mode and names all count. */
	put_file("dir/sub/c", "SEA", 0600);
	assert_int_equal(digest("FROM a\nCOPY dir /d/\n", d1), 0);
	assert_memory_not_equal(d0, d1, 32);
	put_file("dir/sub/c", "sea", 0700);
	assert_int_equal(digest("FROM a\nCOPY dir /d/\n", d2), 0);
	assert_memory_not_equal(d0, d2, 32);
	assert_memory_not_equal(d1, d2, 32);
	put_file("dir/sub/c", "sea", 0600);
	assert_int_equal(digest("FROM a\nCOPY dir /d/\n", d2), 0);
	assert_memory_equal(d0, d2, 32);
	/* Sources' order counts; a glob's matches are sorted. */
	assert_int_equal(digest("FROM a\nCOPY top.txt dir /d/\n", d1), 0);
	assert_int_equal(digest("FROM a\nCOPY dir top.txt /d/\n", d2), 0);
	assert_memory_not_equal(d1, d2, 32);
	assert_int_equal(digest("FROM a\nCOPY dir/? /d/\n", d1), 0);
	assert_int_equal(digest("FROM a\nCOPY dir/a dir/b /d/\n", d2), 0);
	assert_memory_not_equal(d1, d2, 32); /* the pattern is hashed */
	assert_int_equal(digest("FROM a\nCOPY dir/[ab] /d/\n", d2), 0);
	assert_memory_not_equal(d1, d2, 32);

	/* A '*' matches a leading '.' (as Go's filepath.Match), not ".." */
	assert_int_equal(digest("FROM a\nCOPY dir/* /d/\n", d1), 0);
	put_file("dir/.hidden", "h", 0644);
	assert_int_equal(digest("FROM a\nCOPY dir/* /d/\n", d2), 0);
	assert_memory_not_equal(d1, d2, 32);
	assert_int_equal(digest("FROM a\nCOPY dir/.* /d/\n", d2), 0);
	snprintf(path, sizeof(path), "%s/dir/.hidden", ctx);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(digest("FROM a\nCOPY dir/.* /d/\n", d2), -ENOENT);

	/* Refused: no match, a missing file, links out, odd files. */
	assert_int_equal(digest("FROM a\nCOPY *.nope /d/\n", d1), -ENOENT);
	assert_string_equal(
		err, "line 2: *.nope matches nothing in the build context");
	assert_int_equal(digest("FROM a\nRUN x\nCOPY missing /d/\n", d1),
			 -ENOENT);
	assert_non_null(strstr(err, "line 3: "));
	snprintf(path, sizeof(path), "%s/dir/out", ctx);
	assert_int_equal(symlink("../../etc", path), 0);
	assert_int_equal(digest("FROM a\nCOPY dir /d/\n", d1), -EINVAL);
	assert_non_null(strstr(
		err,
		"a symbolic link to ../../etc, outside the build context"));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	assert_int_equal(digest("FROM a\nCOPY dir /d/\n", d1), -EINVAL);
	assert_int_equal(digest("FROM a\nCOPY dir/out /d/\n", d1), -EINVAL);
	assert_non_null(strstr(err, "outside the build context"));
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/dir/fifo", ctx);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(digest("FROM a\nCOPY dir /d/\n", d1), -EINVAL);
	assert_non_null(strstr(err, "not a file, directory or link"));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(digest("FROM a\nCOPY dir /d/\n", d1), 0);
	assert_memory_equal(d0, d1, 32);
	/* A source that is a link inside the context is followed. */
	assert_int_equal(digest("FROM a\nCOPY dir/link /d/\n", d1), 0);
	/* Not a COPY. */
	ok("FROM a\nRUN x\n", NULL, &df);
	assert_int_equal(dockerfile__copy_digest(ctx, &df.steps[0], d1, err,
						 sizeof(err)),
			 -EINVAL);
	dockerfile__free(&df);

	snprintf(path, sizeof(path), "rm -rf '%s'", ctx);
	assert_int_equal(system(path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_minimal),
		cmocka_unit_test(test_from),
		cmocka_unit_test(test_continuations),
		cmocka_unit_test(test_escape_directive),
		cmocka_unit_test(test_forms),
		cmocka_unit_test(test_env),
		cmocka_unit_test(test_arg),
		cmocka_unit_test(test_copy),
		cmocka_unit_test(test_workdir_user),
		cmocka_unit_test(test_ignored_refused),
		cmocka_unit_test(test_realistic),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_copy_digest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
