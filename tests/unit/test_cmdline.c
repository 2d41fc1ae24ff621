// SPDX-License-Identifier: Apache-2.0
/* Unit tests for boot/cmdline.c: assembly, lookup, --run encoding. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../boot/cmdline.h"
#include "../../guest-init/protocol.h"

static void test_add(void **state)
{
	struct cmdline c;

	(void)state;
	cmdline__init(&c);
	assert_string_equal(c.buf, "");
	assert_int_equal(c.len, 0);
	assert_int_equal(cmdline__add(&c, "console=ttyS0"), 0);
	assert_string_equal(c.buf, "console=ttyS0");
	assert_int_equal(cmdline__add(&c, "quiet panic=-1"), 0);
	assert_string_equal(c.buf, "console=ttyS0 quiet panic=-1");
	assert_int_equal(c.len, strlen(c.buf));
	/* Nothing to add: no stray space. */
	assert_int_equal(cmdline__add(&c, ""), 0);
	assert_string_equal(c.buf, "console=ttyS0 quiet panic=-1");
}

static void test_has(void **state)
{
	struct cmdline c;

	(void)state;
	cmdline__init(&c);
	assert_false(cmdline__has(&c, "quiet"));
	assert_int_equal(cmdline__add(&c, "console=ttyS0 quiet  root=/dev/vda"),
			 0);
	assert_true(cmdline__has(&c, "console"));
	assert_true(cmdline__has(&c, "quiet"));
	assert_true(cmdline__has(&c, "root"));
	assert_false(cmdline__has(&c, "con")); /* prefix of a key */
	assert_false(cmdline__has(&c, "console=tty")); /* not a key */
	assert_false(cmdline__has(&c, "ttyS0")); /* a value */
	assert_false(cmdline__has(&c, "quie"));
	assert_false(cmdline__has(&c, "quiet2"));
	assert_false(cmdline__has(&c, "dev"));
	assert_false(cmdline__has(&c, ""));
}

static void test_add_default(void **state)
{
	struct cmdline c;

	(void)state;
	cmdline__init(&c);
	assert_int_equal(cmdline__add(&c, "console=hvc0 nokaslr"), 0);
	/* The user's value wins. */
	assert_int_equal(cmdline__add_default(&c, "console", "ttyS0"), 0);
	assert_int_equal(cmdline__add_default(&c, "nokaslr", NULL), 0);
	assert_string_equal(c.buf, "console=hvc0 nokaslr");
	assert_int_equal(cmdline__add_default(&c, "panic", "-1"), 0);
	assert_int_equal(cmdline__add_default(&c, "quiet", NULL), 0);
	assert_int_equal(cmdline__add_default(&c, "reboot", ""), 0);
	assert_string_equal(c.buf,
			    "console=hvc0 nokaslr panic=-1 quiet reboot=");
	assert_int_equal(c.len, strlen(c.buf));
	/* Added once only. */
	assert_int_equal(cmdline__add_default(&c, "panic", "5"), 0);
	assert_string_equal(c.buf,
			    "console=hvc0 nokaslr panic=-1 quiet reboot=");
}

static void fill(struct cmdline *c, size_t len)
{
	char *s = malloc(len + 1);

	assert_non_null(s);
	memset(s, 'a', len);
	s[len] = '\0';
	cmdline__init(c);
	assert_int_equal(cmdline__add(c, s), 0);
	assert_int_equal(c->len, len);
	free(s);
}

static void test_too_big_unchanged(void **state)
{
	struct cmdline c, before;

	(void)state;
	/* Exactly full: LAYOUT_CMDLINE_MAX - 1 characters and the NUL. */
	fill(&c, LAYOUT_CMDLINE_MAX - 3);
	assert_int_equal(cmdline__add(&c, "b"), 0);
	assert_int_equal(c.len, LAYOUT_CMDLINE_MAX - 1);
	assert_int_equal(c.buf[LAYOUT_CMDLINE_MAX - 1], '\0');

	fill(&c, LAYOUT_CMDLINE_MAX - 3);
	before = c;
	assert_int_equal(cmdline__add(&c, "bc"), -E2BIG);
	assert_memory_equal(&c, &before, sizeof(c));
	assert_int_equal(cmdline__add_default(&c, "k", NULL), 0);
	fill(&c, LAYOUT_CMDLINE_MAX - 3);
	before = c;
	assert_int_equal(cmdline__add_default(&c, "k", "v"), -E2BIG);
	assert_memory_equal(&c, &before, sizeof(c));
	assert_int_equal(cmdline__add_run(&c, "x", 1), -E2BIG);
	assert_memory_equal(&c, &before, sizeof(c));

	/* A single argument longer than the whole line. */
	cmdline__init(&c);
	before = c;
	{
		char *s = malloc(LAYOUT_CMDLINE_MAX + 1);

		assert_non_null(s);
		memset(s, 'z', LAYOUT_CMDLINE_MAX);
		s[LAYOUT_CMDLINE_MAX] = '\0';
		assert_int_equal(cmdline__add(&c, s), -E2BIG);
		assert_int_equal(cmdline__add_run(&c, s, LAYOUT_CMDLINE_MAX),
				 -E2BIG);
		assert_int_equal(cmdline__add_run(&c, s, SIZE_MAX), -E2BIG);
		free(s);
	}
	assert_memory_equal(&c, &before, sizeof(c));
}

/* Finds the ember.run= word in @c and decodes it into @out. */
static long decode_run(const struct cmdline *c, uint8_t *out, size_t outsz)
{
	const char *p = strstr(c->buf, EMBER_RUN_PARAM);
	size_t n;

	assert_non_null(p);
	assert_true(p == c->buf || p[-1] == ' ');
	p += strlen(EMBER_RUN_PARAM);
	n = strcspn(p, " ");
	/* Survives the kernel's word splitting: no quote, space, control. */
	assert_int_equal(strcspn(p, " \t\n\"'\\"), n);
	return ember_b64_decode(p, n, out, outsz);
}

static void roundtrip(const void *cmd, size_t len)
{
	struct cmdline c;
	uint8_t out[LAYOUT_CMDLINE_MAX];
	long n;

	cmdline__init(&c);
	assert_int_equal(cmdline__add(&c, "console=ttyS0"), 0);
	assert_int_equal(cmdline__add_run(&c, cmd, len), 0);
	assert_int_equal(c.len, strlen(c.buf));
	assert_int_equal(c.len, strlen("console=ttyS0 " EMBER_RUN_PARAM) +
					ember_b64_encoded_len(len));
	assert_int_equal(cmdline__add(&c, "quiet"), 0);
	n = decode_run(&c, out, sizeof(out));
	assert_int_equal(n, len);
	if (len)
		assert_memory_equal(out, cmd, len);
}

static void test_add_run_roundtrip(void **state)
{
	static const char *const cmds[] = {
		"echo hello",
		"echo \"quoted words\" 'and single' \\ back",
		"line1\nline2\n\ttabbed",
		"a",
		"ab",
		"abc",
		"abcd",
		"ember.run=nested rdinit=/bin/sh --",
		"",
	};
	uint8_t all[255];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		roundtrip(cmds[i], strlen(cmds[i]));
	for (i = 0; i < sizeof(all); i++)
		all[i] = (uint8_t)(i + 1); /* 0x01 .. 0xff */
	roundtrip(all, sizeof(all));
	/* Embedded NUL bytes are carried too. */
	roundtrip("a\0b", 3);
}

static void test_add_run_empty_line_and_max(void **state)
{
	struct cmdline c;
	uint8_t out[LAYOUT_CMDLINE_MAX];
	uint8_t cmd[1530];
	size_t max_len;

	(void)state;
	/* First word: no leading space. */
	cmdline__init(&c);
	assert_int_equal(cmdline__add_run(&c, "ls", 2), 0);
	assert_string_equal(c.buf, EMBER_RUN_PARAM "bHM");

	/*
	 * The largest command that fits: 2047 - 10 = 2037 characters of
	 * base64 carry 1527 bytes (1527 / 3 * 4 = 2036, +0 tail); 1528 need
	 * 2036 + 2 = 2038.
	 */
	max_len = 1527;
	memset(cmd, 0xfe, sizeof(cmd));
	cmdline__init(&c);
	assert_int_equal(cmdline__add_run(&c, cmd, max_len), 0);
	assert_int_equal(decode_run(&c, out, sizeof(out)), max_len);
	assert_memory_equal(out, cmd, max_len);
	cmdline__init(&c);
	assert_int_equal(cmdline__add_run(&c, cmd, max_len + 1), -E2BIG);
	assert_int_equal(c.len, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add),
		cmocka_unit_test(test_has),
		cmocka_unit_test(test_add_default),
		cmocka_unit_test(test_too_big_unchanged),
		cmocka_unit_test(test_add_run_roundtrip),
		cmocka_unit_test(test_add_run_empty_line_and_max),
	};

	return cmocka_run_group_tests_name("cmdline", tests, NULL, NULL);
}
