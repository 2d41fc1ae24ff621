// SPDX-License-Identifier: Apache-2.0
/*
 * The host side of the guest agent's protocol: see agent_client.h and
 * guest-init/PROTOCOL.md.  This file: a client's life, the vsock
 * handshake, PING and the init after a restore; exec is agent_exec.c,
 * file transfers agent_files.c, and the poll loop that drives them all
 * agent_wire.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../../guest-init/protocol.h"
#include "agent_client.h"
#include "agent_wire.h"
#include "clock.h"

/* The longest handshake reply line: "OK 4294967295\n". */
#define REPLY_MAX 32

struct agent_client *agent_client__new(void)
{
	struct agent_client *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->fd = -1;
	c->rx = malloc(FRAME_MAX);
	c->tx = malloc(TX_CAP);
	if (!c->rx || !c->tx) {
		agent_client__free(c);
		return NULL;
	}
	return c;
}

void agent_client__free(struct agent_client *c)
{
	if (!c)
		return;
	agent_wire__close(c);
	free(c->rx);
	free(c->tx);
	free(c);
}

const char *agent_client__error(const struct agent_client *c)
{
	return c->err;
}

int agent_client__guest_errno(const struct agent_client *c)
{
	return c->guest_errno;
}

/* ---- handshake ---------------------------------------------------------- */

/* Wait until @fd has @events or @deadline passes: 0, -ETIMEDOUT, -errno. */
static int handshake(struct agent_client *c, int fd, const char *path,
		     uint32_t port, int64_t deadline)
{
	char req[32], line[REPLY_MAX + 1];
	size_t len, n = 0;
	unsigned long v;
	char *end;
	int rc;

	len = (size_t)snprintf(req, sizeof(req), "CONNECT %u\n", port);
	rc = clock__send_all(fd, req, len, deadline);
	if (rc == -ECONNRESET)
		return agent_wire__fail(c, -ECONNRESET,
					"%s: the VMM closed the connection",
					path);
	if (rc < 0)
		goto timeout;
	/* One byte at a time: what follows the newline is the guest's. */
	while (n < REPLY_MAX) {
		ssize_t r = read(fd, line + n, 1);

		if (r == 1) {
			if (line[n++] == '\n')
				break;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN) {
			rc = clock__wait_fd(fd, POLLIN, deadline);
			if (rc < 0)
				goto timeout;
			continue;
		}
		if (n == 0)
			return agent_wire__fail(
				c, -ECONNRESET,
				"%s: nothing listens on guest vsock port %u",
				path, port);
		break;
	}
	line[n] = '\0';
	if (n < 5 || line[n - 1] != '\n' || strncmp(line, "OK ", 3) ||
	    line[3] < '0' || line[3] > '9')
		goto bad;
	errno = 0;
	v = strtoul(line + 3, &end, 10);
	if (errno || *end != '\n' || v > UINT32_MAX)
		goto bad;
	return 0;
bad:
	for (size_t i = 0; i < n; i++)
		if (line[i] < 0x20 || line[i] > 0x7e)
			line[i] = '?';
	return agent_wire__fail(c, -EPROTO,
				"%s: unexpected reply to CONNECT: \"%s\"", path,
				line);
timeout:
	if (rc == -ETIMEDOUT)
		return agent_wire__fail(c, rc, "%s: no answer to CONNECT",
					path);
	return agent_wire__fail(c, rc, "%s: %s", path, strerror(-rc));
}

int agent_client__connect(struct agent_client *c, const char *uds_path,
			  uint32_t port, int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int64_t deadline = clock__mono_ms() + timeout_ms;
	int fd, rc;

	c->guest_errno = 0;
	if (c->fd >= 0)
		return agent_wire__fail(c, -EISCONN, "already connected");
	if (timeout_ms <= 0)
		return agent_wire__fail(c, -EINVAL, "bad timeout");
	if (strlen(uds_path) >= sizeof(sa.sun_path))
		return agent_wire__fail(c, -ENAMETOOLONG,
					"%s: path too long for a socket",
					uds_path);
	strcpy(sa.sun_path, uds_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return agent_wire__fail(c, -errno, "socket: %s",
					strerror(errno));
	/* AF_UNIX says EAGAIN while the listener's backlog is full. */
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		if (rc == -EINTR)
			continue;
		if (rc == -EINPROGRESS) {
			int err = 0;
			socklen_t sl = sizeof(err);

			rc = clock__wait_fd(fd, POLLOUT, deadline);
			if (rc == 0 &&
			    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0)
				rc = -errno;
			else if (rc == 0)
				rc = -err;
			if (rc == 0)
				break;
		} else if (rc == -EAGAIN && clock__mono_ms() < deadline) {
			usleep(10000);
			continue;
		}
		if (rc == -EAGAIN || rc == -ETIMEDOUT)
			agent_wire__fail(c, -ETIMEDOUT,
					 "%s: connection not accepted in time",
					 uds_path);
		else
			agent_wire__fail(c, rc, "%s: %s", uds_path,
					 strerror(-rc));
		close(fd);
		return rc == -EAGAIN ? -ETIMEDOUT : rc;
	}
	rc = handshake(c, fd, uds_path, port, deadline);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	c->fd = fd;
	c->rx_have = 0;
	c->tx_off = c->tx_len = 0;
	return 0;
}

void agent_client__close(struct agent_client *c)
{
	agent_wire__close(c);
}

bool agent_client__idle_ok(const struct agent_client *c)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };

	return c->fd >= 0 && !c->rx_have && c->tx_off == c->tx_len &&
	       poll(&pfd, 1, 0) == 0;
}

int agent_client__detach_fd(struct agent_client *c)
{
	int fd = c->fd;

	if (fd < 0)
		return agent_wire__fail(c, -ENOTCONN, "not connected");
	c->fd = -1;
	c->rx_have = 0;
	c->tx_off = c->tx_len = 0;
	return fd;
}

int agent_client__attach_fd(struct agent_client *c, int fd)
{
	int fl;

	c->guest_errno = 0;
	if (c->fd >= 0) {
		close(fd);
		return agent_wire__fail(c, -EISCONN, "already connected");
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
		int rc = -errno;

		close(fd);
		return agent_wire__fail(c, rc, "fd %d: %s", fd, strerror(-rc));
	}
	c->fd = fd;
	c->rx_have = 0;
	c->tx_off = c->tx_len = 0;
	return 0;
}

/* ---- ping --------------------------------------------------------------- */

struct ping_ctx {
	uint8_t cookie[8];
};

static int ping_frame(struct op *op, const struct ember_agent_hdr *h,
		      const uint8_t *p)
{
	struct ping_ctx *x = op->ctx;

	if (h->type == EMBER_AGENT_ERROR) {
		int rc = agent_wire__guest_error(op->c, p, h->len);

		op->c->guest_errno = 0; /* a PING has no failure of its own */
		return rc == -EREMOTEIO ? -EPROTO : rc;
	}
	if (h->type != EMBER_AGENT_PONG)
		return agent_wire__unexpected(op->c, h);
	if (h->len != sizeof(x->cookie) || memcmp(p, x->cookie, h->len))
		return agent_wire__fail(op->c, -EPROTO,
					"PONG does not echo the PING");
	op->done = 1;
	return 0;
}

int agent_client__ping(struct agent_client *c, int timeout_ms)
{
	struct ping_ctx x;
	struct op op = {
		.c = c,
		.frame = ping_frame,
		.in_fd = -1,
		.sig_fd = -1,
		.ctx = &x,
	};
	int rc;

	if (timeout_ms <= 0)
		return agent_wire__fail(c, -EINVAL, "bad timeout");
	if (c->fd < 0)
		return agent_wire__fail(c, -ENOTCONN,
					"not connected to the agent");
	op.deadline_ms = clock__mono_ms() + timeout_ms;
	if (getrandom(x.cookie, sizeof(x.cookie), GRND_NONBLOCK) !=
	    (ssize_t)sizeof(x.cookie))
		memcpy(x.cookie, &op.deadline_ms, sizeof(x.cookie));
	op.stream = agent_wire__new_stream(c);
	rc = agent_wire__tx_frame(c, EMBER_AGENT_PING, op.stream, x.cookie,
				  sizeof(x.cookie));
	if (rc < 0)
		return rc;
	rc = agent_wire__pump(&op);
	if (rc == -ETIMEDOUT)
		agent_wire__fail(c, rc,
				 "the agent did not answer PING within %d ms",
				 timeout_ms);
	return rc;
}

/* ---- init after a restore ---------------------------------------------- */

static int init_frame(struct op *op, const struct ember_agent_hdr *h,
		      const uint8_t *p)
{
	char why[sizeof(op->c->err)];
	int rc;

	if (h->type == EMBER_AGENT_ERROR) {
		op->done = 1;
		rc = agent_wire__guest_error(op->c, p, h->len);
		if (rc == -EREMOTEIO && op->c->guest_errno == EPROTO) {
			memcpy(why, op->c->err, sizeof(why));
			agent_wire__fail(
				op->c, rc,
				"the agent refused INIT (an agent older than "
				"this host does not know it): %s",
				why);
		}
		return rc;
	}
	if (h->type != EMBER_AGENT_OK)
		return agent_wire__unexpected(op->c, h);
	if (h->len)
		return agent_wire__fail(op->c, -EPROTO,
					"OK frame with a payload");
	op->done = 1;
	return 0;
}

/* Fill @buf with @len bytes from the kernel's generator: 0 or -errno. */
static int host_random(uint8_t *buf, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = getrandom(buf + off, len - off, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		off += (size_t)n;
	}
	return 0;
}

int agent_client__init_guest(struct agent_client *c, int timeout_ms)
{
	uint8_t rnd[AGENT_CLIENT_INIT_ENTROPY];
	struct op op = {
		.c = c,
		.frame = init_frame,
		.in_fd = -1,
		.sig_fd = -1,
	};
	const size_t cap = 2 * EMBER_AGENT_TLV_HDR + EMBER_AGENT_TIME_SIZE +
			   EMBER_AGENT_MAX_ENTROPY;
	struct timespec now;
	uint8_t *b;
	long len;
	int rc;

	c->guest_errno = 0;
	if (timeout_ms <= 0)
		return agent_wire__fail(c, -EINVAL, "bad timeout");
	if (c->fd < 0)
		return agent_wire__fail(c, -ENOTCONN,
					"not connected to the agent");
	b = agent_wire__tx_space(c, EMBER_AGENT_HDR_SIZE + cap);
	if (!b)
		return agent_wire__fail(c, -ENOBUFS, "transmit buffer full");
	rc = host_random(rnd, sizeof(rnd));
	if (rc < 0)
		return agent_wire__fail(c, rc, "getrandom: %s", strerror(-rc));
	/* As late as can be: the guest's clock is set to this. */
	clock_gettime(CLOCK_REALTIME, &now);
	len = now.tv_sec < 0 ?
		      EMBER_AGENT_E_FIELD :
		      ember_agent_init_encode(b + EMBER_AGENT_HDR_SIZE, cap, 1,
					      (uint64_t)now.tv_sec,
					      (uint32_t)now.tv_nsec, rnd,
					      sizeof(rnd));
	explicit_bzero(rnd, sizeof(rnd));
	if (len < 0)
		return agent_wire__fail(c, -EINVAL,
					"the host clock is out of range");
	op.stream = agent_wire__new_stream(c);
	agent_wire__tx_commit(c, EMBER_AGENT_INIT, op.stream, (uint32_t)len);
	op.deadline_ms = clock__mono_ms() + timeout_ms;
	rc = agent_wire__pump(&op);
	/* Nothing else was queued meanwhile: the frame is still at @b. */
	explicit_bzero(b, EMBER_AGENT_HDR_SIZE + (size_t)len);
	if (rc == -ETIMEDOUT)
		agent_wire__fail(c, rc,
				 "the agent did not answer INIT within %d ms",
				 timeout_ms);
	return rc;
}
