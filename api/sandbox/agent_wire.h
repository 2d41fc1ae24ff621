/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The wire under the agent client (agent_client.h): the connection's
 * buffers and the one poll(2) loop, agent_wire__pump(), that drives every
 * operation.  It keeps the socket non-blocking, sends what the transmit
 * buffer holds as the socket takes it, reads frames as they come (they
 * are never left unread: the agent's own writes block, and a host that
 * stops reading stalls the guest) and feeds an optional input fd (stdin,
 * a host file) only once the transmit buffer is empty, so memory stays
 * bounded whatever the input's size.  Shared by the client's files
 * (agent_client.c, agent_exec.c, agent_files.c) and nothing else: its
 * users see struct agent_client only as an opaque type.
 */
#ifndef EMBER_API_AGENT_WIRE_H
#define EMBER_API_AGENT_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../../guest-init/protocol.h"

#define FRAME_MAX (EMBER_AGENT_HDR_SIZE + EMBER_AGENT_MAX_PAYLOAD)
/* Room for one frame of any size plus the small ones queued behind it. */
#define TX_CAP (2 * FRAME_MAX)

/* A client (agent_client.h): the connection and its buffers. */
struct agent_client {
	int fd; /* -1: not connected */
	uint32_t last_stream; /* the last stream id used; 0: none yet */
	uint8_t *rx; /* FRAME_MAX bytes: the frame being read */
	size_t rx_have;
	struct ember_agent_hdr rx_hdr; /* valid once rx_have >= header */
	uint8_t *tx; /* TX_CAP bytes: frames not yet sent */
	size_t tx_off, tx_len;
	int64_t last_io_ms; /* the last time a byte moved, for idle limits */
	int guest_errno;
	char err[512];
};

/* One operation in flight, driven by agent_wire__pump(). */
struct op {
	struct agent_client *c;
	uint32_t stream;
	/* A frame for this stream: 0 to go on, or sets done / returns < 0. */
	int (*frame)(struct op *op, const struct ember_agent_hdr *h,
		     const uint8_t *p);
	/* in_fd is readable and nothing waits to be sent. */
	int (*input)(struct op *op);
	/* sig_fd is readable. */
	int (*signal)(struct op *op);
	/* ctl_fd is readable (NULL: ctl_fd is not watched). */
	int (*control)(struct op *op);
	int in_fd; /* -1: none */
	int sig_fd; /* -1: none */
	int ctl_fd; /* with control: -1 none (set so at its EOF) */
	int64_t deadline_ms; /* absolute (CLOCK_MONOTONIC); 0: none */
	int idle_ms; /* 0: none */
	int done;
	int late_esrch; /* an ERROR(ESRCH) on this stream is not final */
	void *ctx;
};

/*
 * Leave the printf-style message in @c's error text (agent_client__error())
 * and return @rc, so that failing is one statement.
 */
__attribute__((format(printf, 3, 4))) int
agent_wire__fail(struct agent_client *c, int rc, const char *fmt, ...);

/* Close @c's connection, if any, and forget what its buffers held. */
void agent_wire__close(struct agent_client *c);

/*
 * Room for @len more bytes at the end of @c's transmit buffer (moving
 * what is unsent to its start if need be), or NULL when there is none.
 */
uint8_t *agent_wire__tx_space(struct agent_client *c, size_t len);

/*
 * Queue a frame of @type on @stream whose @len bytes of payload are
 * already at agent_wire__tx_space() + EMBER_AGENT_HDR_SIZE.
 */
void agent_wire__tx_commit(struct agent_client *c, uint16_t type,
			   uint32_t stream, uint32_t len);

/*
 * agent_wire__tx_read() - read up to @max bytes of @fd into the payload of
 * the next frame in @c's transmit buffer (agent_wire__tx_commit() queues
 * them).  The count (0: end of file); -EAGAIN when interrupted or nothing
 * is ready yet; -ENOBUFS, failed on @c, when the buffer is full; or the
 * read's negative errno.
 */
ssize_t agent_wire__tx_read(struct agent_client *c, int fd, size_t max);

/*
 * agent_wire__request() - room for a new operation's request frame
 * (FRAME_MAX bytes) at the end of @c's transmit buffer, into *@b: 0, or
 * -ENOTCONN (not connected) or -ENOBUFS (buffer full), failed on @c.
 */
int agent_wire__request(struct agent_client *c, uint8_t **b);

/* Queue a frame with a copy of @payload: 0, or -ENOBUFS (buffer full). */
int agent_wire__tx_frame(struct agent_client *c, uint16_t type, uint32_t stream,
			 const void *payload, uint32_t len);

/*
 * The guest's ERROR payload (@p, @len bytes) as one line of text in @c's
 * error text; sets its guest errno.  Returns -EREMOTEIO, or -EPROTO for
 * a bad payload.
 */
int agent_wire__guest_error(struct agent_client *c, const uint8_t *p,
			    uint32_t len);

/* A frame @h that the operation did not expect: -EPROTO, saying which. */
int agent_wire__unexpected(struct agent_client *c,
			   const struct ember_agent_hdr *h);

/*
 * A frame @h (payload @p) that @op's handler has no case for: the guest's
 * ERROR ends @op with agent_wire__guest_error()'s answer; any other is
 * agent_wire__unexpected().
 */
int agent_wire__other_frame(struct op *op, const struct ember_agent_hdr *h,
			    const uint8_t *p);

/* The next stream id of @c (never 0), for a new operation. */
uint32_t agent_wire__new_stream(struct agent_client *c);

/*
 * Drive @op until it is done: 0 or its result, or a negative errno.  Any
 * failure other than the guest's own answer (-EREMOTEIO) leaves the
 * connection at an unknown point of the byte stream: it is closed.
 */
int agent_wire__pump(struct op *op);

#endif /* EMBER_API_AGENT_WIRE_H */
