// SPDX-License-Identifier: Apache-2.0
/*
 * .dockerignore (api/sandbox/dockerignore.h): Docker's syntax (comments,
 * trimming, cleaning, '*', '?', classes, '\', "**", '!' exceptions, the
 * last match deciding, parents excluding their contents), the refused
 * patterns, paths under a context as glob spells them, and the list a
 * COPY's tar is made from.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../api/sandbox/dockerignore.h"
#include "../../api/sandbox/files.h"

static char err[512];

static struct dockerignore *parse(const char *text)
{
	struct dockerignore *d = NULL;
	int rc;

	err[0] = '\0';
	rc = dockerignore__parse(text, strlen(text), &d, err, sizeof(err));
	if (rc)
		fail_msg("parse failed (%d): %s\n%s", rc, err, text);
	assert_non_null(d);
	return d;
}

/* @text must exclude each of @yes and none of @no (NULL-ended). */
static void expect(const char *text, const char *const *yes,
		   const char *const *no)
{
	struct dockerignore *d = parse(text);

	for (; yes && *yes; yes++)
		if (!dockerignore__match(d, *yes))
			fail_msg("%s: '%s' not excluded", text, *yes);
	for (; no && *no; no++)
		if (dockerignore__match(d, *no))
			fail_msg("%s: '%s' excluded", text, *no);
	dockerignore__free(d);
}

#define V(...) ((const char *const[]){ __VA_ARGS__, NULL })

static void test_star_one_level(void **state)
{
	(void)state;
	expect("*.md", V("a.md", "README.md", ".md", "x.md/inside"),
	       V("d/a.md", "a.mdx", "a.txt"));
	expect("d/*.md", V("d/a.md"), V("a.md", "d/e/a.md"));
	expect("*", V("a", "a/b", ".hidden"), V(".", ""));
}

static void test_double_star(void **state)
{
	(void)state;
	expect("**/*.md", V("a.md", "d/a.md", "d/e/f/a.md"), V("a.txt"));
	expect("x/**/y", V("x/y", "x/a/y", "x/a/b/y", "x/a/y/z"),
	       V("x/ay", "xy", "y"));
	expect("docs/**", V("docs/a", "docs/a/b"), V("docs", "doc"));
	expect("**", V("a", "a/b/c"), V("."));
	expect("a**", V("a", "ab", "a/b"), V("ba"));
}

static void test_parent_dirs(void **state)
{
	(void)state;
	/* A directory's name excludes all it holds, at any depth. */
	expect("build", V("build", "build/x", "build/x/y"),
	       V("builds", "src/build", "buil"));
	expect("a/b", V("a/b", "a/b/c"), V("a", "a/bc", "b"));
}

static void test_question_and_classes(void **state)
{
	(void)state;
	expect("?.txt", V("x.txt"), V("xy.txt", ".txt", "d/x.txt"));
	expect("[a-c].log", V("a.log", "b.log", "c.log"), V("d.log", "ab.log"));
	expect("[^a].log", V("b.log", "z.log"), V("a.log"));
}

static void test_escapes(void **state)
{
	(void)state;
	expect("foo\\*", V("foo*"), V("foox", "foo"));
	expect("\\#x", V("#x"), V("x"));
	expect("[\\]]x", V("]x"), V("x", "ax"));
}

static void test_comments_trim_clean(void **state)
{
	(void)state;
	expect("# a comment\n\n   \n  spaced.txt  \r\n", V("spaced.txt"),
	       V("# a comment", "a"));
	/* Only a '#' first on the line makes a comment. */
	expect(" #x", V("#x"), NULL);
	expect("/abs\n./dot\na/../b\nc//d/\n", V("abs", "dot", "b", "c/d/e"),
	       V("a", "a/b", "c"));
	expect("\xef\xbb\xbf"
	       "bom",
	       V("bom"), NULL);
	/* A line with a NUL matches nothing, the rest still counts. */
	{
		static const char t[] = "x\0y\nz";
		struct dockerignore *d = NULL;

		assert_int_equal(dockerignore__parse(t, sizeof(t) - 1, &d, err,
						     sizeof(err)),
				 0);
		assert_false(dockerignore__match(d, "x"));
		assert_true(dockerignore__match(d, "z"));
		dockerignore__free(d);
	}
}

static void test_exceptions(void **state)
{
	(void)state;
	expect("*.md\n!README.md", V("a.md"), V("README.md"));
	/* The last match decides. */
	expect("*.md\n!README.md\nREADME.md", V("a.md", "README.md"), NULL);
	expect("secret\n!secret/keep", V("secret/other", "secret/keep2"),
	       V("secret/keep", "secret/keep/x"));
	expect("!  spaced", NULL, V("spaced"));
	/* An exception of nothing excluded changes nothing. */
	expect("!a\nb", V("b"), V("a"));
}

static void test_paths_asked(void **state)
{
	struct dockerignore *d = parse("a.md\nsub/x");

	(void)state;
	assert_true(dockerignore__match(d, "./a.md"));
	assert_true(dockerignore__match(d, "/a.md"));
	assert_true(dockerignore__match(d, "sub/x/"));
	assert_false(dockerignore__match(d, "."));
	assert_false(dockerignore__match(d, ""));
	assert_false(dockerignore__match(NULL, "a.md"));
	assert_true(dockerignore__match_under(d, "/c", "/c/a.md"));
	assert_true(dockerignore__match_under(d, "/c/", "/c/./sub//x/y"));
	assert_true(dockerignore__match_under(d, "ctx", "ctx/sub/x"));
	assert_false(dockerignore__match_under(d, "/c", "/cc/a.md"));
	assert_false(dockerignore__match_under(d, "/c", "/c"));
	assert_false(dockerignore__match_under(d, "/c", "/d/a.md"));
	assert_true(dockerignore__skip_dir(d, "sub/x"));
	assert_false(dockerignore__skip_dir(d, "sub"));
	dockerignore__free(d);
	d = parse("sub\n!sub/keep");
	assert_true(dockerignore__match(d, "sub"));
	assert_false(dockerignore__skip_dir(d, "sub"));
	dockerignore__free(d);
	d = parse("");
	assert_false(dockerignore__match(d, "a"));
	dockerignore__free(d);
}

static void bad(const char *text, int want_rc, const char *want)
{
	struct dockerignore *d = (struct dockerignore *)1;
	int rc = dockerignore__parse(text, strlen(text), &d, err, sizeof(err));

	assert_int_equal(rc, want_rc);
	assert_null(d);
	if (!strstr(err, want))
		fail_msg("%s: error \"%s\" lacks \"%s\"", text, err, want);
}

static void test_bad_patterns(void **state)
{
	(void)state;
	bad("ok\n[abc", -EINVAL, "line 2: a bad pattern");
	bad("[]", -EINVAL, "line 1");
	bad("[-a]", -EINVAL, "line 1");
	bad("[a-]", -EINVAL, "line 1");
	bad("x\\", -EINVAL, "line 1");
	bad("a\n  !  \n", -EINVAL, "line 2: a '!' without a pattern");
}

static void test_limits(void **state)
{
	char *big = malloc(DOCKERIGNORE_MAX + 2);
	char *lines = malloc(2 * (DOCKERIGNORE_MAX_PATS + 1) + 1);
	struct dockerignore *d = NULL;

	(void)state;
	assert_non_null(big);
	assert_non_null(lines);
	memset(big, 'a', DOCKERIGNORE_MAX + 1);
	assert_int_equal(dockerignore__parse(big, DOCKERIGNORE_MAX + 1, &d, err,
					     sizeof(err)),
			 -E2BIG);
	for (size_t i = 0; i <= DOCKERIGNORE_MAX_PATS; i++)
		memcpy(lines + 2 * i, "a\n", 2);
	assert_int_equal(dockerignore__parse(lines,
					     2 * (DOCKERIGNORE_MAX_PATS + 1),
					     &d, err, sizeof(err)),
			 -E2BIG);
	/* Many stars: linear, not exponential (this would never end). */
	memset(big, 0, DOCKERIGNORE_MAX + 1);
	for (int i = 0; i < 200; i++)
		strcat(big, "*a");
	d = parse(big);
	memset(big, 'a', 4000);
	big[4000] = 'b';
	big[4001] = '\0';
	assert_false(dockerignore__match(d, big));
	dockerignore__free(d);
	free(big);
	free(lines);
}

/* ---- files -------------------------------------------------------------- */

static char dir[64];

static void put(const char *rel, const char *text)
{
	char p[512];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void sub(const char *rel)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

/* The tar list from @from as one "|"-joined string, sorted. */
static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void list_of(const struct dockerignore *d, const char *ctx,
		    const char *from, char *out, size_t outsz)
{
	char buf[4096], *names[64];
	size_t n = 0, len;
	ssize_t got;
	int fd = dockerignore__tar_list(d, ctx, from, err, sizeof(err));

	if (fd < 0)
		fail_msg("tar_list: %d %s", fd, err);
	got = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(got > 0);
	assert_int_equal(buf[got - 1], '\0');
	for (char *p = buf; p < buf + got; p += strlen(p) + 1) {
		/* A directory is listed before what it holds. */
		char parent[4096];
		char *slash;

		snprintf(parent, sizeof(parent), "%s", p);
		slash = strrchr(parent, '/');
		if (slash && slash != parent + 1) {
			bool seen = false;

			*slash = '\0';
			for (size_t i = 0; i < n; i++)
				seen |= !strcmp(names[i], parent);
			if (!seen)
				fail_msg("%s listed before its directory", p);
		}
		assert_true(n < 64);
		names[n++] = p;
	}
	qsort(names, n, sizeof(char *), cmp);
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		len = strlen(out);
		snprintf(out + len, outsz - len, "%s%s", i ? "|" : "",
			 names[i]);
	}
}

static void test_load_and_tar_list(void **state)
{
	struct dockerignore *d = NULL;
	char got[2048], from[128];

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_dockerignore.XXXXXX");
	assert_non_null(mkdtemp(dir));
	/* No .dockerignore: nothing excluded, no error. */
	assert_int_equal(dockerignore__load(dir, &d, err, sizeof(err)), 0);
	assert_null(d);
	put(".dockerignore", "# build junk\n*.log\nsecret\n!secret/keep\n"
			     "**/cache\n");
	put("a.txt", "a");
	put("x.log", "x");
	sub("secret");
	put("secret/keep", "k");
	put("secret/other", "o");
	sub("src");
	put("src/m.c", "m");
	put("src/y.log", "y"); /* "*.log" is the top level's only */
	sub("src/cache");
	put("src/cache/z", "z");
	assert_int_equal(dockerignore__load(dir, &d, err, sizeof(err)), 0);
	assert_non_null(d);
	list_of(d, dir, dir, got, sizeof(got));
	assert_string_equal(got, ".|./.dockerignore|./a.txt|./secret|"
				 "./secret/keep|./src|./src/m.c|./src/y.log");
	/* From a directory in the context: matched as the context sees it. */
	snprintf(from, sizeof(from), "%s/./src/", dir);
	list_of(d, dir, from, got, sizeof(got));
	assert_string_equal(got, ".|./m.c|./y.log");
	assert_true(dockerignore__match_under(d, dir, from) == false);
	snprintf(from, sizeof(from), "%s/secret", dir);
	list_of(d, dir, from, got, sizeof(got));
	assert_string_equal(got, ".|./keep");
	list_of(NULL, dir, dir, got, sizeof(got));
	assert_non_null(strstr(got, "./x.log"));
	assert_true(dockerignore__tar_list(d, "/elsewhere", dir, err,
					   sizeof(err)) == -EINVAL);
	dockerignore__free(d);
	/* A symbolic link as .dockerignore is refused. */
	{
		char p[512];

		snprintf(p, sizeof(p), "%s/.dockerignore", dir);
		unlink(p);
		assert_int_equal(symlink("/etc/passwd", p), 0);
		assert_int_equal(dockerignore__load(dir, &d, err, sizeof(err)),
				 -ELOOP);
		assert_null(d);
	}
	files__rm_tree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_star_one_level),
		cmocka_unit_test(test_double_star),
		cmocka_unit_test(test_parent_dirs),
		cmocka_unit_test(test_question_and_classes),
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_comments_trim_clean),
		cmocka_unit_test(test_exceptions),
		cmocka_unit_test(test_paths_asked),
		cmocka_unit_test(test_bad_patterns),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_load_and_tar_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
