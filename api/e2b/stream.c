// SPDX-License-Identifier: Apache-2.0
/*
 * A streamed answer (e2b.h): a byte queue between a producer thread and
 * the connection's thread, which libmicrohttpd makes call stream__read()
 * for the next bytes.  The reader waits for bytes up to the keepalive
 * interval, then sends the keepalive; the producer waits while more than
 * STREAM_HIGH bytes are queued, so that a client that reads slowly slows
 * the producer down instead of growing the queue.  A client that takes
 * nothing for STREAM_STALL_MS meanwhile counts as gone: it would hold the
 * producer (a process's output, its deadline) for as long as it kept its
 * connection open.  A producer with several streams pushes to them
 * without waiting, up to a bound of its own, and waits for the fastest
 * (proc_sub.c), so that one client that does not read holds no other up.
 */
#include <errno.h>
#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../sandbox/clock.h"
#include "e2b.h"
#include "stream.h"

#define STREAM_HIGH	(4u << 20) /* bytes queued before the producer waits */
#define STREAM_LOOK_MS	500 /* between two looks at the client's socket */
#define STREAM_STALL_MS 30000 /* a full queue with no byte taken: gone */

struct chunk {
	struct chunk *next;
	size_t len, off;
	uint8_t data[];
};

struct e2b_stream {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* bytes queued, ended, gone, or room */
	struct chunk *head, *tail;
	size_t queued;
	uint64_t taken; /* bytes the connection took, ever */
	bool ended; /* the producer is done */
	bool gone; /* the client is */
	int refs;
	uint8_t *keepalive;
	size_t klen;
	unsigned int keepalive_ms;
	int client_fd; /* -1, or the client's socket (not ours to close) */
};

struct e2b_stream *e2b_stream__new(const void *keepalive, size_t klen,
				   unsigned int keepalive_ms)
{
	struct e2b_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (klen) {
		s->keepalive = malloc(klen);
		if (!s->keepalive) {
			free(s);
			return NULL;
		}
		memcpy(s->keepalive, keepalive, klen);
		s->klen = klen;
	}
	s->keepalive_ms = keepalive_ms ? keepalive_ms : 15000;
	s->refs = 2;
	s->client_fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	clock__cond_init(&s->cond);
	return s;
}

void e2b_stream__put(struct e2b_stream *s)
{
	int left;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	left = --s->refs;
	pthread_mutex_unlock(&s->lock);
	if (left)
		return;
	while (s->head) {
		struct chunk *c = s->head;

		s->head = c->next;
		free(c);
	}
	free(s->keepalive);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static void after_ms(struct timespec *t, unsigned int ms)
{
	clock_gettime(CLOCK_MONOTONIC, t);
	t->tv_sec += ms / 1000;
	t->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

/*
 * Wait while more than STREAM_HIGH bytes are queued, a client that takes
 * none for STREAM_STALL_MS marked gone.  Under the lock.
 */
static void wait_room(struct e2b_stream *s)
{
	struct timespec dl;
	uint64_t seen;

	seen = s->taken;
	after_ms(&dl, STREAM_STALL_MS);
	while (!s->gone && s->queued > STREAM_HIGH) {
		if (s->taken != seen) { /* it reads: wait on */
			seen = s->taken;
			after_ms(&dl, STREAM_STALL_MS);
		}
		if (pthread_cond_timedwait(&s->cond, &s->lock, &dl) ==
			    ETIMEDOUT &&
		    s->taken == seen) {
			s->gone = true;
			pthread_cond_broadcast(&s->cond);
		}
	}
}

/*
 * Queue @len bytes of @buf unless more than @max would be queued then;
 * with @wait, wait for room first (wait_room()).  0, -EPIPE, -ENOBUFS,
 * -ENOMEM.
 */
static int queue(struct e2b_stream *s, const void *buf, size_t len, size_t max,
		 bool wait)
{
	struct chunk *c;
	int rc = 0;

	if (!len)
		return 0;
	c = malloc(sizeof(*c) + len);
	if (!c)
		return -ENOMEM;
	memcpy(c->data, buf, len);
	c->len = len;
	c->off = 0;
	c->next = NULL;
	pthread_mutex_lock(&s->lock);
	if (wait)
		wait_room(s);
	if (s->gone || s->ended)
		rc = -EPIPE;
	else if (s->queued > max || len > max - s->queued)
		rc = -ENOBUFS;
	if (rc) {
		free(c);
		goto out;
	}
	if (s->tail)
		s->tail->next = c;
	else
		s->head = c;
	s->tail = c;
	s->queued += len;
	pthread_cond_broadcast(&s->cond);
out:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int e2b_stream__write(struct e2b_stream *s, const void *buf, size_t len)
{
	return queue(s, buf, len, SIZE_MAX, true);
}

int e2b_stream__push(struct e2b_stream *s, const void *buf, size_t len,
		     size_t max)
{
	return queue(s, buf, len, max, false);
}

size_t e2b_stream__queued(struct e2b_stream *s)
{
	size_t n;

	pthread_mutex_lock(&s->lock);
	n = s->queued;
	pthread_mutex_unlock(&s->lock);
	return n;
}

int e2b_stream__wait(struct e2b_stream *s)
{
	int rc;

	pthread_mutex_lock(&s->lock);
	wait_room(s);
	rc = s->gone || s->ended ? -EPIPE : 0;
	pthread_mutex_unlock(&s->lock);
	return rc;
}

void e2b_stream__end(struct e2b_stream *s)
{
	pthread_mutex_lock(&s->lock);
	s->ended = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

bool e2b_stream__gone(struct e2b_stream *s)
{
	bool gone;

	pthread_mutex_lock(&s->lock);
	gone = s->gone;
	pthread_mutex_unlock(&s->lock);
	return gone;
}

void stream__set_client(struct e2b_stream *s, int fd)
{
	pthread_mutex_lock(&s->lock);
	s->client_fd = fd;
	pthread_mutex_unlock(&s->lock);
}

unsigned int stream__keepalive_s(const struct e2b_stream *s)
{
	return (s->keepalive_ms + 999) / 1000; /* set once, at its birth */
}

/* Whether the client hung up (its socket, looked at without waiting). */
static bool client_gone(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };

	return fd >= 0 && poll(&p, 1, 0) == 1 &&
	       (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

ssize_t stream__read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct e2b_stream *s = cls;
	struct timespec dl, look;
	size_t n = 0;

	(void)pos;
	after_ms(&dl, s->keepalive_ms);
	pthread_mutex_lock(&s->lock);
	if (s->gone) { /* stalled too long (e2b_stream__write()) */
		pthread_mutex_unlock(&s->lock);
		return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	/*
	 * Wait for bytes, looking at the client's socket now and then: a
	 * client that went away ends the stream at once, not at the next
	 * keepalive that fails, so that the producer stops its work.
	 */
	while (!s->head && !s->ended) {
		int rc;

		if (client_gone(s->client_fd)) {
			s->gone = true;
			pthread_cond_broadcast(&s->cond);
			pthread_mutex_unlock(&s->lock);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		after_ms(&look, STREAM_LOOK_MS);
		if (look.tv_sec > dl.tv_sec ||
		    (look.tv_sec == dl.tv_sec && look.tv_nsec > dl.tv_nsec))
			look = dl;
		rc = pthread_cond_timedwait(&s->cond, &s->lock, &look);
		if (rc == ETIMEDOUT &&
		    (look.tv_sec == dl.tv_sec && look.tv_nsec == dl.tv_nsec))
			break;
	}
	if (!s->head) {
		bool ended = s->ended;

		pthread_mutex_unlock(&s->lock);
		if (ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		n = s->klen < max ? s->klen : max;
		if (!n) /* no keepalive: wait again */
			return 0;
		memcpy(buf, s->keepalive, n);
		return (ssize_t)n;
	}
	while (s->head && n < max) {
		struct chunk *c = s->head;
		size_t take = c->len - c->off;

		if (take > max - n)
			take = max - n;
		memcpy(buf + n, c->data + c->off, take);
		n += take;
		c->off += take;
		if (c->off == c->len) {
			s->head = c->next;
			if (!s->head)
				s->tail = NULL;
			free(c);
		}
	}
	s->queued -= n;
	s->taken += n;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return (ssize_t)n;
}

void stream__release(void *cls)
{
	struct e2b_stream *s = cls;

	pthread_mutex_lock(&s->lock);
	s->gone = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	e2b_stream__put(s);
}
