// SPDX-License-Identifier: Apache-2.0
/*
 * Finding sandboxes: see lookup.h.  A directory whose lock nobody holds
 * belongs to a dead supervisor: a lookup or listing that meets one ends
 * the ember it names, tears down its network and jail and removes it
 * (hidden as .<id>.dead first), unless it holds a park's snapshot.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "files.h"
#include "jail.h"
#include "lookup.h"
#include "net.h"
#include "proc.h"
#include "record.h"

#define STALE_HIDDEN_S 60 /* a lockless .new/.dead dir this old is junk */

/* ---- the state directory ------------------------------------------------ */

int sandbox__state_dir(char *out, size_t outsz, char *err, size_t errlen)
{
	const char *env = getenv("EMBER_STATE_DIR");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	struct sockaddr_un sa;
	char path[PATH_MAX], real[PATH_MAX];
	struct stat st;
	size_t need;
	int rc;

	if (env && *env)
		rc = files__pathf(path, sizeof(path), "%s", env);
	else if (geteuid() == 0)
		rc = files__pathf(path, sizeof(path),
				  "/var/lib/ember/sandboxes");
	else if (xdg && xdg[0] == '/')
		rc = files__pathf(path, sizeof(path), "%s/ember", xdg);
	else
		rc = files__pathf(path, sizeof(path), "/tmp/ember-%u",
				  (unsigned int)geteuid());
	if (rc)
		return sandbox__errf(err, errlen, rc,
				     "state directory path too long");
	rc = files__mkdir_p(path);
	if (rc)
		return sandbox__errf(err, errlen, rc, "state directory %s: %s",
				     path, strerror(-rc));
	if (!realpath(path, real))
		return sandbox__errf(err, errlen, -errno,
				     "state directory %s: %s", path,
				     strerror(errno));
	if (stat(real, &st) < 0)
		return sandbox__errf(err, errlen, -errno,
				     "state directory %s: %s", real,
				     strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return sandbox__errf(err, errlen, -ENOTDIR,
				     "state directory %s: %s", real,
				     strerror(ENOTDIR));
	if (st.st_uid != geteuid() || (st.st_mode & 022))
		return sandbox__errf(
			err, errlen, -EPERM,
			"state directory %s is not private (it must be "
			"ours and not writable by group or others)",
			real);
	/* The sockets' paths: dir/<id>/vsock.sock_<port> in sun_path. */
	need = strlen(real) + 1 + SANDBOX_ID_LEN + 1 +
	       strlen(SANDBOX_UDS_NAME) + SANDBOX_PORT_SUFFIX_MAX;
	if (need >= sizeof(sa.sun_path))
		return sandbox__errf(
			err, errlen, -ENAMETOOLONG,
			"state directory %s is too long for Unix socket "
			"paths below it (at most %zu characters): set "
			"EMBER_STATE_DIR to a shorter one",
			real, sizeof(sa.sun_path) - 1 - (need - strlen(real)));
	/* ember's --drive and --vsock take comma-separated key=value lists. */
	if (strchr(real, ','))
		return sandbox__errf(
			err, errlen, -EINVAL,
			"state directory %s: a comma is not allowed", real);
	if (files__pathf(out, outsz, "%s", real))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "state directory path too long");
	return 0;
}

/* ---- liveness and clean-up of what dead supervisors left ---------------- */

/*
 * Remove the sandbox directory @dir of the state directory @state (named
 * @name there) whose lock the caller holds or that has none: end the
 * ember it names, hide it as .<id>.dead, delete it.
 */
static void reap(const char *state, const char *name, const char *dir)
{
	struct sandbox_info i;
	char dead[PATH_MAX], why[512];

	memset(&i, 0, sizeof(i));
	if (sandbox__read_info(dir, &i) == 0 && i.ember)
		proc__terminate(i.ember, i.ember_start, 2000);
	/*
	 * Its network, whole or half made (nothing: a quick look); a hidden
	 * .<id>.dead may be a removal cut short.
	 */
	if (sandbox__is_id(name))
		net__teardown(name, why, sizeof(why));
	else if (name[0] == '.' && strlen(name) > SANDBOX_ID_LEN + 1) {
		char id[SANDBOX_ID_LEN + 1];

		memcpy(id, name + 1, SANDBOX_ID_LEN);
		id[SANDBOX_ID_LEN] = '\0';
		if (sandbox__is_id(id))
			net__teardown(id, why, sizeof(why));
	}
	/* Its jail (jail.h): the chroot and the cgroup. */
	if (i.jail_root[0]) {
		memcpy(i.id, name[0] == '.' ? name + 1 : name, SANDBOX_ID_LEN);
		i.id[SANDBOX_ID_LEN] = '\0';
		if (sandbox__is_id(i.id))
			jail__cleanup(&i, why, sizeof(why));
	}
	if (sandbox__is_id(name) &&
	    files__pathf(dead, sizeof(dead), "%s/.%s.dead", state, name) == 0 &&
	    rename(dir, dead) == 0)
		files__rm_tree(dead);
	else
		files__rm_tree(dir);
}

/*
 * Look at the entry @name of @state: 1 if it is a live sandbox (@info
 * filled), 0 if not a sandbox, -ESRCH if it was a dead one (removed now).
 * Hidden (.new, .dead) directories nobody holds are removed too (0).
 */
static int examine(const char *state, const char *name,
		   struct sandbox_info *info)
{
	char dir[PATH_MAX];
	struct stat st;
	bool bad_info;
	int fd, rc;

	if (files__pathf(dir, sizeof(dir), "%s/%s", state, name))
		return 0;
	if (name[0] == '.') {
		size_t n = strlen(name);
		char id[SANDBOX_ID_LEN + 1];

		if (n < SANDBOX_ID_LEN + 5)
			return 0;
		memcpy(id, name + 1, SANDBOX_ID_LEN);
		id[SANDBOX_ID_LEN] = '\0';
		if (!sandbox__is_id(id) ||
		    (strcmp(name + SANDBOX_ID_LEN + 1, ".new") &&
		     strcmp(name + SANDBOX_ID_LEN + 1, ".dead")))
			return 0;
		rc = sandbox__lock_probe(dir, &fd);
		if (rc == 1)
			return 0;
		if (rc == -ENOENT &&
		    (lstat(dir, &st) < 0 ||
		     clock__wall_s() - st.st_mtime < STALE_HIDDEN_S))
			return 0;
		reap(state, name, dir);
		if (fd >= 0)
			close(fd);
		return 0;
	}
	if (!sandbox__is_id(name))
		return 0;
	rc = sandbox__lock_probe(dir, &fd);
	if (rc == 1 || rc == 0) {
		if (sandbox__info_init(info, state, name)) {
			if (fd >= 0)
				close(fd);
			return 0;
		}
		bad_info = sandbox__read_info(dir, info) < 0 || !info->created;
		if (fd >= 0)
			close(fd);
		/* Parked: no supervisor, and none needed. */
		if (rc == 1 || info->parked)
			return 1;
		/*
		 * An info file lost or damaged (a crash, a hand) beside a
		 * snapshot: it may be a parked sandbox; kept, shown parked,
		 * never removed unasked.  A readable info that says running
		 * is a sandbox whose supervisor died: it goes.
		 */
		if (rc == 0 && bad_info && sandbox__holds_snapshot(dir)) {
			info->parked = 1;
			return 1;
		}
		rc = sandbox__lock_probe(dir, &fd);
		if (rc == 1)
			return 1; /* resumed meanwhile */
	}
	if (rc == -ENOENT && lstat(dir, &st) < 0)
		return 0; /* removed meanwhile */
	reap(state, name, dir);
	if (fd >= 0)
		close(fd);
	return -ESRCH;
}

/* What sandbox__find() saw of the ids that begin with its prefix. */
struct find_ctx {
	const char *state, *prefix;
	size_t len, live, gone;
	struct sandbox_info *info; /* the first live one */
	char dead[SANDBOX_ID_LEN + 1]; /* the first gone one */
};

static int find_one(void *arg, const char *name)
{
	struct find_ctx *f = arg;
	struct sandbox_info cand;
	int rc;

	if (!sandbox__is_id(name) || strncmp(name, f->prefix, f->len))
		return 0;
	rc = examine(f->state, name, &cand);
	if (rc == 1 && f->live++ == 0)
		*f->info = cand;
	if (rc == -ESRCH && f->gone++ == 0)
		memcpy(f->dead, name, sizeof(f->dead)); /* sandbox__is_id() */
	return 0;
}

int sandbox__find(const char *ref, struct sandbox_info *info, char *err,
		  size_t errlen)
{
	char state[PATH_MAX], lower[SANDBOX_ID_LEN + 1];
	size_t len = strlen(ref), i;
	struct find_ctx f = {
		.state = state,
		.prefix = lower,
		.len = len,
		.info = info,
	};
	int rc;

	if (len == 0 || len > SANDBOX_ID_LEN)
		return sandbox__errf(err, errlen, -EINVAL,
				     "not a sandbox id: %s", ref);
	for (i = 0; i < len; i++) {
		char ch = ref[i] >= 'A' && ref[i] <= 'F' ? ref[i] + 32 : ref[i];

		if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
			return sandbox__errf(err, errlen, -EINVAL,
					     "not a sandbox id: %s", ref);
		lower[i] = ch;
	}
	lower[len] = '\0';
	rc = sandbox__state_dir(state, sizeof(state), err, errlen);
	if (rc)
		return rc;
	rc = files__each_entry(state, find_one, &f, err, errlen);
	if (rc)
		return rc;
	if (f.live > 1)
		return sandbox__errf(
			err, errlen, -EEXIST,
			"sandbox id prefix %s is ambiguous (%zu sandboxes)",
			ref, f.live);
	if (f.live == 1)
		return 0;
	if (f.gone) {
		memset(info, 0, sizeof(*info));
		memcpy(info->id, f.dead, sizeof(info->id));
		return sandbox__errf(err, errlen, -ESRCH,
				     "sandbox %s was already gone (cleaned up)",
				     f.dead);
	}
	return sandbox__errf(err, errlen, -ENOENT, "no sandbox %s", ref);
}

static int by_created(const void *a, const void *b)
{
	const struct sandbox_info *x = a, *y = b;

	if (x->created != y->created)
		return x->created < y->created ? -1 : 1;
	return strcmp(x->id, y->id);
}

/* files__read_dir(): @name's record into @item when it is live. */
static bool list_one(void *state, const char *name, void *item)
{
	return examine(state, name, item) == 1;
}

int sandbox__list(struct sandbox_info **out, size_t *n, char *err,
		  size_t errlen)
{
	char state[PATH_MAX];
	int rc;

	*out = NULL;
	*n = 0;
	rc = sandbox__state_dir(state, sizeof(state), err, errlen);
	if (rc)
		return rc;
	rc = files__read_dir(state, sizeof(**out), list_one, state,
			     (void **)out, n, err, errlen);
	if (rc)
		return rc;
	if (*n)
		qsort(*out, *n, sizeof(**out), by_created);
	return 0;
}

/* Is the sandbox's directory, visible or being removed, still there? */
static int dir_present(const struct sandbox_info *info)
{
	char dead[PATH_MAX], *slash;
	struct stat st;

	if (lstat(info->dir, &st) == 0)
		return 1;
	snprintf(dead, sizeof(dead), "%s", info->dir);
	slash = strrchr(dead, '/');
	if (!slash ||
	    files__pathf(slash + 1, sizeof(dead) - (size_t)(slash + 1 - dead),
			 ".%s.dead", info->id))
		return 0;
	return lstat(dead, &st) == 0;
}

void sandbox__reap_hidden(const char *state, const char *id)
{
	char dead[PATH_MAX];
	int fd, rc;

	if (files__pathf(dead, sizeof(dead), "%s/.%s.dead", state, id))
		return;
	rc = sandbox__lock_probe(dead, &fd);
	if (rc == 0 || rc == -ENOENT)
		files__rm_tree(dead);
	if (fd >= 0)
		close(fd);
}

int sandbox__kill(const struct sandbox_info *info, char *err, size_t errlen)
{
	int64_t end = clock__mono_ms() + SANDBOX_KILL_WAIT_MS;
	char state[PATH_MAX], *slash;
	struct sandbox_info cur;
	int signalled = 0, fd, rc;
	struct stat st;

	snprintf(state, sizeof(state), "%s", info->dir);
	slash = strrchr(state, '/');
	if (!slash || !sandbox__is_id(info->id))
		return sandbox__errf(err, errlen, -EINVAL,
				     "bad sandbox directory");
	*slash = '\0';
	if (!dir_present(info))
		return sandbox__errf(err, errlen, -ENOENT,
				     "sandbox %s was already gone", info->id);
	while (clock__mono_ms() < end) {
		if (lstat(info->dir, &st) < 0) {
			/* Hidden as .<id>.dead: being deleted. */
			if (!dir_present(info))
				return 0;
			if (!signalled)
				sandbox__reap_hidden(state, info->id);
			clock__sleep_ms(20);
			continue;
		}
		rc = sandbox__lock_probe(info->dir, &fd);
		if (rc == 0 || rc == -ENOENT) {
			/* No supervisor (any more): finish the job here. */
			reap(state, info->id, info->dir);
			if (fd >= 0)
				close(fd);
			continue;
		}
		if (rc == 1 && !signalled) {
			memset(&cur, 0, sizeof(cur));
			sandbox__read_info(info->dir, &cur);
			if (cur.supervisor &&
			    proc__alive(cur.supervisor, cur.supervisor_start) &&
			    kill(cur.supervisor, SIGTERM) == 0)
				signalled = 1;
		}
		clock__sleep_ms(20);
	}
	/* The supervisor is stuck or unknown: end everything here. */
	memset(&cur, 0, sizeof(cur));
	sandbox__read_info(info->dir, &cur);
	if (cur.supervisor && proc__alive(cur.supervisor, cur.supervisor_start))
		kill(cur.supervisor, SIGKILL);
	if (cur.ember && proc__alive(cur.ember, cur.ember_start))
		kill(cur.ember, SIGKILL);
	for (int i = 0; i < 100; i++) {
		rc = sandbox__lock_probe(info->dir, &fd);
		if (fd >= 0)
			close(fd);
		if (rc != 1)
			break;
		clock__sleep_ms(20);
	}
	reap(state, info->id, info->dir);
	sandbox__reap_hidden(state, info->id);
	if (dir_present(info))
		return sandbox__errf(err, errlen, -EBUSY,
				     "sandbox %s: could not remove %s",
				     info->id, info->dir);
	return 1;
}
