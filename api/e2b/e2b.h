/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ember-e2b's inside: the server's state, the sandbox a guest-side
 * request is for, the services and what they share.  The HTTP layer
 * (http.c) reads a whole request (bodies may come chunked); the router
 * (route.c) checks its credential and hands it to a service:
 *
 *   - no E2b-Sandbox-Id header: the control plane (control.c routes it
 *     to control_lifecycle.c, control_templates.c and template_build.c),
 *     key in X-API-KEY; a template build's upload (PUT /e2b-uploads/...,
 *     template_build.h): the build's token in its URL;
 *   - E2b-Sandbox-Id + E2b-Sandbox-Port 49983: envd (process.c: the
 *     process.Process service, its table in procs.c; filesystem.c:
 *     filesystem.Filesystem, its watches in fs_watch.c; file_transfer.c:
 *     /files; /health and /envs in route.c), the sandbox's access token
 *     in X-Access-Token;
 *   - E2b-Sandbox-Port 49999: the code interpreter (interp.c: /contexts;
 *     interp_exec.c: /execute), the token in X-Access-Token or
 *     E2B-Traffic-Access-Token (or there a private sandbox's traffic
 *     token).
 *   - a Host PORT-ID.DOMAIN (E2B's getHost(PORT)), or E2b-Sandbox-Id
 *     with another E2b-Sandbox-Port: the guest's own TCP port, proxied
 *     as the request arrives (port_proxy.h; http.c hands it over before
 *     the body), a private sandbox's traffic token in
 *     E2b-Traffic-Access-Token.
 *
 * A service fills a struct e2b_resp (reply.h): a whole body, an fd to
 * send, or a stream that a thread of the service writes while the
 * connection's own thread (libmicrohttpd, a thread per connection) sends
 * it.
 */
#ifndef EMBER_API_E2B_H
#define EMBER_API_E2B_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../sandbox/pool.h"
#include "../sandbox/sandbox.h"
#include "connect_rpc.h"
#include "record.h"
#include "reply.h"

#define E2B_ENVD_PORT	     49983
#define E2B_INTERP_PORT	     49999
#define E2B_ENVD_VERSION     "0.5.7" /* what create and connect advertise */
#define E2B_MAX_BODY	     (16u << 20) /* bytes of a JSON request body */
#define E2B_MAX_UPLOAD	     (1ull << 30) /* bytes of a /files upload */
#define E2B_HOME	     "/home/user" /* envd's default user's home */
#define E2B_USER	     "user" /* envd's default user */
#define E2B_USER_MAX	     257 /* bytes of a user name, its NUL included */
#define E2B_AGENT_TIMEOUT_MS 30000 /* a new agent connection, at most */
#define E2B_MAX_ENV	     200 /* variables of a process (the agent's: 256) */
#define E2B_MAX_ENV_BYTES    (256u << 10) /* a sandbox's envVars, "K=V\0"s */

/* The server's settings and shared state (main.c fills it). */
struct e2b_server {
	const char *ember; /* the VMM binary, absolute */
	const char *api_key; /* X-API-KEY must equal it */
	const char *default_template; /* what base / code-interpreter-v1 name */
	enum net_mode net_mode; /* sandboxes' network when they may have one */
	unsigned int boot_timeout_s;
	/* What create and connect answer as `domain`: the SDK's getHost(port)
	   is PORT-ID.DOMAIN, routed to the guest's port (port_proxy.h) */
	const char *domain;
	struct pool *pool; /* idle agent connections, per sandbox */
	struct e2b_procs *procs; /* the table of started processes (procs.h) */
};

/* The sandbox a guest-side request is for, checked and loaded. */
struct e2b_guest {
	struct sandbox_info info; /* running: not parked, not booting */
	struct e2b_record rec; /* its record (record.h) */
	unsigned int port; /* E2B_ENVD_PORT or E2B_INTERP_PORT */
	/* The guest user a file operation runs as (envd_path__user(), set by
	   the file services); "": the guest's default user. */
	char user[E2B_USER_MAX];
};

/* --- stream.c: a streamed answer ------------------------------------- */

/*
 * A new stream (two references: the producer's and, once given to a
 * response, the connection's).  @keepalive (copied, @klen bytes, 0 for
 * none) is sent whenever nothing else was for @keepalive_ms; e.g. a
 * Connect envelope {"event":{"keepalive":{}}}.  NULL when out of memory.
 */
struct e2b_stream *e2b_stream__new(const void *keepalive, size_t klen,
				   unsigned int keepalive_ms);

/*
 * Queue @len bytes of @buf (copied) for the client.  -EPIPE once the
 * client went away (the producer should stop and put its reference),
 * -ENOMEM.  Blocks while more than 4 MiB are queued (a slow client); a
 * client that takes no byte of them for 30 s counts as gone.
 */
int e2b_stream__write(struct e2b_stream *s, const void *buf, size_t len);

/*
 * Queue @len bytes of @buf (copied) at once, never waiting: -ENOBUFS
 * (nothing queued) when more than @max bytes would be queued then, for a
 * producer with several streams that one slow client must not hold up;
 * -EPIPE once the client went away, -ENOMEM.
 */
int e2b_stream__push(struct e2b_stream *s, const void *buf, size_t len,
		     size_t max);

/* The bytes queued in @s that its client has not taken yet. */
size_t e2b_stream__queued(struct e2b_stream *s);

/*
 * Wait as e2b_stream__write() does before it queues: while more than
 * 4 MiB are queued, for at most 30 s without a byte taken.  0, or -EPIPE
 * once the client went away (or counts as gone).
 */
int e2b_stream__wait(struct e2b_stream *s);

/* The producer is done: the answer ends after what is queued. */
void e2b_stream__end(struct e2b_stream *s);

/* Whether the client went away (the producer may stop early). */
bool e2b_stream__gone(struct e2b_stream *s);

/* Drop a reference; the last frees the stream. */
void e2b_stream__put(struct e2b_stream *s);

/* --- services -------------------------------------------------------- */

/*
 * Each fills @resp for the request @r (guest side: for sandbox @g) and
 * returns 0; any failure is an answer in @resp (E2B's or Connect's error
 * shape), never a crash.  @r and @g are valid during the call only: a
 * thread that outlives it (a stream's producer) copies what it needs.
 * Calls run at once, each in its connection's thread.
 */
int control__handle(struct e2b_server *srv, const struct e2b_req *r,
		    struct e2b_resp *resp);
int process__handle(struct e2b_server *srv, const struct e2b_req *r,
		    struct e2b_guest *g, struct e2b_resp *resp);
int filesystem__handle(struct e2b_server *srv, const struct e2b_req *r,
		       struct e2b_guest *g, struct e2b_resp *resp);
int file_transfer__handle(struct e2b_server *srv, const struct e2b_req *r,
			  struct e2b_guest *g, struct e2b_resp *resp);
int interp__handle(struct e2b_server *srv, const struct e2b_req *r,
		   struct e2b_guest *g, struct e2b_resp *resp);

/* --- guest.c: the agent, for the envd services ----------------------- */

/*
 * An agent connection to @g's sandbox: one idle from @srv's pool, or a new
 * one (E2B_AGENT_TIMEOUT_MS).  NULL with @err on failure.  Give it back
 * with guest__agent_done(): to the pool when @ok (its operation
 * succeeded, or failed in the guest only), else freed.
 */
struct agent_client *guest__agent(struct e2b_server *srv,
				  const struct e2b_guest *g, char *err,
				  size_t errlen);
void guest__agent_done(struct e2b_server *srv, const struct e2b_guest *g,
		       struct agent_client *c, bool ok);

/*
 * Note that @g's sandbox may have idle agent connections in the pool,
 * put there by the sandbox library (fs_script.c's guest_fs__run()), for
 * guest__unpool_gone().
 */
void guest__note_pooled(const struct e2b_guest *g);

/*
 * Stop noting the sandboxes not among @live (@n of them; @n 0: all) that
 * had agent connections pooled by guest__agent_done(), and call @gone
 * with each one's id (outside any lock of guest.c), so that what is kept
 * for it can be dropped (forget.h).
 */
void guest__unpool_gone(const struct sandbox_info *live, size_t n,
			void (*gone)(void *arg, const char *id), void *arg);

/*
 * The environment of a process in @g: its record's envVars, then @extra
 * (a JSON object of strings, or NULL) over them, as a NULL-terminated
 * "K=V" array, to go over the guest's default environment (ENV_ADD:
 * the image's Env, and HOME, USER, LOGNAME from the user's account).
 * malloc()ed as one block (free() it); NULL when out of memory.
 */
char **guest__env(const struct e2b_guest *g, const json_t *extra);

/*
 * Run @argv in @g to its end, stdout and stderr captured (each at most
 * @out_max bytes kept) into malloc()ed NUL-terminated buffers the caller
 * frees (*@out, *@errout, either may be NULL when not wanted).  0 with
 * *@status = the exit status (128+N for signal N); -EREMOTEIO when it
 * could not start; another negative errno with @err.
 */
int guest__run(struct e2b_server *srv, const struct e2b_guest *g,
	       const char *const *argv, uint32_t timeout_ms, size_t out_max,
	       char **out, size_t *outlen, char **errout, int *status,
	       char *err, size_t errlen);

#endif /* EMBER_API_E2B_H */
