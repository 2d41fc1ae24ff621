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
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "agent_exec.h"

extern char **environ;

/*
 * Start @e's child: stdin @in (-1: /dev/null), stdout @out, stderr @err,
 * in a process group of its own, every signal unblocked and SIGPIPE at
 * its default.  posix_spawn(), not fork(): its vfork-style clone copies
 * no page tables and takes no copy-on-write faults in the agent, which
 * in a guest whose kernel is emulated (PVM) is a good part of starting
 * a command.  Returns the pid, or a negative errno with *@what naming
 * what failed (the cwd, or the command).
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
	*what = e->cwd;
	if (e->cwd && stat(e->cwd, &st) < 0)
		return -errno;
	if (e->cwd && !S_ISDIR(st.st_mode))
		return -ENOTDIR;
	*what = e->argv[0];
	if (in < 0) {
		nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (nul < 0)
			return -errno;
		in = nul;
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
	if (!rc && e->cwd)
		rc = posix_spawn_file_actions_addchdir_np(&fa, e->cwd);
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
		rc = posix_spawnp(
			&pid, e->argv[0], &fa, &at, (char *const *)e->argv,
			e->env_given ? (char *const *)e->env : environ);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	agent_conn__close_fd(&nul);
	return rc ? -rc : pid;
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
