// SPDX-License-Identifier: Apache-2.0
/* The control socket (see server.h). */
#include "server.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include <microhttpd.h>

#include "../../vmm/event.h"
#include "../../vmm/log.h"
#include "routes.h"

/* After MHD sat at its connection limit, run it again this soon. */
#define API_SERVER_FULL_RETRY_MS 50

struct api_server {
	struct event_loop *el;
	struct control *c;
	struct MHD_Daemon *d;
	int mhd_fd; /* MHD's epoll fd, watched by the event loop */
	int timer_fd; /* MHD's timeouts */
	bool was_full;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

/* One request's body as it arrives. */
struct api_req {
	char *body;
	size_t len;
	bool too_big;
};

static void api__log(void *cls, const char *fmt, va_list ap)
{
	char line[256];

	(void)cls;
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	log_debug("api: %s", line);
}

static enum MHD_Result api__reply(struct MHD_Connection *conn,
				  const struct routes_reply *r)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(r->body ? strlen(r->body) : 0,
					       r->body ? r->body : (void *)"",
					       MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	if (r->body)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
					"application/json");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_SERVER, "ember");
	ret = MHD_queue_response(conn, (unsigned int)r->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result api__fault(struct MHD_Connection *conn, const char *msg)
{
	struct routes_reply r;
	enum MHD_Result ret;

	routes__fault(&r, 400, msg);
	ret = api__reply(conn, &r);
	free(r.body);
	return ret;
}

static enum MHD_Result api__handler(void *cls, struct MHD_Connection *conn,
				    const char *url, const char *method,
				    const char *version, const char *upload,
				    size_t *upload_size, void **con_cls)
{
	struct api_server *s = cls;
	struct api_req *q = *con_cls;
	struct routes_reply r;
	enum MHD_Result ret;

	(void)version;
	if (!q) {
		/* Headers in: refuse a body too big before reading it. */
		const char *cl = MHD_lookup_connection_value(
			conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		unsigned long long n = cl ? strtoull(cl, NULL, 10) : 0;

		q = calloc(1, sizeof(*q));
		if (!q)
			return MHD_NO;
		*con_cls = q;
		if (n > ROUTES_MAX_BODY) {
			char msg[128];

			snprintf(
				msg, sizeof(msg),
				"Request payload with size %llu is larger than "
				"the limit of %d allowed by server.",
				n, ROUTES_MAX_BODY);
			q->too_big = true;
			return api__fault(conn, msg);
		}
		return MHD_YES;
	}
	if (*upload_size) {
		/* A body in pieces; past the limit it is counted, not kept. */
		if (!q->too_big && q->len + *upload_size <= ROUTES_MAX_BODY) {
			char *b = realloc(q->body, q->len + *upload_size);

			if (!b)
				return MHD_NO;
			memcpy(b + q->len, upload, *upload_size);
			q->body = b;
			q->len += *upload_size;
		} else {
			q->too_big = true;
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (q->too_big)
		return api__fault(conn, "Request payload is larger than the "
					"limit of 51200 allowed by server.");
	routes__handle(s->c, method, url, q->body, q->len, &r);
	ret = api__reply(conn, &r);
	free(r.body);
	return ret;
}

static void api__completed(void *cls, struct MHD_Connection *conn,
			   void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct api_req *q = *con_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (q) {
		free(q->body);
		free(q);
		*con_cls = NULL;
	}
}

/* Let MHD work, then arm the timer for what it waits on next. */
static void api__run(struct api_server *s)
{
	struct itimerspec t = { 0 };
	const union MHD_DaemonInfo *info;
	MHD_UNSIGNED_LONG_LONG ms = 0;
	unsigned int n = 0;

	MHD_run(s->d);
	info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
	if (info)
		n = info->num_connections;
	/*
	 * At its connection limit MHD stops watching the listening socket
	 * and takes it back only in a later MHD_run(): run it again soon
	 * while (and just after) it is full, or a waiting client waits for
	 * ever.
	 */
	if (n >= API_SERVER_MAX_CLIENTS || s->was_full)
		ms = API_SERVER_FULL_RETRY_MS;
	else if (MHD_get_timeout(s->d, &ms) != MHD_YES)
		ms = 0; /* nothing to time: no wake-ups while idle */
	else if (ms == 0)
		ms = 1; /* buffered input: run again at once */
	s->was_full = n >= API_SERVER_MAX_CLIENTS;
	t.it_value.tv_sec = (time_t)(ms / 1000);
	t.it_value.tv_nsec = (long)(ms % 1000) * 1000000L;
	timerfd_settime(s->timer_fd, 0, &t, NULL);
}

/* A client is ready, or the timer fired (its count read). */
static void api__on_mhd(void *opaque, int fd)
{
	(void)fd;
	api__run(opaque);
}

/* Bind and listen on @path; a stale socket nobody listens on goes first. */
static int api__listen(const char *path, struct control_err *e)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, probe;

	if (!*path || strlen(path) >= sizeof(a.sun_path)) {
		snprintf(e->msg, sizeof(e->msg),
			 "--api-sock %s: 1 to %zu bytes", path,
			 sizeof(a.sun_path) - 1);
		return -EINVAL;
	}
	memcpy(a.sun_path, path, strlen(path) + 1);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(e->msg, sizeof(e->msg),
				 "--api-sock %s: exists and is not a socket",
				 path);
			return -EEXIST;
		}
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe >= 0 &&
		    connect(probe, (struct sockaddr *)&a, sizeof(a)) == 0) {
			close(probe);
			snprintf(e->msg, sizeof(e->msg),
				 "--api-sock %s: in use by another process",
				 path);
			return -EADDRINUSE;
		}
		if (probe >= 0)
			close(probe);
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(fd, 128) < 0) {
		int ret = -errno;

		snprintf(e->msg, sizeof(e->msg), "--api-sock %s: %s", path,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return ret;
	}
	return fd;
}

struct api_server *api_server__start(struct event_loop *el, struct control *c,
				     const char *path, struct control_err *e)
{
	const union MHD_DaemonInfo *info;
	struct api_server *s = calloc(1, sizeof(*s));
	int fd;

	if (!s) {
		snprintf(e->msg, sizeof(e->msg), "api: out of memory");
		return NULL;
	}
	s->el = el;
	s->c = c;
	s->mhd_fd = s->timer_fd = -1;
	fd = api__listen(path, e);
	if (fd < 0) {
		free(s);
		return NULL;
	}
	memcpy(s->path, path, strlen(path) + 1);
	s->d = MHD_start_daemon(
		MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, NULL, NULL, api__handler,
		s, MHD_OPTION_EXTERNAL_LOGGER, api__log, s,
		MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
		MHD_OPTION_CONNECTION_LIMIT,
		(unsigned int)API_SERVER_MAX_CLIENTS,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)API_SERVER_IDLE_S,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT,
		(size_t)API_SERVER_CONN_MEMORY, MHD_OPTION_NOTIFY_COMPLETED,
		api__completed, s, MHD_OPTION_SIGPIPE_HANDLED_BY_APP, (int)1,
		MHD_OPTION_END);
	if (!s->d) {
		/* MHD may or may not have closed @fd: shut it either way. */
		shutdown(fd, SHUT_RDWR);
		unlink(path);
		snprintf(e->msg, sizeof(e->msg),
			 "--api-sock %s: cannot start the HTTP server", path);
		free(s);
		return NULL;
	}
	info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_EPOLL_FD);
	s->mhd_fd = info ? info->epoll_fd : -1;
	s->timer_fd =
		timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (s->mhd_fd < 0 || s->timer_fd < 0 ||
	    event__add(el, s->mhd_fd, api__on_mhd, s) ||
	    event__add_counter(el, s->timer_fd, api__on_mhd, s)) {
		snprintf(e->msg, sizeof(e->msg),
			 "--api-sock %s: event loop: %s", path,
			 strerror(errno));
		api_server__stop(s);
		return NULL;
	}
	log_info("api: serving %s", path);
	return s;
}

static void api__stop_on_loop(void *arg)
{
	struct api_server *s = arg;

	if (s->mhd_fd >= 0)
		event__del(s->el, s->mhd_fd);
	if (s->timer_fd >= 0)
		event__del(s->el, s->timer_fd);
	MHD_stop_daemon(s->d); /* closes the listening socket too */
}

void api_server__stop(struct api_server *s)
{
	if (!s)
		return;
	event__call(s->el, api__stop_on_loop, s);
	if (s->timer_fd >= 0)
		close(s->timer_fd);
	unlink(s->path);
	free(s);
}
