// SPDX-License-Identifier: Apache-2.0
/*
 * ember's guest agent: serves the framed protocol of protocol.h
 * (guest-init/PROTOCOL.md), each connection in a process of its own.
 *
 *   ember-agent --vsock PORT   listen on AF_VSOCK PORT, serve every
 *                              connection in its own process
 *   ember-agent --fd N         serve the single connection on fd N (tests)
 *
 * With EMBER_AGENT_INIT_REPORT=FILE in its environment (a test hook for
 * unprivileged hosts) INIT touches neither the clock nor the random pool:
 * it appends what it would do to FILE and answers as if it had done it.
 *
 * One poll(2) loop multiplexes the connection, every running child's
 * stdout and stderr pipes and a signalfd for SIGCHLD.  A malformed frame
 * whose header is sound gets an ERROR frame on its stream and the
 * connection goes on; a bad header (magic, version, length over the
 * maximum) means the byte stream is desynchronised: one ERROR frame on
 * stream 0, then the connection is closed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

#if __has_include(<linux/random.h>)
#include <linux/random.h>
#else
/* musl-gcc sees no kernel headers: the uapi of <linux/random.h>. */
struct rand_pool_info {
	int entropy_count; /* bits credited */
	int buf_size; /* bytes in buf */
	uint32_t buf[];
};
#define RNDADDENTROPY _IOW('R', 0x03, int[2])
#endif
#ifndef RNDRESEEDCRNG
#define RNDRESEEDCRNG _IO('R', 0x07) /* Linux 4.17 */
#endif

#include "protocol.h"

extern char **environ;

/*
 * EMBER_AGENT_INIT_REPORT, read once by main(): where INIT reports instead
 * of acting (NULL: act).  Global as the environment it comes from is.
 */
static const char *init_report;

enum slot_kind { SLOT_FREE, SLOT_EXEC, SLOT_WRITE };

/* One stream: a running exec or a file being written. */
struct slot {
	enum slot_kind kind;
	uint32_t stream;
	/* SLOT_EXEC */
	pid_t pid; /* 0 once reaped */
	int out_fd; /* -1 once closed */
	int err_fd;
	int in_fd; /* -1: no stdin or closed */
	int status;
	int timed_out;
	int64_t deadline_ms; /* 0: none */
	/* SLOT_WRITE */
	int file_fd; /* -1 after an error */
	int file_err;
	char file_msg[160]; /* what failed, for file_err; "" for "write file" */
	uint64_t file_bytes;
	/* a regular file is written here and renamed at FILE_END; else NULL */
	char *tmp_path, *final_path;
};

struct conn {
	int fd;
	int sig_fd;
	int dead; /* write failed, EOF or desynchronised */
	int desync; /* a bad header: ERROR sent, closing */
	uint8_t *rx;
	size_t rx_have;
	uint8_t *tx;
	struct slot slots[EMBER_AGENT_MAX_EXECS];
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Write all of @buf to the (non-blocking) connection. */
static int conn_write(struct conn *c, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len && !c->dead) {
		ssize_t n = write(c->fd, p, len);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
		} else if (n < 0 && errno == EAGAIN) {
			struct pollfd pfd = { .fd = c->fd, .events = POLLOUT };

			poll(&pfd, 1, -1);
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else {
			c->dead = 1;
		}
	}
	return c->dead ? -1 : 0;
}

static void send_frame(struct conn *c, uint16_t type, uint32_t stream,
		       const void *payload, size_t len)
{
	uint8_t hdr[EMBER_AGENT_HDR_SIZE];

	ember_agent_hdr_encode(hdr, type, stream, (uint32_t)len);
	if (conn_write(c, hdr, sizeof(hdr)) == 0 && len)
		conn_write(c, payload, len);
}

static void send_error(struct conn *c, uint32_t stream, int err,
		       const char *msg)
{
	uint8_t buf[256];
	long n = ember_agent_error_encode(buf, sizeof(buf), (uint32_t)err, msg);

	send_frame(c, EMBER_AGENT_ERROR, stream, buf, (size_t)n);
}

static void send_proto_error(struct conn *c, uint32_t stream, int rc)
{
	send_error(c, stream, EPROTO, ember_agent_strerror(rc));
}

static void send_errno(struct conn *c, uint32_t stream, int err,
		       const char *what)
{
	char msg[200];

	snprintf(msg, sizeof(msg), "%s: %s", what, strerror(err));
	send_error(c, stream, err, msg);
}

static struct slot *slot_find(struct conn *c, uint32_t stream)
{
	for (int i = 0; i < EMBER_AGENT_MAX_EXECS; i++)
		if (c->slots[i].kind != SLOT_FREE &&
		    c->slots[i].stream == stream)
			return &c->slots[i];
	return NULL;
}

static struct slot *slot_new(struct conn *c, uint32_t stream)
{
	for (int i = 0; i < EMBER_AGENT_MAX_EXECS; i++) {
		struct slot *s = &c->slots[i];

		if (s->kind == SLOT_FREE) {
			memset(s, 0, sizeof(*s));
			s->stream = stream;
			s->out_fd = s->err_fd = s->in_fd = s->file_fd = -1;
			return s;
		}
	}
	return NULL;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* ---- exec ------------------------------------------------------------ */

/*
 * A new stream for an EXEC or WRITE_FILE request, or NULL after answering
 * ERROR (the id is in use, or every slot is).
 */
static struct slot *slot_open(struct conn *c, uint32_t stream)
{
	struct slot *s;

	if (slot_find(c, stream)) {
		send_error(c, stream, EBUSY, "stream id in use");
		return NULL;
	}
	s = slot_new(c, stream);
	if (!s)
		send_error(c, stream, EAGAIN, "too many streams");
	return s;
}

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
		close_fd(&nul);
		return -rc;
	}
	rc = posix_spawnattr_init(&at);
	if (rc) {
		posix_spawn_file_actions_destroy(&fa);
		close_fd(&nul);
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
	close_fd(&nul);
	return rc ? -rc : pid;
}

static void do_exec(struct conn *c, const struct ember_agent_hdr *h,
		    const uint8_t *payload)
{
	static struct ember_agent_exec e; /* 4 KiB; the loop is single */
	int out[2] = { -1, -1 }, err[2] = { -1, -1 }, in[2] = { -1, -1 };
	const char *what;
	struct slot *s;
	pid_t pid;
	int rc;

	rc = ember_agent_exec_decode(payload, h->len, &e);
	if (rc < 0) {
		send_proto_error(c, h->stream, rc);
		return;
	}
	s = slot_open(c, h->stream);
	if (!s)
		return;
	if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) ||
	    ((e.flags & EMBER_AGENT_F_STDIN) && pipe2(in, O_CLOEXEC))) {
		send_errno(c, h->stream, errno, "pipe");
		goto fail;
	}
	pid = spawn_child(&e, in[0], out[1], err[1], &what);
	if (pid < 0) {
		send_errno(c, h->stream, (int)-pid, what);
		goto fail;
	}
	setpgid(pid, pid); /* both sides: no race with an early KILL */
	close_fd(&out[1]);
	close_fd(&err[1]);
	close_fd(&in[0]);
	s->kind = SLOT_EXEC;
	s->pid = pid;
	s->out_fd = out[0];
	s->err_fd = err[0];
	s->in_fd = in[1];
	fcntl(s->out_fd, F_SETFL, O_NONBLOCK);
	fcntl(s->err_fd, F_SETFL, O_NONBLOCK);
	if (e.timeout_ms)
		s->deadline_ms = now_ms() + e.timeout_ms;
	return;
fail:
	close_fd(&out[0]);
	close_fd(&out[1]);
	close_fd(&err[0]);
	close_fd(&err[1]);
	close_fd(&in[0]);
	close_fd(&in[1]);
}

/* Forward what is readable on *@fd; close it at EOF or error. */
/*
 * Forward at most @limit bytes of a child's output: a child that writes
 * faster than the host reads must not keep the agent from its poll loop
 * (connection input, KILL, timeouts).
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
			send_frame(c, type, s->stream, buf, (size_t)n);
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		close_fd(fd);
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
	close_fd(&s->out_fd);
	close_fd(&s->err_fd);
	close_fd(&s->in_fd);
	if (s->timed_out)
		ember_agent_exit_encode(p, EMBER_AGENT_TIMEOUT, SIGKILL);
	else if (WIFSIGNALED(s->status))
		ember_agent_exit_encode(p, EMBER_AGENT_SIGNALLED,
					WTERMSIG(s->status));
	else
		ember_agent_exit_encode(p, EMBER_AGENT_EXITED,
					WEXITSTATUS(s->status));
	send_frame(c, EMBER_AGENT_EXIT, s->stream, p, sizeof(p));
	s->kind = SLOT_FREE;
}

static void reap(struct conn *c)
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

static void conn_timeouts(struct conn *c, int64_t now);

static void do_stdin(struct conn *c, const struct ember_agent_hdr *h,
		     const uint8_t *payload)
{
	struct slot *s = slot_find(c, h->stream);
	size_t off = 0;

	if (!s || s->kind != SLOT_EXEC) {
		send_error(c, h->stream, ESRCH, "no such exec");
		return;
	}
	if (s->in_fd < 0)
		return; /* no stdin asked for, or already closed: dropped */
	if (h->len == 0) {
		close_fd(&s->in_fd);
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
			conn_timeouts(c, now_ms());
			if (!(p[1].revents & (POLLHUP | POLLERR)))
				continue;
		}
		close_fd(&s->in_fd); /* EPIPE: the child closed it */
		return;
	}
}

static void do_kill(struct conn *c, const struct ember_agent_hdr *h,
		    const uint8_t *payload)
{
	struct slot *s = slot_find(c, h->stream);
	int sig, rc;

	rc = ember_agent_kill_decode(payload, h->len, &sig);
	if (rc < 0) {
		send_proto_error(c, h->stream, rc);
		return;
	}
	if (!s || s->kind != SLOT_EXEC || !s->pid) {
		send_error(c, h->stream, ESRCH, "no such exec");
		return;
	}
	if (kill(-s->pid, sig) < 0)
		send_errno(c, h->stream, errno, "kill");
}

/* ---- files ------------------------------------------------------------ */

/*
 * open(2) that cannot hang the connection on a FIFO: no writer (read)
 * gives an empty file, no reader (write) ENXIO.  Blocking I/O after.
 * Returns the fd or -errno.
 */
static int open_file(const char *path, int flags, mode_t mode)
{
	int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC, mode);

	if (fd < 0)
		return -errno;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

/*
 * A regular file (or a new one) is written to a temporary file beside
 * it and renamed over it at FILE_END, so a copy that fails or is cut
 * off leaves the old file as it was; a symbolic link is written through.
 * Devices and FIFOs are written in place.  Returns the fd or -errno.
 */
static int write_file_open(struct slot *s, const char *path, mode_t mode)
{
	char *real = realpath(path, NULL), *slash, *tmp;
	const char *target = real ? real : path;
	struct stat st;
	int fd;

	if (stat(target, &st) == 0 && !S_ISREG(st.st_mode)) {
		free(real);
		snprintf(s->file_msg, sizeof(s->file_msg), "cannot open it");
		return open_file(path, O_WRONLY | O_TRUNC, 0);
	}
	tmp = malloc(strlen(target) + 32);
	if (!tmp) {
		free(real);
		return -ENOMEM;
	}
	slash = strrchr(target, '/');
	if (slash)
		sprintf(tmp, "%.*s/.%s.ember-XXXXXX", (int)(slash - target),
			target, slash + 1);
	else
		sprintf(tmp, ".%s.ember-XXXXXX", target);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		fd = -errno;
		/*
		 * /proc and the like take no new files: say that it is the
		 * temporary copy that failed, not the file named.
		 */
		snprintf(s->file_msg, sizeof(s->file_msg),
			 "cannot create a file in %.*s, where the copy is "
			 "written before it replaces the old one",
			 slash && slash > target ? (int)(slash - target) : 1,
			 !slash		? "." :
			 slash > target ? target :
					  "/");
		free(tmp);
		free(real);
		return fd;
	}
	fchmod(fd, mode); /* past the umask */
	s->tmp_path = tmp;
	s->final_path = real ? real : strdup(path);
	if (!s->final_path) {
		close(fd);
		unlink(tmp);
		free(tmp);
		s->tmp_path = NULL;
		return -ENOMEM;
	}
	return fd;
}

/* Forget @s's temporary file: renamed already, or unlinked now. */
static void write_file_drop(struct slot *s)
{
	if (s->tmp_path)
		unlink(s->tmp_path);
	free(s->tmp_path);
	free(s->final_path);
	s->tmp_path = s->final_path = NULL;
}

static void do_write_file(struct conn *c, const struct ember_agent_hdr *h,
			  const uint8_t *payload)
{
	struct ember_agent_file f;
	struct slot *s;
	int rc;

	rc = ember_agent_file_decode(payload, h->len, 1, &f);
	if (rc < 0) {
		send_proto_error(c, h->stream, rc);
		return;
	}
	s = slot_open(c, h->stream);
	if (!s)
		return;
	s->kind = SLOT_WRITE;
	s->tmp_path = s->final_path = NULL;
	s->file_msg[0] = '\0';
	s->file_fd = write_file_open(s, f.path, f.mode);
	if (s->file_fd < 0)
		s->file_err = -s->file_fd;
}

static void do_file_data(struct conn *c, const struct ember_agent_hdr *h,
			 const uint8_t *payload)
{
	struct slot *s = slot_find(c, h->stream);
	size_t off = 0;

	if (!s || s->kind != SLOT_WRITE) {
		send_error(c, h->stream, ESRCH, "no such file transfer");
		return;
	}
	if (s->file_err)
		return;
	if (s->file_bytes + h->len > EMBER_AGENT_MAX_FILE) {
		s->file_err = EFBIG;
		snprintf(s->file_msg, sizeof(s->file_msg), "writing");
		return;
	}
	s->file_bytes += h->len;
	while (off < h->len) {
		ssize_t n = write(s->file_fd, payload + off, h->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			s->file_err = n < 0 ? errno : EIO;
			snprintf(s->file_msg, sizeof(s->file_msg), "writing");
			return;
		}
		off += (size_t)n;
	}
}

static void do_file_end(struct conn *c, const struct ember_agent_hdr *h)
{
	struct slot *s = slot_find(c, h->stream);

	if (!s || s->kind != SLOT_WRITE) {
		send_error(c, h->stream, ESRCH, "no such file transfer");
		return;
	}
	if (h->len)
		s->file_err = s->file_err ? s->file_err : EPROTO;
	if (s->file_fd >= 0 && close(s->file_fd) < 0 && !s->file_err) {
		s->file_err = errno;
		snprintf(s->file_msg, sizeof(s->file_msg), "writing");
	}
	s->file_fd = -1;
	if (!s->file_err && s->tmp_path &&
	    rename(s->tmp_path, s->final_path) < 0) {
		s->file_err = errno;
		snprintf(s->file_msg, sizeof(s->file_msg),
			 "cannot replace it with the copy");
	}
	if (!s->file_err) {
		free(s->tmp_path); /* renamed: nothing to unlink */
		s->tmp_path = NULL;
	}
	write_file_drop(s);
	if (s->file_err)
		send_errno(c, h->stream, s->file_err,
			   s->file_msg[0] ? s->file_msg : "write file");
	else
		send_frame(c, EMBER_AGENT_OK, h->stream, NULL, 0);
	s->kind = SLOT_FREE;
}

static void do_read_file(struct conn *c, const struct ember_agent_hdr *h,
			 const uint8_t *payload)
{
	struct ember_agent_file f;
	struct stat st;
	uint64_t total = 0;
	int fd, rc;

	rc = ember_agent_file_decode(payload, h->len, 0, &f);
	if (rc < 0) {
		send_proto_error(c, h->stream, rc);
		return;
	}
	fd = open_file(f.path, O_RDONLY, 0);
	if (fd < 0) {
		send_errno(c, h->stream, -fd, f.path);
		return;
	}
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		send_errno(c, h->stream, EISDIR, f.path);
		close(fd);
		return;
	}
	/* A tty blocks and a device may never end: files only. */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		send_error(c, h->stream, EINVAL, "not a regular file");
		close(fd);
		return;
	}
	/* Read into the tx buffer: the rx buffer still holds the path. */
	for (;;) {
		ssize_t n = read(fd, c->tx, EMBER_AGENT_CHUNK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			send_errno(c, h->stream, errno, f.path);
			break;
		}
		if (n == 0) {
			send_frame(c, EMBER_AGENT_FILE_END, h->stream, NULL, 0);
			break;
		}
		total += (uint64_t)n;
		if (total > EMBER_AGENT_MAX_FILE) {
			send_errno(c, h->stream, EFBIG, f.path);
			break;
		}
		send_frame(c, EMBER_AGENT_FILE_DATA, h->stream, c->tx,
			   (size_t)n);
	}
	close(fd);
}

/* ---- init after a restore --------------------------------------------- */

/*
 * Is the clock @now further than EMBER_AGENT_CLOCK_SLACK_NS from @sec.@nsec
 * (the host's time)?
 */
static int clock_off(const struct timespec *now, uint64_t sec, uint32_t nsec)
{
	int64_t ds, ns;

	if (__builtin_sub_overflow((int64_t)now->tv_sec, (int64_t)sec, &ds) ||
	    ds > 1 || ds < -1)
		return 1;
	ns = ds * 1000000000LL + ((int64_t)now->tv_nsec - (int64_t)nsec);
	return ns > EMBER_AGENT_CLOCK_SLACK_NS ||
	       ns < -EMBER_AGENT_CLOCK_SLACK_NS;
}

/*
 * Mix @len bytes into the kernel's input pool, credited in full (the host
 * is trusted with the guest's memory anyway), then make the kernel rekey
 * its generator from the pool now, not at its next scheduled reseed: a
 * guest restored from a snapshot shares that state with every other clone.
 * Returns 0 or an errno, *@what naming the failed step.
 */
static int init_entropy(const uint8_t *buf, uint32_t len, const char **what)
{
	uint32_t raw[2 + EMBER_AGENT_MAX_ENTROPY / 4];
	struct rand_pool_info *rpi = (struct rand_pool_info *)raw;
	int fd, err = 0;

	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*what = "/dev/urandom";
		return errno;
	}
	rpi->entropy_count = (int)len * 8;
	rpi->buf_size = (int)len;
	memcpy(rpi->buf, buf, len);
	if (ioctl(fd, RNDADDENTROPY, rpi) < 0) {
		err = errno;
		*what = "RNDADDENTROPY";
	} else if (ioctl(fd, RNDRESEEDCRNG) < 0) {
		err = errno;
		*what = "RNDRESEEDCRNG";
	}
	explicit_bzero(raw, sizeof(raw));
	close(fd);
	return err;
}

/* The test hook: append what INIT would do to init_report. */
static int init_write_report(const struct ember_agent_init *in, int step)
{
	char hex[2 * EMBER_AGENT_MAX_ENTROPY + 2] = "-";
	int fd, n, err = 0;

	for (uint32_t i = 0; i < in->entropy_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", in->entropy[i]);
	fd = open(init_report, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno;
	if (in->have_time)
		n = dprintf(fd, "init time=%llu.%09u step=%d entropy=%s\n",
			    (unsigned long long)in->sec, in->nsec, step, hex);
	else
		n = dprintf(fd, "init time=- step=0 entropy=%s\n", hex);
	if (n < 0)
		err = errno ? errno : EIO;
	if (close(fd) < 0 && !err)
		err = errno;
	return err;
}

/*
 * INIT: fresh entropy into the pool and a reseed, then the wall clock.
 * Every step is tried; the reply is OK or the first failure.  Repeating
 * it is harmless.  The payload (entropy) is wiped once used.
 */
static void do_init(struct conn *c, const struct ember_agent_hdr *h)
{
	uint8_t *payload = c->rx + EMBER_AGENT_HDR_SIZE;
	const char *what = NULL;
	struct ember_agent_init in;
	struct timespec now;
	int rc, err = 0, step = 0;

	rc = ember_agent_init_decode(payload, h->len, &in);
	if (rc < 0) {
		explicit_bzero(payload, h->len);
		send_proto_error(c, h->stream, rc);
		return;
	}
	if (in.have_time) {
		clock_gettime(CLOCK_REALTIME, &now);
		step = clock_off(&now, in.sec, in.nsec);
	}
	if (init_report) {
		err = init_write_report(&in, step);
		what = "init report";
	} else {
		if (in.entropy)
			err = init_entropy(in.entropy, in.entropy_len, &what);
		if (step) {
			struct timespec ts = { .tv_sec = (time_t)in.sec,
					       .tv_nsec = (long)in.nsec };

			if (clock_settime(CLOCK_REALTIME, &ts) < 0 && !err) {
				err = errno;
				what = "clock_settime";
			}
		}
	}
	explicit_bzero(payload, h->len);
	if (err)
		send_errno(c, h->stream, err, what);
	else
		send_frame(c, EMBER_AGENT_OK, h->stream, NULL, 0);
}

/* ---- frames ------------------------------------------------------------ */

static void dispatch(struct conn *c, const struct ember_agent_hdr *h,
		     const uint8_t *payload)
{
	switch (h->type) {
	case EMBER_AGENT_PING:
		send_frame(c, EMBER_AGENT_PONG, h->stream, payload, h->len);
		break;
	case EMBER_AGENT_EXEC:
		do_exec(c, h, payload);
		break;
	case EMBER_AGENT_STDIN:
		do_stdin(c, h, payload);
		break;
	case EMBER_AGENT_KILL:
		do_kill(c, h, payload);
		break;
	case EMBER_AGENT_WRITE_FILE:
		do_write_file(c, h, payload);
		break;
	case EMBER_AGENT_FILE_DATA:
		do_file_data(c, h, payload);
		break;
	case EMBER_AGENT_FILE_END:
		do_file_end(c, h);
		break;
	case EMBER_AGENT_READ_FILE:
		do_read_file(c, h, payload);
		break;
	case EMBER_AGENT_INIT:
		do_init(c, h);
		break;
	default: /* a guest-to-host type */
		send_proto_error(c, h->stream, EMBER_AGENT_E_TYPE);
		break;
	}
}

/* Read what the connection has; handle every complete frame. */
static void conn_input(struct conn *c)
{
	struct ember_agent_hdr h;
	size_t need;
	ssize_t n;
	int rc;

	need = EMBER_AGENT_HDR_SIZE;
	if (c->rx_have >= EMBER_AGENT_HDR_SIZE)
		need += ember_agent_get32(c->rx + 12);
	n = read(c->fd, c->rx + c->rx_have, need - c->rx_have);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		c->dead = 1;
		return;
	}
	c->rx_have += (size_t)n;
	if (c->rx_have < EMBER_AGENT_HDR_SIZE)
		return;
	rc = ember_agent_hdr_decode(c->rx, c->rx_have, &h);
	if (rc < 0 && rc != EMBER_AGENT_E_TYPE) {
		/* Desynchronised: no way to find the next frame. */
		send_proto_error(c, 0, rc);
		c->dead = c->desync = 1;
		return;
	}
	if (c->rx_have < EMBER_AGENT_HDR_SIZE + h.len)
		return;
	c->rx_have = 0;
	if (rc < 0)
		send_proto_error(c, h.stream, rc);
	else
		dispatch(c, &h, c->rx + EMBER_AGENT_HDR_SIZE);
}

static void conn_timeouts(struct conn *c, int64_t now)
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

/*
 * Closing a socket with unread input makes the peer's reads fail with
 * ECONNRESET (AF_UNIX, vsock), which can swallow the ERROR frame just
 * sent: shut down our side and discard the host's bytes for a while first.
 */
static void linger_close(int fd)
{
	int64_t end = now_ms() + 1000;
	uint8_t junk[4096];

	shutdown(fd, SHUT_WR);
	for (int64_t now = now_ms(); now < end; now = now_ms()) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		if (poll(&pfd, 1, (int)(end - now)) <= 0)
			return;
		ssize_t n = read(fd, junk, sizeof(junk));

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return;
	}
}

/* Serve one connection on @fd until it closes; kills what it started. */
static void serve(int fd, int sig_fd)
{
	struct pollfd pfd[2 + 2 * EMBER_AGENT_MAX_EXECS];
	struct slot *who[2 + 2 * EMBER_AGENT_MAX_EXECS];
	struct conn *c;

	c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->fd = fd;
	c->sig_fd = sig_fd;
	c->rx = malloc(EMBER_AGENT_HDR_SIZE + EMBER_AGENT_MAX_PAYLOAD);
	c->tx = malloc(EMBER_AGENT_CHUNK);
	if (!c->rx || !c->tx)
		c->dead = 1;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	while (!c->dead) {
		int n = 0, timeout = -1;
		int64_t now = now_ms();

		pfd[n] = (struct pollfd){ .fd = fd, .events = POLLIN };
		who[n++] = NULL;
		pfd[n] = (struct pollfd){ .fd = sig_fd, .events = POLLIN };
		who[n++] = NULL;
		for (int i = 0; i < EMBER_AGENT_MAX_EXECS; i++) {
			struct slot *s = &c->slots[i];

			if (s->kind != SLOT_EXEC)
				continue;
			if (s->out_fd >= 0) {
				pfd[n] = (struct pollfd){ .fd = s->out_fd,
							  .events = POLLIN };
				who[n++] = s;
			}
			if (s->err_fd >= 0) {
				pfd[n] = (struct pollfd){ .fd = s->err_fd,
							  .events = POLLIN };
				who[n++] = s;
			}
			if (s->deadline_ms) {
				int64_t left = s->deadline_ms - now;

				left = left < 0 ? 0 : left;
				if (timeout < 0 || left < timeout)
					timeout =
						(int)(left > INT_MAX ? INT_MAX :
								       left);
			}
		}
		if (poll(pfd, (nfds_t)n, timeout) < 0 && errno != EINTR)
			break;
		conn_timeouts(c, now_ms());
		for (int i = 2; i < n; i++) {
			struct slot *s = who[i];

			if (!pfd[i].revents || s->kind != SLOT_EXEC)
				continue;
			if (pfd[i].fd == s->out_fd)
				pump(c, s, &s->out_fd, EMBER_AGENT_STDOUT,
				     EMBER_AGENT_CHUNK);
			else if (pfd[i].fd == s->err_fd)
				pump(c, s, &s->err_fd, EMBER_AGENT_STDERR,
				     EMBER_AGENT_CHUNK);
		}
		if (pfd[1].revents)
			reap(c);
		if (pfd[0].revents)
			conn_input(c);
	}
	if (c->desync)
		linger_close(fd);
	/* The host is gone: nobody will read the results. */
	for (int i = 0; i < EMBER_AGENT_MAX_EXECS; i++) {
		struct slot *s = &c->slots[i];

		if (s->kind == SLOT_EXEC) {
			if (s->pid) {
				kill(-s->pid, SIGKILL);
				waitpid(s->pid, NULL, 0);
			}
			close_fd(&s->out_fd);
			close_fd(&s->err_fd);
			close_fd(&s->in_fd);
		} else if (s->kind == SLOT_WRITE) {
			close_fd(&s->file_fd);
			write_file_drop(s); /* cut off: the old file stays */
		}
	}
	free(c->rx);
	free(c->tx);
	free(c);
}

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
		serve(fd, sig_fd); /* no memory for a process: serve inline */
		return;
	}
	if (pid == 0) {
		if (fork() == 0) {
			serve(fd, sig_fd);
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
				serve(fd, sig_fd);
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

	if (argc != 3)
		return usage();
	init_report = getenv("EMBER_AGENT_INIT_REPORT");
	if (init_report && !*init_report)
		init_report = NULL;
	if (init_report) {
		init_report = strdup(init_report);
		if (!init_report)
			return 1;
		unsetenv("EMBER_AGENT_INIT_REPORT"); /* not for the execs */
	}
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
		serve((int)v, sig_fd);
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
