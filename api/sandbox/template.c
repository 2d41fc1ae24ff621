// SPDX-License-Identifier: Apache-2.0
/*
 * The templates' store: see template.h.  Names, the info file, lookups,
 * listing, users and removal, and the steps every new template goes
 * through (template_internal.h); building one (which runs a sandbox) is
 * template_build.c, saving a running sandbox as one template_save.c.
 *
 *   build:  .NAME.new/base.ext4 (a copy of the rootfs)
 *           .NAME.new/overlay   (over it: the build sandbox's disk)
 *           boot, setup commands, sync, pause, snapshot (Full) into
 *           .NAME.new, the sandbox killed, base + overlay flattened into
 *           .NAME.new/rootfs.ext4, info, rename to NAME.
 *   run:    sandbox.c restores it (template__open() holds the lock
 *           shared until the sandbox's info names the template).
 *   rm:     the lock exclusive, no user left (or all killed), rename to
 *           .NAME.dead, removal.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"
#include "lookup.h"
#include "record.h"
#include "template.h"
#include "template_internal.h"

#define TEMPLATE_INFO_TMP "info.tmp"

int template__name_ok(const char *name, char *err, size_t errlen)
{
	size_t i;

	for (i = 0; name[i]; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') ||
		      (name[i] >= '0' && name[i] <= '9') || name[i] == '_' ||
		      name[i] == '-'))
			break;
	if (i == 0 || name[i] || i > SANDBOX_TEMPLATE_MAX)
		return sandbox__errf(err, errlen, -EINVAL,
				     "not a template name: '%.80s' (1 to %d "
				     "of a-z, 0-9, _ and -)",
				     name, SANDBOX_TEMPLATE_MAX);
	return 0;
}

/*
 * <state>/templates into @out; with @create, created when missing (else a
 * missing one is no error: there is no template).
 */
int template__root(char *out, size_t outsz, bool create, char *err,
		   size_t errlen)
{
	char state[PATH_MAX];
	int rc;

	rc = sandbox__state_dir(state, sizeof(state), err, errlen);
	if (rc)
		return rc;
	if (files__pathf(out, outsz, "%s/" TEMPLATE_DIR_NAME, state))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "state directory path too long");
	if (create && mkdir(out, 0700) < 0 && errno != EEXIST)
		return sandbox__errf(err, errlen, -errno, "%s: %s", out,
				     strerror(errno));
	return 0;
}

/* ---- info ---------------------------------------------------------------- */

int template__write_info(const char *dir, const struct template_info *t)
{
	char tmp[PATH_MAX], path[PATH_MAX], buf[3 * PATH_MAX];
	int n;

	if (files__pathf(tmp, sizeof(tmp), "%s/" TEMPLATE_INFO_TMP, dir) ||
	    files__pathf(path, sizeof(path), "%s/" TEMPLATE_INFO_NAME, dir))
		return -ENAMETOOLONG;
	if (strchr(t->kernel, '\n') || strchr(t->rootfs, '\n') ||
	    strchr(t->user, '\n'))
		return -EINVAL;
	n = snprintf(buf, sizeof(buf),
		     "mem=%u\nvcpus=%u\ncreated=%" PRId64 "\nkernel=%s\n"
		     "rootfs=%s\nsetup=%u\ninterp=%u\nnet=%u\n%s%s%s"
		     "spare_drives=%u\n",
		     t->mem_mib, t->vcpus, t->created, t->kernel, t->rootfs,
		     t->setup, t->interp, t->net, t->user[0] ? "user=" : "",
		     t->user, t->user[0] ? "\n" : "", t->spare_drives);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return -ENAMETOOLONG;
	return files__replace(path, tmp, buf, (size_t)n, 0400, 0);
}

/* Allocated bytes of the files in @dir. */
static uint64_t template__du(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *e;
	struct stat st;
	uint64_t sum = 0;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' &&
		    files__pathf(path, sizeof(path), "%s/%s", dir, e->d_name) ==
			    0 &&
		    lstat(path, &st) == 0 && S_ISREG(st.st_mode))
			sum += (uint64_t)st.st_blocks * 512;
	closedir(d);
	return sum;
}

/*
 * Fill @t from the template directory @dir named @name: -EINVAL when its
 * info file is missing or lacks mem or vcpus, or a file is missing.
 */
static int template__read(const char *dir, const char *name,
			  struct template_info *t)
{
	static const char *const need[] = { TEMPLATE_DISK_NAME,
					    TEMPLATE_STATE_NAME,
					    TEMPLATE_MEM_NAME };
	char path[PATH_MAX], buf[3 * PATH_MAX + 1], *text, *key, *val,
		*save = NULL;
	ssize_t n;

	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	if (files__pathf(t->dir, sizeof(t->dir), "%s", dir) ||
	    files__pathf(path, sizeof(path), "%s/" TEMPLATE_INFO_NAME, dir))
		return -ENAMETOOLONG;
	n = files__read_text(path, buf, sizeof(buf));
	if (n < 0)
		return n == -ENOENT ? -EINVAL : (int)n;
	for (text = buf; files__next_kv(text, &save, &key, &val); text = NULL) {
		char *end;
		long long v;

		if (!strcmp(key, "kernel")) {
			snprintf(t->kernel, sizeof(t->kernel), "%s", val);
			continue;
		}
		if (!strcmp(key, "rootfs")) {
			snprintf(t->rootfs, sizeof(t->rootfs), "%s", val);
			continue;
		}
		if (!strcmp(key, "user")) {
			snprintf(t->user, sizeof(t->user), "%s", val);
			continue;
		}
		errno = 0;
		v = strtoll(val, &end, 10);
		if (errno || *end || end == val || v < 0 || v > UINT32_MAX)
			continue;
		if (!strcmp(key, "mem"))
			t->mem_mib = (unsigned int)v;
		else if (!strcmp(key, "vcpus"))
			t->vcpus = (unsigned int)v;
		else if (!strcmp(key, "created"))
			t->created = v;
		else if (!strcmp(key, "setup"))
			t->setup = (unsigned int)v;
		else if (!strcmp(key, "interp"))
			t->interp = v == 1;
		else if (!strcmp(key, "net"))
			t->net = v == 1;
		else if (!strcmp(key, "spare_drives"))
			t->spare_drives = (unsigned int)v;
	}
	if (!t->mem_mib || !t->vcpus ||
	    t->spare_drives > SANDBOX_MAX_SPARE_DRIVES)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (files__pathf(path, sizeof(path), "%s/%s", dir, need[i]) ||
		    access(path, R_OK) < 0)
			return -EINVAL;
	t->disk_bytes = template__du(dir);
	return 0;
}

/*
 * The templates' root into @root and the directory of the template @name
 * (checked) into @dir, PATH_MAX bytes each: 0, or a negative errno with
 * @err.
 */
static int template__dir(const char *name, char *root, char *dir, char *err,
			 size_t errlen)
{
	int rc = template__name_ok(name, err, errlen);

	if (rc == 0)
		rc = template__root(root, PATH_MAX, false, err, errlen);
	if (rc)
		return rc;
	if (files__pathf(dir, PATH_MAX, "%s/%s", root, name))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "template path too long");
	return 0;
}

int template__open(const char *name, struct template_info *t, int *lock_fd,
		   char *err, size_t errlen)
{
	char root[PATH_MAX], dir[PATH_MAX], path[PATH_MAX];
	int fd = -1, rc;

	if (lock_fd)
		*lock_fd = -1;
	rc = template__dir(name, root, dir, err, errlen);
	if (rc)
		return rc;
	if (files__pathf(path, sizeof(path), "%s/" TEMPLATE_LOCK_NAME, dir))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "template path too long");
	if (lock_fd) {
		fd = files__lock(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0,
				 LOCK_SH, err, errlen);
		if (fd == -ENOENT)
			return sandbox__errf(err, errlen, -ENOENT,
					     "no template %s", name);
		if (fd < 0)
			return fd;
	}
	/* Under the lock: a removal is over, or has not begun. */
	rc = template__read(dir, name, t);
	if (rc == 0 || access(dir, F_OK) == 0) {
		if (rc == 0) {
			if (lock_fd)
				*lock_fd = fd;
			return 0;
		}
		if (fd >= 0)
			close(fd);
		return sandbox__errf(err, errlen, rc,
				     "template %s (%s) is incomplete: %s", name,
				     dir, strerror(-rc));
	}
	if (fd >= 0)
		close(fd);
	return sandbox__errf(err, errlen, -ENOENT, "no template %s", name);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct template_info *)a)->name,
		      ((const struct template_info *)b)->name);
}

/* A hidden .NAME.new or .NAME.dead in @root nobody works on: remove it. */
static void template__reap_hidden(const char *root, const char *entry)
{
	char dir[PATH_MAX], lock[PATH_MAX];
	size_t n = strlen(entry);
	int fd;

	if (entry[0] != '.' || (!(n > 5 && !strcmp(entry + n - 5, ".dead")) &&
				!(n > 4 && !strcmp(entry + n - 4, ".new"))))
		return;
	if (files__pathf(dir, sizeof(dir), "%s/%s", root, entry) ||
	    files__pathf(lock, sizeof(lock), "%s/" TEMPLATE_LOCK_NAME, dir))
		return;
	fd = open(lock, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return; /* being built or removed */
	}
	files__rm_tree(dir);
	if (fd >= 0)
		close(fd);
}

/* files__read_dir(): the template @name of @root into @item. */
static bool list_one(void *root, const char *name, void *item)
{
	char dir[PATH_MAX];

	if (name[0] == '.') {
		template__reap_hidden(root, name);
		return false;
	}
	return !template__name_ok(name, NULL, 0) &&
	       !files__pathf(dir, sizeof(dir), "%s/%s", (char *)root, name) &&
	       !template__read(dir, name, item);
}

int template__list(struct template_info **out, size_t *n, char *err,
		   size_t errlen)
{
	char root[PATH_MAX];
	int rc;

	*out = NULL;
	*n = 0;
	rc = template__root(root, sizeof(root), false, err, errlen);
	if (rc)
		return rc;
	rc = files__read_dir(root, sizeof(**out), list_one, root, (void **)out,
			     n, err, errlen);
	if (rc)
		return rc == -ENOENT ? 0 : rc;
	if (*n)
		qsort(*out, *n, sizeof(**out), by_name);
	return 0;
}

int template__users(const char *name, size_t *n, char *ids, size_t idslen,
		    char *err, size_t errlen)
{
	struct sandbox_info *v;
	size_t k, len = 0;
	int rc;

	*n = 0;
	if (idslen)
		ids[0] = '\0';
	rc = sandbox__list(&v, &k, err, errlen);
	if (rc)
		return rc;
	for (size_t i = 0; i < k; i++) {
		if (strcmp(v[i].template_name, name))
			continue;
		(*n)++;
		if (len + SANDBOX_ID_LEN + 2 < idslen) {
			snprintf(ids + len, idslen - len, "%s%s",
				 len ? " " : "", v[i].id);
			len += strlen(ids + len);
		}
	}
	free(v);
	return 0;
}

int template__remove(const char *name, bool force, char *err, size_t errlen)
{
	char root[PATH_MAX], dir[PATH_MAX], dead[PATH_MAX], lock[PATH_MAX];
	char ids[256];
	size_t n;
	int fd, rc;

	rc = template__dir(name, root, dir, err, errlen);
	if (rc)
		return rc;
	if (files__pathf(dead, sizeof(dead), "%s/.%s.dead", root, name) ||
	    files__pathf(lock, sizeof(lock), "%s/" TEMPLATE_LOCK_NAME, dir))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "template path too long");
	fd = open(lock, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT && access(dir, F_OK) < 0)
		return sandbox__errf(err, errlen, -ENOENT, "no template %s",
				     name);
	/* No new sandbox from it from here on (a lock-less dir: junk). */
	if (fd >= 0 && flock(fd, LOCK_EX) < 0) {
		rc = -errno;
		close(fd);
		return sandbox__errf(err, errlen, rc, "%s: %s", lock,
				     strerror(-rc));
	}
	rc = template__users(name, &n, ids, sizeof(ids), err, errlen);
	if (rc)
		goto out;
	if (n && !force) {
		/* Each id shown takes 13 bytes with its space. */
		bool all = (strlen(ids) + 1) / (SANDBOX_ID_LEN + 1) == n;

		rc = sandbox__errf(err, errlen, -EBUSY,
				   "template %s is in use by %zu sandbox%s "
				   "(%s%s): kill %s first, or use --force",
				   name, n, n == 1 ? "" : "es", ids,
				   all ? "" : " ...", n == 1 ? "it" : "them");
		goto out;
	}
	while (n) {
		struct sandbox_info sb;
		char *sp;

		/* The ids come a handful at a time: list again until none. */
		for (char *id = ids; *id; id = sp ? sp + 1 : id + strlen(id)) {
			sp = strchr(id, ' ');
			if (sp)
				*sp = '\0';
			if (sandbox__find(id, &sb, err, errlen) == 0 &&
			    sandbox__kill(&sb, err, errlen) < 0) {
				rc = -EBUSY;
				goto out;
			}
			if (!sp)
				break;
		}
		rc = template__users(name, &n, ids, sizeof(ids), err, errlen);
		if (rc)
			goto out;
	}
	if (rename(dir, dead) < 0) {
		rc = sandbox__errf(err, errlen, -errno, "%s: %s", dir,
				   strerror(errno));
		goto out;
	}
	rc = files__rm_tree(dead);
	if (rc)
		sandbox__errf(err, errlen, rc, "removing %s: %s", dead,
			      strerror(-rc));
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

/*
 * The lock of the template directory @dir, flock()ed exclusive (waiting
 * for the sandboxes being made from it): the fd, or a negative errno
 * (-ENOENT: no lock file).
 */
static int template__lock_ex(const char *dir)
{
	char lock[PATH_MAX];
	int fd, rc;

	if (files__pathf(lock, sizeof(lock), "%s/" TEMPLATE_LOCK_NAME, dir))
		return -ENAMETOOLONG;
	fd = open(lock, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

/* 0 when no sandbox (live or parked) was made from @name, else -EBUSY. */
static int template__unused(const char *name, char *err, size_t errlen)
{
	char ids[256];
	size_t n;
	int rc = template__users(name, &n, ids, sizeof(ids), err, errlen);

	if (rc == 0 && n)
		rc = sandbox__errf(err, errlen, -EBUSY,
				   "template %s is in use by %zu sandbox%s "
				   "(%s): kill %s first",
				   name, n, n == 1 ? "" : "es", ids,
				   n == 1 ? "it" : "them");
	return rc;
}

int template__replace(const char *from, const char *name, char *err,
		      size_t errlen)
{
	char root[PATH_MAX], src[PATH_MAX], dir[PATH_MAX], hidden[PATH_MAX],
		dead[PATH_MAX];
	bool old;
	int from_fd = -1, old_fd = -1, rc;

	rc = template__dir(from, root, src, err, errlen);
	if (rc == 0)
		rc = template__dir(name, root, dir, err, errlen);
	if (rc)
		return rc;
	if (!strcmp(from, name))
		return sandbox__errf(err, errlen, -EINVAL,
				     "template %s cannot replace itself", name);
	if (files__pathf(hidden, sizeof(hidden), "%s/.%s.new", root, from) ||
	    files__pathf(dead, sizeof(dead), "%s/.%s.dead", root, name))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "template path too long");
	from_fd = template__lock_ex(src);
	if (from_fd < 0)
		return sandbox__errf(err, errlen, from_fd,
				     from_fd == -ENOENT ? "no template %s" :
							  "template %s: %s",
				     from, strerror(-from_fd));
	/* From here on no sandbox is being made from either. */
	old_fd = template__lock_ex(dir);
	old = old_fd >= 0 || access(dir, F_OK) == 0;
	if (old_fd < 0 && old_fd != -ENOENT) {
		rc = sandbox__errf(err, errlen, old_fd, "template %s: %s", name,
				   strerror(-old_fd));
		goto out;
	}
	rc = template__unused(from, err, errlen);
	if (rc == 0 && old)
		rc = template__unused(name, err, errlen);
	if (rc)
		goto out;
	/*
	 * Hidden while it moves: listings skip .NAME.new, and the lock we
	 * hold keeps a reaper off it (and off the old one, once there).
	 */
	if (rename(src, hidden)) {
		rc = sandbox__errf(err, errlen, -errno, "%s: %s", src,
				   strerror(errno));
		goto out;
	}
	if (!old) {
		/* Without RENAME_NOREPLACE, rename() (a race to lose). */
		if (renameat2(AT_FDCWD, hidden, AT_FDCWD, dir,
			      RENAME_NOREPLACE) == 0 ||
		    (errno == EINVAL && rename(hidden, dir) == 0))
			rc = 0;
		else
			rc = -errno;
	} else if (renameat2(AT_FDCWD, hidden, AT_FDCWD, dir,
			     RENAME_EXCHANGE) == 0) {
		rc = 0; /* the old one is at @hidden now */
	} else if (errno == EINVAL || errno == ENOSYS) {
		/* No exchange on this file system: the old one aside first. */
		template__reap_hidden(root, strrchr(dead, '/') + 1);
		rc = rename(dir, dead) ? -errno : 0;
		if (rc == 0 && rename(hidden, dir)) {
			rc = -errno;
			rename(dead, dir);
		}
		if (rc == 0)
			files__rm_tree(dead);
		old = false;
	} else {
		rc = -errno;
	}
	if (rc) {
		rename(hidden, src); /* @from as it was, the caller's */
		sandbox__errf(err, errlen, rc, "template %s in place of %s: %s",
			      from, name, strerror(-rc));
		goto out;
	}
	if (old)
		files__rm_tree(hidden);
out:
	if (old_fd >= 0)
		close(old_fd);
	close(from_fd);
	return rc;
}

int template__seal(const char *dir, const char *name)
{
	char path[PATH_MAX];

	if (files__pathf(path, sizeof(path), "%s/%s", dir, name))
		return -ENAMETOOLONG;
	return chmod(path, 0400) < 0 ? -errno : 0;
}

/*
 * The new template's directory @tmp (.NAME.new), locked for the build in
 * *@lock_fd: a build that died before leaves its directory with a free
 * lock, removed here.
 */
int template__publish(const char *tmp, const char *dir,
		      const struct template_info *t, const char *name,
		      char *err, size_t errlen)
{
	int rc;

	rc = template__seal(tmp, TEMPLATE_DISK_NAME);
	if (rc == 0)
		rc = template__seal(tmp, TEMPLATE_STATE_NAME);
	if (rc == 0)
		rc = template__seal(tmp, TEMPLATE_MEM_NAME);
	if (rc == 0)
		rc = template__write_info(tmp, t);
	if (rc == 0 && rename(tmp, dir) < 0)
		rc = errno == ENOTEMPTY || errno == EEXIST ? -EEXIST : -errno;
	if (rc < 0)
		return sandbox__errf(err, errlen, rc, "template %s: %s", name,
				     rc == -EEXIST ?
					     "made meanwhile by another build" :
					     strerror(-rc));
	return 0;
}

int template__begin(const char *root, const char *name, char *tmp, size_t tmpsz,
		    int *lock_fd, char *err, size_t errlen)
{
	char dir[PATH_MAX], lock[PATH_MAX];
	int tries;

	if (files__pathf(dir, sizeof(dir), "%s/%s", root, name) ||
	    files__pathf(tmp, tmpsz, "%s/.%s.new", root, name) ||
	    files__pathf(lock, sizeof(lock), "%s/" TEMPLATE_LOCK_NAME, tmp))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "template path too long");
	for (tries = 0; tries < 2; tries++) {
		if (access(dir, F_OK) == 0)
			return sandbox__errf(err, errlen, -EEXIST,
					     "template %s exists (emberctl "
					     "template rm %s)",
					     name, name);
		if (mkdir(tmp, 0700) == 0)
			break;
		if (errno != EEXIST)
			return sandbox__errf(err, errlen, -errno, "%s: %s", tmp,
					     strerror(errno));
		template__reap_hidden(root, strrchr(tmp, '/') + 1);
	}
	if (tries == 2)
		return sandbox__errf(err, errlen, -EEXIST,
				     "template %s is being built", name);
	*lock_fd = open(lock, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (*lock_fd < 0 || flock(*lock_fd, LOCK_EX | LOCK_NB) < 0) {
		int rc = -errno;

		if (*lock_fd >= 0)
			close(*lock_fd);
		*lock_fd = -1;
		files__rm_tree(tmp);
		return sandbox__errf(err, errlen, rc, "%s: %s", lock,
				     strerror(-rc));
	}
	return 0;
}

/* " NAME X.Y s" for @ms > 0, after a ", " unless @first. */
static size_t times__one(char *out, size_t outsz, const char *name,
			 unsigned int ms, bool *first)
{
	int n;

	if (!ms || !outsz)
		return 0;
	n = snprintf(out, outsz, "%s%s %u.%u s", *first ? "" : ", ", name,
		     ms / 1000, ms % 1000 / 100);
	*first = false;
	return n < 0 ? 0 : (size_t)n < outsz ? (size_t)n : outsz - 1;
}

void template_times__format(const struct template_times *t, char *out,
			    size_t outsz)
{
	static const char *const names[TEMPLATE_T_N] = {
		[TEMPLATE_T_BASE] = "base",
		[TEMPLATE_T_BOOT] = "boot",
		[TEMPLATE_T_STEPS] = "steps",
		[TEMPLATE_T_SETUP] = "setup",
		[TEMPLATE_T_READY] = "ready",
		[TEMPLATE_T_INTERP] = "interp",
		[TEMPLATE_T_SNAPSHOT] = "snapshot",
		[TEMPLATE_T_DISK] = "disk",
	};
	const struct image_times *i = &t->image;
	bool first = true, ifirst = true;
	size_t off = 0;

	if (!outsz)
		return;
	out[0] = '\0';
	for (int s = 0; s < TEMPLATE_T_N; s++) {
		off += times__one(out + off, outsz - off, names[s], t->ms[s],
				  &first);
		if (s != TEMPLATE_T_BASE ||
		    !(i->read_ms + i->check_ms + i->unpack_ms + i->disk_ms +
		      i->guest_ms))
			continue;
		off += (size_t)snprintf(out + off, outsz - off, " (");
		if (off >= outsz)
			off = outsz - 1;
		off += times__one(out + off, outsz - off, "read", i->read_ms,
				  &ifirst);
		off += times__one(out + off, outsz - off, "check", i->check_ms,
				  &ifirst);
		off += times__one(out + off, outsz - off, "unpack",
				  i->unpack_ms, &ifirst);
		off += times__one(out + off, outsz - off, "disk", i->disk_ms,
				  &ifirst);
		off += times__one(out + off, outsz - off, "guest parts",
				  i->guest_ms, &ifirst);
		off += (size_t)snprintf(out + off, outsz - off, ")");
		if (off >= outsz)
			off = outsz - 1;
	}
}
