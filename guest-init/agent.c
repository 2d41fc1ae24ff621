// SPDX-License-Identifier: Apache-2.0
/*
 * ember's guest agent: serves the framed protocol of protocol.h
 * (guest-init/PROTOCOL.md), each connection in a process of its own.
 * This file is the program: its options, the vsock listener and the
 * processes that serve its connections; each connection is served by
 *
 *   agent_serve.c  its poll loop and the dispatch of each request
 *   agent_conn.c   its state, the frames it sends, its streams
 *   agent_exec.c   EXEC, STDIN, KILL, RESIZE: children, output, exits
 *   agent_files.c  WRITE_FILE, FILE_DATA, FILE_END and READ_FILE
 *   agent_init.c   INIT: the random pool and the clock after a restore
 *   agent_keep.c   kept execs (KEEP): their buffers, ATTACH and LIST;
 *                  a connection's process outlives it while it keeps one
 *   agent_fwd.c    FORWARD: the connection spliced to a guest TCP port
 *
 *   ember-agent --vsock PORT   listen on AF_VSOCK PORT, serve every
 *                              connection in its own process
 *   ember-agent --fd N         serve the single connection on fd N (tests)
 *
 * With EMBER_AGENT_INIT_REPORT=FILE in its environment (a test hook for
 * unprivileged hosts) INIT touches neither the clock nor the random pool:
 * it appends what it would do to FILE and answers as if it had done it
 * (agent_init.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#if __has_include(<linux/vm_sockets.h>)
#include <linux/vm_sockets.h>
#else
/* musl-gcc sees no kernel headers: the uapi layout of <linux/vm_sockets.h>. */
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#define VMADDR_CID_ANY (-1U)
struct sockaddr_vm {
	sa_family_t svm_family;
	unsigned short svm_reserved1;
	unsigned int svm_port;
	unsigned int svm_cid;
	unsigned char svm_flags;
	unsigned char svm_zero[3];
};
#endif

#include "agent_ctr.h"
#include "agent_exec.h"
#include "agent_init.h"
#include "agent_serve.h"

static int listen_vsock(unsigned int port)
{
	struct sockaddr_vm sa = {
		.svm_family = AF_VSOCK,
		.svm_cid = VMADDR_CID_ANY,
		.svm_port = port,
	};
	int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 16) < 0) {
		perror("ember-agent: vsock");
		return -1;
	}
	return fd;
}

/*
 * Serve @fd in a grandchild, so that connections run at once (each
 * emberctl command opens its own) and init, not the listener, reaps it.
 * The inherited signalfd reports the grandchild's own SIGCHLDs.
 */
static void serve_detached(int fd, int sig_fd)
{
	pid_t pid = fork();

	if (pid < 0) {
		/* No memory for a process: serve inline. */
		agent_serve__connection(fd, sig_fd);
		return;
	}
	if (pid == 0) {
		if (fork() == 0) {
			agent_serve__connection(fd, sig_fd);
			_exit(0);
		}
		_exit(0);
	}
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/*
 * A spare acceptor: a process forked ahead of time (and detached, so
 * that init reaps it) that waits in accept() on @lfd, tells the listener
 * through @spawn_w that it took a connection (the listener then forks the
 * next spare) and serves it.  The fork is off a connection's path: a
 * restored sandbox's first connection is served by a process that was
 * already there when its template was snapshotted (a fork costs ~100 ms
 * where guest kernel code is emulated).  Returns 0, or -1 when no process
 * could be made (the listener tries again later).
 */
static int spare_acceptor(int lfd, int spawn_w, int sig_fd)
{
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (fork() == 0) {
			for (;;) {
				int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

				if (fd < 0) {
					if (errno != EINTR && errno != EAGAIN)
						sleep(1);
					continue;
				}
				/* The listener gone or not: serve. */
				(void)!write(spawn_w, "a", 1);
				close(lfd);
				close(spawn_w);
				agent_serve__connection(fd, sig_fd);
				_exit(0);
			}
		}
		_exit(0);
	}
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: ember-agent --fd N | --vsock PORT\n");
	return 2;
}

int main(int argc, char **argv)
{
	sigset_t chld;
	int sig_fd;
	long v;
	char *end;

	if (argc >= 2 && !strncmp(argv[1], "ctr-", 4))
		return agent_ctr__main(argc, argv);
	if (argc != 3)
		return usage();
	if (agent_init__from_env() < 0 || agent_exec__from_env() < 0)
		return 1;
	v = strtol(argv[2], &end, 10);
	if (*end || v < 0 || v > INT_MAX)
		return usage();
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	sig_fd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sig_fd < 0) {
		perror("ember-agent: signalfd");
		return 1;
	}
	if (!strcmp(argv[1], "--fd")) {
		agent_serve__connection((int)v, sig_fd);
		close((int)v);
		close(sig_fd);
		return 0;
	}
	if (!strcmp(argv[1], "--vsock")) {
		int lfd = listen_vsock((unsigned int)v), spawn[2];
		int spare = 0;
		char b;

		if (lfd < 0)
			return 1;
		if (pipe2(spawn, O_CLOEXEC) < 0) {
			/* No pipe: a fork per connection, on its path. */
			for (;;) {
				int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

				if (fd < 0) {
					if (errno != EINTR)
						sleep(1);
					continue;
				}
				serve_detached(fd, sig_fd);
				close(fd);
			}
		}
		/* One spare acceptor at all times; a new one per connection. */
		for (;;) {
			if (!spare)
				spare = spare_acceptor(lfd, spawn[1], sig_fd) ==
					0;
			if (!spare) {
				sleep(1);
				continue;
			}
			if (read(spawn[0], &b, 1) == 1)
				spare = 0;
		}
	}
	return usage();
}
