// SPDX-License-Identifier: Apache-2.0
/*
 * ember-e2b's HTTP layer (http.h): libmicrohttpd with a thread per
 * connection.  A request's body is read whole first (E2B's SDKs send
 * control-plane and upload bodies chunked: MHD decodes them), into memory
 * up to E2B_MAX_BODY, or for an upload (POST /files) into a memfd up to
 * E2B_MAX_UPLOAD, or for a template's files (template_build.h) into an
 * unnamed file in the uploads' directory up to E2B_MAX_UPLOAD.  The router (route.h) checks the credential (before
 * the body too) and answers; this file sends the answer.
 *
 * A request for a sandbox's own port (port_proxy.h) is not read whole:
 * port_proxy.c takes it from its headers on, its body to the guest as
 * it arrives (the listener keeps its URI as sent and allows upgrades).
 *
 * Connections are limited in number (PER_CLIENT of one address), a
 * request's headers must be in within HEADER_S however they trickle
 * (listener.h), and an idle connection is closed after IDLE_S; while a
 * request's call runs (a create) the timeout is off, and it is back once
 * the call returned: a client that stops reading its answer is dropped
 * (after IDLE_S plus a stream's keepalive interval).
 */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../sandbox/listener.h"
#include "e2b.h"
#include "http.h"
#include "port_proxy.h"
#include "route.h"
#include "stream.h"
#include "template_build.h"

#define MAX_CONNECTIONS 512 /* all on loopback */
/*
 * Of one client address: a quarter, so that one local process (or a
 * slowloris on one address) leaves three quarters of the slots to the
 * others; twice a sandbox's PORT_PROXY_MAX_CONNS, room for an SDK
 * client's streams and WebSockets.  Clients on loopback mostly share
 * 127.0.0.1: past it a connection is closed at once (listener.h).
 */
#define PER_CLIENT (MAX_CONNECTIONS / 4)
#define IDLE_S	   60 /* a connection with no request going on */
#define HEADER_S   10 /* for a request's line and headers (listener.h) */

struct e2b_http {
	struct e2b_server *srv;
	struct listener *l;
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
	struct port_proxy *proxy; /* for a sandbox's own port (port_proxy.h) */
};

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
		if (port_proxy__wants(h->srv, con))
			return port_proxy__begin(h->srv, con, method,
						 &rq->proxy);
		r = (struct e2b_req){
			.conn = con,
			.method = method,
			.path = url,
			.body = "",
			.body_fd = -1,
		};
		if (route__check(h->srv, &r, &resp)) {
			rq->refused = true;
			return send_resp(con, &resp);
		}
		if (wants_fd(con, url, method)) {
			rq->fd = memfd_create("ember-e2b-upload", MFD_CLOEXEC);
			if (rq->fd < 0)
				return MHD_NO; /* completed() frees rq */
		} else if (template_build__is_upload(url) &&
			   !MHD_lookup_connection_value(con, MHD_HEADER_KIND,
							"E2b-Sandbox-Id")) {
			/* A template's files: to disk, not memory. */
			rq->fd = template_build__upload_fd();
			if (rq->fd < 0)
				return MHD_NO;
		}
		return MHD_YES;
	}
	if (rq->proxy)
		return port_proxy__step(rq->proxy, con, data, data_len);
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
		route__too_big(&r, &resp);
		return send_resp(con, &resp);
	}
	if (rq->failed) {
		reply__error(&resp, 507,
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
	route__request(h->srv, &r, &resp);
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
		port_proxy__free(rq->proxy);
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
	struct listener_opts lo = {
		.who = "ember-e2b",
		.addr = addr,
		.port = port,
		.handle = handle,
		.completed = completed,
		.idle_s = IDLE_S,
		.header_s = HEADER_S,
		.max_connections = MAX_CONNECTIONS,
		.per_client = PER_CLIENT,
		.uri_log = port_proxy__uri_log,
		.allow_upgrade = true,
	};
	struct e2b_http *h;
	int rc;

	h = calloc(1, sizeof(*h));
	if (!h) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	h->srv = srv;
	lo.cls = h;
	rc = listener__start(&lo, &h->l, &h->port, err, errlen);
	if (rc) {
		free(h);
		return rc;
	}
	*out = h;
	return 0;
}

unsigned int e2b_http__port(const struct e2b_http *h)
{
	return h->port;
}

void e2b_http__stop(struct e2b_http *h)
{
	listener__stop(h->l);
	free(h);
}
