// SPDX-License-Identifier: Apache-2.0
/*
 * ember-jailer's main: the jailer's steps in Firecracker's order
 * (docs/jailer.md, "Jailer Operation"; see jailer.h), each failure one
 * line naming the step and its errno, what was made removed again; and
 * --cleanup, which removes a jail after its ember has gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../vmm/pvm/pvm.h"
#include "jailer.h"

#define JAILER_VERSION "0.1.0"

struct jail {
	struct jail_args a;
	struct jail_libs libs; /* the exec file's loader and libraries */
	struct jail_chroot c;
	struct jail_cgroups cg;
	int netns_fd; /* --netns, opened while the host's / is visible */
	int null_fd; /* /dev/null for --daemonize, likewise */
	int status_fd; /* --new-pid-ns child: tells the parent it failed */
};

/* Firecracker's jailer closes every fd but 0-2 it was started with. */
static void close_inherited(void)
{
	struct rlimit r;
	unsigned int fd;

	if (!close_range(3, ~0U, 0))
		return;
	/* Kernels before 5.9. */
	if (getrlimit(RLIMIT_NOFILE, &r) || r.rlim_cur > 1U << 20)
		r.rlim_cur = 1U << 20;
	for (fd = 3; fd < r.rlim_cur; fd++)
		close((int)fd);
}

/* The command that removes what is left of @j's jail. */
static void print_cleanup(const struct jail *j, const char *what)
{
	const struct jail_args *a = &j->a;

	fprintf(stderr,
		"ember-jailer: %s: remove it with ember-jailer --cleanup "
		"--id %s --exec-file %s --chroot-base-dir %s "
		"--parent-cgroup %s --cgroup-version %d\n",
		what, a->id, a->exec_name, a->chroot_base, a->parent_cgroup,
		j->cg.version ? j->cg.version : jail_cgroup__default_version());
}

/* Remove what this jailer made; says so when something is left. */
static void undo(struct jail *j)
{
	int r1 = jail_cgroup__undo(&j->cg), r2 = jail_chroot__undo(&j->c);

	if (r1 || r2)
		print_cleanup(j, "the jail is left in part");
}

static int daemonize(struct jail *j, struct jail_err *e)
{
	int fd;

	/* Fails in a process group leader (docs/jailer.md says so too). */
	if (setsid() < 0)
		return jail_err__set(e, errno, NULL, "daemonize: setsid");
	for (fd = 0; fd <= 2; fd++)
		if (dup2(j->null_fd, fd) < 0)
			return jail_err__set(e, errno, NULL,
					     "daemonize: /dev/null as fd %d",
					     fd);
	return 0;
}

static int write_pid_file(const struct jail_args *a, pid_t pid,
			  struct jail_err *e)
{
	char path[JAIL_NAME_MAX + 8], buf[16];
	int fd, n, err;

	snprintf(path, sizeof(path), "/%s.pid", a->exec_name);
	n = snprintf(buf, sizeof(buf), "%d", (int)pid);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0644);
	if (fd < 0)
		return jail_err__set(e, errno, NULL, "write %s in the chroot",
				     path);
	errno = 0;
	err = write(fd, buf, (size_t)n) == n ? 0 : errno ? errno : EIO;
	if (close(fd) && !err)
		err = errno;
	if (err)
		return jail_err__set(e, err, NULL, "write %s in the chroot",
				     path);
	return 0;
}

/*
 * --new-pid-ns: fork into a new PID namespace, whose pid 1 (the child)
 * goes on to exec ember.  The parent writes the child's pid (as the host
 * sees it) to /<exec-name>.pid, waits until the child has exec'd (its end
 * of a close-on-exec pipe closes) or failed (it writes a byte first), and
 * exits: 0 once ember runs, 1 after undoing the jail.  Returns 0 in the
 * child, -errno when there is no child.
 */
static int enter_pid_ns(struct jail *j, struct jail_err *e)
{
	int p[2], ret;
	pid_t pid;
	ssize_t n;
	char c;

	if (pipe2(p, O_CLOEXEC))
		return jail_err__set(e, errno, NULL, "pipe");
	if (unshare(CLONE_NEWPID)) {
		ret = jail_err__set(e, errno, NULL,
				    "unshare the PID namespace");
		goto fail;
	}
	pid = fork();
	if (pid < 0) {
		ret = jail_err__set(e, errno, NULL,
				    "fork into the new PID namespace");
		goto fail;
	}
	if (pid == 0) {
		close(p[0]);
		j->status_fd = p[1];
		return 0;
	}
	close(p[1]);
	ret = write_pid_file(&j->a, pid, e);
	if (!ret) {
		char name[JAIL_NAME_MAX + 8];

		snprintf(name, sizeof(name), "%s.pid", j->a.exec_name);
		jail_chroot__note_made(&j->c, name);
	}
	if (ret)
		kill(pid, SIGKILL);
	do {
		n = read(p[0], &c, 1);
	} while (n < 0 && errno == EINTR);
	if (!ret && n == 0)
		exit(0);
	if (ret)
		jail_err__print(e);
	waitpid(pid, NULL, 0);
	undo(j);
	exit(JAIL_EXIT_FAIL);
fail:
	close(p[0]);
	close(p[1]);
	return ret;
}

/*
 * [exec-name, "--id", id, the arguments after "--", NULL], and "--pvm on"
 * after them on a PVM host when they say nothing of it: ember detects PVM
 * from /sys/module/kvm_pvm, which the jail does not have, and Firecracker's
 * callers (Kata) pass only Firecracker's flags.  Read here, before the
 * chroot.
 */
static char **exec_argv(const struct jail_args *a)
{
	char **v = calloc((size_t)a->ember_argc + 6, sizeof(*v));
	bool pvm_said = false;
	int i;

	if (!v)
		return NULL;
	v[0] = (char *)a->exec_name;
	v[1] = (char *)"--id";
	v[2] = (char *)a->id;
	for (i = 0; i < a->ember_argc; i++) {
		v[3 + i] = a->ember_argv[i];
		if (!strncmp(a->ember_argv[i], "--pvm", 5))
			pvm_said = true;
	}
	if (!pvm_said && pvm__detect()) {
		v[3 + i] = (char *)"--pvm";
		v[4 + i] = (char *)"on";
	}
	return v;
}

/* The steps; returns only on failure (exit status), after undoing. */
static int run(struct jail *j)
{
	static char *const no_env[] = { NULL };
	const struct jail_args *a = &j->a;
	char exec_path[JAIL_NAME_MAX + 2];
	bool dropped = false;
	struct jail_err e;
	char **argv;

	argv = exec_argv(a);
	if (!argv) {
		jail_err__set(&e, ENOMEM, NULL, "exec arguments");
		jail_err__print(&e);
		return JAIL_EXIT_FAIL;
	}
	snprintf(exec_path, sizeof(exec_path), "/%s", a->exec_name);
	jail_chroot__init(&j->c);
	if (a->netns) {
		j->netns_fd = open(a->netns, O_RDONLY | O_CLOEXEC);
		if (j->netns_fd < 0) {
			jail_err__set(&e, errno, NULL, "open --netns %s",
				      a->netns);
			goto fail;
		}
	}
	if (a->daemonize) {
		j->null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (j->null_fd < 0) {
			jail_err__set(&e, errno, NULL, "open /dev/null");
			goto fail;
		}
	}
	/* Before anything is made: a missing library makes nothing. */
	if (jail_libs__resolve(&j->libs, a, &e) ||
	    jail_chroot__create(&j->c, a, &e) ||
	    jail_cgroup__setup(&j->cg, a, &e) ||
	    jail_cgroup__join(&j->cg, &e) || jail_privs__drop_bounding(a, &e) ||
	    jail_chroot__enter(&j->c, a, &j->libs, &e) ||
	    jail_chroot__make_devices(&j->c, a, &e))
		goto fail;
	if (j->netns_fd >= 0 && setns(j->netns_fd, CLONE_NEWNET)) {
		jail_err__set(&e, errno, NULL, "join network namespace %s",
			      a->netns);
		goto fail;
	}
	if (jail_privs__set_rlimits(a, &e))
		goto fail;
	if (chown("/", a->uid, a->gid)) {
		jail_err__set(&e, errno, NULL, "chown chroot %s to %u:%u",
			      j->c.path, (unsigned int)a->uid,
			      (unsigned int)a->gid);
		goto fail;
	}
	/* Found now, while the jail can still be undone (a noexec mount). */
	if (access(exec_path, X_OK)) {
		jail_err__set(&e, errno, NULL, "exec %s%s", j->c.path,
			      exec_path);
		goto fail;
	}
	if (j->libs.n && access(j->libs.path[0], R_OK)) {
		jail_err__set(&e, errno,
			      "the jail lacks it: give its directory with "
			      "--ro-bind DIR",
			      "exec %s%s: its ELF interpreter (loader) %s",
			      j->c.path, exec_path, j->libs.path[0]);
		goto fail;
	}
	if ((a->daemonize && daemonize(j, &e)) ||
	    (a->new_pid_ns && enter_pid_ns(j, &e)) ||
	    jail_privs__drop(a, &dropped, &e))
		goto fail;
	execve(exec_path, argv, no_env);
	jail_err__set(&e, errno, NULL, "exec %s%s", j->c.path, exec_path);
fail:
	jail_err__print(&e);
	free(argv);
	if (j->status_fd >= 0) {
		/* The --new-pid-ns child: its parent undoes the jail. */
		ssize_t n = write(j->status_fd, "F", 1);

		(void)n; /* nothing more to do if even that fails */
		_exit(JAIL_EXIT_FAIL);
	}
	if (dropped)
		print_cleanup(j, "privileges are gone, the jail is left");
	else
		undo(j);
	return JAIL_EXIT_FAIL;
}

/*
 * --cleanup: refused while a process runs in the chroot or the cgroups;
 * then the cgroups, then the chroot's tree.
 */
static int cleanup(const struct jail_args *a)
{
	char dir[PATH_MAX], root[JAIL_ID_MAX + 8];
	bool found = false;
	struct jail_err e;
	struct stat st;
	int fd, rfd, ret;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s%s%s", a->chroot_base,
		 a->chroot_base[strlen(a->chroot_base) - 1] == '/' ? "" : "/",
		 a->exec_name);
	snprintf(root, sizeof(root), "%s/root", a->id);
	fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno != ENOENT) {
		ret = jail_err__set(&e, errno, NULL, "open %s", dir);
		goto fail;
	}
	rfd = fd < 0 ? -1 :
		       openat(fd, root,
			      O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	pid = rfd < 0 ? 0 : jail_chroot__user(rfd);
	if (rfd >= 0)
		close(rfd);
	if (pid) {
		ret = jail_err__set(&e, EBUSY, "a process still runs in it",
				    "remove %s/%s (pid %d)", dir, a->id,
				    (int)pid);
		goto fail;
	}
	ret = jail_cgroup__remove(a,
				  a->cgroup_version ?
					  a->cgroup_version :
					  jail_cgroup__default_version(),
				  &found, &e);
	if (ret)
		goto fail;
	if (fd >= 0 && !fstatat(fd, a->id, &st, AT_SYMLINK_NOFOLLOW)) {
		found = true;
		ret = jail_chroot__remove_tree(fd, a->id, dir, &e);
	}
	if (!ret && !found)
		ret = jail_err__set(&e, ENOENT,
				    "no such jail (no chroot, no cgroup)",
				    "cleanup %s/%s", dir, a->id);
fail:
	if (fd >= 0)
		close(fd);
	if (!ret)
		return 0;
	jail_err__print(&e);
	return JAIL_EXIT_FAIL;
}

int main(int argc, char **argv)
{
	struct jail_err e;
	struct jail *j;
	int ret;

	j = calloc(1, sizeof(*j));
	if (!j) {
		fputs("ember-jailer: out of memory\n", stderr);
		return JAIL_EXIT_FAIL;
	}
	j->netns_fd = j->null_fd = j->status_fd = -1;
	if (jail_args__parse(&j->a, argc, argv, &e)) {
		jail_err__print(&e);
		free(j);
		return JAIL_EXIT_USAGE;
	}
	if (j->a.mode == JAIL_HELP || j->a.mode == JAIL_VERSION) {
		if (j->a.mode == JAIL_HELP)
			fputs(jail_args__usage(), stdout);
		else
			printf("ember-jailer %s\n", JAILER_VERSION);
		free(j);
		return 0;
	}
	close_inherited();
	if (clearenv()) {
		fputs("ember-jailer: clear the environment: failed\n", stderr);
		free(j);
		return JAIL_EXIT_FAIL;
	}
	umask(022);
	ret = j->a.mode == JAIL_CLEANUP ? cleanup(&j->a) : run(j);
	free(j);
	return ret;
}
