/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control socket's routes: one HTTP request (method, path, body) in,
 * one reply (status, JSON body) out, with Firecracker's paths, status
 * codes and error shape ({"fault_message": "..."}): 200 with a body for
 * GETs, 204 for a change that worked, 400 for everything refused.  Pure
 * but for the control calls it makes: no sockets here (server.c), so the
 * fuzz target drives it directly.
 */
#ifndef EMBER_API_SERVER_ROUTES_H
#define EMBER_API_SERVER_ROUTES_H

#include <stddef.h>

#include "../../vmm/control.h"

/* The largest body accepted, as Firecracker's default. */
#define ROUTES_MAX_BODY 51200

/* ember's version, and the Firecracker API version it follows. */
#define ROUTES_EMBER_VERSION	   "0.1.0"
#define ROUTES_FIRECRACKER_VERSION "1.10.0"

struct routes_reply {
	int status; /* 200, 204 or 400 */
	char *body; /* JSON text (malloc'd; free it), NULL for 204 */
};

/*
 * routes__handle() - answer @method (as sent: "GET", "PUT", "PATCH", or
 * anything else) on @path (the URI's path, query included) with the @len
 * bytes of @body (not NUL-terminated; NULL when @len is 0) against control
 * @c, on the event thread.  Always fills @r: errors are replies.  Counts
 * the request for the metrics.
 */
void routes__handle(struct control *c, const char *method, const char *path,
		    const char *body, size_t len, struct routes_reply *r);

/* routes__fault() - a reply with @status and {"fault_message": @msg}. */
void routes__fault(struct routes_reply *r, int status, const char *msg);

#endif /* EMBER_API_SERVER_ROUTES_H */
