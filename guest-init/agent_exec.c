// SPDX-License-Identifier: Apache-2.0
/*
 * The guest agent's EXEC, STDIN and KILL (agent_exec.h, PROTOCOL.md): each
 * command a child in a process group of its own, its stdout and stderr
 * forwarded as frames while it runs, its EXIT once it is reaped.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_exec.h"

extern char **environ;

/*
 * The image defaults file (PROTOCOL.md, "Image defaults"); the test hook
 * EMBER_AGENT_DEFAULTS names another (agent_exec__from_env()).  Global as
 * the environment it comes from is.
 */
static const char *defaults_path = EMBER_GUEST_DEFAULTS;

int agent_exec__from_env(void)
{
	const char *p = getenv("EMBER_AGENT_DEFAULTS");

	if (p && *p) {
		defaults_path = strdup(p);
		if (!defaults_path)
			return -ENOMEM;
	}
	if (p)
		unsetenv("EMBER_AGENT_DEFAULTS"); /* not for the execs */
	return 0;
}

/* The account an exec runs as (PROTOCOL.md, USER). */
struct account {
	uid_t uid;
	gid_t gid;
	int ngroups; /* supplementary groups in groups[] */
	char name[EMBER_USER_SPEC_MAX + 1];
	char home[PATH_MAX];
};

/*
 * What one EXEC resolves to: the defaults file's bytes and records, the
 * account, the environment, the command's path.  One at a time (the
 * loop is single), hence static; the file alone is 64 KiB.
 */
static struct plan {
	char file[EMBER_DEFAULTS_MAX + 1];
	struct ember_defaults d;
	const char *cwd; /* NULL: the agent's */
	const char *user; /* NULL: the agent's (no change of ids) */
	struct account acct;
	char home_kv[PATH_MAX + 8];
	char user_kv[EMBER_USER_SPEC_MAX + 8];
	char logname_kv[EMBER_USER_SPEC_MAX + 16];
	char **env; /* malloc'd, NULL-terminated; or the request's or environ */
	int env_owned;
	char path[PATH_MAX]; /* the command's file */
	char msg[512]; /* why the plan failed */
} plan;

/* The account's groups, for setgroups: a user in more has the gid alone. */
static gid_t groups[4096];

/*
 * Read the defaults file into plan.d: 0 (a missing file: no defaults), or
 * EINVAL with plan.msg saying why it cannot be used.
 */
static int read_defaults(void)
{
	struct stat st;
	size_t len = 0;
	ssize_t n;
	int fd, rc;

	memset(&plan.d, 0, sizeof(plan.d));
	fd = open(defaults_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(plan.msg, sizeof(plan.msg), "%s: %s", defaults_path,
			 strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(plan.msg, sizeof(plan.msg), "%s: not a regular file",
			 defaults_path);
		goto fail;
	}
	while (len < sizeof(plan.file)) {
		n = read(fd, plan.file + len, sizeof(plan.file) - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(plan.msg, sizeof(plan.msg), "%s: %s",
				 defaults_path, strerror(errno));
			goto fail;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	rc = ember_defaults_decode(plan.file, len, &plan.d);
	if (rc < 0) {
		if (plan.d.record)
			snprintf(plan.msg, sizeof(plan.msg),
				 "%s: record %u: %s", defaults_path,
				 plan.d.record, plan.d.why);
		else
			snprintf(plan.msg, sizeof(plan.msg), "%s: %s",
				 defaults_path, plan.d.why);
		memset(&plan.d, 0, sizeof(plan.d));
		return EINVAL;
	}
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	return EINVAL;
}

/* @s all digits (and not empty): its value in *@v (at most 2^32 - 2). */
static int numeric_id(const char *s, unsigned long *v)
{
	char *end;

	if (!*s || strspn(s, "0123456789") != strlen(s))
		return 0;
	errno = 0;
	*v = strtoul(s, &end, 10);
	return errno == 0 && *v < 0xffffffffUL;
}

/*
 * Resolve the user spec @spec (PROTOCOL.md, USER) into plan.acct: 0, or
 * EINVAL with plan.msg ("user NAME: no such user", ...).
 */
static int resolve_user(const char *spec)
{
	char uname[EMBER_USER_SPEC_MAX + 1], gname[EMBER_USER_SPEC_MAX + 1];
	struct account *a = &plan.acct;
	long split = ember_user_spec_split(spec);
	struct passwd *pw;
	unsigned long id = 0;
	int numeric, n;

	if (split < 0) {
		snprintf(plan.msg, sizeof(plan.msg),
			 "user %.300s: wants NAME, UID, NAME:GROUP or UID:GID",
			 spec);
		return EINVAL;
	}
	memcpy(uname, spec, (size_t)split);
	uname[split] = '\0';
	gname[0] = '\0';
	if (spec[split])
		snprintf(gname, sizeof(gname), "%s", spec + split + 1);
	numeric = numeric_id(uname, &id);
	errno = 0;
	pw = numeric ? getpwuid((uid_t)id) : getpwnam(uname);
	if (!pw && !numeric) {
		snprintf(plan.msg, sizeof(plan.msg), "user %s: no such user",
			 uname);
		return EINVAL;
	}
	if (pw) {
		a->uid = pw->pw_uid;
		a->gid = pw->pw_gid;
		snprintf(a->name, sizeof(a->name), "%s", pw->pw_name);
		snprintf(a->home, sizeof(a->home), "%s",
			 pw->pw_dir && *pw->pw_dir ? pw->pw_dir : "/");
	} else {
		/* A uid with no account: its own number as group, / as home. */
		a->uid = (uid_t)id;
		a->gid = (gid_t)id;
		snprintf(a->name, sizeof(a->name), "%s", uname);
		snprintf(a->home, sizeof(a->home), "/");
	}
	if (gname[0]) {
		struct group *gr;

		if (numeric_id(gname, &id)) {
			a->gid = (gid_t)id;
		} else {
			gr = getgrnam(gname);
			if (!gr) {
				snprintf(plan.msg, sizeof(plan.msg),
					 "group %s: no such group", gname);
				return EINVAL;
			}
			a->gid = gr->gr_gid;
		}
	}
	groups[0] = a->gid;
	a->ngroups = 1;
	if (pw) {
		n = (int)(sizeof(groups) / sizeof(groups[0]));
		if (getgrouplist(a->name, a->gid, groups, &n) >= 0 && n > 0)
			a->ngroups = n;
		else
			groups[0] = a->gid; /* too many: the gid alone */
	}
	return 0;
}

/* Set "K=V" in plan.env (@n entries), replacing an earlier K. */
static void env_put(size_t *n, const char *kv)
{
	const char *eq = strchr(kv, '=');
	size_t klen = eq ? (size_t)(eq - kv) : strlen(kv);

	for (size_t i = 0; i < *n; i++) {
		if (!strncmp(plan.env[i], kv, klen) &&
		    plan.env[i][klen] == '=') {
			plan.env[i] = (char *)kv;
			return;
		}
	}
	plan.env[(*n)++] = (char *)kv;
}

/*
 * The child's environment (PROTOCOL.md, "Image defaults"): the request's
 * ENV alone when given without ENV_ADD; else the agent's, the file's env
 * over it, the account's HOME, USER and LOGNAME when a user is in effect,
 * then the request's ENV.  0 or ENOMEM.
 */
static int build_env(const struct ember_agent_exec *e)
{
	size_t ne = 0, n = 0;

	plan.env_owned = 0;
	if (e->env_given && !(e->flags & EMBER_AGENT_F_ENV_ADD)) {
		plan.env = (char **)e->env;
		return 0;
	}
	if (!plan.d.envc && !plan.user && !e->env_given) {
		plan.env = environ;
		return 0;
	}
	while (environ[ne])
		ne++;
	plan.env = calloc(ne + plan.d.envc + 3 + e->envc + 1, sizeof(char *));
	if (!plan.env)
		return ENOMEM;
	plan.env_owned = 1;
	for (size_t i = 0; i < ne; i++)
		env_put(&n, environ[i]);
	for (uint32_t i = 0; i < plan.d.envc; i++)
		env_put(&n, plan.d.env[i]);
	if (plan.user) {
		snprintf(plan.home_kv, sizeof(plan.home_kv), "HOME=%s",
			 plan.acct.home);
		snprintf(plan.user_kv, sizeof(plan.user_kv), "USER=%s",
			 plan.acct.name);
		snprintf(plan.logname_kv, sizeof(plan.logname_kv), "LOGNAME=%s",
			 plan.acct.name);
		env_put(&n, plan.home_kv);
		env_put(&n, plan.user_kv);
		env_put(&n, plan.logname_kv);
	}
	for (uint32_t i = 0; i < e->envc; i++)
		env_put(&n, e->env[i]);
	plan.env[n] = NULL;
	return 0;
}

static void plan_done(void)
{
	if (plan.env_owned)
		free(plan.env);
	plan.env = NULL;
	plan.env_owned = 0;
}

/* The value of @key in the environment @env, or NULL. */
static const char *env_get(char *const *env, const char *key)
{
	size_t k = strlen(key);

	for (; *env; env++)
		if (!strncmp(*env, key, k) && (*env)[k] == '=')
			return *env + k + 1;
	return NULL;
}

/*
 * The file of command @name into plan.path: itself when it has a '/',
 * else the first executable regular file of that name in the child's
 * PATH (the agent's when the child has none), so that an image's PATH
 * finds its commands.  0, or ENOENT / EACCES (found, not executable) /
 * ENAMETOOLONG, as execvp(3) would say.
 */
static int find_command(const char *name)
{
	const char *dirs = env_get(plan.env, "PATH"), *p, *z;
	size_t k = strlen(name);
	struct stat st;
	int err = ENOENT;

	if (!*name)
		return ENOENT;
	if (strchr(name, '/')) {
		if (k >= sizeof(plan.path))
			return ENAMETOOLONG;
		memcpy(plan.path, name, k + 1);
		return 0;
	}
	if (k > NAME_MAX)
		return ENAMETOOLONG;
	if (!dirs)
		dirs = getenv("PATH");
	if (!dirs)
		dirs = EMBER_GUEST_PATH;
	for (p = dirs; *p; p = *z ? z + 1 : z) {
		z = strchrnul(p, ':');
		if (z == p || (size_t)(z - p) + k + 2 > sizeof(plan.path))
			continue;
		snprintf(plan.path, sizeof(plan.path), "%.*s/%s", (int)(z - p),
			 p, name);
		if (stat(plan.path, &st) < 0)
			continue;
		if (S_ISREG(st.st_mode) && access(plan.path, X_OK) == 0)
			return 0;
		err = EACCES;
	}
	return err;
}

/*
 * What a child that changes its ids is given, and what it leaves behind
 * when it cannot run the command: it shares the agent's memory (vfork)
 * until its execve, so the agent reads err_no and what once it returns.
 */
struct child {
	const char *path;
	char *const *argv, *const *envp;
	const char *cwd;
	int in, out, err;
	const struct account *acct;
	volatile int err_no;
	const char *volatile what;
};

/* @fd onto @to, clearing close-on-exec when they are one already. */
static int move_fd(int fd, int to)
{
	if (fd == to)
		return fcntl(fd, F_SETFD, 0);
	return dup2(fd, to);
}

/*
 * The vfork child: its own process group, SIGPIPE at its default, the
 * pipes, then setgroups, setgid, setuid (raw system calls: libc's would
 * reach for the agent's other threads, and this child has none of its
 * own), the cwd as the new user, every signal unblocked, the command.
 */
static __attribute__((noreturn, noinline)) void child_main(struct child *k)
{
	sigset_t none;

	setpgid(0, 0);
	signal(SIGPIPE, SIG_DFL);
	if (move_fd(k->in, 0) < 0 || move_fd(k->out, 1) < 0 ||
	    move_fd(k->err, 2) < 0) {
		k->what = "dup2";
		goto fail;
	}
	if (syscall(SYS_setgroups, k->acct->ngroups, groups) < 0) {
		k->what = "setgroups";
		goto fail;
	}
	if (syscall(SYS_setgid, k->acct->gid) < 0) {
		k->what = "setgid";
		goto fail;
	}
	if (syscall(SYS_setuid, k->acct->uid) < 0) {
		k->what = "setuid";
		goto fail;
	}
	if (k->cwd && chdir(k->cwd) < 0) {
		k->what = k->cwd;
		goto fail;
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(k->path, k->argv, k->envp);
	k->what = k->argv[0];
fail:
	k->err_no = errno ? errno : EINVAL;
	_exit(127);
}

static __attribute__((noinline)) pid_t vfork_child(struct child *k)
{
	pid_t pid = vfork();

	if (pid == 0)
		child_main(k);
	return pid;
}

/*
 * Start a child that runs as plan.acct: vfork, not fork, for the reason
 * spawn_child() gives.  The pid, or a negative errno with *@what naming
 * what failed.
 */
static pid_t spawn_as(const struct ember_agent_exec *e, int in, int out,
		      int err, const char **what)
{
	struct child k = {
		.path = plan.path,
		.argv = (char *const *)e->argv,
		.envp = plan.env,
		.cwd = plan.cwd,
		.in = in,
		.out = out,
		.err = err,
		.acct = &plan.acct,
	};
	pid_t pid = vfork_child(&k);

	if (pid < 0) {
		*what = "vfork";
		return -errno;
	}
	if (k.err_no) {
		/* It ran no command: reap it here, not as an exec. */
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		*what = k.what;
		return -k.err_no;
	}
	return pid;
}

/*
 * Start @e's child as plan says: stdin @in (-1: /dev/null), stdout @out,
 * stderr @err, in a process group of its own, every signal unblocked and
 * SIGPIPE at its default.  posix_spawn(), not fork(): its vfork-style
 * clone copies no page tables and takes no copy-on-write faults in the
 * agent, which in a guest whose kernel is emulated (PVM) is a good part
 * of starting a command; a child that changes its ids takes vfork()
 * (spawn_as()) for the same reason.  Returns the pid, or a negative
 * errno with *@what naming what failed (the cwd, or the command).
 */
static pid_t spawn_child(const struct ember_agent_exec *e, int in, int out,
			 int err, const char **what)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, dfl;
	struct stat st;
	int nul = -1, rc;
	pid_t pid;

	/* A cwd that is not a directory is its own error (PROTOCOL.md). */
	*what = plan.cwd;
	if (plan.cwd && stat(plan.cwd, &st) < 0)
		return -errno;
	if (plan.cwd && !S_ISDIR(st.st_mode))
		return -ENOTDIR;
	*what = e->argv[0];
	rc = find_command(e->argv[0]);
	if (rc)
		return -rc;
	if (in < 0) {
		nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (nul < 0)
			return -errno;
		in = nul;
	}
	if (plan.user) {
		pid = spawn_as(e, in, out, err, what);
		agent_conn__close_fd(&nul);
		return pid;
	}
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	rc = posix_spawn_file_actions_init(&fa);
	if (rc) {
		agent_conn__close_fd(&nul);
		return -rc;
	}
	rc = posix_spawnattr_init(&at);
	if (rc) {
		posix_spawn_file_actions_destroy(&fa);
		agent_conn__close_fd(&nul);
		return -rc;
	}
	rc = posix_spawn_file_actions_adddup2(&fa, in, 0);
	if (!rc)
		rc = posix_spawn_file_actions_adddup2(&fa, out, 1);
	if (!rc)
		rc = posix_spawn_file_actions_adddup2(&fa, err, 2);
	if (!rc && plan.cwd)
		rc = posix_spawn_file_actions_addchdir_np(&fa, plan.cwd);
	if (!rc)
		rc = posix_spawnattr_setflags(
			&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
				     POSIX_SPAWN_SETSIGDEF);
	if (!rc)
		rc = posix_spawnattr_setpgroup(&at, 0);
	if (!rc)
		rc = posix_spawnattr_setsigmask(&at, &none);
	if (!rc)
		rc = posix_spawnattr_setsigdefault(&at, &dfl);
	if (!rc)
		rc = posix_spawn(&pid, plan.path, &fa, &at,
				 (char *const *)e->argv, plan.env);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	agent_conn__close_fd(&nul);
	return rc ? -rc : pid;
}

/*
 * Resolve @e against the image defaults (PROTOCOL.md): plan's cwd, user
 * and environment.  0, or an errno with plan.msg the ERROR's message.
 */
static int plan_exec(const struct ember_agent_exec *e)
{
	int rc;

	plan.msg[0] = '\0';
	plan.env = NULL;
	plan.env_owned = 0;
	rc = read_defaults();
	if (rc)
		return rc;
	plan.cwd = e->cwd ? e->cwd : plan.d.cwd;
	plan.user = e->user ? e->user : plan.d.user;
	if (plan.user) {
		rc = resolve_user(plan.user);
		if (rc)
			return rc;
	}
	rc = build_env(e);
	if (rc)
		snprintf(plan.msg, sizeof(plan.msg), "environment: %s",
			 strerror(rc));
	return rc;
}

void agent_exec__start(struct conn *c, const struct ember_agent_hdr *h,
		       const uint8_t *payload)
{
	static struct ember_agent_exec e; /* 4 KiB; the loop is single */
	int out[2] = { -1, -1 }, err[2] = { -1, -1 }, in[2] = { -1, -1 };
	const char *what;
	struct slot *s;
	pid_t pid;
	int rc;

	rc = ember_agent_exec_decode(payload, h->len, &e);
	s = agent_conn__open_stream(c, h->stream, rc);
	if (!s)
		return;
	rc = plan_exec(&e);
	if (rc) {
		agent_conn__send_error(c, h->stream, rc, plan.msg);
		goto fail;
	}
	if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) ||
	    ((e.flags & EMBER_AGENT_F_STDIN) && pipe2(in, O_CLOEXEC))) {
		agent_conn__send_errno(c, h->stream, errno, "pipe");
		goto fail;
	}
	pid = spawn_child(&e, in[0], out[1], err[1], &what);
	if (pid < 0) {
		agent_conn__send_errno(c, h->stream, (int)-pid, what);
		goto fail;
	}
	plan_done();
	setpgid(pid, pid); /* both sides: no race with an early KILL */
	agent_conn__close_fd(&out[1]);
	agent_conn__close_fd(&err[1]);
	agent_conn__close_fd(&in[0]);
	s->kind = SLOT_EXEC;
	s->pid = pid;
	s->out_fd = out[0];
	s->err_fd = err[0];
	s->in_fd = in[1];
	fcntl(s->out_fd, F_SETFL, O_NONBLOCK);
	fcntl(s->err_fd, F_SETFL, O_NONBLOCK);
	if (e.timeout_ms)
		s->deadline_ms = agent_conn__now_ms() + e.timeout_ms;
	return;
fail:
	plan_done();
	agent_conn__close_fd(&out[0]);
	agent_conn__close_fd(&out[1]);
	agent_conn__close_fd(&err[0]);
	agent_conn__close_fd(&err[1]);
	agent_conn__close_fd(&in[0]);
	agent_conn__close_fd(&in[1]);
}

/*
 * Forward what is readable on *@fd; close it at EOF or error.  At most
 * @limit bytes of a child's output: a child that writes faster than the
 * host reads must not keep the agent from its poll loop (connection
 * input, KILL, timeouts).
 */
static void pump(struct conn *c, struct slot *s, int *fd, uint16_t type,
		 size_t limit)
{
	uint8_t buf[EMBER_AGENT_CHUNK];
	size_t done = 0;
	ssize_t n;

	while (done < limit) {
		n = read(*fd, buf, sizeof(buf));
		if (n > 0) {
			agent_conn__send(c, type, s->stream, buf, (size_t)n);
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		agent_conn__close_fd(fd);
		return;
	}
}

/*
 * A reaped child: forward what its pipes still hold (everything it wrote
 * before exiting: a pipe holds 64 KiB by default, FINISH_DRAIN bounds it
 * against leftover background writers that keep them full), then EXIT.
 * Output of leftover background processes after that point is dropped.
 */
#define FINISH_DRAIN (1U << 20)

static void finish_exec(struct conn *c, struct slot *s)
{
	uint8_t p[EMBER_AGENT_EXIT_SIZE];

	if (s->out_fd >= 0)
		pump(c, s, &s->out_fd, EMBER_AGENT_STDOUT, FINISH_DRAIN);
	if (s->err_fd >= 0)
		pump(c, s, &s->err_fd, EMBER_AGENT_STDERR, FINISH_DRAIN);
	agent_conn__close_fd(&s->out_fd);
	agent_conn__close_fd(&s->err_fd);
	agent_conn__close_fd(&s->in_fd);
	if (s->timed_out)
		ember_agent_exit_encode(p, EMBER_AGENT_TIMEOUT, SIGKILL);
	else if (WIFSIGNALED(s->status))
		ember_agent_exit_encode(p, EMBER_AGENT_SIGNALLED,
					WTERMSIG(s->status));
	else
		ember_agent_exit_encode(p, EMBER_AGENT_EXITED,
					WEXITSTATUS(s->status));
	agent_conn__send(c, EMBER_AGENT_EXIT, s->stream, p, sizeof(p));
	s->kind = SLOT_FREE;
}

void agent_exec__reap(struct conn *c)
{
	struct signalfd_siginfo si;
	int st;
	pid_t pid;

	while (read(c->sig_fd, &si, sizeof(si)) > 0)
		;
	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		for (int i = 0; i < EMBER_AGENT_MAX_EXECS; i++) {
			struct slot *s = &c->slots[i];

			if (s->kind == SLOT_EXEC && s->pid == pid) {
				s->pid = 0;
				s->status = st;
				finish_exec(c, s);
			}
		}
	}
}

void agent_exec__stdin(struct conn *c, const struct ember_agent_hdr *h,
		       const uint8_t *payload)
{
	struct slot *s = agent_conn__slot(c, h->stream);
	size_t off = 0;

	if (!s || s->kind != SLOT_EXEC) {
		agent_conn__send_error(c, h->stream, ESRCH, "no such exec");
		return;
	}
	if (s->in_fd < 0)
		return; /* no stdin asked for, or already closed: dropped */
	if (h->len == 0) {
		agent_conn__close_fd(&s->in_fd);
		return;
	}
	/*
	 * The frame is delivered before the next is read (the protocol has
	 * no stdin flow control), so a child slow to read its stdin stalls
	 * this connection; but timeouts still fire meanwhile (the killed
	 * child's pipe then fails the write) and a host that leaves ends it.
	 */
	fcntl(s->in_fd, F_SETFL, fcntl(s->in_fd, F_GETFL) | O_NONBLOCK);
	while (off < h->len) {
		struct pollfd p[2] = { { .fd = s->in_fd, .events = POLLOUT },
				       { .fd = c->fd, .events = POLLRDHUP } };
		ssize_t n = write(s->in_fd, payload + off, h->len - off);

		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			poll(p, 2, 200);
			agent_exec__timeouts(c, agent_conn__now_ms());
			if (!(p[1].revents & (POLLHUP | POLLERR)))
				continue;
		}
		agent_conn__close_fd(
			&s->in_fd); /* EPIPE: the child closed it */
		return;
	}
}

void agent_exec__kill(struct conn *c, const struct ember_agent_hdr *h,
		      const uint8_t *payload)
{
	struct slot *s = agent_conn__slot(c, h->stream);
	int sig, rc;

	rc = ember_agent_kill_decode(payload, h->len, &sig);
	if (rc < 0) {
		agent_conn__send_proto_error(c, h->stream, rc);
		return;
	}
	if (!s || s->kind != SLOT_EXEC || !s->pid) {
		agent_conn__send_error(c, h->stream, ESRCH, "no such exec");
		return;
	}
	if (kill(-s->pid, sig) < 0)
		agent_conn__send_errno(c, h->stream, errno, "kill");
}

/* Add @fd, when open, to the poll set as @s's. */
static int watch(struct pollfd *pfd, struct slot **who, int n, int fd,
		 struct slot *s)
{
	if (fd >= 0) {
		pfd[n] = (struct pollfd){ .fd = fd, .events = POLLIN };
		who[n++] = s;
	}
	return n;
}

int agent_exec__watch(struct conn *c, struct pollfd *pfd, struct slot **who,
		      int n, int64_t now, int *timeout)
{
	for (int i = 0; i < EMBER_AGENT_MAX_EXECS; i++) {
		struct slot *s = &c->slots[i];

		if (s->kind != SLOT_EXEC)
			continue;
		n = watch(pfd, who, n, s->out_fd, s);
		n = watch(pfd, who, n, s->err_fd, s);
		if (s->deadline_ms) {
			int64_t left = s->deadline_ms - now;

			left = left < 0 ? 0 : left;
			if (*timeout < 0 || left < *timeout)
				*timeout =
					(int)(left > INT_MAX ? INT_MAX : left);
		}
	}
	return n;
}

void agent_exec__output(struct conn *c, struct slot *s, int fd)
{
	if (s->kind != SLOT_EXEC)
		return;
	if (fd == s->out_fd)
		pump(c, s, &s->out_fd, EMBER_AGENT_STDOUT, EMBER_AGENT_CHUNK);
	else if (fd == s->err_fd)
		pump(c, s, &s->err_fd, EMBER_AGENT_STDERR, EMBER_AGENT_CHUNK);
}

void agent_exec__timeouts(struct conn *c, int64_t now)
{
	for (int i = 0; i < EMBER_AGENT_MAX_EXECS; i++) {
		struct slot *s = &c->slots[i];

		if (s->kind == SLOT_EXEC && s->pid && s->deadline_ms &&
		    now >= s->deadline_ms) {
			kill(-s->pid, SIGKILL);
			s->timed_out = 1;
			s->deadline_ms = 0;
		}
	}
}

void agent_exec__abandon(struct slot *s)
{
	if (s->pid) {
		kill(-s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
	}
	agent_conn__close_fd(&s->out_fd);
	agent_conn__close_fd(&s->err_fd);
	agent_conn__close_fd(&s->in_fd);
}
