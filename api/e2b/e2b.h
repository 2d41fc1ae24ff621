/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ember-e2b's inside: what the HTTP layer (http.c) hands the services and
 * what they hand back.  The HTTP layer reads a whole request (bodies may
 * come chunked), checks its credential and routes it:
 *
 *   - no E2b-Sandbox-Id header: the control plane (control.c), key in
 *     X-API-KEY;
 *   - E2b-Sandbox-Id + E2b-Sandbox-Port 49983: envd (process.c: the
 *     process.Process service; filesystem.c: filesystem.Filesystem;
 *     files.c: /files; /health here), the sandbox's access token in
 *     X-Access-Token;
 *   - E2b-Sandbox-Port 49999: the code interpreter (interp.c: /execute,
 *     /contexts), the token in X-Access-Token or E2B-Traffic-Access-Token.
 *
 * A service fills a struct e2b_resp: a whole body, an fd to send, or a
 * stream that a thread of the service writes while the connection's own
 * thread (libmicrohttpd, a thread per connection) sends it.
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

#define E2B_ENVD_PORT	     49983
#define E2B_INTERP_PORT	     49999
#define E2B_ENVD_VERSION     "0.5.7" /* what create and connect advertise */
#define E2B_MAX_BODY	     (16u << 20) /* bytes of a JSON request body */
#define E2B_MAX_UPLOAD	     (1ull << 30) /* bytes of a /files upload */
#define E2B_HOME	     "/home/user" /* envd's default user's home */
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
	struct pool *pool; /* idle agent connections, per sandbox */
	struct e2b_procs *procs; /* process.c's table of started processes */
};

/* One request, its body complete. */
struct e2b_req {
	struct MHD_Connection *conn; /* for e2b__header() and e2b__query() */
	const char *method; /* "GET", "POST", ... */
	const char *path; /* the URL's path, no query string */
	const char *body; /* NUL-terminated; "" when none; NULL when the body
			     went to @body_fd */
	size_t len; /* its bytes */
	int body_fd; /* -1, or a memfd with the whole body (POST /files, whose
			bodies may be large), read from offset 0; the
			HTTP layer closes it */
	uint64_t body_fd_len;
};

/* The sandbox a guest-side request is for, checked and loaded. */
struct e2b_guest {
	struct sandbox_info info; /* running: not parked, not booting */
	struct e2b_record rec; /* its record (record.h) */
	unsigned int port; /* E2B_ENVD_PORT or E2B_INTERP_PORT */
};

struct e2b_stream;

/*
 * The answer.  Exactly one of: @body (malloc()ed, owned by the response,
 * @len bytes; NULL with @len 0 for none), @fd (>= 0: @fd_len bytes from
 * offset 0 are sent and the fd closed), @stream (its reference is the
 * response's).  Up to E2B_RESP_HEADERS extra headers, strings copied.
 */
#define E2B_RESP_HEADERS 4
struct e2b_resp {
	unsigned int status;
	char content_type[64];
	char *body;
	size_t len;
	int fd;
	uint64_t fd_len;
	struct e2b_stream *stream;
	size_t nheaders;
	char hname[E2B_RESP_HEADERS][32];
	char hvalue[E2B_RESP_HEADERS][256];
};

/* --- http.c: request and response helpers ------------------------------ */

/* The request header @name (case-insensitive), or NULL. */
const char *e2b__header(const struct e2b_req *r, const char *name);

/*
 * The request header @name as a number: decimal digits only, at most
 * @digits of them (1-19); @def when absent or malformed (Connect-Timeout-Ms,
 * Keepalive-Ping-Interval).
 */
uint64_t e2b__header_num(const struct e2b_req *r, const char *name,
			 size_t digits, uint64_t def);

/* The query argument @name, URL-decoded, or NULL.  Borrowed from MHD. */
const char *e2b__query(const struct e2b_req *r, const char *name);

/*
 * Answer @status with @j (stolen; NULL: out of memory -> 500) as
 * application/json.  Returns 0.
 */
int e2b__reply_json(struct e2b_resp *resp, unsigned int status, json_t *j);

/*
 * Answer with E2B's error shape {"code": @status, "message": ...}
 * (the control plane's and envd's REST error), as application/json.
 * Returns 0.
 */
__attribute__((format(printf, 3, 4))) int
e2b__reply_error(struct e2b_resp *resp, unsigned int status, const char *fmt,
		 ...);

/* Answer @status (204, 200...) with no body.  Returns 0. */
int e2b__reply_empty(struct e2b_resp *resp, unsigned int status);

/*
 * Answer @status with the bytes @buf (copied), @len of them, as
 * @content_type.  -ENOMEM (then a 500 is set instead).
 */
int e2b__reply_bytes(struct e2b_resp *resp, unsigned int status,
		     const char *content_type, const void *buf, size_t len);

/* Add a header to the answer; -ENOSPC past E2B_RESP_HEADERS, -E2BIG. */
int e2b__reply_header(struct e2b_resp *resp, const char *name,
		      const char *value);

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

/* The producer is done: the answer ends after what is queued. */
void e2b_stream__end(struct e2b_stream *s);

/* Whether the client went away (the producer may stop early). */
bool e2b_stream__gone(struct e2b_stream *s);

/* Drop a reference; the last frees the stream. */
void e2b_stream__put(struct e2b_stream *s);

/* Answer 200 with @s as @content_type (the response takes a reference). */
int e2b__reply_stream(struct e2b_resp *resp, const char *content_type,
		      struct e2b_stream *s);

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
int files__handle(struct e2b_server *srv, const struct e2b_req *r,
		  struct e2b_guest *g, struct e2b_resp *resp);
int interp__handle(struct e2b_server *srv, const struct e2b_req *r,
		   struct e2b_guest *g, struct e2b_resp *resp);

/*
 * process.c's table of processes started through the process service
 * (so that List, Connect, SendInput and SendSignal find them).
 * procs__new() NULL when out of memory; procs__drop() ends and forgets
 * every process of sandbox @id (killed or paused: their agent connections
 * are gone).  procs__stop() kills every process, ends its streams (so
 * that the HTTP server can stop without waiting on them) and refuses new
 * ones: call it before e2b_http__stop(), and procs__free() (which waits
 * up to 3 s for the processes' threads) before freeing the pool.
 */
struct e2b_procs *procs__new(void);
void procs__drop(struct e2b_procs *p, const char *id);
void procs__stop(struct e2b_procs *p);
void procs__free(struct e2b_procs *p);

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
 * Drop what @srv keeps for sandboxes that are gone without ember-e2b
 * (their timeout, `emberctl kill`): their idle pooled agent connections
 * (file descriptors) and their processes.  Call it now and then; with
 * @all, at exit, for every sandbox.
 */
void guest__sweep(struct e2b_server *srv, bool all);

/*
 * The environment of a process in @g: its record's envVars, then @extra
 * (a JSON object of strings, or NULL) over them, as a NULL-terminated
 * "K=V" array; plus PATH and HOME (E2B_HOME) when not given.
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
