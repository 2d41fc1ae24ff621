// SPDX-License-Identifier: Apache-2.0
/*
 * ember-e2b's HTTP layer (http.h, e2b.h): libmicrohttpd with a thread per
 * connection.  A request's body is read whole first (E2B's SDKs send
 * control-plane and upload bodies chunked: MHD decodes them), into memory
 * up to E2B_MAX_BODY, or for an upload (POST /files) into a memfd up to
 * E2B_MAX_UPLOAD.  Then the credential is checked and the request routed:
 *
 *   no E2b-Sandbox-Id          control plane, X-API-KEY = the server's key
 *   E2b-Sandbox-Id, port 49983 envd: Connect services, /files, /health,
 *                              /envs; X-Access-Token = the sandbox's token
 *   E2b-Sandbox-Id, port 49999 the code interpreter; the token in
 *                              X-Access-Token or E2B-Traffic-Access-Token
 *
 * A sandbox that is not running (none, parked, booting) answers 502, as
 * E2B's proxy does for a sandbox it cannot reach: the SDKs read that as
 * "not running".  An idle connection is closed after IDLE_S; while a
 * request's call runs (a create) the timeout is off, and it is back once
 * the call returned: a client that stops reading its answer is dropped
 * (after IDLE_S plus a stream's keepalive interval).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../sandbox/loopback.h"
#include "e2b.h"
#include "http.h"
#include "stream.h"

#define MAX_CONNECTIONS 512 /* all on loopback */
#define IDLE_S		60 /* a connection with no request going on */

struct e2b_http {
	struct e2b_server *srv;
	struct MHD_Daemon *d;
	unsigned int port;
};

/* A connection's request, across MHD's calls. */
struct req_state {
	char *body;
	size_t len;
	int fd; /* -1, or the memfd of an upload */
	uint64_t fd_len;
	bool too_big;
	bool failed; /* writing the memfd failed */
	bool refused; /* answered before its body: the body is dropped */
};

/* --- helpers for the services ------------------------------------------- */

const char *e2b__header(const struct e2b_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

uint64_t e2b__header_num(const struct e2b_req *r, const char *name,
			 size_t digits, uint64_t def)
{
	const char *v = e2b__header(r, name);
	uint64_t n = 0;

	if (digits > 19)
		digits = 19; /* fits in 64 bits */
	if (!v || !*v || strlen(v) > digits ||
	    strspn(v, "0123456789") != strlen(v))
		return def;
	for (size_t i = 0; v[i]; i++)
		n = n * 10 + (uint64_t)(v[i] - '0');
	return n;
}

const char *e2b__query(const struct e2b_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND,
					   name);
}

static void set_type(struct e2b_resp *resp, const char *type)
{
	snprintf(resp->content_type, sizeof(resp->content_type), "%s",
		 type ? type : "");
}

int e2b__reply_json(struct e2b_resp *resp, unsigned int status, json_t *j)
{
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	free(resp->body);
	resp->body = NULL;
	resp->len = 0;
	if (!text) {
		static const char oom[] =
			"{\"code\":500,\"message\":\"out of memory\"}";

		resp->status = 500;
		resp->body = strdup(oom);
		resp->len = resp->body ? strlen(oom) : 0;
		set_type(resp, "application/json");
		return 0;
	}
	resp->status = status;
	resp->body = text;
	resp->len = strlen(text);
	set_type(resp, "application/json");
	return 0;
}

int e2b__reply_error(struct e2b_resp *resp, unsigned int status,
		     const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return e2b__reply_json(
		resp, status,
		json_pack("{s:i, s:s}", "code", (int)status, "message", msg));
}

int e2b__reply_empty(struct e2b_resp *resp, unsigned int status)
{
	free(resp->body);
	resp->body = NULL;
	resp->len = 0;
	resp->status = status;
	set_type(resp, NULL);
	return 0;
}

int e2b__reply_bytes(struct e2b_resp *resp, unsigned int status,
		     const char *content_type, const void *buf, size_t len)
{
	char *copy = malloc(len ? len : 1);

	if (!copy) {
		e2b__reply_error(resp, 500, "out of memory");
		return -ENOMEM;
	}
	memcpy(copy, buf, len);
	free(resp->body);
	resp->body = copy;
	resp->len = len;
	resp->status = status;
	set_type(resp, content_type);
	return 0;
}

int e2b__reply_header(struct e2b_resp *resp, const char *name,
		      const char *value)
{
	if (resp->nheaders >= E2B_RESP_HEADERS)
		return -ENOSPC;
	if (strlen(name) >= sizeof(resp->hname[0]) ||
	    strlen(value) >= sizeof(resp->hvalue[0]))
		return -E2BIG;
	strcpy(resp->hname[resp->nheaders], name);
	strcpy(resp->hvalue[resp->nheaders], value);
	resp->nheaders++;
	return 0;
}

int e2b__reply_stream(struct e2b_resp *resp, const char *content_type,
		      struct e2b_stream *s)
{
	free(resp->body);
	resp->body = NULL;
	resp->len = 0;
	resp->status = 200;
	resp->stream = s;
	set_type(resp, content_type);
	return 0;
}

/* --- routing -------------------------------------------------------------- */

static bool secret_eq(const char *a, const char *b)
{
	size_t la, lb;
	unsigned char d = 0;

	if (!a || !b)
		return false;
	la = strlen(a);
	lb = strlen(b);
	for (size_t i = 0; i < lb; i++)
		d |= (unsigned char)(b[i] ^ (i < la ? a[i] : 0));
	return d == 0 && la == lb;
}

static bool has_prefix(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

/* Envd's Connect services answer their errors in Connect's shape. */
static bool is_connect(const char *path)
{
	return has_prefix(path, "/process.Process/") ||
	       has_prefix(path, "/filesystem.Filesystem/");
}

static int guest_fail(const struct e2b_req *r, struct e2b_resp *resp,
		      unsigned int status, const char *code, const char *msg)
{
	if (is_connect(r->path))
		return e2b__reply_json(resp, status, connect__error(code, msg));
	return e2b__reply_error(resp, status, "%s", msg);
}

static int envd_env(const struct e2b_guest *g, struct e2b_resp *resp)
{
	return e2b__reply_json(resp, 200,
			       json_deep_copy(g->rec.env_vars ?
						      g->rec.env_vars :
						      json_object()));
}

/*
 * The running sandbox @id that request @r may use, into @g (release its
 * record): 0, or -1 with the refusal answered.
 */
static int guest_open(const struct e2b_req *r, const char *id,
		      struct e2b_guest *g, struct e2b_resp *resp)
{
	const char *port_s = e2b__header(r, "E2b-Sandbox-Port");
	const char *token = e2b__header(r, "X-Access-Token");
	char err[512], *end;
	unsigned long port;
	int rc;

	memset(g, 0, sizeof(*g));
	errno = 0;
	port = port_s ? strtoul(port_s, &end, 10) : 0;
	if (!port_s || errno || *end ||
	    (port != E2B_ENVD_PORT && port != E2B_INTERP_PORT)) {
		snprintf(err, sizeof(err),
			 "The sandbox port %s is not served: ember serves "
			 "envd (%d) and the code interpreter (%d)",
			 port_s ? port_s : "(none)", E2B_ENVD_PORT,
			 E2B_INTERP_PORT);
		e2b__reply_error(resp, 502, "%s", err);
		return -1;
	}
	g->port = (unsigned int)port;
	if (strlen(id) != SANDBOX_ID_LEN ||
	    strspn(id, "0123456789abcdef") != SANDBOX_ID_LEN ||
	    sandbox__find(id, &g->info, err, sizeof(err)) ||
	    strcmp(g->info.id, id)) {
		snprintf(err, sizeof(err), "The sandbox %.64s was not found",
			 id);
		guest_fail(r, resp, 502, "unavailable", err);
		return -1;
	}
	if (g->info.parked || g->info.paused || !g->info.ready) {
		snprintf(err, sizeof(err), "The sandbox %s is %s", id,
			 sandbox__state_name(&g->info));
		guest_fail(r, resp, 502, "unavailable", err);
		return -1;
	}
	rc = record__load(g->info.dir, &g->rec);
	if (!token || !*token)
		token = e2b__header(r, "E2B-Traffic-Access-Token");
	if (rc || !record__token_ok(&g->rec, token)) {
		record__release(&g->rec);
		guest_fail(r, resp, 401, "unauthenticated",
			   rc ? "This sandbox has no access token yet: "
				"connect to it first" :
				"Invalid or missing access token");
		return -1;
	}
	return 0;
}

static int route_guest(struct e2b_server *srv, const struct e2b_req *r,
		       const char *id, struct e2b_resp *resp)
{
	struct e2b_guest g;
	int rc;

	if (guest_open(r, id, &g, resp))
		return 0;
	if (g.port == E2B_INTERP_PORT)
		rc = interp__handle(srv, r, &g, resp);
	else if (has_prefix(r->path, "/process.Process/"))
		rc = process__handle(srv, r, &g, resp);
	else if (has_prefix(r->path, "/filesystem.Filesystem/"))
		rc = filesystem__handle(srv, r, &g, resp);
	else if (!strcmp(r->path, "/files"))
		rc = files__handle(srv, r, &g, resp);
	else if (!strcmp(r->path, "/health"))
		rc = e2b__reply_empty(resp, 204);
	else if (!strcmp(r->path, "/envs") && !strcmp(r->method, "GET"))
		rc = envd_env(&g, resp);
	else
		rc = e2b__reply_error(resp, 404, "envd has no %.200s %.200s",
				      r->method, r->path);
	record__release(&g.rec);
	return rc;
}

/*
 * Whether request @r (its headers) carries its credential: 0, or -1 with
 * the refusal answered.  Looked at before the body is read too, so that
 * no stranger's body is kept (an upload's goes to a memfd).
 */
static int credential_ok(struct e2b_server *srv, const struct e2b_req *r,
			 struct e2b_resp *resp)
{
	const char *id = e2b__header(r, "E2b-Sandbox-Id");
	struct e2b_guest g;

	if (id) {
		if (guest_open(r, id, &g, resp))
			return -1;
		record__release(&g.rec);
		return 0;
	}
	if (!secret_eq(e2b__header(r, "X-API-KEY"), srv->api_key)) {
		e2b__reply_error(resp, 401, "Invalid API key");
		return -1;
	}
	return 0;
}

static int route(struct e2b_server *srv, const struct e2b_req *r,
		 struct e2b_resp *resp)
{
	const char *id = e2b__header(r, "E2b-Sandbox-Id");

	if (id)
		return route_guest(srv, r, id, resp);
	if (!secret_eq(e2b__header(r, "X-API-KEY"), srv->api_key))
		return e2b__reply_error(resp, 401, "Invalid API key");
	return control__handle(srv, r, resp);
}

/* --- libmicrohttpd -------------------------------------------------------- */

static enum MHD_Result send_resp(struct MHD_Connection *con,
				 struct e2b_resp *resp)
{
	struct MHD_Response *m;
	enum MHD_Result ret;

	if (resp->stream) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
			con, MHD_CONNECTION_INFO_CONNECTION_FD);

		if (ci)
			stream__set_client(resp->stream, ci->connect_fd);
		m = MHD_create_response_from_callback(
			MHD_SIZE_UNKNOWN, 65536, stream__read, resp->stream,
			stream__release);
		if (!m) {
			stream__release(resp->stream);
			return MHD_NO;
		}
		resp->stream = NULL;
	} else if (resp->fd >= 0) {
		m = MHD_create_response_from_fd64(resp->fd_len, resp->fd);
		if (!m) {
			close(resp->fd);
			return MHD_NO;
		}
		resp->fd = -1;
	} else {
		m = MHD_create_response_from_buffer(resp->len, resp->body,
						    MHD_RESPMEM_MUST_FREE);
		if (!m) {
			free(resp->body);
			return MHD_NO;
		}
	}
	resp->body = NULL;
	if (resp->content_type[0])
		MHD_add_response_header(m, MHD_HTTP_HEADER_CONTENT_TYPE,
					resp->content_type);
	for (size_t i = 0; i < resp->nheaders; i++)
		MHD_add_response_header(m, resp->hname[i], resp->hvalue[i]);
	ret = MHD_queue_response(con, resp->status, m);
	MHD_destroy_response(m);
	return ret;
}

/* A body over the limit, answered in the shape that its client reads. */
static void reply_too_big(const struct e2b_req *r, struct e2b_resp *resp)
{
	const char *ctype = e2b__header(r, "Content-Type");
	const char *port = e2b__header(r, "E2b-Sandbox-Port");
	char msg[128];
	uint8_t *b;
	size_t n;

	snprintf(msg, sizeof(msg),
		 "The request body is over the limit (%u MiB; uploads %llu "
		 "MiB)",
		 E2B_MAX_BODY >> 20,
		 (unsigned long long)(E2B_MAX_UPLOAD >> 20));
	if (!e2b__header(r, "E2b-Sandbox-Id") || !is_connect(r->path)) {
		if (port && !strcmp(port, "49999")) /* the interpreter's */
			e2b__reply_bytes(resp, 413, "text/plain; charset=utf-8",
					 msg, strlen(msg));
		else
			e2b__reply_error(resp, 413, "%s", msg);
		return;
	}
	if (!ctype || strncasecmp(ctype, "application/connect+", 20)) {
		e2b__reply_json(resp,
				connect__http_status("resource_exhausted"),
				connect__error("resource_exhausted", msg));
		return;
	}
	/* A stream's error is in its END_STREAM message. */
	b = connect__end_stream("resource_exhausted", msg, &n);
	if (!b || e2b__reply_bytes(resp, 200, "application/connect+json", b, n))
		e2b__reply_error(resp, 500, "out of memory");
	free(b);
}

/* An upload's body goes to a memfd (POST /files on the envd port). */
static bool wants_fd(struct MHD_Connection *con, const char *url,
		     const char *method)
{
	return !strcmp(method, "POST") && !strcmp(url, "/files") &&
	       MHD_lookup_connection_value(con, MHD_HEADER_KIND,
					   "E2b-Sandbox-Id");
}

static enum MHD_Result take_data(struct req_state *rq, const char *data,
				 size_t n)
{
	char *nb;

	if (rq->too_big || rq->failed)
		return MHD_YES;
	if (rq->fd >= 0) {
		size_t off = 0;

		if (rq->fd_len + n > E2B_MAX_UPLOAD) {
			rq->too_big = true;
			return MHD_YES;
		}
		while (off < n) {
			ssize_t w = write(rq->fd, data + off, n - off);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				rq->failed = true;
				return MHD_YES;
			}
			off += (size_t)w;
		}
		rq->fd_len += n;
		return MHD_YES;
	}
	if (rq->len + n > E2B_MAX_BODY) {
		rq->too_big = true;
		return MHD_YES;
	}
	nb = realloc(rq->body, rq->len + n + 1);
	if (!nb)
		return MHD_NO;
	rq->body = nb;
	memcpy(rq->body + rq->len, data, n);
	rq->len += n;
	rq->body[rq->len] = '\0';
	return MHD_YES;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *con,
			      const char *url, const char *method,
			      const char *version, const char *data,
			      size_t *data_len, void **con_cls)
{
	struct e2b_http *h = cls;
	struct req_state *rq = *con_cls;
	struct e2b_resp resp = { .status = 500, .fd = -1 };
	struct e2b_req r;
	enum MHD_Result ret;

	(void)version;
	if (!rq) {
		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		rq->fd = -1;
		*con_cls = rq;
		r = (struct e2b_req){
			.conn = con,
			.method = method,
			.path = url,
			.body = "",
			.body_fd = -1,
		};
		if (credential_ok(h->srv, &r, &resp)) {
			rq->refused = true;
			return send_resp(con, &resp);
		}
		if (wants_fd(con, url, method)) {
			rq->fd = memfd_create("ember-e2b-upload", MFD_CLOEXEC);
			if (rq->fd < 0)
				return MHD_NO; /* completed() frees rq */
		}
		return MHD_YES;
	}
	if (rq->refused) {
		*data_len = 0;
		return MHD_YES;
	}
	if (*data_len) {
		ret = take_data(rq, data, *data_len);
		*data_len = 0;
		return ret;
	}
	/* Whole: its call may take long (a create, a command's stream). */
	MHD_set_connection_option(con, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
	if (rq->too_big) {
		r = (struct e2b_req){ .conn = con,
				      .method = method,
				      .path = url };
		reply_too_big(&r, &resp);
		return send_resp(con, &resp);
	}
	if (rq->failed) {
		e2b__reply_error(&resp, 507,
				 "The upload could not be stored on the host");
		return send_resp(con, &resp);
	}
	r = (struct e2b_req){
		.conn = con,
		.method = method,
		.path = url,
		.body = rq->fd >= 0 ? NULL : (rq->body ? rq->body : ""),
		.len = rq->len,
		.body_fd = rq->fd,
		.body_fd_len = rq->fd_len,
	};
	route(h->srv, &r, &resp);
	/*
	 * The answer has no reason to wait on its client: one that stops
	 * reading is dropped after IDLE_S, not kept with the answer's
	 * memory (a download's memfd, a stream's queue).  A stream sends
	 * at least a keepalive per interval.
	 */
	MHD_set_connection_option(
		con, MHD_CONNECTION_OPTION_TIMEOUT,
		(unsigned int)IDLE_S +
			(resp.stream ? stream__keepalive_s(resp.stream) : 0));
	if (resp.status >= 500 && !resp.stream)
		fprintf(stderr, "ember-e2b: %s %s: %u %.*s\n", method, url,
			resp.status, (int)(resp.len < 300 ? resp.len : 300),
			resp.body ? resp.body : "");
	return send_resp(con, &resp);
}

static void completed(void *cls, struct MHD_Connection *con, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct req_state *rq = *con_cls;

	(void)cls;
	if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		MHD_set_connection_option(con, MHD_CONNECTION_OPTION_TIMEOUT,
					  (unsigned int)IDLE_S);
	if (rq) {
		if (rq->fd >= 0)
			close(rq->fd);
		free(rq->body);
		free(rq);
		*con_cls = NULL;
	}
}

int e2b_http__start(struct e2b_server *srv, const char *addr, unsigned int port,
		    struct e2b_http **out, char *err, size_t errlen)
{
	/* poll(): a busy server's sockets are past FD_SETSIZE (a command
	   takes ~9 descriptors), and select() would refuse them. */
	unsigned int flags = MHD_USE_THREAD_PER_CONNECTION |
			     MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
	const union MHD_DaemonInfo *di;
	struct sockaddr_in6 sa;
	struct e2b_http *h;
	bool ipv6;
	int rc;

	rc = loopback__sockaddr(addr, port, "ember-e2b", &sa, &ipv6, err,
				errlen);
	if (rc)
		return rc;
	if (ipv6)
		flags |= MHD_USE_IPv6;
	h = calloc(1, sizeof(*h));
	if (!h) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	h->srv = srv;
	h->d = MHD_start_daemon(
		flags, (uint16_t)port, NULL, NULL, handle, h,
		MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)&sa,
		MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)IDLE_S,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned int)MAX_CONNECTIONS,
		MHD_OPTION_END);
	if (!h->d) {
		snprintf(err, errlen, "cannot listen on %s port %u", addr,
			 port);
		free(h);
		return -EADDRINUSE;
	}
	di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	h->port = di ? di->port : port;
	*out = h;
	return 0;
}

unsigned int e2b_http__port(const struct e2b_http *h)
{
	return h->port;
}

void e2b_http__stop(struct e2b_http *h)
{
	MHD_stop_daemon(h->d);
	free(h);
}
