// SPDX-License-Identifier: Apache-2.0
/*
 * The guest agent's serving of one connection (agent_serve.h): one
 * poll(2) loop that multiplexes the connection, every running child's
 * stdout and stderr pipes and a signalfd for SIGCHLD, and the dispatch
 * of each request.  A malformed frame whose header is sound gets an
 * ERROR frame on its stream and the connection goes on; a bad header
 * (magic, version, length over the maximum) means the byte stream is
 * desynchronised: one ERROR frame on stream 0, then the connection is
 * closed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "agent_conn.h"
#include "agent_exec.h"
#include "agent_files.h"
#include "agent_fwd.h"
#include "agent_init.h"
#include "agent_keep.h"
#include "agent_serve.h"

static void dispatch(struct conn *c, const struct ember_agent_hdr *h,
		     const uint8_t *payload)
{
	switch (h->type) {
	case EMBER_AGENT_PING:
		agent_conn__send(c, EMBER_AGENT_PONG, h->stream, payload,
				 h->len);
		break;
	case EMBER_AGENT_EXEC:
		agent_exec__start(c, h, payload);
		break;
	case EMBER_AGENT_STDIN:
		agent_exec__stdin(c, h, payload);
		break;
	case EMBER_AGENT_KILL:
		agent_exec__kill(c, h, payload);
		break;
	case EMBER_AGENT_RESIZE:
		agent_exec__resize(c, h, payload);
		break;
	case EMBER_AGENT_WRITE_FILE:
		agent_files__write(c, h, payload);
		break;
	case EMBER_AGENT_FILE_DATA:
		agent_files__data(c, h, payload);
		break;
	case EMBER_AGENT_FILE_END:
		agent_files__end(c, h);
		break;
	case EMBER_AGENT_READ_FILE:
		agent_files__read(c, h, payload);
		break;
	case EMBER_AGENT_INIT:
		agent_init__handle(c, h);
		break;
	case EMBER_AGENT_ATTACH:
		agent_keep__attach(c, h, payload);
		break;
	case EMBER_AGENT_LIST:
		agent_keep__list(c, h);
		break;
	case EMBER_AGENT_FORWARD:
		agent_fwd__start(c, h, payload);
		break;
	default: /* a guest-to-host type */
		agent_conn__send_proto_error(c, h->stream, EMBER_AGENT_E_TYPE);
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
		agent_conn__send_proto_error(c, 0, rc);
		c->dead = c->desync = 1;
		return;
	}
	if (c->rx_have < EMBER_AGENT_HDR_SIZE + h.len)
		return;
	c->rx_have = 0;
	if (rc < 0)
		agent_conn__send_proto_error(c, h.stream, rc);
	else
		dispatch(c, &h, c->rx + EMBER_AGENT_HDR_SIZE);
}

/*
 * Closing a socket with unread input makes the peer's reads fail with
 * ECONNRESET (AF_UNIX, vsock), which can swallow the ERROR frame just
 * sent: shut down our side and discard the host's bytes for a while first.
 */
static void linger_close(int fd)
{
	int64_t end = agent_conn__now_ms() + 1000;
	uint8_t junk[4096];

	shutdown(fd, SHUT_WR);
	for (int64_t now = agent_conn__now_ms(); now < end;
	     now = agent_conn__now_ms()) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		if (poll(&pfd, 1, (int)(end - now)) <= 0)
			return;
		ssize_t n = read(fd, junk, sizeof(junk));

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return;
	}
}

/*
 * The host is gone: nobody will read the results of what is not kept.
 * Returns how many kept execs remain, for the process to keep serving.
 */
static int orphan(struct conn *c)
{
	for (int i = 0; i < EMBER_AGENT_MAX_EXECS; i++) {
		struct slot *s = &c->slots[i];

		if (s->kind == SLOT_EXEC && !s->keep) {
			agent_exec__abandon(s);
			s->kind = SLOT_FREE;
		} else if (s->kind == SLOT_WRITE) {
			agent_files__abandon(s);
			s->kind = SLOT_FREE;
		}
	}
	/* No more input, nothing to wait for on it (write_stdin). */
	c->fd = -1;
	return agent_keep__orphan(c);
}

void agent_serve__connection(int fd, int sig_fd)
{
	struct pollfd pfd[2 + 4 * EMBER_AGENT_MAX_EXECS];
	struct slot *who[2 + 4 * EMBER_AGENT_MAX_EXECS];
	struct conn *c;
	int orphaned = 0;

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
	for (;;) {
		int n = 0, timeout = -1;
		int64_t now = agent_conn__now_ms();

		if (c->dead && !orphaned) {
			if (c->desync)
				linger_close(fd);
			orphaned = 1;
			/*
			 * Kept execs outlive the connection: this process
			 * stays their keeper (agent_keep.h) until each one's
			 * EXIT went to an ATTACH.
			 */
			if (!orphan(c))
				break;
		}
		if (orphaned && !agent_keep__count(c))
			break;
		/* fd -1 once orphaned: poll skips it. */
		pfd[n] = (struct pollfd){ .fd = c->fd, .events = POLLIN };
		who[n++] = NULL;
		pfd[n] = (struct pollfd){ .fd = sig_fd, .events = POLLIN };
		who[n++] = NULL;
		n = agent_exec__watch(c, pfd, who, n, now, &timeout);
		n = agent_keep__watch(c, pfd, who, n);
		if (poll(pfd, (nfds_t)n, timeout) < 0 && errno != EINTR)
			break;
		agent_exec__timeouts(c, agent_conn__now_ms());
		for (int i = 2; i < n; i++)
			if (pfd[i].revents)
				agent_exec__output(c, who[i], pfd[i].fd);
		if (pfd[1].revents)
			agent_exec__reap(c);
		if (pfd[0].revents && !orphaned)
			conn_input(c);
	}
	/* Whatever is left (a failed poll): killed, as before. */
	for (int i = 0; i < EMBER_AGENT_MAX_EXECS; i++) {
		struct slot *s = &c->slots[i];

		if (s->kind == SLOT_EXEC)
			agent_exec__abandon(s);
		else if (s->kind == SLOT_WRITE)
			agent_files__abandon(s);
		else if (s->kind == SLOT_ATTACH)
			agent_keep__release(s);
	}
	free(c->rx);
	free(c->tx);
	free(c);
}
