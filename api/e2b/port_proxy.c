// SPDX-License-Identifier: Apache-2.0
/*
 * A sandbox's own ports through ember-e2b (port_proxy.h): which request
 * is for one, the guest connection (the agent's FORWARD), the request's
 * head and body to the guest, the guest's answer back through MHD (its
 * body read as MHD sends it: Content-Length, chunked or up to the end),
 * and an upgraded connection's bytes both ways.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../guest-init/fd_splice.h"
#include "../sandbox/agent_client.h"
#include "e2b.h"
#include "http1.h"
#include "port_proxy.h"
#include "route.h"

#define SLICE_MS     1000 /* a wait looks at the client this often */
#define SEND_IDLE_MS 60000 /* a guest that takes no byte for this long */
#define RBUF	     (64u << 10) /* bytes read from the guest at once */
/* What the guest answers while its request's body is still being sent
   (a server that echoes as it reads) is kept, up to this many bytes. */
#define SPOOL_MAX   (16u << 20)
#define MAX_HEADERS 128 /* an answer's headers kept */
#define COUNT_SLOTS 512 /* sandboxes with requests at once */
#define ID_MAX	    64 /* bytes of a sandbox id as a request names it */

_Static_assert(HTTP1_ID_LEN == SANDBOX_ID_LEN, "a sandbox id's length");
_Static_assert(HTTP1_SIZE_UNKNOWN == MHD_SIZE_UNKNOWN, "an unknown size");

struct port_proxy {
	struct e2b_server *srv;
	char id[ID_MAX + 1]; /* as named (route.c checks it) */
	unsigned int port;
	bool counted; /* holds one of the sandbox's connections */
	bool answered; /* a response is queued: the rest is dropped */
	bool failed; /* sending the body to the guest failed */
	bool head; /* a HEAD request */
	bool upgrade; /* an Upgrade request */
	bool chunked_up; /* the request's body goes chunked */
	int fd; /* the guest TCP connection, or -1 */
	int client_fd; /* the client's socket, to see it go */
	/* What was read from the guest and not used yet. */
	char *buf;
	size_t off, len, cap;
	bool guest_eof;
	/* The answer's body. */
	enum http1_body_mode mode;
	uint64_t left; /* bytes: HTTP1_BODY_LEN's, or this chunk's */
	bool need_crlf, chunks_done;
};

/* --- the URI as sent -------------------------------------------------- */

static __thread char raw_uri[PORT_PROXY_URI_MAX];
static __thread bool raw_uri_ok;

void *port_proxy__uri_log(void *cls, const char *uri,
			  struct MHD_Connection *con)
{
	(void)cls;
	(void)con;
	raw_uri_ok = uri && strlen(uri) < sizeof(raw_uri);
	if (raw_uri_ok)
		memcpy(raw_uri, uri, strlen(uri) + 1);
	return NULL;
}

/* --- connections per sandbox ------------------------------------------ */

static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char id[ID_MAX + 1];
	unsigned int n;
} counts[COUNT_SLOTS];

/* One more connection to @id's ports: 0, or -EBUSY past the limit. */
static int count_take(const char *id)
{
	int rc = -EBUSY, fr = -1;

	pthread_mutex_lock(&count_lock);
	for (int i = 0; i < COUNT_SLOTS; i++) {
		if (counts[i].n && !strcmp(counts[i].id, id)) {
			if (counts[i].n < PORT_PROXY_MAX_CONNS) {
				counts[i].n++;
				rc = 0;
			}
			goto out;
		}
		if (!counts[i].n && fr < 0)
			fr = i;
	}
	if (fr >= 0) {
		snprintf(counts[fr].id, sizeof(counts[fr].id), "%s", id);
		counts[fr].n = 1;
		rc = 0;
	}
out:
	pthread_mutex_unlock(&count_lock);
	return rc;
}

static void count_put(const char *id)
{
	pthread_mutex_lock(&count_lock);
	for (int i = 0; i < COUNT_SLOTS; i++)
		if (counts[i].n && !strcmp(counts[i].id, id)) {
			counts[i].n--;
			break;
		}
	pthread_mutex_unlock(&count_lock);
}

/* --- which requests ---------------------------------------------------- */

/*
 * The sandbox and port that request @con names: by its headers
 * E2b-Sandbox-Id and E2b-Sandbox-Port (a port other than envd's and
 * the interpreter's), else by its Host, PORT-ID.DOMAIN (any port of
 * DOMAIN's, case-insensitive).  true with @id and *@port.
 */
static bool target(const struct e2b_server *srv, struct MHD_Connection *con,
		   char id[ID_MAX + 1], unsigned int *port)
{
	const char *sid = MHD_lookup_connection_value(con, MHD_HEADER_KIND,
						      "E2b-Sandbox-Id");
	const char *host;
	int rc;

	if (sid) {
		const char *ps = MHD_lookup_connection_value(
			con, MHD_HEADER_KIND, "E2b-Sandbox-Port");

		rc = ps ? http1__parse_port(ps, strlen(ps)) : -EINVAL;
		if (rc < 0 || rc == E2B_ENVD_PORT || rc == E2B_INTERP_PORT)
			return false; /* route.c answers it */
		*port = (unsigned int)rc;
		snprintf(id, ID_MAX + 1, "%s", sid);
		return true;
	}
	host = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Host");
	if (!host || !srv->domain)
		return false;
	return !http1__host_target(host, srv->domain, id, port);
}

bool port_proxy__wants(const struct e2b_server *srv, struct MHD_Connection *con)
{
	char id[ID_MAX + 1];
	unsigned int port;

	return target(srv, con, id, &port);
}

/* --- answers of our own ------------------------------------------------- */

static enum MHD_Result queue_json(struct port_proxy *p,
				  struct MHD_Connection *con,
				  unsigned int status, json_t *j)
{
	struct MHD_Response *m;
	enum MHD_Result ret;
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	p->answered = true;
	if (!text)
		return MHD_NO;
	m = MHD_create_response_from_buffer(strlen(text), text,
					    MHD_RESPMEM_MUST_FREE);
	if (!m) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(m, MHD_HTTP_HEADER_CONTENT_TYPE,
				"application/json");
	if (status == 503)
		MHD_add_response_header(m, "Retry-After", "1");
	ret = MHD_queue_response(con, status, m);
	MHD_destroy_response(m);
	return ret;
}

/* E2B's error shape, {"code": @status, "message": ...}, with its status. */
__attribute__((format(printf, 4, 5))) static enum MHD_Result
queue_error(struct port_proxy *p, struct MHD_Connection *con,
	    unsigned int status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	e2b__vclean_text(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return queue_json(p, con, status,
			  json_pack("{s:i, s:s, s:s, s:s}", "code", (int)status,
				    "message", msg, "error", msg, "sandboxId",
				    p->id));
}

/* A refusal of route.c's, answered in @resp. */
static enum MHD_Result queue_resp(struct port_proxy *p,
				  struct MHD_Connection *con,
				  struct e2b_resp *resp)
{
	struct MHD_Response *m;
	enum MHD_Result ret;

	p->answered = true;
	m = MHD_create_response_from_buffer(resp->len, resp->body,
					    MHD_RESPMEM_MUST_FREE);
	if (!m) {
		free(resp->body);
		return MHD_NO;
	}
	if (resp->content_type[0])
		MHD_add_response_header(m, MHD_HTTP_HEADER_CONTENT_TYPE,
					resp->content_type);
	ret = MHD_queue_response(con, resp->status, m);
	MHD_destroy_response(m);
	return ret;
}

/* --- the guest connection ------------------------------------------------ */

/* Whether the client hung up. */
static bool client_gone(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLRDHUP };

	return fd >= 0 && poll(&pf, 1, 0) == 1 &&
	       (pf.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/* Wait for @events on @p's guest fd: the events seen, or 0 when the
   client went (or @idle_ms > 0 passed), -1 on a poll error. */
static int guest_wait(struct port_proxy *p, short events, int idle_ms)
{
	for (int waited = 0; idle_ms <= 0 || waited < idle_ms;
	     waited += SLICE_MS) {
		struct pollfd pf = { .fd = p->fd, .events = events };
		int n = poll(&pf, 1, SLICE_MS);

		if (n < 0 && errno != EINTR)
			return -1;
		if (n > 0)
			return pf.revents;
		if (client_gone(p->client_fd))
			return 0;
	}
	return 0;
}

/* Make room in @p's buffer (up to @most bytes of it): whether there is. */
static bool buf_room(struct port_proxy *p, size_t most)
{
	char *nb;

	if (p->off && p->off == p->len)
		p->off = p->len = 0;
	if (p->len < p->cap)
		return true;
	if (p->off) {
		memmove(p->buf, p->buf + p->off, p->len - p->off);
		p->len -= p->off;
		p->off = 0;
		return true;
	}
	if (p->cap * 2 > most)
		return false;
	nb = realloc(p->buf, p->cap * 2);
	if (!nb)
		return false;
	p->buf = nb;
	p->cap *= 2;
	return true;
}

/* One recv() from the guest into @p's buffer: bytes, 0 at its end, -1
   (errno EAGAIN when none were there). */
static ssize_t guest_recv(struct port_proxy *p)
{
	ssize_t n;

	if (p->guest_eof)
		return 0;
	do
		n = recv(p->fd, p->buf + p->len, p->cap - p->len, MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		p->guest_eof = true;
	if (n > 0)
		p->len += (size_t)n;
	return n;
}

/* Send @len bytes of @b to the guest: 0 or -1.  What the guest answers
   meanwhile is kept (SPOOL_MAX), so that an echo cannot jam both ways. */
static int guest_send(struct port_proxy *p, const void *b, size_t len)
{
	const char *c = b;

	while (len) {
		ssize_t n = send(p->fd, c, len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			bool in = !p->guest_eof && buf_room(p, SPOOL_MAX);
			int ev = guest_wait(p, POLLOUT | (in ? POLLIN : 0),
					    SEND_IDLE_MS);

			if (ev <= 0)
				return -1;
			if (in && (ev & (POLLIN | POLLHUP)) &&
			    guest_recv(p) < 0 && errno != EAGAIN)
				return -1;
			continue;
		}
		if (n <= 0)
			return -1;
		c += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read more from the guest into @p's buffer: bytes read, 0 at its end,
   -1 on failure or when the client went. */
static ssize_t guest_fill(struct port_proxy *p)
{
	if (!buf_room(p, RBUF))
		return -1;
	for (;;) {
		ssize_t n = guest_recv(p);

		if (n < 0 && errno == EAGAIN) {
			if (guest_wait(p, POLLIN, 0) <= 0)
				return -1;
			continue;
		}
		return n;
	}
}

/* Up to @max bytes of the guest's into @out: the count, 0 at its end, -1. */
static ssize_t guest_read(struct port_proxy *p, char *out, size_t max)
{
	size_t n;

	if (p->off == p->len) {
		ssize_t r = guest_fill(p);

		if (r <= 0)
			return r;
	}
	n = p->len - p->off < max ? p->len - p->off : max;
	memcpy(out, p->buf + p->off, n);
	p->off += n;
	return (ssize_t)n;
}

/* The next line of the guest's (CRLF or LF cut off) into @line, NUL
   ended, its length in *@len (a NUL within it counted): 0 or -1. */
static int guest_line(struct port_proxy *p, char *line, size_t cap, size_t *len)
{
	for (;;) {
		char *nl = memchr(p->buf + p->off, '\n', p->len - p->off);

		if (nl) {
			size_t n = (size_t)(nl - (p->buf + p->off));

			if (n >= cap)
				return -1;
			memcpy(line, p->buf + p->off, n);
			if (n && line[n - 1] == '\r')
				n--;
			line[n] = '\0';
			*len = n;
			p->off += (size_t)(nl - (p->buf + p->off)) + 1;
			return 0;
		}
		if (p->len - p->off >= cap || guest_fill(p) <= 0)
			return -1;
	}
}

/* --- the request -------------------------------------------------------- */

struct head {
	char *b;
	size_t len, cap;
	bool failed;
};

__attribute__((format(printf, 2, 3))) static void head_add(struct head *h,
							   const char *fmt, ...)
{
	va_list ap;
	int n;

	if (h->failed)
		return;
	va_start(ap, fmt);
	n = vsnprintf(h->b + h->len, h->cap - h->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= h->cap - h->len)
		h->failed = true;
	else
		h->len += (size_t)n;
}

/* Headers that are the hop's, not the request's, or ember-e2b's. */
static bool hop_header(const char *k)
{
	static const char *const hop[] = {
		"Connection",
		"Keep-Alive",
		"Proxy-Connection",
		"TE",
		"Trailer",
		"Transfer-Encoding",
		"Upgrade",
		"Expect",
		"Content-Length",
		"E2b-Sandbox-Id",
		"E2b-Sandbox-Port",
		"E2b-Traffic-Access-Token",
		"Proxy-Authorization",
	};

	for (size_t i = 0; i < sizeof(hop) / sizeof(*hop); i++)
		if (!strcasecmp(k, hop[i]))
			return true;
	return false;
}

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind,
				  const char *k, const char *v)
{
	struct head *h = cls;

	(void)kind;
	if (k && !hop_header(k))
		head_add(h, "%s: %s\r\n", k, v ? v : "");
	return MHD_YES;
}

/* Whether the comma-separated list @v has the token @t. */
static bool has_token(const char *v, const char *t)
{
	size_t tl = strlen(t);

	while (v && *v) {
		v += strspn(v, " \t,");
		if (!strncasecmp(v, t, tl) &&
		    (!v[tl] || strchr(" \t,;", v[tl])))
			return true;
		v = strchr(v, ',');
	}
	return false;
}

/* The request's head, for the guest: 0 or -1. */
static int send_head(struct port_proxy *p, struct MHD_Connection *con,
		     const char *method)
{
	const char *te = MHD_lookup_connection_value(con, MHD_HEADER_KIND,
						     "Transfer-Encoding");
	const char *cl = MHD_lookup_connection_value(con, MHD_HEADER_KIND,
						     "Content-Length");
	const char *up =
		MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Upgrade");
	const char *conn =
		MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Connection");
	struct head h = { .cap = PORT_PROXY_HEAD_MAX };
	int rc = -1;

	h.b = malloc(h.cap);
	if (!h.b)
		return -1;
	p->upgrade = up && has_token(conn, "upgrade");
	p->chunked_up = te && has_token(te, "chunked");
	head_add(&h, "%s %s HTTP/1.1\r\n", method, raw_uri);
	MHD_get_connection_values(con, MHD_HEADER_KIND, add_header, &h);
	if (p->chunked_up)
		head_add(&h, "Transfer-Encoding: chunked\r\n");
	else if (cl)
		head_add(&h, "Content-Length: %s\r\n", cl);
	if (p->upgrade)
		head_add(&h, "Connection: Upgrade\r\nUpgrade: %s\r\n\r\n", up);
	else
		head_add(&h, "Connection: close\r\n\r\n");
	if (!h.failed)
		rc = guest_send(p, h.b, h.len);
	free(h.b);
	return rc;
}

/*
 * Connect to the guest's port: 0, or -1 with the answer queued (502
 * naming why: nothing listens, as E2B's proxy says it, or the agent).
 */
static int connect_port(struct port_proxy *p, struct MHD_Connection *con,
			const struct sandbox_info *info, enum MHD_Result *ret)
{
	struct agent_client *c;
	char err[512], ps[16];
	int rc, ge;

	rc = sandbox__agent_connect(info, EXPOSE_AGENT_MS, &c, err,
				    sizeof(err));
	if (rc) {
		*ret = queue_error(p, con, 502,
				   "The sandbox %s's agent could not be "
				   "reached: %s",
				   p->id, err);
		return -1;
	}
	rc = agent_client__forward(c, p->port, EXPOSE_AGENT_MS);
	ge = agent_client__guest_errno(c);
	if (!rc)
		p->fd = agent_client__detach_fd(c);
	if (rc == -EREMOTEIO && ge == ECONNREFUSED) {
		snprintf(ps, sizeof(ps), ":%u", p->port);
		*ret = queue_json(
			p, con, 502,
			json_pack("{s:i, s:s, s:s, s:s, s:s}", "code", 502,
				  "error",
				  "The sandbox is running but port is not open",
				  "message",
				  "The sandbox is running but port is not "
				  "open: nothing listens on that port of the "
				  "guest",
				  "sandboxId", p->id, "port", ps));
	} else if (rc == -EREMOTEIO && ge == EPROTO) {
		*ret = queue_error(p, con, 502,
				   "The sandbox %s's agent predates FORWARD: "
				   "rebuild its template",
				   p->id);
	} else if (rc || p->fd < 0) {
		*ret = queue_error(p, con, 502,
				   "The sandbox %s's port %u could not be "
				   "reached: %s",
				   p->id, p->port, agent_client__error(c));
	}
	agent_client__free(c);
	return p->fd >= 0 ? 0 : -1;
}

enum MHD_Result port_proxy__begin(struct e2b_server *srv,
				  struct MHD_Connection *con,
				  const char *method, struct port_proxy **out)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(con, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct e2b_resp resp = { .status = 500, .fd = -1 };
	struct e2b_req r = { .conn = con, .method = method, .body_fd = -1 };
	struct sandbox_info info;
	enum MHD_Result ret = MHD_YES;
	struct port_proxy *p;

	*out = p = calloc(1, sizeof(*p));
	if (!p)
		return MHD_NO;
	p->srv = srv;
	p->fd = -1;
	p->client_fd = ci ? ci->connect_fd : -1;
	p->head = !strcmp(method, "HEAD");
	r.path = raw_uri;
	if (!target(srv, con, p->id, &p->port))
		return queue_error(p, con, 500, "not a port's request");
	if (!raw_uri_ok)
		return queue_error(p, con, 414, "The URI is over %d bytes",
				   PORT_PROXY_URI_MAX - 1);
	p->cap = RBUF;
	p->buf = malloc(p->cap);
	if (!p->buf)
		return queue_error(p, con, 500, "out of memory");
	/* Its call may take long (a resume, a long poll, a WebSocket). */
	MHD_set_connection_option(con, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
	if (route__port_guest(srv, &r, p->id, &info, &resp))
		return queue_resp(p, con, &resp);
	if (count_take(p->id))
		return queue_error(p, con, 503,
				   "The sandbox %s has %d requests to its "
				   "ports going on: the most at once",
				   p->id, PORT_PROXY_MAX_CONNS);
	p->counted = true;
	if (connect_port(p, con, &info, &ret))
		return ret;
	if (send_head(p, con, method))
		p->failed = true;
	return MHD_YES;
}

/* --- the answer ------------------------------------------------------------ */

/* MHD's reader of the answer's body. */
static ssize_t body_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct port_proxy *p = cls;
	char line[HTTP1_LINE_MAX];
	size_t ll;
	ssize_t n;

	(void)pos;
	switch (p->mode) {
	case HTTP1_BODY_NONE:
		return MHD_CONTENT_READER_END_OF_STREAM;
	case HTTP1_BODY_EOF:
		n = guest_read(p, out, max);
		return n > 0  ? n :
		       n == 0 ? MHD_CONTENT_READER_END_OF_STREAM :
				MHD_CONTENT_READER_END_WITH_ERROR;
	case HTTP1_BODY_LEN:
		if (!p->left)
			return MHD_CONTENT_READER_END_OF_STREAM;
		n = guest_read(p, out, p->left < max ? (size_t)p->left : max);
		if (n <= 0)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		p->left -= (uint64_t)n;
		return n;
	case HTTP1_BODY_CHUNKED:
		while (!p->left) {
			if (p->chunks_done)
				return MHD_CONTENT_READER_END_OF_STREAM;
			if (p->need_crlf &&
			    (guest_line(p, line, sizeof(line), &ll) || ll))
				return MHD_CONTENT_READER_END_WITH_ERROR;
			p->need_crlf = false;
			if (guest_line(p, line, sizeof(line), &ll) ||
			    http1__chunk_size(line, ll, &p->left))
				return MHD_CONTENT_READER_END_WITH_ERROR;
			if (p->left)
				continue;
			/* The trailers (dropped), up to an empty line. */
			do {
				if (guest_line(p, line, sizeof(line), &ll))
					return MHD_CONTENT_READER_END_WITH_ERROR;
			} while (ll);
			p->chunks_done = true;
		}
		n = guest_read(p, out, p->left < max ? (size_t)p->left : max);
		if (n <= 0)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		p->left -= (uint64_t)n;
		if (!p->left)
			p->need_crlf = true;
		return n;
	}
	return MHD_CONTENT_READER_END_WITH_ERROR;
}

/* Send @len bytes of @b to @fd (which may be non-blocking): 0 or -1. */
static int send_all(int fd, const char *b, size_t len)
{
	while (len) {
		ssize_t w = send(fd, b, len, MSG_NOSIGNAL);
		struct pollfd pf = { .fd = fd, .events = POLLOUT };

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			if (poll(&pf, 1, SEND_IDLE_MS) <= 0)
				return -1;
			continue;
		}
		if (w <= 0)
			return -1;
		b += w;
		len -= (size_t)w;
	}
	return 0;
}

/*
 * The upgraded connection (MHD calls it in the connection's thread once
 * the 101 is sent): what was read ahead on either side, then bytes both
 * ways until both sides ended, or either failed (fd_splice.h).
 */
static void upgraded(void *cls, struct MHD_Connection *con, void *con_cls,
		     const char *extra_in, size_t extra_in_size,
		     MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	struct port_proxy *p = cls;

	(void)con;
	(void)con_cls;
	if (send_all(sock, p->buf + p->off, p->len - p->off) ||
	    send_all(p->fd, extra_in, extra_in_size))
		goto out;
	p->off = p->len = 0;
	fd_splice__run(sock, p->fd);
out:
	close(p->fd);
	p->fd = -1;
	MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
}

/* Whether the answer's header @k is the hop's (MHD writes its own). */
static bool hop_answer_header(const char *k, bool upgrade)
{
	static const char *const hop[] = {
		"Connection",	     "Keep-Alive", "Proxy-Connection",
		"Transfer-Encoding", "Trailer",	   "Content-Length",
	};

	if (!strcasecmp(k, "Upgrade"))
		return !upgrade;
	for (size_t i = 0; i < sizeof(hop) / sizeof(*hop); i++)
		if (!strcasecmp(k, hop[i]))
			return true;
	return false;
}

/* The guest's answer: its head read, the answer queued. */
static enum MHD_Result answer(struct port_proxy *p, struct MHD_Connection *con)
{
	char *hv[MAX_HEADERS][2], *headp, line[HTTP1_LINE_MAX];
	struct http1_framing fr;
	size_t nh = 0, hlen = 0, ll;
	unsigned int status = 0;
	struct MHD_Response *m;
	enum MHD_Result ret;

	headp = malloc(PORT_PROXY_HEAD_MAX);
	if (!headp)
		return queue_error(p, con, 500, "out of memory");
	/* Informational answers (100, 103) other than 101 are skipped. */
	do {
		nh = hlen = 0;
		memset(&fr, 0, sizeof(fr));
		if (guest_line(p, line, sizeof(line), &ll) ||
		    http1__status_line(line, ll, &status))
			goto bad;
		for (;;) {
			char *k, *v;

			if (guest_line(p, line, sizeof(line), &ll))
				goto bad;
			if (!ll)
				break;
			if (nh == MAX_HEADERS ||
			    hlen + ll + 1 > PORT_PROXY_HEAD_MAX)
				goto bad;
			memcpy(headp + hlen, line, ll + 1);
			if (http1__header_split(headp + hlen, ll, &k, &v) ||
			    http1__framing_add(&fr, k, v))
				goto bad;
			hv[nh][0] = k;
			hv[nh][1] = v;
			nh++;
			hlen += ll + 1;
		}
	} while (status < 200 && status != 101);
	if (status == 101 && !p->upgrade)
		goto bad;
	if (status == 101) {
		m = MHD_create_response_for_upgrade(upgraded, p);
	} else {
		struct http1_body b = http1__body_mode(&fr, status, p->head);

		p->mode = b.mode;
		p->left = b.len;
		m = MHD_create_response_from_callback(b.size, RBUF, body_read,
						      p, NULL);
	}
	if (!m) {
		free(headp);
		return MHD_NO;
	}
	for (size_t i = 0; i < nh; i++)
		if (!hop_answer_header(hv[i][0], status == 101))
			MHD_add_response_header(m, hv[i][0], hv[i][1]);
	free(headp);
	p->answered = true;
	ret = MHD_queue_response(con, status, m);
	MHD_destroy_response(m);
	return ret;
bad:
	free(headp);
	return queue_error(p, con, 502,
			   "The server on the sandbox %s's port %u gave no "
			   "HTTP/1.1 answer",
			   p->id, p->port);
}

enum MHD_Result port_proxy__step(struct port_proxy *p,
				 struct MHD_Connection *con, const char *data,
				 size_t *data_len)
{
	char size[24];

	if (p->answered) {
		*data_len = 0;
		return MHD_YES;
	}
	if (*data_len) {
		if (!p->failed && p->chunked_up) {
			snprintf(size, sizeof(size), "%zx\r\n", *data_len);
			p->failed = guest_send(p, size, strlen(size)) ||
				    guest_send(p, data, *data_len) ||
				    guest_send(p, "\r\n", 2);
		} else if (!p->failed) {
			p->failed = guest_send(p, data, *data_len) != 0;
		}
		*data_len = 0;
		return MHD_YES;
	}
	if (!p->failed && p->chunked_up)
		p->failed = guest_send(p, "0\r\n\r\n", 5) != 0;
	if (p->failed)
		return queue_error(p, con, 502,
				   "The sandbox %s's port %u closed while the "
				   "request was sent",
				   p->id, p->port);
	return answer(p, con);
}

void port_proxy__free(struct port_proxy *p)
{
	if (!p)
		return;
	if (p->fd >= 0)
		close(p->fd);
	if (p->counted)
		count_put(p->id);
	free(p->buf);
	free(p);
}
