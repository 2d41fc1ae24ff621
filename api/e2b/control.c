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
#include "control_templates.h"
#include "e2b.h"

/* What ember has no counterpart for, by path prefix. */
static const struct {
	const char *prefix;
	const char *what;
} unsupported[] = {
	{ "/secrets", "secrets" },
	{ "/volumes", "volumes" },
	{ "/v2/templates",
	  "building templates (ember's: emberctl template build)" },
	{ "/v3/templates",
	  "building templates (ember's: emberctl template build)" },
	{ "/templates",
	  "building templates (ember's: emberctl template build)" },
	{ "/teams", "teams" },
	{ "/api-keys", "API keys (ember-e2b has one: --api-key-file)" },
	{ "/access-tokens", "access tokens" },
	{ "/nodes", "cluster nodes" },
	{ "/health", "" },
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
		return e2b__reply_empty(resp, 200);
	if (!strcmp(p, "/v2/sandboxes") || !strcmp(p, "/sandboxes")) {
		if (post)
			return control_lifecycle__create(srv, r, resp);
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
		if (post && !strcmp(act, "timeout"))
			return control_lifecycle__timeout(r, id, "timeout",
							  resp);
		if (post && !strcmp(act, "refreshes"))
			return control_lifecycle__timeout(r, id, "duration",
							  resp);
		if (post && !strcmp(act, "pause"))
			return control_lifecycle__pause(srv, r, id, resp);
		if (post && (!strcmp(act, "connect") || !strcmp(act, "resume")))
			return control_lifecycle__connect(srv, r, id, resp);
		if (post && !strcmp(act, "fork"))
			return control_templates__fork(srv, r, id, resp);
		if (post && !strcmp(act, "snapshots"))
			return control_templates__snapshot(r, id, resp);
		if (!strcmp(act, "metrics") || !strcmp(act, "logs") ||
		    !strcmp(act, "network"))
			return e2b__reply_error(resp, 501,
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
	if (!split(p, "/templates/", id, sizeof(id), act, sizeof(act)) &&
	    !*act) {
		if (!strcmp(m, "DELETE"))
			return control_templates__delete(id, resp);
		if (get_m)
			return control_templates__get(srv, id, resp);
	}
	for (size_t i = 0; i < sizeof(unsupported) / sizeof(*unsupported); i++)
		if (!strncmp(p, unsupported[i].prefix,
			     strlen(unsupported[i].prefix)) &&
		    *unsupported[i].what)
			return e2b__reply_error(resp, 501,
						"Not supported by ember: %s",
						unsupported[i].what);
nowhere:
	return e2b__reply_error(resp, 404, "No such endpoint: %.16s %.200s", m,
				p);
method:
	return e2b__reply_error(resp, 405, "Method %.16s not allowed on %.200s",
				m, p);
}
