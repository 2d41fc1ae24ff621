/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ember-e2b's HTTP server (libmicrohttpd, a thread per connection, on a
 * loopback address only): reads each request whole and has the router
 * (route.h) answer it.
 */
#ifndef EMBER_API_E2B_HTTP_H
#define EMBER_API_E2B_HTTP_H

#include <stddef.h>

struct e2b_server;
struct e2b_http;

/*
 * Listen on @addr (127.0.0.0/8 or ::1; "localhost" is 127.0.0.1) port
 * @port (0: any free one, see e2b_http__port()) for @srv (which must
 * outlive the server).  0 with *@out, -EINVAL (not a loopback address),
 * -EADDRINUSE (cannot listen: @err says), -ENOMEM.
 */
int e2b_http__start(struct e2b_server *srv, const char *addr, unsigned int port,
		    struct e2b_http **out, char *err, size_t errlen);

/* The port it listens on. */
unsigned int e2b_http__port(const struct e2b_http *h);

/* Stop listening, wait for the connections' threads, free @h. */
void e2b_http__stop(struct e2b_http *h);

#endif /* EMBER_API_E2B_HTTP_H */
