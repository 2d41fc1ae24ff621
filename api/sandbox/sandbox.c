// SPDX-License-Identifier: Apache-2.0
/*
 * Sandbox lifecycle and on-host state: see sandbox.h.
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
#include "net.h"
#include "proc.h"
#include "sandbox.h"
#include "sandbox_internal.h"
#include "supervisor.h"
#include "template.h"
#include "../../snapshot/overlay.h"

/* The longest "_<port>" ember appends for guest-initiated connections. */
#define PORT_SUFFIX_MAX 11
#define KILL_WAIT_MS	15000 /* sandbox__kill: for the supervisor */
#define STALE_HIDDEN_S	60 /* a lockless .new/.dead dir this old is junk */

static int is_id(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return i == SANDBOX_ID_LEN;
}

/* ---- info records ------------------------------------------------------- */

int sandbox__write_info(const char *dir, const struct sandbox_info *i)
{
	char tmp[PATH_MAX], path[PATH_MAX], buf[SANDBOX_INFO_MAX];
	int fd, n, rc;

	if (files__pathf(tmp, sizeof(tmp), "%s/" SANDBOX_INFO_TMP, dir) ||
	    files__pathf(path, sizeof(path), "%s/" SANDBOX_INFO_NAME, dir))
		return -ENAMETOOLONG;
	n = snprintf(buf, sizeof(buf),
		     "supervisor=%d\nsupervisor_start=%" PRIu64 "\n"
		     "ember=%d\nember_start=%" PRIu64 "\n"
		     "created=%" PRId64 "\nready=%" PRId64 "\n"
		     "ttl=%u\nmem=%u\nvcpus=%u\npaused=%" PRId64
		     "\npaused_s=%" PRId64 "\nparked=%d\nsnap=%u\n"
		     "origin=%u\ntemplate=%s\nrestore_load_ms=%u\n"
		     "restore_ready_ms=%u\nsnap_diff=%d\nnet_dev=%d\nnet=%s\n"
		     "jail_root=%s\njailer=%s\njail_uid=%u\njail_gid=%u\n",
		     (int)i->supervisor, i->supervisor_start, (int)i->ember,
		     i->ember_start, i->created, i->ready, i->ttl_s, i->mem_mib,
		     i->vcpus, i->paused, i->paused_s, i->parked, i->snap_gen,
		     i->origin, i->template_name, i->restore_load_ms,
		     i->restore_ready_ms, i->snap_diff, i->net_dev,
		     net__mode_name(i->net_mode), i->jail_root, i->jailer,
		     i->jail_uid, i->jail_gid);
	if (n < 0 || (size_t)n >= sizeof(buf) ||
	    strchr(i->template_name, '\n') || strchr(i->jail_root, '\n') ||
	    strchr(i->jailer, '\n'))
		return -EINVAL;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	rc = files__write_all(fd, buf, (size_t)n);
	/* Synced: a park's "parked" must outlive a host crash. */
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path) < 0)
		rc = -errno;
	if (rc) {
		unlink(tmp);
		return rc;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	return 0;
}

/*
 * Does the sandbox directory @dir hold a park's snapshot (snap-N.state)?
 * Such a directory is never removed as a dead one, whatever its info
 * file says: it may be all that is left of a parked sandbox.
 */
static bool holds_snapshot(const char *dir)
{
	struct dirent *e;
	bool found = false;
	DIR *d = opendir(dir);

	if (!d)
		return false;
	while (!found && (e = readdir(d))) {
		size_t n = strlen(e->d_name);

		found = !strncmp(e->d_name, "snap-", 5) && n > 11 &&
			!strcmp(e->d_name + n - 6, ".state");
	}
	closedir(d);
	return found;
}

int sandbox__read_info(const char *dir, struct sandbox_info *i)
{
	char path[PATH_MAX], buf[SANDBOX_INFO_MAX + 1], *line, *save = NULL;
	ssize_t n;
	int fd;

	if (files__pathf(path, sizeof(path), "%s/" SANDBOX_INFO_NAME, dir))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '='), *end;
		long long v;

		if (!eq)
			continue;
		*eq = '\0';
		if (!strcmp(line, "template")) {
			snprintf(i->template_name, sizeof(i->template_name),
				 "%s", eq + 1);
			continue;
		}
		if (!strcmp(line, "net")) {
			net__mode_parse(eq + 1, &i->net_mode);
			continue;
		}
		if (!strcmp(line, "jail_root")) {
			snprintf(i->jail_root, sizeof(i->jail_root), "%s",
				 eq + 1);
			/* The host reaches the jailed ember's sockets there. */
			if (i->jail_root[0])
				files__pathf(i->uds, sizeof(i->uds),
					     "%s/" SANDBOX_UDS_NAME,
					     i->jail_root);
			continue;
		}
		if (!strcmp(line, "jailer")) {
			snprintf(i->jailer, sizeof(i->jailer), "%s", eq + 1);
			continue;
		}
		errno = 0;
		v = strtoll(eq + 1, &end, 10);
		if (errno || *end || end == eq + 1 || v < 0)
			continue;
		if (!strcmp(line, "supervisor") && v <= INT_MAX)
			i->supervisor = (pid_t)v;
		else if (!strcmp(line, "supervisor_start"))
			i->supervisor_start = (uint64_t)v;
		else if (!strcmp(line, "ember") && v <= INT_MAX)
			i->ember = (pid_t)v;
		else if (!strcmp(line, "ember_start"))
			i->ember_start = (uint64_t)v;
		else if (!strcmp(line, "created"))
			i->created = v;
		else if (!strcmp(line, "ready"))
			i->ready = v;
		else if (!strcmp(line, "ttl") && v <= UINT_MAX)
			i->ttl_s = (unsigned int)v;
		else if (!strcmp(line, "mem") && v <= UINT_MAX)
			i->mem_mib = (unsigned int)v;
		else if (!strcmp(line, "vcpus") && v <= UINT_MAX)
			i->vcpus = (unsigned int)v;
		else if (!strcmp(line, "paused"))
			i->paused = v;
		else if (!strcmp(line, "paused_s"))
			i->paused_s = v;
		else if (!strcmp(line, "parked"))
			i->parked = v != 0;
		else if (!strcmp(line, "snap") && v <= UINT_MAX)
			i->snap_gen = (unsigned int)v;
		else if (!strcmp(line, "origin") && v <= SANDBOX_FROM_PARK)
			i->origin = (unsigned int)v;
		else if (!strcmp(line, "snap_diff"))
			i->snap_diff = v != 0;
		else if (!strcmp(line, "net_dev"))
			i->net_dev = v != 0;
		else if (!strcmp(line, "jail_uid") && v <= UINT_MAX)
			i->jail_uid = (unsigned int)v;
		else if (!strcmp(line, "jail_gid") && v <= UINT_MAX)
			i->jail_gid = (unsigned int)v;
		else if (!strcmp(line, "restore_load_ms") && v <= UINT_MAX)
			i->restore_load_ms = (unsigned int)v;
		else if (!strcmp(line, "restore_ready_ms") && v <= UINT_MAX)
			i->restore_ready_ms = (unsigned int)v;
	}
	return 0;
}

static int info_init(struct sandbox_info *i, const char *state, const char *id)
{
	memset(i, 0, sizeof(*i));
	memcpy(i->id, id, SANDBOX_ID_LEN);
	if (files__pathf(i->dir, sizeof(i->dir), "%s/%s", state, id) ||
	    files__pathf(i->uds, sizeof(i->uds), "%s/" SANDBOX_UDS_NAME,
			 i->dir))
		return -ENAMETOOLONG;
	return 0;
}

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
	       strlen(SANDBOX_UDS_NAME) + PORT_SUFFIX_MAX;
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

int sandbox__lock_probe(const char *dir, int *fd)
{
	char path[PATH_MAX];

	*fd = -1;
	if (files__pathf(path, sizeof(path), "%s/" SANDBOX_LOCK_NAME, dir))
		return -ENAMETOOLONG;
	*fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (*fd < 0)
		return -errno;
	if (flock(*fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	close(*fd);
	*fd = -1;
	return errno == EWOULDBLOCK ? 1 : -errno;
}

int sandbox__wait_unlocked(const char *dir, int ms)
{
	int64_t end = clock__mono_ms() + ms;
	int fd, rc;

	for (;;) {
		rc = sandbox__lock_probe(dir, &fd);
		if (fd >= 0)
			close(fd);
		if (rc != 1)
			return 0;
		if (clock__mono_ms() >= end)
			return -ETIMEDOUT;
		clock__sleep_ms(10);
	}
}

/* SIGTERM @pid (if still @start), SIGKILL after @grace_ms. */
static void terminate(pid_t pid, uint64_t start, int grace_ms)
{
	int64_t end = clock__mono_ms() + grace_ms;

	if (!proc__alive(pid, start) || kill(pid, SIGTERM) < 0)
		return;
	while (clock__mono_ms() < end) {
		if (!proc__alive(pid, start))
			return;
		clock__sleep_ms(20);
	}
	if (proc__alive(pid, start))
		kill(pid, SIGKILL);
}

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
		terminate(i.ember, i.ember_start, 2000);
	/*
	 * Its network, whole or half made (nothing: a quick look); a hidden
	 * .<id>.dead may be a removal cut short.
	 */
	if (is_id(name))
		net__teardown(name, why, sizeof(why));
	else if (name[0] == '.' && strlen(name) > SANDBOX_ID_LEN + 1) {
		char id[SANDBOX_ID_LEN + 1];

		memcpy(id, name + 1, SANDBOX_ID_LEN);
		id[SANDBOX_ID_LEN] = '\0';
		if (is_id(id))
			net__teardown(id, why, sizeof(why));
	}
	/* Its jail (jail.h): the chroot and the cgroup. */
	if (i.jail_root[0]) {
		memcpy(i.id, name[0] == '.' ? name + 1 : name, SANDBOX_ID_LEN);
		i.id[SANDBOX_ID_LEN] = '\0';
		if (is_id(i.id))
			jail__cleanup(&i, why, sizeof(why));
	}
	if (is_id(name) &&
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
		if (!is_id(id) || (strcmp(name + SANDBOX_ID_LEN + 1, ".new") &&
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
	if (!is_id(name))
		return 0;
	rc = sandbox__lock_probe(dir, &fd);
	if (rc == 1 || rc == 0) {
		if (info_init(info, state, name)) {
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
		if (rc == 0 && bad_info && holds_snapshot(dir)) {
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

int sandbox__find(const char *ref, struct sandbox_info *info, char *err,
		  size_t errlen)
{
	char state[PATH_MAX], lower[SANDBOX_ID_LEN + 1],
		dead[SANDBOX_ID_LEN + 1];
	struct sandbox_info cand;
	size_t len = strlen(ref), i, live = 0, gone = 0;
	struct dirent *e;
	DIR *d;
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
	d = opendir(state);
	if (!d)
		return sandbox__errf(err, errlen, -errno, "%s: %s", state,
				     strerror(errno));
	while ((e = readdir(d))) {
		if (!is_id(e->d_name) || strncmp(e->d_name, lower, len))
			continue;
		rc = examine(state, e->d_name, &cand);
		if (rc == 1 && live++ == 0)
			*info = cand;
		if (rc == -ESRCH && gone++ == 0)
			memcpy(dead, e->d_name, sizeof(dead)); /* is_id() */
	}
	closedir(d);
	if (live > 1)
		return sandbox__errf(
			err, errlen, -EEXIST,
			"sandbox id prefix %s is ambiguous (%zu sandboxes)",
			ref, live);
	if (live == 1)
		return 0;
	if (gone) {
		memset(info, 0, sizeof(*info));
		memcpy(info->id, dead, sizeof(info->id));
		return sandbox__errf(err, errlen, -ESRCH,
				     "sandbox %s was already gone (cleaned up)",
				     dead);
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

int sandbox__list(struct sandbox_info **out, size_t *n, char *err,
		  size_t errlen)
{
	struct sandbox_info *v = NULL, one;
	char state[PATH_MAX];
	size_t cap = 0, k = 0;
	struct dirent *e;
	DIR *d;
	int rc;

	*out = NULL;
	*n = 0;
	rc = sandbox__state_dir(state, sizeof(state), err, errlen);
	if (rc)
		return rc;
	d = opendir(state);
	if (!d)
		return sandbox__errf(err, errlen, -errno, "%s: %s", state,
				     strerror(errno));
	while ((e = readdir(d))) {
		if (examine(state, e->d_name, &one) != 1)
			continue;
		if (sandbox__grow((void **)&v, &cap, k, sizeof(*v))) {
			free(v);
			closedir(d);
			return sandbox__errf(err, errlen, -ENOMEM,
					     "out of memory");
		}
		v[k++] = one;
	}
	closedir(d);
	if (k)
		qsort(v, k, sizeof(*v), by_created);
	*out = v;
	*n = k;
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

/* A .<id>.dead directory nobody works on any more: remove it. */
static void reap_hidden(const char *state, const char *id)
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
	int64_t end = clock__mono_ms() + KILL_WAIT_MS;
	char state[PATH_MAX], *slash;
	struct sandbox_info cur;
	int signalled = 0, fd, rc;
	struct stat st;

	snprintf(state, sizeof(state), "%s", info->dir);
	slash = strrchr(state, '/');
	if (!slash || !is_id(info->id))
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
				reap_hidden(state, info->id);
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
	reap_hidden(state, info->id);
	if (dir_present(info))
		return sandbox__errf(err, errlen, -EBUSY,
				     "sandbox %s: could not remove %s",
				     info->id, info->dir);
	return 1;
}

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
				end = clock__mono_ms() + KILL_WAIT_MS;
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
	bool net_dev;

	if (!o->boot_timeout_s)
		return sandbox__errf(err, errlen, -EINVAL,
				     "bad sandbox options: no boot timeout");
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
	rc = info_init(&info, state, id);
	info.mem_mib = o->template_name ? t.mem_mib : o->mem_mib;
	info.vcpus = o->template_name ? t.vcpus : o->vcpus;
	if (o->template_name)
		snprintf(info.template_name, sizeof(info.template_name), "%s",
			 t.name);
	info.net_dev = net_dev;
	info.net_mode = o->net_mode;
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
		if (rc == 0 &&
		    strlen(info.uds) + PORT_SUFFIX_MAX >= sizeof(sa.sun_path))
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
	if (rc < 0)
		goto out_tmp;
	if (o->template_name || !o->disk)
		rc = files__pathf(disk, sizeof(disk), "%s/" SANDBOX_ROOTFS_NAME,
				  info.dir);
	else
		rc = files__pathf(disk, sizeof(disk), "%s", o->disk);
	info.created = clock__wall_s();
	info.ttl_s = o->ttl_s;
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
		terminate(info.ember, info.ember_start,
			  SUPERVISOR_STOP_GRACE_MS);
	net__teardown(id, why, sizeof(why));
	jail__cleanup(&info, why, sizeof(why));
	if (access(info.dir, F_OK) == 0)
		files__rm_tree(info.dir);
	reap_hidden(state, id);
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

void sandbox__sockets_gone(const char *dir)
{
	static const size_t ulen = sizeof(SANDBOX_UDS_NAME) - 1;
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d;

	if (files__pathf(path, sizeof(path), "%s/" SANDBOX_API_NAME, dir) == 0)
		unlink(path);
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, SANDBOX_UDS_NAME, ulen) ||
		    (e->d_name[ulen] && e->d_name[ulen] != '_'))
			continue;
		if (files__pathf(path, sizeof(path), "%s/%s", dir, e->d_name) ==
		    0)
			unlink(path);
	}
	closedir(d);
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
	if (!slash || !is_id(info->id))
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
		terminate(cur.ember, cur.ember_start, 2000);
	sandbox__sockets_gone(info->dir);
	o.mem_mib = cur.mem_mib;
	o.vcpus = cur.vcpus;
	o.ttl_s = cur.ttl_s;
	return start_supervisor(&o, state, &cur, &how, lock_fd, err, errlen);
}

const char *sandbox__state_name(const struct sandbox_info *i)
{
	if (i->parked)
		return "parked";
	if (!i->ready)
		return "booting";
	return i->paused ? "paused" : "running";
}

int64_t sandbox__ttl_left(const struct sandbox_info *i, int64_t now)
{
	int64_t end;

	if (!i->ttl_s || !i->ready)
		return -1;
	/* The clock stopped for every pause, and stands in the current one. */
	end = i->ready + (int64_t)i->ttl_s + i->paused_s +
	      (i->paused ? now - i->paused : 0);
	return end > now ? end - now : 0;
}
