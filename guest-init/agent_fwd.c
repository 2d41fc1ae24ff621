// SPDX-License-Identifier: Apache-2.0
/*
 * The guest agent's FORWARD (agent_fwd.h): a connection of the agent
 * handed over to a TCP connection to the guest's loopback.  The agent
 * serves each connection in a process of its own, so the splice below
 * simply runs in that process until both sides are done; the host opens
 * one agent connection per forwarded TCP connection.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "agent_fwd.h"
#include "fd_splice.h"

/*
 * A non-blocking TCP connection to @sa (@salen bytes) within
 * AGENT_FWD_CONNECT_MS: the fd, or a negative errno.
 */
static int dial_one(const struct sockaddr *sa, socklen_t salen)
{
	struct pollfd pfd;
	socklen_t len = sizeof(int);
	int fd, err = 0, one = 1;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		return -errno;
	if (connect(fd, sa, salen) == 0)
		goto done;
	if (errno != EINPROGRESS) {
		err = errno;
		goto fail;
	}
	pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
	for (;;) {
		int n = poll(&pfd, 1, AGENT_FWD_CONNECT_MS);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? errno : ETIMEDOUT;
			goto fail;
		}
		break;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err)
		goto fail;
done:
	/* Small writes (keystrokes, requests) go at once, as on a LAN. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
fail:
	close(fd);
	return -err;
}

/*
 * The guest's loopback at @port: 127.0.0.1, else [::1] when nothing
 * listens on the first (a server bound to ::1 alone).  The fd, or the
 * IPv4 connect's negative errno.
 */
static int dial(uint16_t port)
{
	struct sockaddr_in in4 = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	struct sockaddr_in6 in6 = {
		.sin6_family = AF_INET6,
		.sin6_port = htons(port),
		.sin6_addr = IN6ADDR_LOOPBACK_INIT,
	};
	int fd = dial_one((struct sockaddr *)&in4, sizeof(in4)), fd6;

	if (fd != -ECONNREFUSED)
		return fd;
	fd6 = dial_one((struct sockaddr *)&in6, sizeof(in6));
	return fd6 >= 0 ? fd6 : fd;
}

void agent_fwd__start(struct conn *c, const struct ember_agent_hdr *h,
		      const uint8_t *payload)
{
	char what[64];
	uint32_t port;
	int fd;

	if (h->len != 4) {
		agent_conn__send_error(c, h->stream, EPROTO,
				       "FORWARD wants a u32 port");
		return;
	}
	port = ember_agent_get32(payload);
	if (port == 0 || port > 65535) {
		agent_conn__send_error(c, h->stream, EPROTO,
				       "FORWARD: port out of range (1-65535)");
		return;
	}
	for (int i = 0; i < EMBER_AGENT_MAX_EXECS; i++) {
		if (c->slots[i].kind != SLOT_FREE) {
			agent_conn__send_error(c, h->stream, EBUSY,
					       "FORWARD on a connection with "
					       "streams");
			return;
		}
	}
	fd = dial((uint16_t)port);
	if (fd < 0) {
		snprintf(what, sizeof(what), "connect 127.0.0.1:%u", port);
		agent_conn__send_errno(c, h->stream, -fd, what);
		return;
	}
	agent_conn__send(c, EMBER_AGENT_OK, h->stream, NULL, 0);
	if (!c->dead)
		fd_splice__run(c->fd, fd);
	close(fd);
	c->dead = 1;
}
