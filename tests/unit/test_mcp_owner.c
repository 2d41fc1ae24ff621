// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for ember-mcp's owner record (api/mcp/owner.c): the
 * principals (the local user, a bearer token's SHA-256), mcp.owner
 * written and read back in a directory, another principal refused, and
 * records that are missing, malformed or a symbolic link.
 */
#include <errno.h>
#include <limits.h>
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

#include "../../api/mcp/owner.h"
#include "../../api/sandbox/files.h"

static char dir[] = "/tmp/test_mcp_owner.XXXXXX";

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return files__rm_tree(dir);
}

static void put(const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, OWNER_NAME);
	unlink(path);
	f = fopen(path, "we");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_principals(void **state)
{
	char p[OWNER_PRINCIPAL_MAX], want[32];

	(void)state;
	owner__user(p);
	snprintf(want, sizeof(want), "user:%u", (unsigned int)getuid());
	assert_string_equal(p, want);
	/* FIPS 180-2's first example: SHA-256("abc"). */
	assert_int_equal(owner__token("abc", p), 0);
	assert_string_equal(p, "token:ba7816bf8f01cfea414140de5dae2223b00361a3"
			       "96177a9cb410ff61f20015ad");
	assert_int_equal(owner__token("", p), 0);
	assert_string_equal(p, "token:e3b0c44298fc1c149afbf4c8996fb92427ae41e4"
			       "649b934ca495991b7852b855");
}

static void test_round_trip(void **state)
{
	char path[PATH_MAX], text[256];
	unsigned int ttl = 7;
	struct stat st;

	(void)state;
	assert_int_equal(owner__save(dir, "token:00ff", 300), 0);
	assert_true(owner__is(dir, "token:00ff", &ttl));
	assert_int_equal(ttl, 300);
	assert_true(owner__is(dir, "token:00ff", NULL));
	/* Another principal, or a prefix of this one: not the owner. */
	ttl = 7;
	assert_false(owner__is(dir, "token:00f", &ttl));
	assert_false(owner__is(dir, "token:00ff0", &ttl));
	assert_false(owner__is(dir, "user:0", &ttl));
	assert_int_equal(ttl, 7);
	snprintf(path, sizeof(path), "%s/%s", dir, OWNER_NAME);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_true(files__read_text(path, text, sizeof(text)) > 0);
	assert_string_equal(text, "principal=token:00ff\nttl=300\n");
	/* Replaced, not appended to. */
	assert_int_equal(owner__save(dir, "user:5", 0), 0);
	assert_true(owner__is(dir, "user:5", &ttl));
	assert_int_equal(ttl, 0);
	assert_false(owner__is(dir, "token:00ff", NULL));
}

static void test_bad_records(void **state)
{
	char path[PATH_MAX], target[PATH_MAX], big[300];

	(void)state;
	snprintf(path, sizeof(path), "%s/%s", dir, OWNER_NAME);
	unlink(path);
	assert_false(owner__is(dir, "user:1", NULL)); /* none */
	assert_false(owner__is("/nonexistent/dir", "user:1", NULL));
	put("principal=user:1\n"); /* no ttl */
	assert_false(owner__is(dir, "user:1", NULL));
	put("ttl=5\n"); /* no principal */
	assert_false(owner__is(dir, "user:1", NULL));
	put("principal=user:1\nttl=-1\n");
	assert_false(owner__is(dir, "user:1", NULL));
	put("principal=user:1\nttl=86401\n");
	assert_false(owner__is(dir, "user:1", NULL));
	put("principal=user:1\nttl=5x\n");
	assert_false(owner__is(dir, "user:1", NULL));
	put("principal=user:1\nttl=\n");
	assert_false(owner__is(dir, "user:1", NULL));
	put("");
	assert_false(owner__is(dir, "user:1", NULL));
	put("principal=user:1\nttl=86400\n");
	assert_true(owner__is(dir, "user:1", NULL));
	/* A symbolic link in its place is not followed. */
	snprintf(target, sizeof(target), "%s/elsewhere", dir);
	assert_int_equal(rename(path, target), 0);
	assert_int_equal(symlink(target, path), 0);
	assert_false(owner__is(dir, "user:1", NULL));
	unlink(path);
	unlink(target);
	/* A principal too long for the record is refused. */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(owner__save(dir, big, 1), -ENAMETOOLONG);
	assert_int_equal(access(path, F_OK), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_principals),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_bad_records),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
