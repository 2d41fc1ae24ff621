// SPDX-License-Identifier: Apache-2.0
/*
 * Two sockets joined (fd_splice.h): one buffer per direction, poll(2) for
 * whichever side can move, nothing ever blocking on one side while the
 * other waits.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "fd_splice.h"

/* One direction: bytes read from @from wait in @buf for @to. */
struct leg {
	int from, to;
	uint8_t *buf;
	size_t off, len;
	bool eof;
};

/* Move what @l can without blocking: 0, or -1 when a side failed. */
static int leg_step(struct leg *l)
{
	for (;;) {
		ssize_t n;

		if (l->len) {
			n = send(l->to, l->buf + l->off, l->len,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN)
				return 0;
			if (n <= 0)
				return -1;
			l->off += (size_t)n;
			l->len -= (size_t)n;
			continue;
		}
		if (l->eof)
			return 0;
		l->off = 0;
		n = recv(l->from, l->buf, FD_SPLICE_BUF, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n < 0)
			return -1;
		if (n == 0) {
			l->eof = true;
			shutdown(l->to, SHUT_WR);
			return 0;
		}
		l->len = (size_t)n;
	}
}

int fd_splice__run(int a, int b)
{
	struct leg legs[2] = {
		{ .from = a, .to = b, .buf = malloc(FD_SPLICE_BUF) },
		{ .from = b, .to = a, .buf = malloc(FD_SPLICE_BUF) },
	};
	int ret = -ENOMEM;

	if (!legs[0].buf || !legs[1].buf)
		goto out;
	ret = -EPIPE;
	for (;;) {
		struct pollfd pfd[2] = { { .fd = a }, { .fd = b } };

		for (int i = 0; i < 2; i++) {
			if (legs[i].len)
				pfd[1 - i].events |= POLLOUT;
			else if (!legs[i].eof)
				pfd[i].events |= POLLIN;
		}
		if (!pfd[0].events && !pfd[1].events) {
			ret = 0; /* both ended, everything written */
			break;
		}
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (leg_step(&legs[0]) < 0 || leg_step(&legs[1]) < 0)
			break;
	}
out:
	free(legs[0].buf);
	free(legs[1].buf);
	return ret;
}
