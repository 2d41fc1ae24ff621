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
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "agent_exec.h"
#include "agent_keep.h"

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
	const char *root; /* NULL: the guest's; else chroot there */
	struct account acct;
	char home_kv[PATH_MAX + 8];
	char user_kv[EMBER_USER_SPEC_MAX + 8];
	char logname_kv[EMBER_USER_SPEC_MAX + 16];
	char **env; /* malloc'd, NULL-terminated; or the request's or environ */
	int env_owned;
	char path[PATH_MAX]; /* the command's file */
	char msg[512]; /* why the plan failed */
	char rl_what[32]; /* "setrlimit RLIMIT_..." for a failing RLIMIT */
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
 * The file @rel (relative, "etc/passwd") of plan.root, opened for reading
 * with every symbolic link resolved inside that root (openat2's
 * RESOLVE_IN_ROOT; a kernel without it: plain openat), or NULL.
 */
#ifndef SYS_openat2
#define SYS_openat2 437 /* one number on every architecture */
#endif
struct open_how_v0 {
	uint64_t flags, mode, resolve;
};
#define RESOLVE_IN_ROOT_FLAG 0x10

static FILE *root_open(const char *rel)
{
	struct open_how_v0 how = { .flags = O_RDONLY | O_CLOEXEC,
				   .resolve = RESOLVE_IN_ROOT_FLAG };
	int dfd = open(plan.root, O_PATH | O_DIRECTORY | O_CLOEXEC), fd;
	FILE *f;

	if (dfd < 0)
		return NULL;
	fd = (int)syscall(SYS_openat2, dfd, rel, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS)
		fd = openat(dfd, rel, O_RDONLY | O_CLOEXEC);
	close(dfd);
	if (fd < 0)
		return NULL;
	f = fdopen(fd, "r");
	if (!f)
		close(fd);
	return f;
}

/*
 * The account @name (or uid @id when @numeric) into @a: 1 when found, 0
 * when not.  From the guest's files, or with ROOT from the root's
 * etc/passwd (PROTOCOL.md, ROOT).
 */
static int lookup_pw(const char *name, int numeric, unsigned long id,
		     struct account *a)
{
	struct passwd *pw = NULL;
	FILE *f = NULL;

	if (!plan.root) {
		pw = numeric ? getpwuid((uid_t)id) : getpwnam(name);
	} else if ((f = root_open("etc/passwd"))) {
		while ((pw = fgetpwent(f)))
			if (numeric ? pw->pw_uid == (uid_t)id :
				      !strcmp(pw->pw_name, name))
				break;
	}
	if (pw) {
		a->uid = pw->pw_uid;
		a->gid = pw->pw_gid;
		snprintf(a->name, sizeof(a->name), "%s", pw->pw_name);
		snprintf(a->home, sizeof(a->home), "%s",
			 pw->pw_dir && *pw->pw_dir ? pw->pw_dir : "/");
	}
	if (f)
		fclose(f);
	return pw != NULL;
}

/* The group @name's gid into *@gid: 1, or 0 when there is none. */
static int lookup_gr(const char *name, gid_t *gid)
{
	struct group *gr = NULL;
	FILE *f = NULL;

	if (!plan.root) {
		gr = getgrnam(name);
	} else if ((f = root_open("etc/group"))) {
		while ((gr = fgetgrent(f)))
			if (!strcmp(gr->gr_name, name))
				break;
	}
	if (gr)
		*gid = gr->gr_gid;
	if (f)
		fclose(f);
	return gr != NULL;
}

/*
 * The groups of plan.acct (which has an account) into groups[] and
 * acct.ngroups, as getgrouplist(3): its gid, then every group listing its
 * name; the gid alone when there are too many.
 */
static void lookup_groups(void)
{
	struct account *a = &plan.acct;
	const int max = (int)(sizeof(groups) / sizeof(groups[0]));
	struct group *gr;
	FILE *f;
	int n = max;

	groups[0] = a->gid;
	a->ngroups = 1;
	if (!plan.root) {
		if (getgrouplist(a->name, a->gid, groups, &n) >= 0 && n > 0)
			a->ngroups = n;
		else
			groups[0] = a->gid; /* too many: the gid alone */
		return;
	}
	f = root_open("etc/group");
	if (!f)
		return;
	while ((gr = fgetgrent(f))) {
		int member = 0;

		for (char **m = gr->gr_mem; m && *m && !member; m++)
			member = !strcmp(*m, a->name);
		if (!member || gr->gr_gid == a->gid)
			continue;
		if (a->ngroups >= max) {
			a->ngroups = 1; /* too many: the gid alone */
			break;
		}
		groups[a->ngroups++] = gr->gr_gid;
	}
	fclose(f);
}

/*
 * Resolve the user spec @spec (PROTOCOL.md, USER) into plan.acct: 0, or
 * EINVAL with plan.msg ("user NAME: no such user", ...).  With ROOT, the
 * names are the root's (its etc/passwd and etc/group).
 */
static int resolve_user(const char *spec)
{
	char uname[EMBER_USER_SPEC_MAX + 1], gname[EMBER_USER_SPEC_MAX + 1];
	struct account *a = &plan.acct;
	long split = ember_user_spec_split(spec);
	unsigned long id = 0;
	int numeric, found;

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
	found = lookup_pw(uname, numeric, id, a);
	if (!found && !numeric) {
		snprintf(plan.msg, sizeof(plan.msg), "user %s: no such user",
			 uname);
		return EINVAL;
	}
	if (!found) {
		/* A uid with no account: its own number as group, / as home. */
		a->uid = (uid_t)id;
		a->gid = (gid_t)id;
		snprintf(a->name, sizeof(a->name), "%s", uname);
		snprintf(a->home, sizeof(a->home), "/");
	}
	if (gname[0]) {
		if (numeric_id(gname, &id)) {
			a->gid = (gid_t)id;
		} else if (!lookup_gr(gname, &a->gid)) {
			snprintf(plan.msg, sizeof(plan.msg),
				 "group %s: no such group", gname);
			return EINVAL;
		}
	}
	groups[0] = a->gid;
	a->ngroups = 1;
	if (found)
		lookup_groups();
	return 0;
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
 * then the request's ENV.  With ROOT, the request's ENV alone, and the
 * account's HOME when a user is in effect and ENV has none.  0 or ENOMEM.
 */
static int build_env(const struct ember_agent_exec *e)
{
	size_t ne = 0, n = 0;

	plan.env_owned = 0;
	if (plan.root) {
		/* ROOT: the request's ENV alone, HOME added as runc does. */
		plan.env = calloc(e->envc + 2, sizeof(char *));
		if (!plan.env)
			return ENOMEM;
		plan.env_owned = 1;
		for (uint32_t i = 0; i < e->envc; i++)
			plan.env[n++] = (char *)e->env[i];
		if (plan.user) {
			plan.env[n] = NULL;
			if (!env_get(plan.env, "HOME")) {
				snprintf(plan.home_kv, sizeof(plan.home_kv),
					 "HOME=%s", plan.acct.home);
				plan.env[n++] = plan.home_kv;
			}
		}
		plan.env[n] = NULL;
		return 0;
	}
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

/*
 * The file of command @name into plan.path: itself when it has a '/',
 * else the first executable regular file of that name in the child's
 * PATH (the agent's when the child has none), so that an image's PATH
 * finds its commands.  0, or ENOENT / EACCES (found, not executable) /
 * ENAMETOOLONG, as execvp(3) would say.  With ROOT, the child calls it
 * once in its root (no allocation: a vfork child may) and PATH falls back
 * to EMBER_GUEST_PATH, not the agent's.
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
	if (!dirs && !plan.root)
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
	const struct account *acct; /* NULL: the ids stay */
	const char *root; /* NULL: no chroot; else the command is found there */
	const struct ember_agent_rlimit *rlimits;
	uint32_t nr_rlimits;
	int tty; /* in is a terminal's slave: a new session, controlling it */
	volatile int err_no;
	const char *volatile what;
};

/* RLIMIT_* names, for an RLIMIT that fails (Linux's numbers). */
static const char *const rlimit_names[EMBER_AGENT_NR_RLIMITS] = {
	"CPU",	    "FSIZE",  "DATA",	 "STACK",  "CORE",  "RSS",
	"NPROC",    "NOFILE", "MEMLOCK", "AS",	   "LOCKS", "SIGPENDING",
	"MSGQUEUE", "NICE",   "RTPRIO",	 "RTTIME",
};

/* @fd onto @to, clearing close-on-exec when they are one already. */
static int move_fd(int fd, int to)
{
	if (fd == to)
		return fcntl(fd, F_SETFD, 0);
	return dup2(fd, to);
}

/*
 * The vfork child: its own process group (with a terminal: a new
 * session, the terminal its controlling one), SIGPIPE at its default,
 * the pipes, ROOT (chroot, the command looked up there), the RLIMITs,
 * then setgroups, setgid, setuid (raw system calls: libc's would reach
 * for the agent's other threads, and this child has none of its own),
 * the cwd as the new user, every signal unblocked, the command.
 */
static __attribute__((noreturn, noinline)) void child_main(struct child *k)
{
	sigset_t none;
	int rc;

	errno = 0;
	if (k->tty) {
		if (setsid() < 0) {
			k->what = "setsid";
			goto fail;
		}
		if (ioctl(k->in, TIOCSCTTY, 0) < 0) {
			k->what = "TIOCSCTTY";
			goto fail;
		}
	} else {
		setpgid(0, 0);
	}
	signal(SIGPIPE, SIG_DFL);
	if (move_fd(k->in, 0) < 0 || move_fd(k->out, 1) < 0 ||
	    move_fd(k->err, 2) < 0) {
		k->what = "dup2";
		goto fail;
	}
	if (k->root) {
		if (chroot(k->root) < 0 || chdir("/") < 0) {
			k->what = k->root;
			goto fail;
		}
		rc = find_command(k->argv[0]);
		if (rc) {
			errno = rc;
			k->what = k->argv[0];
			goto fail;
		}
	}
	for (uint32_t i = 0; i < k->nr_rlimits; i++) {
		const struct ember_agent_rlimit *r = &k->rlimits[i];
		struct rlimit rl = { .rlim_cur = (rlim_t)r->soft,
				     .rlim_max = (rlim_t)r->hard };

		if (setrlimit((int)r->resource, &rl) < 0) {
			snprintf(plan.rl_what, sizeof(plan.rl_what),
				 "setrlimit RLIMIT_%s",
				 rlimit_names[r->resource]);
			k->what = plan.rl_what;
			goto fail;
		}
	}
	if (k->acct && syscall(SYS_setgroups, k->acct->ngroups, groups) < 0) {
		k->what = "setgroups";
		goto fail;
	}
	if (k->acct && syscall(SYS_setgid, k->acct->gid) < 0) {
		k->what = "setgid";
		goto fail;
	}
	if (k->acct && syscall(SYS_setuid, k->acct->uid) < 0) {
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
 * Start a child that runs as plan.acct (when plan.user), or in ROOT, with
 * RLIMITs or on a terminal: vfork, not fork, for the reason spawn_child()
 * gives.  The pid, or a negative errno with *@what naming what failed.
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
		.acct = plan.user ? &plan.acct : NULL,
		.root = plan.root,
		.rlimits = e->rlimits,
		.nr_rlimits = e->nr_rlimits,
		.tty = !!(e->flags & EMBER_AGENT_F_TTY),
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

	/*
	 * A cwd (or ROOT) that is not a directory is its own error
	 * (PROTOCOL.md); with ROOT the cwd and the command are in it, for
	 * the child to find.
	 */
	*what = plan.root ? plan.root : plan.cwd;
	if (*what && stat(*what, &st) < 0)
		return -errno;
	if (*what && !S_ISDIR(st.st_mode))
		return -ENOTDIR;
	*what = e->argv[0];
	rc = plan.root ? 0 : find_command(e->argv[0]);
	if (rc)
		return -rc;
	if (in < 0) {
		nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (nul < 0)
			return -errno;
		in = nul;
	}
	if (plan.user || plan.root || e->nr_rlimits ||
	    (e->flags & EMBER_AGENT_F_TTY)) {
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
	plan.root = e->root;
	if (plan.root) {
		/* ROOT: a container's process, the image's defaults unused. */
		memset(&plan.d, 0, sizeof(plan.d));
		rc = 0;
	} else {
		rc = read_defaults();
	}
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

/*
 * A new pseudo-terminal for a TTY exec: its master and slave (both
 * close-on-exec, neither our controlling terminal) into @fds, the window
 * size of @e when it has one.  0, or an errno with *@what naming the step;
 * ENODEV when the guest has no /dev/ptmx or devpts.
 */
static int open_tty(const struct ember_agent_exec *e, int fds[2],
		    const char **what)
{
	char name[64];
	int rc;

	*what = "no pseudo-terminals in the guest";
	fds[0] = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fds[0] < 0)
		return errno == ENOENT || errno == ENXIO ? ENODEV : errno;
	*what = "unlockpt";
	if (grantpt(fds[0]) < 0 || unlockpt(fds[0]) < 0)
		return errno;
	*what = "ptsname";
	rc = ptsname_r(fds[0], name, sizeof(name));
	if (rc)
		return rc;
	fds[1] = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fds[1] < 0 && errno == ENOENT) /* a /dev/ptmx, no devpts */
		return ENODEV;
	*what = "open the terminal";
	if (fds[1] < 0)
		return errno;
	if (e->have_size) {
		struct winsize ws = { .ws_row = e->rows, .ws_col = e->cols };

		*what = "TIOCSWINSZ";
		if (ioctl(fds[0], TIOCSWINSZ, &ws) < 0)
			return errno;
	}
	return 0;
}

/*
 * A TTY exec's fds: the master read as its output, a second one written
 * as its stdin, a third for RESIZE (O_NONBLOCK is the description's: all
 * three are non-blocking, which stdin's writer handles).  0 or errno.
 */
static int tty_slot(struct slot *s, int master)
{
	s->in_fd = fcntl(master, F_DUPFD_CLOEXEC, 3);
	s->tty_fd = fcntl(master, F_DUPFD_CLOEXEC, 3);
	if (s->in_fd < 0 || s->tty_fd < 0)
		return errno;
	s->out_fd = master;
	return 0;
}

void agent_exec__start(struct conn *c, const struct ember_agent_hdr *h,
		       const uint8_t *payload)
{
	static struct ember_agent_exec e; /* 4 KiB; the loop is single */
	int out[2] = { -1, -1 }, err[2] = { -1, -1 }, in[2] = { -1, -1 };
	int tty[2] = { -1, -1 };
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
	if (e.flags & EMBER_AGENT_F_TTY) {
		rc = open_tty(&e, tty, &what);
		if (rc == ENODEV)
			agent_conn__send_error(c, h->stream, rc, what);
		else if (rc)
			agent_conn__send_errno(c, h->stream, rc, what);
		if (rc)
			goto fail;
		pid = spawn_child(&e, tty[1], tty[1], tty[1], &what);
	} else if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) ||
		   ((e.flags & EMBER_AGENT_F_STDIN) && pipe2(in, O_CLOEXEC))) {
		agent_conn__send_errno(c, h->stream, errno, "pipe");
		goto fail;
	} else {
		pid = spawn_child(&e, in[0], out[1], err[1], &what);
	}
	if (pid < 0) {
		agent_conn__send_errno(c, h->stream, (int)-pid, what);
		goto fail;
	}
	plan_done();
	setpgid(pid, pid); /* both sides: no race with an early KILL */
	agent_conn__close_fd(&out[1]);
	agent_conn__close_fd(&err[1]);
	agent_conn__close_fd(&in[0]);
	agent_conn__close_fd(&tty[1]);
	s->kind = SLOT_EXEC;
	s->pid = pid;
	s->out_fd = out[0];
	s->err_fd = err[0];
	s->in_fd = in[1];
	if (tty[0] >= 0 && (rc = tty_slot(s, tty[0]))) {
		/* Out of fds: the child cannot be served; it is killed. */
		agent_conn__send_errno(c, h->stream, rc, "dup");
		agent_exec__abandon(s);
		agent_conn__close_fd(&tty[0]);
		s->kind = SLOT_FREE;
		return;
	}
	fcntl(s->out_fd, F_SETFL, O_NONBLOCK);
	fcntl(s->err_fd, F_SETFL, O_NONBLOCK);
	if (e.timeout_ms)
		s->deadline_ms = agent_conn__now_ms() + e.timeout_ms;
	if ((e.flags & EMBER_AGENT_F_KEEP) &&
	    (rc = agent_keep__start(c, s, &e))) {
		/* It cannot be named: not kept, not run. */
		agent_conn__send_errno(c, h->stream, rc, "keep");
		agent_exec__abandon(s);
		s->kind = SLOT_FREE;
	}
	return;
fail:
	plan_done();
	agent_conn__close_fd(&tty[0]);
	agent_conn__close_fd(&tty[1]);
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
			agent_keep__emit(c, s, type, buf, (size_t)n);
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
	agent_conn__close_fd(&s->tty_fd);
	if (s->timed_out)
		ember_agent_exit_encode(p, EMBER_AGENT_TIMEOUT, SIGKILL);
	else if (WIFSIGNALED(s->status))
		ember_agent_exit_encode(p, EMBER_AGENT_SIGNALLED,
					WTERMSIG(s->status));
	else
		ember_agent_exit_encode(p, EMBER_AGENT_EXITED,
					WEXITSTATUS(s->status));
	/* A detached exec's EXIT may wait for an ATTACH (agent_keep.c). */
	if (agent_keep__exit(c, s, p))
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

/*
 * Write @len bytes of @payload to @s's stdin; a failure (the child closed
 * it) closes it.
 */
static void write_stdin(struct conn *c, struct slot *s, const uint8_t *payload,
			size_t len)
{
	size_t off = 0;

	/*
	 * The frame is delivered before the next is read (the protocol has
	 * no stdin flow control), so a child slow to read its stdin stalls
	 * this connection; but timeouts still fire meanwhile (the killed
	 * child's pipe then fails the write) and a host that leaves ends it.
	 */
	fcntl(s->in_fd, F_SETFL, fcntl(s->in_fd, F_GETFL) | O_NONBLOCK);
	while (off < len && s->in_fd >= 0) {
		struct pollfd p[2] = { { .fd = s->in_fd, .events = POLLOUT },
				       { .fd = c->fd, .events = POLLRDHUP } };
		ssize_t n = write(s->in_fd, payload + off, len - off);

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

void agent_exec__stdin(struct conn *c, const struct ember_agent_hdr *h,
		       const uint8_t *payload)
{
	struct slot *s = agent_conn__slot(c, h->stream);

	if (s && s->kind == SLOT_ATTACH) {
		agent_keep__relay(c, s, h, payload);
		return;
	}
	if (!s || s->kind != SLOT_EXEC) {
		agent_conn__send_error(c, h->stream, ESRCH, "no such exec");
		return;
	}
	agent_exec__stdin_slot(c, s, payload, h->len);
}

void agent_exec__stdin_slot(struct conn *c, struct slot *s,
			    const uint8_t *payload, uint32_t len)
{
	struct termios t;
	uint8_t eof = 4; /* ^D */

	if (s->in_fd < 0)
		return; /* no stdin asked for, or already closed: dropped */
	if (len == 0 && s->tty_fd >= 0) {
		/*
		 * A terminal's end of input is its VEOF character (a reader at
		 * the start of a line in canonical mode reads 0 bytes); its
		 * master stays open, closing it would hang the session up.
		 */
		if (tcgetattr(s->tty_fd, &t) == 0 && t.c_cc[VEOF] != 0)
			eof = t.c_cc[VEOF];
		write_stdin(c, s, &eof, 1);
		agent_conn__close_fd(&s->in_fd);
		return;
	}
	if (len == 0) {
		agent_conn__close_fd(&s->in_fd);
		return;
	}
	write_stdin(c, s, payload, len);
}

void agent_exec__resize(struct conn *c, const struct ember_agent_hdr *h,
			const uint8_t *payload)
{
	struct slot *s = agent_conn__slot(c, h->stream);
	struct winsize ws = { 0 };
	int rc;

	rc = ember_agent_winsize_decode(payload, h->len, &ws.ws_row,
					&ws.ws_col);
	if (rc < 0) {
		agent_conn__send_proto_error(c, h->stream, rc);
		return;
	}
	if (s && s->kind == SLOT_ATTACH) {
		agent_keep__relay(c, s, h, payload);
		return;
	}
	if (!s || s->kind != SLOT_EXEC || !s->pid) {
		agent_conn__send_error(c, h->stream, ESRCH, "no such exec");
		return;
	}
	if (s->tty_fd < 0) {
		agent_conn__send_error(c, h->stream, ENOTTY,
				       "the exec has no terminal");
		return;
	}
	/* The kernel signals SIGWINCH to the foreground process group. */
	if (ioctl(s->tty_fd, TIOCSWINSZ, &ws) < 0)
		agent_conn__send_errno(c, h->stream, errno, "TIOCSWINSZ");
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
	if (s && s->kind == SLOT_ATTACH) {
		agent_keep__relay(c, s, h, payload);
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
	if (s->kind == SLOT_EXEC && fd == s->out_fd)
		pump(c, s, &s->out_fd, EMBER_AGENT_STDOUT, EMBER_AGENT_CHUNK);
	else if (s->kind == SLOT_EXEC && fd == s->err_fd)
		pump(c, s, &s->err_fd, EMBER_AGENT_STDERR, EMBER_AGENT_CHUNK);
	else
		agent_keep__ready(c, s, fd);
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
	agent_conn__close_fd(&s->tty_fd);
	agent_keep__release(s);
}
