// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for the port proxy's HTTP/1.x parsing (api/e2b/http1.h):
 * ports and Host values, status lines, header lines, the body's framing
 * (Content-Length, chunked, up to the end, none) and chunk sizes, each
 * with the inputs it must refuse.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../api/e2b/http1.h"

static int port_of(const char *s)
{
	return http1__parse_port(s, strlen(s));
}

static void test_parse_port(void **state)
{
	(void)state;
	assert_int_equal(port_of("1"), 1);
	assert_int_equal(port_of("3000"), 3000);
	assert_int_equal(port_of("65535"), 65535);
	assert_int_equal(http1__parse_port("80x", 2), 80);
	assert_int_equal(port_of(""), -EINVAL);
	assert_int_equal(port_of("0"), -EINVAL);
	assert_int_equal(port_of("080"), -EINVAL);
	assert_int_equal(port_of("65536"), -EINVAL);
	assert_int_equal(port_of("100000"), -EINVAL);
	assert_int_equal(port_of("+80"), -EINVAL);
	assert_int_equal(port_of("-80"), -EINVAL);
	assert_int_equal(port_of(" 80"), -EINVAL);
	assert_int_equal(port_of("8a"), -EINVAL);
}

static void test_host_target(void **state)
{
	char id[HTTP1_ID_LEN + 1];
	unsigned int port = 0;

	(void)state;
	assert_int_equal(http1__host_target("3000-0123456789ab.e2b.local",
					    "e2b.local", id, &port),
			 0);
	assert_int_equal(port, 3000);
	assert_string_equal(id, "0123456789ab");
	/* Case and the ":PORT" of either side do not count. */
	assert_int_equal(http1__host_target("8080-0123456789AB.E2B.Local:443",
					    "e2b.local:3049", id, &port),
			 0);
	assert_int_equal(port, 8080);
	assert_string_equal(id, "0123456789ab");
	/* An IPv6 domain keeps its colons. */
	assert_int_equal(
		http1__host_target("1-0123456789ab.[::1]", "[::1]", id, &port),
		0);
	assert_int_equal(port, 1);

	assert_int_equal(http1__host_target("3000-0123456789a.e2b.local",
					    "e2b.local", id, &port),
			 -EINVAL);
	assert_int_equal(http1__host_target("3000-0123456789abc.e2b.local",
					    "e2b.local", id, &port),
			 -EINVAL);
	assert_int_equal(http1__host_target("0-0123456789ab.e2b.local",
					    "e2b.local", id, &port),
			 -EINVAL);
	assert_int_equal(http1__host_target("70000-0123456789ab.e2b.local",
					    "e2b.local", id, &port),
			 -EINVAL);
	assert_int_equal(http1__host_target("-0123456789ab.e2b.local",
					    "e2b.local", id, &port),
			 -EINVAL);
	assert_int_equal(http1__host_target("3000-0123456789ab.e2b.evil",
					    "e2b.local", id, &port),
			 -EINVAL);
	assert_int_equal(http1__host_target("3000-0123456789ab.e2b.local.evil",
					    "e2b.local", id, &port),
			 -EINVAL);
	assert_int_equal(http1__host_target("3000-0123456789ab.e2b.loca",
					    "e2b.local", id, &port),
			 -EINVAL);
	assert_int_equal(
		http1__host_target("e2b.local", "e2b.local", id, &port),
		-EINVAL);
	assert_int_equal(
		http1__host_target("3000-0123456789ab", "e2b.local", id, &port),
		-EINVAL);
	assert_int_equal(http1__host_target("", "e2b.local", id, &port),
			 -EINVAL);
}

static int status_of(const char *s, unsigned int *st)
{
	return http1__status_line(s, strlen(s), st);
}

static void test_status_line(void **state)
{
	unsigned int st = 0;

	(void)state;
	assert_int_equal(status_of("HTTP/1.1 200 OK", &st), 0);
	assert_int_equal(st, 200);
	assert_int_equal(status_of("HTTP/1.0 404", &st), 0);
	assert_int_equal(st, 404);
	assert_int_equal(status_of("HTTP/1.1 101 Switching Protocols", &st), 0);
	assert_int_equal(st, 101);
	assert_int_equal(status_of("HTTP/1.1 599 \tx y\x80", &st), 0);
	assert_int_equal(st, 599);
	assert_int_equal(status_of("HTTP/1.1 100 ", &st), 0);
	assert_int_equal(st, 100);

	assert_int_equal(status_of("HTTP/1.2 200 OK", &st), -EINVAL);
	assert_int_equal(status_of("HTTP/2 200", &st), -EINVAL);
	assert_int_equal(status_of("http/1.1 200 OK", &st), -EINVAL);
	assert_int_equal(status_of("HTTP/1.1 099 x", &st), -EINVAL);
	assert_int_equal(status_of("HTTP/1.1 600 x", &st), -EINVAL);
	assert_int_equal(status_of("HTTP/1.1 2000 x", &st), -EINVAL);
	assert_int_equal(status_of("HTTP/1.1 20", &st), -EINVAL);
	assert_int_equal(status_of("HTTP/1.1 +20 x", &st), -EINVAL);
	assert_int_equal(status_of("HTTP/1.1  200 x", &st), -EINVAL);
	assert_int_equal(status_of("HTTP/1.1\t200 x", &st), -EINVAL);
	assert_int_equal(status_of("HTTP/1.1 200 a\rb", &st), -EINVAL);
	assert_int_equal(http1__status_line("HTTP/1.1 200 a\0b", 16, &st),
			 -EINVAL);
	assert_int_equal(status_of("", &st), -EINVAL);
}

/* Split a copy of @s: 0 with the name and value in @k and @v, or the error. */
static int split(const char *s, size_t len, char *k, char *v)
{
	char buf[256];
	char *kn, *vn;
	int rc;

	memcpy(buf, s, len);
	buf[len] = 'X'; /* written by the split */
	rc = http1__header_split(buf, len, &kn, &vn);
	if (!rc) {
		strcpy(k, kn);
		strcpy(v, vn);
	}
	return rc;
}

#define SPLIT(s, k, v) split(s, sizeof(s) - 1, k, v)

static void test_header_split(void **state)
{
	static char big[HTTP1_LINE_MAX + 1];
	char k[256], v[256], *kn, *vn;

	(void)state;
	assert_int_equal(SPLIT("Content-Type: text/plain", k, v), 0);
	assert_string_equal(k, "Content-Type");
	assert_string_equal(v, "text/plain");
	assert_int_equal(SPLIT("X-A:\t a b \t ", k, v), 0);
	assert_string_equal(k, "X-A");
	assert_string_equal(v, "a b");
	assert_int_equal(SPLIT("X-Empty:", k, v), 0);
	assert_string_equal(v, "");
	assert_int_equal(SPLIT("X-Empty:   ", k, v), 0);
	assert_string_equal(v, "");
	assert_int_equal(SPLIT("!#$%&'*+-.^_`|~09az:x:y", k, v), 0);
	assert_string_equal(k, "!#$%&'*+-.^_`|~09az");
	assert_string_equal(v, "x:y");
	assert_int_equal(SPLIT("X-Utf8: caf\xc3\xa9", k, v), 0);
	assert_string_equal(v, "caf\xc3\xa9");

	assert_int_equal(SPLIT("", k, v), -EINVAL);
	assert_int_equal(SPLIT("NoColon", k, v), -EINVAL);
	assert_int_equal(SPLIT(": empty name", k, v), -EINVAL);
	assert_int_equal(SPLIT(" folded: x", k, v), -EINVAL);
	assert_int_equal(SPLIT("\tfolded", k, v), -EINVAL);
	assert_int_equal(SPLIT("Name : x", k, v), -EINVAL);
	assert_int_equal(SPLIT("Na me: x", k, v), -EINVAL);
	assert_int_equal(SPLIT("Na(me): x", k, v), -EINVAL);
	assert_int_equal(SPLIT("X: a\rInjected: b", k, v), -EINVAL);
	assert_int_equal(SPLIT("X: a\nInjected: b", k, v), -EINVAL);
	assert_int_equal(SPLIT("X: a\0b", k, v), -EINVAL);
	assert_int_equal(SPLIT("X\0: b", k, v), -EINVAL);
	assert_int_equal(SPLIT("X: \x7f", k, v), -EINVAL);
	memset(big, 'a', sizeof(big) - 1);
	big[10] = ':';
	assert_int_equal(http1__header_split(big, HTTP1_LINE_MAX, &kn, &vn),
			 -EINVAL);
	assert_int_equal(http1__header_split(big, HTTP1_LINE_MAX - 1, &kn, &vn),
			 0);
	assert_int_equal(strlen(vn), HTTP1_LINE_MAX - 12);
}

static struct http1_body body(unsigned int status, bool head,
			      const char *const *kv)
{
	struct http1_framing f = { 0 };

	for (; kv[0]; kv += 2)
		assert_int_equal(http1__framing_add(&f, kv[0], kv[1]), 0);
	return http1__body_mode(&f, status, head);
}

static void test_body_mode(void **state)
{
	static const char *const none[] = { NULL };
	static const char *const len[] = { "content-length", "42", "X-Other",
					   "zz", NULL };
	static const char *const same[] = { "Content-Length", "7",
					    "Content-Length", "7, 7", NULL };
	static const char *const chunked[] = { "Transfer-Encoding",
					       "gzip, Chunked", NULL };
	static const char *const both[] = { "Content-Length", "5",
					    "Transfer-Encoding", "chunked",
					    NULL };
	static const char *const notlast[] = { "Transfer-Encoding",
					       "chunked, gzip", NULL };
	static const char *const te_cl[] = { "Transfer-Encoding", "gzip",
					     "Content-Length", "5", NULL };
	static const char *const two_te[] = { "Transfer-Encoding", "gzip",
					      "Transfer-Encoding", "chunked",
					      NULL };
	static const char *const max[] = { "Content-Length",
					   "18446744073709551615", NULL };
	struct http1_body b;

	(void)state;
	b = body(200, false, none);
	assert_int_equal(b.mode, HTTP1_BODY_EOF);
	assert_true(b.size == HTTP1_SIZE_UNKNOWN);
	b = body(200, false, len);
	assert_int_equal(b.mode, HTTP1_BODY_LEN);
	assert_true(b.len == 42 && b.size == 42);
	b = body(200, false, same);
	assert_int_equal(b.mode, HTTP1_BODY_LEN);
	assert_true(b.len == 7);
	b = body(200, false, max);
	assert_true(b.len == UINT64_MAX);
	b = body(200, false, chunked);
	assert_int_equal(b.mode, HTTP1_BODY_CHUNKED);
	assert_true(b.size == HTTP1_SIZE_UNKNOWN);
	b = body(200, false, both);
	assert_int_equal(b.mode, HTTP1_BODY_CHUNKED);
	b = body(200, false, notlast);
	assert_int_equal(b.mode, HTTP1_BODY_EOF);
	b = body(200, false, te_cl);
	assert_int_equal(b.mode, HTTP1_BODY_EOF);
	b = body(200, false, two_te);
	assert_int_equal(b.mode, HTTP1_BODY_CHUNKED);
	/* No body: HEAD (its size kept), 1xx, 204, 304. */
	b = body(200, true, len);
	assert_int_equal(b.mode, HTTP1_BODY_NONE);
	assert_true(b.size == 42);
	b = body(200, true, chunked);
	assert_int_equal(b.mode, HTTP1_BODY_NONE);
	assert_true(b.size == 0);
	b = body(204, false, len);
	assert_int_equal(b.mode, HTTP1_BODY_NONE);
	assert_true(b.size == 0);
	b = body(304, false, chunked);
	assert_int_equal(b.mode, HTTP1_BODY_NONE);
	assert_true(b.size == 0);
	b = body(103, false, none);
	assert_int_equal(b.mode, HTTP1_BODY_NONE);
}

static void test_bad_length(void **state)
{
	static const char *const bad[] = {
		"",
		" ",
		"-1",
		"+1",
		"0x10",
		"1 2",
		"1,",
		",1",
		"1,2",
		"5, 6",
		"1.0",
		"abc",
		"18446744073709551616",
		"99999999999999999999999",
	};
	struct http1_framing f = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		memset(&f, 0, sizeof(f));
		assert_int_equal(
			http1__framing_add(&f, "Content-Length", bad[i]),
			-EINVAL);
		assert_false(f.has_len);
	}
	/* A second one that says otherwise. */
	memset(&f, 0, sizeof(f));
	assert_int_equal(http1__framing_add(&f, "Content-Length", "10"), 0);
	assert_int_equal(http1__framing_add(&f, "content-length", "11"),
			 -EINVAL);
	assert_true(f.has_len && f.len == 10);
	assert_int_equal(http1__framing_add(&f, "Content-Length", " 10 "), 0);
	/* Other headers are not looked at. */
	assert_int_equal(http1__framing_add(&f, "Content-Lengths", "x"), 0);
	assert_int_equal(http1__framing_add(&f, "Transfer-Encoding", " , "), 0);
	assert_false(f.te);
}

static int chunk_of(const char *s, uint64_t *n)
{
	return http1__chunk_size(s, strlen(s), n);
}

static void test_chunk_size(void **state)
{
	uint64_t n = 1;

	(void)state;
	assert_int_equal(chunk_of("0", &n), 0);
	assert_true(n == 0);
	assert_int_equal(chunk_of("1aF", &n), 0);
	assert_true(n == 0x1af);
	assert_int_equal(chunk_of("10;name=value", &n), 0);
	assert_true(n == 16);
	assert_int_equal(chunk_of("10 \t; ext", &n), 0);
	assert_true(n == 16);
	assert_int_equal(chunk_of("10 ", &n), 0);
	assert_int_equal(chunk_of("ffffffffffffffff", &n), 0);
	assert_true(n == UINT64_MAX);
	assert_int_equal(chunk_of("0000000000000000000001", &n), 0);
	assert_true(n == 1);

	assert_int_equal(chunk_of("", &n), -EINVAL);
	assert_int_equal(chunk_of(";x", &n), -EINVAL);
	assert_int_equal(chunk_of(" 1", &n), -EINVAL);
	assert_int_equal(chunk_of("0x10", &n), -EINVAL);
	assert_int_equal(chunk_of("+1", &n), -EINVAL);
	assert_int_equal(chunk_of("-1", &n), -EINVAL);
	assert_int_equal(chunk_of("1 2", &n), -EINVAL);
	assert_int_equal(chunk_of("1g", &n), -EINVAL);
	assert_int_equal(chunk_of("1;a\rb", &n), -EINVAL);
	assert_int_equal(chunk_of("10000000000000000", &n), -EINVAL);
	assert_int_equal(http1__chunk_size("1\0", 2, &n), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_port),
		cmocka_unit_test(test_host_target),
		cmocka_unit_test(test_status_line),
		cmocka_unit_test(test_header_split),
		cmocka_unit_test(test_body_mode),
		cmocka_unit_test(test_bad_length),
		cmocka_unit_test(test_chunk_size),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
