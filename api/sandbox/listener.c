// SPDX-License-Identifier: Apache-2.0
/*
 * The loopback HTTP listener of the local servers: see listener.h.
 *
 * The header time: MHD (0.9.75) has no such limit, and its connection
 * timeout counts from the last byte that moved, so a byte now and then
 * keeps a connection for good.  So each connection is stamped when MHD
 * accepts it (MHD_OPTION_NOTIFY_CONNECTION: a struct lconn as its socket
 * context) and listed while it waits for a request's headers.  MHD calls
 * the access handler once a request's headers are in: that first call
 * takes the connection off the list, and the end of a request that keeps
 * the connection alive (for another request, not upgraded) lists it again.
 * A thread of the listener (sweep()) answers a listed connection past its
 * deadline with 408 and shuts its socket down.  It does so under the lock
 * that MHD's close notice (MHD_CONNECTION_NOTIFY_CLOSED) takes too, and
 * MHD closes the socket only after that notice (MHD_cleanup_connections(),
 * in the daemon's thread, once the connection's thread is joined): while
 * the lock is held, the fd is the connection's.  Shut down, the socket
 * wakes the connection's thread, whose next read sees EOF and closes the
 * connection as if the client had gone.  Should the headers come in
 * meanwhile, the access handler sees the connection cut and refuses the
 * request (MHD_NO: closed, the front end never sees it).
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "clock.h"
#include "listener.h"
#include "loopback.h"

/* A connection of the listener: its MHD socket context. */
struct lconn {
	struct lconn *prev, *next; /* on listener.waiting; under lock */
	int fd; /* the connection's socket (MHD's) */
	int64_t deadline_ms; /* CLOCK_MONOTONIC, for its headers; under lock */
	bool listed; /* waits for a request's headers; under lock */
	bool cut; /* answered 408 and shut down; under lock */
	bool in_request; /* its thread's alone: the handler saw the request */
};

struct listener {
	struct MHD_Daemon *d;
	MHD_AccessHandlerCallback handle;
	void *cls;
	MHD_RequestCompletedCallback completed;
	char who[32];
	unsigned int header_s, idle_s;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* sweep() waits on it */
	pthread_t sweeper;
	struct lconn *waiting; /* connections waiting for headers */
	int64_t wake_ms; /* when sweep() looks next; 0: when signalled */
	bool stop;
};

/* Under l->lock. */
static void wait_begin(struct listener *l, struct lconn *lc, int64_t deadline)
{
	lc->deadline_ms = deadline;
	if (!lc->listed) {
		lc->prev = NULL;
		lc->next = l->waiting;
		if (l->waiting)
			l->waiting->prev = lc;
		l->waiting = lc;
		lc->listed = true;
	}
	if (!l->wake_ms || deadline < l->wake_ms)
		pthread_cond_signal(&l->cond);
}

/* Under l->lock. */
static void wait_end(struct listener *l, struct lconn *lc)
{
	if (!lc->listed)
		return;
	if (lc->prev)
		lc->prev->next = lc->next;
	else
		l->waiting = lc->next;
	if (lc->next)
		lc->next->prev = lc->prev;
	lc->prev = lc->next = NULL;
	lc->listed = false;
}

/* Under l->lock: @lc's headers are late. */
static void cut(struct listener *l, struct lconn *lc)
{
	char body[96], msg[256];
	int blen, n;

	wait_end(l, lc);
	lc->cut = true;
	blen = snprintf(body, sizeof(body),
			"%s: the request's headers took over %u s\n", l->who,
			l->header_s);
	n = snprintf(msg, sizeof(msg),
		     "HTTP/1.1 408 Request Timeout\r\n"
		     "Connection: close\r\n"
		     "Content-Type: text/plain\r\n"
		     "Content-Length: %d\r\n\r\n%s",
		     blen, body);
	/* Nothing else writes while the headers come (but MHD's own answer
	   to a malformed request, which closes the connection): the send
	   buffer is empty.  A client that does not read loses the 408. */
	if (send(lc->fd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* the client is gone: shut down all the same */
	}
	shutdown(lc->fd, SHUT_RDWR);
}

static void *sweep(void *arg)
{
	struct listener *l = arg;
	struct lconn *lc, *next;
	struct timespec ts;
	int64_t now, wake;

	pthread_mutex_lock(&l->lock);
	while (!l->stop) {
		now = clock__mono_ms();
		wake = 0;
		for (lc = l->waiting; lc; lc = next) {
			next = lc->next;
			if (lc->deadline_ms <= now)
				cut(l, lc);
			else if (!wake || lc->deadline_ms < wake)
				wake = lc->deadline_ms;
		}
		l->wake_ms = wake;
		if (!wake) {
			pthread_cond_wait(&l->cond, &l->lock);
			continue;
		}
		ts.tv_sec = (time_t)(wake / 1000);
		ts.tv_nsec = (long)(wake % 1000) * 1000000L;
		pthread_cond_timedwait(&l->cond, &l->lock, &ts);
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

/* MHD_OPTION_NOTIFY_CONNECTION: in the daemon's thread. */
static void notify(void *cls, struct MHD_Connection *c, void **socket_context,
		   enum MHD_ConnectionNotificationCode code)
{
	const union MHD_ConnectionInfo *ci;
	struct listener *l = cls;
	struct lconn *lc = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		ci = MHD_get_connection_info(c,
					     MHD_CONNECTION_INFO_CONNECTION_FD);
		if (!ci)
			return;
		lc = calloc(1, sizeof(*lc));
		if (!lc) {
			/* Without a header time it would be a slot for good. */
			shutdown(ci->connect_fd, SHUT_RDWR);
			return;
		}
		lc->fd = ci->connect_fd;
		*socket_context = lc;
		pthread_mutex_lock(&l->lock);
		wait_begin(l, lc,
			   clock__mono_ms() + (int64_t)l->header_s * 1000);
		pthread_mutex_unlock(&l->lock);
		return;
	}
	if (code != MHD_CONNECTION_NOTIFY_CLOSED || !lc)
		return;
	pthread_mutex_lock(&l->lock);
	wait_end(l, lc);
	pthread_mutex_unlock(&l->lock);
	free(lc);
	*socket_context = NULL;
}

static struct lconn *lconn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci;

	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

/* Every call of the access handler, in the connection's thread. */
static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *data,
			      size_t *data_len, void **con_cls)
{
	struct listener *l = cls;
	struct lconn *lc = lconn_of(c);
	bool was_cut;

	if (lc && !lc->in_request) {
		/* The request's first call: its headers are in. */
		lc->in_request = true;
		pthread_mutex_lock(&l->lock);
		was_cut = lc->cut;
		wait_end(l, lc);
		pthread_mutex_unlock(&l->lock);
		if (was_cut)
			return MHD_NO;
	}
	return l->handle(l->cls, c, url, method, version, data, data_len,
			 con_cls);
}

/* MHD_OPTION_NOTIFY_COMPLETED: in the connection's thread. */
static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	const union MHD_ConnectionInfo *st;
	struct listener *l = cls;
	struct lconn *lc = lconn_of(c);

	if (l->completed)
		l->completed(NULL, c, con_cls, toe);
	if (!lc)
		return;
	lc->in_request = false;
	/*
	 * Kept alive for another request: it may wait idle_s for it, and
	 * then has header_s for its headers.  An upgraded connection has
	 * no response left (MHD dropped it: 0.9.75's MHD_CONNECTION_UPGRADE)
	 * and is the front end's; one that ends in error is being closed.
	 */
	st = MHD_get_connection_info(c, MHD_CONNECTION_INFO_HTTP_STATUS);
	if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK || !st ||
	    st->http_status == MHD_HTTP_SWITCHING_PROTOCOLS)
		return;
	pthread_mutex_lock(&l->lock);
	if (!lc->cut)
		wait_begin(l, lc,
			   clock__mono_ms() +
				   ((int64_t)l->idle_s + l->header_s) * 1000);
	pthread_mutex_unlock(&l->lock);
}

static int check_opts(const struct listener_opts *o, char *err, size_t errlen)
{
	if (!o->header_s || !o->max_connections || !o->per_client ||
	    o->per_client > o->max_connections) {
		snprintf(err, errlen,
			 "%s: a header time of 1 s or more, and 1 to %u "
			 "connections of one client",
			 o->who, o->max_connections);
		return -EINVAL;
	}
	return 0;
}

int listener__start(const struct listener_opts *o, struct listener **out,
		    unsigned int *port, char *err, size_t errlen)
{
	unsigned int flags = MHD_USE_THREAD_PER_CONNECTION |
			     MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
	const union MHD_DaemonInfo *di;
	struct sockaddr_in6 sa;
	struct listener *l;
	bool ipv6;
	int rc;

	rc = check_opts(o, err, errlen);
	if (rc)
		return rc;
	rc = loopback__sockaddr(o->addr, o->port, o->who, &sa, &ipv6, err,
				errlen);
	if (rc)
		return rc;
	if (ipv6)
		flags |= MHD_USE_IPv6;
	if (o->allow_upgrade)
		flags |= MHD_ALLOW_UPGRADE;
	l = calloc(1, sizeof(*l));
	if (!l) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	l->handle = o->handle;
	l->cls = o->cls;
	l->completed = o->completed;
	snprintf(l->who, sizeof(l->who), "%s", o->who);
	l->header_s = o->header_s;
	l->idle_s = o->idle_s;
	pthread_mutex_init(&l->lock, NULL);
	rc = clock__cond_init(&l->cond);
	if (rc) {
		snprintf(err, errlen, "cannot make a condition variable");
		rc = -rc;
		goto fail_cond;
	}
	if (pthread_create(&l->sweeper, NULL, sweep, l)) {
		snprintf(err, errlen, "cannot start a thread");
		rc = -EAGAIN;
		goto fail_thread;
	}
	l->d = MHD_start_daemon(
		flags, (uint16_t)o->port, NULL, NULL, handle, l,
		MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)&sa,
		MHD_OPTION_NOTIFY_COMPLETED, completed, l,
		MHD_OPTION_NOTIFY_CONNECTION, notify, l,
		MHD_OPTION_CONNECTION_TIMEOUT, o->idle_s,
		MHD_OPTION_CONNECTION_LIMIT, o->max_connections,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, o->per_client,
		o->uri_log ? MHD_OPTION_URI_LOG_CALLBACK : MHD_OPTION_END,
		o->uri_log, o->cls, MHD_OPTION_END);
	if (!l->d) {
		snprintf(err, errlen, "cannot listen on %s port %u", o->addr,
			 o->port);
		rc = -EADDRINUSE;
		goto fail_daemon;
	}
	di = MHD_get_daemon_info(l->d, MHD_DAEMON_INFO_BIND_PORT);
	*port = di ? di->port : o->port;
	*out = l;
	return 0;

fail_daemon:
	pthread_mutex_lock(&l->lock);
	l->stop = true;
	pthread_cond_signal(&l->cond);
	pthread_mutex_unlock(&l->lock);
	pthread_join(l->sweeper, NULL);
fail_thread:
	pthread_cond_destroy(&l->cond);
fail_cond:
	pthread_mutex_destroy(&l->lock);
	free(l);
	return rc;
}

void listener__stop(struct listener *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	l->stop = true;
	pthread_cond_signal(&l->cond);
	pthread_mutex_unlock(&l->lock);
	pthread_join(l->sweeper, NULL);
	/* Closes every connection: each one's notify() frees its lconn. */
	MHD_stop_daemon(l->d);
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->lock);
	free(l);
}
