// SPDX-License-Identifier: Apache-2.0
/*
 * The host side of the guest agent's protocol: see agent_client.h and
 * guest-init/PROTOCOL.md.
 *
 * One poll(2) loop (pump) drives every operation: it keeps the socket
 * non-blocking, sends what the transmit buffer holds as the socket takes
 * it, reads frames as they come (they are never left unread: the agent's
 * own writes block, and a host that stops reading stalls the guest) and
 * feeds an optional input fd (stdin, a host file) only once the transmit
 * buffer is empty, so memory stays bounded whatever the input's size.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../../guest-init/protocol.h"
#include "agent_client.h"
#include "clock.h"
#include "files.h"

#define FRAME_MAX (EMBER_AGENT_HDR_SIZE + EMBER_AGENT_MAX_PAYLOAD)
/* Room for one frame of any size plus the small ones queued behind it. */
#define TX_CAP (2 * FRAME_MAX)
/* Host file data per FILE_DATA frame. */
#define FILE_CHUNK (256U << 10)
/*
 * stdin per STDIN frame: half a pipe.  The agent writes STDIN to the
 * child's pipe blocking, so small frames keep it serving the child's
 * output in between (PROTOCOL.md, flow control).
 */
#define STDIN_CHUNK (32U << 10)
/* How long past the guest's exec timeout the host still waits for EXIT. */
#define EXEC_GRACE_MS 60000
/* The longest handshake reply line: "OK 4294967295\n". */
#define REPLY_MAX 32

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

/* One operation in flight, driven by pump(). */
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
	int in_fd; /* -1: none */
	int sig_fd; /* -1: none */
	int64_t deadline_ms; /* absolute (CLOCK_MONOTONIC); 0: none */
	int idle_ms; /* 0: none */
	int done;
	int late_esrch; /* an ERROR(ESRCH) on this stream is not final */
	void *ctx;
};

__attribute__((format(printf, 3, 4))) static int
fail(struct agent_client *c, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return rc;
}

static void close_conn(struct agent_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->rx_have = 0;
	c->tx_off = c->tx_len = 0;
}

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
	close_conn(c);
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
	size_t off = 0, len, n = 0;
	unsigned long v;
	char *end;
	int rc;

	len = (size_t)snprintf(req, sizeof(req), "CONNECT %u\n", port);
	while (off < len) {
		ssize_t w = send(fd, req + off, len - off, MSG_NOSIGNAL);

		if (w > 0) {
			off += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			rc = clock__wait_fd(fd, POLLOUT, deadline);
			if (rc < 0)
				goto timeout;
			continue;
		}
		return fail(c, -ECONNRESET, "%s: the VMM closed the connection",
			    path);
	}
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
			return fail(
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
	return fail(c, -EPROTO, "%s: unexpected reply to CONNECT: \"%s\"", path,
		    line);
timeout:
	if (rc == -ETIMEDOUT)
		return fail(c, rc, "%s: no answer to CONNECT", path);
	return fail(c, rc, "%s: %s", path, strerror(-rc));
}

int agent_client__connect(struct agent_client *c, const char *uds_path,
			  uint32_t port, int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int64_t deadline = clock__mono_ms() + timeout_ms;
	int fd, rc;

	c->guest_errno = 0;
	if (c->fd >= 0)
		return fail(c, -EISCONN, "already connected");
	if (timeout_ms <= 0)
		return fail(c, -EINVAL, "bad timeout");
	if (strlen(uds_path) >= sizeof(sa.sun_path))
		return fail(c, -ENAMETOOLONG, "%s: path too long for a socket",
			    uds_path);
	strcpy(sa.sun_path, uds_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return fail(c, -errno, "socket: %s", strerror(errno));
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
			fail(c, -ETIMEDOUT,
			     "%s: connection not accepted in time", uds_path);
		else
			fail(c, rc, "%s: %s", uds_path, strerror(-rc));
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
	close_conn(c);
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
		return fail(c, -ENOTCONN, "not connected");
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
		return fail(c, -EISCONN, "already connected");
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
		int rc = -errno;

		close(fd);
		return fail(c, rc, "fd %d: %s", fd, strerror(-rc));
	}
	c->fd = fd;
	c->rx_have = 0;
	c->tx_off = c->tx_len = 0;
	return 0;
}

/* ---- frames ------------------------------------------------------------- */

/* Room for @len more bytes at the end of the transmit buffer, or NULL. */
static uint8_t *tx_space(struct agent_client *c, size_t len)
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

/* Queue a frame whose payload is already at tx_space() + header. */
static void tx_commit(struct agent_client *c, uint16_t type, uint32_t stream,
		      uint32_t len)
{
	ember_agent_hdr_encode(c->tx + c->tx_len, type, stream, len);
	c->tx_len += EMBER_AGENT_HDR_SIZE + len;
}

static int tx_frame(struct agent_client *c, uint16_t type, uint32_t stream,
		    const void *payload, uint32_t len)
{
	uint8_t *p = tx_space(c, EMBER_AGENT_HDR_SIZE + (size_t)len);

	if (!p)
		return fail(c, -ENOBUFS, "transmit buffer full");
	if (len)
		memcpy(p + EMBER_AGENT_HDR_SIZE, payload, len);
	tx_commit(c, type, stream, len);
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
			return fail(c, -errno, "sending to the agent: %s",
				    strerror(errno));
		return fail(c, -ECONNRESET, "the agent closed the connection");
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
		return fail(c, -errno, "reading from the agent: %s",
			    strerror(errno));
	if (n <= 0)
		return fail(c, -ECONNRESET,
			    c->rx_have ? "the agent closed the connection in "
					 "the middle of a frame" :
					 "the agent closed the connection");
	c->last_io_ms = clock__mono_ms();
	c->rx_have += (size_t)n;
	if (c->rx_have == EMBER_AGENT_HDR_SIZE) {
		rc = ember_agent_hdr_decode(c->rx, c->rx_have, &c->rx_hdr);
		if (rc < 0)
			return fail(c, -EPROTO,
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

/*
 * The guest's ERROR payload as one line of text in c->err; sets
 * c->guest_errno.  Returns -EREMOTEIO, or -EPROTO for a bad payload.
 */
static int guest_error(struct agent_client *c, const uint8_t *p, uint32_t len)
{
	char msg[201];
	const char *m, *what;
	uint32_t code;
	size_t ml, i;

	if (ember_agent_error_decode(p, len, &code, &m, &ml) < 0)
		return fail(c, -EPROTO, "malformed ERROR frame from the agent");
	if (code == 0 || code > 4095)
		return fail(c, -EPROTO, "ERROR frame with errno %u", code);
	if (ml > sizeof(msg) - 1)
		ml = sizeof(msg) - 1;
	for (i = 0; i < ml; i++)
		msg[i] = m[i] >= 0x20 && m[i] < 0x7f ? m[i] : '?';
	msg[i] = '\0';
	c->guest_errno = (int)code;
	what = strerror((int)code);
	if (!ml)
		return fail(c, -EREMOTEIO, "guest: %s", what);
	if (strstr(msg, what))
		return fail(c, -EREMOTEIO, "guest: %s", msg);
	return fail(c, -EREMOTEIO, "guest: %s: %s", what, msg);
}

static const char *type_name(uint16_t type)
{
	static const char *const names[] = {
		"?",	     "PING",	   "PONG",	"EXEC",
		"STDIN",     "STDOUT",	   "STDERR",	"EXIT",
		"KILL",	     "WRITE_FILE", "FILE_DATA", "FILE_END",
		"READ_FILE", "OK",	   "ERROR",	"INIT",
	};

	return type <= EMBER_AGENT_TYPE_MAX ? names[type] : "?";
}

static int unexpected(struct agent_client *c, const struct ember_agent_hdr *h)
{
	return fail(c, -EPROTO, "unexpected %s frame from the agent",
		    type_name(h->type));
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
		return fail(c, -EPROTO, "%s frame for unknown stream %u",
			    type_name(h->type), h->stream);
	/* A late answer to a STDIN or KILL of an earlier, finished stream. */
	if (h->stream && h->stream < op->stream && is_esrch(p, h->len))
		return 0;
	rc = guest_error(c, p, h->len);
	c->guest_errno = 0;
	if (rc != -EREMOTEIO)
		return rc;
	memcpy(why, c->err, sizeof(why));
	if (h->stream == 0)
		return fail(c, -EPROTO, "the agent rejected our framing (%s)",
			    why);
	return fail(c, -EPROTO, "ERROR for unknown stream %u (%s)", h->stream,
		    why);
}

static uint32_t new_stream(struct agent_client *c)
{
	if (++c->last_stream == 0) /* stream 0 is the agent's own */
		c->last_stream = 1;
	return c->last_stream;
}

/*
 * Drive @op until it is done: 0 or its result, or a negative errno.  Any
 * failure other than the guest's own answer (-EREMOTEIO) leaves the
 * connection at an unknown point of the byte stream: it is closed.
 */
static int pump(struct op *op)
{
	struct agent_client *c = op->c;
	int rc = 0;

	if (c->fd < 0)
		return fail(c, -ENOTCONN, "not connected to the agent");
	c->guest_errno = 0;
	c->last_io_ms = clock__mono_ms();
	while (!op->done) {
		struct pollfd pfd[3];
		int n = 0, i_in = -1, i_sig = -1, timeout = -1, r;
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
		if (op->deadline_ms)
			limit = op->deadline_ms;
		if (op->idle_ms && c->last_io_ms + op->idle_ms < limit)
			limit = c->last_io_ms + op->idle_ms;
		if (limit != INT64_MAX) {
			if (limit <= now) {
				rc = fail(c, -ETIMEDOUT,
					  "the agent stopped answering");
				break;
			}
			timeout = limit - now > 60000 ? 60000 :
							(int)(limit - now);
		}
		r = poll(pfd, (nfds_t)n, timeout);
		if (r < 0 && errno != EINTR) {
			rc = fail(c, -errno, "poll: %s", strerror(errno));
			break;
		}
		if (r <= 0)
			continue;
		if (i_sig >= 0 && pfd[i_sig].revents) {
			rc = op->signal(op);
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
		close_conn(c);
	return rc;
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
		int rc = guest_error(op->c, p, h->len);

		op->c->guest_errno = 0; /* a PING has no failure of its own */
		return rc == -EREMOTEIO ? -EPROTO : rc;
	}
	if (h->type != EMBER_AGENT_PONG)
		return unexpected(op->c, h);
	if (h->len != sizeof(x->cookie) || memcmp(p, x->cookie, h->len))
		return fail(op->c, -EPROTO, "PONG does not echo the PING");
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
		return fail(c, -EINVAL, "bad timeout");
	if (c->fd < 0)
		return fail(c, -ENOTCONN, "not connected to the agent");
	op.deadline_ms = clock__mono_ms() + timeout_ms;
	if (getrandom(x.cookie, sizeof(x.cookie), GRND_NONBLOCK) !=
	    (ssize_t)sizeof(x.cookie))
		memcpy(x.cookie, &op.deadline_ms, sizeof(x.cookie));
	op.stream = new_stream(c);
	rc = tx_frame(c, EMBER_AGENT_PING, op.stream, x.cookie,
		      sizeof(x.cookie));
	if (rc < 0)
		return rc;
	rc = pump(&op);
	if (rc == -ETIMEDOUT)
		fail(c, rc, "the agent did not answer PING within %d ms",
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
		rc = guest_error(op->c, p, h->len);
		if (rc == -EREMOTEIO && op->c->guest_errno == EPROTO) {
			memcpy(why, op->c->err, sizeof(why));
			fail(op->c, rc,
			     "the agent refused INIT (an agent older than "
			     "this host does not know it): %s",
			     why);
		}
		return rc;
	}
	if (h->type != EMBER_AGENT_OK)
		return unexpected(op->c, h);
	if (h->len)
		return fail(op->c, -EPROTO, "OK frame with a payload");
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
		return fail(c, -EINVAL, "bad timeout");
	if (c->fd < 0)
		return fail(c, -ENOTCONN, "not connected to the agent");
	b = tx_space(c, EMBER_AGENT_HDR_SIZE + cap);
	if (!b)
		return fail(c, -ENOBUFS, "transmit buffer full");
	rc = host_random(rnd, sizeof(rnd));
	if (rc < 0)
		return fail(c, rc, "getrandom: %s", strerror(-rc));
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
		return fail(c, -EINVAL, "the host clock is out of range");
	op.stream = new_stream(c);
	tx_commit(c, EMBER_AGENT_INIT, op.stream, (uint32_t)len);
	op.deadline_ms = clock__mono_ms() + timeout_ms;
	rc = pump(&op);
	/* Nothing else was queued meanwhile: the frame is still at @b. */
	explicit_bzero(b, EMBER_AGENT_HDR_SIZE + (size_t)len);
	if (rc == -ETIMEDOUT)
		fail(c, rc, "the agent did not answer INIT within %d ms",
		     timeout_ms);
	return rc;
}

/* ---- exec --------------------------------------------------------------- */

struct exec_ctx {
	const struct agent_exec_req *req;
	struct agent_exec_result *res;
	int out_gone; /* stdout_fd said EPIPE: output dropped */
	int err_gone;
	int stops; /* SIGINT/SIGTERM/SIGHUP forwarded so far */
	uint64_t out_bytes, err_bytes; /* written so far, for out_max */
};

/*
 * Write @len bytes of a stream to @fd, keeping at most @max (0: all) of
 * the stream in total (*@done counts what was kept): the rest is read
 * from the connection and dropped.
 */
static int keep_output(int fd, const uint8_t *p, uint32_t len, uint64_t max,
		       uint64_t *done)
{
	uint64_t room = max ? (max > *done ? max - *done : 0) : len;

	if (room < len)
		len = (uint32_t)room;
	*done += len;
	return len ? files__write_all(fd, p, len) : 0;
}

static int exec_kill(struct op *op, int sig)
{
	uint8_t b[4];

	ember_agent_put32(b, (uint32_t)sig);
	op->late_esrch = 1; /* the process may end before the KILL lands */
	return tx_frame(op->c, EMBER_AGENT_KILL, op->stream, b, sizeof(b));
}

static int exec_frame(struct op *op, const struct ember_agent_hdr *h,
		      const uint8_t *p)
{
	struct exec_ctx *x = op->ctx;
	uint32_t kind;
	int32_t code;
	int rc;

	switch (h->type) {
	case EMBER_AGENT_STDOUT:
		if (x->out_gone || !h->len)
			return 0;
		rc = keep_output(x->req->stdout_fd, p, h->len, x->req->out_max,
				 &x->out_bytes);
		if (rc == -EPIPE) {
			/* Like a local pipeline: the writer gets SIGPIPE. */
			x->out_gone = 1;
			return exec_kill(op, SIGPIPE);
		}
		if (rc < 0)
			return fail(op->c, -EIO, "writing the output: %s",
				    strerror(-rc));
		return 0;
	case EMBER_AGENT_STDERR:
		/* Nowhere to report a failing stderr: drop it from then on. */
		if (!x->err_gone && h->len &&
		    keep_output(x->req->stderr_fd, p, h->len, x->req->out_max,
				&x->err_bytes) < 0)
			x->err_gone = 1;
		return 0;
	case EMBER_AGENT_EXIT:
		if (ember_agent_exit_decode(p, h->len, &kind, &code) < 0)
			return fail(op->c, -EPROTO, "malformed EXIT frame");
		if ((kind == EMBER_AGENT_EXITED && (code < 0 || code > 255)) ||
		    (kind != EMBER_AGENT_EXITED && (code < 1 || code > 64)))
			return fail(op->c, -EPROTO,
				    "EXIT frame with kind %u code %d", kind,
				    code);
		x->res->kind = kind;
		x->res->code = code;
		op->done = 1;
		return 0;
	case EMBER_AGENT_ERROR:
		op->done = 1;
		return guest_error(op->c, p, h->len);
	default:
		return unexpected(op->c, h);
	}
}

/* stdin is readable and nothing waits to be sent: one STDIN frame. */
static int exec_input(struct op *op)
{
	struct exec_ctx *x = op->ctx;
	uint8_t *b = tx_space(op->c, EMBER_AGENT_HDR_SIZE + STDIN_CHUNK);
	ssize_t n;

	if (!b)
		return fail(op->c, -ENOBUFS, "transmit buffer full");
	n = read(x->req->stdin_fd, b + EMBER_AGENT_HDR_SIZE, STDIN_CHUNK);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	op->late_esrch = 1; /* the child may be gone: STDIN gets ESRCH */
	if (n <= 0) {
		/* End of input (a read error ends it too): close its stdin. */
		op->in_fd = -1;
		n = 0;
	}
	tx_commit(op->c, EMBER_AGENT_STDIN, op->stream, (uint32_t)n);
	return 0;
}

static int exec_signal(struct op *op)
{
	struct exec_ctx *x = op->ctx;
	struct signalfd_siginfo si;
	ssize_t n = read(op->sig_fd, &si, sizeof(si));
	int sig;

	if (n != (ssize_t)sizeof(si))
		return 0;
	sig = (int)si.ssi_signo;
	if (sig < 1 || sig > 64)
		return 0;
	if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
		if (++x->stops >= 3)
			sig = SIGKILL;
	}
	return exec_kill(op, sig);
}

/* Encode @req's fields into the @cap bytes at @b: length or -E2BIG. */
static long exec_encode(struct agent_client *c, const struct agent_exec_req *r,
			uint8_t *b, size_t cap)
{
	size_t off = 0, n;
	int rc = 0;

	for (n = 0; r->argv[n] && rc == 0; n++)
		rc = n < EMBER_AGENT_MAX_ARGS ?
			     ember_agent_tlv_put_str(b, cap, &off,
						     EMBER_AGENT_T_ARG,
						     r->argv[n]) :
			     EMBER_AGENT_E_COUNT;
	for (n = 0; r->env && r->env[n] && rc == 0; n++)
		rc = n < EMBER_AGENT_MAX_ENV ?
			     ember_agent_tlv_put_str(b, cap, &off,
						     EMBER_AGENT_T_ENV,
						     r->env[n]) :
			     EMBER_AGENT_E_COUNT;
	if (r->cwd && rc == 0)
		rc = ember_agent_tlv_put_str(b, cap, &off, EMBER_AGENT_T_CWD,
					     r->cwd);
	if (r->timeout_ms && rc == 0)
		rc = ember_agent_tlv_put_u32(
			b, cap, &off, EMBER_AGENT_T_TIMEOUT, r->timeout_ms);
	if (r->stdin_fd >= 0 && rc == 0)
		rc = ember_agent_tlv_put_u32(b, cap, &off, EMBER_AGENT_T_FLAGS,
					     EMBER_AGENT_F_STDIN);
	if (rc == EMBER_AGENT_E_COUNT)
		return fail(c, -E2BIG, "more than %d arguments or variables",
			    EMBER_AGENT_MAX_ARGS);
	if (rc < 0)
		return fail(c, -E2BIG, "command and environment over %u bytes",
			    EMBER_AGENT_MAX_PAYLOAD);
	return (long)off;
}

int agent_client__exec(struct agent_client *c, const struct agent_exec_req *req,
		       struct agent_exec_result *res)
{
	struct exec_ctx x = { .req = req, .res = res };
	struct op op = {
		.c = c,
		.frame = exec_frame,
		.input = exec_input,
		.signal = exec_signal,
		.in_fd = req->stdin_fd,
		.sig_fd = req->sig_fd,
		.ctx = &x,
	};
	uint8_t *b;
	long len;
	int rc;

	c->guest_errno = 0;
	if (!req->argv || !req->argv[0] || req->stdout_fd < 0 ||
	    req->stderr_fd < 0)
		return fail(c, -EINVAL, "nothing to run");
	if (c->fd < 0)
		return fail(c, -ENOTCONN, "not connected to the agent");
	b = tx_space(c, FRAME_MAX);
	if (!b)
		return fail(c, -ENOBUFS, "transmit buffer full");
	len = exec_encode(c, req, b + EMBER_AGENT_HDR_SIZE,
			  EMBER_AGENT_MAX_PAYLOAD);
	if (len < 0)
		return (int)len;
	op.stream = new_stream(c);
	tx_commit(c, EMBER_AGENT_EXEC, op.stream, (uint32_t)len);
	if (req->timeout_ms)
		op.deadline_ms =
			clock__mono_ms() + req->timeout_ms + EXEC_GRACE_MS;
	rc = pump(&op);
	if (rc == -ETIMEDOUT)
		fail(c, rc, "no EXIT from the agent %d s after the timeout",
		     EXEC_GRACE_MS / 1000);
	return rc;
}

/* ---- files -------------------------------------------------------------- */

struct file_ctx {
	int fd;
	uint64_t bytes;
	int end_sent;
};

static int wfile_frame(struct op *op, const struct ember_agent_hdr *h,
		       const uint8_t *p)
{
	struct file_ctx *x = op->ctx;

	if (h->type == EMBER_AGENT_ERROR) {
		op->done = 1;
		return guest_error(op->c, p, h->len);
	}
	if (h->type != EMBER_AGENT_OK || h->len || !x->end_sent)
		return unexpected(op->c, h);
	op->done = 1;
	return 0;
}

static int wfile_input(struct op *op)
{
	struct file_ctx *x = op->ctx;
	uint8_t *b = tx_space(op->c, EMBER_AGENT_HDR_SIZE + FILE_CHUNK);
	ssize_t n;

	if (!b)
		return fail(op->c, -ENOBUFS, "transmit buffer full");
	n = read(x->fd, b + EMBER_AGENT_HDR_SIZE, FILE_CHUNK);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n < 0)
		return fail(op->c, -EIO, "reading the host file: %s",
			    strerror(errno));
	if (n == 0) {
		tx_commit(op->c, EMBER_AGENT_FILE_END, op->stream, 0);
		op->in_fd = -1;
		x->end_sent = 1;
		return 0;
	}
	x->bytes += (uint64_t)n;
	if (x->bytes > EMBER_AGENT_MAX_FILE)
		return fail(op->c, -EFBIG, "the file is over %llu MiB",
			    EMBER_AGENT_MAX_FILE >> 20);
	tx_commit(op->c, EMBER_AGENT_FILE_DATA, op->stream, (uint32_t)n);
	return 0;
}

int agent_client__write_file(struct agent_client *c, int src_fd,
			     const char *guest_path, uint32_t mode, int idle_ms)
{
	struct file_ctx x = { .fd = src_fd };
	struct op op = {
		.c = c,
		.frame = wfile_frame,
		.input = wfile_input,
		.in_fd = src_fd,
		.sig_fd = -1,
		.idle_ms = idle_ms > 0 ? idle_ms : 0,
		.ctx = &x,
	};
	uint8_t *b;
	size_t off = 0;
	struct stat st;
	off_t pos;

	c->guest_errno = 0;
	if (mode & ~07777U || src_fd < 0 || !guest_path || !*guest_path)
		return fail(c, -EINVAL, "bad file request");
	if (c->fd < 0)
		return fail(c, -ENOTCONN, "not connected to the agent");
	if (fstat(src_fd, &st) == 0 && S_ISREG(st.st_mode)) {
		pos = lseek(src_fd, 0, SEEK_CUR);
		if (pos >= 0 && pos < st.st_size &&
		    (uint64_t)(st.st_size - pos) > EMBER_AGENT_MAX_FILE)
			return fail(c, -EFBIG, "the file is over %llu MiB",
				    EMBER_AGENT_MAX_FILE >> 20);
	}
	b = tx_space(c, FRAME_MAX);
	if (!b)
		return fail(c, -ENOBUFS, "transmit buffer full");
	if (ember_agent_tlv_put_str(b + EMBER_AGENT_HDR_SIZE,
				    EMBER_AGENT_MAX_PAYLOAD, &off,
				    EMBER_AGENT_T_PATH, guest_path) < 0 ||
	    ember_agent_tlv_put_u32(b + EMBER_AGENT_HDR_SIZE,
				    EMBER_AGENT_MAX_PAYLOAD, &off,
				    EMBER_AGENT_T_MODE, mode) < 0)
		return fail(c, -ENAMETOOLONG, "guest path too long");
	op.stream = new_stream(c);
	tx_commit(c, EMBER_AGENT_WRITE_FILE, op.stream, (uint32_t)off);
	/* Once the guest answered early, what is still queued gets ESRCH. */
	return pump(&op);
}

static int rfile_frame(struct op *op, const struct ember_agent_hdr *h,
		       const uint8_t *p)
{
	struct file_ctx *x = op->ctx;
	int rc;

	switch (h->type) {
	case EMBER_AGENT_FILE_DATA:
		x->bytes += h->len;
		if (x->bytes > EMBER_AGENT_MAX_FILE)
			return fail(op->c, -EFBIG,
				    "the agent sent more than %llu MiB",
				    EMBER_AGENT_MAX_FILE >> 20);
		rc = files__write_all(x->fd, p, h->len);
		if (rc < 0)
			return fail(op->c, -EIO, "writing the host file: %s",
				    strerror(-rc));
		return 0;
	case EMBER_AGENT_FILE_END:
		if (h->len)
			return fail(op->c, -EPROTO, "FILE_END with a payload");
		op->done = 1;
		return 0;
	case EMBER_AGENT_ERROR:
		op->done = 1;
		return guest_error(op->c, p, h->len);
	default:
		return unexpected(op->c, h);
	}
}

int agent_client__read_file(struct agent_client *c, const char *guest_path,
			    int dst_fd, int idle_ms)
{
	struct file_ctx x = { .fd = dst_fd };
	struct op op = {
		.c = c,
		.frame = rfile_frame,
		.in_fd = -1,
		.sig_fd = -1,
		.idle_ms = idle_ms > 0 ? idle_ms : 0,
		.ctx = &x,
	};
	uint8_t *b;
	size_t off = 0;

	c->guest_errno = 0;
	if (dst_fd < 0 || !guest_path || !*guest_path)
		return fail(c, -EINVAL, "bad file request");
	if (c->fd < 0)
		return fail(c, -ENOTCONN, "not connected to the agent");
	b = tx_space(c, FRAME_MAX);
	if (!b)
		return fail(c, -ENOBUFS, "transmit buffer full");
	if (ember_agent_tlv_put_str(b + EMBER_AGENT_HDR_SIZE,
				    EMBER_AGENT_MAX_PAYLOAD, &off,
				    EMBER_AGENT_T_PATH, guest_path) < 0)
		return fail(c, -ENAMETOOLONG, "guest path too long");
	op.stream = new_stream(c);
	tx_commit(c, EMBER_AGENT_READ_FILE, op.stream, (uint32_t)off);
	return pump(&op);
}
