// SPDX-License-Identifier: Apache-2.0
/*
 * The jail's cgroups, as Firecracker's jailer makes them (docs/jailer.md,
 * "Jailer Operation"): <hierarchy>/<parent>/<id>, where a hierarchy is the
 * v1 mount of each controller the --cgroup files name, or the cgroup2
 * mount (Documentation/admin-guide/cgroup-v2.rst).  Everything goes
 * through an O_PATH fd of the hierarchy's mount, so undoing works after
 * pivot_root() as well.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <mntent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "jailer.h"

#define RMDIR_TRIES 100 /* x 10 ms: a task that is exiting leaves soon */

int jail_cgroup__default_version(void)
{
	struct statfs s;

	if (!statfs("/sys/fs/cgroup", &s) && s.f_type == CGROUP2_SUPER_MAGIC)
		return 2;
	return 1;
}

/*
 * The mount point of @controller's v1 hierarchy (@version 1) or of the
 * cgroup2 hierarchy (@version 2), from /proc/mounts.  Sets *@cpuset when
 * that v1 hierarchy has the cpuset controller.  Returns 0 or -ENOENT.
 */
static int find_mount(int version, const char *controller, char *out,
		      size_t size, bool *cpuset)
{
	char buf[4096];
	struct mntent m;
	int ret = -ENOENT;
	FILE *f;

	f = setmntent("/proc/mounts", "re");
	if (!f)
		return -errno;
	while (getmntent_r(f, &m, buf, sizeof(buf))) {
		bool v1 = !strcmp(m.mnt_type, "cgroup");

		if (version == 2 ? strcmp(m.mnt_type, "cgroup2") != 0 :
				   !v1 || !hasmntopt(&m, controller))
			continue;
		snprintf(out, size, "%s", m.mnt_dir);
		*cpuset = version == 1 && hasmntopt(&m, "cpuset");
		ret = 0;
		break;
	}
	endmntent(f);
	return ret;
}

/*
 * The caller's cgroup in @controller's v1 hierarchy, or in the v2 one
 * (@controller NULL), from /proc/self/cgroup, relative to the hierarchy's
 * root ("" for the root).  Returns 0 or -ENOENT.
 */
static int own_cgroup(const char *controller, char *out, size_t size)
{
	char line[PATH_MAX + 256];
	int ret = -ENOENT;
	FILE *f;

	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return -errno;
	while (ret && fgets(line, sizeof(line), f)) {
		char *list = strchr(line, ':'), *path, *c;

		path = list ? strchr(list + 1, ':') : NULL;
		if (!path)
			continue;
		*path++ = '\0';
		list++;
		path[strcspn(path, "\n")] = '\0';
		if (!controller) {
			if (*list)
				continue;
		} else {
			for (c = strtok(list, ","); c; c = strtok(NULL, ","))
				if (!strcmp(c, controller))
					break;
			if (!c)
				continue;
		}
		snprintf(out, size, "%s", path + strspn(path, "/"));
		ret = 0;
	}
	fclose(f);
	return ret;
}

static int write_at(int dirfd, const char *path, const char *value)
{
	ssize_t n;
	int fd;

	fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, value, strlen(value));
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	if (close(fd))
		return -errno;
	return n == (ssize_t)strlen(value) ? 0 : -EIO;
}

/* @path's content (at most @size - 1 bytes, less the newline). */
static int read_at(int dirfd, const char *path, char *out, size_t size)
{
	ssize_t n;
	int fd;

	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, out, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	out[n] = '\0';
	out[strcspn(out, "\n")] = '\0';
	return 0;
}

static struct jail_cgroup_hier *add_hier(struct jail_cgroups *cg,
					 const struct jail_args *a,
					 const char *ctrl, struct jail_err *e)
{
	struct jail_cgroup_hier *h;
	char mnt[PATH_MAX];
	bool cpuset = false;
	size_t i;
	int ret;

	ret = find_mount(cg->version, ctrl, mnt, sizeof(mnt), &cpuset);
	if (ret) {
		jail_err__set(
			e, -ret,
			cg->version == 1 ? "no cgroup v1 hierarchy has "
					   "this controller" :
					   "no cgroup2 mount",
			"find the cgroup of --cgroup %s.* in /proc/mounts",
			ctrl);
		return NULL;
	}
	for (i = 0; i < cg->n; i++)
		if (!strcmp(cg->h[i].mount, mnt))
			return &cg->h[i];
	h = &cg->h[cg->n];
	memset(h, 0, sizeof(*h));
	snprintf(h->mount, sizeof(h->mount), "%s", mnt);
	h->cpuset = cpuset;
	snprintf(h->rel, sizeof(h->rel), "%s/%s", a->parent_cgroup, a->id);
	h->mount_fd = open(mnt, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (h->mount_fd < 0) {
		jail_err__set(e, errno, NULL, "open cgroup hierarchy %s", mnt);
		return NULL;
	}
	cg->n++;
	ret = own_cgroup(cg->version == 1 ? ctrl : NULL, h->orig,
			 sizeof(h->orig));
	if (ret) {
		jail_err__set(e, -ret, NULL, "find the jailer's cgroup in %s",
			      mnt);
		return NULL;
	}
	return h;
}

/* v1 cpuset: a new cgroup has no CPUs or memory nodes until given some. */
static int copy_from_parent(struct jail_cgroup_hier *h, const char *dir,
			    struct jail_err *e)
{
	static const char *const files[] = { "cpuset.cpus", "cpuset.mems" };
	char path[PATH_MAX], value[4096];
	size_t i;
	int ret;

	for (i = 0; i < 2; i++) {
		const char *slash = strrchr(dir, '/');

		snprintf(path, sizeof(path), "%.*s%s%s",
			 slash ? (int)(slash - dir) : 0, dir, slash ? "/" : "",
			 files[i]);
		ret = read_at(h->mount_fd, path, value, sizeof(value));
		if (!ret && value[0]) {
			snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
			ret = write_at(h->mount_fd, path, value);
		}
		if (ret)
			return jail_err__set(e, -ret, NULL,
					     "copy %s from the parent of %s/%s",
					     files[i], h->mount, dir);
	}
	return 0;
}

/* Make <parent>/<id> in @h; the parents may exist, <id> may not. */
static int make_dirs(struct jail_cgroup_hier *h, struct jail_err *e)
{
	char dir[sizeof(h->rel)];
	const char *p = h->rel;
	int ret;

	do {
		p += strcspn(p, "/");
		snprintf(dir, sizeof(dir), "%.*s", (int)(p - h->rel), h->rel);
		if (mkdirat(h->mount_fd, dir, 0755)) {
			if (errno != EEXIST || !*p || h->n_made)
				return jail_err__set(
					e, errno,
					errno == EEXIST ?
						"an existing cgroup (remove it "
						"with ember-jailer --cleanup)" :
						NULL,
					"create cgroup %s/%s", h->mount, dir);
			continue;
		}
		h->n_made++;
		if (h->cpuset) {
			ret = copy_from_parent(h, dir, e);
			if (ret)
				return ret;
		}
	} while (*p++);
	return 0;
}

/* v2: the controller must be on in every ancestor's subtree_control. */
static int enable_controller(struct jail_cgroup_hier *h, const char *ctrl,
			     struct jail_err *e)
{
	char path[PATH_MAX], plus[JAIL_CGROUP_FILE_MAX + 1];
	const char *p = h->rel;
	int ret;

	snprintf(plus, sizeof(plus), "+%s", ctrl);
	ret = write_at(h->mount_fd, "cgroup.subtree_control", plus);
	while (!ret && (p = strchr(p, '/'))) {
		snprintf(path, sizeof(path), "%.*s/cgroup.subtree_control",
			 (int)(p - h->rel), h->rel);
		ret = write_at(h->mount_fd, path, plus);
		p++;
	}
	if (ret)
		return jail_err__set(e, -ret, NULL,
				     "enable the %s controller for %s/%s", ctrl,
				     h->mount, h->rel);
	return 0;
}

int jail_cgroup__setup(struct jail_cgroups *cg, const struct jail_args *a,
		       struct jail_err *e)
{
	struct jail_cgroup_hier *hs[JAIL_MAX_CGROUPS];
	char path[PATH_MAX];
	size_t i;
	int ret;

	cg->version = a->cgroup_version ? a->cgroup_version :
					  jail_cgroup__default_version();
	for (i = 0; i < a->n_cgroups; i++) {
		hs[i] = add_hier(cg, a, a->cgroups[i].controller, e);
		if (!hs[i])
			return -e->errnum;
	}
	for (i = 0; i < cg->n; i++) {
		ret = make_dirs(&cg->h[i], e);
		if (ret)
			return ret;
	}
	for (i = 0; i < a->n_cgroups; i++) {
		const struct jail_cgroup_arg *c = &a->cgroups[i];

		/* cgroup.* files are the core's, not a controller's. */
		if (cg->version == 2 && strcmp(c->controller, "cgroup")) {
			ret = enable_controller(hs[i], c->controller, e);
			if (ret)
				return ret;
		}
		snprintf(path, sizeof(path), "%s/%s", hs[i]->rel, c->file);
		ret = write_at(hs[i]->mount_fd, path, c->value);
		if (ret)
			return jail_err__set(
				e, -ret, NULL, "write %s=%s in %s/%s", c->file,
				c->value, hs[i]->mount, hs[i]->rel);
	}
	return 0;
}

int jail_cgroup__join(struct jail_cgroups *cg, struct jail_err *e)
{
	char path[PATH_MAX], pid[16];
	size_t i;
	int ret;

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	for (i = 0; i < cg->n; i++) {
		struct jail_cgroup_hier *h = &cg->h[i];

		snprintf(path, sizeof(path), "%s/cgroup.procs", h->rel);
		ret = write_at(h->mount_fd, path, pid);
		if (ret)
			return jail_err__set(e, -ret, NULL, "join cgroup %s/%s",
					     h->mount, h->rel);
		h->joined = true;
	}
	return 0;
}

static int rmdir_wait(int dirfd, const char *path)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	int i;

	for (i = 0; i < RMDIR_TRIES; i++) {
		if (!unlinkat(dirfd, path, AT_REMOVEDIR))
			return 0;
		if (errno != EBUSY)
			return -errno;
		nanosleep(&ts, NULL);
	}
	return -EBUSY;
}

int jail_cgroup__undo(struct jail_cgroups *cg)
{
	char path[PATH_MAX], pid[16];
	size_t i;
	int k, ret = 0, r;

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	for (i = 0; i < cg->n; i++) {
		struct jail_cgroup_hier *h = &cg->h[i];

		if (h->joined) {
			snprintf(path, sizeof(path), "%s%scgroup.procs",
				 h->orig, h->orig[0] ? "/" : "");
			write_at(h->mount_fd, path, pid);
		}
		snprintf(path, sizeof(path), "%s", h->rel);
		for (k = 0; k < h->n_made; k++) {
			r = rmdir_wait(h->mount_fd, path);
			if (r && k == 0) {
				fprintf(stderr,
					"ember-jailer: remove cgroup %s/%s: %s "
					"(errno %d)\n",
					h->mount, path, strerror(-r), -r);
				ret = r;
			}
			if (r || !strrchr(path, '/'))
				break; /* a parent another jail uses */
			*strrchr(path, '/') = '\0';
		}
		close(h->mount_fd);
	}
	cg->n = 0;
	return ret;
}

int jail_cgroup__remove(const struct jail_args *a, int version, bool *found,
			struct jail_err *e)
{
	char buf[4096], path[PATH_MAX];
	struct mntent m;
	int ret = 0;
	FILE *f;

	f = setmntent("/proc/mounts", "re");
	if (!f)
		return jail_err__set(e, errno, NULL, "read /proc/mounts");
	while (!ret && getmntent_r(f, &m, buf, sizeof(buf))) {
		if (strcmp(m.mnt_type, version == 2 ? "cgroup2" : "cgroup"))
			continue;
		snprintf(path, sizeof(path), "%s/%s/%s", m.mnt_dir,
			 a->parent_cgroup, a->id);
		if (!rmdir(path))
			*found = true;
		else if (errno != ENOENT)
			ret = jail_err__set(
				e, errno,
				errno == EBUSY ? "it still holds processes "
						 "(is ember still running?)" :
						 NULL,
				"remove cgroup %s", path);
	}
	endmntent(f);
	return ret;
}
