// SPDX-License-Identifier: Apache-2.0
/*
 * A connection to a sandbox's code interpreter (interp_conn.h), over the
 * agent's vsock port: pinged before use, and the interpreter started when
 * nothing answers.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../sandbox/agent_client.h"
#include "../sandbox/interp_client.h"
#include "e2b.h"
#include "interp_conn.h"
#include "interp_text.h"

/* Starting an interpreter that is not warm: ~2 min in a fresh PVM guest. */
#define START_MS   300000
#define CONNECT_MS 10000 /* the vsock handshake with a running one */

int interp_conn__ask(struct interp_client *c, json_t *req, int timeout_ms,
		     json_t **ans, char *err, size_t errlen)
{
	int rc;

	*ans = NULL;
	if (!req) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = interp_client__request(c, req, timeout_ms, ans, err, errlen);
	json_decref(req);
	return rc;
}

/*
 * Connect to @uds's interpreter port and ping it: *@out, and *@watch (when
 * not NULL) a duplicate of the socket.  -ECONNRESET when nothing listens
 * or answers; other negative errnos; @err.
 */
static int connect_ping(const char *uds, struct interp_client **out, int *watch,
			char *err, size_t errlen)
{
	struct agent_client *a = agent_client__new();
	json_t *ans = NULL;
	int fd = -1, rc;

	*out = NULL;
	if (!a) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = agent_client__connect(a, uds, INTERP_PORT, CONNECT_MS);
	if (rc == 0) {
		fd = agent_client__detach_fd(a);
		if (fd < 0)
			rc = fd;
	}
	if (rc < 0)
		snprintf(err, errlen, "%s", agent_client__error(a));
	agent_client__free(a);
	if (rc < 0)
		return rc;
	if (watch) {
		*watch = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		if (*watch < 0) {
			rc = -errno;
			close(fd);
			snprintf(err, errlen, "dup: %s", strerror(-rc));
			return rc;
		}
	}
	rc = interp_client__attach_fd(fd, out);
	if (rc == 0)
		/*
		 * A listener whose server died (its children may hold the
		 * socket) takes the connection and closes it: ping first.
		 */
		rc = interp_conn__ask(*out, json_pack("{s:s}", "op", "ping"),
				      CONNECT_MS, &ans, err, errlen);
	else
		snprintf(err, errlen, "out of memory");
	json_decref(ans);
	if (rc < 0) {
		interp_client__free(*out);
		*out = NULL;
		if (watch) {
			close(*watch);
			*watch = -1;
		}
	}
	return rc;
}

int interp_conn__open(const struct e2b_guest *g, struct interp_client **out,
		      int *watch, struct e2b_resp *resp)
{
	struct interp_client *started = NULL;
	char err[512] = "";
	int rc;

	rc = connect_ping(g->info.uds, out, watch, err, sizeof(err));
	if (rc == -ECONNRESET) {
		/* Start it (or wait for it to be ready), then again. */
		rc = interp_client__ensure(g->info.uds, START_MS, &started, err,
					   sizeof(err));
		interp_client__free(started);
		if (rc == 0)
			rc = connect_ping(g->info.uds, out, watch, err,
					  sizeof(err));
	}
	if (rc == -ENOMEM) {
		interp_text__reply(resp, 500, "out of memory");
	} else if (rc == -ENOEXEC) {
		interp_text__reply(resp, 502,
				   "sandbox %s has no code interpreter: %s",
				   g->info.id, err);
	} else if (rc < 0) {
		interp_text__reply(
			resp, 502,
			"the code interpreter of sandbox %s cannot be "
			"reached: %s",
			g->info.id, err);
	}
	return rc;
}

int interp_conn__has_context(struct interp_client *c, const char *id, char *err,
			     size_t errlen)
{
	json_t *ans, *ctx;
	size_t i;
	int rc, found = 0;

	rc = interp_conn__ask(c, json_pack("{s:s}", "op", "list_contexts"),
			      INTERP_LIST_MS, &ans, err, errlen);
	if (rc < 0)
		return rc;
	json_array_foreach(json_object_get(ans, "contexts"), i, ctx)
	{
		const char *cid = json_string_value(json_object_get(ctx, "id"));

		if (cid && !strcmp(cid, id))
			found = 1;
	}
	json_decref(ans);
	return found;
}

int interp_conn__failed(struct e2b_resp *resp, int rc, const char *err)
{
	if (rc == -ENOMEM)
		return interp_text__reply(resp, 500, "out of memory");
	if (rc == -EREMOTEIO)
		return interp_text__reply(resp, 500, "%s", err);
	return interp_text__reply(resp, 502, "the code interpreter: %s", err);
}
