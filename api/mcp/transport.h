/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ember-mcp's transports (MCP spec 2025-06-18, "Transports"): stdio
 * (stdio.c) and Streamable HTTP (http.c).  Each makes its sessions from
 * a server_config, one mcp_session plus one backend per client.
 */
#ifndef EMBER_MCP_TRANSPORT_H
#define EMBER_MCP_TRANSPORT_H

#include <stdbool.h>

#include "backend.h"
#include "mcp.h"

struct server_config {
	struct mcp_config mcp; /* tools, confirm; call/call_arg set per
				  session */
	struct backend_opts backend;
};

/*
 * stdio__serve() - serve one session on @in_fd / @out_fd (stdin, stdout):
 * newline-delimited JSON-RPC messages each way, the output serialized
 * between the calls' threads.  Returns at EOF on @in_fd (the client went
 * away) once the session's calls ended (under --kill-on-disconnect after
 * every sandbox the session created is killed; else they stay the local
 * user's); 0, or -ENOMEM.  stdio__stop() (from a signal thread) ends the
 * session the same way from another thread: it returns once its calls
 * ended (or 20 s passed); then the process may exit.
 */
int stdio__serve(const struct server_config *cfg, int in_fd, int out_fd);
void stdio__stop(void);

struct http_server;

#define HTTP_SESSION_IDLE_S (30 * 60) /* a session unused, then ended */

/*
 * http__start() - Streamable HTTP on @addr (a loopback address: 127.0.0.0/8
 * or ::1; "localhost" is 127.0.0.1) port @port (0: any free one), path
 * /mcp, every request with "Authorization: Bearer @token" (compared in
 * constant time; 401 otherwise), a non-loopback Origin refused (403),
 * sessions by Mcp-Session-Id.  A session with no request for @idle_s
 * seconds (0: HTTP_SESSION_IDLE_S) and no call running is ended as by
 * DELETE.  @cfg and @token must outlive the server.  Returns 0 with
 * *@out, or a negative errno with @err.
 */
int http__start(const struct server_config *cfg, const char *addr,
		unsigned int port, const char *token, unsigned int idle_s,
		struct http_server **out, char *err, size_t errlen);

/* http__port() - the port @h listens on. */
unsigned int http__port(const struct http_server *h);

/*
 * http__stop() - stop listening, end every session (their sandboxes
 * killed under --kill-on-disconnect) and free @h.
 */
void http__stop(struct http_server *h);

#endif /* EMBER_MCP_TRANSPORT_H */
