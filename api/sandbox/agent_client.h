/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host side of the guest agent's protocol (guest-init/PROTOCOL.md):
 * connect to a sandbox's vsock Unix socket (Firecracker's hybrid
 * convention, `CONNECT <port>\n` -> `OK <host_port>\n`), then ping, exec
 * with streamed output, file transfers both ways, and the init step of a
 * restored sandbox (clock and entropy).  Frames are built and
 * parsed only with the codecs of guest-init/protocol.h.
 *
 * Everything the guest sends is untrusted: a malformed or oversized frame,
 * a frame for a stream that was not asked for, an EXIT with a bad payload
 * or a file past EMBER_AGENT_MAX_FILE ends the operation with -EPROTO (or
 * -EFBIG) and leaves the connection unusable; nothing is read past what the
 * header announced and no payload over EMBER_AGENT_MAX_PAYLOAD is accepted.
 *
 * Operations run one at a time on a connection (the agent serves one
 * connection at a time anyway); a client is not thread-safe.  Every
 * function returns 0 or a negative errno; the text of the last failure,
 * fit for a one-line message, is agent_client__error().
 */
#ifndef EMBER_API_AGENT_CLIENT_H
#define EMBER_API_AGENT_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../guest-init/protocol.h"

struct agent_client;

/*
 * A client with no connection yet.  Returns NULL when out of memory (it
 * holds about 3 MiB of frame buffers).  Free it with agent_client__free().
 */
struct agent_client *agent_client__new(void);

/* Close the connection, if any, and free @c.  NULL is allowed. */
void agent_client__free(struct agent_client *c);

/*
 * Connect to the Unix socket @uds_path (at most 107 bytes), write
 * `CONNECT @port\n` and wait for `OK <n>\n`, all within @timeout_ms
 * milliseconds (> 0).  Errors: -ENOENT (no such socket), -ECONNREFUSED
 * (nobody listens on it: the VMM is gone), -ECONNRESET (the VMM closed the
 * connection without OK: nothing listens on the guest port yet),
 * -EPROTO (a reply other than OK), -ETIMEDOUT, -ENAMETOOLONG, -EISCONN
 * (@c already has a connection), other socket errors.
 */
int agent_client__connect(struct agent_client *c, const char *uds_path,
			  uint32_t port, int timeout_ms);

/* Close @c's connection, if any; @c can connect again. */
void agent_client__close(struct agent_client *c);

/*
 * Use the already connected stream socket @fd (past any handshake) as the
 * connection; @c owns it from now on, even on failure.  -EISCONN if @c
 * already has one.
 */
int agent_client__attach_fd(struct agent_client *c, int fd);

/*
 * Take @c's connection away from it: returns its fd (non-blocking,
 * close-on-exec, past the CONNECT handshake; the caller owns it) and
 * leaves @c without one, or -ENOTCONN.  For other protocols on other
 * guest ports that reuse agent_client__connect()'s handshake.
 */
int agent_client__detach_fd(struct agent_client *c);

/*
 * Whether @c's connection, idle between operations, can take the next
 * one: connected, nothing to read (no EOF, no stray frame) and no error
 * on it.  A zero-timeout poll: for pools of connections kept open.
 */
bool agent_client__idle_ok(const struct agent_client *c);

/*
 * PING with a random payload and wait for the PONG carrying it back,
 * within @timeout_ms milliseconds (> 0).  -ETIMEDOUT, -ECONNRESET (the
 * connection closed), -EPROTO (anything but the right PONG).
 */
int agent_client__ping(struct agent_client *c, int timeout_ms);

/* Bytes of host entropy agent_client__init_guest() sends. */
#define AGENT_CLIENT_INIT_ENTROPY 64

/*
 * Make a guest restored from a snapshot its own before it is handed out
 * (INIT, guest-init/PROTOCOL.md): sends this host's CLOCK_REALTIME (read
 * just before sending) and AGENT_CLIENT_INIT_ENTROPY fresh bytes from
 * getrandom(2); the agent mixes the bytes into the guest kernel's pool
 * and forces its generator to reseed, so that sandboxes restored from one
 * snapshot draw different random numbers, then steps the guest's wall
 * clock if it is off by more than EMBER_AGENT_CLOCK_SLACK_NS.  Waits up
 * to @timeout_ms milliseconds (> 0) for the answer.  Harmless to repeat.
 * The entropy is wiped from @c's memory once sent.  Errors: -EREMOTEIO
 * (a step failed in the guest; agent_client__guest_errno(): EPERM for an
 * agent without the privilege, EPROTO for an agent that predates INIT),
 * -ETIMEDOUT, -ECONNRESET, -EPROTO, -ENOTCONN, -EINVAL (bad timeout, a
 * host clock before 1970), getrandom's negative errno.
 */
int agent_client__init_guest(struct agent_client *c, int timeout_ms);

/*
 * A resource limit for an exec (RLIMIT, guest-init/PROTOCOL.md): set in
 * the child with setrlimit(2) before its command runs.
 */
#define AGENT_RLIM_INFINITY UINT64_MAX /* no limit, RLIM_INFINITY */
struct agent_rlimit {
	uint32_t resource; /* RLIMIT_* (Linux's numbers), below 16 */
	uint64_t soft, hard; /* soft <= hard; AGENT_RLIM_INFINITY: none */
};

/*
 * A record written to agent_exec_req.ctl_fd while the exec runs, in this
 * host's byte order, whole (12 bytes; a pipe write of one record is
 * atomic).  Records the exec cannot use are ignored: an unknown op, a
 * KILL signal outside 1-64, a RESIZE for an exec without tty or with
 * rows or cols over 65535, a CLOSE_STDIN once stdin is closed or when
 * there is none (no stdin_fd and no tty).
 */
enum agent_exec_ctl_op {
	AGENT_EXEC_CTL_KILL = 1, /* a = the signal, sent as-is (KILL frame) */
	AGENT_EXEC_CTL_RESIZE = 2, /* a = rows, b = cols (RESIZE frame) */
	AGENT_EXEC_CTL_CLOSE_STDIN = 3, /* end of input: stdin_fd is no
					   longer read (an empty STDIN) */
};
struct agent_exec_ctl {
	uint32_t op; /* enum agent_exec_ctl_op */
	uint32_t a, b;
};

/* An exec request.  Nothing in it is kept past agent_client__exec(). */
struct agent_exec_req {
	const char *const *argv; /* NULL-terminated, 1-256 entries */
	const char *const *env; /* NULL: the guest's default environment;
				   else NULL-terminated "K=V", at most 256:
				   the whole environment, or with env_add
				   set over the default one */
	bool env_add; /* env goes over the default environment */
	const char *cwd; /* NULL: the guest's default (the image's, else /) */
	const char *user; /* NULL: the guest's default (the image's, else
			     root); else NAME, UID, NAME:GROUP or UID:GID */
	uint32_t timeout_ms; /* in the guest; 0: none */
	int stdin_fd; /* -1: /dev/null in the guest; else forwarded to EOF */
	int stdout_fd; /* the child's stdout goes here, as it comes */
	int stderr_fd; /* and its stderr here */
	uint64_t out_max; /* bytes of stdout (and of stderr) written to
			     the fds; the rest is read and dropped; 0: all */
	/*
	 * -1, or a signalfd: each signal read from it is sent to the guest
	 * process group as KILL; the third SIGINT/SIGTERM/SIGHUP sends
	 * SIGKILL instead.
	 */
	int sig_fd;
	/*
	 * NULL: the guest's root; else an absolute guest path the child
	 * chroots into (ROOT): its user, cwd and command are the root's,
	 * the image defaults are not used and env is the whole environment
	 * (env_add must be false), HOME added from the account when a user
	 * is given and env has none.
	 */
	const char *root;
	const struct agent_rlimit *rlimits; /* nr_rlimits of them, at */
	unsigned nr_rlimits; /* most 16, one per resource; 0: none */
	/*
	 * The child runs on a new pseudo-terminal in the guest, leader of a
	 * new session with it as controlling terminal (TERM as env gives
	 * it): all its output comes to stdout_fd (stderr_fd gets nothing),
	 * stdin_fd (if any) goes to the terminal, its end (or CLOSE_STDIN)
	 * sends the terminal's EOF character (^D).  rows and cols, when
	 * either is not 0, are the initial window size.
	 */
	bool tty;
	uint16_t rows, cols;
	/*
	 * A pipe or socket of struct agent_exec_ctl records, read while the
	 * exec runs, or none: -1, or 0 (what an initialiser that does not
	 * name it leaves; fd 0 is never taken as a control fd).  EOF (or a
	 * read error) on it means no more records.  Not closed.
	 */
	int ctl_fd;
	/*
	 * keep: the process outlives this connection (KEEP, guest-init/
	 * PROTOCOL.md): when the connection is cut (a park and resume, a
	 * client gone) it keeps running, its output kept in the guest (1
	 * MiB, the oldest dropped), for agent_client__attach() by pid.
	 * detach (with keep): return as soon as it started, res->running
	 * set, its output all kept for an attach; stdin_fd is not read
	 * (>= 0: the guest child's stdin is a pipe left open for an
	 * attach's).  Neither: the process is killed when the connection
	 * closes, as before.
	 */
	bool keep, detach;
};

/* How an exec ended: kind is enum ember_agent_exit_kind (protocol.h). */
struct agent_exec_result {
	uint32_t kind; /* EMBER_AGENT_EXITED, _SIGNALLED or _TIMEOUT */
	int32_t code; /* exit status 0-255, or the signal number */
	/* With keep (and for an attach): the guest pid, 0 before it is known */
	uint32_t pid;
	uint64_t dropped; /* an attach: bytes of output the guest dropped */
	bool running; /* detach: it runs on; kind and code are not set */
};

/*
 * Run @req in the guest and stream its stdout/stderr to the given fds
 * until it ends; 0 with @res filled.  Output to stdout_fd that fails with
 * EPIPE is dropped from then on and the guest process group gets SIGPIPE,
 * like a local pipeline.  With @req->timeout_ms set, the host gives up
 * 60 s after the guest should have reported the timeout (-ETIMEDOUT).
 * The defaults (environment, cwd, user) are the guest's image defaults
 * (guest-init/PROTOCOL.md, "Image defaults").
 * Errors: -EREMOTEIO when the agent could not start it (then
 * agent_client__guest_errno() is the guest's errno: ENOENT for a command
 * not found or a missing cwd, EACCES..., EINVAL for an unknown user or a
 * malformed defaults file, EPROTO from an agent older than USER or
 * ENV_ADD, or than ROOT, RLIMIT and TTY; ENOENT or ENOTDIR for a root
 * that is missing or not a directory, ENODEV for a tty in a guest
 * without pseudo-terminals, the setrlimit's errno for an RLIMIT the
 * guest refuses, its message naming it), -E2BIG (argv/env over one frame
 * or the counts), -EINVAL (a malformed user spec, a relative root or one
 * with env_add, an rlimit out of range or repeated, more than 16,
 * nothing to run), -ECONNRESET, -EPROTO, -EIO (writing to a host fd).
 * Fields left at zero (root, rlimits, tty, ctl_fd) change nothing: the
 * request is what an agent before them understands.
 */
int agent_client__exec(struct agent_client *c, const struct agent_exec_req *req,
		       struct agent_exec_result *res);

/*
 * Attach to the process @pid that the guest's agent keeps (started with
 * keep, by any connection: PROTOCOL.md, ATTACH) and stream it as
 * agent_client__exec() does, with @req's stdout_fd, stderr_fd, stdin_fd,
 * sig_fd, ctl_fd, out_max and tty (for RESIZE) used and the rest ignored:
 * first what the guest kept while nobody was attached (res->dropped says
 * how many older bytes it dropped), then its live output, until it ends
 * (0, @res filled).  Errors: -EREMOTEIO with agent_client__guest_errno()
 * ESRCH (no process of that pid is kept: unknown, not started with keep,
 * or its end already went to an attach) or EBUSY (another connection is
 * attached to it), EPROTO from an agent older than ATTACH; -EINVAL (pid
 * 0), -ECONNRESET, -EPROTO, -EIO.
 */
int agent_client__attach(struct agent_client *c, uint32_t pid,
			 const struct agent_exec_req *req,
			 struct agent_exec_result *res);

/* A process the guest's agent keeps, as agent_client__list() gives it. */
struct agent_proc {
	uint32_t pid;
	bool exited, attached, tty;
	uint32_t kind; /* exited: enum ember_agent_exit_kind */
	int32_t code; /* exited: the status or the signal */
	uint64_t dropped; /* bytes of output dropped while detached */
	char cmd[EMBER_AGENT_PROC_CMD_MAX + 1]; /* argv joined by spaces;
						   maybe cut short */
};

/*
 * Every process the guest's agent keeps (LIST): running, or ended with
 * its end not yet collected by an attach.  *@procs is malloc'd (the
 * caller frees it; NULL when *@n is 0).  Errors: -EREMOTEIO (EPROTO from
 * an agent older than LIST), -ENOMEM, -ETIMEDOUT (@timeout_ms > 0),
 * -ECONNRESET, -EPROTO.
 */
int agent_client__list(struct agent_client *c, struct agent_proc **procs,
		       size_t *n, int timeout_ms);

/*
 * Write everything @src_fd holds from its current offset to the end into
 * the guest file @guest_path (created or truncated, then given @mode, at
 * most 07777, regardless of the guest's umask).  @idle_ms > 0: fail with
 * -ETIMEDOUT when no byte moves for that long; 0: no limit.  Errors:
 * -EREMOTEIO (the guest's answer; agent_client__guest_errno(): EISDIR,
 * ENOENT, EFBIG past EMBER_AGENT_MAX_FILE...), -EFBIG (the host file is
 * over EMBER_AGENT_MAX_FILE), -EIO, -ECONNRESET, -EPROTO, -ETIMEDOUT.
 */
int agent_client__write_file(struct agent_client *c, int src_fd,
			     const char *guest_path, uint32_t mode,
			     int idle_ms);

/*
 * Read the guest file @guest_path and write it to @dst_fd (from its
 * current offset).  @idle_ms as for write_file.  On failure @dst_fd may
 * hold part of the file: write to a temporary file.  Errors: -EREMOTEIO
 * (ENOENT, EISDIR, EACCES... from the guest), -EFBIG (the guest sent more
 * than EMBER_AGENT_MAX_FILE), -EIO, -ECONNRESET, -EPROTO, -ETIMEDOUT.
 */
int agent_client__read_file(struct agent_client *c, const char *guest_path,
			    int dst_fd, int idle_ms);

/*
 * FORWARD (guest-init/PROTOCOL.md, "Forward"): ask the agent to connect to
 * TCP @port (1-65535) on the guest's loopback (127.0.0.1, else [::1]) and
 * wait up to @timeout_ms milliseconds (> 0) for its answer.  On 0 the
 * connection is no longer the agent's protocol but the TCP connection's
 * bytes both ways: take it with agent_client__detach_fd().  Errors:
 * -EREMOTEIO (the guest's connect failed; agent_client__guest_errno():
 * ECONNREFUSED when nothing listens on @port, ETIMEDOUT; EPROTO from an
 * agent that predates FORWARD), -EINVAL (a bad port or timeout),
 * -ETIMEDOUT, -ECONNRESET, -EPROTO, -ENOTCONN.  Implemented in
 * agent_fwd.c.
 */
int agent_client__forward(struct agent_client *c, uint32_t port,
			  int timeout_ms);

/*
 * The last failure as one line of text (never NULL; "" when none yet),
 * e.g. "guest: python4: No such file or directory".  Owned by @c, valid
 * until the next call on @c.
 */
const char *agent_client__error(const struct agent_client *c);

/* The guest's errno of the last -EREMOTEIO failure; 0 otherwise. */
int agent_client__guest_errno(const struct agent_client *c);

#endif /* EMBER_API_AGENT_CLIENT_H */
