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
	unsigned int max_connections; /* all of them at once */
	/* NULL, or called with each request's URI as sent (its query string
	   and escapes kept), in the connection's thread, before @handle sees
	   the request; see MHD_OPTION_URI_LOG_CALLBACK (it must return NULL) */
	void *(*uri_log)(void *cls, const char *uri, struct MHD_Connection *c);
	bool allow_upgrade; /* MHD_ALLOW_UPGRADE: 101 responses (WebSockets) */
};

/*
 * listener__start() - listen as @o says and serve from libmicrohttpd's
 * threads.  0 with the daemon in *@out (stop it with MHD_stop_daemon())
 * and the port it listens on in *@port; -EINVAL when @o->addr is not a
 * loopback address or @o->port is too big, -EADDRINUSE when it cannot
 * listen there, with the reason in @err either way.
 */
int listener__start(const struct listener_opts *o, struct MHD_Daemon **out,
		    unsigned int *port, char *err, size_t errlen);

#endif /* EMBER_API_LISTENER_H */
