/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guest agent's parts (guest-init/agent*.c), inside the guest only:
 * the host shares nothing of this, just protocol.h.
 *
 *   agent.c        the program: options, the vsock listener and the
 *                  processes that serve its connections
 *   agent_conn.c   one connection: frames in and out, its streams, the
 *                  poll loop, dispatch of each request
 *   agent_exec.c   EXEC, STDIN and KILL: children, their output, exits
 *   agent_files.c  WRITE_FILE, FILE_DATA, FILE_END and READ_FILE
 *   agent_init.c   INIT: the clock and the random pool after a restore
 *
 * Every handler runs on the connection's one thread: none blocks for
 * long, and errors go back to the host as ERROR frames on the stream.
 */
#ifndef EMBER_GUEST_AGENT_H
#define EMBER_GUEST_AGENT_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "protocol.h"

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

/* CLOCK_MONOTONIC in milliseconds. */
static inline int64_t agent__now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Close *@fd if open and mark it closed (-1). */
static inline void agent__close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* ---- agent_conn.c: the connection ---------------------------------------- */

/*
 * Serve one connection on @fd (made non-blocking) until it closes, with
 * @sig_fd the signalfd that reports SIGCHLD; kills what it started.
 * @fd stays open: the caller closes it.
 */
void agent_conn__serve(int fd, int sig_fd);

/*
 * Send a frame of @type on @stream with @len bytes of @payload (at most
 * EMBER_AGENT_MAX_PAYLOAD).  A failed write marks @c dead: the loop ends.
 */
void agent_conn__send(struct conn *c, uint16_t type, uint32_t stream,
		      const void *payload, size_t len);

/* An ERROR frame on @stream: errno value @err and the message @msg. */
void agent_conn__send_error(struct conn *c, uint32_t stream, int err,
			    const char *msg);

/* An ERROR frame (EPROTO) for the decoder's error @rc (EMBER_AGENT_E_*). */
void agent_conn__send_proto_error(struct conn *c, uint32_t stream, int rc);

/* An ERROR frame for @err, its message "@what: strerror(@err)". */
void agent_conn__send_errno(struct conn *c, uint32_t stream, int err,
			    const char *what);

/* The slot of @stream, or NULL when no exec or file transfer has it. */
struct slot *agent_conn__slot(struct conn *c, uint32_t stream);

/*
 * A new stream for an EXEC or WRITE_FILE request whose payload decoded to
 * @rc (kind SLOT_FREE, its fds -1, for the caller to fill), or NULL after
 * answering ERROR: a bad payload (@rc < 0, an EMBER_AGENT_E_*), a stream
 * id in use, or every slot is.
 */
struct slot *agent_conn__open_stream(struct conn *c, uint32_t stream, int rc);

/* ---- agent_exec.c: EXEC, STDIN, KILL ------------------------------------- */

/* EXEC @h with its @payload: start the command, or answer ERROR. */
void agent_exec__start(struct conn *c, const struct ember_agent_hdr *h,
		       const uint8_t *payload);

/* STDIN: write the payload to the exec's stdin (empty: close it). */
void agent_exec__stdin(struct conn *c, const struct ember_agent_hdr *h,
		       const uint8_t *payload);

/* KILL: the signal to the exec's process group. */
void agent_exec__kill(struct conn *c, const struct ember_agent_hdr *h,
		      const uint8_t *payload);

/*
 * Add the open output pipes of @c's execs to @pfd from index @n (@who[i]
 * the slot of each) and lower *@timeout (ms, -1: none) to the nearest
 * deadline after @now (agent__now_ms()).  Returns the new count; @pfd
 * and @who have room for 2 * EMBER_AGENT_MAX_EXECS more.
 */
int agent_exec__watch(struct conn *c, struct pollfd *pfd, struct slot **who,
		      int n, int64_t now, int *timeout);

/* Forward a chunk of what @s's output pipe @fd has (poll said readable). */
void agent_exec__output(struct conn *c, struct slot *s, int fd);

/* SIGCHLD: reap every child that ended and send each exec's EXIT. */
void agent_exec__reap(struct conn *c);

/* SIGKILL the execs whose deadline is at or before @now (agent__now_ms()). */
void agent_exec__timeouts(struct conn *c, int64_t now);

/* The host is gone: kill @s's process group, wait for it, close its pipes. */
void agent_exec__abandon(struct slot *s);

/* ---- agent_files.c: WRITE_FILE, FILE_DATA, FILE_END, READ_FILE ----------- */

/* WRITE_FILE: open the file (or its temporary copy) for FILE_DATA. */
void agent_files__write(struct conn *c, const struct ember_agent_hdr *h,
			const uint8_t *payload);

/* FILE_DATA: append the payload; an error is kept for FILE_END. */
void agent_files__data(struct conn *c, const struct ember_agent_hdr *h,
		       const uint8_t *payload);

/* FILE_END: finish the file (rename the copy over it); OK or ERROR. */
void agent_files__end(struct conn *c, const struct ember_agent_hdr *h);

/* READ_FILE: the file as FILE_DATA frames and FILE_END, or ERROR. */
void agent_files__read(struct conn *c, const struct ember_agent_hdr *h,
		       const uint8_t *payload);

/* The host is gone mid-transfer: close @s's file, the old file stays. */
void agent_files__abandon(struct slot *s);

/* ---- agent_init.c: INIT -------------------------------------------------- */

/*
 * Read EMBER_AGENT_INIT_REPORT (see agent.c) once, at start, and take it
 * out of the environment the execs inherit.  Returns 0, or -ENOMEM.
 */
int agent_init__from_env(void);

/* INIT, its payload in @c->rx (wiped once used): OK or ERROR. */
void agent_init__handle(struct conn *c, const struct ember_agent_hdr *h);

#endif /* EMBER_GUEST_AGENT_H */
