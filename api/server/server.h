/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control socket: HTTP/1.1 with JSON bodies on a Unix socket, served
 * by libmicrohttpd on ember's own event loop (its epoll fd watched there,
 * no thread of its own), answered by routes.c through vmm/control.h.
 * Limits: API_SERVER_MAX_CLIENTS connections at once, headers within
 * MHD's per-connection memory (API_SERVER_CONN_MEMORY), bodies up to
 * ROUTES_MAX_BODY bytes (larger: 400 before the body is read), and every
 * connection closed after API_SERVER_IDLE_S idle seconds, so a client that
 * stalls (a Content-Length longer than its body, a half-closed or
 * abandoned connection) costs one slot for a while, never the VM or the
 * other clients.
 */
#ifndef EMBER_API_SERVER_SERVER_H
#define EMBER_API_SERVER_SERVER_H

#include "../../vmm/control.h"

#define API_SERVER_MAX_CLIENTS 256
#define API_SERVER_IDLE_S      10
#define API_SERVER_CONN_MEMORY (64 * 1024)

struct api_server;
struct event_loop;

/*
 * api_server__start() - bind the Unix socket @path (at most 107 bytes; a
 * stale socket nobody listens on is replaced, anything else there is an
 * error), listen, and serve it from @el (started, not owned) for control
 * @c (not owned).  Both must outlive the server.  Returns the server, or
 * NULL with the reason in @e.
 */
struct api_server *api_server__start(struct event_loop *el, struct control *c,
				     const char *path, struct control_err *e);

/*
 * api_server__stop() - stop serving, close every connection and the
 * socket, unlink @path; NULL is fine.  Call while @el still runs or after
 * it stopped, not from its thread.
 */
void api_server__stop(struct api_server *s);

#endif /* EMBER_API_SERVER_SERVER_H */
