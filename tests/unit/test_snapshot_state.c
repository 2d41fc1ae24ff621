// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for snapshot/state.c: the state file's writer, parser (every
 * corruption, truncation and lying field refused), cursors, and the
 * atomic file write and bounded read.
 */
#include <dirent.h>
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
#include <zlib.h>

#include <cmocka.h>

#include "../../snapshot/state.h"
#include "test_util.h"

#define CRC_BYTES 4

/* The small file most tests take apart; @b is finished. */
static void build_small(struct snap_buf *b)
{
	snap_buf__init(b);
	snap_buf__section(b, "cpu", 3);
	snap_buf__u8(b, 0x11);
	snap_buf__u16(b, 0x2233);
	snap_buf__u32(b, 0x44556677);
	snap_buf__u64(b, 0x8899aabbccddeeffull);
	snap_buf__bytes(b, "xyz", 3);
	snap_buf__str(b, "hello");
	snap_buf__str(b, NULL);
	snap_buf__section(b, "empty", 1);
	snap_buf__section(b, "dev/0", 2);
	snap_buf__u32(b, 7);
	assert_int_equal(snap_buf__finish(b), 0);
}

/* A malloc()ed copy of the small file in *@len bytes. */
static uint8_t *small_copy(size_t *len)
{
	struct snap_buf b;
	uint8_t *p;

	build_small(&b);
	p = malloc(b.len);
	assert_non_null(p);
	memcpy(p, b.data, b.len);
	*len = b.len;
	snap_buf__free(&b);
	return p;
}

/* Offset of section @i of a well-formed file. */
static size_t sec_off(const uint8_t *d, unsigned int i)
{
	size_t off = SNAP_HEADER_BYTES;

	while (i--) {
		size_t nl = d[off];

		off += 1 + nl + 4 + 8 + rd64(d, off + 1 + nl + 4);
	}
	return off;
}

/* Store a CRC that matches, so that only the lie is left to find. */
static void fix_crc(uint8_t *d, size_t len)
{
	wr32(d, len - CRC_BYTES,
	     (uint32_t)crc32(crc32(0, Z_NULL, 0), d, (uInt)(len - CRC_BYTES)));
}

static int parse(const uint8_t *d, size_t len, char *why, size_t whylen)
{
	struct snap_state s;

	return snap_state__parse(&s, d, len, why, whylen);
}

static void test_roundtrip(void **state)
{
	char name[SNAP_NAME_MAX + 1], str[16];
	struct snap_state s;
	struct snap_cur c;
	struct snap_buf b;
	uint8_t xyz[3];
	size_t it = 0;
	char why[160];

	(void)state;
	build_small(&b);
	assert_int_equal(b.nr_sections, 3);
	assert_int_equal(snap_state__parse(&s, b.data, b.len, why, sizeof(why)),
			 0);
	assert_int_equal(s.nr_sections, 3);
	assert_int_equal(s.version, SNAP_FORMAT_VERSION);
	assert_int_equal(s.arch, SNAP_ARCH_X86_64);
	assert_memory_equal(b.data, SNAP_MAGIC, 8);
	assert_int_equal(rd64(b.data, 16), b.len);

	assert_int_equal(snap_state__find(&s, "cpu", &c), 0);
	assert_int_equal(c.version, 3);
	assert_int_equal(snap_cur__u8(&c), 0x11);
	assert_int_equal(snap_cur__u16(&c), 0x2233);
	assert_int_equal(snap_cur__u32(&c), 0x44556677);
	assert_true(snap_cur__u64(&c) == 0x8899aabbccddeeffull);
	snap_cur__bytes(&c, xyz, 3);
	assert_memory_equal(xyz, "xyz", 3);
	assert_string_equal(snap_cur__str(&c, str, sizeof(str)), "hello");
	assert_string_equal(snap_cur__str(&c, str, sizeof(str)), "");
	assert_int_equal(snap_cur__end(&c), 0);

	assert_int_equal(snap_state__find(&s, "dev/0", &c), 0);
	assert_int_equal(c.version, 2);
	assert_int_equal(snap_cur__u32(&c), 7);
	assert_int_equal(snap_cur__end(&c), 0);
	assert_int_equal(snap_state__find(&s, "empty", &c), 0);
	assert_int_equal(c.len, 0);
	assert_int_equal(snap_cur__end(&c), 0);
	assert_int_equal(snap_state__find(&s, "cp", &c), -ENOENT);
	assert_int_equal(snap_state__find(&s, "cpuu", &c), -ENOENT);

	/* File order. */
	assert_int_equal(snap_state__next(&s, &it, name, &c), 1);
	assert_string_equal(name, "cpu");
	assert_int_equal(c.len, 31);
	assert_int_equal(snap_state__next(&s, &it, name, &c), 1);
	assert_string_equal(name, "empty");
	assert_int_equal(c.version, 1);
	assert_int_equal(snap_state__next(&s, &it, name, &c), 1);
	assert_string_equal(name, "dev/0");
	assert_int_equal(snap_state__next(&s, &it, name, &c), 0);
	assert_int_equal(snap_state__next(&s, &it, name, &c), 0);
	snap_buf__free(&b);
	snap_buf__free(&b); /* safe on a zeroed buffer */
}

static void test_no_sections(void **state)
{
	char name[SNAP_NAME_MAX + 1];
	struct snap_state s;
	struct snap_cur c;
	struct snap_buf b;
	size_t it = 0;

	(void)state;
	snap_buf__init(&b);
	assert_int_equal(snap_buf__finish(&b), 0);
	assert_int_equal(b.len, SNAP_HEADER_BYTES + CRC_BYTES);
	assert_int_equal(snap_state__parse(&s, b.data, b.len, NULL, 0), 0);
	assert_int_equal(s.nr_sections, 0);
	assert_int_equal(snap_state__next(&s, &it, name, &c), 0);
	assert_int_equal(snap_state__find(&s, "cpu", &c), -ENOENT);
	snap_buf__free(&b);
}

static void test_longest_name(void **state)
{
	char name[SNAP_NAME_MAX + 2], got[SNAP_NAME_MAX + 1];
	struct snap_state s;
	struct snap_cur c;
	struct snap_buf b;
	size_t it = 0;

	(void)state;
	memset(name, '~', SNAP_NAME_MAX);
	name[0] = '!';
	name[SNAP_NAME_MAX] = '\0';
	snap_buf__init(&b);
	snap_buf__section(&b, name, 0);
	snap_buf__u8(&b, 1);
	assert_int_equal(snap_buf__finish(&b), 0);
	assert_int_equal(snap_state__parse(&s, b.data, b.len, NULL, 0), 0);
	assert_int_equal(snap_state__next(&s, &it, got, &c), 1);
	assert_string_equal(got, name);
	assert_int_equal(snap_state__find(&s, name, &c), 0);
	snap_buf__free(&b);

	/* One byte longer: refused by the writer. */
	name[SNAP_NAME_MAX] = 'x';
	name[SNAP_NAME_MAX + 1] = '\0';
	snap_buf__init(&b);
	snap_buf__section(&b, name, 0);
	assert_int_equal(snap_buf__finish(&b), -EINVAL);
	snap_buf__free(&b);
}

static void expect_writer_error(const char *name, bool value_first, int err)
{
	struct snap_buf b;

	snap_buf__init(&b);
	if (value_first)
		snap_buf__u32(&b, 1);
	snap_buf__section(&b, name, 0);
	snap_buf__u32(&b, 1);
	/* Sticky: later good calls change nothing. */
	snap_buf__section(&b, "fine", 0);
	snap_buf__u64(&b, 2);
	assert_int_equal(snap_buf__finish(&b), err);
	assert_int_equal(b.err, err);
	snap_buf__free(&b);
}

static void test_writer_errors(void **state)
{
	struct snap_buf b;

	(void)state;
	expect_writer_error(NULL, false, -EINVAL);
	expect_writer_error("", false, -EINVAL);
	expect_writer_error("a b", false, -EINVAL);
	expect_writer_error("tab\t", false, -EINVAL);
	expect_writer_error("del\x7f", false, -EINVAL);
	expect_writer_error("hi\xc3\xa9", false, -EINVAL);
	expect_writer_error("ok", true, -EINVAL); /* value before a section */
	expect_writer_error("fine", false, -EINVAL); /* duplicate name */

	/* Two names, one a prefix of the other: both fine. */
	snap_buf__init(&b);
	snap_buf__section(&b, "net", 0);
	snap_buf__u8(&b, 0);
	snap_buf__section(&b, "net0", 0);
	snap_buf__section(&b, "ne", 0);
	assert_int_equal(snap_buf__finish(&b), 0);
	assert_int_equal(parse(b.data, b.len, NULL, 0), 0);
	snap_buf__free(&b);
}

/* A file of exactly SNAP_STATE_MAX bytes is fine; a byte more is not. */
static void test_size_limit(void **state)
{
	const size_t fixed = SNAP_HEADER_BYTES + 1 + 1 + 4 + 8 + CRC_BYTES;
	struct snap_buf b;
	uint8_t *big;

	(void)state;
	big = calloc(1, SNAP_STATE_MAX);
	assert_non_null(big);
	snap_buf__init(&b);
	snap_buf__section(&b, "m", 1);
	snap_buf__bytes(&b, big, SNAP_STATE_MAX - fixed);
	assert_int_equal(snap_buf__finish(&b), 0);
	assert_int_equal(b.len, SNAP_STATE_MAX);
	assert_int_equal(parse(b.data, b.len, NULL, 0), 0);
	snap_buf__free(&b);

	snap_buf__init(&b);
	snap_buf__section(&b, "m", 1);
	snap_buf__bytes(&b, big, SNAP_STATE_MAX - fixed + 1);
	assert_int_equal(snap_buf__finish(&b), -E2BIG);
	snap_buf__free(&b);

	/* A huge length must not wrap the size check. */
	snap_buf__init(&b);
	snap_buf__section(&b, "m", 1);
	snap_buf__bytes(&b, big, SIZE_MAX - 8);
	assert_int_equal(snap_buf__finish(&b), -E2BIG);
	snap_buf__free(&b);

	/* The parser refuses a larger buffer before reading it. */
	assert_int_equal(parse(big, (size_t)SNAP_STATE_MAX + 1, NULL, 0),
			 -EINVAL);
	free(big);
}

/* Every byte, changed in a few ways: each change is refused. */
static void test_every_byte_corrupt(void **state)
{
	static const uint8_t flips[] = { 0x01, 0x80, 0xff };
	size_t len, off, i;
	char why[160];
	uint8_t *d;
	int ret;

	(void)state;
	d = small_copy(&len);
	for (off = 0; off < len; off++) {
		for (i = 0; i < sizeof(flips); i++) {
			d[off] ^= flips[i];
			why[0] = '\0';
			ret = parse(d, len, why, sizeof(why));
			if (ret == 0)
				fail_msg("flip 0x%02x at offset %zu accepted",
					 flips[i], off);
			if (off >= 8 && off < 12)
				assert_int_equal(ret, -EPROTONOSUPPORT);
			else if (off >= 12 && off < 16)
				assert_int_equal(ret, -ENOEXEC);
			else
				assert_int_equal(ret, -EINVAL);
			assert_true(strlen(why) > 0);
			d[off] ^= flips[i];
		}
	}
	assert_int_equal(parse(d, len, NULL, 0), 0);
	free(d);
}

static void test_truncated_and_extended(void **state)
{
	char why[160];
	size_t len, n;
	uint8_t *d, *e;

	(void)state;
	d = small_copy(&len);
	for (n = 0; n < len; n++) {
		/* An exact-size copy, so that ASan sees any over-read. */
		e = malloc(n ? n : 1);
		assert_non_null(e);
		memcpy(e, d, n);
		why[0] = '\0';
		assert_int_equal(parse(e, n, why, sizeof(why)), -EINVAL);
		assert_true(strlen(why) > 0);
		free(e);
	}
	e = malloc(len + 1);
	assert_non_null(e);
	memcpy(e, d, len);
	e[len] = 0;
	assert_int_equal(parse(e, len + 1, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "size field"));
	free(e);
	assert_int_equal(parse(NULL, 0, why, sizeof(why)), -EINVAL);
	free(d);
}

/*
 * Change a field, recompute the CRC: @what must appear in the reason and
 * the error be @err.
 */
static void expect_lie(const uint8_t *orig, size_t len, size_t off,
		       const void *val, size_t n, int err, const char *what)
{
	char why[200];
	uint8_t *d = malloc(len);

	assert_non_null(d);
	memcpy(d, orig, len);
	memcpy(d + off, val, n);
	fix_crc(d, len);
	why[0] = '\0';
	assert_int_equal(parse(d, len, why, sizeof(why)), err);
	if (!strstr(why, what))
		fail_msg("reason '%s' does not name '%s'", why, what);
	free(d);
}

static void put32(uint8_t *p, uint32_t v)
{
	wr32(p, 0, v);
}

static void put64(uint8_t *p, uint64_t v)
{
	wr64(p, 0, v);
}

static void test_lying_fields(void **state)
{
	size_t len, s0, s1, s2;
	uint8_t v[8], *d;

	(void)state;
	d = small_copy(&len);
	s0 = sec_off(d, 0);
	s1 = sec_off(d, 1);
	s2 = sec_off(d, 2);
	assert_int_equal(s0, SNAP_HEADER_BYTES);
	assert_int_equal(d[s1], 5);

	memcpy(v, "EMBRSNAQ", 8);
	expect_lie(d, len, 0, v, 8, -EINVAL, "magic");
	put32(v, 2);
	expect_lie(d, len, 8, v, 4, -EPROTONOSUPPORT, "version 2");
	put32(v, 0);
	expect_lie(d, len, 8, v, 4, -EPROTONOSUPPORT, "offset 8");
	put32(v, 3);
	expect_lie(d, len, 12, v, 4, -ENOEXEC, "architecture 3");
	put64(v, len - 1);
	expect_lie(d, len, 16, v, 8, -EINVAL, "size field");
	put64(v, UINT64_MAX);
	expect_lie(d, len, 16, v, 8, -EINVAL, "size field");
	put32(v, 1);
	expect_lie(d, len, 28, v, 4, -EINVAL, "reserved");

	/* Section counts. */
	put32(v, 4);
	expect_lie(d, len, 24, v, 4, -EINVAL, "section 3 at offset");
	put32(v, 2);
	expect_lie(d, len, 24, v, 4, -EINVAL, "stray bytes");
	put32(v, 0);
	expect_lie(d, len, 24, v, 4, -EINVAL, "offset 32");
	put32(v, UINT32_MAX);
	expect_lie(d, len, 24, v, 4, -EINVAL, "cannot fit");

	/* Name lengths and bytes. */
	v[0] = 0;
	expect_lie(d, len, s1, v, 1, -EINVAL, "name length 0");
	v[0] = SNAP_NAME_MAX + 1;
	expect_lie(d, len, s1, v, 1, -EINVAL, "name length 128");
	v[0] = SNAP_NAME_MAX;
	expect_lie(d, len, s2, v, 1, -EINVAL, "runs past");
	v[0] = ' ';
	expect_lie(d, len, s1 + 3, v, 1, -EINVAL, "not printable");
	v[0] = 0x80;
	expect_lie(d, len, s2 + 1, v, 1, -EINVAL, "offset 98");

	/* Payload lengths: past the end, wrapping, short. */
	put64(v, rd64(d, s2 + 1 + 5 + 4) + 1);
	expect_lie(d, len, s2 + 1 + 5 + 4, v, 8, -EINVAL, "payload length 5");
	put64(v, UINT64_MAX);
	expect_lie(d, len, s0 + 1 + 3 + 4, v, 8, -EINVAL, "runs past");
	put64(v, 1ull << 63);
	expect_lie(d, len, s1 + 1 + 5 + 4, v, 8, -EINVAL, "runs past");
	put64(v, len);
	expect_lie(d, len, s0 + 1 + 3 + 4, v, 8, -EINVAL, "runs past");
	put64(v, 3);
	expect_lie(d, len, s2 + 1 + 5 + 4, v, 8, -EINVAL, "stray bytes");
	put64(v, 30);
	expect_lie(d, len, s0 + 1 + 3 + 4, v, 8, -EINVAL, "section 1");

	/* The same name twice, CRC and all. */
	memcpy(v, "dev/0", 5);
	expect_lie(d, len, s1 + 1, v, 5, -EINVAL, "'dev/0'");
	expect_lie(d, len, s1 + 1, v, 5, -EINVAL, "twice");
	free(d);
}

/* Version and architecture are named even when the CRC is wrong too. */
static void test_version_arch(void **state)
{
	char why[160];
	size_t len;
	uint8_t *d;

	(void)state;
	d = small_copy(&len);
	wr32(d, 8, SNAP_FORMAT_VERSION + 1);
	assert_int_equal(parse(d, len, why, sizeof(why)), -EPROTONOSUPPORT);
	wr32(d, 8, SNAP_FORMAT_VERSION);
	wr32(d, 12, 2);
	assert_int_equal(parse(d, len, why, sizeof(why)), -ENOEXEC);
	assert_non_null(strstr(why, "architecture"));
	wr32(d, 12, SNAP_ARCH_X86_64);
	assert_int_equal(parse(d, len, why, sizeof(why)), 0);
	/* A short @why is cut, not overrun. */
	d[40] ^= 1;
	memset(why, 'z', sizeof(why));
	assert_int_equal(parse(d, len, why, 5), -EINVAL);
	assert_string_equal(why, "CRC ");
	assert_int_equal(why[5], 'z');
	free(d);
}

static struct snap_cur cur_of(const void *p, size_t len)
{
	struct snap_cur c = { .p = p, .len = len };

	return c;
}

static void test_cursor_overrun(void **state)
{
	static const uint8_t three[3] = { 1, 2, 3 };
	struct snap_cur c;
	uint8_t buf[4];

	(void)state;
	c = cur_of(three, 3);
	assert_int_equal(snap_cur__u16(&c), 0x0201);
	assert_int_equal(snap_cur__u32(&c), 0); /* 1 byte left */
	assert_true(c.err);
	/* Sticky: even what would fit now reads as zero. */
	assert_int_equal(snap_cur__u8(&c), 0);
	assert_int_equal(snap_cur__end(&c), -EINVAL);

	c = cur_of(three, 3);
	assert_true(snap_cur__u64(&c) == 0);
	assert_true(c.err);
	c = cur_of(three, 3);
	memset(buf, 0xee, sizeof(buf));
	snap_cur__bytes(&c, buf, 4);
	assert_true(c.err);
	assert_memory_equal(buf, "\0\0\0\0", 4);
	c = cur_of(three, 3);
	assert_null(snap_cur__ptr(&c, 4));
	assert_true(c.err);
	c = cur_of(three, 3);
	assert_null(snap_cur__ptr(&c, SIZE_MAX));
	assert_true(c.err);
	c = cur_of(three, 3);
	assert_ptr_equal(snap_cur__ptr(&c, 3), three);
	assert_int_equal(snap_cur__end(&c), 0);
	assert_int_equal(snap_cur__u8(&c), 0);
	assert_int_equal(snap_cur__end(&c), -EINVAL);

	/* Read short of the end, or refused by the consumer. */
	c = cur_of(three, 3);
	assert_int_equal(snap_cur__u8(&c), 1);
	assert_int_equal(snap_cur__end(&c), -EINVAL);
	assert_false(c.err);
	c = cur_of(three, 3);
	snap_cur__bytes(&c, buf, 3);
	assert_int_equal(snap_cur__end(&c), 0);
	snap_cur__fail(&c);
	assert_int_equal(snap_cur__end(&c), -EINVAL);
	c = cur_of(NULL, 0);
	assert_int_equal(snap_cur__end(&c), 0);
	assert_int_equal(snap_cur__u16(&c), 0);
	assert_true(c.err);
}

static void test_cursor_str(void **state)
{
	static const uint8_t nul[] = { 3, 0, 0, 0, 'a', 0, 'b' };
	static const uint8_t past[] = { 4, 0, 0, 0, 'a', 'b', 'c' };
	static const uint8_t huge[] = { 0xff, 0xff, 0xff, 0xff, 'a' };
	static const uint8_t ab[] = { 2, 0, 0, 0, 'a', 'b' };
	struct snap_cur c;
	char dst[3], big[8];

	(void)state;
	c = cur_of(ab, sizeof(ab));
	assert_string_equal(snap_cur__str(&c, dst, 3), "ab");
	assert_int_equal(snap_cur__end(&c), 0);
	/* No room for the NUL. */
	c = cur_of(ab, sizeof(ab));
	memset(dst, 'q', sizeof(dst));
	assert_string_equal(snap_cur__str(&c, dst, 2), "");
	assert_true(c.err);
	assert_int_equal(dst[1], 'q');
	c = cur_of(ab, sizeof(ab));
	assert_ptr_equal(snap_cur__str(&c, dst, 0), dst);
	assert_true(c.err);
	c = cur_of(nul, sizeof(nul));
	assert_string_equal(snap_cur__str(&c, big, sizeof(big)), "");
	assert_true(c.err);
	c = cur_of(past, sizeof(past));
	assert_string_equal(snap_cur__str(&c, dst, 3), "");
	assert_true(c.err);
	c = cur_of(past, sizeof(past));
	assert_string_equal(snap_cur__str(&c, dst, 8), "");
	assert_true(c.err);
	c = cur_of(huge, sizeof(huge));
	assert_string_equal(snap_cur__str(&c, dst, 3), "");
	assert_true(c.err);
	c = cur_of(ab, 3); /* the length itself is cut */
	assert_string_equal(snap_cur__str(&c, dst, 3), "");
	assert_true(c.err);
}

/* Names in @dir, other than . and .., joined into @out. */
static void list_dir(const char *dir, char *out, size_t outlen)
{
	struct dirent *e;
	DIR *d = opendir(dir);

	assert_non_null(d);
	out[0] = '\0';
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		strncat(out, e->d_name, outlen - strlen(out) - 2);
		strcat(out, " ");
	}
	closedir(d);
}

static void test_file_write_read(void **state)
{
	char dir[] = "/tmp/ember-state-XXXXXX", path[64], bad[80], ls[256];
	char why[200];
	struct stat st;
	size_t len;
	void *data;
	mode_t old;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/vm.state", dir);

	old = umask(0);
	assert_int_equal(snap_file__write(path, "first", 5), 0);
	umask(old);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	list_dir(dir, ls, sizeof(ls));
	assert_string_equal(ls, "vm.state ");
	assert_int_equal(snap_file__read(path, &data, &len, why, sizeof(why)),
			 0);
	assert_int_equal(len, 5);
	assert_memory_equal(data, "first", 5);
	free(data);

	/* Replaced whole; the mode is 0600 whatever the umask. */
	assert_int_equal(chmod(path, 0644), 0);
	old = umask(0377);
	assert_int_equal(snap_file__write(path, "second!", 7), 0);
	umask(old);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(snap_file__read(path, &data, &len, why, sizeof(why)),
			 0);
	assert_int_equal(len, 7);
	assert_memory_equal(data, "second!", 7);
	free(data);

	/* Empty is a file too. */
	assert_int_equal(snap_file__write(path, NULL, 0), 0);
	assert_int_equal(snap_file__read(path, &data, &len, why, sizeof(why)),
			 0);
	assert_int_equal(len, 0);
	free(data);
	list_dir(dir, ls, sizeof(ls));
	assert_string_equal(ls, "vm.state ");

	/* A failed rename (onto a non-empty directory) leaves nothing. */
	snprintf(bad, sizeof(bad), "%s/sub", dir);
	assert_int_equal(mkdir(bad, 0700), 0);
	snprintf(bad, sizeof(bad), "%s/sub/x", dir);
	fd = open(bad, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	snprintf(bad, sizeof(bad), "%s/sub", dir);
	assert_true(snap_file__write(bad, "x", 1) < 0);
	list_dir(dir, ls, sizeof(ls));
	assert_non_null(strstr(ls, "vm.state "));
	assert_non_null(strstr(ls, "sub "));
	assert_int_equal(strlen(ls), strlen("vm.state sub "));

	/* Reading a directory, a missing file, an oversized file. */
	assert_int_equal(snap_file__read(bad, &data, &len, why, sizeof(why)),
			 -EINVAL);
	assert_null(data);
	assert_non_null(strstr(why, "not a regular file"));
	snprintf(bad, sizeof(bad), "%s/nope", dir);
	assert_int_equal(snap_file__read(bad, &data, &len, why, sizeof(why)),
			 -ENOENT);
	assert_int_equal(snap_file__write("/nonexistent-dir/x", "x", 1),
			 -ENOENT);
	snprintf(bad, sizeof(bad), "%s/big", dir);
	fd = open(bad, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)SNAP_STATE_MAX + 1), 0);
	close(fd);
	assert_int_equal(snap_file__read(bad, &data, &len, why, sizeof(why)),
			 -EFBIG);
	assert_null(data);
	assert_int_equal(unlink(bad), 0);
	assert_int_equal(snap_file__write("", "x", 1), -EINVAL);

	snprintf(bad, sizeof(bad), "%s/sub/x", dir);
	unlink(bad);
	snprintf(bad, sizeof(bad), "%s/sub", dir);
	rmdir(bad);
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
}

/* A written file reads back and parses: the path the VMM takes. */
static void test_file_roundtrip(void **state)
{
	char dir[] = "/tmp/ember-state-XXXXXX", path[64], why[160];
	struct snap_state s;
	struct snap_cur c;
	struct snap_buf b;
	size_t len;
	void *data;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/snap", dir);
	build_small(&b);
	assert_int_equal(snap_file__write(path, b.data, b.len), 0);
	assert_int_equal(snap_file__read(path, &data, &len, why, sizeof(why)),
			 0);
	assert_int_equal(len, b.len);
	assert_int_equal(snap_state__parse(&s, data, len, why, sizeof(why)), 0);
	assert_int_equal(snap_state__find(&s, "dev/0", &c), 0);
	assert_int_equal(snap_cur__u32(&c), 7);
	free(data);
	snap_buf__free(&b);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_no_sections),
		cmocka_unit_test(test_longest_name),
		cmocka_unit_test(test_writer_errors),
		cmocka_unit_test(test_size_limit),
		cmocka_unit_test(test_every_byte_corrupt),
		cmocka_unit_test(test_truncated_and_extended),
		cmocka_unit_test(test_lying_fields),
		cmocka_unit_test(test_version_arch),
		cmocka_unit_test(test_cursor_overrun),
		cmocka_unit_test(test_cursor_str),
		cmocka_unit_test(test_file_write_read),
		cmocka_unit_test(test_file_roundtrip),
	};

	return cmocka_run_group_tests_name("snapshot_state", tests, NULL, NULL);
}
