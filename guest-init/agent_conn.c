// SPDX-License-Identifier: Apache-2.0
/*
 * A connection of the guest agent (agent_conn.h): the frames it sends and
 * the streams of its execs and file transfers.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "agent_conn.h"

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

void agent_conn__send(struct conn *c, uint16_t type, uint32_t stream,
		      const void *payload, size_t len)
{
	uint8_t hdr[EMBER_AGENT_HDR_SIZE];

	ember_agent_hdr_encode(hdr, type, stream, (uint32_t)len);
	if (conn_write(c, hdr, sizeof(hdr)) == 0 && len)
		conn_write(c, payload, len);
}

void agent_conn__send_error(struct conn *c, uint32_t stream, int err,
			    const char *msg)
{
	uint8_t buf[256];
	long n = ember_agent_error_encode(buf, sizeof(buf), (uint32_t)err, msg);

	agent_conn__send(c, EMBER_AGENT_ERROR, stream, buf, (size_t)n);
}

void agent_conn__send_proto_error(struct conn *c, uint32_t stream, int rc)
{
	agent_conn__send_error(c, stream, EPROTO, ember_agent_strerror(rc));
}

void agent_conn__send_errno(struct conn *c, uint32_t stream, int err,
			    const char *what)
{
	char msg[200];

	snprintf(msg, sizeof(msg), "%s: %s", what, strerror(err));
	agent_conn__send_error(c, stream, err, msg);
}

struct slot *agent_conn__slot(struct conn *c, uint32_t stream)
{
	for (int i = 0; i < EMBER_AGENT_MAX_EXECS; i++)
		if (c->slots[i].kind != SLOT_FREE && !c->slots[i].detached &&
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
			s->tty_fd = s->listen_fd = s->att_fd = -1;
			return s;
		}
	}
	return NULL;
}

struct slot *agent_conn__open_stream(struct conn *c, uint32_t stream, int rc)
{
	struct slot *s;

	if (rc < 0) {
		agent_conn__send_proto_error(c, stream, rc);
		return NULL;
	}
	if (agent_conn__slot(c, stream)) {
		agent_conn__send_error(c, stream, EBUSY, "stream id in use");
		return NULL;
	}
	s = slot_new(c, stream);
	if (!s)
		agent_conn__send_error(c, stream, EAGAIN, "too many streams");
	return s;
}
