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
		ret = jail_err__set(
			e, errno, errno == EEXIST ? "an existing chroot" : NULL,
			"create chroot %s", c->path);
		close(id_fd);
		return ret;
	}
	if (!c->rel[0])
		c->anchor_fd = fcntl(id_fd, F_DUPFD_CLOEXEC, 3);
	append(c->rel, sizeof(c->rel), "/", "root");
	c->root_fd = openat(id_fd, "root",
			    O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(id_fd);
	if (c->anchor_fd < 0 || c->root_fd < 0)
		return jail_err__set(e, errno, NULL, "open chroot %s", c->path);
	return copy_exec(c, a, e);
}

static int bind_ro(struct jail_chroot *c, const char *dir, struct jail_err *e)
{
	char target[PATH_MAX];
	int fd;

	if (snprintf(target, sizeof(target), "%s%s", c->path, dir) >=
	    (int)sizeof(target))
		return jail_err__set(e, ENAMETOOLONG, NULL, "--ro-bind %s",
				     dir);
	fd = mkdir_p_at(c->root_fd, dir + 1, false, NULL, NULL, c->path, e);
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

int jail_chroot__enter(struct jail_chroot *c, const struct jail_args *a,
		       struct jail_err *e)
{
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
	/* pivot_root(2) wants the new root to be a mount point. */
	if (mount(c->path, c->path, NULL, MS_BIND, NULL))
		return jail_err__set(e, errno, NULL,
				     "bind-mount %s onto itself", c->path);
	for (i = 0; i < a->n_ro_binds; i++) {
		ret = bind_ro(c, a->ro_binds[i], e);
		if (ret)
			return ret;
	}
	if (chdir(c->path))
		return jail_err__set(e, errno, NULL, "chdir %s", c->path);
	if (mkdir("old_root", 0700))
		return jail_err__set(e, errno, NULL, "create %s/old_root",
				     c->path);
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

int jail_chroot__make_devices(const struct jail_chroot *c,
			      const struct jail_args *a, struct jail_err *e)
{
	int ret;

	if (mkdir("/dev", 0755) || mkdir("/dev/net", 0755))
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
	for (i = c->n_bound; c->entered && i > 0; i--) {
		snprintf(target, sizeof(target), "%s%s",
			 c->pivoted ? "" : c->path, c->a->ro_binds[i - 1]);
		umount2(target, MNT_DETACH);
	}
	if (c->entered && !c->pivoted)
		umount2(c->path, MNT_DETACH);
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
