// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for ember-e2b's Connect codec (api/e2b/connect_rpc.h):
 * envelopes (whole, split, too long), request messages (unary and
 * streaming, compressed and garbage refused), end-of-stream messages,
 * error codes and their HTTP statuses, and the proto3 JSON forms of
 * 64-bit integers and bytes.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../api/e2b/connect_rpc.h"

/* An envelope of @flags around @len bytes of @msg, malloc()ed. */
static uint8_t *envelope(uint8_t flags, const char *msg, size_t len,
			 size_t *outlen)
{
	uint8_t *b = malloc(CONNECT_ENVELOPE_HDR + len + 1);

	assert_non_null(b);
	b[0] = flags;
	b[1] = (uint8_t)(len >> 24);
	b[2] = (uint8_t)(len >> 16);
	b[3] = (uint8_t)(len >> 8);
	b[4] = (uint8_t)len;
	memcpy(b + CONNECT_ENVELOPE_HDR, msg, len);
	*outlen = CONNECT_ENVELOPE_HDR + len;
	return b;
}

/* --- envelopes ----------------------------------------------------------- */

static void test_unwrap_whole(void **state)
{
	json_t *m = json_pack("{s:i}", "a", 1);
	const uint8_t *msg = NULL;
	size_t len = 0, msglen = 0, used = 0;
	uint8_t flags = 0xff, *b;

	(void)state;
	b = connect__envelope(0, m, &len);
	assert_non_null(b);
	assert_int_equal(len, CONNECT_ENVELOPE_HDR + strlen("{\"a\":1}"));
	assert_int_equal(connect__unwrap(b, len, &flags, &msg, &msglen, &used),
			 0);
	assert_int_equal(flags, 0);
	assert_int_equal(msglen, strlen("{\"a\":1}"));
	assert_int_equal(used, len);
	assert_ptr_equal(msg, b + CONNECT_ENVELOPE_HDR);
	assert_memory_equal(msg, "{\"a\":1}", msglen);
	free(b);

	/* The flags come back as they were; an empty message is whole. */
	b = envelope(CONNECT_FLAG_END_STREAM, "", 0, &len);
	assert_int_equal(connect__unwrap(b, len, &flags, &msg, &msglen, &used),
			 0);
	assert_int_equal(flags, CONNECT_FLAG_END_STREAM);
	assert_int_equal(msglen, 0);
	assert_int_equal(used, CONNECT_ENVELOPE_HDR);
	free(b);
	json_decref(m);
}

static void test_unwrap_split(void **state)
{
	const uint8_t *msg;
	size_t len, msglen, used, k, off;
	uint8_t flags, *a, *b, *two;

	(void)state;
	a = envelope(0, "{\"x\":true}", 10, &len);
	/* Every strict prefix is not yet an envelope. */
	for (k = 0; k < len; k++)
		assert_int_equal(
			connect__unwrap(a, k, &flags, &msg, &msglen, &used),
			-EAGAIN);
	assert_int_equal(connect__unwrap(a, len, &flags, &msg, &msglen, &used),
			 0);

	/* Two envelopes back to back, then a partial third. */
	b = envelope(CONNECT_FLAG_END_STREAM, "{}", 2, &k);
	two = malloc(len + k + 3);
	assert_non_null(two);
	memcpy(two, a, len);
	memcpy(two + len, b, k);
	memcpy(two + len + k, "\0\0\0", 3);
	assert_int_equal(
		connect__unwrap(two, len + k + 3, &flags, &msg, &msglen, &used),
		0);
	assert_int_equal(flags, 0);
	assert_int_equal(used, len);
	assert_memory_equal(msg, "{\"x\":true}", msglen);
	off = used;
	assert_int_equal(connect__unwrap(two + off, len + k + 3 - off, &flags,
					 &msg, &msglen, &used),
			 0);
	assert_int_equal(flags, CONNECT_FLAG_END_STREAM);
	assert_int_equal(msglen, 2);
	assert_memory_equal(msg, "{}", 2);
	off += used;
	assert_int_equal(off, len + k);
	assert_int_equal(
		connect__unwrap(two + off, 3, &flags, &msg, &msglen, &used),
		-EAGAIN);
	free(two);
	free(b);
	free(a);
}

static void test_unwrap_too_long(void **state)
{
	uint8_t h[CONNECT_ENVELOPE_HDR] = { 0 };
	uint32_t n = CONNECT_MAX_MESSAGE + 1;
	const uint8_t *msg;
	size_t msglen, used;
	uint8_t flags;

	(void)state;
	/* Refused from the header alone, before the message came. */
	h[1] = (uint8_t)(n >> 24);
	h[2] = (uint8_t)(n >> 16);
	h[3] = (uint8_t)(n >> 8);
	h[4] = (uint8_t)n;
	assert_int_equal(
		connect__unwrap(h, sizeof(h), &flags, &msg, &msglen, &used),
		-EMSGSIZE);
	memset(h + 1, 0xff, 4);
	assert_int_equal(
		connect__unwrap(h, sizeof(h), &flags, &msg, &msglen, &used),
		-EMSGSIZE);
	/* At the limit it is only incomplete. */
	n = CONNECT_MAX_MESSAGE;
	h[1] = (uint8_t)(n >> 24);
	h[2] = (uint8_t)(n >> 16);
	h[3] = (uint8_t)(n >> 8);
	h[4] = (uint8_t)n;
	assert_int_equal(
		connect__unwrap(h, sizeof(h), &flags, &msg, &msglen, &used),
		-EAGAIN);
}

/* --- request messages ---------------------------------------------------- */

/* connect__request() that must fail with @want_code. */
static void request_fails(const char *body, size_t len, bool streaming,
			  const char *want_code)
{
	const char *code = NULL;
	char err[256];

	err[0] = '\0';
	assert_null(connect__request(body, len, streaming, &code, err,
				     sizeof(err)));
	assert_non_null(code);
	assert_string_equal(code, want_code);
	assert_true(strlen(err) > 0);
}

static void test_request_unary(void **state)
{
	static const char body[] = "{\"path\":\"/tmp\",\"depth\":\"2\"}";
	const char *code = NULL;
	char err[256];
	json_t *j;

	(void)state;
	j = connect__request(body, strlen(body), false, &code, err,
			     sizeof(err));
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "path")),
			    "/tmp");
	assert_string_equal(json_string_value(json_object_get(j, "depth")),
			    "2");
	json_decref(j);
	/* The length counts, not a NUL: trailing bytes past it are ignored. */
	j = connect__request("{}garbage", 2, false, &code, err, sizeof(err));
	assert_true(json_is_object(j));
	json_decref(j);
}

static void test_request_unary_garbage(void **state)
{
	char *big;

	(void)state;
	request_fails("nope", 4, false, "invalid_argument");
	request_fails("{\"a\":", 5, false, "invalid_argument");
	request_fails("[1,2]", 5, false, "invalid_argument");
	request_fails("\"s\"", 3, false, "invalid_argument");
	request_fails("42", 2, false, "invalid_argument");
	request_fails("{\"a\":1,\"a\":2}", 13, false, "invalid_argument");
	request_fails("{\"a\":1}\0x", 9, false, "invalid_argument");
	/* A body over CONNECT_MAX_MESSAGE is refused. */
	big = malloc(CONNECT_MAX_MESSAGE + 2);
	assert_non_null(big);
	memset(big, ' ', CONNECT_MAX_MESSAGE + 1);
	big[0] = '{';
	big[CONNECT_MAX_MESSAGE] = '}';
	request_fails(big, CONNECT_MAX_MESSAGE + 1, false, "invalid_argument");
	free(big);
}

static void test_request_streaming(void **state)
{
	static const char msg[] =
		"{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-c\",\"echo "
		"hi\"]},\"stdin\":false}";
	const char *code = NULL;
	char err[256];
	uint8_t *b, *two;
	size_t len;
	json_t *j;

	(void)state;
	b = envelope(0, msg, strlen(msg), &len);
	j = connect__request((const char *)b, len, true, &code, err,
			     sizeof(err));
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(
				    json_object_get(j, "process"), "cmd")),
			    "/bin/bash");
	assert_true(json_is_false(json_object_get(j, "stdin")));
	json_decref(j);

	/* Cut short, or with bytes past the one envelope. */
	request_fails((const char *)b, len - 1, true, "invalid_argument");
	request_fails((const char *)b, 3, true, "invalid_argument");
	request_fails("", 0, true, "invalid_argument");
	free(b);
	b = envelope(0, msg, strlen(msg), &len);
	two = malloc(len + CONNECT_ENVELOPE_HDR);
	assert_non_null(two);
	memcpy(two, b, len);
	memset(two + len, 0, CONNECT_ENVELOPE_HDR); /* a second, empty one */
	free(b);
	b = two;
	request_fails((const char *)b, len + CONNECT_ENVELOPE_HDR, true,
		      "invalid_argument");
	free(b);

	/* The message inside must be a JSON object too. */
	b = envelope(0, "[]", 2, &len);
	request_fails((const char *)b, len, true, "invalid_argument");
	free(b);
	b = envelope(0, "{bad", 4, &len);
	request_fails((const char *)b, len, true, "invalid_argument");
	free(b);
}

static void test_request_compressed(void **state)
{
	uint8_t *b;
	size_t len;

	(void)state;
	b = envelope(CONNECT_FLAG_COMPRESSED, "{}", 2, &len);
	request_fails((const char *)b, len, true, "unimplemented");
	free(b);
	b = envelope(CONNECT_FLAG_COMPRESSED | CONNECT_FLAG_END_STREAM, "{}", 2,
		     &len);
	request_fails((const char *)b, len, true, "unimplemented");
	free(b);
	/* An END_STREAM flag is no request's. */
	b = envelope(CONNECT_FLAG_END_STREAM, "{}", 2, &len);
	request_fails((const char *)b, len, true, "invalid_argument");
	free(b);
	/* A too long one is refused from its header. */
	b = envelope(0, "{}", 2, &len);
	memset(b + 1, 0xff, 4);
	request_fails((const char *)b, len, true, "invalid_argument");
	free(b);
}

/* --- answers ------------------------------------------------------------- */

/* Unwrap the whole of @b as one END_STREAM envelope and parse it. */
static json_t *end_stream_json(uint8_t *b, size_t len)
{
	const uint8_t *msg;
	size_t msglen, used;
	uint8_t flags;
	json_t *j;

	assert_non_null(b);
	assert_int_equal(connect__unwrap(b, len, &flags, &msg, &msglen, &used),
			 0);
	assert_int_equal(used, len);
	assert_int_equal(flags, CONNECT_FLAG_END_STREAM);
	j = json_loadb((const char *)msg, msglen, 0, NULL);
	assert_true(json_is_object(j));
	return j;
}

static void test_end_stream(void **state)
{
	json_t *j, *e;
	uint8_t *b;
	size_t len;

	(void)state;
	b = connect__end_stream(NULL, NULL, &len);
	j = end_stream_json(b, len);
	assert_int_equal(json_object_size(j), 0);
	json_decref(j);
	free(b);

	b = connect__end_stream("not_found", "no such file \"x\"\n", &len);
	j = end_stream_json(b, len);
	e = json_object_get(j, "error");
	assert_true(json_is_object(e));
	assert_string_equal(json_string_value(json_object_get(e, "code")),
			    "not_found");
	assert_string_equal(json_string_value(json_object_get(e, "message")),
			    "no such file \"x\"\n");
	json_decref(j);
	free(b);
}

static void test_error_json(void **state)
{
	json_t *j;

	(void)state;
	j = connect__error("invalid_argument", "bad path");
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "code")),
			    "invalid_argument");
	assert_string_equal(json_string_value(json_object_get(j, "message")),
			    "bad path");
	json_decref(j);
}

static void test_envelope_round_trip(void **state)
{
	json_t *m = json_pack("{s:{s:s}, s:[i,i]}", "event", "data",
			      "aGk=", "n", 1, 2),
	       *back;
	const char *code;
	char err[128];
	uint8_t *b;
	size_t len;

	(void)state;
	b = connect__envelope(0, m, &len);
	assert_non_null(b);
	back = connect__request((const char *)b, len, true, &code, err,
				sizeof(err));
	assert_non_null(back);
	assert_true(json_equal(m, back));
	json_decref(back);
	free(b);
	b = connect__envelope(CONNECT_FLAG_END_STREAM, m, &len);
	assert_non_null(b);
	assert_int_equal(b[0], CONNECT_FLAG_END_STREAM);
	free(b);
	json_decref(m);
}

static void test_http_status(void **state)
{
	static const struct {
		const char *code;
		unsigned int status;
	} t[] = {
		{ "canceled", 499 },
		{ "unknown", 500 },
		{ "invalid_argument", 400 },
		{ "deadline_exceeded", 504 },
		{ "not_found", 404 },
		{ "already_exists", 409 },
		{ "permission_denied", 403 },
		{ "resource_exhausted", 429 },
		{ "failed_precondition", 400 },
		{ "aborted", 409 },
		{ "out_of_range", 400 },
		{ "unimplemented", 501 },
		{ "internal", 500 },
		{ "unavailable", 503 },
		{ "data_loss", 500 },
		{ "unauthenticated", 401 },
		/* Ones it does not know. */
		{ "", 500 },
		{ "NOT_FOUND", 500 },
		{ "bogus", 500 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		assert_int_equal(connect__http_status(t[i].code), t[i].status);
}

/* --- proto3 JSON --------------------------------------------------------- */

/* connect__json_uint() of the JSON text @text. */
static int json_uint(const char *text, uint64_t max, uint64_t *out)
{
	json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
	int rc;

	assert_non_null(v);
	rc = connect__json_uint(v, max, out);
	json_decref(v);
	return rc;
}

static void test_json_uint(void **state)
{
	uint64_t n;

	(void)state;
	/* Numbers. */
	n = 99;
	assert_int_equal(json_uint("0", 10, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(json_uint("10", 10, &n), 0);
	assert_int_equal(n, 10);
	assert_int_equal(json_uint("11", 10, &n), -EINVAL);
	assert_int_equal(json_uint("9223372036854775807", UINT64_MAX, &n), 0);
	assert_true(n == INT64_MAX);
	/* Decimal strings, as int64 and uint64 are written. */
	assert_int_equal(json_uint("\"123\"", 1000, &n), 0);
	assert_int_equal(n, 123);
	assert_int_equal(json_uint("\"0\"", 0, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(json_uint("\"1001\"", 1000, &n), -EINVAL);
	assert_int_equal(json_uint("\"18446744073709551615\"", UINT64_MAX, &n),
			 0);
	assert_true(n == UINT64_MAX);
	assert_int_equal(json_uint("\"000000000000000000042\"", UINT64_MAX, &n),
			 -EINVAL); /* 21 digits */
	/* Overflow. */
	assert_int_equal(json_uint("\"18446744073709551616\"", UINT64_MAX, &n),
			 -EINVAL);
	assert_int_equal(json_uint("\"99999999999999999999\"", UINT64_MAX, &n),
			 -EINVAL);
	/* Negative. */
	assert_int_equal(json_uint("-1", UINT64_MAX, &n), -EINVAL);
	assert_int_equal(json_uint("\"-1\"", UINT64_MAX, &n), -EINVAL);
	assert_int_equal(json_uint("-9223372036854775807", UINT64_MAX, &n),
			 -EINVAL);
	/* Floats, and strings that are not plain decimals. */
	assert_int_equal(json_uint("1.5", UINT64_MAX, &n), -EINVAL);
	assert_int_equal(json_uint("\"1.5\"", UINT64_MAX, &n), -EINVAL);
	assert_int_equal(json_uint("1e300", UINT64_MAX, &n), -EINVAL);
	assert_int_equal(json_uint("\"\"", UINT64_MAX, &n), -EINVAL);
	assert_int_equal(json_uint("\" 1\"", UINT64_MAX, &n), -EINVAL);
	assert_int_equal(json_uint("\"1 \"", UINT64_MAX, &n), -EINVAL);
	assert_int_equal(json_uint("\"+1\"", UINT64_MAX, &n), -EINVAL);
	assert_int_equal(json_uint("\"0x10\"", UINT64_MAX, &n), -EINVAL);
	assert_int_equal(json_uint("\"12a\"", UINT64_MAX, &n), -EINVAL);
	/* Other types. */
	assert_int_equal(json_uint("null", UINT64_MAX, &n), -EINVAL);
	assert_int_equal(json_uint("true", UINT64_MAX, &n), -EINVAL);
	assert_int_equal(json_uint("[1]", UINT64_MAX, &n), -EINVAL);
	assert_int_equal(json_uint("{}", UINT64_MAX, &n), -EINVAL);
	assert_int_equal(connect__json_uint(NULL, UINT64_MAX, &n), -EINVAL);
}

/* connect__json_bytes() of the string @s: 0 and *@out (@want bytes). */
static void bytes_ok(const char *s, const void *want, size_t wantlen)
{
	json_t *v = json_string(s);
	uint8_t *out = NULL;
	size_t len = 12345;

	assert_non_null(v);
	assert_int_equal(connect__json_bytes(v, &out, &len), 0);
	assert_non_null(out);
	assert_int_equal(len, wantlen);
	if (wantlen)
		assert_memory_equal(out, want, wantlen);
	free(out);
	json_decref(v);
}

static void bytes_bad(const json_t *v)
{
	uint8_t *out = NULL;
	size_t len = 0;

	assert_int_equal(connect__json_bytes(v, &out, &len), -EINVAL);
}

static void test_json_bytes(void **state)
{
	static const uint8_t odd[] = { 0xfb, 0xff, 0xbf };
	json_t *v;

	(void)state;
	/* Standard, padded and not. */
	bytes_ok("aGVsbG8=", "hello", 5);
	bytes_ok("aGVsbG8", "hello", 5);
	bytes_ok("aGk=", "hi", 2);
	bytes_ok("aGk", "hi", 2);
	bytes_ok("aGVsbG8h", "hello!", 6);
	bytes_ok("", "", 0);
	/* The alphabets' differing characters: + / and - _. */
	bytes_ok("+/+/", odd, 3);
	bytes_ok("-_-_", odd, 3);
	bytes_ok("-_8", odd, 2);
	bytes_ok("+/8=", odd, 2);
	/* Bad. */
	v = json_string("a");
	bytes_bad(v); /* a lone sextet */
	json_decref(v);
	v = json_string("!!!!");
	bytes_bad(v);
	json_decref(v);
	v = json_string("aGVs bG8=");
	bytes_bad(v);
	json_decref(v);
	v = json_string("aGVs\nbG8=");
	bytes_bad(v);
	json_decref(v);
	v = json_stringn("aG\0k", 4);
	bytes_bad(v);
	json_decref(v);
	v = json_integer(12);
	bytes_bad(v);
	json_decref(v);
	v = json_null();
	bytes_bad(v);
	bytes_bad(NULL);
}

static void test_bytes_round_trip(void **state)
{
	uint8_t buf[256], *out;
	size_t n, len;
	json_t *v;

	(void)state;
	for (n = 0; n < sizeof(buf); n++)
		buf[n] = (uint8_t)(255 - n);
	for (n = 0; n <= sizeof(buf); n += 17) {
		v = connect__bytes_json(buf, n);
		assert_true(json_is_string(v));
		assert_int_equal(json_string_length(v) % 4, 0);
		out = NULL;
		assert_int_equal(connect__json_bytes(v, &out, &len), 0);
		assert_int_equal(len, n);
		if (n)
			assert_memory_equal(out, buf, n);
		free(out);
		json_decref(v);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unwrap_whole),
		cmocka_unit_test(test_unwrap_split),
		cmocka_unit_test(test_unwrap_too_long),
		cmocka_unit_test(test_request_unary),
		cmocka_unit_test(test_request_unary_garbage),
		cmocka_unit_test(test_request_streaming),
		cmocka_unit_test(test_request_compressed),
		cmocka_unit_test(test_end_stream),
		cmocka_unit_test(test_error_json),
		cmocka_unit_test(test_envelope_round_trip),
		cmocka_unit_test(test_http_status),
		cmocka_unit_test(test_json_uint),
		cmocka_unit_test(test_json_bytes),
		cmocka_unit_test(test_bytes_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
