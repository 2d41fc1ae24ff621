/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A sandbox's own ports through ember-e2b (port_proxy.c): E2B's
 * `sandbox.getHost(PORT)` names PORT-ID.DOMAIN (DOMAIN: what create and
 * connect answered, struct e2b_server's domain), and E2B's proxy also
 * takes the headers E2b-Sandbox-Id and E2b-Sandbox-Port.  A request with
 * such a Host, or with those headers naming a port other than envd's
 * and the interpreter's (e2b.h), goes to TCP port PORT on the guest's
 * loopback through the agent's FORWARD (agent_client.h), a new guest
 * connection per request: HTTP/1.1, bodies streamed both ways (the
 * request's as it arrives, the answer's as the guest sends it), and an
 * Upgrade (WebSockets) relayed: the guest's 101, then bytes both ways
 * until either side closes.
 *
 * Answers of its own: 403 when the sandbox was created with network
 * {allowPublicTraffic: false} and the request lacks its traffic token
 * (header E2b-Traffic-Access-Token); 502 for a sandbox that is not there
 * or not running (resumed first when created with autoResume, as other
 * requests: route.h), and for a port nothing listens on, at once, as
 * E2B's proxy: {"error": "The sandbox is running but port is not open",
 * "sandboxId": ID, "port": ":PORT", ...}; 503 past PORT_PROXY_MAX_CONNS
 * requests (WebSockets included) at once to one sandbox's ports.
 */
#ifndef EMBER_API_E2B_PORT_PROXY_H
#define EMBER_API_E2B_PORT_PROXY_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#include "../sandbox/expose.h"

#define PORT_PROXY_MAX_CONNS EXPOSE_MAX_CONNS /* a sandbox's, at once */
#define PORT_PROXY_HEAD_MAX \
	(64u << 10) /* bytes of a request's or an
					    answer's head */
#define PORT_PROXY_URI_MAX 8192 /* bytes of a request's URI */

struct e2b_server;
struct port_proxy;

/*
 * The listener's URI callback (listener.h's uri_log): keeps the URI as
 * sent (escapes and query string) for the request that follows in the
 * same thread.  Returns NULL.
 */
void *port_proxy__uri_log(void *cls, const char *uri,
			  struct MHD_Connection *con);

/* Whether the request on @con (its headers) is for a sandbox's own port. */
bool port_proxy__wants(const struct e2b_server *srv,
		       struct MHD_Connection *con);

/*
 * The first call for such a request (its headers only): find the
 * sandbox, check its token, connect to the port and send the request's
 * head; or queue the refusal.  Either way *@out is the request's state
 * (port_proxy__step() takes its next calls; free it with
 * port_proxy__free() once MHD says the request is over).  MHD_NO when
 * out of memory (*@out NULL).
 */
enum MHD_Result port_proxy__begin(struct e2b_server *srv,
				  struct MHD_Connection *con,
				  const char *method, struct port_proxy **out);

/*
 * The next calls for request @p: @data (*@data_len bytes, consumed) of
 * its body goes to the guest; the last call (*@data_len 0) reads the
 * guest's answer's head and queues the answer, its body read from the
 * guest as MHD sends it.
 */
enum MHD_Result port_proxy__step(struct port_proxy *p,
				 struct MHD_Connection *con, const char *data,
				 size_t *data_len);

/* Close @p's guest connection and free it.  NULL is allowed. */
void port_proxy__free(struct port_proxy *p);

#endif /* EMBER_API_E2B_PORT_PROXY_H */
