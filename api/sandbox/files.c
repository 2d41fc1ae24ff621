// SPDX-License-Identifier: Apache-2.0
/* File helpers: see files.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"

int files__pathf(char *out, size_t outsz, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out, outsz, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= outsz ? -ENAMETOOLONG : 0;
}

static int rm_tree_at(int dfd, const char *name, int depth)
{
	struct dirent *e;
	DIR *d;
	int fd, rc = 0;

	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if ((errno != EISDIR && errno != EPERM) || depth > 8)
		return -errno;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (rm_tree_at(fd, e->d_name, depth + 1) < 0)
			rc = -EIO;
	}
	closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		rc = -errno;
	return rc;
}

int files__rm_tree(const char *path)
{
	return rm_tree_at(AT_FDCWD, path, 0);
}

int files__write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			/* Someone else's non-blocking fd (our stdout). */
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };

			if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
				return -errno;
			continue;
		}
		return n < 0 ? -errno : -EIO;
	}
	return 0;
}

int files__mkdir_p(const char *path)
{
	char p[PATH_MAX];
	size_t i;

	if (files__pathf(p, sizeof(p), "%s", path))
		return -ENAMETOOLONG;
	for (i = 1; p[i]; i++) {
		if (p[i] != '/')
			continue;
		p[i] = '\0';
		if (mkdir(p, 0700) < 0 && errno != EEXIST)
			return -errno;
		p[i] = '/';
	}
	if (mkdir(p, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Copy @len bytes at @off, kernel-side if it can. */
static int copy_range(int in, int out, off_t off, off_t len)
{
	/* Static: too big for the stack; emberctl copies one image at a time. */
	static char buf[1 << 20];
	off_t oin = off, oout = off;

	while (len > 0) {
		size_t want = len > (1 << 30) ? (1 << 30) : (size_t)len;
		ssize_t n = copy_file_range(in, &oin, out, &oout, want, 0);

		if (n > 0) {
			len -= n;
			continue;
		}
		if (n == 0)
			return -EIO; /* the image shrank under us */
		if (errno == EINTR)
			continue;
		if (errno != ENOSYS && errno != EXDEV && errno != EINVAL &&
		    errno != EOPNOTSUPP && errno != EPERM)
			return -errno;
		break;
	}
	/* Fallback: read and write, skipping zero blocks (holes already). */
	while (len > 0) {
		size_t want =
			len > (off_t)sizeof(buf) ? sizeof(buf) : (size_t)len;
		ssize_t n = pread(in, buf, want, oin);
		size_t z = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		while (z < (size_t)n && !buf[z])
			z++;
		if (z < (size_t)n) {
			ssize_t done = 0;

			while (done < n) {
				ssize_t w =
					pwrite(out, buf + done,
					       (size_t)(n - done), oin + done);

				if (w < 0 && errno == EINTR)
					continue;
				if (w <= 0)
					return w < 0 ? -errno : -EIO;
				done += w;
			}
		}
		oin += n;
		len -= n;
	}
	return 0;
}

int files__copy_sparse(int in, int out)
{
	struct stat st;
	off_t data = 0, hole;
	int rc;

	if (fstat(in, &st) < 0)
		return -errno;
	if (ftruncate(out, st.st_size) < 0)
		return -errno;
	while (data < st.st_size) {
		data = lseek(in, data, SEEK_DATA);
		if (data < 0 && errno == ENXIO)
			break; /* only a hole is left */
		if (data < 0)
			return copy_range(in, out, 0, st.st_size);
		hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0 || hole > st.st_size)
			hole = st.st_size;
		rc = copy_range(in, out, data, hole - data);
		if (rc < 0)
			return rc;
		data = hole;
	}
	return 0;
}

ssize_t files__read_text(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return n;
}

int files__next_kv(char *text, char **save, char **key, char **val)
{
	char *line, *eq;

	for (line = strtok_r(text, "\n", save); line;
	     line = strtok_r(NULL, "\n", save)) {
		eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = '\0';
		*key = line;
		*val = eq + 1;
		return 1;
	}
	return 0;
}

int files__replace(const char *path, const char *tmp, const void *buf,
		   size_t len, mode_t mode, unsigned int flags)
{
	char dir[PATH_MAX], *slash;
	int fd, rc;

	fd = open(tmp,
		  O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
			  (flags & FILES_NOFOLLOW ? O_NOFOLLOW : 0),
		  mode);
	if (fd < 0)
		return -errno;
	rc = files__write_all(fd, buf, len);
	if (!rc && (flags & FILES_SYNC) && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path) < 0)
		rc = -errno;
	if (rc) {
		unlink(tmp);
		return rc;
	}
	if (!(flags & FILES_SYNC) || files__pathf(dir, sizeof(dir), "%s", path))
		return 0;
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	fd = open(slash ? (dir[0] ? dir : "/") : ".",
		  O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	return 0;
}

/* In this light file: every client of the library links it. */
int sandbox__errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

int files__lock(const char *path, int flags, mode_t mode, int how, char *err,
		size_t errlen)
{
	int fd = open(path, flags, mode), rc;

	if (fd < 0 || flock(fd, how) < 0) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		return sandbox__errf(err, errlen, rc, "%s: %s", path,
				     strerror(-rc));
	}
	return fd;
}

int files__each_entry(const char *dir, int (*fn)(void *arg, const char *name),
		      void *arg, char *err, size_t errlen)
{
	struct dirent *e;
	DIR *d = opendir(dir);
	int rc = 0;

	if (!d)
		return sandbox__errf(err, errlen, -errno, "%s: %s", dir,
				     strerror(errno));
	while (!rc && (e = readdir(d)))
		rc = fn(arg, e->d_name);
	closedir(d);
	return rc;
}

struct read_dir {
	size_t size, cap, n;
	char *v;
	bool (*fn)(void *arg, const char *name, void *item);
	void *arg;
};

static int read_one(void *arg, const char *name)
{
	struct read_dir *r = arg;

	if (sandbox__grow((void **)&r->v, &r->cap, r->n, r->size))
		return -ENOMEM;
	if (r->fn(r->arg, name, r->v + r->n * r->size))
		r->n++;
	return 0;
}

int files__read_dir(const char *dir, size_t size,
		    bool (*fn)(void *arg, const char *name, void *item),
		    void *arg, void **out, size_t *n, char *err, size_t errlen)
{
	struct read_dir r = { .size = size, .fn = fn, .arg = arg };
	int rc = files__each_entry(dir, read_one, &r, err, errlen);

	*out = NULL;
	*n = 0;
	if (rc) {
		free(r.v);
		return rc == -ENOMEM ? sandbox__errf(err, errlen, -ENOMEM,
						     "out of memory") :
				       rc;
	}
	if (!r.n) {
		free(r.v);
		r.v = NULL;
	}
	*out = r.v;
	*n = r.n;
	return 0;
}
