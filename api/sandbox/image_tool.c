// SPDX-License-Identifier: Apache-2.0
/*
 * The image code's tool runner (image_internal.h): skopeo, umoci,
 * mkfs.ext4, debugfs, e2fsck and resize2fs, each in its own process group
 * with its output in the job's log, a time limit and a stop fd; a
 * failure is the tool's last line of output.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "files.h"
#include "image.h"
#include "image_internal.h"

#define TOOL_TIMEOUT_S 600
#define WHY_MAX	       512

/* ---- running a tool ----------------------------------------------------- */

/* The last non-empty line of the file @path into @why. */
static void last_line(const char *path, char *why, size_t whysz)
{
	char buf[4096], *end, *start;
	ssize_t n;
	off_t sz;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	why[0] = '\0';
	if (fd < 0)
		return;
	sz = lseek(fd, 0, SEEK_END);
	n = pread(fd, buf, sizeof(buf) - 1,
		  sz > (off_t)sizeof(buf) - 1 ? sz - (off_t)sizeof(buf) + 1 :
						0);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	end = buf + n;
	while (end > buf && (end[-1] == '\n' || end[-1] == ' '))
		*--end = '\0';
	start = memrchr(buf, '\n', (size_t)(end - buf));
	start = start ? start + 1 : buf;
	/* Go tools log as time=... level=fatal msg="...": keep the msg. */
	if ((end = strstr(start, "msg=\"")) && strlen(end) > 6) {
		start = end + 5;
		if (start[strlen(start) - 1] == '"')
			start[strlen(start) - 1] = '\0';
		/* Its quotes come escaped: \" to ". */
		for (char *r = start, *w = start;; r++) {
			if (r[0] == '\\' && r[1] == '"')
				r++;
			*w++ = *r;
			if (!*r)
				break;
		}
	}
	/* Cut long lines: the stage and file come first in the message. */
	if (whysz) {
		size_t len = strnlen(start, whysz - 1);

		memcpy(why, start, len);
		why[len] = '\0';
	}
}

/* Bytes free for a non-root user on @dir's file system; -1: unknown. */
static int64_t free_bytes(const char *dir)
{
	struct statvfs vfs;

	if (statvfs(dir, &vfs))
		return -1;
	return (int64_t)(vfs.f_bavail * vfs.f_frsize);
}

/*
 * Run @argv with stdin from /dev/null and stdout and stderr to the file
 * @log (its own process group, TMPDIR=@tmp), for at most @timeout_s
 * seconds, or until @stop_fd (>= 0) is readable, or until @watch's file
 * system has under IMAGE_FREE_FLOOR_MIB MiB free (-ENOSPC: a tool
 * filling the host's disk is stopped before it is full).  0 when it
 * exited 0; else -EIO (-ETIMEDOUT, -ECANCELED, -ENOSPC, or fork's errno)
 * with the last line of @log, or how it ended, in @why.  The tool's whole
 * process group is killed on a timeout, a stop or a full disk, so that
 * nothing of it outlives us.
 */
static int tool_run(const char *const *argv, const char *log, const char *tmp,
		    const char *watch, int timeout_s, int stop_fd, char *why,
		    size_t whysz)
{
	int64_t end = clock__mono_ms() + (int64_t)timeout_s * 1000;
	int st = 0, rc = 0;
	pid_t pid, w;

	why[0] = '\0';
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		snprintf(why, whysz, "fork: %s", strerror(-rc));
		return rc;
	}
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY);
		int out = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND,
			       0600);
		sigset_t none;

		setpgid(0, 0);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 ||
		    dup2(out, 2) < 0)
			_exit(126);
		/*
		 * skopeo's blob-info cache: under XDG_DATA_HOME as non-root
		 * (so in @tmp, removed); root's is /var/lib/containers/cache,
		 * which skopeo 1.9 cannot move.
		 */
		if (tmp && (setenv("TMPDIR", tmp, 1) ||
			    setenv("XDG_DATA_HOME", tmp, 1)))
			_exit(126);
		close_range(3, ~0U, 0);
		execvp(argv[0], (char *const *)argv);
		dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	while ((w = waitpid(pid, &st, WNOHANG)) == 0) {
		struct pollfd p = { .fd = stop_fd, .events = POLLIN };
		int64_t left = watch ? free_bytes(watch) : -1;

		if (left >= 0 && left < ((int64_t)IMAGE_FREE_FLOOR_MIB << 20)) {
			killpg(pid, SIGKILL);
			waitpid(pid, &st, 0);
			snprintf(why, whysz,
				 "%s stopped with under %d MiB left free",
				 argv[0], IMAGE_FREE_FLOOR_MIB);
			return -ENOSPC;
		}
		if (clock__mono_ms() > end) {
			killpg(pid, SIGKILL);
			waitpid(pid, &st, 0);
			snprintf(why, whysz, "%s did not end within %d s",
				 argv[0], timeout_s);
			return -ETIMEDOUT;
		}
		/* 20 ms: the tools run for seconds; no SIGCHLD plumbing. */
		if (poll(&p, 1, 20) > 0 && stop_fd >= 0) {
			killpg(pid, SIGKILL);
			waitpid(pid, &st, 0);
			snprintf(why, whysz, "stopped (%s killed)", argv[0]);
			return -ECANCELED;
		}
	}
	if (w < 0)
		return -errno;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	last_line(log, why, whysz);
	if (!why[0] && WIFEXITED(st))
		snprintf(why, whysz, "%s exited with status %d", argv[0],
			 WEXITSTATUS(st));
	else if (!why[0])
		snprintf(why, whysz, "%s was killed by signal %d", argv[0],
			 WTERMSIG(st));
	return -EIO;
}

/* ---- the job's steps ---------------------------------------------------- */

int image__step(struct image_job *j, const char *stage, const char *const *argv)
{
	char why[WHY_MAX];
	int rc =
		tool_run(argv, j->log, j->tmp, j->work,
			 j->o->timeout_s > 0 ? j->o->timeout_s : TOOL_TIMEOUT_S,
			 j->o->stop_fd, why, sizeof(why));

	struct statvfs vfs;

	if (!rc)
		return 0;
	/* A full work dir also swallows the tool's own log: say so. */
	if (rc == -ENOSPC || (statvfs(j->work, &vfs) == 0 && vfs.f_bavail == 0))
		return sandbox__errf(j->err, j->errlen, -ENOSPC,
				     "%s: no space left in %s (%s)", stage,
				     j->work, why);
	return sandbox__errf(j->err, j->errlen, rc, "%s: %s", stage, why);
}

int image__debugfs(struct image_job *j, const char *stage, const char *script,
		   const char *disk)
{
	const char *argv[] = { "debugfs", "-w", "-f", script, disk, NULL };
	char *line = NULL;
	size_t cap = 0;
	FILE *f;
	int rc;

	rc = image__step(j, stage, argv);
	if (rc)
		return rc;
	f = fopen(j->log, "re");
	if (!f)
		return sandbox__errf(j->err, j->errlen, -errno, "%s: %s",
				     j->log, strerror(errno));
	while (getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = '\0';
		/* Its banner, its echo, and "Allocated inode: N". */
		if (strncmp(line, "debugfs", 7) && line[0] &&
		    strncmp(line, "Allocated inode: ", 17)) {
			rc = sandbox__errf(j->err, j->errlen, -EIO,
					   "%s: %.300s", stage, line);
			break;
		}
	}
	free(line);
	fclose(f);
	return rc;
}
