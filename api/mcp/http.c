// SPDX-License-Identifier: Apache-2.0
/*
 * The Streamable HTTP transport (MCP spec 2025-06-18, "Transports:
 * Streamable HTTP") on libmicrohttpd, a thread per connection: POST /mcp
 * carries one JSON-RPC message; a request is answered with
 * application/json, or with a text/event-stream when the call sends the
 * client a request first (elicitation), whose response comes back in a
 * POST of its own (202).  GET: 405 (no server-initiated stream).  DELETE
 * ends the session.  Only on loopback, only with the bearer token, and no
 * page from another origin (DNS rebinding: spec, "Security Warning").
 *
 * Any local process can connect, so connections are limited in number
 * (PER_CLIENT of one address), a request's headers must be in within
 * HEADER_S however they trickle (listener.h), and a connection that
 * stays idle IDLE_S is closed (a keep-alive connection unused).  MHD
 * checks that timeout in the connection's own thread, after the access
 * handler and after each call of a response's content reader, against
 * the last byte that moved: a tool call that blocks the handler for
 * minutes, or an SSE stream that waits for the user's answer, would be
 * cut as soon as it returns.  So an authenticated request runs without
 * the timeout (its call ends, and the user's time to answer is
 * MCP_ELICIT_MS) and the connection gets it back when the request
 * completes.  An SSE stream also carries a comment every SSE_PING_S, so
 * that clients (and their HTTP stacks' body timeouts) see it alive, and
 * a client gone is seen before the answer comes.
 *
 * A session with no request for the session idle time (--session-idle)
 * and no call running is ended as by DELETE: a client that crashed holds
 * no slot of the MAX_SESSIONS for good.  Ending a session kills nothing
 * (its sandboxes are the token's, roster.h) unless --kill-on-disconnect.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "../sandbox/clock.h"
#include "../sandbox/listener.h"
#include "jsonrpc.h"
#include "transport.h"

#define SESSION_ID_LEN	32 /* hex digits */
#define MAX_SESSIONS	256
#define MAX_CONNECTIONS 256 /* all of them, all on loopback */
/* Of one client address: a quarter, so that one local process (or a
   slowloris on one address) leaves three quarters of the slots to the
   others; an MCP client holds a few.  Past it: closed (listener.h). */
#define PER_CLIENT  (MAX_CONNECTIONS / 4)
#define IDLE_S	    10 /* a connection with no request going on */
#define HEADER_S    10 /* for a request's line and headers (listener.h) */
#define SSE_PING_S  20 /* between two comments of an idle SSE stream */
#define SWEEP_MAX_S 5 /* between two sweeps (sessions, pooled connections) */

struct session {
	struct session *next;
	char id[SESSION_ID_LEN + 1];
	struct mcp_session *s;
	struct backend *b;
	int users; /* requests working on it; under http_server.lock */
	time_t used; /* CLOCK_MONOTONIC s of its last request; under lock */
};

struct http_server {
	const struct server_config *cfg;
	const char *token;
	struct listener *l;
	unsigned int port;
	pthread_mutex_t lock; /* guards the sessions */
	pthread_cond_t cond; /* a session's users dropped */
	struct session *sessions;
	size_t nsessions;
	unsigned int idle_s; /* a session unused that long is ended */
	pthread_t sweeper; /* ends them */
	bool stopping; /* for the sweeper; under lock */
	unsigned int
		ending; /* DELETEd sessions end_thread() ends; under lock */
};

/* The messages of one POST's request, from the session to the client. */
struct post_out {
	struct mcp_out base;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	char **q; /* queued messages, NUL-terminated JSON */
	size_t n, head;
	bool final; /* the response is queued: nothing comes after it */
	bool gone; /* the connection closed */
	char *cur; /* the SSE event being written, and where */
	size_t cur_len, cur_off;
};

/* A connection's request, across MHD's calls. */
struct req {
	char *body;
	size_t len;
	bool too_big;
};

/* --- post_out -------------------------------------------------------- */

static void post_release(struct mcp_out *o)
{
	struct post_out *p = (struct post_out *)o;

	for (size_t i = p->head; i < p->n; i++)
		free(p->q[i]);
	free(p->q);
	free(p->cur);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

static int post_send(struct mcp_out *o, const char *json, size_t len,
		     bool final)
{
	struct post_out *p = (struct post_out *)o;
	char **q;
	int rc = 0;

	pthread_mutex_lock(&p->lock);
	if (p->gone || p->final) {
		rc = -EPIPE;
		goto out;
	}
	q = realloc(p->q, (p->n + 1) * sizeof(*q));
	if (!q) {
		rc = -ENOMEM;
		goto out;
	}
	p->q = q;
	p->q[p->n] = strndup(json, len);
	if (!p->q[p->n]) {
		rc = -ENOMEM;
		goto out;
	}
	p->n++;
	p->final = final;
	pthread_cond_broadcast(&p->cond);
out:
	/* A final message lost must still end the stream. */
	if (rc && final)
		p->final = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return rc;
}

static struct post_out *post_new(void)
{
	struct post_out *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->base.send = post_send;
	p->base.release = post_release;
	p->base.refs = 1; /* the transport's */
	pthread_mutex_init(&p->lock, NULL);
	clock__cond_init(&p->cond); /* sse_read() waits on it */
	return p;
}

static void post_put(struct post_out *p)
{
	if (__atomic_sub_fetch(&p->base.refs, 1, __ATOMIC_ACQ_REL) == 0)
		post_release(&p->base);
}

/*
 * The first message of the answer, malloc()ed, and whether it is the
 * final one; NULL when the session sent nothing final (out of memory).
 */
static char *post_first(struct post_out *p, bool *final)
{
	char *m = NULL;

	pthread_mutex_lock(&p->lock);
	while (p->head == p->n && !p->final)
		pthread_cond_wait(&p->cond, &p->lock);
	if (p->head < p->n) {
		m = p->q[p->head++];
		*final = p->final && p->head == p->n;
	}
	pthread_mutex_unlock(&p->lock);
	return m;
}

static time_t now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec;
}

/*
 * MHD's reader of an SSE answer: each message as one "message" event,
 * and a comment line when none came for SSE_PING_S.
 */
static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct post_out *p = cls;
	struct timespec until;
	size_t n;
	char *m;

	(void)pos;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += SSE_PING_S;
	pthread_mutex_lock(&p->lock);
	while (!p->cur) {
		if (p->head < p->n) {
			m = p->q[p->head++];
			if (asprintf(&p->cur, "event: message\ndata: %s\n\n",
				     m) < 0)
				p->cur = NULL;
			free(m);
			if (!p->cur) {
				pthread_mutex_unlock(&p->lock);
				return MHD_CONTENT_READER_END_WITH_ERROR;
			}
			p->cur_len = strlen(p->cur);
			p->cur_off = 0;
		} else if (p->final) {
			pthread_mutex_unlock(&p->lock);
			return MHD_CONTENT_READER_END_OF_STREAM;
		} else if (pthread_cond_timedwait(&p->cond, &p->lock, &until) ==
			   ETIMEDOUT) {
			p->cur = strdup(": ping\n\n");
			if (!p->cur) {
				pthread_mutex_unlock(&p->lock);
				return MHD_CONTENT_READER_END_WITH_ERROR;
			}
			p->cur_len = strlen(p->cur);
			p->cur_off = 0;
		}
	}
	n = p->cur_len - p->cur_off;
	if (n > max)
		n = max;
	memcpy(buf, p->cur + p->cur_off, n);
	p->cur_off += n;
	if (p->cur_off == p->cur_len) {
		free(p->cur);
		p->cur = NULL;
	}
	pthread_mutex_unlock(&p->lock);
	return (ssize_t)n;
}

static void sse_free(void *cls)
{
	struct post_out *p = cls;

	pthread_mutex_lock(&p->lock);
	p->gone = true;
	pthread_mutex_unlock(&p->lock);
	post_put(p);
}

/* --- sessions ---------------------------------------------------------- */

static struct session *session_get(struct http_server *h, const char *id)
{
	struct session *s;

	pthread_mutex_lock(&h->lock);
	for (s = h->sessions; s; s = s->next)
		if (!strcmp(s->id, id))
			break;
	if (s) {
		s->users++;
		s->used = now_s();
	}
	pthread_mutex_unlock(&h->lock);
	return s;
}

static void session_put(struct http_server *h, struct session *s)
{
	pthread_mutex_lock(&h->lock);
	s->users--;
	s->used = now_s();
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
}

static struct session *session_new(struct http_server *h)
{
	struct session *s = calloc(1, sizeof(*s));
	struct mcp_config mc = h->cfg->mcp;
	unsigned char r[SESSION_ID_LEN / 2];

	if (!s)
		return NULL;
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		goto fail;
	for (size_t i = 0; i < sizeof(r); i++)
		snprintf(s->id + 2 * i, 3, "%02x", r[i]);
	s->b = backend__new(&h->cfg->backend);
	if (!s->b)
		goto fail;
	mc.call = backend__call;
	mc.call_arg = s->b;
	s->s = mcp__new(&mc);
	if (!s->s)
		goto fail;
	s->users = 1;
	s->used = now_s();
	return s;
fail:
	backend__free(s->b);
	free(s);
	return NULL;
}

/*
 * End @s (out of the table, or never in it): calls refused, its sandboxes
 * killed under --kill-on-disconnect, then wait for its calls and requests.
 */
static void session_end(struct http_server *h, struct session *s)
{
	mcp__shutdown(s->s);
	backend__end(s->b);
	mcp__wait(s->s, -1);
	pthread_mutex_lock(&h->lock);
	while (s->users)
		pthread_cond_wait(&h->cond, &h->lock);
	pthread_mutex_unlock(&h->lock);
	mcp__free(s->s);
	backend__free(s->b);
	free(s);
}

/* A DELETEd session, ended on a thread of its own. */
struct end_job {
	struct http_server *h;
	struct session *s;
};

static void *end_thread(void *arg)
{
	struct end_job *j = arg;
	struct http_server *h = j->h;

	session_end(h, j->s);
	free(j);
	pthread_mutex_lock(&h->lock);
	h->ending--;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

/*
 * End @s for a DELETE: calls refused and, under --kill-on-disconnect, its
 * sandboxes killed here; the wait for its calls and its free on a thread
 * of their own, so that a call still running in a sandbox that lives on
 * does not hold the DELETE's answer (http__stop() waits for them).
 */
static void session_end_soon(struct http_server *h, struct session *s)
{
	struct end_job *j = malloc(sizeof(*j));
	pthread_attr_t attr;
	pthread_t th;
	int rc;

	mcp__shutdown(s->s);
	backend__end(s->b);
	if (j) {
		j->h = h;
		j->s = s;
		pthread_mutex_lock(&h->lock);
		h->ending++;
		pthread_mutex_unlock(&h->lock);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		rc = pthread_create(&th, &attr, end_thread, j);
		pthread_attr_destroy(&attr);
		if (!rc)
			return;
		pthread_mutex_lock(&h->lock);
		h->ending--;
		pthread_mutex_unlock(&h->lock);
		free(j);
	}
	session_end(h, s); /* no thread: here */
}

/* Take session @id out of the table (for its end); NULL if none. */
static struct session *session_unlink(struct http_server *h, const char *id)
{
	struct session **pp, *s = NULL;

	pthread_mutex_lock(&h->lock);
	for (pp = &h->sessions; *pp; pp = &(*pp)->next) {
		if (!id || !strcmp((*pp)->id, id)) {
			s = *pp;
			*pp = s->next;
			h->nsessions--;
			break;
		}
	}
	pthread_mutex_unlock(&h->lock);
	return s;
}

/*
 * Take the sessions unused for h->idle_s out of the table (under
 * h->lock), for session_end(): no request on them, no call running.
 */
static struct session *sessions_expired(struct http_server *h)
{
	struct session **pp = &h->sessions, *s, *gone = NULL;
	time_t now = now_s();

	while ((s = *pp)) {
		if (!s->users && now - s->used >= (time_t)h->idle_s &&
		    mcp__wait(s->s, 0)) {
			*pp = s->next;
			h->nsessions--;
			s->next = gone;
			gone = s;
		} else {
			pp = &s->next;
		}
	}
	return gone;
}

/* End the sessions of a sessions_expired() list (without h->lock). */
static void sessions_end(struct http_server *h, struct session *gone)
{
	struct session *s;

	while ((s = gone)) {
		gone = s->next;
		fprintf(stderr,
			"ember-mcp: session %.8s... unused for %u s: ended\n",
			s->id, h->idle_s);
		session_end(h, s);
	}
}

/*
 * The sweeper's thread, every idle_s / 4: expired sessions ended, and the
 * others' idle guest connections to sandboxes gone meanwhile closed.
 */
static void *sweeper(void *arg)
{
	struct http_server *h = arg;
	unsigned int every = h->idle_s / 4;
	struct session *gone;
	struct timespec until;

	if (every < 1)
		every = 1;
	if (every > SWEEP_MAX_S)
		every = SWEEP_MAX_S;
	pthread_mutex_lock(&h->lock);
	while (!h->stopping) {
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += every;
		while (!h->stopping &&
		       pthread_cond_timedwait(&h->cond, &h->lock, &until) !=
			       ETIMEDOUT)
			;
		if (h->stopping)
			break;
		gone = sessions_expired(h);
		/* Connections to sandboxes that ended elsewhere: closed. */
		for (struct session *s = h->sessions; s; s = s->next)
			backend__prune(s->b);
		pthread_mutex_unlock(&h->lock);
		sessions_end(h, gone);
		pthread_mutex_lock(&h->lock);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

/* --- answers ----------------------------------------------------------- */

static enum MHD_Result answer(struct MHD_Connection *con, unsigned int status,
			      const char *type, char *body, size_t len,
			      const char *sid)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, body,
					    body ? MHD_RESPMEM_MUST_FREE :
						   MHD_RESPMEM_PERSISTENT);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	if (type)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (sid)
		MHD_add_response_header(r, "Mcp-Session-Id", sid);
	if (status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Bearer");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW,
					"POST, DELETE");
	ret = MHD_queue_response(con, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* An HTTP error with a JSON-RPC error body, as the official SDK's. */
static enum MHD_Result fail(struct MHD_Connection *con, unsigned int status,
			    int code, const char *msg)
{
	json_t *e = jsonrpc__error(NULL, code, "%s", msg);
	size_t len = 0;
	char *body = e ? jsonrpc__dump(e, &len) : NULL;

	json_decref(e);
	return answer(con, status, body ? "application/json" : NULL, body, len,
		      NULL);
}

/* --- checks ------------------------------------------------------------ */

/* The token, compared in time that does not depend on where they differ. */
static bool token_ok(const char *hdr, const char *token)
{
	size_t tl = strlen(token), gl;
	unsigned char d;

	if (!hdr || strncasecmp(hdr, "Bearer ", 7))
		return false;
	hdr += 7;
	while (*hdr == ' ')
		hdr++;
	gl = strlen(hdr);
	d = gl != tl;
	for (size_t i = 0; i < tl; i++)
		d |= (unsigned char)(token[i] ^ (i < gl ? hdr[i] : 0));
	return d == 0;
}

/* An Origin on this host: http(s)://localhost, 127.x.x.x or [::1]. */
static bool origin_ok(const char *o)
{
	struct in_addr a;
	char host[256];
	const char *p, *end;
	size_t n;

	if (!o)
		return true;
	if (!strncmp(o, "http://", 7))
		p = o + 7;
	else if (!strncmp(o, "https://", 8))
		p = o + 8;
	else
		return false;
	if (*p == '[') {
		end = strchr(p, ']');
		if (!end)
			return false;
		end++;
	} else {
		end = p + strcspn(p, ":/");
	}
	n = (size_t)(end - p);
	if (n == 0 || n >= sizeof(host) || (*end && *end != ':' && *end != '/'))
		return false;
	memcpy(host, p, n);
	host[n] = '\0';
	if (!strcasecmp(host, "localhost") || !strcmp(host, "[::1]"))
		return true;
	return inet_pton(AF_INET, host, &a) == 1 &&
	       (ntohl(a.s_addr) >> 24) == 127;
}

/* --- POST ---------------------------------------------------------------- */

/* Feed @body to @s and answer with what comes back. */
static enum MHD_Result exchange(struct MHD_Connection *con, struct session *s,
				const char *body, size_t len, bool is_init)
{
	struct post_out *p = post_new();
	struct MHD_Response *r;
	enum MHD_Result ret;
	bool final = false;
	char *m;
	int rc;

	if (!p)
		return MHD_NO;
	rc = mcp__receive(s->s, body, len, &p->base);
	if (rc <= 0) {
		post_put(p);
		if (rc < 0)
			return fail(con, MHD_HTTP_INTERNAL_SERVER_ERROR,
				    JSONRPC_INTERNAL_ERROR, "out of memory");
		return answer(con, MHD_HTTP_ACCEPTED, NULL, NULL, 0, NULL);
	}
	m = post_first(p, &final);
	if (!m) {
		post_put(p);
		return fail(con, MHD_HTTP_INTERNAL_SERVER_ERROR,
			    JSONRPC_INTERNAL_ERROR, "no answer");
	}
	if (final) {
		post_put(p);
		return answer(con, MHD_HTTP_OK, "application/json", m,
			      strlen(m),
			      is_init && mcp__initialized(s->s) ? s->id : NULL);
	}
	/* The call asks the client something first: a stream. */
	pthread_mutex_lock(&p->lock);
	if (asprintf(&p->cur, "event: message\ndata: %s\n\n", m) < 0)
		p->cur = NULL;
	p->cur_len = p->cur ? strlen(p->cur) : 0;
	p->cur_off = 0;
	pthread_mutex_unlock(&p->lock);
	free(m);
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, sse_read,
					      p, sse_free);
	if (!r) {
		sse_free(p);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/event-stream");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	ret = MHD_queue_response(con, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result do_post(struct http_server *h,
			       struct MHD_Connection *con, struct req *rq)
{
	const char *sid = MHD_lookup_connection_value(con, MHD_HEADER_KIND,
						      "Mcp-Session-Id");
	const char *ver = MHD_lookup_connection_value(con, MHD_HEADER_KIND,
						      "MCP-Protocol-Version");
	struct jsonrpc_msg m;
	struct session *s;
	enum MHD_Result ret;
	json_t *reply;
	bool init;
	size_t len = 0;
	char *body;

	/* Authenticated and whole: its call may take long (see the top). */
	MHD_set_connection_option(con, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
	if (rq->too_big)
		return fail(con, MHD_HTTP_CONTENT_TOO_LARGE,
			    JSONRPC_INVALID_REQUEST, "message too large");
	if (jsonrpc__parse(rq->body ? rq->body : "", rq->len, &m, &reply)) {
		body = reply ? jsonrpc__dump(reply, &len) : NULL;
		json_decref(reply);
		return answer(con, MHD_HTTP_BAD_REQUEST,
			      body ? "application/json" : NULL, body, len,
			      NULL);
	}
	init = m.kind == JSONRPC_REQUEST && !strcmp(m.method, "initialize");
	jsonrpc__free(&m);
	if (ver && !mcp__version_ok(ver))
		return fail(con, MHD_HTTP_BAD_REQUEST, JSONRPC_INVALID_REQUEST,
			    "Bad Request: unsupported MCP-Protocol-Version");
	if (init && !sid) {
		pthread_mutex_lock(&h->lock);
		if (h->nsessions >= MAX_SESSIONS) {
			/* Full: the expired ones go first. */
			struct session *gone = sessions_expired(h);

			pthread_mutex_unlock(&h->lock);
			sessions_end(h, gone);
			pthread_mutex_lock(&h->lock);
		}
		s = h->nsessions < MAX_SESSIONS ? session_new(h) : NULL;
		if (s) {
			s->next = h->sessions;
			h->sessions = s;
			h->nsessions++;
		}
		pthread_mutex_unlock(&h->lock);
		if (!s)
			return fail(con, MHD_HTTP_SERVICE_UNAVAILABLE,
				    JSONRPC_INTERNAL_ERROR,
				    "too many sessions");
		ret = exchange(con, s, rq->body, rq->len, true);
		session_put(h, s);
		if (!mcp__initialized(s->s)) {
			s = session_unlink(h, s->id);
			if (s)
				session_end(h, s);
		}
		return ret;
	}
	if (!sid)
		return fail(con, MHD_HTTP_BAD_REQUEST, JSONRPC_INVALID_REQUEST,
			    "Bad Request: Mcp-Session-Id header is required");
	s = session_get(h, sid);
	if (!s)
		return fail(con, MHD_HTTP_NOT_FOUND, JSONRPC_INVALID_REQUEST,
			    "Session not found");
	ret = exchange(con, s, rq->body, rq->len, false);
	session_put(h, s);
	return ret;
}

/* --- the handler --------------------------------------------------------- */

static enum MHD_Result handle(void *cls, struct MHD_Connection *con,
			      const char *url, const char *method,
			      const char *version, const char *data,
			      size_t *data_len, void **con_cls)
{
	struct http_server *h = cls;
	struct req *rq = *con_cls;
	const char *sid;
	struct session *s;
	char *nb;

	(void)version;
	if (!rq) {
		/* Headers only: refuse early what needs no body. */
		if (strcmp(url, "/mcp"))
			return fail(con, MHD_HTTP_NOT_FOUND,
				    JSONRPC_INVALID_REQUEST, "Not found");
		if (!origin_ok(MHD_lookup_connection_value(con, MHD_HEADER_KIND,
							   "Origin")))
			return fail(con, MHD_HTTP_FORBIDDEN,
				    JSONRPC_INVALID_REQUEST,
				    "Forbidden: Origin not allowed");
		if (!token_ok(MHD_lookup_connection_value(con, MHD_HEADER_KIND,
							  "Authorization"),
			      h->token))
			return fail(con, MHD_HTTP_UNAUTHORIZED,
				    JSONRPC_INVALID_REQUEST,
				    "Unauthorized: a bearer token is required");
		if (!strcmp(method, "DELETE")) {
			sid = MHD_lookup_connection_value(con, MHD_HEADER_KIND,
							  "Mcp-Session-Id");
			if (!sid)
				return fail(con, MHD_HTTP_BAD_REQUEST,
					    JSONRPC_INVALID_REQUEST,
					    "Bad Request: Mcp-Session-Id "
					    "header is required");
			s = session_unlink(h, sid);
			if (!s)
				return fail(con, MHD_HTTP_NOT_FOUND,
					    JSONRPC_INVALID_REQUEST,
					    "Session not found");
			/* Its sandboxes' kills may take longer than IDLE_S. */
			MHD_set_connection_option(
				con, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
			session_end_soon(h, s);
			return answer(con, MHD_HTTP_OK, NULL, NULL, 0, NULL);
		}
		if (strcmp(method, "POST"))
			return fail(con, MHD_HTTP_METHOD_NOT_ALLOWED,
				    JSONRPC_INVALID_REQUEST,
				    "Method not allowed");
		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		*con_cls = rq;
		return MHD_YES;
	}
	if (*data_len) {
		if (!rq->too_big &&
		    rq->len + *data_len <= JSONRPC_MAX_MESSAGE) {
			nb = realloc(rq->body, rq->len + *data_len + 1);
			if (!nb)
				return MHD_NO;
			rq->body = nb;
			memcpy(rq->body + rq->len, data, *data_len);
			rq->len += *data_len;
			rq->body[rq->len] = '\0';
		} else {
			rq->too_big = true;
		}
		*data_len = 0;
		return MHD_YES;
	}
	return do_post(h, con, rq);
}

static void completed(void *cls, struct MHD_Connection *con, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct req *rq = *con_cls;

	(void)cls;
	/* Kept alive for another request: idle again (do_post()). */
	if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		MHD_set_connection_option(con, MHD_CONNECTION_OPTION_TIMEOUT,
					  (unsigned int)IDLE_S);
	if (rq) {
		free(rq->body);
		free(rq);
		*con_cls = NULL;
	}
}

/* --- the server ---------------------------------------------------------- */

int http__start(const struct server_config *cfg, const char *addr,
		unsigned int port, const char *token, unsigned int idle_s,
		struct http_server **out, char *err, size_t errlen)
{
	struct listener_opts lo = {
		.who = "ember-mcp",
		.addr = addr,
		.port = port,
		.handle = handle,
		.completed = completed,
		.idle_s = IDLE_S,
		.header_s = HEADER_S,
		.max_connections = MAX_CONNECTIONS,
		.per_client = PER_CLIENT,
	};
	struct http_server *h;
	int rc;

	h = calloc(1, sizeof(*h));
	if (!h) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	lo.cls = h;
	h->cfg = cfg;
	h->token = token;
	h->idle_s = idle_s ? idle_s : HTTP_SESSION_IDLE_S;
	pthread_mutex_init(&h->lock, NULL);
	clock__cond_init(&h->cond); /* sweeper() waits on it */
	rc = listener__start(&lo, &h->l, &h->port, err, errlen);
	if (rc)
		goto fail;
	if (pthread_create(&h->sweeper, NULL, sweeper, h)) {
		snprintf(err, errlen, "cannot start a thread");
		listener__stop(h->l);
		rc = -EADDRINUSE;
		goto fail;
	}
	*out = h;
	return 0;
fail:
	pthread_cond_destroy(&h->cond);
	pthread_mutex_destroy(&h->lock);
	free(h);
	return rc;
}

unsigned int http__port(const struct http_server *h)
{
	return h->port;
}

void http__stop(struct http_server *h)
{
	struct session *s;

	pthread_mutex_lock(&h->lock);
	h->stopping = true;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	pthread_join(h->sweeper, NULL);
	/*
	 * First the sandboxes (under --kill-on-disconnect): calls in them
	 * end, so connections do too.
	 */
	pthread_mutex_lock(&h->lock);
	for (s = h->sessions; s; s = s->next) {
		mcp__shutdown(s->s);
		backend__end(s->b);
	}
	pthread_mutex_unlock(&h->lock);
	listener__stop(h->l);
	while ((s = session_unlink(h, NULL)))
		session_end(h, s);
	pthread_mutex_lock(&h->lock);
	while (h->ending)
		pthread_cond_wait(&h->cond, &h->lock);
	pthread_mutex_unlock(&h->lock);
	pthread_cond_destroy(&h->cond);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
