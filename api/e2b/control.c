// SPDX-License-Identifier: Apache-2.0
/*
 * E2B's control plane (E2B's OpenAPI spec, the paths its SDKs call) on
 * the sandbox library: which call serves which path.  Sandboxes are
 * created, listed, looked up, killed, their timeout set, paused and
 * resumed by connect in control_lifecycle.c; forked and snapshotted, and
 * the templates listed, in control_templates.c.  What ember has no
 * counterpart for answers 501 in E2B's error shape.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "control_lifecycle.h"
#include "control_sandbox.h"
#include "control_templates.h"
#include "e2b.h"
#include "template_build.h"

/* What ember has no counterpart for, by path prefix. */
static const struct {
	const char *prefix;
	const char *what;
} unsupported[] = {
	{ "/secrets", "secrets" },
	{ "/volumes", "volumes" },
	{ "/v2/templates",
	  "this template call (ember-e2b serves Template.build and "
	  "Template.exists; ember's templates have no tags)" },
	{ "/v3/templates",
	  "this template call (ember-e2b serves Template.build and "
	  "Template.exists; ember's templates have no tags)" },
	{ "/templates",
	  "this template call (ember-e2b serves Template.build and "
	  "Template.exists; ember's templates have no tags)" },
	{ "/teams", "teams" },
	{ "/api-keys", "API keys (ember-e2b has one: --api-key-file)" },
	{ "/access-tokens", "access tokens" },
	{ "/nodes", "cluster nodes" },
	{ "/health", "" },
};

/* A call that takes a request body (POST), on sandbox @id (or none). */
typedef int (*body_call)(struct e2b_server *srv, const json_t *b,
			 const char *id, struct e2b_resp *resp);

/*
 * Read @r's body as a JSON object (400 when it is not one) and hand it to
 * @call.  Returns 0, as the calls do.
 */
static int with_body(body_call call, struct e2b_server *srv,
		     const struct e2b_req *r, const char *id,
		     struct e2b_resp *resp)
{
	json_t *b = control_sandbox__body(r, resp);
	int rc;

	if (!b)
		return 0;
	rc = call(srv, b, id, resp);
	json_decref(b);
	return rc;
}

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* POST /sandboxes/ID/ACTION: the call for each ACTION. */
static const struct {
	const char *action;
	body_call call;
} sandbox_posts[] = {
	{ .action = "timeout", .call = control_lifecycle__timeout },
	{ .action = "refreshes", .call = control_lifecycle__refresh },
	{ .action = "pause", .call = control_lifecycle__pause },
	{ .action = "connect", .call = control_lifecycle__connect },
	{ .action = "resume", .call = control_lifecycle__connect },
	{ .action = "fork", .call = control_templates__fork },
	{ .action = "snapshots", .call = control_templates__snapshot },
};

/*
 * Split "/sandboxes/ID[/ACTION]" (after @prefix): 0 with @id and @action
 * ("" when none); -EINVAL when @path is not that.
 */
static int split(const char *path, const char *prefix, char *id, size_t idlen,
		 char *action, size_t actlen)
{
	const char *p, *slash;

	if (strncmp(path, prefix, strlen(prefix)))
		return -EINVAL;
	p = path + strlen(prefix);
	slash = strchr(p, '/');
	if (!*p || p == slash)
		return -EINVAL;
	if ((size_t)(slash ? slash - p : (ptrdiff_t)strlen(p)) >= idlen)
		return -EINVAL;
	snprintf(id, idlen, "%.*s",
		 (int)(slash ? slash - p : (ptrdiff_t)strlen(p)), p);
	snprintf(action, actlen, "%s", slash ? slash + 1 : "");
	return strchr(action, '/') ? -EINVAL : 0;
}

int control__handle(struct e2b_server *srv, const struct e2b_req *r,
		    struct e2b_resp *resp)
{
	const char *m = r->method, *p = r->path;
	char id[80], act[32];
	bool get_m = !strcmp(m, "GET"), post = !strcmp(m, "POST"), v2;

	if (!strcmp(p, "/health"))
		return reply__empty(resp, 200);
	if (!strcmp(p, "/v2/sandboxes") || !strcmp(p, "/sandboxes")) {
		if (post)
			return with_body(control_lifecycle__create, srv, r,
					 NULL, resp);
		if (get_m)
			return control_lifecycle__list(
				r, resp, !strcmp(p, "/sandboxes"));
		goto method;
	}
	/* /v2/sandboxes/ID has connect only; /sandboxes/ID has them all. */
	v2 = !split(p, "/v2/sandboxes/", id, sizeof(id), act, sizeof(act));
	if (v2 && (!post || strcmp(act, "connect")))
		goto nowhere;
	if (v2 || !split(p, "/sandboxes/", id, sizeof(id), act, sizeof(act))) {
		if (!*act && get_m)
			return control_lifecycle__get(id, resp);
		if (!*act && !strcmp(m, "DELETE"))
			return control_lifecycle__kill(srv, id, resp);
		for (size_t i = 0; post && i < ARRAY_LEN(sandbox_posts); i++)
			if (!strcmp(act, sandbox_posts[i].action))
				return with_body(sandbox_posts[i].call, srv, r,
						 id, resp);
		if (!strcmp(act, "metrics") || !strcmp(act, "logs") ||
		    !strcmp(act, "network"))
			return reply__error(resp, 501,
					    "Not supported by ember: the "
					    "sandbox's %s",
					    act);
		goto nowhere;
	}
	if (!strcmp(p, "/snapshots") && get_m)
		return control_templates__snapshots(e2b__query(r, "sandboxID"),
						    resp);
	if (!strcmp(p, "/templates") && get_m)
		return control_templates__list(srv, resp);
	if (template_build__route(srv, r, resp))
		return 0;
	if (!split(p, "/templates/", id, sizeof(id), act, sizeof(act)) &&
	    !*act) {
		if (!strcmp(m, "DELETE"))
			return control_templates__delete(id, resp);
		if (get_m)
			return control_templates__get(srv, id, resp);
	}
	for (size_t i = 0; i < ARRAY_LEN(unsupported); i++)
		if (!strncmp(p, unsupported[i].prefix,
			     strlen(unsupported[i].prefix)) &&
		    *unsupported[i].what)
			return reply__error(resp, 501,
					    "Not supported by ember: %s",
					    unsupported[i].what);
nowhere:
	return reply__error(resp, 404, "No such endpoint: %.16s %.200s", m, p);
method:
	return reply__error(resp, 405, "Method %.16s not allowed on %.200s", m,
			    p);
}
