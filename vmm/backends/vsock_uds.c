// SPDX-License-Identifier: Apache-2.0
/* virtio-vsock's Unix-socket host side (see vsock_uds.h). */
#include "vsock_uds.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../event.h"
#include "../log.h"

/* Connections still sending their CONNECT line count here too. */
#define UDS_MAX_CONNS (VIRTIO_VSOCK_MAX_CONNS + 64)
#define UDS_LINE_MAX  32 /* "CONNECT 4294967295\n" is 19 */
/*
 * Connections still owing their CONNECT line: at most UDS_MAX_LINE at
 * once, and one gets UDS_LINE_MS to send it before a new arrival may
 * close it, so silent clients cannot hold the table.
 */
#define UDS_MAX_LINE 64
#define UDS_LINE_MS  5000
#define UDS_PATH_MAX 100 /* room for "_4294967295" in sun_path */
/* Guest data the device lets us hold, plus the "OK <port>\n" line. */
#define UDS_OUT_CAP (VIRTIO_VSOCK_BUF_ALLOC + UDS_LINE_MAX)

enum uconn_state {
	UC_FREE = 0,
	UC_LINE, /* accepted, waiting for "CONNECT <port>\n" */
	UC_HOST_REQ, /* REQUEST sent to the guest, no answer yet */
	UC_OPEN, /* established */
};

struct uconn {
	enum uconn_state state;
	int fd;
	uint32_t events; /* epoll mask registered; 0: not registered */
	struct vsock_conn_id id;
	/* UC_LINE: the CONNECT line so far, and when the client came */
	char line[UDS_LINE_MAX];
	uint32_t line_len;
	int64_t since_ms;
	/* guest -> host: bytes not written to the socket yet */
	uint8_t *out;
	uint32_t out_off, out_len;
	uint32_t ok_len; /* the head of out is our "OK <port>\n", not data */
	uint32_t unreported; /* written, not yet passed to consumed() */
	uint32_t peer_shut; /* the guest's SHUTDOWN bits */
	/* host -> guest */
	bool reading; /* the guest has credit: read the socket */
	unsigned int credit_gen; /* bumped by every credit() */
	bool eof_sent; /* the socket's EOF went to the guest (or -EPIPE) */
	bool wr_shut; /* shutdown(SHUT_WR) done */
	bool gone; /* the device forgot the connection: close it */
	bool dirty; /* an op changed something: service it */
};

struct vsock_uds {
	struct event_loop *el; /* not owned */
	pthread_mutex_t lock; /* taken inside the transport lock */
	struct virtio_vsock *dev;
	int epfd, listen_fd, kick_fd;
	bool bound;
	char path[UDS_PATH_MAX + 1];
	uint32_t next_port;
	struct uconn conns[UDS_MAX_CONNS];
	/* Event thread only: bytes peeked from a socket for send(). */
	uint8_t scratch[VIRTIO_VSOCK_MAX_PAYLOAD];
};

/* What a service pass asks of the device, done without u->lock. */
struct uconn_todo {
	bool connect, shut_send, rst;
	uint32_t consumed, send_len;
	unsigned int credit_gen;
};

static void uds__kick(struct vsock_uds *u)
{
	uint64_t one = 1;

	if (write(u->kick_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("vsock: wake event thread: %s", strerror(errno));
}

/* Register what @c waits for (u->lock held). */
static void conn__arm(struct vsock_uds *u, struct uconn *c)
{
	struct epoll_event ev = { .data.ptr = c };
	uint32_t want = 0;
	int op;

	if (c->state == UC_LINE)
		want = EPOLLIN;
	else if (c->state == UC_OPEN && !c->gone)
		want = (c->reading && !c->eof_sent ? EPOLLIN : 0) |
		       (c->out_len ? EPOLLOUT : 0);
	/*
	 * Unregistered while it waits on the guest: epoll reports a hang-up
	 * whatever the mask, which would spin the loop.
	 */
	if (want == c->events)
		return;
	ev.events = want;
	op = !want ? EPOLL_CTL_DEL : c->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	if (epoll_ctl(u->epfd, op, c->fd, &ev) < 0)
		log_warn("vsock: epoll_ctl: %s", strerror(errno));
	c->events = want;
}

/* Close @c's socket and free its slot (u->lock held). */
static void conn__close(struct vsock_uds *u, struct uconn *c)
{
	if (c->events)
		epoll_ctl(u->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->out);
	log_debug("vsock: closed guest port %u <-> host port %u",
		  c->id.guest_port, c->id.host_port);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

static struct uconn *conn__alloc(struct vsock_uds *u, int fd,
				 enum uconn_state state)
{
	unsigned int i;

	for (i = 0; i < UDS_MAX_CONNS; i++) {
		struct uconn *c = &u->conns[i];

		if (c->state != UC_FREE)
			continue;
		memset(c, 0, sizeof(*c));
		c->state = state;
		c->fd = fd;
		return c;
	}
	return NULL;
}

/* The live connection named @id (u->lock held), or NULL. */
static struct uconn *conn__find(struct vsock_uds *u, struct vsock_conn_id id)
{
	unsigned int i;

	for (i = 0; i < UDS_MAX_CONNS; i++) {
		struct uconn *c = &u->conns[i];

		if ((c->state == UC_HOST_REQ || c->state == UC_OPEN) &&
		    !c->gone && c->id.guest_port == id.guest_port &&
		    c->id.host_port == id.host_port)
			return c;
	}
	return NULL;
}

/* Append to @c's out buffer (u->lock held).  Returns 0 or -ENOBUFS. */
static int conn__queue_out(struct uconn *c, const void *buf, uint32_t len)
{
	if (!c->out) {
		c->out = malloc(UDS_OUT_CAP);
		if (!c->out)
			return -ENOMEM;
	}
	if (len > UDS_OUT_CAP - c->out_len)
		return -ENOBUFS;
	if (c->out_off + c->out_len + len > UDS_OUT_CAP) {
		memmove(c->out, c->out + c->out_off, c->out_len);
		c->out_off = 0;
	}
	memcpy(c->out + c->out_off + c->out_len, buf, len);
	c->out_len += len;
	return 0;
}

/* --- backend ops: transport lock held, any thread ------------------------ */

static int uds__connect(void *backend, struct vsock_conn_id id)
{
	struct vsock_uds *u = backend;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct uconn *c;
	int fd, ret = 0;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s_%u", u->path,
		 id.host_port);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A Unix connect() completes or fails at once (EAGAIN: backlog). */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		log_debug("vsock: guest port %u -> %s: %s", id.guest_port,
			  sa.sun_path, strerror(errno));
		close(fd);
		return -ECONNREFUSED;
	}
	pthread_mutex_lock(&u->lock);
	c = conn__alloc(u, fd, UC_OPEN);
	if (!c) {
		close(fd);
		ret = -ENOSPC;
	} else {
		c->id = id;
		c->reading = true;
		conn__arm(u, c);
		log_debug("vsock: guest port %u connected to %s", id.guest_port,
			  sa.sun_path);
	}
	pthread_mutex_unlock(&u->lock);
	return ret;
}

static void uds__connected(void *backend, struct vsock_conn_id id)
{
	struct vsock_uds *u = backend;
	struct uconn *c;
	char ok[UDS_LINE_MAX];
	int n;

	pthread_mutex_lock(&u->lock);
	c = conn__find(u, id);
	if (c && c->state == UC_HOST_REQ) {
		n = snprintf(ok, sizeof(ok), "OK %u\n", id.host_port);
		c->state = UC_OPEN;
		c->reading = true;
		if (conn__queue_out(c, ok, (uint32_t)n))
			c->gone = true; /* no memory: the service pass RSTs */
		else
			c->ok_len = (uint32_t)n;
		c->dirty = true;
		conn__arm(u, c);
		uds__kick(u);
	}
	pthread_mutex_unlock(&u->lock);
}

static int uds__recv(void *backend, struct vsock_conn_id id, const void *buf,
		     uint32_t len)
{
	struct vsock_uds *u = backend;
	const uint8_t *p = buf;
	struct uconn *c;
	ssize_t n;
	int ret = 0;

	pthread_mutex_lock(&u->lock);
	c = conn__find(u, id);
	if (!c || c->state != UC_OPEN || c->wr_shut) {
		ret = -ENOTCONN;
		goto out;
	}
	/* Nothing queued: write straight away, keep only the rest. */
	if (!c->out_len) {
		n = send(c->fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0) {
			c->unreported += (uint32_t)n;
			p += n;
			len -= (uint32_t)n;
		}
	}
	if (len)
		ret = conn__queue_out(c, p, len);
	c->dirty = true;
	conn__arm(u, c);
	uds__kick(u);
out:
	pthread_mutex_unlock(&u->lock);
	return ret;
}

static void uds__shutdown(void *backend, struct vsock_conn_id id,
			  uint32_t flags)
{
	struct vsock_uds *u = backend;
	struct uconn *c;

	pthread_mutex_lock(&u->lock);
	c = conn__find(u, id);
	if (c) {
		c->peer_shut = flags;
		c->dirty = true;
		uds__kick(u);
	}
	pthread_mutex_unlock(&u->lock);
}

static void uds__reset(void *backend, struct vsock_conn_id id)
{
	struct vsock_uds *u = backend;
	struct uconn *c;

	pthread_mutex_lock(&u->lock);
	c = conn__find(u, id);
	if (c) {
		c->gone = true;
		c->dirty = true;
		uds__kick(u);
	}
	pthread_mutex_unlock(&u->lock);
}

static void uds__credit(void *backend, struct vsock_conn_id id)
{
	struct vsock_uds *u = backend;
	struct uconn *c;

	pthread_mutex_lock(&u->lock);
	c = conn__find(u, id);
	if (c && c->state == UC_OPEN) {
		c->reading = true;
		c->credit_gen++;
		conn__arm(u, c);
	}
	pthread_mutex_unlock(&u->lock);
}

static const struct vsock_backend_ops uds_ops = {
	.connect = uds__connect,
	.connected = uds__connected,
	.recv = uds__recv,
	.shutdown = uds__shutdown,
	.reset = uds__reset,
	.credit = uds__credit,
};

/* --- the event thread ---------------------------------------------------- */

/* "CONNECT <port>\n" -> @port.  Returns 0 or -EINVAL. */
static int uds__parse_connect(const char *line, size_t len, uint32_t *port)
{
	static const char verb[] = "CONNECT ";
	uint64_t v = 0;
	size_t i = sizeof(verb) - 1;

	if (len < i + 2 || memcmp(line, verb, i) || line[len - 1] != '\n')
		return -EINVAL;
	for (; i < len - 1; i++) {
		if (line[i] < '0' || line[i] > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(line[i] - '0');
		if (v > UINT32_MAX)
			return -EINVAL;
	}
	*port = (uint32_t)v;
	return 0;
}

/* A host port no connection of @guest_port uses (u->lock held). */
static uint32_t uds__pick_port(struct vsock_uds *u, uint32_t guest_port)
{
	struct vsock_conn_id id = { .guest_port = guest_port };

	do {
		id.host_port = u->next_port++;
		if (u->next_port < VSOCK_UDS_FIRST_HOST_PORT)
			u->next_port = VSOCK_UDS_FIRST_HOST_PORT;
	} while (conn__find(u, id));
	return id.host_port;
}

/*
 * UC_LINE: take the CONNECT line a byte at a time, so that data behind
 * it stays in the socket and every byte read is consumed (a partial line
 * must not leave the socket readable forever).  Returns true when the
 * REQUEST should go out.
 */
static bool conn__read_line(struct vsock_uds *u, struct uconn *c)
{
	uint32_t port;
	ssize_t n;
	char b;

	for (;;) {
		n = recv(c->fd, &b, 1, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return false;
		if (n <= 0) {
			if (c->line_len)
				log_warn("vsock: client left %s before its "
					 "CONNECT line ended",
					 u->path);
			conn__close(u, c);
			return false;
		}
		c->line[c->line_len++] = b;
		if (b == '\n')
			break;
		if (c->line_len == sizeof(c->line)) {
			log_warn("vsock: no CONNECT line on %s", u->path);
			conn__close(u, c);
			return false;
		}
	}
	if (uds__parse_connect(c->line, c->line_len, &port)) {
		log_warn("vsock: bad CONNECT line on %s", u->path);
		conn__close(u, c);
		return false;
	}
	c->id.guest_port = port;
	c->id.host_port = uds__pick_port(u, port);
	c->state = UC_HOST_REQ;
	return true;
}

/* UC_OPEN: write what the guest sent.  Returns -errno on a dead socket. */
static int conn__flush(struct uconn *c)
{
	uint32_t ok;
	ssize_t n;

	while (c->out_len) {
		n = send(c->fd, c->out + c->out_off, c->out_len,
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -errno;
		}
		ok = (uint32_t)n < c->ok_len ? (uint32_t)n : c->ok_len;
		c->ok_len -= ok;
		c->out_off += (uint32_t)n;
		c->out_len -= (uint32_t)n;
		c->unreported += (uint32_t)n - ok; /* guest bytes only */
	}
	c->out_off = 0;
	return 0;
}

/* UC_OPEN under u->lock: decide what the device must hear. */
static void conn__plan(struct uconn *c, uint8_t *scratch, size_t cap,
		       struct uconn_todo *t)
{
	const uint32_t both =
		VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND;
	ssize_t n;

	if (conn__flush(c)) {
		t->rst = true; /* the host end is gone */
		return;
	}
	t->consumed = c->unreported;
	c->unreported = 0;
	if (!c->out_len && c->peer_shut & VIRTIO_VSOCK_SHUTDOWN_SEND &&
	    !c->wr_shut) {
		shutdown(c->fd, SHUT_WR);
		c->wr_shut = true;
	}
	/* The guest closed both ways and waits for our RST (5.10.6.6). */
	if ((c->peer_shut & both) == both && !c->out_len) {
		t->rst = true;
		return;
	}
	if (!c->reading || c->eof_sent)
		return;
	n = recv(c->fd, scratch, cap, MSG_PEEK | MSG_DONTWAIT);
	if (n > 0) {
		t->send_len = (uint32_t)n;
		t->credit_gen = c->credit_gen;
	} else if (n == 0) {
		t->shut_send = true;
		c->eof_sent = true;
	} else if (errno != EAGAIN && errno != EINTR) {
		t->rst = true;
	}
}

/* Close @c if it is still the connection @id (takes u->lock). */
static void uds__close_id(struct vsock_uds *u, struct uconn *c,
			  struct vsock_conn_id id)
{
	pthread_mutex_lock(&u->lock);
	if (c->state != UC_FREE && c->id.guest_port == id.guest_port &&
	    c->id.host_port == id.host_port)
		conn__close(u, c);
	pthread_mutex_unlock(&u->lock);
}

/* Host -> guest: hand the peeked bytes over, drop what was taken. */
static void conn__send(struct vsock_uds *u, struct uconn *c,
		       const struct uconn_todo *t, struct vsock_conn_id id)
{
	ssize_t r = virtio_vsock__send(u->dev, id, u->scratch, t->send_len);

	if (r == -ENOTCONN) {
		uds__close_id(u, c, id);
		return;
	}
	/* Only this thread reads the socket: the peeked bytes are there. */
	if (r > 0 && recv(c->fd, u->scratch, (size_t)r, MSG_DONTWAIT) != r)
		log_warn("vsock: lost bytes on host port %u", id.host_port);
	if (r == (ssize_t)t->send_len)
		return;
	pthread_mutex_lock(&u->lock);
	if (r == -EPIPE)
		c->eof_sent = true; /* the guest reads no more */
	else if (c->credit_gen == t->credit_gen)
		c->reading = false; /* until credit() */
	conn__arm(u, c);
	pthread_mutex_unlock(&u->lock);
}

static void conn__service(struct vsock_uds *u, struct uconn *c)
{
	struct uconn_todo t = { 0 };
	struct vsock_conn_id id;

	pthread_mutex_lock(&u->lock);
	if (c->state == UC_FREE) {
		pthread_mutex_unlock(&u->lock);
		return;
	}
	c->dirty = false;
	if (c->gone) {
		/* A host-side REQUEST refused: nobody listens there. */
		if (c->state == UC_HOST_REQ)
			log_debug("vsock: guest refused port %u (nobody "
				  "listening)",
				  c->id.guest_port);
		conn__close(u, c);
		pthread_mutex_unlock(&u->lock);
		return;
	}
	if (c->state == UC_LINE)
		t.connect = conn__read_line(u, c);
	else if (c->state == UC_OPEN)
		conn__plan(c, u->scratch, sizeof(u->scratch), &t);
	id = c->id;
	if (c->state != UC_FREE)
		conn__arm(u, c);
	pthread_mutex_unlock(&u->lock);

	if (t.connect) {
		int r = virtio_vsock__connect(u->dev, id.host_port,
					      id.guest_port);

		if (r) {
			/* -ENOTCONN: the guest's driver is not up yet. */
			log_debug("vsock: cannot connect to guest port %u: %s",
				  id.guest_port, strerror(-r));
			uds__close_id(u, c, id);
		}
		return;
	}
	if (t.consumed)
		virtio_vsock__consumed(u->dev, id, t.consumed);
	if (t.rst) {
		virtio_vsock__rst(u->dev, id);
		uds__close_id(u, c, id);
		return;
	}
	if (t.send_len)
		conn__send(u, c, &t, id);
	if (t.shut_send &&
	    virtio_vsock__shutdown(u->dev, id, VIRTIO_VSOCK_SHUTDOWN_SEND) ==
		    -ENOTCONN)
		uds__close_id(u, c, id);
}

static int64_t uds__now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Close the connections that have owed their CONNECT line longer than
 * UDS_LINE_MS (u->lock held).  Returns how many still owe one.
 */
static unsigned int uds__sweep_lines(struct vsock_uds *u)
{
	int64_t now = uds__now_ms();
	unsigned int i, n = 0;

	for (i = 0; i < UDS_MAX_CONNS; i++) {
		struct uconn *c = &u->conns[i];

		if (c->state != UC_LINE)
			continue;
		if (now - c->since_ms > UDS_LINE_MS) {
			log_warn("vsock: no CONNECT line within %d ms on %s",
				 UDS_LINE_MS, u->path);
			conn__close(u, c);
			continue;
		}
		n++;
	}
	return n;
}

static void uds__accept(struct vsock_uds *u)
{
	struct uconn *c;
	int fd;

	for (;;) {
		fd = accept4(u->listen_fd, NULL, NULL,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR)
				log_warn("vsock: accept on %s: %s", u->path,
					 strerror(errno));
			return;
		}
		pthread_mutex_lock(&u->lock);
		c = uds__sweep_lines(u) < UDS_MAX_LINE ?
			    conn__alloc(u, fd, UC_LINE) :
			    NULL;
		if (c) {
			c->since_ms = uds__now_ms();
			conn__arm(u, c);
		}
		pthread_mutex_unlock(&u->lock);
		if (!c) {
			log_warn("vsock: too many connections on %s (%d, %d "
				 "without their CONNECT line), refusing one",
				 u->path, UDS_MAX_CONNS, UDS_MAX_LINE);
			close(fd);
		}
	}
}

static void uds__event(void *opaque, int fd)
{
	struct vsock_uds *u = opaque;
	struct epoll_event evs[32];
	uint64_t kicks;
	unsigned int j;
	int n, i;

	(void)fd;
	n = epoll_wait(u->epfd, evs, 32, 0);
	for (i = 0; i < n; i++) {
		void *p = evs[i].data.ptr;

		if (p == &u->listen_fd) {
			uds__accept(u);
		} else if (p == &u->kick_fd) {
			if (read(u->kick_fd, &kicks, sizeof(kicks)) < 0 &&
			    errno != EAGAIN)
				log_warn("vsock: %s", strerror(errno));
			for (j = 0; j < UDS_MAX_CONNS; j++)
				if (__atomic_load_n(&u->conns[j].dirty,
						    __ATOMIC_ACQUIRE))
					conn__service(u, &u->conns[j]);
		} else {
			conn__service(u, p);
		}
	}
}

/* --- set-up -------------------------------------------------------------- */

/* Bind the listener, replacing a socket file nobody listens on. */
static int uds__listen(struct vsock_uds *u)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int probe;

	memcpy(sa.sun_path, u->path, strlen(u->path) + 1);
	if (lstat(u->path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			log_error("vsock: %s exists and is not a socket",
				  u->path);
			return -EEXIST;
		}
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe >= 0 &&
		    connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			close(probe);
			log_error("vsock: %s is in use by another process",
				  u->path);
			return -EADDRINUSE;
		}
		if (probe >= 0)
			close(probe);
		unlink(u->path);
	}
	u->listen_fd =
		socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (u->listen_fd < 0 ||
	    bind(u->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		log_error("vsock: socket %s: %s", u->path, strerror(e));
		return -e;
	}
	u->bound = true;
	if (listen(u->listen_fd, 64) < 0) {
		log_error("vsock: listen on %s: %s", u->path, strerror(errno));
		return -errno;
	}
	return 0;
}

static int uds__watch(struct vsock_uds *u, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };

	ev.data.ptr = fd == u->listen_fd ? (void *)&u->listen_fd :
					   (void *)&u->kick_fd;
	return epoll_ctl(u->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

struct vsock_uds *vsock_uds__create(struct event_loop *el,
				    const struct guest_mem *m,
				    struct irq_line irq, uint64_t guest_cid,
				    const char *uds_path)
{
	struct vsock_uds *u;
	unsigned int i;
	int ret;

	if (!uds_path || !*uds_path || strlen(uds_path) > UDS_PATH_MAX) {
		log_error("vsock: the socket path must be 1-%d bytes",
			  UDS_PATH_MAX);
		return NULL;
	}
	if (guest_cid < 3 || guest_cid > UINT32_MAX) {
		log_error("vsock: guest CID must be 3-4294967295");
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	if (!u) {
		log_error("vsock: out of memory");
		return NULL;
	}
	pthread_mutex_init(&u->lock, NULL);
	u->listen_fd = -1;
	u->next_port = VSOCK_UDS_FIRST_HOST_PORT;
	for (i = 0; i < UDS_MAX_CONNS; i++)
		u->conns[i].fd = -1;
	memcpy(u->path, uds_path, strlen(uds_path) + 1);
	u->epfd = epoll_create1(EPOLL_CLOEXEC);
	u->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (u->epfd < 0 || u->kick_fd < 0) {
		log_error("vsock: %s", strerror(errno));
		goto fail;
	}
	ret = uds__listen(u);
	if (!ret)
		ret = uds__watch(u, u->listen_fd);
	if (!ret)
		ret = uds__watch(u, u->kick_fd);
	if (ret)
		goto fail;
	u->dev = virtio_vsock__create(m, irq, guest_cid, &uds_ops, u);
	if (!u->dev) {
		log_error("vsock: cannot create the device");
		goto fail;
	}
	u->el = el;
	ret = event__add(el, u->epfd, uds__event, u);
	if (ret) {
		log_error("vsock: event loop: %s", strerror(-ret));
		goto fail;
	}
	log_info("vsock: guest CID %llu, host side on %s",
		 (unsigned long long)guest_cid, u->path);
	return u;
fail:
	vsock_uds__destroy(u);
	return NULL;
}

void vsock_uds__transport_reset(struct vsock_uds *u)
{
	unsigned int i, n = 0;

	/* The device first: a service pass now finds no connection there. */
	if (virtio_vsock__transport_reset(u->dev) == VSOCK_PENDING)
		log_debug("vsock: transport reset waits for an event buffer");
	pthread_mutex_lock(&u->lock);
	for (i = 0; i < UDS_MAX_CONNS; i++) {
		struct uconn *c = &u->conns[i];

		/* Clients still sending their CONNECT line go on. */
		if (c->state == UC_HOST_REQ || c->state == UC_OPEN) {
			conn__close(u, c);
			n++;
		}
	}
	pthread_mutex_unlock(&u->lock);
	log_info("vsock: transport reset, %u connection%s closed", n,
		 n == 1 ? "" : "s");
}

int vsock_uds__hold(struct vsock_uds *u, bool hold)
{
	if (hold) {
		event__del(u->el, u->epfd);
		return 0;
	}
	return event__add(u->el, u->epfd, uds__event, u);
}

struct virtio_mmio *vsock_uds__transport(struct vsock_uds *u)
{
	return virtio_vsock__transport(u->dev);
}

void vsock_uds__destroy(struct vsock_uds *u)
{
	unsigned int i;

	if (!u)
		return;
	for (i = 0; i < UDS_MAX_CONNS; i++)
		if (u->conns[i].state != UC_FREE)
			conn__close(u, &u->conns[i]);
	virtio_vsock__destroy(u->dev);
	if (u->listen_fd >= 0)
		close(u->listen_fd);
	if (u->bound)
		unlink(u->path);
	if (u->kick_fd >= 0)
		close(u->kick_fd);
	if (u->epfd >= 0)
		close(u->epfd);
	pthread_mutex_destroy(&u->lock);
	free(u);
}
