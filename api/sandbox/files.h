/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Generic helpers of the sandbox library: bounded path formatting, whole
 * writes, rm -rf, mkdir -p, a sparse copy of a disk image; the
 * @err/@errlen convention of its verbs (sandbox__errf) and a growing
 * array (sandbox__grow).  Every function returns 0 or a negative errno.
 */
#ifndef EMBER_API_FILES_H
#define EMBER_API_FILES_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/types.h>

/*
 * snprintf() into @out (@outsz bytes, > 0), which is always terminated:
 * 0, or -ENAMETOOLONG when the text did not fit (or could not be formatted).
 */
__attribute__((format(printf, 3, 4))) int files__pathf(char *out, size_t outsz,
						       const char *fmt, ...);

/*
 * Write all @len bytes of @buf to @fd, going on after short writes and
 * EINTR, and waiting in poll(2) when a non-blocking @fd is full.  0, the
 * write's negative errno, or -EIO when it wrote nothing.
 */
int files__write_all(int fd, const void *buf, size_t len);

/*
 * rm -rf @path, not following symlinks (a symlink is removed, not what it
 * points to); directories more than 8 levels below @path are not entered.
 * 0, also when @path does not exist; the negative errno of removing @path
 * itself; or -EIO when only something below @path could not be removed.
 */
int files__rm_tree(const char *path);

/*
 * mkdir -p @path: create it and its missing parents with mode 0700 (less
 * the umask); existing ones stay as they are.  0, -ENAMETOOLONG (over
 * PATH_MAX), or mkdir()'s negative errno.
 */
int files__mkdir_p(const char *path);

/*
 * Copy the whole regular file @in into @out, an empty file opened for
 * writing, keeping @in's holes (SEEK_DATA/SEEK_HOLE) and with
 * copy_file_range() where the file systems allow, else by reads and
 * writes that skip all-zero chunks (1 MiB at most).  @out ends as long as @in;
 * both fds stay open and owned by the caller, @in's offset is left
 * anywhere.  -EIO when @in shrinks meanwhile, else the failing call's
 * negative errno (@out then holds part of the copy).  Not reentrant: it
 * uses one static buffer.
 */
int files__copy_sparse(int in, int out);

/*
 * files__read_text() - the small file @path (a symbolic link is refused)
 * into @buf (@size bytes, > 0) as a NUL-terminated text, cut at @size - 1
 * bytes: its length, or the negative errno of open(2) or read(2).
 */
ssize_t files__read_text(const char *path, char *buf, size_t size);

/*
 * files__next_kv() - the next "key=value" line of a text, as strtok_r(3)
 * walks it: @text on the first call, NULL after, with the same *@save.
 * Empty lines and lines without '=' are skipped.  1 with *@key and *@val
 * pointing into the text (the '=' and the '\n' overwritten), or 0 at its
 * end.
 */
int files__next_kv(char *text, char **save, char **key, char **val);

#define FILES_SYNC     1u /* files__replace: synced, and its directory */
#define FILES_NOFOLLOW 2u /* files__replace: a link at @tmp is refused */

/*
 * files__replace() - write-then-rename: @len bytes of @buf to the new
 * file @tmp (mode @mode, truncated if there), then renamed over @path (in
 * the same directory), so that a reader sees the old file or the new one,
 * never a part.  With FILES_SYNC in @flags the file is synced before the
 * rename and its directory after, so that the new one outlives a host
 * crash; with FILES_NOFOLLOW a symbolic link at @tmp is an error.  0, or
 * the failing call's negative errno, and then @path is unchanged and no
 * @tmp is left.
 */
int files__replace(const char *path, const char *tmp, const void *buf,
		   size_t len, mode_t mode, unsigned int flags);

/*
 * files__lock() - open(@path, @flags, @mode) and flock() it with @how
 * (LOCK_SH or LOCK_EX; waiting): the fd, or a negative errno with "PATH:
 * why" in @err and nothing left open.
 */
int files__lock(const char *path, int flags, mode_t mode, int how, char *err,
		size_t errlen);

/*
 * files__each_entry() - call @fn(@arg, name) for each entry of the
 * directory @dir ("." and ".." too), in the order read, until it returns
 * non-zero.  0, what @fn returned, or -errno of opendir() with "DIR: why"
 * in @err.
 */
int files__each_entry(const char *dir, int (*fn)(void *arg, const char *name),
		      void *arg, char *err, size_t errlen);

/*
 * files__read_dir() - what @fn makes of the entries of the directory
 * @dir: @fn(@arg, name, item) fills the @size bytes at item and returns
 * true to keep it.  The items kept, in the order read, into the
 * malloc()ed array *@out (free() it; NULL when none) of *@n.  0, or
 * files__each_entry()'s errors, or -ENOMEM ("out of memory" in @err).
 */
int files__read_dir(const char *dir, size_t size,
		    bool (*fn)(void *arg, const char *name, void *item),
		    void *arg, void **out, size_t *n, char *err, size_t errlen);

/*
 * sandbox__grow() - make room for one more element of @size bytes in the
 * malloc()ed array *@v of *@cap elements holding @n (doubling, from 8).
 * Returns 0, or -ENOMEM with *@v unchanged (still the caller's to free).
 */
static inline int sandbox__grow(void **v, size_t *cap, size_t n, size_t size)
{
	size_t c;
	void *nv;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 8;
	nv = realloc(*v, c * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = c;
	return 0;
}

/*
 * Leave the printf-style message in @err (@errlen bytes, always
 * terminated when > 0) and return @rc, the negative errno of the failure,
 * so that failing is one statement: return sandbox__errf(err, errlen,
 * -EINVAL, "not a sandbox id: %s", ref);
 */
__attribute__((format(printf, 4, 5))) int
sandbox__errf(char *err, size_t errlen, int rc, const char *fmt, ...);

#endif /* EMBER_API_FILES_H */
