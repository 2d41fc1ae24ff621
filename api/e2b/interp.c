// SPDX-License-Identifier: Apache-2.0
/*
 * E2B's code interpreter on port 49999 (e2b.h), served by ember's own
 * interpreter (guest-init/INTERP.md, interp_client.h).  What the SDK
 * (@e2b/code-interpreter) sends and reads is modelled on E2B's server,
 * e2b-dev/code-interpreter template/server/main.py:
 *
 *   POST /execute {"code", "context_id"?, "language"?, "env_vars"?}
 *	200, newline-delimited JSON lines (stdout, stderr, result, error,
 *	number_of_executions, end_of_execution last; keepalive lines while
 *	nothing else comes), streamed by a thread of the execute's own;
 *   POST /contexts {"language"?, "cwd"?}     200 {"id","language","cwd"}
 *   GET /contexts                            200 [{"id","language","cwd"}]
 *   POST /contexts/{id}/restart              200 null
 *   DELETE /contexts/{id}                    200 null
 *
 * Errors are plain text as E2B's server answers them: 400 for a bad
 * request, 404 for an unknown context (the SDK's NotFoundError, which
 * shows the text), 502 when the sandbox's interpreter cannot be reached
 * (the SDK's TimeoutError, which shows the text too), 500 when it
 * refuses (400 for a context's cwd that is not a directory).  E2B's
 * kernels beyond Python and JavaScript (r, java, bash, typescript) are a
 * 400 that says ember lacks them.
 *
 * Each request opens its own connection to the guest's interpreter (and
 * starts the interpreter when none answers: interp_conn.c).  /execute is
 * interp_exec.c's; the requests' pieces and plain-text answers are
 * interp_text.c's.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../sandbox/interp_client.h"
#include "e2b.h"
#include "interp_conn.h"
#include "interp_exec.h"
#include "interp_text.h"

#define CONTEXT_MS 120000 /* create, restart, delete: a new process */

/*
 * E2B's default cwd, made when the guest lacks it: a rootfs without
 * E2B's user has no /home/user.  0 or a negative errno.
 */
static int make_home(struct e2b_server *srv, const struct e2b_guest *g)
{
	static const char *const argv[] = { "mkdir", "-p", E2B_HOME, NULL };
	char err[256];
	int status = -1, rc;

	rc = guest__run(srv, g, argv, E2B_AGENT_TIMEOUT_MS, 4096, NULL, NULL,
			NULL, &status, err, sizeof(err));
	return rc < 0 ? rc : status ? -EIO : 0;
}

static int create_context(struct interp_client *c, const char *language,
			  const char *cwd, json_t **ans, char *err,
			  size_t errlen)
{
	return interp_conn__ask(c,
				json_pack("{s:s, s:s, s:s}", "op",
					  "create_context", "language",
					  language, "cwd", cwd),
				CONTEXT_MS, ans, err, errlen);
}

static int do_create(struct e2b_server *srv, const struct e2b_req *r,
		     struct e2b_guest *g, struct e2b_resp *resp)
{
	const char *lang, *cwd, *language = "python";
	char name[INTERP_LANG_MAX + 1], err[512];
	struct interp_client *c = NULL;
	json_t *body, *ans;
	bool home = false;
	int rc;

	body = interp_text__body(r, true, resp);
	if (!body)
		return 0;
	if (interp_text__opt_string(body, "language", &lang) ||
	    interp_text__opt_string(body, "cwd", &cwd)) {
		interp_text__reply(resp, 400,
				   "language and cwd must be strings");
		goto out;
	}
	if (interp_text__language(lang, &language, name)) {
		interp_text__bad_language(resp, name);
		goto out;
	}
	if (!cwd) {
		cwd = E2B_HOME;
		home = true;
	}
	if (interp_conn__open(g, &c, NULL, resp))
		goto out;
	rc = create_context(c, language, cwd, &ans, err, sizeof(err));
	if (rc == -EREMOTEIO && home && make_home(srv, g) == 0)
		rc = create_context(c, language, cwd, &ans, err, sizeof(err));
	if (rc == -EREMOTEIO && !home && strstr(err, "is not a directory")) {
		/* The caller's cwd (interp/server.py's words): a bad request. */
		interp_text__reply(resp, 400, "%s", err);
		goto out;
	}
	if (rc < 0) {
		interp_conn__failed(resp, rc, err);
		goto out;
	}
	reply__json(resp, 200, json_incref(json_object_get(ans, "context")));
	json_decref(ans);
out:
	interp_client__free(c);
	json_decref(body);
	return 0;
}

static int do_list(struct e2b_guest *g, struct e2b_resp *resp)
{
	struct interp_client *c = NULL;
	char err[512];
	json_t *ans;
	int rc;

	if (interp_conn__open(g, &c, NULL, resp))
		return 0;
	rc = interp_conn__ask(c, json_pack("{s:s}", "op", "list_contexts"),
			      INTERP_LIST_MS, &ans, err, sizeof(err));
	if (rc < 0)
		interp_conn__failed(resp, rc, err);
	else
		reply__json(resp, 200,
			    json_incref(json_object_get(ans, "contexts")));
	json_decref(ans);
	interp_client__free(c);
	return 0;
}

/* restart_context or delete_context of the context @id (@len bytes). */
static int do_context_op(struct e2b_guest *g, const char *op, const char *id,
			 size_t len, struct e2b_resp *resp)
{
	struct interp_client *c = NULL;
	char cid[INTERP_CTX_ID_MAX + 1], err[512];
	json_t *ans;
	int rc;

	interp_text__clean_id(cid, id, len);
	if (!interp_text__id_ok(id, len))
		return interp_text__reply(resp, 404, "Context %s not found",
					  cid);
	if (interp_conn__open(g, &c, NULL, resp))
		return 0;
	rc = interp_conn__ask(c,
			      json_pack("{s:s, s:s}", "op", op, "context", cid),
			      CONTEXT_MS, &ans, err, sizeof(err));
	json_decref(ans);
	if (rc == 0) {
		/* E2B's server: FastAPI's None. */
		reply__bytes(resp, 200, "application/json", "null", 4);
	} else if (rc == -EREMOTEIO) {
		char why[512];

		/* The interpreter says no: for an unknown context, 404. */
		snprintf(why, sizeof(why), "%s", err);
		rc = interp_conn__has_context(c, cid, err, sizeof(err));
		if (rc == 0)
			interp_text__reply(resp, 404, "Context %s not found",
					   cid);
		else
			interp_text__reply(resp, 500, "%s", why);
	} else {
		interp_conn__failed(resp, rc, err);
	}
	interp_client__free(c);
	return 0;
}

int interp__handle(struct e2b_server *srv, const struct e2b_req *r,
		   struct e2b_guest *g, struct e2b_resp *resp)
{
	static const char ctxs[] = "/contexts";
	const char *p = r->path, *id, *slash;
	bool get = !strcmp(r->method, "GET"), post = !strcmp(r->method, "POST");

	/* E2B_SANDBOX_URL with a trailing '/' makes the SDK ask for //execute. */
	while (p[0] == '/' && p[1] == '/')
		p++;
	if (!strcmp(p, "/execute")) {
		if (!post)
			return interp_text__reply(resp, 405,
						  "Method Not Allowed");
		return interp_exec__handle(r, g, resp);
	}
	if (!strcmp(p, "/health")) {
		if (!get)
			return interp_text__reply(resp, 405,
						  "Method Not Allowed");
		return reply__bytes(resp, 200, "application/json", "\"OK\"", 4);
	}
	if (!strcmp(p, ctxs)) {
		if (post)
			return do_create(srv, r, g, resp);
		if (get)
			return do_list(g, resp);
		return interp_text__reply(resp, 405, "Method Not Allowed");
	}
	if (strncmp(p, ctxs, sizeof(ctxs) - 1) || p[sizeof(ctxs) - 1] != '/')
		return interp_text__reply(resp, 404, "Not Found");
	id = p + sizeof(ctxs);
	slash = strchr(id, '/');
	if (!slash) {
		if (strcmp(r->method, "DELETE"))
			return interp_text__reply(resp, 405,
						  "Method Not Allowed");
		return do_context_op(g, "delete_context", id, strlen(id), resp);
	}
	if (strcmp(slash, "/restart"))
		return interp_text__reply(resp, 404, "Not Found");
	if (!post)
		return interp_text__reply(resp, 405, "Method Not Allowed");
	return do_context_op(g, "restart_context", id, (size_t)(slash - id),
			     resp);
}
