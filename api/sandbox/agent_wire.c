// SPDX-License-Identifier: Apache-2.0
/* The wire under the agent client: see agent_wire.h. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../guest-init/protocol.h"
#include "agent_wire.h"
#include "clock.h"

int agent_wire__fail(struct agent_client *c, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return rc;
}

void agent_wire__close(struct agent_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->rx_have = 0;
	c->tx_off = c->tx_len = 0;
}

uint8_t *agent_wire__tx_space(struct agent_client *c, size_t len)
{
	if (c->tx_off == c->tx_len) {
		c->tx_off = c->tx_len = 0;
	} else if (TX_CAP - c->tx_len < len && c->tx_off) {
		memmove(c->tx, c->tx + c->tx_off, c->tx_len - c->tx_off);
		c->tx_len -= c->tx_off;
		c->tx_off = 0;
	}
	if (TX_CAP - c->tx_len < len)
		return NULL;
	return c->tx + c->tx_len;
}

void agent_wire__tx_commit(struct agent_client *c, uint16_t type,
			   uint32_t stream, uint32_t len)
{
	ember_agent_hdr_encode(c->tx + c->tx_len, type, stream, len);
	c->tx_len += EMBER_AGENT_HDR_SIZE + len;
}

int agent_wire__request(struct agent_client *c, uint8_t **b)
{
	if (c->fd < 0)
		return agent_wire__fail(c, -ENOTCONN,
					"not connected to the agent");
	*b = agent_wire__tx_space(c, FRAME_MAX);
	if (!*b)
		return agent_wire__fail(c, -ENOBUFS, "transmit buffer full");
	return 0;
}

ssize_t agent_wire__tx_read(struct agent_client *c, int fd, size_t max)
{
	uint8_t *b = agent_wire__tx_space(c, EMBER_AGENT_HDR_SIZE + max);
	ssize_t n;

	if (!b)
		return agent_wire__fail(c, -ENOBUFS, "transmit buffer full");
	n = read(fd, b + EMBER_AGENT_HDR_SIZE, max);
	if (n < 0)
		return errno == EINTR ? -EAGAIN : -errno;
	return n;
}

int agent_wire__tx_frame(struct agent_client *c, uint16_t type, uint32_t stream,
			 const void *payload, uint32_t len)
{
	uint8_t *p =
		agent_wire__tx_space(c, EMBER_AGENT_HDR_SIZE + (size_t)len);

	if (!p)
		return agent_wire__fail(c, -ENOBUFS, "transmit buffer full");
	if (len)
		memcpy(p + EMBER_AGENT_HDR_SIZE, payload, len);
	agent_wire__tx_commit(c, type, stream, len);
	return 0;
}

/* Send what the socket takes now. */
static int tx_flush(struct agent_client *c)
{
	while (c->tx_off < c->tx_len) {
		ssize_t n =
			send(c->fd, c->tx + c->tx_off, c->tx_len - c->tx_off,
			     MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			c->tx_off += (size_t)n;
			c->last_io_ms = clock__mono_ms();
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n < 0 && errno != EPIPE && errno != ECONNRESET)
			return agent_wire__fail(c, -errno,
						"sending to the agent: %s",
						strerror(errno));
		return agent_wire__fail(c, -ECONNRESET,
					"the agent closed the connection");
	}
	c->tx_off = c->tx_len = 0;
	return 0;
}

/*
 * Read what is there of the next frame: 1 with a whole frame (header in
 * *@h, payload at c->rx + header, valid until the next call), 0 when more
 * is needed, or a negative errno.
 */
static int rx_step(struct agent_client *c, struct ember_agent_hdr *h)
{
	size_t need = EMBER_AGENT_HDR_SIZE;
	ssize_t n;
	int rc;

	if (c->rx_have >= EMBER_AGENT_HDR_SIZE)
		need += c->rx_hdr.len;
	n = read(c->fd, c->rx + c->rx_have, need - c->rx_have);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n < 0 && errno != ECONNRESET)
		return agent_wire__fail(c, -errno, "reading from the agent: %s",
					strerror(errno));
	if (n <= 0)
		return agent_wire__fail(
			c, -ECONNRESET,
			c->rx_have ? "the agent closed the connection in "
				     "the middle of a frame" :
				     "the agent closed the connection");
	c->last_io_ms = clock__mono_ms();
	c->rx_have += (size_t)n;
	if (c->rx_have == EMBER_AGENT_HDR_SIZE) {
		rc = ember_agent_hdr_decode(c->rx, c->rx_have, &c->rx_hdr);
		if (rc < 0)
			return agent_wire__fail(
				c, -EPROTO,
				"malformed frame from the agent: %s",
				ember_agent_strerror(rc));
	}
	if (c->rx_have < EMBER_AGENT_HDR_SIZE ||
	    c->rx_have < EMBER_AGENT_HDR_SIZE + c->rx_hdr.len)
		return 0;
	*h = c->rx_hdr;
	c->rx_have = 0;
	return 1;
}

int agent_wire__guest_error(struct agent_client *c, const uint8_t *p,
			    uint32_t len)
{
	char msg[201];
	const char *m, *what;
	uint32_t code;
	size_t ml, i;

	if (ember_agent_error_decode(p, len, &code, &m, &ml) < 0)
		return agent_wire__fail(c, -EPROTO,
					"malformed ERROR frame from the agent");
	if (code == 0 || code > 4095)
		return agent_wire__fail(c, -EPROTO, "ERROR frame with errno %u",
					code);
	if (ml > sizeof(msg) - 1)
		ml = sizeof(msg) - 1;
	for (i = 0; i < ml; i++)
		msg[i] = m[i] >= 0x20 && m[i] < 0x7f ? m[i] : '?';
	msg[i] = '\0';
	c->guest_errno = (int)code;
	what = strerror((int)code);
	if (!ml)
		return agent_wire__fail(c, -EREMOTEIO, "guest: %s", what);
	if (strstr(msg, what))
		return agent_wire__fail(c, -EREMOTEIO, "guest: %s", msg);
	return agent_wire__fail(c, -EREMOTEIO, "guest: %s: %s", what, msg);
}

static const char *type_name(uint16_t type)
{
	static const char *const names[] = {
		"?",	     "PING",	 "PONG",      "EXEC", "STDIN",
		"STDOUT",    "STDERR",	 "EXIT",      "KILL", "WRITE_FILE",
		"FILE_DATA", "FILE_END", "READ_FILE", "OK",   "ERROR",
		"INIT",	     "RESIZE",	 "ATTACH",    "LIST", "STARTED",
		"PROCS",
	};

	if (type == EMBER_AGENT_FORWARD)
		return "FORWARD";
	return type < sizeof(names) / sizeof(names[0]) ? names[type] : "?";
}

int agent_wire__unexpected(struct agent_client *c,
			   const struct ember_agent_hdr *h)
{
	return agent_wire__fail(c, -EPROTO,
				"unexpected %s frame from the agent",
				type_name(h->type));
}

int agent_wire__other_frame(struct op *op, const struct ember_agent_hdr *h,
			    const uint8_t *p)
{
	if (h->type != EMBER_AGENT_ERROR)
		return agent_wire__unexpected(op->c, h);
	op->done = 1;
	return agent_wire__guest_error(op->c, p, h->len);
}

/* Is this ERROR payload a well-formed ESRCH? */
static int is_esrch(const uint8_t *p, uint32_t len)
{
	const char *m;
	uint32_t code;
	size_t ml;

	return ember_agent_error_decode(p, len, &code, &m, &ml) == 0 &&
	       code == ESRCH;
}

/* Route one frame to @op, or deal with it here. */
static int dispatch(struct op *op, const struct ember_agent_hdr *h,
		    const uint8_t *p)
{
	struct agent_client *c = op->c;
	char why[sizeof(c->err)];
	int rc;

	if (h->stream == op->stream) {
		if (h->type == EMBER_AGENT_ERROR && op->late_esrch &&
		    is_esrch(p, h->len))
			return 0;
		return op->frame(op, h, p);
	}
	if (h->type != EMBER_AGENT_ERROR)
		return agent_wire__fail(c, -EPROTO,
					"%s frame for unknown stream %u",
					type_name(h->type), h->stream);
	/* A late answer to a STDIN or KILL of an earlier, finished stream. */
	if (h->stream && h->stream < op->stream && is_esrch(p, h->len))
		return 0;
	rc = agent_wire__guest_error(c, p, h->len);
	c->guest_errno = 0;
	if (rc != -EREMOTEIO)
		return rc;
	memcpy(why, c->err, sizeof(why));
	if (h->stream == 0)
		return agent_wire__fail(
			c, -EPROTO, "the agent rejected our framing (%s)", why);
	return agent_wire__fail(c, -EPROTO, "ERROR for unknown stream %u (%s)",
				h->stream, why);
}

uint32_t agent_wire__new_stream(struct agent_client *c)
{
	if (++c->last_stream == 0) /* stream 0 is the agent's own */
		c->last_stream = 1;
	return c->last_stream;
}

int agent_wire__pump(struct op *op)
{
	struct agent_client *c = op->c;
	int rc = 0;

	if (c->fd < 0)
		return agent_wire__fail(c, -ENOTCONN,
					"not connected to the agent");
	c->guest_errno = 0;
	c->last_io_ms = clock__mono_ms();
	while (!op->done) {
		struct pollfd pfd[4];
		int n = 0, i_in = -1, i_sig = -1, i_ctl = -1, timeout = -1, r;
		int64_t now = clock__mono_ms(), limit = INT64_MAX;
		struct ember_agent_hdr h;

		rc = tx_flush(c);
		if (rc < 0)
			break;
		pfd[n++] = (struct pollfd){
			.fd = c->fd,
			.events = POLLIN | (c->tx_len ? POLLOUT : 0),
		};
		if (op->in_fd >= 0 && !c->tx_len) {
			i_in = n;
			pfd[n++] = (struct pollfd){ .fd = op->in_fd,
						    .events = POLLIN };
		}
		if (op->sig_fd >= 0) {
			i_sig = n;
			pfd[n++] = (struct pollfd){ .fd = op->sig_fd,
						    .events = POLLIN };
		}
		if (op->control && op->ctl_fd >= 0) {
			i_ctl = n;
			pfd[n++] = (struct pollfd){ .fd = op->ctl_fd,
						    .events = POLLIN };
		}
		if (op->deadline_ms)
			limit = op->deadline_ms;
		if (op->idle_ms && c->last_io_ms + op->idle_ms < limit)
			limit = c->last_io_ms + op->idle_ms;
		if (limit != INT64_MAX) {
			if (limit <= now) {
				rc = agent_wire__fail(
					c, -ETIMEDOUT,
					"the agent stopped answering");
				break;
			}
			timeout = limit - now > 60000 ? 60000 :
							(int)(limit - now);
		}
		r = poll(pfd, (nfds_t)n, timeout);
		if (r < 0 && errno != EINTR) {
			rc = agent_wire__fail(c, -errno, "poll: %s",
					      strerror(errno));
			break;
		}
		if (r <= 0)
			continue;
		if (i_sig >= 0 && pfd[i_sig].revents) {
			rc = op->signal(op);
			if (rc < 0)
				break;
		}
		if (i_ctl >= 0 && pfd[i_ctl].revents) {
			rc = op->control(op);
			if (rc < 0)
				break;
		}
		if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			while (!op->done && (rc = rx_step(c, &h)) > 0) {
				rc = dispatch(op, &h,
					      c->rx + EMBER_AGENT_HDR_SIZE);
				if (rc < 0)
					break;
			}
			if (rc < 0)
				break;
		}
		if (!op->done && i_in >= 0 && pfd[i_in].revents) {
			rc = op->input(op);
			if (rc < 0)
				break;
		}
	}
	if (rc < 0 && rc != -EREMOTEIO)
		agent_wire__close(c);
	return rc;
}
