/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A connection of the guest agent (guest-init/agent*.c, inside the guest
 * only: the host shares nothing of this, just protocol.h): its state, the
 * frames it sends and the streams (slots) of its execs and file
 * transfers.  Every request is handled on the connection's one thread:
 * none blocks for long, and errors go back to the host as ERROR frames
 * on the stream.
 */
#ifndef EMBER_GUEST_AGENT_CONN_H
#define EMBER_GUEST_AGENT_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "protocol.h"

/*
 * SLOT_ATTACH: a stream relaying an ATTACH to the process that keeps the
 * process (agent_keep.c).
 */
enum slot_kind { SLOT_FREE, SLOT_EXEC, SLOT_WRITE, SLOT_ATTACH };

struct keep;

/* One stream: a running exec or a file being written. */
struct slot {
	enum slot_kind kind;
	uint32_t stream;
	/* SLOT_EXEC */
	pid_t pid; /* 0 once reaped */
	int out_fd; /* -1 once closed */
	int err_fd;
	int in_fd; /* -1: no stdin or closed */
	int tty_fd; /* a TTY exec's terminal master, for RESIZE; else -1 */
	int status;
	int timed_out;
	int64_t deadline_ms; /* 0: none */
	/*
	 * SLOT_EXEC with FLAGS bit KEEP, and SLOT_ATTACH (agent_keep.c).  A
	 * detached exec has no stream (agent_conn__slot() does not find it):
	 * its output goes to att_fd, else into keep's buffer.
	 */
	int keep; /* outlives the connection */
	int detached;
	int exited; /* reaped while detached: status says how */
	int listen_fd; /* the abstract socket that names it; -1 */
	int att_fd; /* an attaching agent process (or, for SLOT_ATTACH, the
		       keeping one); -1 */
	struct keep *kp; /* its buffer and command; NULL */
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
static inline int64_t agent_conn__now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Close *@fd if open and mark it closed (-1). */
static inline void agent_conn__close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

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

#endif /* EMBER_GUEST_AGENT_CONN_H */
