// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for snapshot/overlay.c: copy-on-write overlays over a raw
 * base in a temporary directory.  Every test checks the disk the overlay
 * presents against a model kept here (the base's bytes with the writes
 * applied).  The kill -9 test forks a writer, kills it at random moments
 * and checks that every write it reported complete is there.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "../../snapshot/overlay.h"
#include "test_util.h"

#define CLUSTER	   (64u * 1024)
#define BASE_BYTES (16 * CLUSTER + 3000) /* a partial last cluster */
#define NCLUSTERS  17
#define DATA_OFF   (64u * 1024) /* header + 17 entries, rounded up */
#define WHY	   256

/* Header field offsets (overlay.h). */
#define H_VERSION      8
#define H_CLUSTER_BITS 12
#define H_SIZE	       16
#define H_MAP_OFF      24
#define H_ENTRIES      32
#define H_DATA_OFF     40
#define H_BASE_SIZE    48
#define H_BASE_CRC     56
#define H_PATH_LEN     60
#define H_FLAGS	       76
#define H_PATH	       80
#define H_CRC	       4092

static char dir[] = "/tmp/ember-test-ovl-XXXXXX";
static char base_path[64], ovl_path[64], flat_path[64];
static uint8_t base[BASE_BYTES]; /* what the base holds */
static uint8_t model[BASE_BYTES]; /* what the overlay should present */
static uint8_t got[BASE_BYTES];

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, data, len, 0), (ssize_t)len);
	close(fd);
}

static void pwrite_file(const char *path, const void *data, size_t len,
			off_t off)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, data, len, off), (ssize_t)len);
	close(fd);
}

static void pread_file(const char *path, void *data, size_t len, off_t off)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, data, len, off), (ssize_t)len);
	close(fd);
}

static uint64_t file_size(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return (uint64_t)st.st_size;
}

static int group_setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(base_path, sizeof(base_path), "%s/base.img", dir);
	snprintf(ovl_path, sizeof(ovl_path), "%s/disk.ovl", dir);
	snprintf(flat_path, sizeof(flat_path), "%s/flat.img", dir);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	unlink(base_path);
	unlink(ovl_path);
	unlink(flat_path);
	return rmdir(dir);
}

/* A fresh base with a pattern and a fresh overlay over it. */
static int setup(void **state)
{
	char why[WHY];
	size_t i;

	(void)state;
	for (i = 0; i < BASE_BYTES; i++)
		base[i] = (uint8_t)(i * 7 % 251 + (i >> 16));
	memcpy(model, base, BASE_BYTES);
	unlink(ovl_path);
	unlink(flat_path);
	write_file(base_path, base, BASE_BYTES);
	rng_state = 0x9e3779b97f4a7c15ull;
	return overlay__create(ovl_path, base_path, why, sizeof(why));
}

static struct overlay *open_ok(bool ro)
{
	struct overlay *o = NULL;
	char why[WHY] = "";
	int ret = overlay__open(ovl_path, ro, &o, why, sizeof(why));

	if (ret)
		fail_msg("open: %d %s", ret, why);
	assert_non_null(o);
	return o;
}

/* The whole disk, through @o and after a reopen, equals the model. */
static void check_model(struct overlay *o)
{
	memset(got, 0xee, sizeof(got));
	assert_int_equal(overlay__read(o, got, BASE_BYTES, 0), 0);
	assert_memory_equal(got, model, BASE_BYTES);
}

static void check_model_reopen(void)
{
	struct overlay *o = open_ok(true);

	check_model(o);
	overlay__close(o);
}

static void do_write(struct overlay *o, uint64_t off, uint64_t len,
		     uint8_t seed)
{
	static uint8_t buf[4 * CLUSTER];
	uint64_t i;

	assert_true(len <= sizeof(buf));
	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed + i * 13);
	assert_int_equal(overlay__write(o, buf, len, off), 0);
	memcpy(model + off, buf, len);
}

static uint64_t get_entry(uint64_t i);

static void test_fresh(void **state)
{
	struct overlay_info info;
	struct overlay *o;
	struct stat st;
	uint8_t h[8];

	(void)state;
	assert_int_equal(stat(ovl_path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_size, DATA_OFF);
	pread_file(ovl_path, h, 8, 0);
	assert_memory_equal(h, OVERLAY_MAGIC, 8);

	o = open_ok(false);
	overlay__info(o, &info);
	assert_int_equal(info.size, BASE_BYTES);
	assert_int_equal(overlay__size(o), BASE_BYTES);
	assert_int_equal(info.cluster_bytes, CLUSTER);
	assert_int_equal(info.clusters, NCLUSTERS);
	assert_int_equal(info.allocated, 0);
	assert_int_equal(overlay__allocated(o), 0);
	assert_int_equal(info.dropped, 0);
	assert_non_null(strstr(info.base_path, "/base.img"));
	assert_true(info.base_path[0] == '/');
	check_model(o);
	assert_int_equal(overlay__flush(o), 0);
	overlay__close(o);
	overlay__close(NULL);
}

static void test_create_refuses(void **state)
{
	char why[WHY], path[96];
	int fd;

	(void)state;
	/* It exists: O_EXCL, and the file is left alone. */
	assert_int_equal(overlay__create(ovl_path, base_path, why, sizeof(why)),
			 -EEXIST);
	assert_int_equal(file_size(ovl_path), DATA_OFF);
	snprintf(path, sizeof(path), "%s/x.ovl", dir);
	assert_int_equal(
		overlay__create(path, "/nonexistent/base", why, sizeof(why)),
		-ENOENT);
	assert_int_equal(overlay__create(path, "/dev/null", why, sizeof(why)),
			 -EINVAL);
	assert_non_null(strstr(why, "not a regular file"));
	assert_int_equal(overlay__create(path, dir, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "not a regular file"));
	/* An overlay as a base: no chains. */
	assert_int_equal(overlay__create(path, ovl_path, why, sizeof(why)),
			 -EINVAL);
	assert_non_null(strstr(why, "itself an overlay"));
	/* An empty base. */
	fd = open(flat_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(overlay__create(path, flat_path, why, sizeof(why)),
			 -EINVAL);
	assert_int_equal(access(path, F_OK), -1);
	/* A base locked by a writer. */
	fd = open(base_path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	assert_int_equal(overlay__create(path, base_path, why, sizeof(why)),
			 -EBUSY);
	assert_non_null(strstr(why, "in use by a writer"));
	close(fd);
	assert_int_equal(access(path, F_OK), -1);
}

static void test_round_trip(void **state)
{
	struct overlay *o = open_ok(false);
	static uint8_t buf[4 * CLUSTER];
	bool touched[NCLUSTERS] = { 0 };
	uint64_t i, off, len, n = 0, c, e;

	(void)state;
	/* Across a boundary, inside one, whole ones, the partial last one. */
	do_write(o, CLUSTER - 1, 2, 1);
	do_write(o, 3 * CLUSTER + 5, 100, 2);
	do_write(o, 5 * CLUSTER, CLUSTER, 3);
	do_write(o, 7 * CLUSTER - 77, 2 * CLUSTER + 1000, 4);
	do_write(o, BASE_BYTES - 10, 10, 5);
	do_write(o, 0, 1, 6);
	check_model(o);
	/* Random ones, each checked at once at random ranges. */
	for (i = 0; i < 300; i++) {
		len = rnd() % (3 * CLUSTER) + 1;
		off = rnd() % (BASE_BYTES - len + 1);
		do_write(o, off, len, (uint8_t)i);
		len = rnd() % (3 * CLUSTER) + 1;
		off = rnd() % (BASE_BYTES - len + 1);
		memset(buf, 0xee, len);
		assert_int_equal(overlay__read(o, buf, len, off), 0);
		assert_memory_equal(buf, model + off, len);
	}
	check_model(o);
	/* Exactly the clusters that differ from the base or were written. */
	for (c = 0; c < NCLUSTERS; c++)
		touched[c] = memcmp(model + c * CLUSTER, base + c * CLUSTER,
				    c == NCLUSTERS - 1 ? BASE_BYTES % CLUSTER :
							 CLUSTER) != 0;
	for (c = 0; c < NCLUSTERS; c++)
		n += touched[c];
	assert_true(overlay__allocated(o) >= n);
	assert_true(overlay__allocated(o) <= NCLUSTERS);
	assert_int_equal(overlay__flush(o), 0);
	overlay__close(o);
	check_model_reopen();
	/* The last cluster's bytes past the disk's end are zeroes. */
	e = get_entry(NCLUSTERS - 1);
	assert_true(e != 0);
	pread_file(ovl_path, got, CLUSTER - BASE_BYTES % CLUSTER,
		   (off_t)(e + BASE_BYTES % CLUSTER));
	for (i = 0; i < CLUSTER - BASE_BYTES % CLUSTER; i++)
		assert_int_equal(got[i], 0);
	/* The base was never written. */
	pread_file(base_path, got, BASE_BYTES, 0);
	assert_memory_equal(got, base, BASE_BYTES);
	/* The file: header, map, whole clusters. */
	o = open_ok(true);
	assert_int_equal(file_size(ovl_path),
			 DATA_OFF + overlay__allocated(o) * CLUSTER);
	overlay__close(o);
}

static void test_unallocated_from_base(void **state)
{
	struct overlay *o = open_ok(false);
	uint8_t b[100], m[8];
	uint64_t e;

	(void)state;
	do_write(o, 4 * CLUSTER + 100, 100, 9);
	assert_int_equal(overlay__allocated(o), 1);
	/* Its map entry: the first cluster of data. */
	pread_file(ovl_path, m, 8, 4096 + 4 * 8);
	e = rd64(m, 0);
	assert_int_equal(e, DATA_OFF);
	pread_file(ovl_path, m, 8, 4096 + 3 * 8);
	assert_int_equal(rd64(m, 0), 0);
	/*
	 * Change the base between the samples (they do not see it): the
	 * clusters not written follow it, the written one does not.
	 */
	memset(b, 0x5a, sizeof(b));
	pwrite_file(base_path, b, sizeof(b), 3 * CLUSTER + 100);
	pwrite_file(base_path, b, sizeof(b), 4 * CLUSTER + 300);
	memcpy(model + 3 * CLUSTER + 100, b, sizeof(b));
	check_model(o);
	overlay__close(o);
	check_model_reopen();
}

static void test_base_changed(void **state)
{
	struct timespec ts[2] = { { 12345, 0 }, { 12345, 0 } };
	struct overlay *o = NULL;
	char why[WHY], path[96];
	uint8_t b = 0;

	(void)state;
	/* A byte in the first 64 KiB. */
	b = base[10] ^ 1;
	pwrite_file(base_path, &b, 1, 10);
	assert_int_equal(overlay__open(ovl_path, false, &o, why, sizeof(why)),
			 -ESTALE);
	assert_null(o);
	assert_non_null(strstr(why, "changed since the overlay was made"));
	assert_non_null(strstr(why, base_path));
	pwrite_file(base_path, base + 10, 1, 10);
	/* A byte in the last 64 KiB. */
	b = base[BASE_BYTES - 1] ^ 0x80;
	pwrite_file(base_path, &b, 1, BASE_BYTES - 1);
	assert_int_equal(overlay__open(ovl_path, true, &o, why, sizeof(why)),
			 -ESTALE);
	pwrite_file(base_path, base + BASE_BYTES - 1, 1, BASE_BYTES - 1);
	/* Its size. */
	assert_int_equal(truncate(base_path, BASE_BYTES + 512), 0);
	assert_int_equal(overlay__open(ovl_path, false, &o, why, sizeof(why)),
			 -ESTALE);
	assert_non_null(strstr(why, "bytes, was"));
	assert_int_equal(truncate(base_path, BASE_BYTES), 0);
	/* Only its mtime: fine (a copy keeps the content). */
	assert_int_equal(utimensat(AT_FDCWD, base_path, ts, 0), 0);
	o = open_ok(false);
	overlay__close(o);
	/* Gone. */
	snprintf(path, sizeof(path), "%s/moved.img", dir);
	assert_int_equal(rename(base_path, path), 0);
	assert_int_equal(overlay__open(ovl_path, false, &o, why, sizeof(why)),
			 -ENOENT);
	assert_non_null(strstr(why, base_path));
	/* Replaced by an overlay. */
	assert_int_equal(overlay__create(base_path, path, why, sizeof(why)), 0);
	assert_int_equal(overlay__open(ovl_path, false, &o, why, sizeof(why)),
			 -EINVAL);
	assert_non_null(strstr(why, "itself an overlay"));
	assert_int_equal(rename(path, base_path), 0);
	o = open_ok(false);
	overlay__close(o);
}

static void test_locks(void **state)
{
	struct overlay *o = open_ok(false), *o2 = NULL;
	char why[WHY];
	int fd;

	(void)state;
	/* One writer: a second open fails, read-only or not. */
	assert_int_equal(overlay__open(ovl_path, false, &o2, why, sizeof(why)),
			 -EBUSY);
	assert_int_equal(overlay__open(ovl_path, true, &o2, why, sizeof(why)),
			 -EBUSY);
	/* Flattening a disk a VM writes is refused too. */
	assert_int_equal(
		overlay__flatten(ovl_path, flat_path, why, sizeof(why)),
		-EBUSY);
	assert_int_equal(access(flat_path, F_OK), -1);
	overlay__close(o);
	/* Readers share. */
	o = open_ok(true);
	o2 = open_ok(true);
	overlay__close(o2);
	/* A writer on the base (a raw drive of another VM): refused. */
	fd = open(base_path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), -1); /* o holds it */
	overlay__close(o);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
	assert_int_equal(overlay__open(ovl_path, true, &o2, why, sizeof(why)),
			 -EBUSY);
	assert_non_null(strstr(why, "in use by a writer"));
	close(fd);
}

static void test_read_only_and_range(void **state)
{
	struct overlay *o = open_ok(true);
	uint8_t b[16];

	(void)state;
	assert_int_equal(overlay__write(o, b, 1, 0), -EROFS);
	assert_int_equal(overlay__flush(o), 0);
	overlay__close(o);
	o = open_ok(false);
	assert_int_equal(overlay__read(o, b, 1, BASE_BYTES), -EINVAL);
	assert_int_equal(overlay__read(o, b, 2, BASE_BYTES - 1), -EINVAL);
	assert_int_equal(overlay__read(o, b, 16, UINT64_MAX - 8), -EINVAL);
	assert_int_equal(overlay__read(o, b, UINT64_MAX, 1), -EINVAL);
	assert_int_equal(overlay__write(o, b, 1, BASE_BYTES), -EINVAL);
	assert_int_equal(overlay__write(o, b, 16, UINT64_MAX - 8), -EINVAL);
	assert_int_equal(overlay__read(o, b, 0, BASE_BYTES), 0);
	assert_int_equal(overlay__write(o, b, 0, BASE_BYTES), 0);
	assert_int_equal(overlay__allocated(o), 0);
	assert_int_equal(overlay__read(o, b, 1, BASE_BYTES - 1), 0);
	assert_int_equal(b[0], base[BASE_BYTES - 1]);
	overlay__close(o);
}

static void test_is_overlay(void **state)
{
	int fd;

	(void)state;
	fd = open(ovl_path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_true(overlay__is_overlay(fd));
	/* pread: the position is not moved. */
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 0);
	close(fd);
	fd = open(base_path, O_RDONLY | O_CLOEXEC);
	assert_false(overlay__is_overlay(fd));
	close(fd);
	assert_false(overlay__is_overlay(-1));
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_false(overlay__is_overlay(fd));
	close(fd);
}

/* --- corrupt files ------------------------------------------------------ */

static uint8_t hdr[4096];

/* Write @hdr back, with its CRC fixed when @fix_crc. */
static void put_header(bool fix_crc)
{
	if (fix_crc)
		wr32(hdr, H_CRC, (uint32_t)crc32(0, hdr, H_CRC));
	pwrite_file(ovl_path, hdr, sizeof(hdr), 0);
}

/* Opening the overlay fails with @err and a reason containing @needle. */
static void expect_refused(int err, const char *needle)
{
	struct overlay *o = NULL;
	char why[WHY] = "";
	int ret;

	ret = overlay__open(ovl_path, false, &o, why, sizeof(why));
	if (ret != err || !strstr(why, needle))
		fail_msg("open: %d (want %d), '%s' (want '%s')", ret, err, why,
			 needle);
	assert_null(o);
	ret = overlay__open(ovl_path, true, &o, why, sizeof(why));
	assert_int_equal(ret, err);
}

static void test_corrupt_header(void **state)
{
	static const struct {
		unsigned int off, width;
		uint64_t value;
		int err;
		const char *why;
	} bad[] = {
		{ 0, 1, 'X', -EINVAL, "no magic" },
		{ H_VERSION, 4, 2, -EPROTONOSUPPORT, "version 2" },
		{ H_VERSION, 4, 0, -EPROTONOSUPPORT, "version 0" },
		{ H_CLUSTER_BITS, 4, 11, -EINVAL, "cluster size" },
		{ H_CLUSTER_BITS, 4, 22, -EINVAL, "cluster size" },
		{ H_CLUSTER_BITS, 4, 64, -EINVAL, "cluster size" },
		{ H_CLUSTER_BITS, 4, 15, -EINVAL, "map entries" },
		{ H_SIZE, 8, 0, -EINVAL, "disk size" },
		{ H_SIZE, 8, UINT64_MAX, -EINVAL, "disk size" },
		{ H_SIZE, 8, 1ull << 62, -EINVAL, "map entries" },
		{ H_SIZE, 8, BASE_BYTES + CLUSTER, -EINVAL, "map entries" },
		{ H_SIZE, 8, BASE_BYTES + 1, -EINVAL, "base size" },
		{ H_ENTRIES, 8, NCLUSTERS + 1, -EINVAL, "map entries" },
		{ H_ENTRIES, 8, 0, -EINVAL, "map entries" },
		{ H_MAP_OFF, 8, 0, -EINVAL, "map or data offset" },
		{ H_MAP_OFF, 8, 8192, -EINVAL, "map or data offset" },
		{ H_DATA_OFF, 8, 4096, -EINVAL, "map or data offset" },
		{ H_DATA_OFF, 8, 2 * DATA_OFF, -EINVAL, "map or data offset" },
		{ H_BASE_SIZE, 8, BASE_BYTES - 1, -EINVAL, "base size" },
		{ H_FLAGS, 4, 1, -EINVAL, "flags" },
		{ H_PATH_LEN, 4, 0, -EINVAL, "base path" },
		{ H_PATH_LEN, 4, OVERLAY_BASE_PATH_MAX + 1, -EINVAL,
		  "base path" },
		{ H_PATH_LEN, 4, UINT32_MAX, -EINVAL, "base path" },
		{ H_PATH + 3, 1, 0, -EINVAL, "base path" },
		{ H_BASE_CRC, 4, 0, -ESTALE, "(content)" },
	};
	uint8_t saved[4096];
	unsigned int i;
	char why[WHY];

	(void)state;
	pread_file(ovl_path, hdr, sizeof(hdr), 0);
	memcpy(saved, hdr, sizeof(saved));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(hdr, saved, sizeof(hdr));
		if (bad[i].width == 1)
			hdr[bad[i].off] = (uint8_t)bad[i].value;
		else if (bad[i].width == 4)
			wr32(hdr, bad[i].off, (uint32_t)bad[i].value);
		else
			wr64(hdr, bad[i].off, bad[i].value);
		put_header(true);
		expect_refused(bad[i].err, bad[i].why);
		/* The same with a stale CRC: the CRC catches it first. */
		if (bad[i].off >= H_CLUSTER_BITS) {
			wr32(hdr, H_CRC, rd32(saved, H_CRC));
			pwrite_file(ovl_path, hdr, sizeof(hdr), 0);
			expect_refused(-EINVAL, "CRC");
		}
	}
	/* Any bit anywhere in the header, path padding included. */
	for (i = 0; i < 4096; i += 97) {
		memcpy(hdr, saved, sizeof(hdr));
		hdr[i] ^= 0x10;
		pwrite_file(ovl_path, hdr, sizeof(hdr), 0);
		if (i < 8)
			expect_refused(-EINVAL, "no magic");
		else if (i < 12)
			expect_refused(-EPROTONOSUPPORT, "version");
		else
			expect_refused(-EINVAL, "CRC");
	}
	/* Consistent, but more map entries than an overlay may have. */
	memcpy(hdr, saved, sizeof(hdr));
	wr64(hdr, H_SIZE, 1ull << 40);
	wr64(hdr, H_BASE_SIZE, 1ull << 40);
	wr64(hdr, H_ENTRIES, 1ull << 24);
	wr64(hdr, H_DATA_OFF, 4096 + (8ull << 24));
	put_header(true);
	expect_refused(-EINVAL, "map entries");
	/* A path as long as the header holds, without a NUL. */
	memcpy(hdr, saved, sizeof(hdr));
	memset(hdr + H_PATH, 'a', H_CRC - H_PATH);
	wr32(hdr, H_PATH_LEN, OVERLAY_BASE_PATH_MAX + 1);
	put_header(true);
	expect_refused(-EINVAL, "base path");
	/* A relative base path is relative to the overlay's directory. */
	memcpy(hdr, saved, sizeof(hdr));
	memset(hdr + H_PATH, 0, OVERLAY_BASE_PATH_MAX);
	memcpy(hdr + H_PATH, "base.img", 8);
	wr32(hdr, H_PATH_LEN, 8);
	put_header(true);
	overlay__close(open_ok(false));
	memcpy(hdr + H_PATH, "bass.img", 8);
	put_header(true);
	expect_refused(-ENOENT, "/bass.img");
	/* Back to the good header: it opens. */
	memcpy(hdr, saved, sizeof(hdr));
	put_header(false);
	overlay__close(open_ok(false));

	/* Truncated: inside the map, inside the header. */
	assert_int_equal(truncate(ovl_path, DATA_OFF - 1), 0);
	expect_refused(-EINVAL, "truncated");
	assert_int_equal(truncate(ovl_path, 4095), 0);
	expect_refused(-EINVAL, "shorter than its header");
	assert_int_equal(truncate(ovl_path, 0), 0);
	expect_refused(-EINVAL, "shorter than its header");
	/* Not a regular file: the fd variant sees it. */
	{
		struct overlay *o = NULL;
		int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);

		assert_int_equal(overlay__open_fd(fd, "/dev/zero", true, &o,
						  why, sizeof(why)),
				 -EINVAL);
		assert_non_null(strstr(why, "not a regular file"));
		close(fd); /* still ours */
	}
}

/* Set map entry @i of the overlay file to @v. */
static void set_entry(uint64_t i, uint64_t v)
{
	uint8_t le[8];

	wr64(le, 0, v);
	pwrite_file(ovl_path, le, 8, 4096 + i * 8);
}

static uint64_t get_entry(uint64_t i)
{
	uint8_t le[8];

	pread_file(ovl_path, le, 8, 4096 + i * 8);
	return rd64(le, 0);
}

static void test_corrupt_map(void **state)
{
	struct overlay *o = open_ok(false);
	struct overlay_info info;
	uint64_t a, b, size;

	(void)state;
	do_write(o, 2 * CLUSTER, 10, 1);
	do_write(o, 9 * CLUSTER, 10, 2);
	overlay__close(o);
	a = get_entry(2);
	b = get_entry(9);
	assert_int_equal(a, DATA_OFF);
	assert_int_equal(b, DATA_OFF + CLUSTER);
	check_model_reopen();

	/* Not cluster-aligned. */
	set_entry(9, b + 512);
	expect_refused(-EINVAL, "corrupt map (cluster 9");
	set_entry(9, b + 1);
	expect_refused(-EINVAL, "corrupt map (cluster 9");
	/* Onto the header or the map. */
	set_entry(9, 0);
	set_entry(1, 4096);
	expect_refused(-EINVAL, "corrupt map (cluster 1");
	set_entry(1, 0);
	/* Two clusters at one offset. */
	set_entry(9, a);
	expect_refused(-EINVAL, "two clusters at offset");
	set_entry(16, a);
	set_entry(9, b);
	expect_refused(-EINVAL, "two clusters at offset");
	set_entry(16, 0);
	check_model_reopen();

	/*
	 * Past the end of the file (a write lost in a host crash): dropped,
	 * the cluster reads from the base; a read-only open leaves the file
	 * alone, a read-write one clears the entry.
	 */
	size = file_size(ovl_path);
	set_entry(5, size);
	set_entry(6, UINT64_MAX & ~(uint64_t)(CLUSTER - 1));
	assert_int_equal(truncate(ovl_path, size - CLUSTER + 4096), 0);
	memcpy(model + 9 * CLUSTER, base + 9 * CLUSTER, CLUSTER);
	o = open_ok(true);
	overlay__info(o, &info);
	assert_int_equal(info.dropped, 3);
	assert_int_equal(info.allocated, 1);
	check_model(o);
	overlay__close(o);
	assert_int_equal(get_entry(5), size);
	assert_int_equal(get_entry(9), b);
	o = open_ok(false);
	overlay__info(o, &info);
	assert_int_equal(info.dropped, 3);
	check_model(o);
	assert_int_equal(get_entry(5), 0);
	assert_int_equal(get_entry(6), 0);
	assert_int_equal(get_entry(9), 0);
	assert_int_equal(get_entry(2), a);
	/* New clusters go past the partial one at the end. */
	do_write(o, 12 * CLUSTER + 7, 3, 3);
	assert_int_equal(get_entry(12), b + CLUSTER);
	do_write(o, 9 * CLUSTER + 7, 3, 4);
	assert_int_equal(get_entry(9), b + 2 * CLUSTER);
	overlay__close(o);
	o = open_ok(false);
	overlay__info(o, &info);
	assert_int_equal(info.dropped, 0);
	assert_int_equal(info.allocated, 3);
	check_model(o);
	overlay__close(o);
}

/*
 * Another cluster size than overlay__create()'s: 4 KiB, so that the map
 * (at 4 KiB) is a cluster-aligned offset before the data (at 8 KiB).
 */
static void test_small_clusters(void **state)
{
	struct overlay_info info;
	struct overlay *o;
	uint64_t i, len;

	(void)state;
	pread_file(ovl_path, hdr, sizeof(hdr), 0);
	wr32(hdr, H_CLUSTER_BITS, 12);
	wr64(hdr, H_ENTRIES, (BASE_BYTES + 4095) / 4096);
	wr64(hdr, H_DATA_OFF, 8192);
	put_header(true);
	o = open_ok(false);
	overlay__info(o, &info);
	assert_int_equal(info.cluster_bytes, 4096);
	assert_int_equal(info.clusters, (BASE_BYTES + 4095) / 4096);
	for (i = 0; i < 100; i++) {
		len = rnd() % 20000 + 1;
		do_write(o, rnd() % (BASE_BYTES - len + 1), len, (uint8_t)i);
	}
	do_write(o, BASE_BYTES - 1, 1, 7);
	check_model(o);
	overlay__close(o);
	check_model_reopen();
	/* New clusters start at the file's end (it was 64 KiB). */
	for (i = 0, len = UINT64_MAX; i < info.clusters; i++)
		if (get_entry(i) && get_entry(i) < len)
			len = get_entry(i);
	assert_int_equal(len, 64 * 1024);
	/* Onto the map: aligned, but before the data. */
	len = get_entry(3);
	set_entry(3, 4096);
	expect_refused(-EINVAL, "corrupt map (cluster 3");
	set_entry(3, len);
	check_model_reopen();
}

static void test_flatten(void **state)
{
	struct overlay *o = open_ok(false);
	static uint8_t zero[CLUSTER];
	char why[WHY];
	struct stat st;
	int i;

	(void)state;
	for (i = 0; i < 40; i++) {
		uint64_t len = rnd() % (2 * CLUSTER) + 1;

		do_write(o, rnd() % (BASE_BYTES - len + 1), len, (uint8_t)i);
	}
	/* A zeroed cluster, to become a hole. */
	assert_int_equal(overlay__write(o, zero, CLUSTER, 14 * CLUSTER), 0);
	memset(model + 14 * CLUSTER, 0, CLUSTER);
	overlay__close(o);
	assert_int_equal(
		overlay__flatten(ovl_path, flat_path, why, sizeof(why)), 0);
	assert_int_equal(stat(flat_path, &st), 0);
	assert_int_equal(st.st_size, BASE_BYTES);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_true((uint64_t)st.st_blocks * 512 < BASE_BYTES - CLUSTER / 2);
	pread_file(flat_path, got, BASE_BYTES, 0);
	assert_memory_equal(got, model, BASE_BYTES);
	/* It exists: refused, left alone. */
	assert_int_equal(
		overlay__flatten(ovl_path, flat_path, why, sizeof(why)),
		-EEXIST);
	assert_int_equal(file_size(flat_path), BASE_BYTES);
	unlink(flat_path);
	/* Not an overlay: nothing is made. */
	assert_int_equal(
		overlay__flatten(base_path, flat_path, why, sizeof(why)),
		-EINVAL);
	assert_int_equal(access(flat_path, F_OK), -1);
}

static void test_leaked_tail(void **state)
{
	uint8_t junk[1000];
	struct overlay *o;

	(void)state;
	/* A crash between a cluster's data and its entry: data, no entry. */
	memset(junk, 0x77, sizeof(junk));
	pwrite_file(ovl_path, junk, sizeof(junk), DATA_OFF);
	o = open_ok(false);
	check_model(o);
	do_write(o, 0, 1, 1);
	assert_int_equal(get_entry(0), DATA_OFF + CLUSTER);
	overlay__close(o);
	check_model_reopen();
}

/* --- host errors ------------------------------------------------------ */

/*
 * Run @fn in a child whose files may not grow past @limit bytes (writes
 * past it fail with EFBIG); returns what @fn returned, negated back.
 */
static int with_fsize_limit(uint64_t limit, int (*fn)(void))
{
	struct rlimit rl = { limit, limit };
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (!pid) {
		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl))
			_exit(255);
		_exit(-fn());
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return -WEXITSTATUS(st);
}

static int do_create(void)
{
	char why[WHY];

	return overlay__create(ovl_path, base_path, why, sizeof(why));
}

static int do_flatten(void)
{
	char why[WHY];

	return overlay__flatten(ovl_path, flat_path, why, sizeof(why));
}

/* In place into cluster 0 works, a new cluster fails; 0 if so. */
static int do_writes(void)
{
	struct overlay *o;
	uint8_t b[100] = { 1 };
	char why[WHY];
	int ret;

	if (overlay__open(ovl_path, false, &o, why, sizeof(why)))
		return -1;
	ret = overlay__write(o, b, sizeof(b), 5);
	if (!ret)
		ret = overlay__write(o, b, sizeof(b), 3 * CLUSTER) == -EFBIG ?
			      0 :
			      -2;
	if (!ret)
		ret = overlay__write(o, b, sizeof(b), 4 * CLUSTER) == -EFBIG ?
			      0 :
			      -3;
	overlay__close(o);
	return ret;
}

static void test_host_errors(void **state)
{
	struct overlay *o = open_ok(false);
	uint8_t b[100] = { 1 };

	(void)state;
	/* Nothing is left of a failed create or flatten. */
	unlink(ovl_path);
	assert_int_equal(with_fsize_limit(DATA_OFF - 1, do_create), -EFBIG);
	assert_int_equal(access(ovl_path, F_OK), -1);
	assert_int_equal(do_create(), 0);
	assert_int_equal(with_fsize_limit(BASE_BYTES - 1, do_flatten), -EFBIG);
	assert_int_equal(access(flat_path, F_OK), -1);
	/* Failed allocations leave the overlay as it was. */
	overlay__close(o);
	o = open_ok(false);
	do_write(o, 0, 10, 1);
	overlay__close(o);
	assert_int_equal(with_fsize_limit(DATA_OFF + CLUSTER + 100, do_writes),
			 0);
	memcpy(model + 5, b, sizeof(b));
	o = open_ok(false);
	check_model(o);
	assert_int_equal(overlay__allocated(o), 1);
	/* And the next one goes past the half-written cluster. */
	do_write(o, 7 * CLUSTER, 1, 2);
	assert_int_equal(get_entry(7), DATA_OFF + 2 * CLUSTER);
	overlay__close(o);
	check_model_reopen();
}

/* --- kill -9 ------------------------------------------------------------ */

/*
 * A base of its own, 32 MiB (512 clusters), so that writes keep
 * allocating clusters for a while; every other round starts on a fresh
 * overlay.
 */
#define KILL_ROUNDS    16
#define KILL_BYTES     (32u << 20)
#define KILL_MAX_WRITE (3 * CLUSTER)

static char kbase_path[64], kovl_path[64];

/* Write @k of round @r: where, how long, what (the same in both). */
static void kill_write(unsigned int r, uint32_t k, uint64_t *off, uint64_t *len,
		       uint8_t *buf)
{
	uint64_t s = ((uint64_t)r << 32 | k) * 0x9e3779b97f4a7c15ull + 1;
	uint64_t i;

	s ^= s >> 29;
	*len = (s % 64 + 1) * (s % 3 ? 512 : 4093);
	if (*len > KILL_MAX_WRITE)
		*len = KILL_MAX_WRITE;
	*off = (s >> 8) % (KILL_BYTES - *len + 1);
	if (s & 1)
		*off &= ~511ull;
	for (i = 0; i < *len; i++)
		buf[i] = (uint8_t)(s + i * 29 + k);
}

static void kill_child(unsigned int r, int ack)
{
	static uint8_t buf[KILL_MAX_WRITE];
	struct overlay *o;
	uint64_t off, len;
	char why[WHY];
	uint32_t k;

	if (overlay__open(kovl_path, false, &o, why, sizeof(why)))
		_exit(2);
	for (k = 0; k < 100000; k++) {
		kill_write(r, k, &off, &len, buf);
		if (overlay__write(o, buf, len, off))
			_exit(3);
		if (write(ack, &k, sizeof(k)) != sizeof(k))
			_exit(4);
	}
	_exit(0);
}

static void test_kill9(void **state)
{
	static uint8_t buf[KILL_MAX_WRITE];
	uint8_t *kbase = malloc(KILL_BYTES), *kmodel = malloc(KILL_BYTES);
	uint8_t *kgot = malloc(KILL_BYTES);
	uint64_t off, len, i, total = 0, allocs = 0;
	struct overlay_info info;
	struct overlay *o;
	char why[WHY];
	unsigned int r;
	int p[2], st;
	uint32_t k, acked;
	pid_t pid;

	(void)state;
	assert_non_null(kbase);
	assert_non_null(kmodel);
	assert_non_null(kgot);
	snprintf(kbase_path, sizeof(kbase_path), "%s/big.img", dir);
	snprintf(kovl_path, sizeof(kovl_path), "%s/big.ovl", dir);
	for (i = 0; i < KILL_BYTES; i++)
		kbase[i] = (uint8_t)(i * 3 + (i >> 12));
	write_file(kbase_path, kbase, KILL_BYTES);
	rng_state = (uint64_t)time(NULL) | 1;
	print_message("kill -9 rounds, seed %llu\n",
		      (unsigned long long)rng_state);
	for (r = 0; r < KILL_ROUNDS; r++) {
		struct timespec t = { 0, (long)(rnd() % 20000000) };

		if (r % 2 == 0) {
			unlink(kovl_path);
			assert_int_equal(overlay__create(kovl_path, kbase_path,
							 why, sizeof(why)),
					 0);
			memcpy(kmodel, kbase, KILL_BYTES);
		}
		assert_int_equal(pipe2(p, O_CLOEXEC), 0);
		/* Big enough for every ack: the child never blocks on it. */
		fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
		pid = fork();
		assert_true(pid >= 0);
		if (!pid) {
			close(p[0]);
			kill_child(r, p[1]);
		}
		close(p[1]);
		if (r % 4 == 3)
			t.tv_nsec /= 100; /* right after it opened, or before */
		nanosleep(&t, NULL);
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, &st, 0), pid);
		if (!WIFSIGNALED(st))
			fail_msg("child exit %d", WEXITSTATUS(st));
		/* Every ack, in order: those writes must be there. */
		acked = 0;
		while (read(p[0], &k, sizeof(k)) == sizeof(k)) {
			assert_int_equal(k, acked);
			kill_write(r, k, &off, &len, buf);
			memcpy(kmodel + off, buf, len);
			acked++;
		}
		close(p[0]);
		total += acked;
		assert_int_equal(
			overlay__open(kovl_path, false, &o, why, sizeof(why)),
			0);
		overlay__info(o, &info);
		assert_int_equal(info.dropped, 0);
		allocs += info.allocated;
		assert_int_equal(overlay__read(o, kgot, KILL_BYTES, 0), 0);
		/* The one in flight: each byte old or new. */
		kill_write(r, acked, &off, &len, buf);
		for (i = 0; i < KILL_BYTES; i++) {
			if (kgot[i] == kmodel[i])
				continue;
			if (i >= off && i < off + len &&
			    kgot[i] == buf[i - off])
				continue;
			fail_msg("round %u: byte %llu is %#x, want %#x "
				 "(%u writes acked)",
				 r, (unsigned long long)i, kgot[i], kmodel[i],
				 acked);
		}
		memcpy(kmodel, kgot, KILL_BYTES);
		overlay__close(o);
	}
	print_message("%llu writes acked in %u rounds, %llu clusters\n",
		      (unsigned long long)total, KILL_ROUNDS,
		      (unsigned long long)allocs);
	assert_true(total > 0);
	unlink(kovl_path);
	unlink(kbase_path);
	free(kbase);
	free(kmodel);
	free(kgot);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, NULL)
		T(test_fresh),
		T(test_create_refuses),
		T(test_round_trip),
		T(test_unallocated_from_base),
		T(test_base_changed),
		T(test_locks),
		T(test_read_only_and_range),
		T(test_is_overlay),
		T(test_corrupt_header),
		T(test_corrupt_map),
		T(test_small_clusters),
		T(test_flatten),
		T(test_leaked_tail),
		T(test_host_errors),
		T(test_kill9),
#undef T
	};

	return cmocka_run_group_tests_name("overlay", tests, group_setup,
					   group_teardown);
}
