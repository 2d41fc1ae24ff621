// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for the guest agent's protocol (guest-init/protocol.h): the
 * frame and field codecs, every malformed case; then the agent itself,
 * built for this host as build/test/agent-host and driven over a
 * socketpair (no VM): exec, streams, stdin, concurrency, timeouts, kill,
 * files, malformed frames, INIT (through the agent's report hook, and for
 * real: OK when privileged, ERROR(EPERM) when not).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../guest-init/protocol.h"

#define AGENT_BIN "build/test/agent-host"
#define BUF_MAX	  (EMBER_AGENT_MAX_PAYLOAD + 64)

/* ---- codec ------------------------------------------------------------ */

static uint8_t pl[BUF_MAX];
static struct ember_agent_exec ex;

static void test_hdr_roundtrip(void **state)
{
	struct ember_agent_hdr h;
	uint8_t b[EMBER_AGENT_HDR_SIZE];

	(void)state;
	ember_agent_hdr_encode(b, EMBER_AGENT_EXEC, 0xdeadbeef, 1234);
	assert_memory_equal(
		b, "EMBA\x01\x00\x03\x00\xef\xbe\xad\xde\xd2\x04\0\0", 16);
	assert_int_equal(ember_agent_hdr_decode(b, sizeof(b), &h), 0);
	assert_int_equal(h.type, EMBER_AGENT_EXEC);
	assert_int_equal(h.stream, 0xdeadbeef);
	assert_int_equal(h.len, 1234);
	ember_agent_hdr_encode(b, EMBER_AGENT_PING, 1, EMBER_AGENT_MAX_PAYLOAD);
	assert_int_equal(ember_agent_hdr_decode(b, sizeof(b), &h), 0);
}

static void test_hdr_malformed(void **state)
{
	struct ember_agent_hdr h;
	uint8_t b[EMBER_AGENT_HDR_SIZE];

	(void)state;
	ember_agent_hdr_encode(b, EMBER_AGENT_PING, 1, 0);
	for (size_t n = 0; n < sizeof(b); n++)
		assert_int_equal(ember_agent_hdr_decode(b, n, &h),
				 EMBER_AGENT_E_TRUNCATED);
	b[0] = 'X';
	assert_int_equal(ember_agent_hdr_decode(b, 16, &h),
			 EMBER_AGENT_E_MAGIC);
	ember_agent_hdr_encode(b, EMBER_AGENT_PING, 1, 0);
	b[4] = 2;
	assert_int_equal(ember_agent_hdr_decode(b, 16, &h),
			 EMBER_AGENT_E_VERSION);
	ember_agent_hdr_encode(b, 0, 1, 0);
	assert_int_equal(ember_agent_hdr_decode(b, 16, &h), EMBER_AGENT_E_TYPE);
	ember_agent_hdr_encode(b, EMBER_AGENT_TYPE_MAX + 1, 1, 5);
	assert_int_equal(ember_agent_hdr_decode(b, 16, &h), EMBER_AGENT_E_TYPE);
	assert_int_equal(h.len, 5); /* skippable */
	ember_agent_hdr_encode(b, EMBER_AGENT_PING, 1,
			       EMBER_AGENT_MAX_PAYLOAD + 1);
	assert_int_equal(ember_agent_hdr_decode(b, 16, &h),
			 EMBER_AGENT_E_LENGTH);
	ember_agent_hdr_encode(b, EMBER_AGENT_PING, 1, UINT32_MAX);
	assert_int_equal(ember_agent_hdr_decode(b, 16, &h),
			 EMBER_AGENT_E_LENGTH);
}

static size_t build_exec(uint8_t *b, size_t cap)
{
	size_t off = 0;

	assert_int_equal(
		ember_agent_tlv_put_str(b, cap, &off, EMBER_AGENT_T_ARG, "sh"),
		0);
	assert_int_equal(
		ember_agent_tlv_put_str(b, cap, &off, EMBER_AGENT_T_ARG, "-c"),
		0);
	assert_int_equal(
		ember_agent_tlv_put_str(b, cap, &off, EMBER_AGENT_T_ENV, "A=1"),
		0);
	assert_int_equal(ember_agent_tlv_put_str(b, cap, &off,
						 EMBER_AGENT_T_CWD, "/tmp"),
			 0);
	assert_int_equal(ember_agent_tlv_put_u32(b, cap, &off,
						 EMBER_AGENT_T_TIMEOUT, 500),
			 0);
	assert_int_equal(ember_agent_tlv_put_u32(
				 b, cap, &off, EMBER_AGENT_T_FLAGS,
				 EMBER_AGENT_F_STDIN | EMBER_AGENT_F_ENV_ADD),
			 0);
	assert_int_equal(ember_agent_tlv_put_str(b, cap, &off,
						 EMBER_AGENT_T_USER,
						 "nobody:users"),
			 0);
	return off;
}

static void test_exec_roundtrip(void **state)
{
	size_t n;

	(void)state;
	n = build_exec(pl, sizeof(pl));
	assert_int_equal(ember_agent_exec_decode(pl, n, &ex), 0);
	assert_int_equal(ex.argc, 2);
	assert_string_equal(ex.argv[0], "sh");
	assert_string_equal(ex.argv[1], "-c");
	assert_null(ex.argv[2]);
	assert_int_equal(ex.envc, 1);
	assert_true(ex.env_given);
	assert_string_equal(ex.env[0], "A=1");
	assert_null(ex.env[1]);
	assert_string_equal(ex.cwd, "/tmp");
	assert_int_equal(ex.timeout_ms, 500);
	assert_int_equal(ex.flags, EMBER_AGENT_F_STDIN | EMBER_AGENT_F_ENV_ADD);
	assert_string_equal(ex.user, "nobody:users");
	/* No USER: NULL, the guest's default. */
	n = 0;
	ember_agent_tlv_put_str(pl, sizeof(pl), &n, EMBER_AGENT_T_ARG, "a");
	assert_int_equal(ember_agent_exec_decode(pl, n, &ex), 0);
	assert_null(ex.user);
	assert_null(ex.cwd);
}

static void test_user_spec(void **state)
{
	char big[EMBER_USER_SPEC_MAX + 2];

	(void)state;
	assert_int_equal(ember_user_spec_split("root"), 4);
	assert_int_equal(ember_user_spec_split("1000"), 4);
	assert_int_equal(ember_user_spec_split("app:staff"), 3);
	assert_int_equal(ember_user_spec_split("1000:1000"), 4);
	assert_int_equal(ember_user_spec_split(""), -1);
	assert_int_equal(ember_user_spec_split(":g"), -1);
	assert_int_equal(ember_user_spec_split("u:"), -1);
	assert_int_equal(ember_user_spec_split("a:b:c"), -1);
	memset(big, 'u', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(ember_user_spec_split(big), -1);
	big[sizeof(big) - 2] = '\0';
	assert_int_equal(ember_user_spec_split(big), EMBER_USER_SPEC_MAX);
}

static struct ember_defaults defs;

/* Decode the @len bytes @f as a defaults file: the result. */
static int defaults_of(const char *f, size_t len)
{
	memcpy(pl, f, len);
	return ember_defaults_decode(pl, len, &defs);
}

#define DEFAULTS(lit) defaults_of(lit, sizeof(lit) - 1)

static void test_defaults_decode(void **state)
{
	size_t n;

	(void)state;
	assert_int_equal(defaults_of("", 0), 0);
	assert_int_equal(defs.envc, 0);
	assert_null(defs.cwd);
	assert_null(defs.user);
	assert_null(defs.env[0]);
	assert_int_equal(DEFAULTS("env=A=1\0cwd=/srv\0env=B=\0"
				  "user=app:staff\0env=A=2\0"),
			 0);
	assert_int_equal(defs.envc, 3);
	assert_string_equal(defs.env[0], "A=1");
	assert_string_equal(defs.env[1], "B=");
	assert_string_equal(defs.env[2], "A=2");
	assert_null(defs.env[3]);
	assert_string_equal(defs.cwd, "/srv");
	assert_string_equal(defs.user, "app:staff");
	assert_null(defs.why);
	/* Values may hold '=' and anything but NUL. */
	assert_int_equal(DEFAULTS("env=X=a=b c\0"), 0);
	assert_string_equal(defs.env[0], "X=a=b c");

	/* Each malformed case: its error, its record and a reason. */
#define BAD(lit, err, rec)                            \
	do {                                          \
		assert_int_equal(DEFAULTS(lit), err); \
		assert_int_equal(defs.record, rec);   \
		assert_non_null(defs.why);            \
	} while (0)
	BAD("env=A=1", EMBER_AGENT_E_STRING, 1);
	BAD("env=A=1\0cwd=/", EMBER_AGENT_E_STRING, 2);
	BAD("\0", EMBER_AGENT_E_STRING, 1);
	BAD("env=A=1\0\0", EMBER_AGENT_E_STRING, 2);
	BAD("env=A\0", EMBER_AGENT_E_FIELD, 1);
	BAD("env==1\0", EMBER_AGENT_E_FIELD, 1);
	BAD("env=\0", EMBER_AGENT_E_FIELD, 1);
	BAD("cwd=/a\0cwd=/b\0", EMBER_AGENT_E_FIELD, 2);
	BAD("cwd=rel\0", EMBER_AGENT_E_FIELD, 1);
	BAD("cwd=\0", EMBER_AGENT_E_FIELD, 1);
	BAD("user=a\0user=b\0", EMBER_AGENT_E_FIELD, 2);
	BAD("user=\0", EMBER_AGENT_E_FIELD, 1);
	BAD("user=a:\0", EMBER_AGENT_E_FIELD, 1);
	BAD("user=a:b:c\0", EMBER_AGENT_E_FIELD, 1);
	BAD("path=/x\0", EMBER_AGENT_E_FIELD, 1);
	BAD("ENV=A=1\0", EMBER_AGENT_E_FIELD, 1);
	BAD("env\0", EMBER_AGENT_E_FIELD, 1);
#undef BAD
	/* 256 env records, not 257. */
	n = 0;
	for (int i = 0; i < EMBER_DEFAULTS_MAX_ENV + 1; i++)
		n += (size_t)sprintf((char *)pl + n, "env=V%d=%d", i, i) + 1;
	assert_int_equal(ember_defaults_decode(pl, n, &defs),
			 EMBER_AGENT_E_COUNT);
	assert_int_equal(defs.record, EMBER_DEFAULTS_MAX_ENV + 1);
	n -= strlen("env=V256=256") + 1;
	assert_int_equal(ember_defaults_decode(pl, n, &defs), 0);
	assert_int_equal(defs.envc, EMBER_DEFAULTS_MAX_ENV);
	assert_null(defs.env[EMBER_DEFAULTS_MAX_ENV]);
	/* 64 KiB, not a byte more. */
	memset(pl, 'x', EMBER_DEFAULTS_MAX + 1);
	memcpy(pl, "env=X=", 6);
	pl[EMBER_DEFAULTS_MAX - 1] = 0;
	assert_int_equal(ember_defaults_decode(pl, EMBER_DEFAULTS_MAX, &defs),
			 0);
	assert_int_equal(strlen(defs.env[0]), EMBER_DEFAULTS_MAX - 5);
	pl[EMBER_DEFAULTS_MAX] = 0;
	assert_int_equal(
		ember_defaults_decode(pl, EMBER_DEFAULTS_MAX + 1, &defs),
		EMBER_AGENT_E_LENGTH);
	assert_int_equal(defs.record, 0);
	assert_non_null(defs.why);
}

static void test_defaults_encode(void **state)
{
	const char *env[] = { "PATH=/usr/local/bin:/bin", "LANG=C.UTF-8",
			      NULL };
	const char *bad_env[] = { "NOEQUALS", NULL };
	static const char *many[EMBER_DEFAULTS_MAX_ENV + 2];
	static const char want[] = "env=PATH=/usr/local/bin:/bin\0"
				   "env=LANG=C.UTF-8\0cwd=/app\0user=1000:1000";
	char out[256];
	long n;

	(void)state;
	n = ember_defaults_encode(out, sizeof(out), env, "/app", "1000:1000");
	assert_int_equal(n, sizeof(want));
	assert_memory_equal(out, want, sizeof(want));
	assert_int_equal(ember_defaults_decode(out, (size_t)n, &defs), 0);
	assert_int_equal(defs.envc, 2);
	assert_string_equal(defs.env[0], env[0]);
	assert_string_equal(defs.env[1], env[1]);
	assert_string_equal(defs.cwd, "/app");
	assert_string_equal(defs.user, "1000:1000");
	/* Nothing at all: an empty file. */
	assert_int_equal(
		ember_defaults_encode(out, sizeof(out), NULL, NULL, NULL), 0);
	/* What the decoder would refuse is refused. */
	assert_int_equal(
		ember_defaults_encode(out, sizeof(out), bad_env, NULL, NULL),
		EMBER_AGENT_E_FIELD);
	assert_int_equal(
		ember_defaults_encode(out, sizeof(out), NULL, "rel", NULL),
		EMBER_AGENT_E_FIELD);
	assert_int_equal(
		ember_defaults_encode(out, sizeof(out), NULL, NULL, "a:b:c"),
		EMBER_AGENT_E_FIELD);
	for (int i = 0; i < EMBER_DEFAULTS_MAX_ENV + 1; i++)
		many[i] = "A=1";
	assert_int_equal(
		ember_defaults_encode(pl, sizeof(pl), many, NULL, NULL),
		EMBER_AGENT_E_COUNT);
	many[EMBER_DEFAULTS_MAX_ENV] = NULL;
	n = ember_defaults_encode(pl, sizeof(pl), many, NULL, NULL);
	assert_int_equal(n, EMBER_DEFAULTS_MAX_ENV * 8);
	assert_int_equal(ember_defaults_decode(pl, (size_t)n, &defs), 0);
	/* Too small a buffer: every cut. */
	for (size_t cap = 0; cap < sizeof(want); cap++)
		assert_int_equal(ember_defaults_encode(out, cap, env, "/app",
						       "1000:1000"),
				 EMBER_AGENT_E_NOSPACE);
}

/* Every cut of a valid list that is not at a field boundary is truncated. */
static void test_exec_truncated(void **state)
{
	size_t n, bounds[] = { 11, 22, 34, 47, 59, 71, 92 };

	(void)state;
	n = build_exec(pl, sizeof(pl));
	assert_int_equal(n, 92);
	for (size_t cut = 0; cut < n; cut++) {
		int rc = ember_agent_exec_decode(pl, cut, &ex), boundary = 0;

		for (size_t i = 0; i < 7; i++)
			boundary |= cut == bounds[i];
		if (cut == 0)
			assert_int_equal(rc, EMBER_AGENT_E_MISSING);
		else if (boundary)
			assert_int_equal(rc, 0);
		else
			assert_int_equal(rc, EMBER_AGENT_E_TRUNCATED);
	}
	/* A field length that would wrap a 32-bit offset. */
	ember_agent_put32(pl + 4, UINT32_MAX);
	assert_int_equal(ember_agent_exec_decode(pl, n, &ex),
			 EMBER_AGENT_E_TRUNCATED);
	ember_agent_put32(pl + 4, UINT32_MAX - 7);
	assert_int_equal(ember_agent_exec_decode(pl, n, &ex),
			 EMBER_AGENT_E_TRUNCATED);
}

static int decode_one(uint16_t tag, const void *v, uint32_t vlen)
{
	size_t off = 0;

	assert_int_equal(ember_agent_tlv_put_str(pl, sizeof(pl), &off,
						 EMBER_AGENT_T_ARG, "true"),
			 0);
	assert_int_equal(
		ember_agent_tlv_put(pl, sizeof(pl), &off, tag, v, vlen), 0);
	return ember_agent_exec_decode(pl, off, &ex);
}

static void test_exec_malformed(void **state)
{
	uint8_t u32[4] = { 1, 0, 0, 0 }, big[4] = { 32, 0, 0, 0 };
	uint8_t detach[4] = { 16, 0, 0, 0 }, keep[4] = { 24, 0, 0, 0 };
	size_t off;

	(void)state;
	assert_int_equal(decode_one(EMBER_AGENT_T_ARG, "x", 1),
			 EMBER_AGENT_E_STRING);
	assert_int_equal(decode_one(EMBER_AGENT_T_ARG, "a\0b", 4),
			 EMBER_AGENT_E_STRING);
	assert_int_equal(decode_one(EMBER_AGENT_T_ENV, "", 0),
			 EMBER_AGENT_E_STRING);
	assert_int_equal(decode_one(EMBER_AGENT_T_CWD, "\0", 2),
			 EMBER_AGENT_E_STRING);
	assert_int_equal(decode_one(EMBER_AGENT_T_TIMEOUT, u32, 3),
			 EMBER_AGENT_E_FIELD);
	assert_int_equal(decode_one(EMBER_AGENT_T_FLAGS, "12345", 5),
			 EMBER_AGENT_E_FIELD);
	assert_int_equal(decode_one(EMBER_AGENT_T_FLAGS, big, 4),
			 EMBER_AGENT_E_FIELD);
	/* DETACH wants KEEP. */
	assert_int_equal(decode_one(EMBER_AGENT_T_FLAGS, detach, 4),
			 EMBER_AGENT_E_FIELD);
	assert_int_equal(decode_one(EMBER_AGENT_T_FLAGS, keep, 4), 0);
	assert_int_equal(decode_one(EMBER_AGENT_T_PATH, "/x", 3),
			 EMBER_AGENT_E_FIELD);
	assert_int_equal(decode_one(0, "", 0), EMBER_AGENT_E_FIELD);
	assert_int_equal(decode_one(0xffff, "", 0), EMBER_AGENT_E_FIELD);
	assert_int_equal(decode_one(EMBER_AGENT_T_FLAGS, u32, 4), 0);
	assert_int_equal(decode_one(EMBER_AGENT_T_USER, "x", 1),
			 EMBER_AGENT_E_STRING);
	assert_int_equal(decode_one(EMBER_AGENT_T_USER, "", 0),
			 EMBER_AGENT_E_STRING);
	/* Repeated USER. */
	off = 0;
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_ARG, "a");
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_USER, "a");
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_USER, "b");
	assert_int_equal(ember_agent_exec_decode(pl, off, &ex),
			 EMBER_AGENT_E_FIELD);
	/* Reserved bits. */
	off = 0;
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_ARG, "a");
	pl[2] = 1;
	assert_int_equal(ember_agent_exec_decode(pl, off, &ex),
			 EMBER_AGENT_E_FIELD);
	/* Repeated single fields. */
	off = 0;
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_ARG, "a");
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_CWD, "/");
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_CWD, "/");
	assert_int_equal(ember_agent_exec_decode(pl, off, &ex),
			 EMBER_AGENT_E_FIELD);
	off = 0;
	ember_agent_tlv_put_u32(pl, sizeof(pl), &off, EMBER_AGENT_T_TIMEOUT, 1);
	ember_agent_tlv_put_u32(pl, sizeof(pl), &off, EMBER_AGENT_T_TIMEOUT, 1);
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_ARG, "a");
	assert_int_equal(ember_agent_exec_decode(pl, off, &ex),
			 EMBER_AGENT_E_FIELD);
	/* No argv. */
	off = 0;
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_ENV, "A=");
	assert_int_equal(ember_agent_exec_decode(pl, off, &ex),
			 EMBER_AGENT_E_MISSING);
	/* Trailing garbage shorter than a field header. */
	off = 0;
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_ARG, "a");
	assert_int_equal(ember_agent_exec_decode(pl, off + 3, &ex),
			 EMBER_AGENT_E_TRUNCATED);
}

/* An EXEC of ARG "a" and the fields put by @fn: its decoder's result. */
static size_t exec_with(void (*fn)(size_t *off))
{
	size_t off = 0;

	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_ARG, "a");
	fn(&off);
	return off;
}

static void put_rlimit(size_t *off, uint32_t res, uint64_t soft, uint64_t hard)
{
	uint8_t v[EMBER_AGENT_RLIMIT_SIZE];

	ember_agent_rlimit_encode(v, res, soft, hard);
	assert_int_equal(ember_agent_tlv_put(pl, sizeof(pl), off,
					     EMBER_AGENT_T_RLIMIT, v,
					     sizeof(v)),
			 0);
}

static void put_size(size_t *off, uint16_t rows, uint16_t cols)
{
	uint8_t v[EMBER_AGENT_WINSIZE_SIZE];

	ember_agent_winsize_encode(v, rows, cols);
	assert_int_equal(ember_agent_tlv_put(pl, sizeof(pl), off,
					     EMBER_AGENT_T_TTY_SIZE, v,
					     sizeof(v)),
			 0);
}

static void f_all(size_t *off)
{
	ember_agent_tlv_put_str(pl, sizeof(pl), off, EMBER_AGENT_T_ROOT,
				"/run/c/rootfs");
	put_rlimit(off, 7, 1024, 4096); /* RLIMIT_NOFILE */
	put_rlimit(off, 0, 5, EMBER_AGENT_RLIM_INFINITY);
	put_rlimit(off, 15, EMBER_AGENT_RLIM_INFINITY,
		   EMBER_AGENT_RLIM_INFINITY);
	put_size(off, 24, 80);
	ember_agent_tlv_put_u32(pl, sizeof(pl), off, EMBER_AGENT_T_FLAGS,
				EMBER_AGENT_F_TTY | EMBER_AGENT_F_STDIN);
}

static void f_relative_root(size_t *off)
{
	ember_agent_tlv_put_str(pl, sizeof(pl), off, EMBER_AGENT_T_ROOT,
				"rootfs");
}

static void f_two_roots(size_t *off)
{
	ember_agent_tlv_put_str(pl, sizeof(pl), off, EMBER_AGENT_T_ROOT, "/a");
	ember_agent_tlv_put_str(pl, sizeof(pl), off, EMBER_AGENT_T_ROOT, "/b");
}

static void f_root_env_add(size_t *off)
{
	ember_agent_tlv_put_str(pl, sizeof(pl), off, EMBER_AGENT_T_ROOT, "/a");
	ember_agent_tlv_put_u32(pl, sizeof(pl), off, EMBER_AGENT_T_FLAGS,
				EMBER_AGENT_F_ENV_ADD);
}

static void f_rlimit_resource(size_t *off)
{
	put_rlimit(off, EMBER_AGENT_NR_RLIMITS, 1, 1);
}

static void f_rlimit_soft_over_hard(size_t *off)
{
	put_rlimit(off, 7, 2, 1);
}

static void f_rlimit_twice(size_t *off)
{
	put_rlimit(off, 7, 1, 1);
	put_rlimit(off, 7, 2, 2);
}

static void f_rlimit_short(size_t *off)
{
	uint8_t v[EMBER_AGENT_RLIMIT_SIZE] = { 0 };

	ember_agent_tlv_put(pl, sizeof(pl), off, EMBER_AGENT_T_RLIMIT, v,
			    sizeof(v) - 1);
}

static void f_rlimit_all(size_t *off)
{
	for (uint32_t r = 0; r < EMBER_AGENT_MAX_RLIMITS; r++)
		put_rlimit(off, r, r, r + 1);
}

static void f_size_no_tty(size_t *off)
{
	put_size(off, 24, 80);
}

static void f_size_twice(size_t *off)
{
	put_size(off, 24, 80);
	put_size(off, 24, 80);
	ember_agent_tlv_put_u32(pl, sizeof(pl), off, EMBER_AGENT_T_FLAGS,
				EMBER_AGENT_F_TTY);
}

static void f_size_long(size_t *off)
{
	ember_agent_tlv_put(pl, sizeof(pl), off, EMBER_AGENT_T_TTY_SIZE,
			    "12345", 5);
	ember_agent_tlv_put_u32(pl, sizeof(pl), off, EMBER_AGENT_T_FLAGS,
				EMBER_AGENT_F_TTY);
}

/* ROOT, RLIMIT, TTY_SIZE and FLAGS bit TTY: decoded, and what is refused. */
static void test_exec_container_fields(void **state)
{
	uint8_t w[EMBER_AGENT_WINSIZE_SIZE];
	uint16_t rows, cols;
	size_t n;

	(void)state;
	n = exec_with(f_all);
	assert_int_equal(ember_agent_exec_decode(pl, n, &ex), 0);
	assert_string_equal(ex.root, "/run/c/rootfs");
	assert_int_equal(ex.nr_rlimits, 3);
	assert_int_equal(ex.rlimits[0].resource, 7);
	assert_true(ex.rlimits[0].soft == 1024 && ex.rlimits[0].hard == 4096);
	assert_true(ex.rlimits[1].hard == UINT64_MAX);
	assert_true(ex.rlimits[2].soft == UINT64_MAX);
	assert_int_equal(ex.rlimits[2].resource, 15);
	assert_true(ex.have_size && ex.rows == 24 && ex.cols == 80);
	assert_int_equal(ex.flags, EMBER_AGENT_F_TTY | EMBER_AGENT_F_STDIN);
	/* Without the new fields: none of it. */
	n = exec_with(f_size_no_tty) - (EMBER_AGENT_TLV_HDR + 4);
	assert_int_equal(ember_agent_exec_decode(pl, n, &ex), 0);
	assert_true(!ex.root && !ex.nr_rlimits && !ex.have_size);
	n = exec_with(f_rlimit_all);
	assert_int_equal(ember_agent_exec_decode(pl, n, &ex), 0);
	assert_int_equal(ex.nr_rlimits, EMBER_AGENT_MAX_RLIMITS);
	/* A 17th: one resource twice at least, but counted first. */
	put_rlimit(&n, 0, 1, 1);
	assert_int_equal(ember_agent_exec_decode(pl, n, &ex),
			 EMBER_AGENT_E_COUNT);
	assert_int_equal(
		ember_agent_exec_decode(pl, exec_with(f_relative_root), &ex),
		EMBER_AGENT_E_FIELD);
	assert_int_equal(
		ember_agent_exec_decode(pl, exec_with(f_two_roots), &ex),
		EMBER_AGENT_E_FIELD);
	assert_int_equal(
		ember_agent_exec_decode(pl, exec_with(f_root_env_add), &ex),
		EMBER_AGENT_E_FIELD);
	assert_int_equal(
		ember_agent_exec_decode(pl, exec_with(f_rlimit_resource), &ex),
		EMBER_AGENT_E_FIELD);
	assert_int_equal(ember_agent_exec_decode(
				 pl, exec_with(f_rlimit_soft_over_hard), &ex),
			 EMBER_AGENT_E_FIELD);
	assert_int_equal(
		ember_agent_exec_decode(pl, exec_with(f_rlimit_twice), &ex),
		EMBER_AGENT_E_FIELD);
	assert_int_equal(
		ember_agent_exec_decode(pl, exec_with(f_rlimit_short), &ex),
		EMBER_AGENT_E_FIELD);
	assert_int_equal(
		ember_agent_exec_decode(pl, exec_with(f_size_no_tty), &ex),
		EMBER_AGENT_E_FIELD);
	assert_int_equal(
		ember_agent_exec_decode(pl, exec_with(f_size_twice), &ex),
		EMBER_AGENT_E_FIELD);
	assert_int_equal(
		ember_agent_exec_decode(pl, exec_with(f_size_long), &ex),
		EMBER_AGENT_E_FIELD);
	assert_int_equal(decode_one(EMBER_AGENT_T_ROOT, "", 0),
			 EMBER_AGENT_E_STRING);
	assert_int_equal(decode_one(EMBER_AGENT_T_ROOT, "/x", 2),
			 EMBER_AGENT_E_STRING);
	assert_int_equal(decode_one(EMBER_AGENT_T_ROOT, "/x", 3), 0);
	/* RESIZE's payload. */
	ember_agent_winsize_encode(w, 0x1234, 0xfedc);
	assert_int_equal(ember_agent_winsize_decode(w, 4, &rows, &cols), 0);
	assert_int_equal(rows, 0x1234);
	assert_int_equal(cols, 0xfedc);
	assert_int_equal(ember_agent_winsize_decode(w, 3, &rows, &cols),
			 EMBER_AGENT_E_FIELD);
	assert_int_equal(ember_agent_winsize_decode(w, 0, &rows, &cols),
			 EMBER_AGENT_E_FIELD);
}

static void test_exec_counts(void **state)
{
	size_t off = 0;

	(void)state;
	for (int i = 0; i < EMBER_AGENT_MAX_ARGS; i++)
		ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_ARG,
					"a");
	for (int i = 0; i < EMBER_AGENT_MAX_ENV; i++)
		ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_ENV,
					"A=1");
	assert_int_equal(ember_agent_exec_decode(pl, off, &ex), 0);
	assert_int_equal(ex.argc, EMBER_AGENT_MAX_ARGS);
	assert_null(ex.argv[EMBER_AGENT_MAX_ARGS]);
	assert_null(ex.env[EMBER_AGENT_MAX_ENV]);
	{
		size_t o2 = off;

		ember_agent_tlv_put_str(pl, sizeof(pl), &o2, EMBER_AGENT_T_ARG,
					"a");
		assert_int_equal(ember_agent_exec_decode(pl, o2, &ex),
				 EMBER_AGENT_E_COUNT);
	}
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_ENV, "B=");
	assert_int_equal(ember_agent_exec_decode(pl, off, &ex),
			 EMBER_AGENT_E_COUNT);
}

/* STARTED and PROCS (kept processes): round trips and bad input. */
static void test_keep_codecs(void **state)
{
	uint8_t b[2 * (EMBER_AGENT_PROC_HDR + EMBER_AGENT_PROC_CMD_MAX)];
	struct ember_agent_proc p = { .pid = 42,
				      .flags = EMBER_AGENT_PROC_EXITED,
				      .kind = EMBER_AGENT_EXITED,
				      .code = 3,
				      .dropped = 5ULL << 32,
				      .cmd = "sleep\0"
					     "9\0",
				      .cmd_len = 8 },
				q;
	static uint8_t other[5000];
	uint64_t dropped;
	uint32_t pid;
	size_t off = 0, total;

	(void)state;
	ember_agent_started_encode(b, 7, 1ULL << 40);
	assert_int_equal(ember_agent_started_decode(b, 12, &pid, &dropped), 0);
	assert_int_equal(pid, 7);
	assert_true(dropped == 1ULL << 40);
	assert_int_equal(ember_agent_started_decode(b, 11, &pid, &dropped),
			 EMBER_AGENT_E_FIELD);
	ember_agent_started_encode(b, 0, 0);
	assert_int_equal(ember_agent_started_decode(b, 12, &pid, &dropped),
			 EMBER_AGENT_E_FIELD);
	assert_int_equal(ember_agent_proc_encode(b, sizeof(b), &off, &p), 0);
	p.pid = 43;
	p.cmd_len = 5000; /* cut to the maximum */
	p.cmd = (const char *)other; /* any bytes */
	assert_int_equal(ember_agent_proc_encode(b, sizeof(b), &off, &p), 0);
	assert_int_equal(off, 2 * EMBER_AGENT_PROC_HDR + 8 +
				      EMBER_AGENT_PROC_CMD_MAX);
	assert_int_equal(ember_agent_proc_encode(b, sizeof(b), &off, &p),
			 EMBER_AGENT_E_NOSPACE);
	total = off;
	off = 0;
	assert_int_equal(ember_agent_proc_next(b, total, &off, &q), 1);
	assert_int_equal(q.pid, 42);
	assert_int_equal(q.code, 3);
	assert_true(q.dropped == 5ULL << 32);
	assert_int_equal(q.cmd_len, 8);
	assert_memory_equal(q.cmd,
			    "sleep\0"
			    "9\0",
			    8);
	assert_int_equal(ember_agent_proc_next(b, total - 1, &off, &q),
			 EMBER_AGENT_E_TRUNCATED);
	assert_int_equal(ember_agent_proc_next(b, total, &off, &q), 1);
	assert_int_equal(q.cmd_len, EMBER_AGENT_PROC_CMD_MAX);
	assert_int_equal(ember_agent_proc_next(b, off, &off, &q), 0);
	ember_agent_put32(b + 24, EMBER_AGENT_PROC_CMD_MAX + 1);
	off = 0;
	assert_int_equal(ember_agent_proc_next(b, total, &off, &q),
			 EMBER_AGENT_E_FIELD);
}

static void test_encode_nospace(void **state)
{
	uint8_t b[16];
	size_t off = 0;

	(void)state;
	assert_int_equal(
		ember_agent_tlv_put(b, sizeof(b), &off, 1, "12345678", 8), 0);
	assert_int_equal(off, 16);
	assert_int_equal(ember_agent_tlv_put(b, sizeof(b), &off, 1, "", 0),
			 EMBER_AGENT_E_NOSPACE);
	off = 4;
	assert_int_equal(
		ember_agent_tlv_put_str(b, sizeof(b), &off, 1, "12345678"),
		EMBER_AGENT_E_NOSPACE);
	assert_int_equal(off, 4);
	off = 17;
	assert_int_equal(ember_agent_tlv_put_u32(b, sizeof(b), &off, 1, 0),
			 EMBER_AGENT_E_NOSPACE);
	assert_int_equal(ember_agent_error_encode(b, 3, 1, "x"),
			 EMBER_AGENT_E_NOSPACE);
	assert_int_equal(ember_agent_error_encode(b, sizeof(b), 5,
						  "a long message here"),
			 16);
}

static void test_file_decode(void **state)
{
	struct ember_agent_file f;
	size_t off = 0;

	(void)state;
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_PATH,
				"/etc/x");
	assert_int_equal(ember_agent_file_decode(pl, off, 0, &f), 0);
	assert_string_equal(f.path, "/etc/x");
	assert_int_equal(f.mode, 0644);
	ember_agent_tlv_put_u32(pl, sizeof(pl), &off, EMBER_AGENT_T_MODE, 0755);
	assert_int_equal(ember_agent_file_decode(pl, off, 1, &f), 0);
	assert_int_equal(f.mode, 0755);
	assert_int_equal(ember_agent_file_decode(pl, off, 0, &f),
			 EMBER_AGENT_E_FIELD);
	assert_int_equal(ember_agent_file_decode(pl, off - 1, 1, &f),
			 EMBER_AGENT_E_TRUNCATED);
	assert_int_equal(ember_agent_file_decode(pl, 0, 1, &f),
			 EMBER_AGENT_E_MISSING);
	off = 0;
	ember_agent_tlv_put_u32(pl, sizeof(pl), &off, EMBER_AGENT_T_MODE,
				010000);
	assert_int_equal(ember_agent_file_decode(pl, off, 1, &f),
			 EMBER_AGENT_E_FIELD);
	off = 0;
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_PATH, "a");
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_PATH, "b");
	assert_int_equal(ember_agent_file_decode(pl, off, 1, &f),
			 EMBER_AGENT_E_FIELD);
	off = 0;
	ember_agent_tlv_put(pl, sizeof(pl), &off, EMBER_AGENT_T_PATH, "ab", 2);
	assert_int_equal(ember_agent_file_decode(pl, off, 1, &f),
			 EMBER_AGENT_E_STRING);
}

/* INIT's payload: wire layout, the round trip, every refusal. */
static void test_init_codec(void **state)
{
	/* TIME: u64 seconds, u32 ns (999999999); ENTROPY: "abc". */
	static const uint8_t want[] = {
		8,    0,    0,	  0,	12,   0,    0,	  0,
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
		0xff, 0xc9, 0x9a, 0x3b, 9,    0,    0,	  0,
		3,    0,    0,	  0,	'a',  'b',  'c',
	};
	uint8_t ent[EMBER_AGENT_MAX_ENTROPY + 1], t[12];
	struct ember_agent_init in;
	size_t off;
	long n;

	(void)state;
	for (size_t i = 0; i < sizeof(ent); i++)
		ent[i] = (uint8_t)(i * 7 + 1);
	n = ember_agent_init_encode(pl, sizeof(pl), 1, 0x1122334455667788ULL,
				    999999999, "abc", 3);
	assert_int_equal(n, sizeof(want));
	assert_memory_equal(pl, want, sizeof(want));
	assert_int_equal(ember_agent_init_decode(pl, (size_t)n, &in), 0);
	assert_true(in.have_time);
	assert_true(in.sec == 0x1122334455667788ULL);
	assert_int_equal(in.nsec, 999999999);
	assert_int_equal(in.entropy_len, 3);
	assert_ptr_equal(in.entropy, pl + 28);
	/* Every cut inside a field is truncated; at the boundary, TIME only. */
	for (long cut = 1; cut < n; cut++)
		assert_int_equal(ember_agent_init_decode(pl, (size_t)cut, &in),
				 cut == 20 ? 0 : EMBER_AGENT_E_TRUNCATED);
	assert_int_equal(ember_agent_init_decode(pl, 0, &in),
			 EMBER_AGENT_E_MISSING);
	/* Either field alone; the most entropy there may be. */
	n = ember_agent_init_encode(pl, sizeof(pl), 0, 0, 0, ent,
				    EMBER_AGENT_MAX_ENTROPY);
	assert_int_equal(n, 8 + EMBER_AGENT_MAX_ENTROPY);
	assert_int_equal(ember_agent_init_decode(pl, (size_t)n, &in), 0);
	assert_false(in.have_time);
	assert_int_equal(in.entropy_len, EMBER_AGENT_MAX_ENTROPY);
	assert_memory_equal(in.entropy, ent, EMBER_AGENT_MAX_ENTROPY);
	n = ember_agent_init_encode(pl, sizeof(pl), 1, 1700000000, 5, NULL, 0);
	assert_int_equal(n, 20);
	assert_int_equal(ember_agent_init_decode(pl, (size_t)n, &in), 0);
	assert_null(in.entropy);
	assert_int_equal(in.sec, 1700000000);

	/* The encoder refuses what the decoder would. */
	assert_int_equal(
		ember_agent_init_encode(pl, sizeof(pl), 0, 0, 0, ent, 0),
		EMBER_AGENT_E_FIELD);
	assert_int_equal(ember_agent_init_encode(pl, sizeof(pl), 0, 0, 0, ent,
						 EMBER_AGENT_MAX_ENTROPY + 1),
			 EMBER_AGENT_E_FIELD);
	assert_int_equal(ember_agent_init_encode(pl, sizeof(pl), 1, 0,
						 1000000000, NULL, 0),
			 EMBER_AGENT_E_FIELD);
	assert_int_equal(ember_agent_init_encode(pl, sizeof(pl), 1, 1ULL << 63,
						 0, NULL, 0),
			 EMBER_AGENT_E_FIELD);
	assert_int_equal(ember_agent_init_encode(pl, 27, 1, 1, 0, "abc", 3),
			 EMBER_AGENT_E_NOSPACE);

	/* The decoder's refusals, each in an otherwise valid list. */
	memset(t, 0, sizeof(t));
	ember_agent_put32(t + 8, 1000000000);
	off = 0;
	ember_agent_tlv_put(pl, sizeof(pl), &off, EMBER_AGENT_T_TIME, t, 12);
	assert_int_equal(ember_agent_init_decode(pl, off, &in),
			 EMBER_AGENT_E_FIELD);
	memset(t, 0, sizeof(t));
	t[7] = 0x80; /* 2^63 seconds */
	off = 0;
	ember_agent_tlv_put(pl, sizeof(pl), &off, EMBER_AGENT_T_TIME, t, 12);
	assert_int_equal(ember_agent_init_decode(pl, off, &in),
			 EMBER_AGENT_E_FIELD);
	t[7] = 0x7f; /* INT64_MAX is allowed: the guest's kernel refuses it */
	memset(t, 0xff, 7);
	off = 0;
	ember_agent_tlv_put(pl, sizeof(pl), &off, EMBER_AGENT_T_TIME, t, 12);
	assert_int_equal(ember_agent_init_decode(pl, off, &in), 0);
	assert_true(in.sec == (uint64_t)INT64_MAX);
	for (uint32_t len = 0; len <= 16; len++) {
		if (len == 12)
			continue;
		off = 0;
		ember_agent_tlv_put(pl, sizeof(pl), &off, EMBER_AGENT_T_TIME,
				    ent, len);
		assert_int_equal(ember_agent_init_decode(pl, off, &in),
				 EMBER_AGENT_E_FIELD);
	}
	off = 0;
	ember_agent_tlv_put(pl, sizeof(pl), &off, EMBER_AGENT_T_ENTROPY, ent,
			    0);
	assert_int_equal(ember_agent_init_decode(pl, off, &in),
			 EMBER_AGENT_E_FIELD);
	off = 0;
	ember_agent_tlv_put(pl, sizeof(pl), &off, EMBER_AGENT_T_ENTROPY, ent,
			    EMBER_AGENT_MAX_ENTROPY + 1);
	assert_int_equal(ember_agent_init_decode(pl, off, &in),
			 EMBER_AGENT_E_FIELD);
	/* Repeated fields, and fields of other requests. */
	off = 0;
	ember_agent_tlv_put(pl, sizeof(pl), &off, EMBER_AGENT_T_ENTROPY, ent,
			    4);
	ember_agent_tlv_put(pl, sizeof(pl), &off, EMBER_AGENT_T_ENTROPY, ent,
			    4);
	assert_int_equal(ember_agent_init_decode(pl, off, &in),
			 EMBER_AGENT_E_FIELD);
	n = ember_agent_init_encode(pl, sizeof(pl), 1, 1, 0, NULL, 0);
	off = (size_t)n;
	ember_agent_tlv_put(pl, sizeof(pl), &off, EMBER_AGENT_T_TIME, pl + 8,
			    12);
	assert_int_equal(ember_agent_init_decode(pl, off, &in),
			 EMBER_AGENT_E_FIELD);
	off = 0;
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_PATH, "/x");
	assert_int_equal(ember_agent_init_decode(pl, off, &in),
			 EMBER_AGENT_E_FIELD);
	/* Reserved bits. */
	n = ember_agent_init_encode(pl, sizeof(pl), 0, 0, 0, ent, 4);
	pl[2] = 1;
	assert_int_equal(ember_agent_init_decode(pl, (size_t)n, &in),
			 EMBER_AGENT_E_FIELD);
}

static void test_small_payloads(void **state)
{
	uint8_t b[8];
	uint32_t kind, code;
	int32_t c32;
	int sig;
	const char *msg;
	size_t ml;

	(void)state;
	ember_agent_exit_encode(b, EMBER_AGENT_EXITED, -1);
	assert_int_equal(ember_agent_exit_decode(b, 8, &kind, &c32), 0);
	assert_int_equal(kind, EMBER_AGENT_EXITED);
	assert_int_equal(c32, -1);
	assert_int_equal(ember_agent_exit_decode(b, 7, &kind, &c32),
			 EMBER_AGENT_E_FIELD);
	ember_agent_exit_encode(b, 3, 0);
	assert_int_equal(ember_agent_exit_decode(b, 8, &kind, &c32),
			 EMBER_AGENT_E_FIELD);
	ember_agent_put32(b, 15);
	assert_int_equal(ember_agent_kill_decode(b, 4, &sig), 0);
	assert_int_equal(sig, 15);
	assert_int_equal(ember_agent_kill_decode(b, 5, &sig),
			 EMBER_AGENT_E_FIELD);
	ember_agent_put32(b, 0);
	assert_int_equal(ember_agent_kill_decode(b, 4, &sig),
			 EMBER_AGENT_E_FIELD);
	ember_agent_put32(b, 65);
	assert_int_equal(ember_agent_kill_decode(b, 4, &sig),
			 EMBER_AGENT_E_FIELD);
	assert_int_equal(ember_agent_error_encode(b, 8, 2, "abc"), 7);
	assert_int_equal(ember_agent_error_decode(b, 7, &code, &msg, &ml), 0);
	assert_int_equal(code, 2);
	assert_int_equal(ml, 3);
	assert_memory_equal(msg, "abc", 3);
	assert_int_equal(ember_agent_error_decode(b, 3, &code, &msg, &ml),
			 EMBER_AGENT_E_TRUNCATED);
	for (int e = -10; e <= 0; e++)
		assert_non_null(ember_agent_strerror(e));
}

/* ---- the agent, end to end -------------------------------------------- */

struct stream_res {
	uint8_t out[4096], err[4096];
	size_t out_len, err_len;
	int done;
	uint32_t exit_kind;
	int32_t exit_code;
	uint32_t error; /* ERROR's code, 0 if none */
	char msg[256]; /* ERROR's message */
	int64_t done_ms;
};

struct agent {
	pid_t pid;
	int fd;
	struct stream_res res[16];
	char dir[64]; /* "": none; else holds the INIT report file */
	char report[96];
	char defaults[96]; /* the defaults file (EMBER_AGENT_DEFAULTS) */
};

static uint8_t rxbuf[BUF_MAX];

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Start the agent; with @report, INIT reports to a file in a new dir; with
 * @defaults, the agent reads its image defaults from a file there (not
 * there until a test writes it).
 */
static int agent_start(void **state, int report, int defaults)
{
	struct agent *a = calloc(1, sizeof(*a));
	int sv[2];

	assert_non_null(a);
	if (report || defaults) {
		snprintf(a->dir, sizeof(a->dir), "/tmp/ember-init-XXXXXX");
		assert_non_null(mkdtemp(a->dir));
		snprintf(a->report, sizeof(a->report), "%s/report", a->dir);
		snprintf(a->defaults, sizeof(a->defaults), "%s/defaults",
			 a->dir);
	}
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
			 0);
	a->pid = fork();
	assert_true(a->pid >= 0);
	if (a->pid == 0) {
		if (dup2(sv[1], 3) < 0)
			_exit(126);
		if (report && setenv("EMBER_AGENT_INIT_REPORT", a->report, 1))
			_exit(126);
		if (defaults && setenv("EMBER_AGENT_DEFAULTS", a->defaults, 1))
			_exit(126);
		execl(AGENT_BIN, "agent-host", "--fd", "3", (char *)NULL);
		perror(AGENT_BIN);
		_exit(127);
	}
	close(sv[1]);
	a->fd = sv[0];
	*state = a;
	return 0;
}

static int agent_setup(void **state)
{
	return agent_start(state, 0, 0);
}

static int agent_setup_report(void **state)
{
	return agent_start(state, 1, 0);
}

static int agent_setup_defaults(void **state)
{
	return agent_start(state, 0, 1);
}

static int agent_teardown(void **state)
{
	struct agent *a = *state;
	int st = 0;

	close(a->fd);
	assert_int_equal(waitpid(a->pid, &st, 0), a->pid);
	if (a->dir[0]) {
		unlink(a->report);
		unlink(a->defaults);
		rmdir(a->dir);
	}
	free(a);
	/* The agent exits 0 once its connection closes, sanitizers clean. */
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static void xwrite(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		assert_true(n > 0);
		p += n;
		len -= (size_t)n;
	}
}

static void send_frame(struct agent *a, uint16_t type, uint32_t stream,
		       const void *payload, size_t len)
{
	uint8_t h[EMBER_AGENT_HDR_SIZE];

	ember_agent_hdr_encode(h, type, stream, (uint32_t)len);
	xwrite(a->fd, h, sizeof(h));
	if (len)
		xwrite(a->fd, payload, len);
}

/* Read exactly @len bytes; 0 on success, -1 at EOF. 10 s limit. */
static int xread(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		assert_int_equal(poll(&pfd, 1, 10000), 1);
		n = read(fd, p, len);
		if (n == 0)
			return -1;
		assert_true(n > 0);
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Receive one frame into @h and rxbuf; -1 at EOF. */
static int recv_frame(struct agent *a, struct ember_agent_hdr *h)
{
	uint8_t b[EMBER_AGENT_HDR_SIZE];

	if (xread(a->fd, b, sizeof(b)) < 0)
		return -1;
	assert_int_equal(ember_agent_hdr_decode(b, sizeof(b), h), 0);
	if (h->len)
		assert_int_equal(xread(a->fd, rxbuf, h->len), 0);
	return 0;
}

/* Take one frame and file it under its stream. */
static void take(struct agent *a)
{
	struct ember_agent_hdr h;
	struct stream_res *r;
	const char *msg;
	size_t ml;

	assert_int_equal(recv_frame(a, &h), 0);
	assert_true(h.stream < 16);
	r = &a->res[h.stream];
	switch (h.type) {
	case EMBER_AGENT_STDOUT:
		assert_true(r->out_len + h.len <= sizeof(r->out));
		memcpy(r->out + r->out_len, rxbuf, h.len);
		r->out_len += h.len;
		break;
	case EMBER_AGENT_STDERR:
		assert_true(r->err_len + h.len <= sizeof(r->err));
		memcpy(r->err + r->err_len, rxbuf, h.len);
		r->err_len += h.len;
		break;
	case EMBER_AGENT_EXIT:
		assert_int_equal(ember_agent_exit_decode(rxbuf, h.len,
							 &r->exit_kind,
							 &r->exit_code),
				 0);
		r->done = 1;
		r->done_ms = mono_ms();
		break;
	case EMBER_AGENT_ERROR:
		assert_int_equal(ember_agent_error_decode(rxbuf, h.len,
							  &r->error, &msg, &ml),
				 0);
		snprintf(r->msg, sizeof(r->msg), "%.*s", (int)ml, msg);
		r->done = 1;
		r->done_ms = mono_ms();
		break;
	default:
		fail_msg("unexpected frame type %u", h.type);
	}
}

static void wait_done(struct agent *a, uint32_t stream)
{
	while (!a->res[stream].done)
		take(a);
}

/* EXEC @argv (NULL-terminated) on @stream. */
static void exec_on(struct agent *a, uint32_t stream, uint32_t timeout_ms,
		    uint32_t flags, const char *const *argv)
{
	size_t off = 0;

	for (; *argv; argv++)
		assert_int_equal(ember_agent_tlv_put_str(pl, sizeof(pl), &off,
							 EMBER_AGENT_T_ARG,
							 *argv),
				 0);
	if (timeout_ms)
		ember_agent_tlv_put_u32(pl, sizeof(pl), &off,
					EMBER_AGENT_T_TIMEOUT, timeout_ms);
	if (flags)
		ember_agent_tlv_put_u32(pl, sizeof(pl), &off,
					EMBER_AGENT_T_FLAGS, flags);
	send_frame(a, EMBER_AGENT_EXEC, stream, pl, off);
}

static void expect_exit(struct stream_res *r, uint32_t kind, int32_t code)
{
	assert_true(r->done);
	assert_int_equal(r->error, 0);
	assert_int_equal(r->exit_kind, kind);
	assert_int_equal(r->exit_code, code);
}

static void test_e2e_ping(void **state)
{
	struct agent *a = *state;
	struct ember_agent_hdr h;

	send_frame(a, EMBER_AGENT_PING, 7, "hello", 5);
	assert_int_equal(recv_frame(a, &h), 0);
	assert_int_equal(h.type, EMBER_AGENT_PONG);
	assert_int_equal(h.stream, 7);
	assert_int_equal(h.len, 5);
	assert_memory_equal(rxbuf, "hello", 5);
}

static void test_e2e_echo(void **state)
{
	struct agent *a = *state;
	const char *argv[] = { "echo", "hi", NULL };

	exec_on(a, 1, 0, 0, argv);
	wait_done(a, 1);
	expect_exit(&a->res[1], EMBER_AGENT_EXITED, 0);
	assert_int_equal(a->res[1].out_len, 3);
	assert_memory_equal(a->res[1].out, "hi\n", 3);
	assert_int_equal(a->res[1].err_len, 0);
}

static void test_e2e_exit_code_and_stderr(void **state)
{
	struct agent *a = *state;
	const char *argv[] = { "sh", "-c", "echo oops >&2; exit 3", NULL };

	exec_on(a, 2, 0, 0, argv);
	wait_done(a, 2);
	expect_exit(&a->res[2], EMBER_AGENT_EXITED, 3);
	assert_int_equal(a->res[2].out_len, 0);
	assert_int_equal(a->res[2].err_len, 5);
	assert_memory_equal(a->res[2].err, "oops\n", 5);
}

static void test_e2e_stdin_cat(void **state)
{
	struct agent *a = *state;
	const char *argv[] = { "cat", NULL };

	exec_on(a, 3, 0, EMBER_AGENT_F_STDIN, argv);
	send_frame(a, EMBER_AGENT_STDIN, 3, "hello ", 6);
	send_frame(a, EMBER_AGENT_STDIN, 3, "world", 5);
	send_frame(a, EMBER_AGENT_STDIN, 3, NULL, 0);
	wait_done(a, 3);
	expect_exit(&a->res[3], EMBER_AGENT_EXITED, 0);
	assert_int_equal(a->res[3].out_len, 11);
	assert_memory_equal(a->res[3].out, "hello world", 11);
}

/* Stream 1 waits on its stdin while stream 2 runs to completion. */
static void test_e2e_concurrent(void **state)
{
	struct agent *a = *state;
	const char *one[] = { "sh", "-c", "read x; echo got $x", NULL };
	const char *two[] = { "echo", "two", NULL };

	exec_on(a, 1, 0, EMBER_AGENT_F_STDIN, one);
	exec_on(a, 2, 0, 0, two);
	wait_done(a, 2);
	expect_exit(&a->res[2], EMBER_AGENT_EXITED, 0);
	assert_memory_equal(a->res[2].out, "two\n", 4);
	assert_false(a->res[1].done);
	send_frame(a, EMBER_AGENT_STDIN, 1, "it\n", 3);
	wait_done(a, 1);
	expect_exit(&a->res[1], EMBER_AGENT_EXITED, 0);
	assert_int_equal(a->res[1].out_len, 7);
	assert_memory_equal(a->res[1].out, "got it\n", 7);
}

static void test_e2e_timeout(void **state)
{
	struct agent *a = *state;
	const char *argv[] = { "sleep", "10", NULL };
	int64_t t0 = mono_ms();

	exec_on(a, 4, 300, 0, argv);
	wait_done(a, 4);
	expect_exit(&a->res[4], EMBER_AGENT_TIMEOUT, SIGKILL);
	assert_true(a->res[4].done_ms - t0 >= 250);
	assert_true(a->res[4].done_ms - t0 < 3000);
}

static void test_e2e_kill(void **state)
{
	struct agent *a = *state;
	const char *argv[] = { "sleep", "10", NULL };
	uint8_t sig[4];

	exec_on(a, 5, 0, 0, argv);
	ember_agent_put32(sig, SIGTERM);
	send_frame(a, EMBER_AGENT_KILL, 5, sig, 4);
	wait_done(a, 5);
	expect_exit(&a->res[5], EMBER_AGENT_SIGNALLED, SIGTERM);
	/* A finished stream is gone. */
	send_frame(a, EMBER_AGENT_KILL, 5, sig, 4);
	a->res[5].done = 0;
	wait_done(a, 5);
	assert_int_equal(a->res[5].error, ESRCH);
}

/*
 * Frames of @stream until its EXIT (output discarded), within 20 s:
 * a child that writes without pause must not keep the agent from its
 * timeouts or from KILL.  After @kill_after frames a KILL(SIGKILL) goes.
 */
static void flood_until_exit(struct agent *a, uint32_t stream, int kill_after,
			     struct stream_res *r)
{
	int64_t end = mono_ms() + 20000;
	struct ember_agent_hdr h;
	uint8_t sig[4];
	int n = 0;

	memset(r, 0, sizeof(*r));
	for (;;) {
		assert_true(mono_ms() < end);
		assert_int_equal(recv_frame(a, &h), 0);
		assert_int_equal(h.stream, stream);
		if (h.type == EMBER_AGENT_EXIT) {
			assert_int_equal(ember_agent_exit_decode(rxbuf, h.len,
								 &r->exit_kind,
								 &r->exit_code),
					 0);
			return;
		}
		assert_int_equal(h.type, EMBER_AGENT_STDOUT);
		if (++n == kill_after) {
			ember_agent_put32(sig, SIGKILL);
			send_frame(a, EMBER_AGENT_KILL, stream, sig, 4);
		}
	}
}

static void test_e2e_flood(void **state)
{
	struct agent *a = *state;
	const char *yes[] = { "yes", NULL };
	const char *bg[] = { "sh", "-c", "yes & sleep 0.2; exit 4", NULL };
	struct stream_res r;

	exec_on(a, 1, 300, 0, yes);
	flood_until_exit(a, 1, -1, &r);
	assert_int_equal(r.exit_kind, EMBER_AGENT_TIMEOUT);
	exec_on(a, 2, 0, 0, yes);
	flood_until_exit(a, 2, 20, &r);
	assert_int_equal(r.exit_kind, EMBER_AGENT_SIGNALLED);
	assert_int_equal(r.exit_code, SIGKILL);
	/* A background writer left behind does not hold back the EXIT. */
	exec_on(a, 3, 0, 0, bg);
	flood_until_exit(a, 3, -1, &r);
	assert_int_equal(r.exit_kind, EMBER_AGENT_EXITED);
	assert_int_equal(r.exit_code, 4);
}

struct stdin_flood {
	struct agent *a;
	uint32_t stream;
};

static void *stdin_flood(void *arg)
{
	struct stdin_flood *f = arg;
	static uint8_t chunk[64 << 10];

	for (int i = 0; i < 32; i++)
		send_frame(f->a, EMBER_AGENT_STDIN, f->stream, chunk,
			   sizeof(chunk));
	return NULL;
}

/* A child that never reads its stdin still times out. */
static void test_e2e_stdin_unread_timeout(void **state)
{
	struct agent *a = *state;
	const char *argv[] = { "sleep", "100", NULL };
	struct stdin_flood f = { a, 6 };
	int64_t t0 = mono_ms();
	pthread_t th;

	exec_on(a, 6, 300, EMBER_AGENT_F_STDIN, argv);
	assert_int_equal(pthread_create(&th, NULL, stdin_flood, &f), 0);
	wait_done(a, 6);
	expect_exit(&a->res[6], EMBER_AGENT_TIMEOUT, SIGKILL);
	assert_true(mono_ms() - t0 < 20000);
	pthread_join(th, NULL);
	/* STDIN after the EXIT finds no exec (ESRCH); then the PONG. */
	send_frame(a, EMBER_AGENT_PING, 15, "p", 1);
	for (;;) {
		struct ember_agent_hdr h;

		assert_int_equal(recv_frame(a, &h), 0);
		if (h.type == EMBER_AGENT_PONG)
			break;
		assert_int_equal(h.type, EMBER_AGENT_ERROR);
		assert_int_equal(h.stream, 6);
	}
}

static void test_e2e_exec_missing(void **state)
{
	struct agent *a = *state;
	const char *argv[] = { "/nonexistent/prog", NULL };
	const char *ok[] = { "true", NULL };

	exec_on(a, 6, 0, 0, argv);
	wait_done(a, 6);
	assert_int_equal(a->res[6].error, ENOENT);
	/* The stream id is free again once the failed child is reaped. */
	memset(&a->res[6], 0, sizeof(a->res[6]));
	for (int i = 0; i < 100; i++) {
		exec_on(a, 6, 0, 0, ok);
		wait_done(a, 6);
		if (a->res[6].error != EBUSY)
			break;
		memset(&a->res[6], 0, sizeof(a->res[6]));
		usleep(10000);
	}
	expect_exit(&a->res[6], EMBER_AGENT_EXITED, 0);
}

static void test_e2e_files(void **state)
{
	struct agent *a = *state;
	char dir[] = "/tmp/ember-agent-XXXXXX", path[64], link[64];
	const size_t total = 1U << 20, chunk = 100000;
	struct ember_agent_hdr h;
	uint8_t *data, *back;
	size_t off = 0, got = 0;
	struct stat st;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/f", dir);
	data = malloc(total);
	back = malloc(total);
	assert_non_null(data);
	assert_non_null(back);
	for (size_t i = 0; i < total; i++)
		data[i] = (uint8_t)(i * 2654435761U >> 13);

	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_PATH, path);
	ember_agent_tlv_put_u32(pl, sizeof(pl), &off, EMBER_AGENT_T_MODE, 0600);
	send_frame(a, EMBER_AGENT_WRITE_FILE, 9, pl, off);
	for (size_t o = 0; o < total; o += chunk)
		send_frame(a, EMBER_AGENT_FILE_DATA, 9, data + o,
			   total - o < chunk ? total - o : chunk);
	send_frame(a, EMBER_AGENT_FILE_END, 9, NULL, 0);
	assert_int_equal(recv_frame(a, &h), 0);
	assert_int_equal(h.type, EMBER_AGENT_OK);
	assert_int_equal(h.stream, 9);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, total);
	assert_int_equal(st.st_mode & 07777, 0600);

	off = 0;
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_PATH, path);
	send_frame(a, EMBER_AGENT_READ_FILE, 10, pl, off);
	for (;;) {
		assert_int_equal(recv_frame(a, &h), 0);
		assert_int_equal(h.stream, 10);
		if (h.type == EMBER_AGENT_FILE_END)
			break;
		assert_int_equal(h.type, EMBER_AGENT_FILE_DATA);
		assert_true(got + h.len <= total);
		memcpy(back + got, rxbuf, h.len);
		got += h.len;
	}
	assert_int_equal(got, total);
	assert_memory_equal(back, data, total);

	/* Errors: a missing file, a directory, an unwritable path. */
	off = 0;
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_PATH,
				"/nonexistent/x");
	send_frame(a, EMBER_AGENT_READ_FILE, 11, pl, off);
	wait_done(a, 11);
	assert_int_equal(a->res[11].error, ENOENT);
	off = 0;
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_PATH, dir);
	send_frame(a, EMBER_AGENT_READ_FILE, 12, pl, off);
	wait_done(a, 12);
	assert_int_equal(a->res[12].error, EISDIR);
	off = 0;
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_PATH,
				"/nonexistent/x");
	send_frame(a, EMBER_AGENT_WRITE_FILE, 13, pl, off);
	send_frame(a, EMBER_AGENT_FILE_DATA, 13, "abc", 3);
	send_frame(a, EMBER_AGENT_FILE_END, 13, NULL, 0);
	wait_done(a, 13);
	assert_int_equal(a->res[13].error, ENOENT);

	/* A write cut short by an error leaves the old file as it was. */
	off = 0;
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_PATH, path);
	send_frame(a, EMBER_AGENT_WRITE_FILE, 2, pl, off);
	send_frame(a, EMBER_AGENT_FILE_DATA, 2, "new", 3);
	send_frame(a, EMBER_AGENT_FILE_END, 2, "x", 1); /* EPROTO */
	wait_done(a, 2);
	assert_int_equal(a->res[2].error, EPROTO);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, total);
	/* Through a symbolic link: the target gets the bytes. */
	snprintf(link, sizeof(link), "%s/l", dir);
	assert_int_equal(symlink(path, link), 0);
	off = 0;
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_PATH, link);
	send_frame(a, EMBER_AGENT_WRITE_FILE, 3, pl, off);
	send_frame(a, EMBER_AGENT_FILE_DATA, 3, "new", 3);
	send_frame(a, EMBER_AGENT_FILE_END, 3, NULL, 0);
	assert_int_equal(recv_frame(a, &h), 0);
	assert_int_equal(h.type, EMBER_AGENT_OK);
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 3);
	assert_int_equal(unlink(link), 0);
	/* A FIFO (any non-regular file) is not read; nobody reads: ENXIO. */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkfifo(path, 0600), 0);
	off = 0;
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_PATH, path);
	send_frame(a, EMBER_AGENT_READ_FILE, 14, pl, off);
	wait_done(a, 14);
	assert_int_equal(a->res[14].error, EINVAL);
	send_frame(a, EMBER_AGENT_WRITE_FILE, 15, pl, off);
	send_frame(a, EMBER_AGENT_FILE_END, 15, NULL, 0);
	wait_done(a, 15);
	assert_int_equal(a->res[15].error, ENXIO);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));

	unlink(path);
	/* No temporary file was left behind: the directory is empty. */
	assert_int_equal(rmdir(dir), 0);
	free(data);
	free(back);
}

static void expect_pong(struct agent *a)
{
	struct ember_agent_hdr h;

	send_frame(a, EMBER_AGENT_PING, 15, "p", 1);
	assert_int_equal(recv_frame(a, &h), 0);
	assert_int_equal(h.type, EMBER_AGENT_PONG);
	assert_int_equal(h.stream, 15);
}

static void expect_error(struct agent *a, uint32_t stream, uint32_t code)
{
	memset(&a->res[stream], 0, sizeof(a->res[stream]));
	wait_done(a, stream);
	assert_int_equal(a->res[stream].error, code);
}

/* Malformed frames with sound headers: ERROR, and the connection lives. */
static void test_e2e_malformed(void **state)
{
	struct agent *a = *state;
	uint8_t h[EMBER_AGENT_HDR_SIZE];
	size_t off = 0;

	/* Truncated field list. */
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_ARG, "ls");
	send_frame(a, EMBER_AGENT_EXEC, 1, pl, off - 1);
	expect_error(a, 1, EPROTO);
	expect_pong(a);
	/* Unknown type, with a payload to skip. */
	send_frame(a, 99, 2, "junkjunk", 8);
	expect_error(a, 2, EPROTO);
	/* A guest-to-host type. */
	send_frame(a, EMBER_AGENT_EXIT, 3, "12345678", 8);
	expect_error(a, 3, EPROTO);
	/* Data for streams that do not exist. */
	send_frame(a, EMBER_AGENT_STDIN, 4, "x", 1);
	expect_error(a, 4, ESRCH);
	send_frame(a, EMBER_AGENT_FILE_DATA, 5, "x", 1);
	expect_error(a, 5, ESRCH);
	send_frame(a, EMBER_AGENT_KILL, 6, "\x09\0\0", 3);
	expect_error(a, 6, EPROTO);
	send_frame(a, EMBER_AGENT_READ_FILE, 7, NULL, 0);
	expect_error(a, 7, EPROTO);
	/* RESIZE: a bad payload, no such exec. */
	send_frame(a, EMBER_AGENT_RESIZE, 8, "\x18\0P", 3);
	expect_error(a, 8, EPROTO);
	send_frame(a, EMBER_AGENT_RESIZE, 9, "\x18\0P\0", 4);
	expect_error(a, 9, ESRCH);
	/* A header arriving in pieces is still one frame. */
	ember_agent_hdr_encode(h, EMBER_AGENT_PING, 15, 1);
	xwrite(a->fd, h, 5);
	usleep(20000);
	xwrite(a->fd, h + 5, 11);
	usleep(20000);
	xwrite(a->fd, "p", 1);
	{
		struct ember_agent_hdr rh;

		assert_int_equal(recv_frame(a, &rh), 0);
		assert_int_equal(rh.type, EMBER_AGENT_PONG);
	}
	expect_pong(a);
}

/* Send INIT(@stream) with the given fields; the reply's type, ERROR code. */
static uint16_t init_on(struct agent *a, uint32_t stream, int with_time,
			uint64_t sec, uint32_t nsec, const uint8_t *ent,
			uint32_t len, uint32_t *code)
{
	struct ember_agent_hdr h;
	const char *msg;
	size_t ml;
	long n = ember_agent_init_encode(pl, sizeof(pl), with_time, sec, nsec,
					 ent, len);

	assert_true(n > 0);
	send_frame(a, EMBER_AGENT_INIT, stream, pl, (size_t)n);
	assert_int_equal(recv_frame(a, &h), 0);
	assert_int_equal(h.stream, stream);
	*code = 0;
	if (h.type == EMBER_AGENT_ERROR)
		assert_int_equal(
			ember_agent_error_decode(rxbuf, h.len, code, &msg, &ml),
			0);
	else
		assert_int_equal(h.len, 0);
	return h.type;
}

/* The report file's lines, NUL-terminated, in @buf. */
static size_t read_report(const struct agent *a, char *buf, size_t cap)
{
	FILE *f = fopen(a->report, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
	return n;
}

/* Write the defaults file of @a: @len bytes of @f. */
static void put_defaults(struct agent *a, const char *f, size_t len)
{
	int fd = open(a->defaults, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		      0644);

	assert_true(fd >= 0);
	xwrite(fd, f, len);
	close(fd);
}

#define PUT_DEFAULTS(a, lit) put_defaults(a, lit, sizeof(lit) - 1)

/*
 * EXEC `sh -c @script` on @stream with the optional @env (NULL-terminated),
 * @user and @flags; wait for its end.
 */
static struct stream_res *sh_on(struct agent *a, uint32_t stream,
				const char *script, const char *const *env,
				const char *user, uint32_t flags)
{
	size_t off = 0;

	memset(&a->res[stream], 0, sizeof(a->res[stream]));
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_ARG, "sh");
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_ARG, "-c");
	ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_ARG,
				script);
	for (; env && *env; env++)
		ember_agent_tlv_put_str(pl, sizeof(pl), &off, EMBER_AGENT_T_ENV,
					*env);
	if (user)
		ember_agent_tlv_put_str(pl, sizeof(pl), &off,
					EMBER_AGENT_T_USER, user);
	if (flags)
		ember_agent_tlv_put_u32(pl, sizeof(pl), &off,
					EMBER_AGENT_T_FLAGS, flags);
	send_frame(a, EMBER_AGENT_EXEC, stream, pl, off);
	wait_done(a, stream);
	return &a->res[stream];
}

/* @r exited 0 and wrote exactly @want to stdout. */
static void expect_out(struct stream_res *r, const char *want)
{
	expect_exit(r, EMBER_AGENT_EXITED, 0);
	r->out[r->out_len < sizeof(r->out) ? r->out_len : 0] = 0;
	assert_string_equal((char *)r->out, want);
}

/*
 * The image defaults file (PROTOCOL.md): none, then env and cwd; ENV with
 * and without ENV_ADD; a cwd that is missing; malformed files refusing
 * every exec until fixed.
 */
static void test_e2e_defaults(void **state)
{
	struct agent *a = *state;
	const char *env[] = { "FOO=req", "NEW=1", NULL };
	struct stream_res *r;

	/* No file: the agent's own environment. */
	r = sh_on(a, 1, "echo ${FOO-unset} ${PATH:+path}", NULL, NULL, 0);
	expect_out(r, "unset path\n");
	PUT_DEFAULTS(a, "env=FOO=bar\0env=BAR=x y\0cwd=/tmp\0");
	r = sh_on(a, 1, "echo $FOO $BAR ${PATH:+path}; pwd", NULL, NULL, 0);
	expect_out(r, "bar x y path\n/tmp\n");
	/* ENV_ADD: over the defaults; without it, the whole environment. */
	r = sh_on(a, 1, "echo $FOO $NEW $BAR ${PATH:+path}", env, NULL,
		  EMBER_AGENT_F_ENV_ADD);
	expect_out(r, "req 1 x y path\n");
	r = sh_on(a, 1, "tr '\\0' '\\n' </proc/$$/environ | sort; pwd", env,
		  NULL, 0);
	expect_out(r, "FOO=req\nNEW=1\n/tmp\n");
	/* The file's cwd missing: ENOENT naming it. */
	PUT_DEFAULTS(a, "cwd=/nonexistent/ember\0");
	r = sh_on(a, 1, "true", NULL, NULL, 0);
	assert_int_equal(r->error, ENOENT);
	assert_non_null(strstr(r->msg, "/nonexistent/ember"));
	/* Malformed: every exec fails with EINVAL naming the file. */
	PUT_DEFAULTS(a, "env=A=1\0colour=blue\0");
	for (int i = 0; i < 2; i++) {
		r = sh_on(a, 2, "true", NULL, NULL, 0);
		assert_int_equal(r->error, EINVAL);
		assert_non_null(strstr(r->msg, a->defaults));
		assert_non_null(strstr(r->msg, "record 2"));
	}
	PUT_DEFAULTS(a, "env=A=1");
	r = sh_on(a, 2, "true", NULL, NULL, 0);
	assert_int_equal(r->error, EINVAL);
	assert_non_null(strstr(r->msg, "no NUL"));
	PUT_DEFAULTS(a, "user=a:b:c\0");
	r = sh_on(a, 2, "true", NULL, NULL, 0);
	assert_int_equal(r->error, EINVAL);
	/* Not a file: refused too. */
	unlink(a->defaults);
	assert_int_equal(mkdir(a->defaults, 0755), 0);
	r = sh_on(a, 2, "true", NULL, NULL, 0);
	assert_int_equal(r->error, EINVAL);
	assert_int_equal(rmdir(a->defaults), 0);
	/* Fixed: runs again; a PATH from the file finds commands there. */
	PUT_DEFAULTS(a, "env=PATH=/nonexistent:/usr/bin:/bin\0");
	r = sh_on(a, 3, "echo $PATH", NULL, NULL, 0);
	expect_out(r, "/nonexistent:/usr/bin:/bin\n");
}

/*
 * USER (PROTOCOL.md): unknown users and groups refused with EINVAL; as
 * root, the child runs as the account with its HOME, USER and LOGNAME;
 * else changing ids fails with EPERM from setgroups.
 */
static void test_e2e_user(void **state)
{
	struct agent *a = *state;
	const char *env[] = { "HOME=/override", NULL };
	const char *exact[] = { "X=1", NULL };
	struct stream_res *r;

	r = sh_on(a, 1, "true", NULL, "ember-no-such-user", 0);
	assert_int_equal(r->error, EINVAL);
	assert_string_equal(r->msg, "user ember-no-such-user: no such user");
	r = sh_on(a, 1, "true", NULL, "root:ember-no-such-group", 0);
	assert_int_equal(r->error, EINVAL);
	assert_string_equal(r->msg, "group ember-no-such-group: no such group");
	r = sh_on(a, 1, "true", NULL, "a:b:c", 0);
	assert_int_equal(r->error, EINVAL);
	/* The file's user is refused the same way. */
	PUT_DEFAULTS(a, "user=ember-no-such-user\0");
	r = sh_on(a, 1, "true", NULL, NULL, 0);
	assert_int_equal(r->error, EINVAL);
	assert_string_equal(r->msg, "user ember-no-such-user: no such user");
	unlink(a->defaults);
	if (geteuid() != 0) {
		r = sh_on(a, 2, "id -u", NULL, "12345", 0);
		assert_int_equal(r->error, EPERM);
		assert_non_null(strstr(r->msg, "setgroups"));
		return;
	}
	/* A uid with no account: its number as gid, / as HOME. */
	r = sh_on(a, 2, "echo $(id -u) $(id -g) $(id -G) $HOME $USER $LOGNAME",
		  NULL, "54321", 0);
	expect_out(r, "54321 54321 54321 / 54321 54321\n");
	r = sh_on(a, 2, "echo $(id -u) $(id -g) $(id -G) $HOME", NULL,
		  "54321:777", 0);
	expect_out(r, "54321 777 777 /\n");
	/* By name: the account's ids and home; ENV_ADD goes over them. */
	r = sh_on(a, 3, "echo $(id -un) $USER $LOGNAME $HOME", NULL, "nobody",
		  0);
	assert_int_equal(r->error, 0);
	assert_int_equal(r->out_len > 0, 1);
	r->out[r->out_len - 1] = 0;
	assert_string_equal((char *)r->out,
			    "nobody nobody nobody /nonexistent");
	r = sh_on(a, 3, "echo $USER $HOME", env, "nobody",
		  EMBER_AGENT_F_ENV_ADD);
	expect_out(r, "nobody /override\n");
	/* ENV without ENV_ADD: exactly that, nothing added. */
	r = sh_on(a, 3, "tr '\\0' '\\n' </proc/$$/environ; id -un", exact,
		  "nobody", 0);
	expect_out(r, "X=1\nnobody\n");
	/* The file's user, and the request's over it. */
	PUT_DEFAULTS(a, "user=nobody\0cwd=/\0");
	r = sh_on(a, 4, "id -un; echo $USER", NULL, NULL, 0);
	expect_out(r, "nobody\nnobody\n");
	r = sh_on(a, 4, "id -u; echo $USER $HOME", NULL, "root", 0);
	expect_out(r, "0\nroot /root\n");
	/* A cwd the user may not enter (mkdtemp's 0700): EACCES. */
	{
		char f[256];
		int n = snprintf(f, sizeof(f), "cwd=%s", a->dir);

		memcpy(f + n + 1, "user=nobody", 12);
		put_defaults(a, f, (size_t)n + 1 + 12);
	}
	r = sh_on(a, 5, "true", NULL, NULL, 0);
	assert_int_equal(r->error, EACCES);
	assert_non_null(strstr(r->msg, a->dir));
}

/*
 * INIT through the test hook: what the agent would do, decoded from the
 * wire, for each combination of fields; the step decision; malformed
 * INITs refused without acting; the hook not leaked to execs.
 */
static void test_e2e_init_report(void **state)
{
	struct agent *a = *state;
	const char *env[] = { "sh", "-c", "echo ${EMBER_AGENT_INIT_REPORT-no}",
			      NULL };
	char want[1024], got[2048], hex[2 * 64 + 1];
	uint8_t ent[EMBER_AGENT_MAX_ENTROPY + 1];
	struct timespec now;
	uint32_t code;
	size_t len = 0;

	for (size_t i = 0; i < sizeof(ent); i++)
		ent[i] = (uint8_t)(0xa0 + i);
	for (size_t i = 0; i < 64; i++)
		snprintf(hex + 2 * i, 3, "%02x", ent[i]);
	/* An hour behind: the agent would step its clock. */
	clock_gettime(CLOCK_REALTIME, &now);
	assert_int_equal(init_on(a, 1, 1, (uint64_t)now.tv_sec - 3600, 123, ent,
				 64, &code),
			 EMBER_AGENT_OK);
	len += (size_t)snprintf(want + len, sizeof(want) - len,
				"init time=%llu.000000123 step=1 entropy=%s\n",
				(unsigned long long)now.tv_sec - 3600, hex);
	/* Its own time: no step; again: the same (idempotent). */
	for (uint32_t s = 2; s <= 3; s++) {
		clock_gettime(CLOCK_REALTIME, &now);
		assert_int_equal(init_on(a, s, 1, (uint64_t)now.tv_sec,
					 (uint32_t)now.tv_nsec, NULL, 0, &code),
				 EMBER_AGENT_OK);
		len += (size_t)snprintf(
			want + len, sizeof(want) - len,
			"init time=%llu.%09ld step=0 entropy=-\n",
			(unsigned long long)now.tv_sec, now.tv_nsec);
	}
	/* A future time steps too; entropy alone does not touch the clock. */
	assert_int_equal(
		init_on(a, 4, 1, (uint64_t)now.tv_sec + 2, 0, NULL, 0, &code),
		EMBER_AGENT_OK);
	len += (size_t)snprintf(want + len, sizeof(want) - len,
				"init time=%llu.000000000 step=1 entropy=-\n",
				(unsigned long long)now.tv_sec + 2);
	assert_int_equal(init_on(a, 5, 0, 0, 0, ent, 1, &code), EMBER_AGENT_OK);
	len += (size_t)snprintf(want + len, sizeof(want) - len,
				"init time=- step=0 entropy=a0\n");
	/* Malformed: refused before anything is done; the connection lives. */
	{
		size_t off = 0;

		ember_agent_tlv_put(pl, sizeof(pl), &off, EMBER_AGENT_T_ENTROPY,
				    ent, EMBER_AGENT_MAX_ENTROPY + 1);
		send_frame(a, EMBER_AGENT_INIT, 6, pl, off);
		expect_error(a, 6, EPROTO);
		send_frame(a, EMBER_AGENT_INIT, 7, NULL, 0);
		expect_error(a, 7, EPROTO);
	}
	expect_pong(a);
	assert_int_equal(read_report(a, got, sizeof(got)), len);
	assert_string_equal(got, want);
	exec_on(a, 8, 0, 0, env);
	wait_done(a, 8);
	expect_exit(&a->res[8], EMBER_AGENT_EXITED, 0);
	assert_int_equal(a->res[8].out_len, 3);
	assert_memory_equal(a->res[8].out, "no\n", 3);
}

/*
 * INIT for real, on this host: with the host's own time (within the
 * slack: the clock is not stepped, whatever the privileges) and entropy.
 * Privileged (CAP_SYS_ADMIN), the kernel takes it: OK; else the first
 * step fails: ERROR(EPERM).  Either way twice alike, and the connection
 * goes on.
 */
static void test_e2e_init_real(void **state)
{
	struct agent *a = *state;
	uint32_t code, first = 0;
	uint8_t ent[64];
	struct timespec now;

	for (int i = 0; i < 2; i++) {
		uint16_t type;

		assert_int_equal(getrandom(ent, sizeof(ent), 0), sizeof(ent));
		clock_gettime(CLOCK_REALTIME, &now);
		type = init_on(a, 1, 1, (uint64_t)now.tv_sec,
			       (uint32_t)now.tv_nsec, ent, sizeof(ent), &code);
		if (type == EMBER_AGENT_OK)
			code = 0;
		else
			assert_int_equal(type, EMBER_AGENT_ERROR);
		if (code && code != EPERM)
			fail_msg("INIT failed with errno %u", code);
		if (i == 0)
			first = code;
		assert_int_equal(code, first);
	}
	print_message("INIT on this host: %s\n",
		      first ? "EPERM (unprivileged)" : "OK (privileged)");
	expect_pong(a);
}

/* A bad header desynchronises the stream: ERROR on stream 0, then EOF. */
static void test_e2e_desync(void **state)
{
	struct agent *a = *state;
	struct ember_agent_hdr h;
	uint8_t b[EMBER_AGENT_HDR_SIZE];

	ember_agent_hdr_encode(b, EMBER_AGENT_PING, 1,
			       EMBER_AGENT_MAX_PAYLOAD + 1);
	xwrite(a->fd, b, sizeof(b));
	assert_int_equal(recv_frame(a, &h), 0);
	assert_int_equal(h.type, EMBER_AGENT_ERROR);
	assert_int_equal(h.stream, 0);
	assert_int_equal(ember_agent_get32(rxbuf), EPROTO);
	assert_int_equal(recv_frame(a, &h), -1);
}

static void test_e2e_bad_magic(void **state)
{
	struct agent *a = *state;
	struct ember_agent_hdr h;

	xwrite(a->fd, "GET / HTTP/1.1\r\n\r\n", 18);
	assert_int_equal(recv_frame(a, &h), 0);
	assert_int_equal(h.type, EMBER_AGENT_ERROR);
	assert_int_equal(recv_frame(a, &h), -1);
}

/* A TCP listener on 127.0.0.1 (any port): its fd; its port in *@port. */
static int tcp_listener(uint16_t *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

static void forward_on(struct agent *a, uint32_t stream, uint32_t port)
{
	uint8_t b[4];

	ember_agent_put32(b, port);
	send_frame(a, EMBER_AGENT_FORWARD, stream, b, sizeof(b));
}

/*
 * FORWARD: bad payloads, a port nothing listens on and a busy connection
 * are refused with the connection still framed; then OK and the
 * connection carries the TCP connection's bytes both ways, half-closes
 * passed on, and the agent closes it when both ended.
 */
static void test_e2e_forward(void **state)
{
	static const char *const sleep_argv[] = { "sleep", "30", NULL };
	struct agent *a = *state;
	struct ember_agent_hdr h;
	uint16_t port;
	uint8_t b[4] = { 0 };
	char buf[16];
	int lfd, sfd;

	send_frame(a, EMBER_AGENT_FORWARD, 1, b, 3);
	expect_error(a, 1, EPROTO);
	forward_on(a, 1, 0);
	expect_error(a, 1, EPROTO);
	forward_on(a, 1, 65536);
	expect_error(a, 1, EPROTO);
	/* A port nothing listens on (bound a moment ago, then closed). */
	lfd = tcp_listener(&port);
	close(lfd);
	forward_on(a, 2, port);
	expect_error(a, 2, ECONNREFUSED);
	assert_non_null(strstr(a->res[2].msg, "Connection refused"));
	/* Not while an exec runs on this connection. */
	lfd = tcp_listener(&port);
	exec_on(a, 3, 0, 0, sleep_argv);
	forward_on(a, 4, port);
	expect_error(a, 4, EBUSY);
	send_frame(a, EMBER_AGENT_KILL, 3, (uint8_t[]){ 9, 0, 0, 0 }, 4);
	wait_done(a, 3);
	expect_pong(a);
	/* Forwarded. */
	forward_on(a, 5, port);
	assert_int_equal(recv_frame(a, &h), 0);
	assert_int_equal(h.type, EMBER_AGENT_OK);
	assert_int_equal(h.stream, 5);
	assert_int_equal(h.len, 0);
	sfd = accept(lfd, NULL, NULL);
	assert_true(sfd >= 0);
	close(lfd);
	xwrite(a->fd, "hello", 5);
	assert_int_equal(xread(sfd, buf, 5), 0);
	assert_memory_equal(buf, "hello", 5);
	xwrite(sfd, "world!", 6);
	assert_int_equal(xread(a->fd, buf, 6), 0);
	assert_memory_equal(buf, "world!", 6);
	/* The server's end of file reaches the host; the host still writes. */
	shutdown(sfd, SHUT_WR);
	assert_int_equal(xread(a->fd, buf, 1), -1);
	xwrite(a->fd, "late", 4);
	assert_int_equal(xread(sfd, buf, 4), 0);
	assert_memory_equal(buf, "late", 4);
	shutdown(a->fd, SHUT_WR);
	assert_int_equal(xread(sfd, buf, 1), -1);
	close(sfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hdr_roundtrip),
		cmocka_unit_test(test_hdr_malformed),
		cmocka_unit_test(test_exec_roundtrip),
		cmocka_unit_test(test_exec_truncated),
		cmocka_unit_test(test_exec_malformed),
		cmocka_unit_test(test_user_spec),
		cmocka_unit_test(test_defaults_decode),
		cmocka_unit_test(test_defaults_encode),
		cmocka_unit_test(test_exec_counts),
		cmocka_unit_test(test_exec_container_fields),
		cmocka_unit_test(test_encode_nospace),
		cmocka_unit_test(test_keep_codecs),
		cmocka_unit_test(test_file_decode),
		cmocka_unit_test(test_init_codec),
		cmocka_unit_test(test_small_payloads),
#define E(fn) cmocka_unit_test_setup_teardown(fn, agent_setup, agent_teardown)
		E(test_e2e_ping),
		E(test_e2e_echo),
		E(test_e2e_exit_code_and_stderr),
		E(test_e2e_stdin_cat),
		E(test_e2e_concurrent),
		E(test_e2e_timeout),
		E(test_e2e_kill),
		E(test_e2e_flood),
		E(test_e2e_stdin_unread_timeout),
		E(test_e2e_exec_missing),
		E(test_e2e_files),
		E(test_e2e_malformed),
		E(test_e2e_desync),
		E(test_e2e_bad_magic),
		E(test_e2e_init_real),
		E(test_e2e_forward),
		cmocka_unit_test_setup_teardown(test_e2e_init_report,
						agent_setup_report,
						agent_teardown),
		cmocka_unit_test_setup_teardown(test_e2e_defaults,
						agent_setup_defaults,
						agent_teardown),
		cmocka_unit_test_setup_teardown(
			test_e2e_user, agent_setup_defaults, agent_teardown),
#undef E
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("agent_protocol", tests, NULL, NULL);
}
