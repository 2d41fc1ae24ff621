// SPDX-License-Identifier: Apache-2.0
/*
 * The Dockerfile build cache's bound: least recently used disks removed
 * (build_cache.h).
 */
#include "build_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "files.h"

#define LIMIT_MAX_MIB (1ULL << 40)

struct cached {
	char name[256];
	struct timespec used;
	uint64_t bytes;
};

/* $@name in MiB into *@bytes; 1 when unset, 0 when set, -EINVAL. */
static int env_mib(const char *name, uint64_t *bytes, char *err, size_t errlen)
{
	const char *v = getenv(name);
	unsigned long long mib;
	char *end;

	if (!v)
		return 1;
	errno = 0;
	mib = strtoull(v, &end, 10);
	if (!*v || *end || errno || v[0] == '-' || mib > LIMIT_MAX_MIB)
		return sandbox__errf(err, errlen, -EINVAL,
				     "%s: MiB, 0 to %llu, not '%.64s'", name,
				     LIMIT_MAX_MIB, v);
	*bytes = (uint64_t)mib << 20;
	return 0;
}

int build_cache__limit(uint64_t *bytes, char *err, size_t errlen)
{
	int rc = env_mib("EMBER_BUILD_CACHE_MIB", bytes, err, errlen);

	if (rc == 1)
		*bytes = (uint64_t)BUILD_CACHE_DEFAULT_MIB << 20;
	return rc < 0 ? rc : 0;
}

int build_cache__min_free(const char *dir, uint64_t *bytes, char *err,
			  size_t errlen)
{
	int rc = env_mib("EMBER_BUILD_CACHE_MIN_FREE_MIB", bytes, err, errlen);
	struct statvfs vfs;

	if (rc != 1)
		return rc;
	*bytes = 0;
	if (!statvfs(dir, &vfs))
		*bytes = (uint64_t)vfs.f_blocks * vfs.f_frsize / 100 *
			 BUILD_CACHE_MIN_FREE_PCT;
	return 0;
}

int build_cache__touch(const char *path)
{
	return utimensat(AT_FDCWD, path, NULL, 0) ? -errno : 0;
}

static bool is_disk(const char *name)
{
	size_t n = strlen(name), s = strlen(BUILD_CACHE_SUFFIX);

	return n > s && !strcmp(name + n - s, BUILD_CACHE_SUFFIX) &&
	       name[0] != '.';
}

/* Oldest first; the same time: by name, so that the order is stable. */
static int by_use(const void *a, const void *b)
{
	const struct cached *x = a, *y = b;

	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	if (x->used.tv_nsec != y->used.tv_nsec)
		return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The disks of @d into *@v (*@n of them), their total in *@total. */
static int list_disks(DIR *d, struct cached **v, size_t *n, uint64_t *total)
{
	size_t cap = 0;
	struct dirent *e;
	struct stat st;

	*total = 0;
	while ((errno = 0, e = readdir(d))) {
		if (!is_disk(e->d_name) || strlen(e->d_name) >= 256)
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		if (sandbox__grow((void **)v, &cap, *n, sizeof(**v)))
			return -ENOMEM;
		memcpy((*v)[*n].name, e->d_name, strlen(e->d_name) + 1);
		(*v)[*n].used = st.st_mtim;
		(*v)[*n].bytes = (uint64_t)st.st_blocks * 512;
		*total += (*v)[*n].bytes;
		(*n)++;
	}
	return errno ? -errno : 0;
}

/* Under the floor: what @d's file system has available is below @min. */
static bool short_of(DIR *d, uint64_t min)
{
	struct statvfs vfs;

	return min && !fstatvfs(dirfd(d), &vfs) &&
	       (uint64_t)vfs.f_bavail * vfs.f_frsize < min;
}

int build_cache__evict(const char *dir, uint64_t max_bytes,
		       uint64_t min_free_bytes, size_t *removed,
		       uint64_t *kept_bytes, char *err, size_t errlen)
{
	struct cached *v = NULL;
	size_t n = 0, gone = 0;
	uint64_t total = 0;
	DIR *d;
	int rc;

	d = opendir(dir);
	if (!d) {
		rc = errno == ENOENT ?
			     0 :
			     sandbox__errf(err, errlen, -errno, "%s: %s", dir,
					   strerror(errno));
		goto out;
	}
	rc = list_disks(d, &v, &n, &total);
	if (rc) {
		sandbox__errf(err, errlen, rc, "%s: %s", dir, strerror(-rc));
		goto out_dir;
	}
	if (n)
		qsort(v, n, sizeof(*v), by_use);
	for (size_t i = 0;
	     i < n && (total > max_bytes || short_of(d, min_free_bytes)); i++) {
		if (unlinkat(dirfd(d), v[i].name, 0) && errno != ENOENT) {
			rc = sandbox__errf(err, errlen, -errno, "%s/%s: %s",
					   dir, v[i].name, strerror(errno));
			break;
		}
		total -= v[i].bytes;
		gone++;
	}
out_dir:
	closedir(d);
out:
	free(v);
	if (removed)
		*removed = gone;
	if (kept_bytes)
		*kept_bytes = total;
	return rc;
}
