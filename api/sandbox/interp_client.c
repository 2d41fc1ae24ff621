// SPDX-License-Identifier: Apache-2.0
/*
 * The host side of the code interpreter: see interp_client.h and
 * guest-init/INTERP.md.  JSON lines over the vsock Unix socket; the
 * CONNECT handshake is agent_client's.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../guest-init/protocol.h"
#include "agent_client.h"
#include "clock.h"
#include "interp_client.h"
#include "files.h"

/* How long past the guest's own timeout the host waits for the end. */
#define EXEC_GRACE_MS 30000
/* `ember-interp start`'s own limit, when the caller gives none. */
#define START_TIMEOUT_MS 300000
/* The first read's size; the buffer grows to INTERP_MAX_LINE. */
#define RX_START (64u << 10)

struct interp_client {
	int fd;
	char *rx; /* bytes read, not yet consumed */
	size_t rx_off, rx_len, rx_cap;
	bool broken; /* a failure mid-request: no further request */
};

int interp_client__connect(const char *uds, int timeout_ms,
			   struct interp_client **out, char *err, size_t errlen)
{
	struct agent_client *a;
	struct interp_client *c;
	json_t *req, *ans = NULL;
	int fd, rc;

	*out = NULL;
	a = agent_client__new();
	c = calloc(1, sizeof(*c));
	if (!a || !c) {
		agent_client__free(a);
		free(c);
		return sandbox__errf(err, errlen, -ENOMEM, "out of memory");
	}
	c->fd = -1;
	rc = agent_client__connect(a, uds, INTERP_PORT, timeout_ms);
	if (rc < 0) {
		sandbox__errf(err, errlen, rc, "%s", agent_client__error(a));
		goto fail;
	}
	fd = agent_client__detach_fd(a);
	if (fd < 0) {
		rc = sandbox__errf(err, errlen, fd, "%s",
				   agent_client__error(a));
		goto fail;
	}
	c->fd = fd;
	req = json_pack("{s:s}", "op", "ping");
	if (!req) {
		rc = sandbox__errf(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	rc = interp_client__request(c, req, timeout_ms, &ans, err, errlen);
	json_decref(req);
	json_decref(ans);
	if (rc < 0)
		goto fail;
	agent_client__free(a);
	*out = c;
	return 0;
fail:
	agent_client__free(a);
	interp_client__free(c);
	return rc;
}

int interp_client__attach_fd(int fd, struct interp_client **out)
{
	struct interp_client *c = calloc(1, sizeof(*c));
	int fl = fcntl(fd, F_GETFL);

	*out = NULL;
	if (!c || fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		free(c);
		close(fd);
		return -ENOMEM;
	}
	c->fd = fd;
	*out = c;
	return 0;
}

void interp_client__free(struct interp_client *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	free(c->rx);
	free(c);
}

/* Send @obj as one line, within @deadline (absolute ms; 0: none). */
static int send_json(struct interp_client *c, const json_t *obj,
		     int64_t deadline, char *err, size_t errlen)
{
	char *s = json_dumps(obj, JSON_COMPACT | JSON_ENSURE_ASCII), *line;
	size_t len;
	int rc;

	if (!s)
		return sandbox__errf(err, errlen, -ENOMEM, "out of memory");
	len = strlen(s);
	line = realloc(s, len + 1);
	if (!line) {
		free(s);
		return sandbox__errf(err, errlen, -ENOMEM, "out of memory");
	}
	line[len++] = '\n'; /* no NUL needed: @len bytes are sent */
	rc = clock__send_all(c->fd, line, len, deadline);
	free(line);
	if (rc == -ETIMEDOUT)
		return sandbox__errf(err, errlen, rc,
				     "the interpreter took no request");
	if (rc < 0)
		return sandbox__errf(err, errlen, rc,
				     "the interpreter went away");
	return 0;
}

/*
 * Read the next line, without its '\n', NUL-terminated, into *@line
 * (valid until the next read) and its length into *@len (a NUL inside
 * it is the guest's), within @deadline (absolute ms; 0: none).
 */
static int read_line(struct interp_client *c, char **line, size_t *len,
		     int64_t deadline, char *err, size_t errlen)
{
	for (;;) {
		char *nl = c->rx_len ?
				   memchr(c->rx + c->rx_off, '\n', c->rx_len) :
				   NULL;
		ssize_t r;
		int rc;

		if (nl) {
			*nl = '\0';
			*line = c->rx + c->rx_off;
			*len = (size_t)(nl - *line);
			c->rx_len -= (size_t)(nl + 1 - *line);
			c->rx_off = c->rx_len ? (size_t)(nl + 1 - c->rx) : 0;
			return 0;
		}
		if (c->rx_len >= INTERP_MAX_LINE)
			return sandbox__errf(
				err, errlen, -EPROTO,
				"the interpreter sent a line over %u bytes",
				INTERP_MAX_LINE);
		/* Room at the end: move the partial line down, or grow. */
		if (c->rx_off) {
			memmove(c->rx, c->rx + c->rx_off, c->rx_len);
			c->rx_off = 0;
		}
		if (c->rx_len + 1 >= c->rx_cap) {
			size_t cap = c->rx_cap ? c->rx_cap * 2 : RX_START;
			char *p;

			if (cap > INTERP_MAX_LINE + 1)
				cap = INTERP_MAX_LINE + 1;
			p = realloc(c->rx, cap);
			if (!p)
				return sandbox__errf(err, errlen, -ENOMEM,
						     "out of memory");
			c->rx = p;
			c->rx_cap = cap;
		}
		r = recv(c->fd, c->rx + c->rx_len, c->rx_cap - 1 - c->rx_len,
			 0);
		if (r > 0) {
			c->rx_len += (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN) {
			rc = clock__wait_fd(c->fd, POLLIN, deadline);
			if (rc == -ETIMEDOUT)
				return sandbox__errf(
					err, errlen, rc,
					"the interpreter did not answer "
					"in time");
			if (rc < 0)
				return sandbox__errf(err, errlen, rc,
						     "poll: %s", strerror(-rc));
			continue;
		}
		return sandbox__errf(err, errlen, -ECONNRESET,
				     "the interpreter closed the connection");
	}
}

/* Read one line as a JSON object with a string "type": *@obj, new. */
static int read_obj(struct interp_client *c, json_t **obj, const char **type,
		    int64_t deadline, char *err, size_t errlen)
{
	json_error_t je;
	char *line = NULL;
	size_t len = 0;
	json_t *o, *t;
	int rc;

	rc = read_line(c, &line, &len, deadline, err, errlen);
	if (rc < 0)
		return rc;
	/*
	 * The whole line: a raw NUL in it is an error, not its end; an
	 * escaped one (\u0000: the code printed a NUL) is text.
	 */
	o = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
	if (!o)
		return sandbox__errf(err, errlen, -EPROTO,
				     "the interpreter sent bad JSON: %s",
				     je.text);
	t = json_object_get(o, "type");
	if (!json_is_object(o) || !json_is_string(t)) {
		json_decref(o);
		return sandbox__errf(
			err, errlen, -EPROTO,
			"the interpreter sent a line without a type");
	}
	*obj = o;
	*type = json_string_value(t);
	return 0;
}

/* @o's member @key is absent, or of @want's JSON type. */
static bool opt_is(const json_t *o, const char *key, json_type want)
{
	const json_t *v = json_object_get(o, key);

	return !v || json_typeof(v) == want ||
	       (want == JSON_TRUE && json_is_boolean(v));
}

static bool has_string(const json_t *o, const char *key)
{
	return json_is_string(json_object_get(o, key));
}

/* A `failure` answer: -EREMOTEIO with its message, cleaned for one line. */
static int failure(const json_t *o, char *err, size_t errlen)
{
	const char *m = json_string_value(json_object_get(o, "message"));
	char buf[400];
	size_t i;

	snprintf(buf, sizeof(buf), "%s", m ? m : "(no message)");
	for (i = 0; buf[i]; i++)
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			buf[i] = ' ';
	return sandbox__errf(err, errlen, -EREMOTEIO, "interpreter: %s", buf);
}

const struct interp_member interp__result_members[] = {
	{ "text", JSON_STRING },     { "html", JSON_STRING },
	{ "markdown", JSON_STRING }, { "svg", JSON_STRING },
	{ "png", JSON_STRING },	     { "jpeg", JSON_STRING },
	{ "pdf", JSON_STRING },	     { "latex", JSON_STRING },
	{ "json", INTERP_ANY_TYPE }, { "javascript", JSON_STRING },
	{ "data", JSON_OBJECT },     { "chart", JSON_OBJECT },
	{ "extra", JSON_OBJECT },    { NULL, 0 },
};

/* A result event's members are of their types (absent ones too). */
static bool result_ok(const json_t *ev)
{
	const struct interp_member *m;

	if (!opt_is(ev, "is_main_result", JSON_TRUE))
		return false;
	for (m = interp__result_members; m->name; m++)
		if (m->type != INTERP_ANY_TYPE &&
		    !opt_is(ev, m->name, (json_type)m->type))
			return false;
	return true;
}

/* An execute's event is well formed (INTERP.md, the event stream). */
static bool event_ok(const json_t *ev, const char *type)
{
	const json_t *n;

	if (!strcmp(type, "stdout") || !strcmp(type, "stderr"))
		return has_string(ev, "text");
	if (!strcmp(type, "result"))
		return result_ok(ev);
	if (!strcmp(type, "error"))
		return has_string(ev, "name") && has_string(ev, "value") &&
		       has_string(ev, "traceback");
	if (!strcmp(type, "number_of_executions")) {
		n = json_object_get(ev, "execution_count");
		return json_is_integer(n) && json_integer_value(n) >= 0;
	}
	return !strcmp(type, "end_of_execution");
}

static int execute_req(const struct interp_exec_req *r, json_t **out, char *err,
		       size_t errlen)
{
	json_t *req, *env = NULL;
	const char *lang = r->language ? r->language : "python";
	size_t i;

	if (!r->code || (strcmp(lang, "python") && strcmp(lang, "javascript")))
		return sandbox__errf(err, errlen, -EINVAL,
				     "language must be python or javascript");
	req = json_pack("{s:s, s:s, s:s, s:I}", "op", "execute", "code",
			r->code, "language", lang, "timeout_ms",
			(json_int_t)r->timeout_ms);
	if (!req)
		return sandbox__errf(err, errlen, -EINVAL, "code is not UTF-8");
	if (r->context &&
	    json_object_set_new(req, "context", json_string(r->context)))
		goto bad;
	if (r->user && json_object_set_new(req, "user", json_string(r->user)))
		goto bad;
	if (r->env) {
		env = json_object();
		if (!env || json_object_set_new(req, "env", env))
			goto bad;
		for (i = 0; r->env[i]; i++) {
			const char *eq = strchr(r->env[i], '=');
			char name[256];

			if (!eq || eq == r->env[i] ||
			    (size_t)(eq - r->env[i]) >= sizeof(name))
				goto bad;
			memcpy(name, r->env[i], (size_t)(eq - r->env[i]));
			name[eq - r->env[i]] = '\0';
			if (json_object_set_new(env, name, json_string(eq + 1)))
				goto bad;
		}
	}
	*out = req;
	return 0;
bad:
	json_decref(req);
	return sandbox__errf(err, errlen, -EINVAL,
			     "bad context or environment (NAME=value, UTF-8)");
}

int interp_client__execute(struct interp_client *c,
			   const struct interp_exec_req *req,
			   interp_event_fn fn, void *arg, char *err,
			   size_t errlen)
{
	int64_t deadline = 0;
	json_t *r = NULL;
	int rc;

	if (c->broken)
		return sandbox__errf(err, errlen, -ECONNRESET,
				     "the connection failed earlier");
	rc = execute_req(req, &r, err, errlen);
	if (rc < 0)
		return rc;
	if (req->timeout_ms)
		deadline = clock__mono_ms() + req->timeout_ms + EXEC_GRACE_MS;
	rc = send_json(c, r, deadline, err, errlen);
	json_decref(r);
	while (rc == 0) {
		const char *type;
		json_t *ev;
		bool end;

		rc = read_obj(c, &ev, &type, deadline, err, errlen);
		if (rc < 0)
			break;
		if (!strcmp(type, "failure")) {
			rc = failure(ev, err, errlen);
			json_decref(ev);
			return rc; /* the connection stays usable */
		}
		if (!event_ok(ev, type)) {
			rc = sandbox__errf(
				err, errlen, -EPROTO,
				"the interpreter sent a bad \"%.40s\" event",
				type);
			json_decref(ev);
			break;
		}
		end = !strcmp(type, "end_of_execution");
		rc = fn ? fn(arg, ev) : 0;
		json_decref(ev);
		if (rc == -EMSGSIZE)
			sandbox__errf(
				err, errlen, rc,
				"the interpreter sent more results than a call "
				"may have (%u, %u MiB)",
				INTERP_MAX_RESULTS,
				INTERP_MAX_RESULT_BYTES >> 20);
		else if (rc < 0)
			sandbox__errf(err, errlen, rc, "%s", strerror(-rc));
		if (rc == 0 && end)
			return 0;
	}
	/* Mid-stream: closing the connection interrupts the call. */
	c->broken = true;
	shutdown(c->fd, SHUT_RDWR);
	return rc;
}

/* The answer type each op expects, and its check. */
static bool answer_ok(const char *op, const char *type, const json_t *a)
{
	const json_t *list, *v;
	size_t i;

	if (!strcmp(op, "ping"))
		return !strcmp(type, "pong");
	if (!strcmp(op, "create_context")) {
		v = json_object_get(a, "context");
		return !strcmp(type, "context") && json_is_object(v) &&
		       has_string(v, "id") && has_string(v, "language") &&
		       has_string(v, "cwd");
	}
	if (!strcmp(op, "list_contexts")) {
		list = json_object_get(a, "contexts");
		if (strcmp(type, "contexts") || !json_is_array(list))
			return false;
		json_array_foreach(list, i, v)
		{
			if (!json_is_object(v) || !has_string(v, "id") ||
			    !has_string(v, "language") || !has_string(v, "cwd"))
				return false;
		}
		return true;
	}
	return !strcmp(type, "ok");
}

int interp_client__request(struct interp_client *c, json_t *req, int timeout_ms,
			   json_t **answer, char *err, size_t errlen)
{
	const char *op = json_string_value(json_object_get(req, "op"));
	int64_t deadline;
	const char *type;
	json_t *a;
	int rc;

	*answer = NULL;
	if (!op || !strcmp(op, "execute") || timeout_ms <= 0)
		return sandbox__errf(err, errlen, -EINVAL, "bad request");
	if (c->broken)
		return sandbox__errf(err, errlen, -ECONNRESET,
				     "the connection failed earlier");
	deadline = clock__mono_ms() + timeout_ms;
	rc = send_json(c, req, deadline, err, errlen);
	if (rc == 0)
		rc = read_obj(c, &a, &type, deadline, err, errlen);
	if (rc < 0) {
		c->broken = true;
		return rc;
	}
	if (!strcmp(type, "failure")) {
		rc = failure(a, err, errlen);
		json_decref(a);
		return rc;
	}
	if (!answer_ok(op, type, a)) {
		json_decref(a);
		c->broken = true;
		return sandbox__errf(err, errlen, -EPROTO,
				     "the interpreter answered %s badly", op);
	}
	*answer = a;
	return 0;
}

/* Run `ember-interp start` through the guest agent. */
static int start_interp(const char *uds, int timeout_ms, char *err,
			size_t errlen)
{
	static const char *const argv[] = { "ember-interp", "start", NULL };
	struct agent_exec_result res = { 0 };
	struct agent_exec_req req = {
		.argv = argv,
		.user = "root", /* /run is root's (INTERP.md) */
		.timeout_ms = (uint32_t)timeout_ms,
		.stdin_fd = -1,
		.sig_fd = -1,
	};
	struct agent_client *a = agent_client__new();
	char msg[300] = "";
	ssize_t n;
	int fd, rc;

	if (!a)
		return sandbox__errf(err, errlen, -ENOMEM, "out of memory");
	fd = memfd_create("ember-interp-start", MFD_CLOEXEC);
	if (fd < 0) {
		rc = sandbox__errf(err, errlen, -errno, "memfd_create: %s",
				   strerror(errno));
		goto out;
	}
	req.stdout_fd = req.stderr_fd = fd;
	rc = agent_client__connect(a, uds, EMBER_AGENT_PORT, timeout_ms);
	if (rc == 0)
		rc = agent_client__exec(a, &req, &res);
	if (rc == -EREMOTEIO && agent_client__guest_errno(a) == ENOENT) {
		rc = sandbox__errf(
			err, errlen, -ENOEXEC,
			"this sandbox has no code interpreter (its rootfs "
			"lacks ember-interp)");
		goto out;
	}
	if (rc < 0) {
		sandbox__errf(err, errlen, rc, "starting the interpreter: %s",
			      agent_client__error(a));
		goto out;
	}
	if (res.kind != EMBER_AGENT_EXITED || res.code != 0) {
		n = pread(fd, msg, sizeof(msg) - 1, 0);
		msg[n > 0 ? n : 0] = '\0';
		for (char *p = msg; *p; p++)
			if ((unsigned char)*p < 0x20)
				*p = ' ';
		rc = sandbox__errf(err, errlen, -EIO,
				   "ember-interp start failed (%s %d): %s",
				   res.kind == EMBER_AGENT_EXITED ? "exit" :
								    "signal",
				   res.code, msg);
	}
out:
	if (fd >= 0)
		close(fd);
	agent_client__free(a);
	return rc;
}

int interp_client__ensure(const char *uds, int timeout_ms,
			  struct interp_client **out, char *err, size_t errlen)
{
	int rc = interp_client__connect(uds, timeout_ms, out, err, errlen);

	if (rc != -ECONNRESET)
		return rc;
	rc = start_interp(uds, timeout_ms > 0 ? timeout_ms : START_TIMEOUT_MS,
			  err, errlen);
	if (rc < 0)
		return rc;
	return interp_client__connect(uds, timeout_ms, out, err, errlen);
}

json_t *interp__execution_new(void)
{
	return json_pack("{s:s, s:s, s:[], s:n, s:i}", "stdout", "", "stderr",
			 "", "results", "error", "execution_count", 0);
}

/*
 * Append string @text to the string member @key of @x, keeping
 * INTERP_MAX_LOG bytes: by length, a NUL the code printed is text too.
 */
static int append_log(json_t *x, const char *key, const json_t *text)
{
	const json_t *prev = json_object_get(x, key);
	const char *old = json_string_value(prev),
		   *add = json_string_value(text);
	size_t ol = json_string_length(prev), al = json_string_length(text);
	char *s;
	int rc;

	if (ol >= INTERP_MAX_LOG || !al)
		return 0;
	if (al > INTERP_MAX_LOG - ol) {
		al = INTERP_MAX_LOG - ol;
		/* Never cut inside a UTF-8 sequence. */
		while (al && ((unsigned char)add[al] & 0xc0) == 0x80)
			al--;
	}
	s = malloc(ol + al + 1);
	if (!s)
		return -ENOMEM;
	memcpy(s, old ? old : "", ol);
	memcpy(s + ol, add, al);
	s[ol + al] = '\0';
	rc = json_object_set_new(x, key, json_stringn(s, ol + al)) ? -ENOMEM :
								     0;
	free(s);
	return rc;
}

/*
 * Bytes of the members of result @r: a string's length, the compact JSON
 * size of anything else.
 */
static size_t result_bytes(const json_t *r)
{
	const struct interp_member *m;
	const json_t *v;
	size_t n = 0;

	for (m = interp__result_members; m->name; m++) {
		v = json_object_get(r, m->name);
		if (json_is_string(v))
			n += json_string_length(v);
		else if (v)
			n += json_dumpb(v, NULL, 0,
					JSON_COMPACT | JSON_ENCODE_ANY);
	}
	return n;
}

/*
 * A new result object: is_main_result and every member of event @ev that
 * interp__result_members names, of its type (a null json left out).
 * NULL: -ENOMEM.
 */
static json_t *result_new(const json_t *ev)
{
	const struct interp_member *m;
	json_t *r, *v;

	r = json_pack("{s:b}", "is_main_result",
		      json_is_true(json_object_get(ev, "is_main_result")));
	if (!r)
		return NULL;
	for (m = interp__result_members; m->name; m++) {
		v = json_object_get(ev, m->name);
		if (!v || json_is_null(v) ||
		    (m->type != INTERP_ANY_TYPE &&
		     json_typeof(v) != (json_type)m->type))
			continue;
		if (json_object_set(r, m->name, v)) {
			json_decref(r);
			return NULL;
		}
	}
	return r;
}

/* Append result event @ev to @g's results, within the limits. */
static int gather_result(struct interp_gather *g, const json_t *ev)
{
	json_t *results = json_object_get(g->execution, "results"), *r;
	size_t bytes;

	if (json_array_size(results) >= INTERP_MAX_RESULTS)
		return -EMSGSIZE;
	r = result_new(ev);
	if (!r)
		return -ENOMEM;
	bytes = result_bytes(r);
	if (bytes > INTERP_MAX_RESULT_BYTES - g->result_bytes) {
		json_decref(r);
		return -EMSGSIZE;
	}
	if (json_array_append_new(results, r))
		return -ENOMEM;
	g->result_bytes += bytes;
	return 0;
}

int interp__gather(struct interp_gather *g, const json_t *ev)
{
	const char *type = json_string_value(json_object_get(ev, "type"));
	json_t *x = g->execution, *r, *v;

	if (!type)
		return 0;
	if (!strcmp(type, "stdout") || !strcmp(type, "stderr"))
		return append_log(x, type, json_object_get(ev, "text"));
	if (!strcmp(type, "result"))
		return gather_result(g, ev);
	if (!strcmp(type, "error")) {
		r = json_pack("{s:O, s:O, s:O}", "name",
			      json_object_get(ev, "name"), "value",
			      json_object_get(ev, "value"), "traceback",
			      json_object_get(ev, "traceback"));
		if (!r)
			return 0; /* not an error event's members */
		return json_object_set_new(x, "error", r) ? -ENOMEM : 0;
	}
	if (!strcmp(type, "number_of_executions")) {
		v = json_object_get(ev, "execution_count");
		if (json_is_integer(v))
			return json_object_set(x, "execution_count", v) ?
				       -ENOMEM :
				       0;
	}
	return 0;
}
