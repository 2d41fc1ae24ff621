// SPDX-License-Identifier: Apache-2.0
/*
 * A sandbox's ports on the host: see expose.h.  This file: the records,
 * the listener's address, and the forwarder process (its accept loop,
 * one thread per connection that asks the agent for FORWARD and then
 * copies bytes both ways).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../guest-init/fd_splice.h"
#include "../../guest-init/protocol.h"
#include "agent_client.h"
#include "expose.h"
#include "files.h"
#include "proc.h"
#include "sandbox.h"

#define THREAD_STACK  (1U << 20) /* a wake's resume needs more than 256K */
#define CHECK_MS      5000 /* the forwarder looks at the directory */
#define STOP_GRACE_MS 1000 /* --rm: SIGTERM to SIGKILL */
#define RECORD_MAX    512
#define WAKE_S	      SANDBOX_DEF_BOOT_S /* a connection's auto-resume */
#define LOG_NAME      "log" /* in the expose directory: failed wakes */

/* The VMM binary forwarders resume a parked sandbox with ("": none). */
static char ember_bin[PATH_MAX];

/* ---- records --------------------------------------------------------- */

static int expose_dir(const struct sandbox_info *sb, char *out, size_t outsz)
{
	return files__pathf(out, outsz, "%s/" EXPOSE_DIR_NAME, sb->dir);
}

/* Read the record of @port: 0 when it names a live forwarder, else -ENOENT. */
static int read_record(const char *dir, unsigned int port,
		       struct expose_entry *e)
{
	char path[PATH_MAX], text[RECORD_MAX], *save = NULL, *k, *v;
	int have = 0;

	if (files__pathf(path, sizeof(path), "%s/%u", dir, port) < 0 ||
	    files__read_text(path, text, sizeof(text)) < 0)
		return -ENOENT;
	memset(e, 0, sizeof(*e));
	e->port = port;
	for (char *t = text; files__next_kv(t, &save, &k, &v); t = NULL) {
		if (!strcmp(k, "addr")) {
			snprintf(e->addr, sizeof(e->addr), "%s", v);
			have |= 1;
		} else if (!strcmp(k, "pid")) {
			e->pid = (pid_t)strtol(v, NULL, 10);
			have |= 2;
		} else if (!strcmp(k, "pid_start")) {
			e->pid_start = strtoull(v, NULL, 10);
			have |= 4;
		} else if (!strcmp(k, "max_conns")) {
			e->max_conns = (unsigned int)strtoul(v, NULL, 10);
		}
	}
	if (have != 7 || e->pid <= 0 || !proc__alive(e->pid, e->pid_start))
		return -ENOENT;
	return 0;
}

static int write_record(const char *dir, const struct expose_entry *e)
{
	char path[PATH_MAX], tmp[PATH_MAX], text[RECORD_MAX];
	int len;

	if (files__pathf(path, sizeof(path), "%s/%u", dir, e->port) < 0 ||
	    files__pathf(tmp, sizeof(tmp), "%s/.%u.tmp", dir, e->port) < 0)
		return -ENAMETOOLONG;
	len = snprintf(
		text, sizeof(text),
		"port=%u\naddr=%s\nmax_conns=%u\npid=%d\npid_start=%llu\n",
		e->port, e->addr, e->max_conns, (int)e->pid,
		(unsigned long long)e->pid_start);
	return files__replace(path, tmp, text, (size_t)len, 0600,
			      FILES_NOFOLLOW);
}

static void drop_record(const char *dir, unsigned int port)
{
	char path[PATH_MAX];

	if (files__pathf(path, sizeof(path), "%s/%u", dir, port) == 0)
		unlink(path);
}

/* The records' lock (created with the directory): the fd, or -errno. */
static int lock_records(const struct sandbox_info *sb, char *dir, size_t dirsz,
			bool create, char *err, size_t errlen)
{
	char path[PATH_MAX];

	if (expose_dir(sb, dir, dirsz) < 0 ||
	    files__pathf(path, sizeof(path), "%s/.lock", dir) < 0)
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "%s: path too long", sb->dir);
	if (create && mkdir(dir, 0700) < 0 && errno != EEXIST) {
		if (errno == ENOENT)
			return sandbox__errf(err, errlen, -ENOENT,
					     "sandbox %s is gone", sb->id);
		return sandbox__errf(err, errlen, -errno, "%s: %s", dir,
				     strerror(errno));
	}
	if (!create && access(dir, F_OK) < 0)
		return -ENOENT;
	return files__lock(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
			   0600, LOCK_EX, err, errlen);
}

/* ---- the host address ------------------------------------------------ */

/* "PORT", "ADDR:PORT" or "[V6]:PORT" into @ss: 0 or -EINVAL. */
static int parse_host(const char *spec, struct sockaddr_storage *ss,
		      socklen_t *len)
{
	char addr[INET6_ADDRSTRLEN + 2];
	const char *colon = strrchr(spec, ':'), *ps = spec;
	unsigned long p;
	char *end;

	memset(ss, 0, sizeof(*ss));
	snprintf(addr, sizeof(addr), "%s", EXPOSE_DEFAULT_HOST);
	if (colon) {
		size_t al = (size_t)(colon - spec);

		if (spec[0] == '[') {
			if (al < 3 || spec[al - 1] != ']')
				return -EINVAL;
			spec++;
			al -= 2;
		}
		if (!al || al >= sizeof(addr))
			return -EINVAL;
		memcpy(addr, spec, al);
		addr[al] = '\0';
		ps = colon + 1;
	}
	if (*ps < '0' || *ps > '9')
		return -EINVAL;
	errno = 0;
	p = strtoul(ps, &end, 10);
	if (errno || *end || p > 65535)
		return -EINVAL;
	if (strchr(addr, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		if (inet_pton(AF_INET6, addr, &s6->sin6_addr) != 1)
			return -EINVAL;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)p);
		*len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		if (inet_pton(AF_INET, addr, &s4->sin_addr) != 1)
			return -EINVAL;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)p);
		*len = sizeof(*s4);
	}
	return 0;
}

/* The address @fd listens on, as "A.B.C.D:P" or "[V6]:P". */
static void local_name(int fd, char *out, size_t outsz)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char a[INET6_ADDRSTRLEN];

	snprintf(out, outsz, "?");
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return;
	if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		snprintf(out, outsz, "[%s]:%u", a, ntohs(s6->sin6_port));
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
		snprintf(out, outsz, "%s:%u", a, ntohs(s4->sin_port));
	}
}

/* ---- the forwarder --------------------------------------------------- */

struct fwd {
	char uds[PATH_MAX];
	char dir[PATH_MAX];
	char id[SANDBOX_ID_LEN + 1];
	char ember[PATH_MAX]; /* ember_bin when it started */
	unsigned int port;
	unsigned int max_conns;
	atomic_uint active;
	pthread_mutex_t wake_lock; /* one wake at a time */
};

struct fwd_conn {
	struct fwd *f;
	int fd; /* the host's TCP connection */
};

/* Close @fd with a reset: the client sees a refusal, not an empty reply. */
static void reset_close(int fd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

/* Append @msg as a line to the expose directory's log, and stderr. */
static void log_line(const struct fwd *f, const char *msg)
{
	char path[PATH_MAX];
	int fd;

	fprintf(stderr, "emberctl-fwd: %s\n", msg);
	if (files__pathf(path, sizeof(path), "%s/" EXPOSE_DIR_NAME "/" LOG_NAME,
			 f->dir))
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (dprintf(fd, "%lld %s\n", (long long)time(NULL), msg) < 0) {
		/* Nowhere else to say it. */
	}
	close(fd);
}

/*
 * The sandbox is not running: resume it when it was made with
 * auto_resume (sandbox__wake()), its socket into @uds.  0 when it runs
 * now; -1 (the connection is to be reset; a failed resume logged).
 */
static int wake(struct fwd *f, char *uds, size_t len)
{
	struct sandbox_info info;
	char err[1024], msg[1200];
	int rc;

	pthread_mutex_lock(&f->wake_lock);
	rc = sandbox__find(f->id, &info, err, sizeof(err));
	if (rc == 0 && !info.auto_resume)
		rc = -EPERM;
	if (rc == 0 && (info.parked || info.paused || !info.ready)) {
		rc = sandbox__wake(&info, f->ember[0] ? f->ember : NULL, WAKE_S,
				   err, sizeof(err));
		if (rc < 0) {
			snprintf(msg, sizeof(msg),
				 "sandbox %s, port %u: a connection was reset: "
				 "cannot resume the sandbox: %s",
				 f->id, f->port, err);
			log_line(f, msg);
		}
	}
	pthread_mutex_unlock(&f->wake_lock);
	if (rc < 0 || (size_t)snprintf(uds, len, "%s", info.uds) >= len)
		return -1;
	return 0;
}

/* A connection to the guest's port through @uds: its fd, or -1. */
static int forward_fd(const struct fwd *f, const char *uds)
{
	struct agent_client *c = agent_client__new();
	int afd = -1;

	if (c &&
	    agent_client__connect(c, uds, EMBER_AGENT_PORT, EXPOSE_AGENT_MS) ==
		    0 &&
	    agent_client__forward(c, f->port, EXPOSE_AGENT_MS) == 0)
		afd = agent_client__detach_fd(c);
	else if (c && agent_client__guest_errno(c) == ECONNREFUSED)
		afd = -2; /* the guest answered: nothing listens */
	agent_client__free(c);
	return afd;
}

static void *conn_main(void *arg)
{
	struct fwd_conn *fc = arg;
	struct fwd *f = fc->f;
	char uds[PATH_MAX];
	int afd;

	afd = forward_fd(f, f->uds);
	/* Not running (parked, paused): auto-resume, then once more. */
	if (afd == -1 && wake(f, uds, sizeof(uds)) == 0)
		afd = forward_fd(f, uds);
	if (afd < 0) {
		reset_close(fc->fd);
	} else {
		fd_splice__run(fc->fd, afd);
		close(afd);
		close(fc->fd);
	}
	atomic_fetch_sub(&f->active, 1);
	free(fc);
	return NULL;
}

static void accept_one(struct fwd *f, int lfd, pthread_attr_t *attr)
{
	struct fwd_conn *fc;
	pthread_t t;
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), one = 1;

	if (fd < 0)
		return;
	if (atomic_load(&f->active) >= f->max_conns) {
		reset_close(fd);
		return;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	fc = malloc(sizeof(*fc));
	if (!fc) {
		reset_close(fd);
		return;
	}
	fc->f = f;
	fc->fd = fd;
	atomic_fetch_add(&f->active, 1);
	if (pthread_create(&t, attr, conn_main, fc) != 0) {
		atomic_fetch_sub(&f->active, 1);
		free(fc);
		reset_close(fd);
	}
}

/*
 * The forwarder process: never returns.  Tells @ready_w its pid once it
 * watches the sandbox directory (EOF without it: it could not).
 */
__attribute__((noreturn)) static void forwarder(struct fwd *f, int lfd,
						int ready_w)
{
	struct pollfd pfd[3];
	pthread_attr_t attr;
	sigset_t set;
	int ino, sig;
	pid_t me = getpid();

	proc__close_others(lfd, ready_w);
	proc__daemon_stdio();
	if (chdir("/") < 0)
		_exit(1);
	prctl(PR_SET_NAME, "emberctl-fwd");
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sig = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (sig < 0 || ino < 0 ||
	    inotify_add_watch(ino, f->dir,
			      IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR) < 0 ||
	    access(f->dir, F_OK) < 0)
		_exit(1);
	if (write(ready_w, &me, sizeof(me)) != (ssize_t)sizeof(me))
		_exit(1);
	close(ready_w);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, THREAD_STACK);
	pfd[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = ino, .events = POLLIN };
	pfd[2] = (struct pollfd){ .fd = sig, .events = POLLIN };
	for (;;) {
		int n = poll(pfd, 3, CHECK_MS);

		if (n < 0 && errno != EINTR)
			_exit(1);
		/* The sandbox's directory went (kill, TTL), or --rm. */
		if (n > 0 && (pfd[1].revents || pfd[2].revents))
			_exit(0);
		if (access(f->dir, F_OK) < 0)
			_exit(0);
		if (n > 0 && pfd[0].revents)
			accept_one(f, lfd, &attr);
	}
}

/*
 * Start the forwarder for @f on the listener @lfd: its pid into *@pid, or
 * a negative errno.
 */
static int start_forwarder(struct fwd *f, int lfd, pid_t *pid)
{
	int p[2], st;
	pid_t child;
	ssize_t n;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	child = fork();
	if (child < 0) {
		int rc = -errno;

		close(p[0]);
		close(p[1]);
		return rc;
	}
	if (child == 0) {
		/* A session of its own, reaped by init, not our caller. */
		close(p[0]);
		setsid();
		child = fork();
		if (child == 0)
			forwarder(f, lfd, p[1]);
		_exit(child < 0 ? 1 : 0);
	}
	close(p[1]);
	while (waitpid(child, &st, 0) < 0 && errno == EINTR)
		;
	do
		n = read(p[0], pid, sizeof(*pid));
	while (n < 0 && errno == EINTR);
	close(p[0]);
	return n == (ssize_t)sizeof(*pid) ? 0 : -ECHILD;
}

/* ---- the verbs -------------------------------------------------------- */

int expose__add(const struct sandbox_info *sb, unsigned int port,
		const char *host, unsigned int max_conns,
		struct expose_entry *out, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	struct expose_entry old;
	socklen_t sslen = 0;
	char dir[PATH_MAX];
	struct fwd *f = NULL;
	int lock, lfd = -1, one = 1, rc;

	memset(out, 0, sizeof(*out));
	if (port == 0 || port > 65535)
		return sandbox__errf(err, errlen, -EINVAL,
				     "guest port %u out of range (1-65535)",
				     port);
	if (!max_conns)
		max_conns = EXPOSE_MAX_CONNS;
	if (max_conns > EXPOSE_CONNS_LIMIT)
		return sandbox__errf(err, errlen, -EINVAL,
				     "at most %u connections a port",
				     EXPOSE_CONNS_LIMIT);
	if (parse_host(host ? host : "0", &ss, &sslen) < 0)
		return sandbox__errf(err, errlen, -EINVAL,
				     "bad host address '%s' (want PORT, "
				     "ADDR:PORT or [IPV6]:PORT)",
				     host);
	if (sb->paused)
		return sandbox__errf(err, errlen, -EBUSY,
				     "sandbox %s is %s (emberctl resume %s)",
				     sb->id, sb->parked ? "parked" : "paused",
				     sb->id);
	if (strlen(sb->uds) >= sizeof(f->uds) ||
	    strlen(sb->dir) >= sizeof(f->dir))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "%s: path too long", sb->dir);
	lock = lock_records(sb, dir, sizeof(dir), true, err, errlen);
	if (lock < 0)
		return lock;
	if (read_record(dir, port, &old) == 0) {
		rc = sandbox__errf(err, errlen, -EEXIST,
				   "port %u of sandbox %s is already exposed "
				   "at %s (emberctl expose --rm %s %u)",
				   port, sb->id, old.addr, sb->id, port);
		goto out;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		rc = sandbox__errf(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	strcpy(f->uds, sb->uds);
	strcpy(f->dir, sb->dir);
	strcpy(f->id, sb->id);
	strcpy(f->ember, ember_bin);
	pthread_mutex_init(&f->wake_lock, NULL);
	f->port = port;
	f->max_conns = max_conns;
	lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(lfd, (struct sockaddr *)&ss, sslen) < 0 ||
	    listen(lfd, 128) < 0) {
		rc = sandbox__errf(err, errlen, -errno, "listening on %s: %s",
				   host ? host : EXPOSE_DEFAULT_HOST ":0",
				   strerror(errno));
		goto out;
	}
	out->port = port;
	out->max_conns = max_conns;
	local_name(lfd, out->addr, sizeof(out->addr));
	rc = start_forwarder(f, lfd, &out->pid);
	if (rc < 0) {
		if (access(sb->dir, F_OK) < 0)
			rc = sandbox__errf(err, errlen, -ENOENT,
					   "sandbox %s is gone", sb->id);
		else
			sandbox__errf(err, errlen, rc,
				      "starting the forwarder: %s",
				      strerror(-rc));
		goto out;
	}
	proc__start_time(out->pid, &out->pid_start);
	rc = write_record(dir, out);
	if (rc < 0) {
		proc__terminate(out->pid, out->pid_start, STOP_GRACE_MS);
		sandbox__errf(err, errlen, rc, "%s/%u: %s", dir, port,
			      strerror(-rc));
	}
out:
	if (lfd >= 0)
		close(lfd);
	free(f);
	close(lock);
	return rc;
}

void expose__set_ember(const char *ember)
{
	snprintf(ember_bin, sizeof(ember_bin), "%s",
		 ember && strlen(ember) < sizeof(ember_bin) ? ember : "");
}

int expose__remove(const struct sandbox_info *sb, unsigned int port, char *err,
		   size_t errlen)
{
	struct expose_entry e;
	char dir[PATH_MAX];
	int lock, rc = 0;

	lock = lock_records(sb, dir, sizeof(dir), false, err, errlen);
	if (lock == -ENOENT || (lock >= 0 && read_record(dir, port, &e) < 0))
		rc = sandbox__errf(err, errlen, -ENOENT,
				   "port %u of sandbox %s is not exposed", port,
				   sb->id);
	else if (lock < 0)
		return lock;
	if (rc == 0)
		proc__terminate(e.pid, e.pid_start, STOP_GRACE_MS);
	if (lock >= 0) {
		drop_record(dir, port);
		close(lock);
	}
	return rc;
}

struct list_ctx {
	const char *dir;
};

static bool list_one(void *arg, const char *name, void *item)
{
	struct list_ctx *x = arg;
	unsigned long p;
	char *end;

	if (name[0] < '1' || name[0] > '9')
		return false;
	p = strtoul(name, &end, 10);
	if (*end || p > 65535)
		return false;
	if (read_record(x->dir, (unsigned int)p, item) < 0) {
		drop_record(x->dir, (unsigned int)p);
		return false;
	}
	return true;
}

static int by_port(const void *a, const void *b)
{
	const struct expose_entry *x = a, *y = b;

	return (x->port > y->port) - (x->port < y->port);
}

int expose__list(const struct sandbox_info *sb, struct expose_entry **out,
		 size_t *n, char *err, size_t errlen)
{
	struct list_ctx x;
	char dir[PATH_MAX];
	void *v = NULL;
	int lock, rc;

	*out = NULL;
	*n = 0;
	lock = lock_records(sb, dir, sizeof(dir), false, err, errlen);
	if (lock == -ENOENT)
		return 0;
	if (lock < 0)
		return lock;
	x.dir = dir;
	rc = files__read_dir(dir, sizeof(struct expose_entry), list_one, &x, &v,
			     n, err, errlen);
	close(lock);
	if (rc < 0)
		return rc;
	qsort(v, *n, sizeof(struct expose_entry), by_port);
	*out = v;
	return 0;
}

int expose__probe(const struct sandbox_info *sb, unsigned int port,
		  int timeout_ms, char *err, size_t errlen)
{
	struct agent_client *c;
	int rc, ge;

	rc = sandbox__agent_connect(sb, timeout_ms, &c, err, errlen);
	if (rc < 0)
		return rc;
	rc = agent_client__forward(c, port, timeout_ms);
	ge = agent_client__guest_errno(c);
	if (rc == -EREMOTEIO && ge == EPROTO)
		rc = sandbox__errf(err, errlen, -EPROTONOSUPPORT,
				   "sandbox %s: its agent predates FORWARD "
				   "(%s)",
				   sb->id, agent_client__error(c));
	else if (rc == -EREMOTEIO)
		rc = sandbox__errf(err, errlen, -ge, "sandbox %s: %s", sb->id,
				   agent_client__error(c));
	else if (rc < 0)
		sandbox__errf(err, errlen, rc, "sandbox %s: %s", sb->id,
			      agent_client__error(c));
	agent_client__free(c);
	return rc;
}
