// SPDX-License-Identifier: Apache-2.0
/*
 * Sandbox lifecycle and on-host state: see sandbox.h.
 *
 *   emberctl run --fork--> supervisor (setsid) --fork/exec--> ember
 *
 * `run` prepares the directory (hidden as .<id>.new until complete, then
 * renamed), forks the supervisor and waits on a pipe for its verdict:
 * "R" once the agent answered a PING, or "F<errno> <text>" after it has
 * already removed everything.  The supervisor holds the directory's lock
 * for its whole life, arms the TTL only after "R", and ends the sandbox
 * on TTL expiry, SIGTERM/SIGINT/SIGHUP or ember's own exit: SIGTERM to
 * ember, SIGKILL after STOP_GRACE_MS, then the directory is renamed to
 * .<id>.dead and removed.  ember gets SIGTERM should the supervisor die
 * (PR_SET_PDEATHSIG); what such a death leaves is found by the next
 * lookup or listing through the free lock, and removed.
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
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../guest-init/protocol.h"
#include "agent_client.h"
#include "sandbox.h"

#define LOCK_NAME    "lock"
#define INFO_NAME    "info"
#define INFO_TMP     "info.tmp"
#define ROOTFS_NAME  "rootfs.ext4"
#define CONSOLE_NAME "console.log"
#define EMBER_LOG    "ember.log"
/* The longest "_<port>" ember appends for guest-initiated connections. */
#define PORT_SUFFIX_MAX 11
#define PROBE_MS	5000 /* one readiness probe: connect + PING */
#define STOP_GRACE_MS	5000 /* SIGTERM to SIGKILL for ember */
#define KILL_WAIT_MS	15000 /* sandbox__kill: for the supervisor */
#define STALE_HIDDEN_S	60 /* a lockless .new/.dead dir this old is junk */
#define VERDICT_MAX	4096
#define TAIL_LINES	6

__attribute__((format(printf, 4, 5))) static int
errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_s(void)
{
	return (int64_t)time(NULL);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* snprintf that reports truncation: 0 or -ENAMETOOLONG. */
__attribute__((format(printf, 3, 4))) static int pathf(char *out, size_t outsz,
						       const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out, outsz, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= outsz ? -ENAMETOOLONG : 0;
}

static int is_id(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return i == SANDBOX_ID_LEN;
}

/* ---- processes ---------------------------------------------------------- */

/*
 * The start time (field 22 of /proc/PID/stat) of the live, non-zombie
 * process @pid: 0 with *@start set, or -ESRCH.
 */
static int proc_start(pid_t pid, uint64_t *start)
{
	char path[64], buf[1024], *p;
	unsigned long long v;
	ssize_t n;
	int fd, field;

	if (pid <= 0)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: fields start after the last ')'. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X' || p[2] == 'x')
		return -ESRCH;
	p += 2; /* field 3, state */
	for (field = 3; field < 22 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p || sscanf(p, "%llu", &v) != 1)
		return -ESRCH;
	*start = v;
	return 0;
}

/* Is @pid alive and, when @start is known, still the same process? */
static int proc_alive(pid_t pid, uint64_t start)
{
	uint64_t now;

	if (proc_start(pid, &now) < 0)
		return 0;
	return !start || now == start;
}

/* ---- files -------------------------------------------------------------- */

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

/* rm -rf @path, not following symlinks. */
static int rm_tree(const char *path)
{
	return rm_tree_at(AT_FDCWD, path, 0);
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Write @i as the info file of @dir, atomically. */
static int write_info(const char *dir, const struct sandbox_info *i)
{
	char tmp[PATH_MAX], path[PATH_MAX], buf[1024];
	int fd, n, rc;

	if (pathf(tmp, sizeof(tmp), "%s/" INFO_TMP, dir) ||
	    pathf(path, sizeof(path), "%s/" INFO_NAME, dir))
		return -ENAMETOOLONG;
	n = snprintf(buf, sizeof(buf),
		     "supervisor=%d\nsupervisor_start=%" PRIu64 "\n"
		     "ember=%d\nember_start=%" PRIu64 "\n"
		     "created=%" PRId64 "\nready=%" PRId64 "\n"
		     "ttl=%u\nmem=%u\nvcpus=%u\n",
		     (int)i->supervisor, i->supervisor_start, (int)i->ember,
		     i->ember_start, i->created, i->ready, i->ttl_s, i->mem_mib,
		     i->vcpus);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	rc = write_all(fd, buf, (size_t)n);
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path) < 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

/* Fill @i from @dir's info file (fields it lacks stay as they are). */
static int read_info(const char *dir, struct sandbox_info *i)
{
	char path[PATH_MAX], buf[2048], *line, *save = NULL;
	ssize_t n;
	int fd;

	if (pathf(path, sizeof(path), "%s/" INFO_NAME, dir))
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
	}
	return 0;
}

static int info_init(struct sandbox_info *i, const char *state, const char *id)
{
	memset(i, 0, sizeof(*i));
	memcpy(i->id, id, SANDBOX_ID_LEN);
	if (pathf(i->dir, sizeof(i->dir), "%s/%s", state, id) ||
	    pathf(i->uds, sizeof(i->uds), "%s/" SANDBOX_UDS_NAME, i->dir))
		return -ENAMETOOLONG;
	return 0;
}

/* Copy @len bytes at @off, kernel-side if it can. */
static int copy_range(int in, int out, off_t off, off_t len)
{
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

/* Copy the image @in to the empty file @out keeping its holes. */
static int copy_sparse(int in, int out)
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

/* ---- the state directory ------------------------------------------------ */

static int mkdir_p(const char *path)
{
	char p[PATH_MAX];
	size_t i;

	if (pathf(p, sizeof(p), "%s", path))
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
		rc = pathf(path, sizeof(path), "%s", env);
	else if (geteuid() == 0)
		rc = pathf(path, sizeof(path), "/var/lib/ember/sandboxes");
	else if (xdg && xdg[0] == '/')
		rc = pathf(path, sizeof(path), "%s/ember", xdg);
	else
		rc = pathf(path, sizeof(path), "/tmp/ember-%u",
			   (unsigned int)geteuid());
	if (rc)
		return errf(err, errlen, rc, "state directory path too long");
	rc = mkdir_p(path);
	if (rc)
		return errf(err, errlen, rc, "state directory %s: %s", path,
			    strerror(-rc));
	if (!realpath(path, real))
		return errf(err, errlen, -errno, "state directory %s: %s", path,
			    strerror(errno));
	if (stat(real, &st) < 0)
		return errf(err, errlen, -errno, "state directory %s: %s", real,
			    strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return errf(err, errlen, -ENOTDIR, "state directory %s: %s",
			    real, strerror(ENOTDIR));
	if (st.st_uid != geteuid() || (st.st_mode & 022))
		return errf(err, errlen, -EPERM,
			    "state directory %s is not private (it must be "
			    "ours and not writable by group or others)",
			    real);
	/* The sockets' paths: dir/<id>/vsock.sock_<port> in sun_path. */
	need = strlen(real) + 1 + SANDBOX_ID_LEN + 1 +
	       strlen(SANDBOX_UDS_NAME) + PORT_SUFFIX_MAX;
	if (need >= sizeof(sa.sun_path))
		return errf(err, errlen, -ENAMETOOLONG,
			    "state directory %s is too long for Unix socket "
			    "paths below it (at most %zu characters): set "
			    "EMBER_STATE_DIR to a shorter one",
			    real,
			    sizeof(sa.sun_path) - 1 - (need - strlen(real)));
	/* ember's --drive and --vsock take comma-separated key=value lists. */
	if (strchr(real, ','))
		return errf(err, errlen, -EINVAL,
			    "state directory %s: a comma is not allowed", real);
	if (pathf(out, outsz, "%s", real))
		return errf(err, errlen, -ENAMETOOLONG,
			    "state directory path too long");
	return 0;
}

/* ---- liveness and clean-up of what dead supervisors left ---------------- */

/*
 * The lock of @dir: 1 when a live supervisor (or `run`) holds it; 0 when
 * it is free, and then *@fd holds it locked for the caller; -ENOENT when
 * there is no lock file, other negative errno.
 */
static int lock_probe(const char *dir, int *fd)
{
	char path[PATH_MAX];

	*fd = -1;
	if (pathf(path, sizeof(path), "%s/" LOCK_NAME, dir))
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

/* SIGTERM @pid (if still @start), SIGKILL after @grace_ms. */
static void terminate(pid_t pid, uint64_t start, int grace_ms)
{
	int64_t end = mono_ms() + grace_ms;

	if (!proc_alive(pid, start) || kill(pid, SIGTERM) < 0)
		return;
	while (mono_ms() < end) {
		if (!proc_alive(pid, start))
			return;
		sleep_ms(20);
	}
	if (proc_alive(pid, start))
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
	char dead[PATH_MAX];

	memset(&i, 0, sizeof(i));
	if (read_info(dir, &i) == 0 && i.ember)
		terminate(i.ember, i.ember_start, 2000);
	if (is_id(name) &&
	    pathf(dead, sizeof(dead), "%s/.%s.dead", state, name) == 0 &&
	    rename(dir, dead) == 0)
		rm_tree(dead);
	else
		rm_tree(dir);
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
	int fd, rc;

	if (pathf(dir, sizeof(dir), "%s/%s", state, name))
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
		rc = lock_probe(dir, &fd);
		if (rc == 1)
			return 0;
		if (rc == -ENOENT && (lstat(dir, &st) < 0 ||
				      wall_s() - st.st_mtime < STALE_HIDDEN_S))
			return 0;
		reap(state, name, dir);
		if (fd >= 0)
			close(fd);
		return 0;
	}
	if (!is_id(name))
		return 0;
	rc = lock_probe(dir, &fd);
	if (rc == 1) {
		if (info_init(info, state, name))
			return 0;
		read_info(dir, info);
		return 1;
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
		return errf(err, errlen, -EINVAL, "not a sandbox id: %s", ref);
	for (i = 0; i < len; i++) {
		char ch = ref[i] >= 'A' && ref[i] <= 'F' ? ref[i] + 32 : ref[i];

		if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
			return errf(err, errlen, -EINVAL,
				    "not a sandbox id: %s", ref);
		lower[i] = ch;
	}
	lower[len] = '\0';
	rc = sandbox__state_dir(state, sizeof(state), err, errlen);
	if (rc)
		return rc;
	d = opendir(state);
	if (!d)
		return errf(err, errlen, -errno, "%s: %s", state,
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
		return errf(err, errlen, -EEXIST,
			    "sandbox id prefix %s is ambiguous (%zu sandboxes)",
			    ref, live);
	if (live == 1)
		return 0;
	if (gone) {
		memset(info, 0, sizeof(*info));
		memcpy(info->id, dead, sizeof(info->id));
		return errf(err, errlen, -ESRCH,
			    "sandbox %s was already gone (cleaned up)", dead);
	}
	return errf(err, errlen, -ENOENT, "no sandbox %s", ref);
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
		return errf(err, errlen, -errno, "%s: %s", state,
			    strerror(errno));
	while ((e = readdir(d))) {
		if (examine(state, e->d_name, &one) != 1)
			continue;
		if (k == cap) {
			struct sandbox_info *nv;

			cap = cap ? cap * 2 : 8;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				return errf(err, errlen, -ENOMEM,
					    "out of memory");
			}
			v = nv;
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
	    pathf(slash + 1, sizeof(dead) - (size_t)(slash + 1 - dead),
		  ".%s.dead", info->id))
		return 0;
	return lstat(dead, &st) == 0;
}

/* A .<id>.dead directory nobody works on any more: remove it. */
static void reap_hidden(const char *state, const char *id)
{
	char dead[PATH_MAX];
	int fd, rc;

	if (pathf(dead, sizeof(dead), "%s/.%s.dead", state, id))
		return;
	rc = lock_probe(dead, &fd);
	if (rc == 0 || rc == -ENOENT)
		rm_tree(dead);
	if (fd >= 0)
		close(fd);
}

int sandbox__kill(const struct sandbox_info *info, char *err, size_t errlen)
{
	int64_t end = mono_ms() + KILL_WAIT_MS;
	char state[PATH_MAX], *slash;
	struct sandbox_info cur;
	int signalled = 0, fd, rc;
	struct stat st;

	snprintf(state, sizeof(state), "%s", info->dir);
	slash = strrchr(state, '/');
	if (!slash || !is_id(info->id))
		return errf(err, errlen, -EINVAL, "bad sandbox directory");
	*slash = '\0';
	if (!dir_present(info))
		return errf(err, errlen, -ENOENT, "sandbox %s was already gone",
			    info->id);
	while (mono_ms() < end) {
		if (lstat(info->dir, &st) < 0) {
			/* Hidden as .<id>.dead: being deleted. */
			if (!dir_present(info))
				return 0;
			if (!signalled)
				reap_hidden(state, info->id);
			sleep_ms(20);
			continue;
		}
		rc = lock_probe(info->dir, &fd);
		if (rc == 0 || rc == -ENOENT) {
			/* No supervisor (any more): finish the job here. */
			reap(state, info->id, info->dir);
			if (fd >= 0)
				close(fd);
			continue;
		}
		if (rc == 1 && !signalled) {
			memset(&cur, 0, sizeof(cur));
			read_info(info->dir, &cur);
			if (cur.supervisor &&
			    proc_alive(cur.supervisor, cur.supervisor_start) &&
			    kill(cur.supervisor, SIGTERM) == 0)
				signalled = 1;
		}
		sleep_ms(20);
	}
	/* The supervisor is stuck or unknown: end everything here. */
	memset(&cur, 0, sizeof(cur));
	read_info(info->dir, &cur);
	if (cur.supervisor && proc_alive(cur.supervisor, cur.supervisor_start))
		kill(cur.supervisor, SIGKILL);
	if (cur.ember && proc_alive(cur.ember, cur.ember_start))
		kill(cur.ember, SIGKILL);
	for (int i = 0; i < 100; i++) {
		rc = lock_probe(info->dir, &fd);
		if (fd >= 0)
			close(fd);
		if (rc != 1)
			break;
		sleep_ms(20);
	}
	reap(state, info->id, info->dir);
	reap_hidden(state, info->id);
	if (dir_present(info))
		return errf(err, errlen, -EBUSY,
			    "sandbox %s: could not remove %s", info->id,
			    info->dir);
	return 1;
}

/* ---- the supervisor ----------------------------------------------------- */

struct sup {
	const struct sandbox_opts *o;
	char state[PATH_MAX];
	struct sandbox_info info;
	int lock_fd; /* held, shared with `run` until it exits */
	int verdict_fd; /* the pipe to `run`; -1 once written */
	int sig_fd; /* SIGTERM, SIGINT, SIGHUP, SIGCHLD */
	int ember_status; /* valid once ember_reaped */
	int ember_reaped;
};

/* Append the last TAIL_LINES lines of @path to @out as "\n<label>: ...". */
static void tail(const char *path, const char *label, char *out, size_t outsz)
{
	char buf[4096], *lines[TAIL_LINES];
	size_t len = strlen(out), nl = 0, i;
	ssize_t n;
	off_t size;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	size = lseek(fd, 0, SEEK_END);
	if (size < 0)
		size = 0;
	n = pread(fd, buf, sizeof(buf) - 1,
		  size > (off_t)sizeof(buf) - 1 ?
			  size - (off_t)sizeof(buf) + 1 :
			  0);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	/* Keep printable text only: the console has escapes and CRs. */
	for (i = 0; i < (size_t)n; i++)
		if (buf[i] == '\r' || buf[i] == '\t')
			buf[i] = ' ';
		else if (buf[i] != '\n' && ((unsigned char)buf[i] < 0x20 ||
					    (unsigned char)buf[i] == 0x7f))
			buf[i] = '?';
	for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		while (*l == ' ')
			l++;
		if (!*l)
			continue;
		if (nl == TAIL_LINES) {
			memmove(lines, lines + 1, sizeof(lines[0]) * (nl - 1));
			nl--;
		}
		lines[nl++] = l;
	}
	for (i = 0; i < nl && len < outsz; i++) {
		snprintf(out + len, outsz - len, "\n%s: %.200s", label,
			 lines[i]);
		len += strlen(out + len);
	}
}

/* Tell `run` (once): 0, or -EPIPE when nobody reads any more. */
static int verdict(struct sup *s, const char *msg)
{
	int rc;

	if (s->verdict_fd < 0)
		return 0;
	rc = write_all(s->verdict_fd, msg, strlen(msg));
	close(s->verdict_fd);
	s->verdict_fd = -1;
	return rc;
}

static pid_t start_ember(struct sup *s)
{
	char mem[16], vcpus[16], console[PATH_MAX + 8], drive[PATH_MAX + 16],
		vsock[PATH_MAX + 32], log[PATH_MAX];
	pid_t parent = getpid(), pid;
	const char *dir = s->info.dir;

	snprintf(mem, sizeof(mem), "%u", s->o->mem_mib);
	snprintf(vcpus, sizeof(vcpus), "%u", s->o->vcpus);
	if (pathf(console, sizeof(console), "file:%s/" CONSOLE_NAME, dir) ||
	    pathf(drive, sizeof(drive), "path=%s/" ROOTFS_NAME ",root", dir) ||
	    pathf(vsock, sizeof(vsock), "cid=%d,uds=%s", SANDBOX_GUEST_CID,
		  s->info.uds) ||
	    pathf(log, sizeof(log), "%s/" EMBER_LOG, dir))
		return -ENAMETOOLONG;
	pid = fork();
	if (pid != 0)
		return pid < 0 ? -errno : pid;
	{
		const char *argv[] = { s->o->ember, "--kernel",	 s->o->kernel,
				       "--mem",	    mem,	 "--vcpus",
				       vcpus,	    "--console", console,
				       "--drive",   drive,	 "--vsock",
				       vsock,	    NULL };
		sigset_t none;
		int fd;

		/* ember must not outlive its supervisor. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(125);
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (fd >= 0 && fd != 2) {
			dup2(fd, 2);
			close(fd);
		}
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		execv(s->o->ember, (char *const *)argv);
		dprintf(2, "emberctl: cannot run %s: %s\n", s->o->ember,
			strerror(errno));
		_exit(127);
	}
}

/*
 * Take the signals that came: -EINTR for a stop request, -ECHILD once
 * ember has ended (s->ember_status), else 0.  Waits up to @ms for one.
 */
static int sup_events(struct sup *s, int ms)
{
	struct pollfd pfd = { .fd = s->sig_fd, .events = POLLIN };
	struct signalfd_siginfo si;
	int rc = 0, st;

	if (poll(&pfd, 1, ms) <= 0)
		return s->ember_reaped ? -ECHILD : 0;
	while (read(s->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo != SIGCHLD)
			rc = -EINTR;
	}
	if (!s->ember_reaped && waitpid(s->info.ember, &st, WNOHANG) > 0) {
		s->ember_reaped = 1;
		s->ember_status = st;
	}
	if (rc)
		return rc;
	return s->ember_reaped ? -ECHILD : 0;
}

static void describe_exit(int st, char *out, size_t outsz)
{
	if (WIFEXITED(st))
		snprintf(out, outsz, "ember exited with status %d",
			 WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(out, outsz, "ember was killed by signal %d",
			 WTERMSIG(st));
	else
		snprintf(out, outsz, "ember ended");
}

/* Probe the agent until it answers a PING: 0 or -errno with @why. */
static int wait_ready(struct sup *s, char *why, size_t whylen)
{
	int64_t deadline = mono_ms() + (int64_t)s->o->boot_timeout_s * 1000;
	struct agent_client *c = agent_client__new();
	int delay = 10, rc;

	if (!c)
		return errf(why, whylen, -ENOMEM, "out of memory");
	for (;;) {
		int64_t left = deadline - mono_ms();
		int att = left > PROBE_MS ? PROBE_MS : (int)left;

		rc = sup_events(s, 0);
		if (rc)
			break;
		if (left <= 0) {
			rc = errf(why, whylen, -ETIMEDOUT,
				  "the guest agent did not answer within %u s "
				  "(last: %s)",
				  s->o->boot_timeout_s,
				  agent_client__error(c)[0] ?
					  agent_client__error(c) :
					  "no attempt");
			break;
		}
		rc = agent_client__connect(c, s->info.uds, EMBER_AGENT_PORT,
					   att);
		if (rc == 0)
			rc = agent_client__ping(c, att);
		agent_client__close(c);
		if (rc == 0)
			break;
		left = deadline - mono_ms();
		rc = sup_events(s, left < delay ? (int)(left > 0 ? left : 0) :
						  delay);
		if (rc)
			break;
		delay = delay * 2 > 250 ? 250 : delay * 2;
	}
	if (rc == -EINTR)
		errf(why, whylen, rc, "stopped while booting");
	else if (rc == -ECHILD)
		describe_exit(s->ember_status, why, whylen);
	agent_client__free(c);
	return rc;
}

/* SIGTERM ember, SIGKILL after STOP_GRACE_MS, reap it. */
static void stop_ember(struct sup *s)
{
	int64_t end = mono_ms() + STOP_GRACE_MS;

	if (s->ember_reaped || s->info.ember <= 0)
		return;
	kill(s->info.ember, SIGTERM);
	while (!s->ember_reaped) {
		int64_t left = end - mono_ms();

		if (left <= 0)
			break;
		if (sup_events(s, (int)left) == -ECHILD)
			break;
	}
	if (!s->ember_reaped) {
		kill(s->info.ember, SIGKILL);
		while (waitpid(s->info.ember, &s->ember_status, 0) < 0 &&
		       errno == EINTR)
			;
		s->ember_reaped = 1;
	}
}

/* Remove the sandbox directory: hidden first, so no lookup finds it. */
static void remove_dir(struct sup *s)
{
	char dead[PATH_MAX];

	if (pathf(dead, sizeof(dead), "%s/.%s.dead", s->state, s->info.id) ==
		    0 &&
	    rename(s->info.dir, dead) == 0)
		rm_tree(dead);
	else
		rm_tree(s->info.dir);
}

static void sup_stdio(void)
{
	const char *logp = getenv("EMBER_SUPERVISOR_LOG");
	int null = open("/dev/null", O_RDWR | O_CLOEXEC), log = -1;

	if (logp && *logp)
		log = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
			   0600);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(log >= 0 ? log : null, 2);
		close(null);
	}
	if (log >= 0)
		close(log);
}

/* Close every fd but 0-2 and @keep1, @keep2 (both >= 3). */
static void close_others(int keep1, int keep2)
{
	unsigned int lo = (unsigned int)(keep1 < keep2 ? keep1 : keep2);
	unsigned int hi = (unsigned int)(keep1 < keep2 ? keep2 : keep1);
	int ok = 1;

	if (lo > 3)
		ok &= close_range(3, lo - 1, 0) == 0;
	if (hi > lo + 1)
		ok &= close_range(lo + 1, hi - 1, 0) == 0;
	ok &= close_range(hi + 1, ~0U, 0) == 0;
	if (ok)
		return;
	for (int fd = 3; fd < 1024; fd++)
		if (fd != keep1 && fd != keep2)
			close(fd);
}

__attribute__((noreturn)) static void supervise(struct sup *s)
{
	char why[VERDICT_MAX - 16], msg[VERDICT_MAX], path[PATH_MAX];
	int64_t ttl_end = 0;
	sigset_t set;
	int rc;

	setsid();
	sup_stdio();
	close_others(s->lock_fd, s->verdict_fd);
	prctl(PR_SET_NAME, "emberctl-sup");
	if (chdir("/") < 0)
		_exit(125);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	s->sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (s->sig_fd < 0) {
		rc = errf(why, sizeof(why), -errno, "signalfd: %s",
			  strerror(errno));
		goto fail;
	}
	s->info.supervisor = getpid();
	proc_start(s->info.supervisor, &s->info.supervisor_start);
	rc = write_info(s->info.dir, &s->info);
	if (rc == 0) {
		s->info.ember = start_ember(s);
		if (s->info.ember < 0)
			rc = s->info.ember;
	}
	if (rc < 0) {
		s->info.ember = 0;
		errf(why, sizeof(why), rc, "starting ember: %s", strerror(-rc));
		goto fail;
	}
	proc_start(s->info.ember, &s->info.ember_start);
	write_info(s->info.dir, &s->info);
	rc = wait_ready(s, why, sizeof(why));
	if (rc < 0)
		goto fail;
	/* ember holds the disk open: no crash can leave the copy behind. */
	if (pathf(path, sizeof(path), "%s/" ROOTFS_NAME, s->info.dir) == 0)
		unlink(path);
	s->info.ready = wall_s();
	write_info(s->info.dir, &s->info);
	if (s->o->ttl_s)
		ttl_end = mono_ms() + (int64_t)s->o->ttl_s * 1000;
	if (verdict(s, "R") < 0) {
		/* `run` died: nobody knows the id, nobody would use it. */
		stop_ember(s);
		remove_dir(s);
		_exit(1);
	}
	for (;;) {
		int64_t left = ttl_end ? ttl_end - mono_ms() : -1;

		if (ttl_end && left <= 0)
			break;
		if (sup_events(s, left < 0     ? -1 :
				  left > 60000 ? 60000 :
						 (int)left) < 0)
			break;
	}
	stop_ember(s);
	remove_dir(s);
	_exit(0);
fail:
	/* What the guest and ember said, before it all goes. */
	if (pathf(path, sizeof(path), "%s/" CONSOLE_NAME, s->info.dir) == 0)
		tail(path, "console", why, sizeof(why));
	if (pathf(path, sizeof(path), "%s/" EMBER_LOG, s->info.dir) == 0)
		tail(path, "ember", why, sizeof(why));
	if (s->sig_fd >= 0)
		stop_ember(s);
	else if (s->info.ember > 0)
		kill(s->info.ember, SIGKILL);
	remove_dir(s);
	snprintf(msg, sizeof(msg), "F%d %s", -rc, why);
	verdict(s, msg);
	_exit(1);
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
	int64_t end = mono_ms() + ((int64_t)o->boot_timeout_s + 60) * 1000;
	char buf[VERDICT_MAX + 1];
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
		int64_t left = end - mono_ms();
		ssize_t n;

		if (left <= 0) {
			kill(sup, SIGKILL);
			if (sfd >= 0)
				close(sfd);
			return errf(err, errlen, -ETIMEDOUT,
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
				end = mono_ms() + KILL_WAIT_MS;
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
		return errf(err, errlen, e > 0 && e < 4096 ? -(int)e : -EIO,
			    "%s", sp);
	}
	return errf(err, errlen, -EIO, "the supervisor died");
}

int sandbox__run(const struct sandbox_opts *o, char id[SANDBOX_ID_LEN + 1],
		 char *err, size_t errlen)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	struct sup s = {
		.o = o, .lock_fd = -1, .verdict_fd = -1, .sig_fd = -1
	};
	int in = -1, out = -1, pfd[2] = { -1, -1 }, rc, st, tries;
	pid_t sup;

	if (!o->mem_mib || o->mem_mib > 1048576 || !o->vcpus || o->vcpus > 32 ||
	    !o->boot_timeout_s)
		return errf(err, errlen, -EINVAL, "bad sandbox options");
	rc = sandbox__state_dir(s.state, sizeof(s.state), err, errlen);
	if (rc)
		return rc;
	in = open(o->rootfs, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return errf(err, errlen, -errno, "rootfs %s: %s", o->rootfs,
			    strerror(errno));
	for (tries = 0;; tries++) {
		rc = new_id(id);
		if (rc == 0)
			rc = pathf(tmp, sizeof(tmp), "%s/.%s.new", s.state, id);
		if (rc == 0 && mkdir(tmp, 0700) == 0)
			break;
		if (rc == 0)
			rc = -errno;
		if (rc != -EEXIST || tries == 8) {
			errf(err, errlen, rc, "creating a sandbox in %s: %s",
			     s.state, strerror(-rc));
			goto out_in;
		}
	}
	rc = info_init(&s.info, s.state, id);
	if (rc == 0)
		rc = pathf(path, sizeof(path), "%s/" LOCK_NAME, tmp);
	if (rc == 0) {
		s.lock_fd =
			open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (s.lock_fd < 0 || flock(s.lock_fd, LOCK_EX | LOCK_NB) < 0)
			rc = -errno;
	}
	if (rc == 0)
		rc = pathf(path, sizeof(path), "%s/" ROOTFS_NAME, tmp);
	if (rc == 0) {
		out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		rc = out < 0 ? -errno : copy_sparse(in, out);
		if (out >= 0 && close(out) < 0 && rc == 0)
			rc = -errno;
		if (rc < 0) {
			errf(err, errlen, rc, "copying %s: %s", o->rootfs,
			     strerror(-rc));
			goto out_tmp;
		}
	}
	if (rc < 0) {
		errf(err, errlen, rc, "creating %s: %s", tmp, strerror(-rc));
		goto out_tmp;
	}
	s.info.created = wall_s();
	s.info.ttl_s = o->ttl_s;
	s.info.mem_mib = o->mem_mib;
	s.info.vcpus = o->vcpus;
	rc = write_info(tmp, &s.info);
	if (rc == 0 && rename(tmp, s.info.dir) < 0)
		rc = -errno;
	if (rc < 0) {
		errf(err, errlen, rc, "creating %s: %s", s.info.dir,
		     strerror(-rc));
		goto out_tmp;
	}
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		rc = errf(err, errlen, -errno, "pipe: %s", strerror(errno));
		goto out_dir;
	}
	fflush(NULL);
	sup = fork();
	if (sup < 0) {
		rc = errf(err, errlen, -errno, "fork: %s", strerror(errno));
		goto out_dir;
	}
	if (sup == 0) {
		close(pfd[0]);
		close(in);
		s.verdict_fd = pfd[1];
		supervise(&s);
	}
	close(pfd[1]);
	pfd[1] = -1;
	rc = wait_verdict(sup, pfd[0], o, err, errlen);
	close(pfd[0]);
	if (rc == 0) {
		/* The supervisor holds the lock on; it is no child to wait for. */
		close(s.lock_fd);
		close(in);
		return 0;
	}
	while (waitpid(sup, &st, 0) < 0 && errno == EINTR)
		;
	/* The supervisor removes it all; if it died instead, do it here. */
	read_info(s.info.dir, &s.info);
	if (s.info.ember)
		terminate(s.info.ember, s.info.ember_start, STOP_GRACE_MS);
	if (access(s.info.dir, F_OK) == 0)
		rm_tree(s.info.dir);
	close(s.lock_fd); /* ours too: reap_hidden() must find it free */
	reap_hidden(s.state, id);
	close(in);
	return rc;
out_dir:
	if (pfd[0] >= 0)
		close(pfd[0]);
	if (pfd[1] >= 0)
		close(pfd[1]);
	rm_tree(s.info.dir);
	goto out_lock;
out_tmp:
	rm_tree(tmp);
out_lock:
	if (s.lock_fd >= 0)
		close(s.lock_fd);
out_in:
	close(in);
	return rc;
}
