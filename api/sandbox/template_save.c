// SPDX-License-Identifier: Apache-2.0
/*
 * A template made from a running sandbox: see template__from_sandbox()
 * in template.h.
 *
 *   save:   .NAME.new as a build makes it (template__begin), the
 *           sandbox's pause.lock, `sync` in the guest, pause, snapshot
 *           (Full) into .NAME.new, the disk copied (an overlay's file as
 *           .NAME.new/disk.overlay, a raw disk into rootfs.ext4), resume,
 *           the pause.lock let go; then the overlay flattened over its
 *           base into rootfs.ext4, info, rename to NAME.
 *
 * The guest is frozen from before the snapshot until its disk is copied,
 * so a sandbox restored from NAME finds the disk as its memory left it.
 * Copying an overlay's own file (what the guest wrote: megabytes) instead
 * of flattening the whole disk while the guest waits keeps the pause
 * short; the flattening reads the copy and its base, the image of the
 * sandbox's template, whose lock is held shared until then so that the
 * base cannot be removed meanwhile.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "../../guest-init/protocol.h"
#include "agent_client.h"
#include "clock.h"
#include "ember_api.h"
#include "files.h"
#include "../../snapshot/overlay.h"
#include "sandbox.h"
#include "record.h"
#include "template.h"
#include "template_internal.h"

#define SAVE_OVERLAY_NAME "disk.overlay" /* while saving */
#define SAVE_AGENT_MS	  10000 /* the agent: connect and PING */
#define SAVE_SYNC_MS	  60000 /* the guest's sync */

/* One save: its paths (all absolute) and what it reads and writes. */
struct save {
	char tmp[PATH_MAX]; /* <templates>/.NAME.new */
	char dir[PATH_MAX]; /* <templates>/NAME */
	char state[PATH_MAX]; /* tmp/snapshot.state */
	char mem[PATH_MAX]; /* tmp/memory */
	char disk[PATH_MAX]; /* tmp/rootfs.ext4 */
	char ovl[PATH_MAX]; /* tmp/disk.overlay */
	char src_disk[PATH_MAX]; /* the sandbox's rootfs.ext4 */
	char api[PATH_MAX]; /* its ember's control socket */
	char pause_lock[PATH_MAX];
	struct sandbox_info cur; /* the sandbox, read under its pause.lock */
	struct template_info src; /* its template's */
	struct template_info t; /* the new one's */
};

static int save__paths(struct save *p, const char *root, const char *name,
		       const struct sandbox_info *sb)
{
	if (files__pathf(p->dir, sizeof(p->dir), "%s/%s", root, name) ||
	    files__pathf(p->state, sizeof(p->state), "%s/" TEMPLATE_STATE_NAME,
			 p->tmp) ||
	    files__pathf(p->mem, sizeof(p->mem), "%s/" TEMPLATE_MEM_NAME,
			 p->tmp) ||
	    files__pathf(p->disk, sizeof(p->disk), "%s/" TEMPLATE_DISK_NAME,
			 p->tmp) ||
	    files__pathf(p->ovl, sizeof(p->ovl), "%s/" SAVE_OVERLAY_NAME,
			 p->tmp) ||
	    files__pathf(p->src_disk, sizeof(p->src_disk),
			 "%s/" SANDBOX_ROOTFS_NAME, sb->dir) ||
	    files__pathf(p->api, sizeof(p->api), "%s/" SANDBOX_API_NAME,
			 sb->dir) ||
	    files__pathf(p->pause_lock, sizeof(p->pause_lock),
			 "%s/" SANDBOX_PAUSE_LOCK, sb->dir))
		return -ENAMETOOLONG;
	return 0;
}

/*
 * The sandbox @sb's pause.lock, taken (as pause.c takes it: one pause,
 * park, resume or save at a time), and its info file read under it into
 * *@cur: the lock's fd, or a negative errno with @err.
 */
static int save__lock(const struct sandbox_info *sb, const char *path,
		      struct sandbox_info *cur, char *err, size_t errlen)
{
	int fd, rc;

	fd = files__lock(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600, LOCK_EX, err,
			 errlen);
	if (fd == -ENOENT)
		return sandbox__errf(err, errlen, fd, "sandbox %s is gone",
				     sb->id);
	if (fd < 0)
		return fd;
	*cur = *sb;
	rc = sandbox__read_info(sb->dir, cur);
	if (rc) {
		close(fd);
		return sandbox__errf(err, errlen, rc, "sandbox %s: %s", sb->id,
				     rc == -ENOENT ? "gone" : strerror(-rc));
	}
	return fd;
}

/*
 * `sync` in the running sandbox @sb: what its guest wrote is on the disk,
 * not only in its page cache (the memory snapshot holds the cache too;
 * this is for the image on its own).
 */
static int save__sync(const struct sandbox_info *sb, char *err, size_t errlen)
{
	static const char *const argv[] = { "sync", NULL };
	struct agent_exec_req req = {
		.argv = argv,
		.timeout_ms = SAVE_SYNC_MS,
		.stdin_fd = -1,
		.sig_fd = -1,
	};
	struct agent_exec_result res;
	struct agent_client *c;
	int null, rc;

	null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null < 0)
		return sandbox__errf(err, errlen, -errno, "/dev/null: %s",
				     strerror(errno));
	req.stdout_fd = null;
	req.stderr_fd = null;
	rc = sandbox__agent_connect(sb, SAVE_AGENT_MS, &c, err, errlen);
	if (rc < 0)
		goto out;
	rc = agent_client__exec(c, &req, &res);
	if (rc < 0)
		sandbox__errf(err, errlen, rc, "sync in sandbox %s: %s", sb->id,
			      agent_client__error(c));
	else if (res.kind != EMBER_AGENT_EXITED || res.code != 0)
		rc = sandbox__errf(
			err, errlen, -EIO, "sync in sandbox %s failed (%s %d)",
			sb->id,
			res.kind == EMBER_AGENT_EXITED	  ? "exit status" :
			res.kind == EMBER_AGENT_SIGNALLED ? "signal" :
							    "timed out after",
			res.code);
	agent_client__free(c);
out:
	close(null);
	return rc;
}

/*
 * Copy the paused sandbox's disk @p->src_disk: an overlay's file as it is
 * into @p->ovl (*@is_ovl true; flattened later), a raw image into
 * @p->disk.  Both sparse.
 */
static int save__copy_disk(const struct save *p, bool *is_ovl, char *err,
			   size_t errlen)
{
	const char *to;
	int in, out, rc;

	in = open(p->src_disk, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0)
		return sandbox__errf(err, errlen, -errno,
				     "the sandbox's disk %s: %s%s", p->src_disk,
				     strerror(errno),
				     errno == ENOENT ? " (it has no disk of "
						       "its own)" :
						       "");
	*is_ovl = overlay__is_overlay(in);
	to = *is_ovl ? p->ovl : p->disk;
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	rc = out < 0 ? -errno : files__copy_sparse(in, out);
	if (out >= 0 && rc == 0 && fdatasync(out) < 0)
		rc = -errno;
	if (out >= 0 && close(out) < 0 && rc == 0)
		rc = -errno;
	close(in);
	if (rc < 0) {
		unlink(to);
		return sandbox__errf(err, errlen, rc, "copying %s: %s",
				     p->src_disk, strerror(-rc));
	}
	return 0;
}

/*
 * What the new template says of itself: the machine of @cur, the rest
 * from its own template @src (NULL for a booted sandbox: nothing known).
 */
static void save__info(struct template_info *t, const char *name,
		       const struct sandbox_info *cur,
		       const struct template_info *src)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->mem_mib = cur->mem_mib;
	t->vcpus = cur->vcpus;
	t->created = clock__wall_s();
	t->net = cur->net_dev == 1;
	t->spare_drives = cur->spare_drives;
	if (!src)
		return;
	snprintf(t->kernel, sizeof(t->kernel), "%s", src->kernel);
	snprintf(t->rootfs, sizeof(t->rootfs), "%s", src->rootfs);
	t->setup = src->setup;
	t->interp = src->interp;
	snprintf(t->user, sizeof(t->user), "%s", src->user);
}

int template__from_sandbox(const struct sandbox_info *sb, const char *name,
			   char *err, size_t errlen)
{
	struct save *p;
	char root[PATH_MAX], why[512];
	bool have_src = false, paused = false, is_ovl = false;
	int lock_fd = -1, src_fd = -1, pause_fd = -1, rc;

	rc = template__name_ok(name, err, errlen);
	if (rc)
		return rc;
	if (sb->jail_root[0])
		return sandbox__errf(err, errlen, -EOPNOTSUPP,
				     "sandbox %s is jailed: it cannot be "
				     "saved as a template",
				     sb->id);
	p = calloc(1, sizeof(*p));
	if (!p)
		return sandbox__errf(err, errlen, -ENOMEM, "out of memory");
	rc = template__root(root, sizeof(root), true, err, errlen);
	if (rc)
		goto out_free;
	/*
	 * Its template before its pause.lock (a removal waits on that lock
	 * and kills the sandbox, which takes no template lock): its info,
	 * and the overlay's base kept until it is flattened.
	 */
	if (sb->template_name[0] &&
	    template__open(sb->template_name, &p->src, &src_fd, why,
			   sizeof(why)) == 0)
		have_src = true;
	rc = template__begin(root, name, p->tmp, sizeof(p->tmp), &lock_fd, err,
			     errlen);
	if (rc)
		goto out_src;
	if (save__paths(p, root, name, sb)) {
		rc = sandbox__errf(err, errlen, -ENAMETOOLONG,
				   "template path too long");
		goto out;
	}
	pause_fd = save__lock(sb, p->pause_lock, &p->cur, err, errlen);
	if (pause_fd < 0) {
		rc = pause_fd;
		goto out;
	}
	if (p->cur.parked)
		rc = sandbox__errf(err, errlen, -EINVAL,
				   "sandbox %s is parked on disk: resume it "
				   "first",
				   sb->id);
	else if (p->cur.jail_root[0])
		rc = sandbox__errf(err, errlen, -EOPNOTSUPP,
				   "sandbox %s is jailed: it cannot be saved "
				   "as a template",
				   sb->id);
	else if (!p->cur.ready)
		rc = sandbox__errf(err, errlen, -EAGAIN,
				   "sandbox %s is still booting", sb->id);
	else if (p->cur.spare_swapped)
		rc = sandbox__errf(err, errlen, -EBUSY,
				   "sandbox %s has a file swapped into a "
				   "spare drive: swap it out first (its "
				   "template's sandboxes could not have it)",
				   sb->id);
	if (rc)
		goto out;
	/* A paused guest cannot sync; its page cache is in the snapshot. */
	if (!p->cur.paused) {
		rc = save__sync(&p->cur, err, errlen);
		if (rc == 0)
			rc = ember_api__pause(p->api, true, err, errlen);
		if (rc < 0)
			goto out;
		paused = true;
	}
	rc = ember_api__snapshot_create(p->api, false, p->state, p->mem, err,
					errlen);
	if (rc == 0)
		rc = save__copy_disk(p, &is_ovl, err, errlen);
	if (rc < 0)
		goto out;
	if (paused) {
		paused = false;
		rc = ember_api__pause(p->api, false, why, sizeof(why));
		if (rc < 0) {
			sandbox__errf(err, errlen, rc,
				      "resuming sandbox %s: %s", sb->id, why);
			goto out;
		}
	}
	close(pause_fd);
	pause_fd = -1;
	if (is_ovl) {
		rc = overlay__flatten(p->ovl, p->disk, why, sizeof(why));
		if (rc < 0) {
			sandbox__errf(err, errlen, rc,
				      "flattening the disk: %s", why);
			goto out;
		}
		unlink(p->ovl);
	}
	save__info(&p->t, name, &p->cur, have_src ? &p->src : NULL);
	rc = template__publish(p->tmp, p->dir, &p->t, name, err, errlen);
	if (rc < 0)
		goto out;
	close(lock_fd);
	lock_fd = -1;
	goto out_src;
out:
	if (paused && ember_api__pause(p->api, false, why, sizeof(why)) < 0 &&
	    err && errlen > strlen(err))
		snprintf(err + strlen(err), errlen - strlen(err),
			 "; and resuming sandbox %s: %s", sb->id, why);
	if (pause_fd >= 0)
		close(pause_fd);
	files__rm_tree(p->tmp);
	close(lock_fd);
out_src:
	if (src_fd >= 0)
		close(src_fd);
out_free:
	free(p);
	return rc;
}
