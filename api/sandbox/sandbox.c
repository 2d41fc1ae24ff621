// SPDX-License-Identifier: Apache-2.0
/*
 * Sandbox creation: `run` and the resume of a parked sandbox (see
 * sandbox.h); lookups, listings and `kill` are in lookup.c.
 *
 *   emberctl run --fork--> supervisor (setsid) --fork/exec--> ember
 *
 * `run` prepares the directory (hidden as .<id>.new until complete, then
 * renamed), forks the supervisor (supervisor.c) and waits on a pipe for
 * its verdict: "R" once the agent answered a PING, or "F<errno> <text>"
 * after it has already removed everything.  A supervisor that died
 * leaves its directory with a free lock: the next lookup or listing
 * finds it and removes it, and any ember left.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../vmm/config.h"
#include "clock.h"
#include "files.h"
#include "jail.h"
#include "lookup.h"
#include "net.h"
#include "proc.h"
#include "sandbox.h"
#include "record.h"
#include "spare.h"
#include "supervisor.h"
#include "template.h"
#include "../../snapshot/overlay.h"

/* ---- run ---------------------------------------------------------------- */

static int new_id(char id[SANDBOX_ID_LEN + 1])
{
	unsigned char b[SANDBOX_ID_LEN / 2];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return -errno;
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(id + 2 * i, 3, "%02x", b[i]);
	return 0;
}

/*
 * Wait for the supervisor's verdict on @fd: 0 ready, or the failure with
 * its text in @err.  A stop signal to us is passed on to the supervisor.
 */
static int wait_verdict(pid_t sup, int fd, const struct sandbox_opts *o,
			char *err, size_t errlen)
{
	int64_t end =
		clock__mono_ms() + ((int64_t)o->boot_timeout_s + 60) * 1000;
	char buf[SUPERVISOR_VERDICT_MAX + 1];
	size_t have = 0;
	sigset_t set;
	int sfd, passed = 0;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	for (;;) {
		struct pollfd pfd[2] = { { .fd = fd, .events = POLLIN },
					 { .fd = sfd, .events = POLLIN } };
		int64_t left = end - clock__mono_ms();
		ssize_t n;

		if (left <= 0) {
			kill(sup, SIGKILL);
			if (sfd >= 0)
				close(sfd);
			return sandbox__errf(err, errlen, -ETIMEDOUT,
					     "the supervisor did not report");
		}
		if (poll(pfd, sfd >= 0 ? 2 : 1,
			 left > 60000 ? 60000 : (int)left) < 0 &&
		    errno != EINTR)
			break;
		if (sfd >= 0 && pfd[1].revents) {
			struct signalfd_siginfo si;

			while (read(sfd, &si, sizeof(si)) > 0)
				;
			if (!passed++) {
				kill(sup, SIGTERM);
				end = clock__mono_ms() + SANDBOX_KILL_WAIT_MS;
			}
		}
		if (!pfd[0].revents)
			continue;
		n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || (have += (size_t)n) == sizeof(buf) - 1)
			break;
	}
	if (sfd >= 0)
		close(sfd);
	buf[have] = '\0';
	if (have == 1 && buf[0] == 'R')
		return 0;
	if (have > 1 && buf[0] == 'F') {
		char *sp;
		long e = strtol(buf + 1, &sp, 10);

		if (*sp == ' ')
			sp++;
		return sandbox__errf(err, errlen,
				     e > 0 && e < 4096 ? -(int)e : -EIO, "%s",
				     sp);
	}
	return sandbox__errf(err, errlen, -EIO, "the supervisor died");
}

/*
 * Fork the supervisor of @info (its directory complete, @lock_fd held)
 * and wait for its verdict: 0 once the agent answered (the supervisor
 * holds the lock on; @lock_fd is closed here either way), or the failure
 * with its text in @err after the supervisor ended.
 */
static int start_supervisor(const struct sandbox_opts *o, const char *state,
			    const struct sandbox_info *info,
			    const struct supervisor_how *how, int lock_fd,
			    char *err, size_t errlen)
{
	int pfd[2], rc, st;
	pid_t sup;

	if (pipe2(pfd, O_CLOEXEC) < 0) {
		rc = sandbox__errf(err, errlen, -errno, "pipe: %s",
				   strerror(errno));
		close(lock_fd);
		return rc;
	}
	fflush(NULL);
	sup = fork();
	if (sup < 0) {
		rc = sandbox__errf(err, errlen, -errno, "fork: %s",
				   strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		close(lock_fd);
		return rc;
	}
	if (sup == 0) {
		close(pfd[0]);
		supervisor__run(o, state, info, how, lock_fd, pfd[1]);
	}
	close(pfd[1]);
	rc = wait_verdict(sup, pfd[0], o, err, errlen);
	close(pfd[0]);
	if (rc < 0)
		while (waitpid(sup, &st, 0) < 0 && errno == EINTR)
			;
	/* The supervisor holds the lock on; it is no child to wait for. */
	close(lock_fd);
	return rc;
}

/*
 * The disk of the new sandbox directory @tmp: a sparse copy of @o's
 * rootfs, or an overlay over @base; nothing when @o names a disk.
 */
static int make_disk(const struct sandbox_opts *o, const char *tmp,
		     const char *base, char *err, size_t errlen)
{
	char path[PATH_MAX], why[256];
	int in, out, rc;

	if (o->disk && !base)
		return 0;
	if (files__pathf(path, sizeof(path), "%s/" SANDBOX_ROOTFS_NAME, tmp))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "sandbox path too long");
	if (base) {
		rc = overlay__create(path, base, why, sizeof(why));
		if (rc < 0)
			return sandbox__errf(err, errlen, rc,
					     "an overlay over %s: %s", base,
					     why);
		return 0;
	}
	in = open(o->rootfs, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return sandbox__errf(err, errlen, -errno, "rootfs %s: %s",
				     o->rootfs, strerror(errno));
	out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	rc = out < 0 ? -errno : files__copy_sparse(in, out);
	if (out >= 0 && close(out) < 0 && rc == 0)
		rc = -errno;
	close(in);
	if (rc < 0)
		return sandbox__errf(err, errlen, rc, "copying %s: %s",
				     o->rootfs, strerror(-rc));
	return 0;
}

int sandbox__run(const struct sandbox_opts *o, char id[SANDBOX_ID_LEN + 1],
		 char *err, size_t errlen)
{
	char state[PATH_MAX], tmp[PATH_MAX], path[PATH_MAX], num[24], why[160];
	char disk[PATH_MAX], snap_state[PATH_MAX], snap_mem[PATH_MAX];
	char base[PATH_MAX];
	struct supervisor_how how = { .disk = disk };
	struct sandbox_info info;
	struct template_info t;
	unsigned int vcpus;
	uint64_t mib;
	int lock_fd = -1, tlock = -1, rc, tries;
	unsigned int spares;
	bool net_dev;

	if (!o->boot_timeout_s)
		return sandbox__errf(err, errlen, -EINVAL,
				     "bad sandbox options: no boot timeout");
	if (o->spare_drives > SANDBOX_MAX_SPARE_DRIVES)
		return sandbox__errf(err, errlen, -EINVAL,
				     "%u spare drives: at most %d",
				     o->spare_drives, SANDBOX_MAX_SPARE_DRIVES);
	if (o->template_name) {
		rc = template__open(o->template_name, &t, &tlock, err, errlen);
		if (rc)
			return rc;
		if (files__pathf(base, sizeof(base), "%s/" TEMPLATE_DISK_NAME,
				 t.dir) ||
		    files__pathf(snap_state, sizeof(snap_state),
				 "%s/" TEMPLATE_STATE_NAME, t.dir) ||
		    files__pathf(snap_mem, sizeof(snap_mem),
				 "%s/" TEMPLATE_MEM_NAME, t.dir)) {
			rc = sandbox__errf(err, errlen, -ENAMETOOLONG,
					   "template path too long");
			goto out_tlock;
		}
		how.snap_state = snap_state;
		how.snap_mem = snap_mem;
		how.template_dir = t.dir;
	} else {
		snprintf(num, sizeof(num), "%u", o->mem_mib);
		rc = config__parse_mem(num, &mib, why, sizeof(why));
		if (rc)
			return sandbox__errf(err, errlen, rc,
					     "memory %s MiB: %s", num, why);
		snprintf(num, sizeof(num), "%u", o->vcpus);
		rc = config__parse_vcpus(num, &vcpus, why, sizeof(why));
		if (rc)
			return sandbox__errf(err, errlen, rc, "%s vCPUs: %s",
					     num, why);
	}
	spares = o->template_name ? t.spare_drives : o->spare_drives;
	if (o->template_name && o->spare_drives &&
	    o->spare_drives != t.spare_drives) {
		rc = sandbox__errf(err, errlen, -EINVAL,
				   "template %s has %u spare drives, not %u "
				   "(its restores have its own: template "
				   "build --spare-drives)",
				   t.name, t.spare_drives, o->spare_drives);
		goto out_tlock;
	}
	if (o->jailer && o->template_name && spares) {
		rc = sandbox__errf(err, errlen, -EOPNOTSUPP,
				   "a jailed sandbox cannot have spare drives "
				   "(template %s has %u)",
				   o->template_name, spares);
		goto out_tlock;
	}
	if ((unsigned int)o->net_mode > NET_NAT) {
		rc = sandbox__errf(err, errlen, -EINVAL,
				   "bad sandbox options: network mode %u",
				   (unsigned int)o->net_mode);
		goto out_tlock;
	}
	if (o->template_name && !t.net && o->net_mode != NET_NONE) {
		rc = sandbox__errf(err, errlen, -EINVAL,
				   "template %s has no network device (built "
				   "with --no-net): no network (%s) for its "
				   "sandboxes",
				   t.name, net__mode_name(o->net_mode));
		goto out_tlock;
	}
	net_dev = o->template_name ? t.net :
				     o->net_dev || o->net_mode != NET_NONE;
	if (net_dev && geteuid() != 0) {
		rc = sandbox__errf(err, errlen, -EPERM,
				   "a sandbox with a network device needs "
				   "root (its own network namespace and tap)%s",
				   o->template_name ?
					   ": the template has one (a "
					   "template built with --no-net has "
					   "none)" :
					   "");
		goto out_tlock;
	}
	if (o->jailer && (!o->template_name || !o->jail_uid || !o->jail_gid)) {
		rc = sandbox__errf(
			err, errlen, -EINVAL, "%s",
			o->template_name ?
				"a jail's uid and gid must not be 0 "
				"(root)" :
				"only a restore from a template can "
				"be jailed (--jail needs --template)");
		goto out_tlock;
	}
	if (o->jailer && o->ttl_park) {
		rc = sandbox__errf(err, errlen, -EOPNOTSUPP,
				   "a jailed sandbox cannot be parked on disk "
				   "at its TTL's end (--on-timeout pause)");
		goto out_tlock;
	}
	if (o->jailer && geteuid() != 0) {
		rc = sandbox__errf(err, errlen, -EPERM,
				   "a jailed sandbox needs root (ember-jailer "
				   "makes its chroot, cgroup and namespaces)");
		goto out_tlock;
	}
	rc = sandbox__state_dir(state, sizeof(state), err, errlen);
	if (rc)
		goto out_tlock;
	if (o->jailer) {
		rc = jail__share_template(t.dir, err, errlen);
		if (rc)
			goto out_tlock;
	}
	for (tries = 0;; tries++) {
		rc = new_id(id);
		if (rc == 0)
			rc = files__pathf(tmp, sizeof(tmp), "%s/.%s.new", state,
					  id);
		if (rc == 0 && mkdir(tmp, 0700) == 0)
			break;
		if (rc == 0)
			rc = -errno;
		if (rc != -EEXIST || tries == 8) {
			sandbox__errf(err, errlen, rc,
				      "creating a sandbox in %s: %s", state,
				      strerror(-rc));
			goto out_tlock;
		}
	}
	rc = sandbox__info_init(&info, state, id);
	info.mem_mib = o->template_name ? t.mem_mib : o->mem_mib;
	info.vcpus = o->template_name ? t.vcpus : o->vcpus;
	if (o->template_name)
		snprintf(info.template_name, sizeof(info.template_name), "%s",
			 t.name);
	info.net_dev = net_dev;
	info.net_mode = o->net_mode;
	info.spare_drives = spares;
	if (rc == 0 && o->jailer) {
		struct sockaddr_un sa;

		rc = jail__root(state, o->ember, id, info.jail_root,
				sizeof(info.jail_root));
		if (rc == 0)
			rc = files__pathf(info.jailer, sizeof(info.jailer),
					  "%s", o->jailer);
		if (rc == 0)
			rc = files__pathf(info.uds, sizeof(info.uds),
					  "%s/" SANDBOX_UDS_NAME,
					  info.jail_root);
		if (rc == 0 && strlen(info.uds) + SANDBOX_PORT_SUFFIX_MAX >=
				       sizeof(sa.sun_path))
			rc = -ENAMETOOLONG;
		info.jail_uid = (unsigned int)o->jail_uid;
		info.jail_gid = (unsigned int)o->jail_gid;
		if (rc < 0) {
			sandbox__errf(err, errlen, rc,
				      "the jail of %s in %s: %s (a shorter "
				      "EMBER_STATE_DIR helps)",
				      id, state, strerror(-rc));
			goto out_tmp;
		}
	}
	if (rc == 0)
		rc = files__pathf(path, sizeof(path), "%s/" SANDBOX_LOCK_NAME,
				  tmp);
	if (rc == 0) {
		lock_fd =
			open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (lock_fd < 0 || flock(lock_fd, LOCK_EX | LOCK_NB) < 0)
			rc = -errno;
	}
	if (rc < 0) {
		sandbox__errf(err, errlen, rc, "creating %s: %s", tmp,
			      strerror(-rc));
		goto out_tmp;
	}
	rc = make_disk(o, tmp, tlock >= 0 ? base : NULL, err, errlen);
	if (rc == 0)
		rc = sandbox__make_spares(tmp, spares, err, errlen);
	if (rc < 0)
		goto out_tmp;
	if (o->template_name || !o->disk)
		rc = files__pathf(disk, sizeof(disk), "%s/" SANDBOX_ROOTFS_NAME,
				  info.dir);
	else
		rc = files__pathf(disk, sizeof(disk), "%s", o->disk);
	info.created = clock__wall_s();
	info.ttl_s = o->ttl_s;
	info.ttl_len = o->ttl_s;
	info.ttl_park = o->ttl_park;
	info.auto_resume = o->auto_resume;
	if (rc == 0)
		rc = sandbox__write_info(tmp, &info);
	if (rc == 0 && rename(tmp, info.dir) < 0)
		rc = -errno;
	if (rc < 0) {
		sandbox__errf(err, errlen, rc, "creating %s: %s", info.dir,
			      strerror(-rc));
		goto out_tmp;
	}
	/* template=NAME is there to see: `template rm` now waits for us. */
	if (tlock >= 0)
		close(tlock);
	tlock = -1;
	rc = start_supervisor(o, state, &info, &how, lock_fd, err, errlen);
	if (rc == 0)
		return 0;
	/* The supervisor removes it all; if it died instead, do it here. */
	sandbox__read_info(info.dir, &info);
	if (info.ember)
		proc__terminate(info.ember, info.ember_start,
				SUPERVISOR_STOP_GRACE_MS);
	net__teardown(id, why, sizeof(why));
	jail__cleanup(&info, why, sizeof(why));
	if (access(info.dir, F_OK) == 0)
		files__rm_tree(info.dir);
	sandbox__reap_hidden(state, id);
	return rc;
out_tmp:
	files__rm_tree(tmp);
	if (lock_fd >= 0)
		close(lock_fd);
out_tlock:
	if (tlock >= 0)
		close(tlock);
	return rc;
}

int sandbox__unpark(const struct sandbox_info *info, const char *ember,
		    unsigned int timeout_s, char *err, size_t errlen)
{
	struct sandbox_opts o = { .ember = ember, .boot_timeout_s = timeout_s };
	char state[PATH_MAX], disk[PATH_MAX], snap_state[PATH_MAX],
		snap_mem[PATH_MAX], *slash;
	struct supervisor_how how = { .disk = disk,
				      .snap_state = snap_state,
				      .snap_mem = snap_mem,
				      .parked = true };
	struct sandbox_info cur = *info;
	int lock_fd, rc;

	if (!timeout_s)
		return sandbox__errf(err, errlen, -EINVAL,
				     "bad sandbox options: no boot timeout");
	snprintf(state, sizeof(state), "%s", info->dir);
	slash = strrchr(state, '/');
	if (!slash || !sandbox__is_id(info->id))
		return sandbox__errf(err, errlen, -EINVAL,
				     "bad sandbox directory");
	*slash = '\0';
	rc = sandbox__lock_probe(info->dir, &lock_fd);
	if (rc == 1)
		return sandbox__errf(err, errlen, -EBUSY,
				     "sandbox %s is running, or being parked "
				     "or resumed",
				     info->id);
	if (rc == -ENOENT)
		return sandbox__errf(err, errlen, -ENOENT,
				     "sandbox %s was already gone", info->id);
	if (rc < 0)
		return sandbox__errf(err, errlen, rc, "sandbox %s: %s",
				     info->id, strerror(-rc));
	/* Ours now: no one else resumes or removes it meanwhile. */
	rc = sandbox__read_info(info->dir, &cur);
	if (rc == 0 && !cur.parked)
		rc = -EINVAL;
	if (rc < 0) {
		close(lock_fd);
		return sandbox__errf(
			err, errlen, rc, "sandbox %s: %s", info->id,
			rc == -EINVAL ? "not parked" : strerror(-rc));
	}
	/*
	 * Its disk is an overlay over its template's image, a Diff park's
	 * memory is over the template's: without the template (its files
	 * gone behind `template rm`'s back) it cannot run, and a try could
	 * lose it.  It stays parked, whole, should the template come back.
	 */
	if (cur.template_name[0]) {
		struct template_info t;
		char why[256];

		rc = template__open(cur.template_name, &t, NULL, why,
				    sizeof(why));
		if (rc < 0) {
			close(lock_fd);
			return sandbox__errf(
				err, errlen, rc == -ENOENT ? -ENXIO : rc,
				"sandbox %s cannot be resumed: it was made "
				"from template %s, %s (it stays parked; "
				"emberctl kill %s removes it)",
				info->id, cur.template_name,
				rc == -ENOENT ? "which is gone" : why,
				info->id);
		}
	}
	if (files__pathf(disk, sizeof(disk), "%s/" SANDBOX_ROOTFS_NAME,
			 info->dir) ||
	    files__pathf(snap_state, sizeof(snap_state),
			 "%s/" SANDBOX_SNAP_STATE, info->dir, cur.snap_gen) ||
	    files__pathf(snap_mem, sizeof(snap_mem), "%s/" SANDBOX_SNAP_MEM,
			 info->dir, cur.snap_gen)) {
		close(lock_fd);
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "sandbox path too long");
	}
	/* An ember of an earlier life (the park cut short) must not stay. */
	if (cur.ember)
		proc__terminate(cur.ember, cur.ember_start, 2000);
	sandbox__sockets_gone(info->dir);
	o.mem_mib = cur.mem_mib;
	o.vcpus = cur.vcpus;
	o.ttl_s = cur.ttl_s;
	return start_supervisor(&o, state, &cur, &how, lock_fd, err, errlen);
}
