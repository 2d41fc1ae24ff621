// SPDX-License-Identifier: Apache-2.0
/*
 * Pause, resume and park a sandbox (see sandbox.h): ember's control socket
 * (ember_api.h), the info file, the supervisor's TTL.  A park is a pause,
 * a snapshot into the sandbox's directory, and the supervisor told to
 * stop ember and leave the directory (supervisor.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "ember_api.h"
#include "files.h"
#include "jail.h"
#include "proc.h"
#include "sandbox.h"
#include "record.h"
#include "supervisor.h"

/* How long the supervisor may take to stop ember after a park. */
#define PARK_STOP_MS (SUPERVISOR_STOP_GRACE_MS + 5000)

/*
 * Take @info's pause.lock (one pause, park, resume or renew at a time)
 * and read its info file under it into *@cur: the lock's fd, or a
 * negative errno with @err (nothing held).
 */
static int pause__lock(const struct sandbox_info *info,
		       struct sandbox_info *cur, char *err, size_t errlen)
{
	char lock[PATH_MAX];
	int fd, rc;

	if (files__pathf(lock, sizeof(lock), "%s/" SANDBOX_PAUSE_LOCK,
			 info->dir))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "sandbox path too long");
	fd = files__lock(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600, LOCK_EX, err,
			 errlen);
	if (fd < 0)
		return fd;
	rc = sandbox__read_info(info->dir, cur);
	if (rc) {
		close(fd);
		return sandbox__errf(err, errlen, rc, "sandbox %s: %s",
				     info->id, strerror(-rc));
	}
	return fd;
}

/* -EAGAIN with @err when @cur has not finished booting; else 0. */
static int pause__booting(const struct sandbox_info *cur, char *err,
			  size_t errlen)
{
	if (cur->ready)
		return 0;
	return sandbox__errf(err, errlen, -EAGAIN,
			     "sandbox %s is still booting", cur->id);
}

/* Write @cur as @info's info file: 0, or a negative errno with @err. */
static int pause__write_info(const struct sandbox_info *info,
			     const struct sandbox_info *cur, char *err,
			     size_t errlen)
{
	int rc = sandbox__write_info(info->dir, cur);

	if (rc)
		sandbox__errf(err, errlen, rc, "writing the info file: %s",
			      strerror(-rc));
	return rc;
}

/* ember's control socket as we reach it (in its jail, if jailed). */
static int api_path(const struct sandbox_info *info, char *out, size_t outsz)
{
	struct sandbox_paths *p = malloc(sizeof(*p));
	int rc = p ? jail__paths(info, NULL, p) : -ENOMEM;

	if (rc == 0)
		rc = files__pathf(out, outsz, "%s", p->api);
	free(p);
	return rc;
}

int sandbox__pause(const struct sandbox_info *info, bool pause, char *err,
		   size_t errlen)
{
	char sock[PATH_MAX];
	struct sandbox_info cur = *info;
	int fd, rc = 0;

	if (api_path(info, sock, sizeof(sock)))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "sandbox path too long");
	fd = pause__lock(info, &cur, err, errlen);
	if (fd < 0)
		return fd;
	if (cur.parked) {
		/* Paused already, and more; resuming it takes a new ember. */
		if (!pause)
			rc = sandbox__errf(err, errlen, -EINVAL,
					   "sandbox %s is parked on disk",
					   info->id);
		goto out;
	}
	rc = pause__booting(&cur, err, errlen);
	if (rc)
		goto out;
	if (pause == !!cur.paused)
		goto out; /* already so */
	rc = ember_api__pause(sock, pause, err, errlen);
	if (rc < 0)
		goto out;
	if (pause)
		sandbox__run_stop(&cur, clock__wall_s(), clock__mono_ms());
	else
		sandbox__run_start(&cur, clock__wall_s(), clock__mono_ms());
	rc = pause__write_info(info, &cur, err, errlen);
	/* The supervisor re-reads the info file: its TTL stops or goes on. */
	if (cur.supervisor > 0 &&
	    proc__alive(cur.supervisor, cur.supervisor_start))
		kill(cur.supervisor, SIGUSR1);
out:
	close(fd);
	return rc;
}

int sandbox__renew(const struct sandbox_info *info, unsigned int ttl_s,
		   char *err, size_t errlen)
{
	struct sandbox_info cur = *info;
	int64_t ttl;
	int fd, rc = 0;

	if (ttl_s < 1 || ttl_s > 31536000)
		return sandbox__errf(err, errlen, -EINVAL,
				     "TTL %u s out of range (1-31536000)",
				     ttl_s);
	fd = pause__lock(info, &cur, err, errlen);
	if (fd < 0)
		return fd;
	rc = pause__booting(&cur, err, errlen);
	if (rc)
		goto out;
	if (cur.parked || !cur.ttl_s) {
		rc = sandbox__errf(
			err, errlen, -EINVAL, "sandbox %s is %s", info->id,
			cur.parked ? "parked on disk" : "without a TTL");
		goto out;
	}
	/* ttl_s counts from readiness: its end moves to @ttl_s from now. */
	ttl = sandbox__ttl_from_now(&cur, ttl_s, clock__mono_ms());
	if (ttl < 1 || ttl > UINT32_MAX) {
		rc = sandbox__errf(err, errlen, -EINVAL,
				   "sandbox %s: TTL out of range", info->id);
		goto out;
	}
	if ((unsigned int)ttl == cur.ttl_s && cur.ttl_len == ttl_s)
		goto out;
	cur.ttl_s = (unsigned int)ttl;
	cur.ttl_len = ttl_s;
	rc = pause__write_info(info, &cur, err, errlen);
	if (rc)
		goto out;
	if (cur.supervisor > 0 &&
	    proc__alive(cur.supervisor, cur.supervisor_start))
		kill(cur.supervisor, SIGUSR1);
out:
	close(fd);
	return rc;
}

/*
 * sandbox__park(), or with @once -EALREADY when another park came first
 * (what the lock's holder before us did shows in the info file).
 */
static int park(const struct sandbox_info *info, bool once, char *err,
		size_t errlen)
{
	struct sandbox_info cur = *info;
	int fd, rc = 0;

	fd = pause__lock(info, &cur, err, errlen);
	if (fd < 0)
		return fd;
	if (cur.parked) {
		if (once)
			rc = sandbox__errf(err, errlen, -EALREADY,
					   "sandbox %s is already paused",
					   info->id);
		goto out; /* already so */
	}
	if (cur.jail_root[0]) {
		rc = sandbox__errf(err, errlen, -EOPNOTSUPP,
				   "sandbox %s is jailed: it cannot be parked "
				   "on disk (pause keeps it in memory)",
				   info->id);
		goto out;
	}
	rc = pause__booting(&cur, err, errlen);
	if (rc)
		goto out;
	rc = supervisor__snapshot(&cur, err, errlen);
	if (rc)
		goto out;
	/* The supervisor sees "parked", stops ember and leaves the rest. */
	if (proc__alive(cur.supervisor, cur.supervisor_start))
		kill(cur.supervisor, SIGUSR1);
	if (sandbox__wait_unlocked(info->dir, PARK_STOP_MS) < 0) {
		/* The snapshot is whole: what runs is not needed any more. */
		if (proc__alive(cur.supervisor, cur.supervisor_start))
			kill(cur.supervisor, SIGKILL);
		if (proc__alive(cur.ember, cur.ember_start))
			kill(cur.ember, SIGKILL);
		sandbox__wait_unlocked(info->dir, 2000);
	}
	if (proc__alive(cur.ember, cur.ember_start)) {
		kill(cur.ember, SIGKILL);
		for (int i = 0;
		     i < 200 && proc__alive(cur.ember, cur.ember_start); i++)
			clock__sleep_ms(10);
	}
	sandbox__sockets_gone(info->dir);
	/* The park before, whose memory that ember mapped, is over. */
	if (cur.snap_gen > 1)
		sandbox__snap_gone(info->dir, cur.snap_gen - 1);
	rc = 0;
out:
	close(fd);
	return rc;
}

int sandbox__park(const struct sandbox_info *info, char *err, size_t errlen)
{
	return park(info, false, err, errlen);
}

int sandbox__park_once(const struct sandbox_info *info, char *err,
		       size_t errlen)
{
	return park(info, true, err, errlen);
}

int sandbox__resume(const struct sandbox_info *info, const char *ember,
		    unsigned int timeout_s, char *err, size_t errlen)
{
	if (info->parked)
		return sandbox__unpark(info, ember, timeout_s, err, errlen);
	return sandbox__pause(info, false, err, errlen);
}

int sandbox__wake(struct sandbox_info *info, const char *ember,
		  unsigned int timeout_s, char *err, size_t errlen)
{
	int64_t end = clock__mono_ms() + (int64_t)timeout_s * 1000;
	char id[SANDBOX_ID_LEN + 1];
	int rc;

	snprintf(id, sizeof(id), "%s", info->id);
	for (;;) {
		if (!info->parked && !info->paused && info->ready)
			return 0;
		/* Still booting (a resume's new ember): wait, as for -EBUSY. */
		rc = info->parked || info->paused ?
			     sandbox__resume(info, ember, timeout_s, err,
					     errlen) :
			     -EBUSY;
		if (rc < 0 && rc != -EBUSY && rc != -EAGAIN)
			return rc;
		if (rc < 0 && clock__mono_ms() >= end)
			return sandbox__errf(err, errlen, -ETIMEDOUT,
					     "sandbox %s: not running within "
					     "%u s (resumed elsewhere)",
					     id, timeout_s);
		if (rc < 0)
			clock__sleep_ms(100);
		rc = sandbox__find(id, info, err, errlen);
		if (rc < 0)
			return rc;
	}
}
