// SPDX-License-Identifier: Apache-2.0
/*
 * ttrpc's server and client (ttrpc.h) on the codec of ttrpc_codec.c.
 *
 * The server: run() polls the listening socket and a wake-up pipe; each
 * connection has a reader thread, each request a handler thread; a
 * connection is freed when its reader and all its handlers are done
 * (reference count under the server's lock).
 */
#include "ttrpc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../sandbox/clock.h"
#include "ttrpc_codec.h"

#define STOP_GRACE_MS	  2000
#define ACCEPT_BACKOFF_MS 100

struct conn {
	struct ttrpc_server *s;
	int fd;
	int refs; /* reader + handlers, under s->lock */
	int inflight; /* handlers, under s->lock */
	size_t inflight_bytes; /* their request bodies, under s->lock */
	pthread_mutex_t wlock; /* one reply written at a time */
	struct conn *next;
};

struct ttrpc_server {
	int listen_fd;
	int wake[2];
	ttrpc_handler_fn fn;
	void *opaque;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stopping;
	int handlers; /* handler threads running */
	int readers; /* reader threads running */
	struct conn *conns;
};

struct job {
	struct conn *c;
	uint32_t stream;
	uint8_t *body;
	size_t len;
};

/* Read exactly @len bytes: 0, -ECONNRESET at EOF, -errno. */
static int read_full(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= n;
	}
	return 0;
}

static int write_full(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= n;
	}
	return 0;
}

/* Drop a reference to @c (under s->lock); the last one frees it. */
static void conn_unref_locked(struct conn *c)
{
	struct ttrpc_server *s = c->s;
	struct conn **pp;

	if (--c->refs)
		return;
	for (pp = &s->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	close(c->fd);
	pthread_mutex_destroy(&c->wlock);
	free(c);
}

static void send_reply(struct conn *c, uint32_t stream, int code,
		       const char *message, const uint8_t *payload, size_t len)
{
	uint8_t *out;
	size_t outlen;

	if (ttrpc_codec__response_frame(stream, code, message, payload, len,
					&out, &outlen))
		return;
	pthread_mutex_lock(&c->wlock);
	if (write_full(c->fd, out, outlen))
		shutdown(c->fd, SHUT_RDWR); /* the reader sees it and ends */
	pthread_mutex_unlock(&c->wlock);
	free(out);
}

static void *handler_thread(void *arg)
{
	struct job *j = arg;
	struct conn *c = j->c;
	struct ttrpc_server *s = c->s;
	struct ttrpc_request req;
	struct ttrpc_reply *reply = calloc(1, sizeof(*reply));
	struct ttrpc_call call;

	if (!reply) {
		send_reply(c, j->stream, TTRPC_RESOURCE_EXHAUSTED, "no memory",
			   NULL, 0);
	} else if (ttrpc_codec__request_decode(j->body, j->len, &req)) {
		send_reply(c, j->stream, TTRPC_INVALID_ARGUMENT,
			   "ttrpc: request does not decode", NULL, 0);
	} else {
		call.service = req.service;
		call.method = req.method;
		/* never NULL: an empty message unpacks from zero bytes */
		call.payload = req.payload ? req.payload : (const uint8_t *)"";
		call.len = req.len;
		s->fn(s->opaque, &call, reply);
		reply->message[sizeof(reply->message) - 1] = 0;
		send_reply(c, j->stream, reply->code, reply->message,
			   reply->payload, reply->len);
		free(reply->payload);
		ttrpc_codec__request_free(&req);
	}
	free(reply);
	free(j->body);
	pthread_mutex_lock(&s->lock);
	c->inflight--;
	c->inflight_bytes -= j->len;
	free(j);
	conn_unref_locked(c);
	s->handlers--;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Must a request of @len bytes wait for @c's requests in flight? */
static bool conn_full(const struct conn *c, size_t len)
{
	return c->inflight >= TTRPC_MAX_INFLIGHT ||
	       (c->inflight &&
		c->inflight_bytes + len > TTRPC_MAX_INFLIGHT_BYTES);
}

/* Start a handler for one request frame; false closes the connection. */
static bool dispatch(struct conn *c, const struct ttrpc_header *h,
		     uint8_t *body)
{
	struct ttrpc_server *s = c->s;
	pthread_attr_t attr;
	pthread_t t;
	struct job *j;
	int err;

	if (h->type != TTRPC_TYPE_REQUEST || h->stream % 2 != 1) {
		free(body);
		return false;
	}
	j = malloc(sizeof(*j));
	if (!j) {
		free(body);
		send_reply(c, h->stream, TTRPC_RESOURCE_EXHAUSTED, "no memory",
			   NULL, 0);
		return true;
	}
	*j = (struct job){
		.c = c, .stream = h->stream, .body = body, .len = h->length
	};
	pthread_mutex_lock(&s->lock);
	/* A peer that sends and never reads: no more threads for it. */
	while (conn_full(c, h->length) && !s->stopping)
		pthread_cond_wait(&s->cond, &s->lock);
	if (conn_full(c, h->length)) { /* stopping */
		pthread_mutex_unlock(&s->lock);
		free(body);
		free(j);
		return false;
	}
	c->refs++;
	c->inflight++;
	c->inflight_bytes += h->length;
	s->handlers++;
	pthread_mutex_unlock(&s->lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&t, &attr, handler_thread, j);
	pthread_attr_destroy(&attr);
	if (err) {
		pthread_mutex_lock(&s->lock);
		c->refs--;
		c->inflight--;
		c->inflight_bytes -= h->length;
		s->handlers--;
		pthread_mutex_unlock(&s->lock);
		free(body);
		free(j);
		send_reply(c, h->stream, TTRPC_RESOURCE_EXHAUSTED, "no thread",
			   NULL, 0);
	}
	return true;
}

static void *reader_thread(void *arg)
{
	struct conn *c = arg;
	struct ttrpc_server *s = c->s;
	uint8_t hdr[TTRPC_HEADER_LEN];
	struct ttrpc_header h;
	uint8_t *body;

	for (;;) {
		if (read_full(c->fd, hdr, sizeof(hdr)))
			break;
		if (ttrpc_codec__get_header(hdr, &h))
			break;
		body = malloc(h.length ? h.length : 1);
		if (!body)
			break;
		if (read_full(c->fd, body, h.length)) {
			free(body);
			break;
		}
		if (!dispatch(c, &h, body))
			break;
	}
	/* Handlers still running may write their replies; no more reads. */
	shutdown(c->fd, SHUT_RD);
	pthread_mutex_lock(&s->lock);
	conn_unref_locked(c);
	s->readers--;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

struct ttrpc_server *ttrpc_server__new(int listen_fd, ttrpc_handler_fn fn,
				       void *opaque)
{
	struct ttrpc_server *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK)) {
		free(s);
		return NULL;
	}
	s->listen_fd = listen_fd;
	s->fn = fn;
	s->opaque = opaque;
	pthread_mutex_init(&s->lock, NULL);
	/* wait_until()'s deadline counts on CLOCK_MONOTONIC. */
	clock__cond_init(&s->cond);
	return s;
}

/*
 * Accept one connection and start its reader.  Returns 0, or -errno when
 * accept4() failed for want of a resource (fds, memory): the connection
 * stays queued, so polling again at once would spin.
 */
static int accept_one(struct ttrpc_server *s)
{
	pthread_attr_t attr;
	struct conn *c;
	pthread_t t;
	int fd;

	fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
		    errno == ENOMEM)
			return -errno;
		return 0;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return 0;
	}
	c->s = s;
	c->fd = fd;
	c->refs = 1;
	pthread_mutex_init(&c->wlock, NULL);
	pthread_mutex_lock(&s->lock);
	c->next = s->conns;
	s->conns = c;
	s->readers++;
	pthread_mutex_unlock(&s->lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, reader_thread, c)) {
		pthread_mutex_lock(&s->lock);
		s->readers--;
		conn_unref_locked(c);
		pthread_mutex_unlock(&s->lock);
	}
	pthread_attr_destroy(&attr);
	return 0;
}

/* Wait on s->cond until @pred or @deadline; under s->lock. */
static void wait_until(struct ttrpc_server *s, const int *count,
		       const struct timespec *deadline)
{
	while (*count > 0) {
		if (deadline) {
			if (pthread_cond_timedwait(&s->cond, &s->lock,
						   deadline) == ETIMEDOUT)
				return;
		} else {
			pthread_cond_wait(&s->cond, &s->lock);
		}
	}
}

int ttrpc_server__run(struct ttrpc_server *s)
{
	struct pollfd pfd[2];
	struct timespec deadline;
	struct conn *c;
	int ret = 0;

	for (;;) {
		pthread_mutex_lock(&s->lock);
		if (s->stopping) {
			pthread_mutex_unlock(&s->lock);
			break;
		}
		pthread_mutex_unlock(&s->lock);
		pfd[0] =
			(struct pollfd){ .fd = s->listen_fd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = s->wake[0], .events = POLLIN };
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		if (pfd[1].revents)
			continue;
		if (pfd[0].revents & (POLLERR | POLLNVAL)) {
			ret = -EBADF;
			break;
		}
		/* Out of fds: wait for some to be closed (or a stop). */
		if ((pfd[0].revents & POLLIN) && accept_one(s))
			poll(&pfd[1], 1, ACCEPT_BACKOFF_MS);
	}
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += STOP_GRACE_MS / 1000;
	pthread_mutex_lock(&s->lock);
	wait_until(s, &s->handlers, &deadline);
	for (c = s->conns; c; c = c->next)
		shutdown(c->fd, SHUT_RDWR);
	wait_until(s, &s->readers, NULL);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

void ttrpc_server__stop(struct ttrpc_server *s)
{
	char b = 1;

	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	pthread_cond_broadcast(&s->cond); /* readers waiting for a slot */
	pthread_mutex_unlock(&s->lock);
	if (write(s->wake[1], &b, 1) < 0) {
		/* full pipe: a wake-up is pending anyway */
	}
}

void ttrpc_server__free(struct ttrpc_server *s)
{
	bool busy;

	if (!s)
		return;
	close(s->listen_fd);
	pthread_mutex_lock(&s->lock);
	busy = s->handlers > 0 || s->readers > 0;
	pthread_mutex_unlock(&s->lock);
	if (busy)
		return; /* see ttrpc.h: leaked to the threads still running */
	close(s->wake[0]);
	close(s->wake[1]);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}

/* --- client ---------------------------------------------------------- */

struct ttrpc_client {
	int fd;
	uint32_t next_stream;
	bool broken;
	pthread_mutex_t lock;
};

/* Fill @sa for @address; its length in *@salen. */
static int parse_address(const char *address, struct sockaddr_un *sa,
			 socklen_t *salen)
{
	const char *p = address;
	size_t n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (!strncmp(p, "unix://", 7))
		p += 7;
	if (p[0] == '@' && p[1]) {
		/* abstract: sun_path[0] stays NUL */
		n = strlen(p + 1);
		if (n + 1 > sizeof(sa->sun_path))
			return -ENAMETOOLONG;
		memcpy(sa->sun_path + 1, p + 1, n);
		*salen = offsetof(struct sockaddr_un, sun_path) + 1 + n;
		return 0;
	}
	if (!p[0])
		return -EINVAL;
	n = strlen(p);
	if (n + 1 > sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	memcpy(sa->sun_path, p, n);
	*salen = offsetof(struct sockaddr_un, sun_path) + n + 1;
	return 0;
}

struct ttrpc_client *ttrpc_client__connect(const char *address, int timeout_ms,
					   int *err)
{
	struct ttrpc_client *c;
	struct sockaddr_un sa;
	struct pollfd pfd;
	socklen_t salen;
	int fd, e = 0;
	socklen_t elen = sizeof(e);

	/* A C string cannot hold "\0name": it arrives as "" (see ttrpc.h). */
	*err = parse_address(address, &sa, &salen);
	if (*err)
		return NULL;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		*err = -errno;
		return NULL;
	}
	if (connect(fd, (struct sockaddr *)&sa, salen)) {
		if (errno != EINPROGRESS && errno != EAGAIN) {
			*err = -errno;
			goto fail;
		}
		pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
		if (poll(&pfd, 1, timeout_ms) <= 0) {
			*err = -ETIMEDOUT;
			goto fail;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &elen) || e) {
			*err = e ? -e : -errno;
			goto fail;
		}
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		*err = -ENOMEM;
		goto fail;
	}
	c->fd = fd;
	c->next_stream = 1;
	pthread_mutex_init(&c->lock, NULL);
	return c;
fail:
	close(fd);
	return NULL;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Non-blocking I/O of exactly @len bytes before @deadline (ms). */
static int io_full(int fd, void *buf, size_t len, bool out, int64_t deadline)
{
	uint8_t *p = buf;
	struct pollfd pfd;
	ssize_t n;
	int64_t left;

	while (len) {
		n = out ? send(fd, p, len, MSG_NOSIGNAL) : read(fd, p, len);
		if (n > 0) {
			p += n;
			len -= n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		pfd = (struct pollfd){ .fd = fd,
				       .events = out ? POLLOUT : POLLIN };
		if (poll(&pfd, 1, left > 60000 ? 60000 : (int)left) < 0 &&
		    errno != EINTR)
			return -errno;
	}
	return 0;
}

static int call_locked(struct ttrpc_client *c, const char *service,
		       const char *method, const uint8_t *req, size_t len,
		       int timeout_ms, uint8_t **resp, size_t *resp_len,
		       char *msg, size_t msglen)
{
	int64_t deadline = now_ms() + timeout_ms;
	uint8_t hdr[TTRPC_HEADER_LEN];
	struct ttrpc_header h;
	uint32_t stream = c->next_stream;
	uint8_t *out, *body;
	size_t outlen;
	int err, code;

	c->next_stream += 2;
	err = ttrpc_codec__request_frame(stream, service, method, req, len,
					 (int64_t)timeout_ms * 1000000, &out,
					 &outlen);
	if (err)
		return err;
	err = io_full(c->fd, out, outlen, true, deadline);
	free(out);
	if (err)
		return err;
	for (;;) {
		err = io_full(c->fd, hdr, sizeof(hdr), false, deadline);
		if (err)
			return err;
		if (ttrpc_codec__get_header(hdr, &h) ||
		    h.type != TTRPC_TYPE_RESPONSE)
			return -EPROTO;
		body = malloc(h.length ? h.length : 1);
		if (!body)
			return -ENOMEM;
		err = io_full(c->fd, body, h.length, false, deadline);
		if (err || h.stream != stream) {
			/* an answer to an earlier, timed-out call: skip */
			free(body);
			if (err)
				return err;
			continue;
		}
		err = ttrpc_codec__response_decode(body, h.length, &code, msg,
						   msglen, resp, resp_len);
		free(body);
		if (err)
			return err == -EBADMSG ? -EPROTO : err;
		if (code) {
			free(*resp);
			*resp = NULL;
			*resp_len = 0;
		}
		return code;
	}
}

int ttrpc_client__call(struct ttrpc_client *c, const char *service,
		       const char *method, const uint8_t *req, size_t len,
		       int timeout_ms, uint8_t **resp, size_t *resp_len,
		       char *msg, size_t msglen)
{
	int ret;

	*resp = NULL;
	*resp_len = 0;
	if (msg && msglen)
		msg[0] = 0;
	pthread_mutex_lock(&c->lock);
	if (c->broken) {
		ret = -EPIPE;
	} else {
		ret = call_locked(c, service, method, req, len, timeout_ms,
				  resp, resp_len, msg, msglen);
		if (ret < 0)
			c->broken = true;
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

void ttrpc_client__free(struct ttrpc_client *c)
{
	if (!c)
		return;
	close(c->fd);
	pthread_mutex_destroy(&c->lock);
	free(c);
}
