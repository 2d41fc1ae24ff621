// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for ember-e2b's per-sandbox record (api/e2b/record.h):
 * init, save and load round trip in a temporary directory, the token
 * check, the metadata filter, and records that are not the documented
 * shape refused whole with -EINVAL.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

#include "../../api/e2b/record.h"

#define TOKEN "0123456789abcdef0123456789abcdef"

static int setup_dir(void **state)
{
	char *dir = strdup("/tmp/test_e2b_record.XXXXXX");

	if (!dir || !mkdtemp(dir)) {
		free(dir);
		return -1;
	}
	*state = dir;
	return 0;
}

static int teardown_dir(void **state)
{
	char *dir = *state, path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, RECORD_NAME);
	unlink(path);
	snprintf(path, sizeof(path), "%s/.%s.tmp", dir, RECORD_NAME);
	unlink(path);
	rmdir(dir);
	free(dir);
	return 0;
}

/* Write @text as @dir's record file. */
static void write_record(const char *dir, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, RECORD_NAME);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
	assert_int_equal(fclose(f), 0);
}

static bool is_hex_token(const char *t)
{
	return strlen(t) == RECORD_TOKEN_LEN &&
	       strspn(t, "0123456789abcdef") == RECORD_TOKEN_LEN;
}

static void test_init(void **state)
{
	struct e2b_record a, b;
	char long_id[RECORD_ID_MAX + 40];

	(void)state;
	assert_int_equal(record__init(&a, "code-interpreter-v1"), 0);
	assert_true(is_hex_token(a.token));
	assert_string_equal(a.template_id, "code-interpreter-v1");
	assert_true(json_is_object(a.metadata));
	assert_int_equal(json_object_size(a.metadata), 0);
	assert_true(json_is_object(a.env_vars));
	assert_int_equal(json_object_size(a.env_vars), 0);

	/* Tokens are random; a long name is cut to RECORD_ID_MAX. */
	memset(long_id, 'x', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = '\0';
	assert_int_equal(record__init(&b, long_id), 0);
	assert_true(is_hex_token(b.token));
	assert_string_not_equal(a.token, b.token);
	assert_int_equal(strlen(b.template_id), RECORD_ID_MAX);
	assert_memory_equal(b.template_id, long_id, RECORD_ID_MAX);

	/* Released, the struct can be initialized again; twice is fine. */
	record__release(&a);
	assert_null(a.metadata);
	assert_null(a.env_vars);
	record__release(&a);
	assert_int_equal(record__init(&a, "base"), 0);
	record__release(&a);
	record__release(&b);
}

static void test_round_trip(void **state)
{
	const char *dir = *state;
	struct e2b_record r, back;
	char path[PATH_MAX];
	struct stat st;

	assert_int_equal(record__init(&r, "base"), 0);
	assert_int_equal(json_object_set_new(r.metadata, "owner",
					     json_string("ümlaut \"q\"")),
			 0);
	assert_int_equal(json_object_set_new(r.metadata, "", json_string("")),
			 0);
	assert_int_equal(json_object_set_new(r.env_vars, "FOO",
					     json_string("bar=baz\n")),
			 0);
	assert_int_equal(record__save(dir, &r), 0);

	snprintf(path, sizeof(path), "%s/%s", dir, RECORD_NAME);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	snprintf(path, sizeof(path), "%s/.%s.tmp", dir, RECORD_NAME);
	assert_int_equal(access(path, F_OK), -1);

	assert_int_equal(record__load(dir, &back), 0);
	assert_string_equal(back.token, r.token);
	assert_string_equal(back.template_id, "base");
	assert_true(json_equal(back.metadata, r.metadata));
	assert_true(json_equal(back.env_vars, r.env_vars));
	assert_true(record__token_ok(&back, r.token));
	record__release(&back);

	/* Saving again replaces it. */
	assert_int_equal(
		json_object_set_new(r.env_vars, "FOO", json_string("2")), 0);
	assert_int_equal(record__save(dir, &r), 0);
	assert_int_equal(record__load(dir, &back), 0);
	assert_string_equal(
		json_string_value(json_object_get(back.env_vars, "FOO")), "2");
	record__release(&back);
	record__release(&r);
}

/* A traffic token: kept through a save, none unless added. */
static void test_traffic_token(void **state)
{
	const char *dir = *state;
	struct e2b_record r, back;

	assert_int_equal(record__init(&r, "base"), 0);
	assert_string_equal(r.traffic_token, "");
	assert_true(record__traffic_ok(&r, NULL));
	assert_true(record__traffic_ok(&r, "anything"));
	assert_int_equal(record__save(dir, &r), 0);
	assert_int_equal(record__load(dir, &back), 0);
	assert_string_equal(back.traffic_token, "");
	record__release(&back);

	assert_int_equal(record__add_traffic_token(&r), 0);
	assert_int_equal(strlen(r.traffic_token), RECORD_TOKEN_LEN);
	assert_string_not_equal(r.traffic_token, r.token);
	assert_false(record__traffic_ok(&r, NULL));
	assert_false(record__traffic_ok(&r, r.token));
	assert_true(record__traffic_ok(&r, r.traffic_token));
	assert_int_equal(record__save(dir, &r), 0);
	assert_int_equal(record__load(dir, &back), 0);
	assert_string_equal(back.traffic_token, r.traffic_token);
	assert_true(record__traffic_ok(&back, r.traffic_token));
	record__release(&back);
	record__release(&r);

	/* A malformed one: not half-read. */
	write_record(dir, "{\"token\":\"" TOKEN "\",\"templateID\":\"b\","
			  "\"metadata\":{},\"envVars\":{},\"trafficToken\":1}");
	assert_int_equal(record__load(dir, &back), -EINVAL);
}

static void test_load_missing(void **state)
{
	const char *dir = *state;
	struct e2b_record r;
	char sub[PATH_MAX];

	assert_int_equal(record__load(dir, &r), -ENOENT);
	snprintf(sub, sizeof(sub), "%s/nonexistent", dir);
	assert_int_equal(record__load(sub, &r), -ENOENT);
}

static void test_token_ok(void **state)
{
	struct e2b_record r;
	char t[RECORD_TOKEN_LEN + 2];

	(void)state;
	assert_int_equal(record__init(&r, "base"), 0);
	memcpy(r.token, TOKEN, sizeof(TOKEN));
	assert_true(record__token_ok(&r, TOKEN));
	assert_false(record__token_ok(&r, NULL));
	assert_false(record__token_ok(&r, ""));
	/* One digit off, first or last. */
	memcpy(t, TOKEN, sizeof(TOKEN));
	t[0] = '1';
	assert_false(record__token_ok(&r, t));
	memcpy(t, TOKEN, sizeof(TOKEN));
	t[RECORD_TOKEN_LEN - 1] = 'e';
	assert_false(record__token_ok(&r, t));
	/* A prefix, or the token and more. */
	memcpy(t, TOKEN, sizeof(TOKEN));
	t[RECORD_TOKEN_LEN - 1] = '\0';
	assert_false(record__token_ok(&r, t));
	memcpy(t, TOKEN, sizeof(TOKEN));
	t[RECORD_TOKEN_LEN] = 'f';
	t[RECORD_TOKEN_LEN + 1] = '\0';
	assert_false(record__token_ok(&r, t));
	/* Case counts. */
	assert_false(record__token_ok(&r, "0123456789ABCDEF0123456789ABCDEF"));
	record__release(&r);
}

static void test_metadata_match(void **state)
{
	struct e2b_record r;
	json_t *w;

	(void)state;
	assert_int_equal(record__init(&r, "base"), 0);
	json_object_set_new(r.metadata, "app", json_string("web"));
	json_object_set_new(r.metadata, "env", json_string("prod"));

	w = json_object();
	assert_true(record__metadata_match(&r, w)); /* {} matches all */
	json_object_set_new(w, "app", json_string("web"));
	assert_true(record__metadata_match(&r, w));
	json_object_set_new(w, "env", json_string("prod"));
	assert_true(record__metadata_match(&r, w));
	json_object_set_new(w, "env", json_string("dev"));
	assert_false(record__metadata_match(&r, w));
	json_decref(w);

	w = json_pack("{s:s}", "missing", "web");
	assert_false(record__metadata_match(&r, w));
	json_decref(w);
	w = json_pack("{s:s}", "App", "web");
	assert_false(record__metadata_match(&r, w));
	json_decref(w);
	w = json_pack("{s:i}", "app", 1);
	assert_false(record__metadata_match(&r, w));
	json_decref(w);
	w = json_pack("{s:n}", "app");
	assert_false(record__metadata_match(&r, w));
	json_decref(w);
	record__release(&r);
}

/* Records that are not the documented shape: refused whole. */
static void test_load_bad(void **state)
{
	static const char *const bad[] = {
		"",
		"{",
		"{not json}",
		"[]",
		"null",
		"\"" TOKEN "\"",
		/* token */
		"{\"templateID\":\"base\",\"metadata\":{},\"envVars\":{}}",
		"{\"token\":1,\"templateID\":\"base\",\"metadata\":{},"
		"\"envVars\":{}}",
		"{\"token\":\"abc\",\"templateID\":\"base\",\"metadata\":{},"
		"\"envVars\":{}}",
		"{\"token\":\"" TOKEN "0\",\"templateID\":\"base\","
		"\"metadata\":{},\"envVars\":{}}",
		"{\"token\":\"0123456789abcdef0123456789abcdeg\","
		"\"templateID\":\"base\",\"metadata\":{},\"envVars\":{}}",
		/* templateID */
		"{\"token\":\"" TOKEN "\",\"metadata\":{},\"envVars\":{}}",
		"{\"token\":\"" TOKEN "\",\"templateID\":null,\"metadata\":{},"
		"\"envVars\":{}}",
		"{\"token\":\"" TOKEN "\",\"templateID\":7,\"metadata\":{},"
		"\"envVars\":{}}",
		/* metadata, envVars */
		"{\"token\":\"" TOKEN "\",\"templateID\":\"base\","
		"\"envVars\":{}}",
		"{\"token\":\"" TOKEN "\",\"templateID\":\"base\","
		"\"metadata\":[],\"envVars\":{}}",
		"{\"token\":\"" TOKEN "\",\"templateID\":\"base\","
		"\"metadata\":{\"a\":1},\"envVars\":{}}",
		"{\"token\":\"" TOKEN "\",\"templateID\":\"base\","
		"\"metadata\":{},\"envVars\":{\"A\":null}}",
		"{\"token\":\"" TOKEN "\",\"templateID\":\"base\","
		"\"metadata\":{},\"envVars\":\"A=1\"}",
		"{\"token\":\"" TOKEN "\",\"templateID\":\"base\","
		"\"metadata\":{},\"envVars\":{\"A\":{\"b\":\"c\"}}}",
		/* duplicate keys */
		"{\"token\":\"" TOKEN "\",\"token\":\"" TOKEN "\","
		"\"templateID\":\"base\",\"metadata\":{},\"envVars\":{}}",
	};
	const char *dir = *state;
	struct e2b_record r;
	char *long_id;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_record(dir, bad[i]);
		memset(&r, 0x5a, sizeof(r));
		if (record__load(dir, &r) != -EINVAL)
			fail_msg("loaded bad record %zu: %s", i, bad[i]);
		/* Never half-read: nothing for the caller to release. */
		assert_null(r.metadata);
		assert_null(r.env_vars);
	}

	/* A templateID longer than RECORD_ID_MAX is not one it wrote. */
	long_id = malloc(RECORD_ID_MAX + 200);
	assert_non_null(long_id);
	i = (size_t)snprintf(long_id, RECORD_ID_MAX + 200,
			     "{\"token\":\"" TOKEN "\",\"templateID\":\"");
	memset(long_id + i, 'x', RECORD_ID_MAX + 1);
	i += RECORD_ID_MAX + 1;
	snprintf(long_id + i, RECORD_ID_MAX + 200 - i,
		 "\",\"metadata\":{},\"envVars\":{}}");
	write_record(dir, long_id);
	assert_int_equal(record__load(dir, &r), -EINVAL);
	free(long_id);

	/* The good one, for contrast; unknown members (alias) are fine. */
	write_record(dir, "{\"token\":\"" TOKEN "\",\"templateID\":\"base\","
			  "\"metadata\":{\"a\":\"b\"},\"envVars\":{},"
			  "\"alias\":\"x\"}");
	assert_int_equal(record__load(dir, &r), 0);
	assert_string_equal(r.token, TOKEN);
	assert_string_equal(r.template_id, "base");
	record__release(&r);
}

/* A symlink in the record's place is not followed. */
static void test_load_symlink(void **state)
{
	const char *dir = *state;
	char path[PATH_MAX], target[PATH_MAX];
	struct e2b_record r;

	write_record(dir, "{\"token\":\"" TOKEN "\",\"templateID\":\"base\","
			  "\"metadata\":{},\"envVars\":{}}");
	snprintf(path, sizeof(path), "%s/%s", dir, RECORD_NAME);
	snprintf(target, sizeof(target), "%s/real.json", dir);
	assert_int_equal(rename(path, target), 0);
	assert_int_equal(symlink(target, path), 0);
	assert_true(record__load(dir, &r) < 0);
	unlink(path);
	unlink(target);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init),
		cmocka_unit_test(test_token_ok),
		cmocka_unit_test(test_metadata_match),
		cmocka_unit_test_setup_teardown(test_round_trip, setup_dir,
						teardown_dir),
		cmocka_unit_test_setup_teardown(test_traffic_token, setup_dir,
						teardown_dir),
		cmocka_unit_test_setup_teardown(test_load_missing, setup_dir,
						teardown_dir),
		cmocka_unit_test_setup_teardown(test_load_bad, setup_dir,
						teardown_dir),
		cmocka_unit_test_setup_teardown(test_load_symlink, setup_dir,
						teardown_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
