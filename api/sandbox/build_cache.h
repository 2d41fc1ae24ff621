/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Dockerfile build cache's bound (issue 22): <state>/build-cache holds
 * one disk per cached step, KEY.ext4 (template_docker.c), and grows with
 * every build.  It is kept under a size by removing the disks used least
 * recently, as a builder's cache garbage collection does: a disk's mtime
 * is its last use (made or restored from), and build_cache__evict() runs
 * before every Dockerfile build, after each step it caches, and after it.
 *
 * The bounds: $EMBER_BUILD_CACHE_MIB (MiB of allocated blocks; 0: no
 * cache kept at all), else BUILD_CACHE_DEFAULT_MIB; and a floor of free
 * space on the state directory's file system that the cache gives way
 * to, $EMBER_BUILD_CACHE_MIN_FREE_MIB, else BUILD_CACHE_MIN_FREE_PCT of
 * its size (BuildKit's minFreeSpace: a cache that fills the disk fails
 * the next build, which needs room for its disk and snapshot).
 */
#ifndef EMBER_API_BUILD_CACHE_H
#define EMBER_API_BUILD_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define BUILD_CACHE_DEFAULT_MIB	 10240 /* 10 GiB */
#define BUILD_CACHE_MIN_FREE_PCT 20
#define BUILD_CACHE_SUFFIX	 ".ext4"

/*
 * build_cache__limit() - the bound in bytes: $EMBER_BUILD_CACHE_MIB
 * (decimal MiB, at most 2^40) when set and valid, else
 * BUILD_CACHE_DEFAULT_MIB.  -EINVAL with the rule in @err when set but
 * not a number in range (a typo must not empty the cache silently).
 */
int build_cache__limit(uint64_t *bytes, char *err, size_t errlen);

/*
 * build_cache__min_free() - the floor in bytes for the file system of
 * @dir: $EMBER_BUILD_CACHE_MIN_FREE_MIB (decimal MiB, at most 2^40) when
 * set and valid, else BUILD_CACHE_MIN_FREE_PCT percent of that file
 * system's size (0 when statvfs() fails: only the size bound then).
 * -EINVAL with the rule in @err when set but not a number in range.
 */
int build_cache__min_free(const char *dir, uint64_t *bytes, char *err,
			  size_t errlen);

/*
 * build_cache__touch() - mark the cached disk @path used now (its mtime),
 * so that eviction keeps it longest.  0 or a negative errno (a missing
 * file: -ENOENT); the caller may ignore a failure (only the order of
 * eviction suffers).
 */
int build_cache__touch(const char *path);

/*
 * build_cache__evict() - remove the least recently used disks (*.ext4,
 * regular files, oldest mtime first; a name tie broken by name) of the
 * cache directory @dir until the rest allocate at most @max_bytes (st_
 * blocks: the disks are sparse) and @dir's file system has at least
 * @min_free_bytes available (f_bavail; or no disk is left).  Other
 * files (a step being saved, KEY.ext4.tmp-PID) are neither counted nor
 * removed.  *@removed (if not
 * NULL) is the number removed, *@kept_bytes (if not NULL) what is left.
 * A missing @dir is an empty cache (0).  0, or a negative errno with one
 * line in @err (opendir, or unlink of a disk that is still needed to get
 * under the bound).
 */
int build_cache__evict(const char *dir, uint64_t max_bytes,
		       uint64_t min_free_bytes, size_t *removed,
		       uint64_t *kept_bytes, char *err, size_t errlen);

#endif /* EMBER_API_BUILD_CACHE_H */
