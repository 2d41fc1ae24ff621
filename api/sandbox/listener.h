/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP listener of the local servers (ember-mcp's Streamable HTTP,
 * ember-e2b): libmicrohttpd on a loopback address only (loopback.h), a
 * thread per connection polled with poll(2) (select(2) would refuse the
 * sockets of a busy server, past FD_SETSIZE), a limit on connections and
 * on how long one may stay idle.  The front end keeps its protocol: the
 * request handler and the completion callback are its own.  Linked with
 * -lmicrohttpd, and so apart from the rest of the library (emberctl does
 * not serve HTTP).
 *
 * Any local process may connect, from any 127.0.0.0/8 address (on ::1,
 * all from one).  So that a few of them cannot hold every slot (a
 * slowloris: connections that trickle a header byte now and then, each
 * byte resetting MHD's idle timeout):
 *  - one client address holds at most listener_opts.per_client
 *    connections; past it a connection is accepted and closed at once
 *    (MHD_OPTION_PER_IP_CONNECTION_LIMIT): the client reads EOF, or
 *    ECONNRESET, before any answer;
 *  - a request's line and headers must be in within header_s of the
 *    connection's start, or on a kept-alive connection within idle_s +
 *    header_s of the end of the previous request, whatever bytes still
 *    trickle in: past it the client reads "408 Request Timeout" and the
 *    connection is closed.
 * Past max_connections, a connection is closed at once as well (MHD,
 * a thread per connection, accepts it and closes it).
 */
#ifndef EMBER_API_LISTENER_H
#define EMBER_API_LISTENER_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

/* What to listen on and how to answer. */
struct listener_opts {
	const char *who; /* the server's name, for "@who serves only this
			    host" */
	const char *addr; /* "localhost", 127.0.0.0/8 or ::1 */
	unsigned int port; /* 0: any free port */
	MHD_AccessHandlerCallback handle; /* every request, with @cls */
	void *cls;
	MHD_RequestCompletedCallback completed; /* NULL: none; with NULL cls */
	unsigned int idle_s; /* a connection with no request going on */
	unsigned int header_s; /* s for a request's line and headers, >= 1 */
	unsigned int max_connections; /* all of them at once */
	unsigned int per_client; /* of one client address, 1..max_connections */
	/* NULL, or called with each request's URI as sent (its query string
	   and escapes kept), in the connection's thread, before @handle sees
	   the request; see MHD_OPTION_URI_LOG_CALLBACK (it must return NULL) */
	void *(*uri_log)(void *cls, const char *uri, struct MHD_Connection *c);
	bool allow_upgrade; /* MHD_ALLOW_UPGRADE: 101 responses (WebSockets) */
};

struct listener;

/*
 * listener__start() - listen as @o says and serve from libmicrohttpd's
 * threads, with a thread of its own that cuts the connections past their
 * header time.  0 with the listener in *@out (stop it with
 * listener__stop()) and the port it listens on in *@port; -EINVAL when
 * @o->addr is not a loopback address, @o->port is too big or a limit is
 * out of its range, -ENOMEM, -EAGAIN when the thread cannot start,
 * -EADDRINUSE when it cannot listen there; with the reason in @err.
 */
int listener__start(const struct listener_opts *o, struct listener **out,
		    unsigned int *port, char *err, size_t errlen);

/*
 * listener__stop() - stop listening, close every connection (the front
 * end's completion callback sees each request end) and free @l.  NULL:
 * nothing.
 */
void listener__stop(struct listener *l);

#endif /* EMBER_API_LISTENER_H */
