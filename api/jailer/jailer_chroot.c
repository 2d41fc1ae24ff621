// SPDX-License-Identifier: Apache-2.0
/*
 * The jail's directory: <base>/<exec-name>/<id>/root, the copy of the exec
 * file in it, the mount namespace that makes it "/" (Firecracker's
 * docs/jailer.md, "Example Run and Notes") and its device nodes.  Undoing
 * and --cleanup remove trees through directory fds, never following a
 * symlink, so they work from inside the jail's mount namespace too.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "jailer.h"

#define TREE_DEPTH_MAX 64

/* @path's character device number, or @fallback when it is none. */
static dev_t host_dev(const char *path, dev_t fallback, bool *have)
{
	struct stat st;

	*have = !stat(path, &st) && S_ISCHR(st.st_mode);
	return *have ? st.st_rdev : fallback;
}

void jail_chroot__init(struct jail_chroot *c)
{
	bool have;

	memset(c, 0, sizeof(*c));
	c->anchor_fd = -1;
	c->root_fd = -1;
	c->kvm = host_dev("/dev/kvm", makedev(10, 232), &have);
	c->tun = host_dev("/dev/net/tun", makedev(10, 200), &have);
	c->uffd = host_dev("/dev/userfaultfd", 0, &c->have_uffd);
}

static int append(char *buf, size_t size, const char *sep, const char *name)
{
	size_t n = strlen(buf);
	int len = snprintf(buf + n, size - n, "%s%s", n ? sep : "", name);

	return len < 0 || (size_t)len >= size - n ? -ENAMETOOLONG : 0;
}

/*
 * Make each missing component of @rel below @dirfd (mode 0755), following
 * symlinks only where @follow; returns an O_PATH fd of the last one, or
 * -errno with @e set (@shown: how @dirfd is shown).  Once one component is
 * made, it and those below it are appended to @made (NULL: not recorded),
 * and *@anchor_fd gets an fd of the directory the first was made in.
 */
static int mkdir_p_at(int dirfd, const char *rel, bool follow, char *made,
		      int *anchor_fd, const char *shown, struct jail_err *e)
{
	char name[NAME_MAX + 1], done[PATH_MAX] = "";
	const char *p = rel;
	int fd, nfd, ret;

	fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return jail_err__set(e, errno, NULL, "open %s", shown);
	for (; *p; p += strcspn(p, "/")) {
		size_t n;
		bool made_now;

		p += strspn(p, "/");
		n = strcspn(p, "/");
		if (n == 0)
			break;
		if (n > NAME_MAX) {
			errno = ENAMETOOLONG;
			goto fail;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		append(done, sizeof(done), "/", name);
		made_now = !mkdirat(fd, name, 0755);
		if (!made_now && errno != EEXIST)
			goto fail;
		if (made && made_now && !*made)
			*anchor_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		if (made && (made_now || *made))
			append(made, PATH_MAX, "/", name);
		nfd = openat(fd, name,
			     O_PATH | O_DIRECTORY | O_CLOEXEC |
				     (follow ? 0 : O_NOFOLLOW));
		if (nfd < 0)
			goto fail;
		close(fd);
		fd = nfd;
	}
	return fd;
fail:
	ret = jail_err__set(e, errno, NULL, "create %s/%s", shown, done);
	close(fd);
	return ret;
}

static int copy_exec(struct jail_chroot *c, const struct jail_args *a,
		     struct jail_err *e)
{
	int src, dst = -1, ret = 0;
	struct stat st;
	off_t left;

	src = open(a->exec_file, O_RDONLY | O_CLOEXEC);
	if (src < 0 || fstat(src, &st)) {
		ret = jail_err__set(e, errno, NULL, "open --exec-file %s",
				    a->exec_file);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = jail_err__set(e, EINVAL, "not a regular file",
				    "open --exec-file %s", a->exec_file);
		goto out;
	}
	/* A copy, not a link: the jail cannot change the host's binary. */
	dst = openat(c->root_fd, a->exec_name,
		     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		     0755);
	if (dst < 0)
		goto fail;
	for (left = st.st_size; left > 0;) {
		ssize_t n = sendfile(dst, src, NULL, (size_t)left);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO; /* the file shrank */
			goto fail;
		}
		left -= n;
	}
	if (fchmod(dst, 0755) || close(dst)) {
		dst = -1;
		goto fail;
	}
	dst = -1;
	goto out;
fail:
	ret = jail_err__set(e, errno, NULL, "copy %s to %s/%s", a->exec_file,
			    c->path, a->exec_name);
out:
	if (dst >= 0)
		close(dst);
	if (src >= 0)
		close(src);
	return ret;
}

int jail_chroot__create(struct jail_chroot *c, const struct jail_args *a,
			struct jail_err *e)
{
	char base[PATH_MAX], rel[PATH_MAX];
	int fd, id_fd, ret;

	c->a = a;
	snprintf(base, sizeof(base), "%s", a->chroot_base);
	while (strlen(base) > 1 && base[strlen(base) - 1] == '/')
		base[strlen(base) - 1] = '\0';
	if (snprintf(c->path, sizeof(c->path), "%s/%s/%s/root",
		     strcmp(base, "/") ? base : "", a->exec_name,
		     a->id) >= (int)sizeof(c->path))
		return jail_err__set(e, ENAMETOOLONG, NULL, "create chroot %s",
				     base);
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return jail_err__set(e, errno, NULL, "open /");
	/* The base may pass through symlinks; the jailer's own part not. */
	ret = mkdir_p_at(fd, base, true, c->rel, &c->anchor_fd, "", e);
	close(fd);
	if (ret < 0)
		return ret;
	fd = ret;
	snprintf(rel, sizeof(rel), "%s/%s", a->exec_name, a->id);
	ret = mkdir_p_at(fd, rel, false, c->rel, &c->anchor_fd, base, e);
	close(fd);
	if (ret < 0)
		return ret;
	id_fd = ret;
	if (mkdirat(id_fd, "root", 0700)) {
		if (errno != EEXIST) {
			ret = jail_err__set(e, errno, NULL, "create chroot %s",
					    c->path);
			close(id_fd);
			return ret;
		}
		/* Firecracker's jailer uses it, and so does Kata. */
		c->root_existed = true;
	} else {
		if (!c->rel[0])
			c->anchor_fd = fcntl(id_fd, F_DUPFD_CLOEXEC, 3);
		append(c->rel, sizeof(c->rel), "/", "root");
	}
	c->root_fd = openat(id_fd, "root",
			    O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(id_fd);
	if ((!c->root_existed && c->anchor_fd < 0) || c->root_fd < 0)
		return jail_err__set(e, errno, NULL, "open chroot %s", c->path);
	ret = copy_exec(c, a, e);
	if (!ret)
		jail_chroot__note_made(c, a->exec_name);
	return ret;
}

void jail_chroot__note_made(struct jail_chroot *c, const char *name)
{
	size_t i;

	if (!c->root_existed)
		return;
	for (i = 0; i < c->n_made; i++)
		if (!strcmp(c->made[i], name))
			return;
	if (c->n_made < sizeof(c->made) / sizeof(c->made[0]))
		snprintf(c->made[c->n_made++], sizeof(c->made[0]), "%s", name);
}

static int bind_ro(struct jail_chroot *c, const char *dir, struct jail_err *e)
{
	char target[PATH_MAX], top[NAME_MAX + 1];
	struct stat st;
	size_t top_len;
	bool top_made;
	int fd;

	if (snprintf(target, sizeof(target), "%s%s", c->path, dir) >=
	    (int)sizeof(target))
		return jail_err__set(e, ENAMETOOLONG, NULL, "--ro-bind %s",
				     dir);
	/* Its top directory, when made here, goes with an existing root. */
	top_len = strcspn(dir + 1, "/");
	snprintf(top, sizeof(top), "%.*s", (int)top_len, dir + 1);
	top_made = fstatat(c->root_fd, top, &st, AT_SYMLINK_NOFOLLOW) &&
		   errno == ENOENT;
	fd = mkdir_p_at(c->root_fd, dir + 1, false, NULL, NULL, c->path, e);
	if (top_made &&
	    (fd >= 0 || !fstatat(c->root_fd, top, &st, AT_SYMLINK_NOFOLLOW)))
		jail_chroot__note_made(c, top);
	if (fd < 0)
		return fd;
	close(fd);
	if (mount(dir, target, NULL, MS_BIND, NULL))
		return jail_err__set(e, errno, NULL, "bind-mount %s at %s", dir,
				     target);
	c->n_bound++;
	if (mount(NULL, target, NULL,
		  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
		  NULL))
		return jail_err__set(e, errno, NULL, "make %s read-only",
				     target);
	return 0;
}

/* Does the jail (@jail_fd: its root) already see the host's file @st? */
static bool jail_sees(int jail_fd, const char *path, const struct stat *st)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	struct stat js;
	bool same;
	int fd;

	fd = (int)syscall(SYS_openat2, jail_fd, path, &how, sizeof(how));
	if (fd < 0)
		return false; /* absent, or openat2 missing: bind it */
	same = !fstat(fd, &js) && js.st_dev == st->st_dev &&
	       js.st_ino == st->st_ino;
	close(fd);
	return same;
}

/*
 * Make @name in @dir_fd as the host has it: a directory, a symlink with
 * the same target, or (@last) an empty file to bind the host's file on.
 * An entry already there must be of the same kind.
 */
static int mirror_entry(int dir_fd, const char *name, const struct stat *st,
			const char *host_path, bool *made)
{
	char target[PATH_MAX], have[PATH_MAX];
	struct stat js;
	ssize_t n, m;
	int fd;

	*made = false;
	if (!fstatat(dir_fd, name, &js, AT_SYMLINK_NOFOLLOW)) {
		if ((js.st_mode & S_IFMT) != (st->st_mode & S_IFMT))
			return -EEXIST;
		if (!S_ISLNK(st->st_mode))
			return 0;
		n = readlink(host_path, target, sizeof(target) - 1);
		m = readlinkat(dir_fd, name, have, sizeof(have) - 1);
		return n >= 0 && n == m && !memcmp(target, have, (size_t)n) ?
			       0 :
			       -EEXIST;
	}
	*made = true;
	if (S_ISDIR(st->st_mode))
		return mkdirat(dir_fd, name, 0755) ? -errno : 0;
	if (S_ISLNK(st->st_mode)) {
		n = readlink(host_path, target, sizeof(target) - 1);
		if (n < 0)
			return -errno;
		target[n] = '\0';
		return symlinkat(target, dir_fd, name) ? -errno : 0;
	}
	fd = openat(dir_fd, name,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/*
 * Walk @path on the host as the kernel resolves it and recreate it below
 * @jail_fd (the jail's root, after the self bind): directories and
 * symlinks as they are, the file at its end bound read-only from the
 * host.  Symlinks are recreated, not followed, so that the loader's own
 * name for the file (/lib64/ld-linux-x86-64.so.2) resolves in the jail
 * the way it does on the host.
 */
static int bind_lib(struct jail_chroot *c, int jail_fd, const char *path,
		    struct jail_err *e)
{
	char rest[PATH_MAX * 2], done[PATH_MAX] = "", name[NAME_MAX + 1];
	char tmp[PATH_MAX * 2], proc[64];
	int dir_fd, fd, links = 0, ret = 0;
	struct stat st;
	bool made;

	if (!stat(path, &st) && jail_sees(jail_fd, path, &st))
		return 0; /* a --ro-bind or the caller already put it there */
	snprintf(rest, sizeof(rest), "%s", path);
	dir_fd = fcntl(jail_fd, F_DUPFD_CLOEXEC, 3);
	if (dir_fd < 0)
		return jail_err__set(e, errno, NULL, "bind %s", path);
	for (;;) {
		char *p = rest + strspn(rest, "/");
		size_t n = strcspn(p, "/");
		bool last;

		if (!n) {
			ret = jail_err__set(e, EISDIR, "not a file",
					    "bind library %s", path);
			break;
		}
		if (n > NAME_MAX) {
			ret = jail_err__set(e, ENAMETOOLONG, NULL,
					    "bind library %s", path);
			break;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		memmove(rest, p + n, strlen(p + n) + 1);
		last = !rest[strspn(rest, "/")];
		if (last && (!strcmp(name, ".") || !strcmp(name, ".."))) {
			ret = jail_err__set(e, EISDIR, "not a file",
					    "bind library %s", path);
			break;
		}
		if (!strcmp(name, "."))
			continue;
		if (!strcmp(name, "..")) {
			/* done's parent, walked again from the root. */
			char *slash = strrchr(done, '/');

			if (slash)
				*slash = '\0';
			snprintf(tmp, sizeof(tmp), "%s%s", done, rest);
			snprintf(rest, sizeof(rest), "%s", tmp);
			done[0] = '\0';
			close(dir_fd);
			dir_fd = fcntl(jail_fd, F_DUPFD_CLOEXEC, 3);
			if (dir_fd < 0) {
				ret = jail_err__set(e, errno, NULL, "bind %s",
						    path);
				break;
			}
			continue;
		}
		snprintf(tmp, sizeof(tmp), "%s/%s", done, name);
		if (lstat(tmp, &st)) {
			ret = jail_err__set(e, errno, NULL,
					    "bind library %s: %s", path, tmp);
			break;
		}
		if (!S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode) &&
		    !(last && S_ISREG(st.st_mode))) {
			ret = jail_err__set(e, EINVAL, "not a file",
					    "bind library %s: %s", path, tmp);
			break;
		}
		ret = mirror_entry(dir_fd, name, &st, tmp, &made);
		if (ret) {
			ret = jail_err__set(e, -ret,
					    ret == -EEXIST ?
						    "the jail has another "
						    "file there" :
						    NULL,
					    "create %s%s for library %s",
					    c->path, tmp, path);
			break;
		}
		if (made && !done[0])
			jail_chroot__note_made(c, name);
		if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t t = readlink(tmp, target, sizeof(target) - 1);

			if (t < 0 || ++links > 40) {
				ret = jail_err__set(e, t < 0 ? errno : ELOOP,
						    NULL, "bind library %s: %s",
						    path, tmp);
				break;
			}
			target[t] = '\0';
			/* Walked again from the root: done + target + rest. */
			t = snprintf(tmp, sizeof(tmp), "%s%s%s%s",
				     target[0] == '/' ? "" : done,
				     target[0] == '/' ? "" : "/", target, rest);
			done[0] = '\0';
			close(dir_fd);
			dir_fd = fcntl(jail_fd, F_DUPFD_CLOEXEC, 3);
			if (t < 0 || t >= (ssize_t)sizeof(rest) || dir_fd < 0) {
				ret = jail_err__set(
					e, dir_fd < 0 ? errno : ENAMETOOLONG,
					NULL, "bind library %s", path);
				break;
			}
			snprintf(rest, sizeof(rest), "%s", tmp);
			continue;
		}
		if (snprintf(done, sizeof(done), "%s", tmp) >=
		    (int)sizeof(done)) {
			ret = jail_err__set(e, ENAMETOOLONG, NULL,
					    "bind library %s", path);
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			fd = openat(dir_fd, name,
				    O_PATH | O_DIRECTORY | O_NOFOLLOW |
					    O_CLOEXEC);
			if (fd < 0) {
				ret = jail_err__set(e, errno, NULL, "open %s%s",
						    c->path, done);
				break;
			}
			close(dir_fd);
			dir_fd = fd;
			continue;
		}
		/* The file: bind the host's onto the jail's empty one. */
		fd = openat(dir_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			ret = jail_err__set(e, errno, NULL, "open %s%s",
					    c->path, done);
			break;
		}
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		if (mount(done, proc, NULL, MS_BIND, NULL)) {
			ret = jail_err__set(e, errno, NULL,
					    "bind-mount %s at %s%s", done,
					    c->path, done);
			close(fd);
			break;
		}
		close(fd);
		if (c->n_lib_mounts < JAIL_MAX_LIBS)
			snprintf(c->lib_mounts[c->n_lib_mounts++], PATH_MAX,
				 "%s", done);
		snprintf(tmp, sizeof(tmp), "%s%s", c->path, done);
		if (mount(NULL, tmp, NULL,
			  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID |
				  MS_NODEV,
			  NULL))
			ret = jail_err__set(e, errno, NULL, "make %s read-only",
					    tmp);
		break;
	}
	if (dir_fd >= 0)
		close(dir_fd);
	return ret;
}

int jail_chroot__enter(struct jail_chroot *c, const struct jail_args *a,
		       const struct jail_libs *l, struct jail_err *e)
{
	int jail_fd;
	size_t i;
	int ret;

	if (unshare(CLONE_NEWNS))
		return jail_err__set(e, errno, NULL,
				     "unshare the mount namespace");
	c->entered = true;
	/* Nothing mounted in the jail reaches the host; the reverse does. */
	if (mount(NULL, "/", NULL, MS_SLAVE | MS_REC, NULL))
		return jail_err__set(e, errno, NULL,
				     "make / a recursive slave mount");
	/*
	 * pivot_root(2) wants the new root to be a mount point; recursive,
	 * so that what a caller bound in (Kata: the kernel, the drives, the
	 * FIFOs) stays, and what it binds later propagates in.
	 */
	if (mount(c->path, c->path, NULL, MS_BIND | MS_REC, NULL))
		return jail_err__set(e, errno, NULL,
				     "bind-mount %s onto itself", c->path);
	for (i = 0; i < a->n_ro_binds; i++) {
		ret = bind_ro(c, a->ro_binds[i], e);
		if (ret)
			return ret;
	}
	/* The jail as it is now (root_fd is the directory under it). */
	jail_fd = open(c->path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (jail_fd < 0)
		return jail_err__set(e, errno, NULL, "open %s", c->path);
	for (i = 0; i < l->n; i++) {
		ret = bind_lib(c, jail_fd, l->path[i], e);
		if (ret) {
			close(jail_fd);
			return ret;
		}
	}
	close(jail_fd);
	if (chdir(c->path))
		return jail_err__set(e, errno, NULL, "chdir %s", c->path);
	if (mkdir("old_root", 0700))
		return jail_err__set(e, errno, NULL, "create %s/old_root",
				     c->path);
	jail_chroot__note_made(c, "old_root");
	if (syscall(SYS_pivot_root, ".", "old_root"))
		return jail_err__set(e, errno, NULL, "pivot_root into %s",
				     c->path);
	c->pivoted = true;
	if (chdir("/") || umount2("/old_root", MNT_DETACH))
		return jail_err__set(e, errno, NULL, "detach the old root");
	if (rmdir("/old_root"))
		return jail_err__set(e, errno, NULL, "remove /old_root");
	if (chroot("."))
		return jail_err__set(e, errno, NULL, "chroot into %s", c->path);
	return 0;
}

static int make_node(const char *path, dev_t dev, const struct jail_args *a,
		     struct jail_err *e)
{
	if (mknod(path, S_IFCHR | 0600, dev))
		return jail_err__set(e, errno, NULL, "mknod %s (%u:%u)", path,
				     major(dev), minor(dev));
	if (chown(path, a->uid, a->gid))
		return jail_err__set(e, errno, NULL, "chown %s to %u:%u", path,
				     (unsigned int)a->uid,
				     (unsigned int)a->gid);
	return 0;
}

int jail_chroot__make_devices(struct jail_chroot *c, const struct jail_args *a,
			      struct jail_err *e)
{
	int ret;

	if (mkdir("/dev", 0755))
		return jail_err__set(e, errno, NULL, "create /dev in %s",
				     c->path);
	jail_chroot__note_made(c, "dev");
	if (mkdir("/dev/net", 0755))
		return jail_err__set(e, errno, NULL, "create /dev/net in %s",
				     c->path);
	ret = make_node("/dev/kvm", c->kvm, a, e);
	if (!ret)
		ret = make_node("/dev/net/tun", c->tun, a, e);
	if (!ret && c->have_uffd)
		ret = make_node("/dev/userfaultfd", c->uffd, a, e);
	return ret;
}

/*
 * Open directory @name in @d (@path: its name in messages) to empty it:
 * not through a symlink, not onto another filesystem than @dev, not past
 * TREE_DEPTH_MAX.  Returns the fd or -errno.
 */
static int open_subdir(DIR *d, const char *name, dev_t dev, int depth,
		       const char *path, struct jail_err *e)
{
	struct stat st;
	int fd, ret;

	fd = openat(dirfd(d), name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return jail_err__set(e, errno, NULL, "open %s", path);
	if (fstat(fd, &st))
		ret = jail_err__set(e, errno, NULL, "stat %s", path);
	else if (st.st_dev != dev)
		ret = jail_err__set(e, EXDEV,
				    "on another filesystem (a mount): not "
				    "crossed",
				    "remove %s", path);
	else if (depth >= TREE_DEPTH_MAX)
		ret = jail_err__set(e, ELOOP, "nested too deeply", "remove %s",
				    path);
	else
		return fd;
	close(fd);
	return ret;
}

/* Empty the directory @fd (closed here); @path: its name in messages. */
static int empty_dir(int fd, dev_t dev, char *path, int depth,
		     struct jail_err *e)
{
	size_t len = strlen(path);
	struct dirent *de;
	int ret = 0;
	DIR *d;

	d = fdopendir(fd);
	if (!d) {
		ret = jail_err__set(e, errno, NULL, "read %s", path);
		close(fd);
		return ret;
	}
	while (!ret) {
		struct stat st;
		bool is_dir;

		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno)
				ret = jail_err__set(e, errno, NULL, "read %s",
						    path);
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (append(path, PATH_MAX, "/", de->d_name)) {
			ret = jail_err__set(e, ENAMETOOLONG, NULL, "remove %s",
					    path);
			break;
		}
		is_dir = de->d_type == DT_DIR;
		if (de->d_type == DT_UNKNOWN) {
			if (fstatat(dirfd(d), de->d_name, &st,
				    AT_SYMLINK_NOFOLLOW)) {
				ret = jail_err__set(e, errno, NULL, "stat %s",
						    path);
				break;
			}
			is_dir = S_ISDIR(st.st_mode);
		}
		if (is_dir) {
			int cfd =
				open_subdir(d, de->d_name, dev, depth, path, e);

			ret = cfd < 0 ? cfd :
					empty_dir(cfd, dev, path, depth + 1, e);
			if (ret)
				break;
		}
		if (unlinkat(dirfd(d), de->d_name, is_dir ? AT_REMOVEDIR : 0))
			ret = jail_err__set(e, errno, NULL, "remove %s", path);
		else
			path[len] = '\0';
	}
	closedir(d);
	return ret;
}

int jail_chroot__remove_tree(int dirfd, const char *name, const char *shown,
			     struct jail_err *e)
{
	char path[PATH_MAX];
	struct stat st;
	int fd, ret;

	snprintf(path, sizeof(path), "%s/%s", shown, name);
	fd = openat(dirfd, name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		ret = jail_err__set(e, errno, NULL, "open %s", path);
		if (fd >= 0)
			close(fd);
		return ret;
	}
	ret = empty_dir(fd, st.st_dev, path, 0, e);
	if (!ret && unlinkat(dirfd, name, AT_REMOVEDIR))
		ret = jail_err__set(e, errno, NULL, "remove %s/%s", shown,
				    name);
	return ret;
}

pid_t jail_chroot__user(int root_fd)
{
	struct stat root, st;
	char path[sizeof("/proc//root") + NAME_MAX];
	struct dirent *de;
	pid_t pid = 0;
	DIR *d;

	if (fstat(root_fd, &root))
		return 0;
	d = opendir("/proc");
	if (!d)
		return 0;
	while (!pid && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/root", de->d_name);
		/* Gone meanwhile, or a kernel thread: not a user. */
		if (!stat(path, &st) && st.st_dev == root.st_dev &&
		    st.st_ino == root.st_ino)
			pid = (pid_t)atoi(de->d_name);
	}
	closedir(d);
	return pid;
}

int jail_chroot__undo(struct jail_chroot *c)
{
	size_t i, n = strlen(c->path), r = strlen(c->rel);
	char shown[PATH_MAX], target[PATH_MAX];
	struct jail_err e;
	int ret = 0;

	/*
	 * Mount points of the calling process's namespace cannot be removed:
	 * undo the jail's own mounts first (errors: not mounted).
	 */
	if (c->pivoted)
		umount2("/old_root", MNT_DETACH);
	for (i = c->n_lib_mounts; c->entered && i > 0; i--) {
		snprintf(target, sizeof(target), "%s%s",
			 c->pivoted ? "" : c->path, c->lib_mounts[i - 1]);
		umount2(target, MNT_DETACH);
	}
	for (i = c->n_bound; c->entered && i > 0; i--) {
		snprintf(target, sizeof(target), "%s%s",
			 c->pivoted ? "" : c->path, c->a->ro_binds[i - 1]);
		umount2(target, MNT_DETACH);
	}
	if (c->entered && !c->pivoted)
		umount2(c->path, MNT_DETACH);
	/* A root the caller made: only what the jailer put in it goes. */
	for (i = 0; c->root_existed && c->root_fd >= 0 && i < c->n_made; i++) {
		struct stat st;

		if (fstatat(c->root_fd, c->made[i], &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (S_ISDIR(st.st_mode))
			ret = jail_chroot__remove_tree(c->root_fd, c->made[i],
						       c->path, &e);
		else if (unlinkat(c->root_fd, c->made[i], 0))
			ret = jail_err__set(&e, errno, NULL, "remove %s/%s",
					    c->path, c->made[i]);
		if (ret) {
			jail_err__print(&e);
			break;
		}
	}
	if (c->anchor_fd >= 0 && r) {
		/* How the anchor is shown: c->path less rel. */
		snprintf(shown, sizeof(shown), "%.*s",
			 n > r ? (int)(n - r - 1) : 0, c->path);
		ret = jail_chroot__remove_tree(c->anchor_fd, c->rel, shown, &e);
		if (ret)
			jail_err__print(&e);
		/* Then the now empty directories above it that we made. */
		while (!ret && strrchr(c->rel, '/')) {
			*strrchr(c->rel, '/') = '\0';
			if (unlinkat(c->anchor_fd, c->rel, AT_REMOVEDIR))
				break; /* another jail's, made meanwhile */
		}
	}
	if (c->anchor_fd >= 0)
		close(c->anchor_fd);
	if (c->root_fd >= 0)
		close(c->root_fd);
	c->anchor_fd = c->root_fd = -1;
	c->rel[0] = '\0';
	return ret;
}
