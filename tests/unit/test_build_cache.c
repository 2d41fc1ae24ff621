// SPDX-License-Identifier: Apache-2.0
/*
 * The Dockerfile build cache's bounds (api/sandbox/build_cache.h): the
 * limit and the free-space floor from the environment, and least-
 * recently-used eviction in a temporary directory of real sparse files.
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
#include <sys/statvfs.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../api/sandbox/build_cache.h"
#include "../../api/sandbox/files.h"

static char dir[64];

/* A file @name in dir with @kib KiB written and mtime @t (s). */
static void make(const char *name, size_t kib, time_t t)
{
	char path[128], buf[1024];
	struct timespec ts[2] = { { t, 0 }, { t, 0 } };
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	memset(buf, 'x', sizeof(buf));
	for (size_t i = 0; i < kib; i++)
		assert_int_equal(write(fd, buf, sizeof(buf)), sizeof(buf));
	/* A hole: sparse files count by their blocks, not their size. */
	assert_int_equal(ftruncate(fd, (off_t)(kib + 1024) << 10), 0);
	assert_int_equal(fsync(fd), 0);
	close(fd);
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static bool exists(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_build_cache.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return files__rm_tree(dir);
}

static void test_limit(void **state)
{
	char err[256];
	uint64_t b;

	(void)state;
	unsetenv("EMBER_BUILD_CACHE_MIB");
	assert_int_equal(build_cache__limit(&b, err, sizeof(err)), 0);
	assert_true(b == (uint64_t)BUILD_CACHE_DEFAULT_MIB << 20);
	setenv("EMBER_BUILD_CACHE_MIB", "0", 1);
	assert_int_equal(build_cache__limit(&b, err, sizeof(err)), 0);
	assert_true(b == 0);
	setenv("EMBER_BUILD_CACHE_MIB", "300", 1);
	assert_int_equal(build_cache__limit(&b, err, sizeof(err)), 0);
	assert_true(b == 300ULL << 20);
	setenv("EMBER_BUILD_CACHE_MIB", "", 1);
	assert_int_equal(build_cache__limit(&b, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "EMBER_BUILD_CACHE_MIB"));
	setenv("EMBER_BUILD_CACHE_MIB", "-1", 1);
	assert_int_equal(build_cache__limit(&b, err, sizeof(err)), -EINVAL);
	setenv("EMBER_BUILD_CACHE_MIB", "12x", 1);
	assert_int_equal(build_cache__limit(&b, err, sizeof(err)), -EINVAL);
	setenv("EMBER_BUILD_CACHE_MIB", "99999999999999999999", 1);
	assert_int_equal(build_cache__limit(&b, err, sizeof(err)), -EINVAL);
	unsetenv("EMBER_BUILD_CACHE_MIB");
}

static void test_min_free(void **state)
{
	char err[256];
	struct statvfs vfs;
	uint64_t b;

	(void)state;
	assert_int_equal(statvfs("/tmp", &vfs), 0);
	unsetenv("EMBER_BUILD_CACHE_MIN_FREE_MIB");
	assert_int_equal(build_cache__min_free("/tmp", &b, err, sizeof(err)),
			 0);
	assert_true(b == (uint64_t)vfs.f_blocks * vfs.f_frsize / 100 *
				 BUILD_CACHE_MIN_FREE_PCT);
	assert_true(b > 0);
	/* No file system to measure: no floor, not an error. */
	assert_int_equal(
		build_cache__min_free("/nonexistent/x", &b, err, sizeof(err)),
		0);
	assert_true(b == 0);
	setenv("EMBER_BUILD_CACHE_MIN_FREE_MIB", "512", 1);
	assert_int_equal(build_cache__min_free("/tmp", &b, err, sizeof(err)),
			 0);
	assert_true(b == 512ULL << 20);
	setenv("EMBER_BUILD_CACHE_MIN_FREE_MIB", "5G", 1);
	assert_int_equal(build_cache__min_free("/tmp", &b, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "EMBER_BUILD_CACHE_MIN_FREE_MIB"));
	unsetenv("EMBER_BUILD_CACHE_MIN_FREE_MIB");
}

/*
 * Under the size bound but short of the floor: the least recently used
 * go until the file system has it free (another writer on the same file
 * system can only make more go, never fewer).
 */
static void test_evict_floor(void **state)
{
	char err[256];
	struct statvfs vfs;
	uint64_t kept, avail;
	size_t gone;

	(void)state;
	make("a.ext4", 512, 1000);
	make("b.ext4", 512, 2000);
	make("c.ext4", 512, 3000);
	assert_int_equal(statvfs(dir, &vfs), 0);
	avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	/* Free now: nothing goes. */
	assert_int_equal(build_cache__evict(dir, UINT64_MAX, avail / 2, &gone,
					    &kept, err, sizeof(err)),
			 0);
	assert_int_equal(gone, 0);
	/* 256 KiB short: the oldest disk (512 KiB) is enough. */
	assert_int_equal(build_cache__evict(dir, UINT64_MAX,
					    avail + (256 << 10), &gone, &kept,
					    err, sizeof(err)),
			 0);
	assert_true(gone >= 1);
	assert_false(exists("a.ext4"));
	assert_true(exists("c.ext4"));
	/* A floor no cache can reach: all of it goes, and that is no error. */
	assert_int_equal(build_cache__evict(dir, UINT64_MAX, UINT64_MAX, &gone,
					    &kept, err, sizeof(err)),
			 0);
	assert_false(exists("b.ext4") || exists("c.ext4"));
	assert_true(kept == 0);
}

static void test_evict_lru(void **state)
{
	char err[256], path[128];
	uint64_t kept;
	size_t gone;

	(void)state;
	make("a.ext4", 256, 1000); /* oldest */
	make("b.ext4", 256, 3000);
	make("c.ext4", 256, 2000);
	make("d.ext4.tmp-42", 512, 1); /* being saved: not the cache's */
	make("notes", 512, 1);
	/* Under the bound: nothing goes. */
	assert_int_equal(build_cache__evict(dir, 1 << 20, 0, &gone, &kept, err,
					    sizeof(err)),
			 0);
	assert_int_equal(gone, 0);
	assert_true(kept >= 768 << 10 && kept < 1 << 20);
	/* c used now: a, the least recently used, then b go first. */
	snprintf(path, sizeof(path), "%s/c.ext4", dir);
	assert_int_equal(build_cache__touch(path), 0);
	assert_int_equal(build_cache__evict(dir, 600 << 10, 0, &gone, &kept,
					    err, sizeof(err)),
			 0);
	assert_int_equal(gone, 1);
	assert_false(exists("a.ext4"));
	assert_true(exists("b.ext4") && exists("c.ext4"));
	assert_int_equal(build_cache__evict(dir, 300 << 10, 0, &gone, &kept,
					    err, sizeof(err)),
			 0);
	assert_int_equal(gone, 1);
	assert_false(exists("b.ext4"));
	assert_true(exists("c.ext4"));
	/* 0: no cache at all; other files stay. */
	assert_int_equal(
		build_cache__evict(dir, 0, 0, &gone, &kept, err, sizeof(err)),
		0);
	assert_int_equal(gone, 1);
	assert_true(kept == 0);
	assert_true(exists("d.ext4.tmp-42") && exists("notes"));
	assert_int_equal(build_cache__touch(path), -ENOENT);
}

static void test_evict_missing_dir(void **state)
{
	char err[256], path[128];
	uint64_t kept = 1;
	size_t gone = 1;

	(void)state;
	/* An empty cache: nothing to sort, nothing removed. */
	assert_int_equal(
		build_cache__evict(dir, 0, 0, &gone, &kept, err, sizeof(err)),
		0);
	assert_int_equal(gone, 0);
	snprintf(path, sizeof(path), "%s/none", dir);
	assert_int_equal(
		build_cache__evict(path, 0, 0, &gone, &kept, err, sizeof(err)),
		0);
	assert_int_equal(gone, 0);
	assert_true(kept == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_limit),
		cmocka_unit_test(test_min_free),
		cmocka_unit_test_setup_teardown(test_evict_floor, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_evict_lru, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_evict_missing_dir, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
