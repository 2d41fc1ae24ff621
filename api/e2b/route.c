// SPDX-License-Identifier: Apache-2.0
/*
 * ember-e2b's router (route.h): which credential a request needs and
 * which service answers it (e2b.h says the rules).  A sandbox that is not
 * running (none, parked, booting) answers 502, as E2B's proxy does for a
 * sandbox it cannot reach: the SDKs read that as "not running"; but one
 * created with autoResume is resumed first, for a request that has its
 * access token.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "e2b.h"
#include "forget.h"
#include "route.h"
#include "template_build.h"

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
		return reply__json(resp, status, connect__error(code, msg));
	return reply__error(resp, status, "%s", msg);
}

static int envd_env(const struct e2b_guest *g, struct e2b_resp *resp)
{
	return reply__json(resp, 200,
			   json_deep_copy(g->rec.env_vars ? g->rec.env_vars :
							    json_object()));
}

/* The access token request @r carries, or NULL. */
static const char *req_token(const struct e2b_req *r)
{
	const char *token = e2b__header(r, "X-Access-Token");

	if (!token || !*token)
		token = e2b__header(r, "E2B-Traffic-Access-Token");
	return token;
}

/* Resume the parked or paused sandbox @info.  0 or -errno with @err. */
static int wake(struct e2b_server *srv, struct sandbox_info *info, char *err,
		size_t errlen)
{
	if (info->parked)
		forget__sandbox(srv, info->id);
	return sandbox__wake(info, srv->ember, srv->boot_timeout_s, err,
			     errlen);
}

/*
 * Whether request @r to port @port of the sandbox of @rec carries its
 * credential: its access token (X-Access-Token, else
 * E2B-Traffic-Access-Token: a public sandbox's trafficAccessToken is its
 * access token); for the interpreter's port, a private sandbox's traffic
 * token too (the code interpreter's SDK sends only that for contexts).
 */
static bool req_ok(const struct e2b_record *rec, const struct e2b_req *r,
		   unsigned int port)
{
	return record__token_ok(rec, req_token(r)) ||
	       (port == E2B_INTERP_PORT && rec->traffic_token[0] &&
		record__traffic_ok(rec, e2b__header(r, "E2B-Traffic-Access-"
						       "Token")));
}

/*
 * The sandbox @g->info, created with autoResume and parked or paused:
 * resumed for request @r when it has the sandbox's access token (else it
 * stays as it is, and the caller refuses).  0, or -1 with the failure
 * answered.
 */
static int guest_wake(struct e2b_server *srv, const struct e2b_req *r,
		      struct e2b_guest *g, struct e2b_resp *resp)
{
	char err[1024], msg[1200];
	struct e2b_record rec;
	bool ok;

	if (record__load(g->info.dir, &rec))
		return 0;
	ok = req_ok(&rec, r, g->port);
	record__release(&rec);
	if (!ok)
		return 0;
	if (wake(srv, &g->info, err, sizeof(err)) == 0)
		return 0;
	snprintf(msg, sizeof(msg), "The sandbox %s could not be resumed: %s",
		 g->info.id, err);
	guest_fail(r, resp, 500, "internal", msg);
	return -1;
}

/*
 * The running sandbox @id that request @r may use, into @g (release its
 * record): 0, or -1 with the refusal answered.
 */
static int guest_open(struct e2b_server *srv, const struct e2b_req *r,
		      const char *id, struct e2b_guest *g,
		      struct e2b_resp *resp)
{
	const char *port_s = e2b__header(r, "E2b-Sandbox-Port");
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
		reply__error(resp, 502, "%s", err);
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
	if ((g->info.parked || g->info.paused) && g->info.auto_resume &&
	    guest_wake(srv, r, g, resp))
		return -1;
	if (g->info.parked || g->info.paused || !g->info.ready) {
		snprintf(err, sizeof(err), "The sandbox %s is %s", id,
			 sandbox__state_name(&g->info));
		guest_fail(r, resp, 502, "unavailable", err);
		return -1;
	}
	rc = record__load(g->info.dir, &g->rec);
	if (rc || !req_ok(&g->rec, r, g->port)) {
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

	if (guest_open(srv, r, id, &g, resp))
		return 0;
	if (g.port == E2B_INTERP_PORT)
		rc = interp__handle(srv, r, &g, resp);
	else if (has_prefix(r->path, "/process.Process/"))
		rc = process__handle(srv, r, &g, resp);
	else if (has_prefix(r->path, "/filesystem.Filesystem/"))
		rc = filesystem__handle(srv, r, &g, resp);
	else if (!strcmp(r->path, "/files"))
		rc = file_transfer__handle(srv, r, &g, resp);
	else if (!strcmp(r->path, "/health"))
		rc = reply__empty(resp, 204);
	else if (!strcmp(r->path, "/envs") && !strcmp(r->method, "GET"))
		rc = envd_env(&g, resp);
	else
		rc = reply__error(resp, 404, "envd has no %.200s %.200s",
				  r->method, r->path);
	record__release(&g.rec);
	return rc;
}

int route__port_guest(struct e2b_server *srv, const struct e2b_req *r,
		      const char *id, struct sandbox_info *info,
		      struct e2b_resp *resp)
{
	const char *token = e2b__header(r, "E2b-Traffic-Access-Token");
	struct e2b_record rec;
	char err[1024];
	bool ok = true;

	if (strlen(id) != SANDBOX_ID_LEN ||
	    strspn(id, "0123456789abcdef") != SANDBOX_ID_LEN ||
	    sandbox__find(id, info, err, sizeof(err)) || strcmp(info->id, id))
		return reply__error(resp, 502,
				    "The sandbox %.64s was not found", id) -
		       1;
	/* No record (made by emberctl or ember-mcp): its ports are public. */
	if (!record__load(info->dir, &rec)) {
		ok = record__traffic_ok(&rec, token);
		record__release(&rec);
	}
	if (!ok)
		return reply__error(resp, 403,
				    "The sandbox %s's ports need its traffic "
				    "access token (header "
				    "e2b-traffic-access-token): %s",
				    id, token ? "a wrong one" : "none given") -
		       1;
	if ((info->parked || info->paused) && info->auto_resume &&
	    wake(srv, info, err, sizeof(err)))
		return reply__error(resp, 502,
				    "The sandbox %s could not be resumed: %s",
				    id, err) -
		       1;
	if (info->parked || info->paused)
		return reply__error(resp, 502,
				    "The sandbox %s is paused (%s): "
				    "Sandbox.connect() resumes it",
				    id, sandbox__state_name(info)) -
		       1;
	if (!info->ready)
		return reply__error(resp, 502, "The sandbox %s is %s", id,
				    sandbox__state_name(info)) -
		       1;
	return 0;
}

int route__check(struct e2b_server *srv, const struct e2b_req *r,
		 struct e2b_resp *resp)
{
	const char *id = e2b__header(r, "E2b-Sandbox-Id");
	struct e2b_guest g;

	if (id) {
		if (guest_open(srv, r, id, &g, resp))
			return -1;
		record__release(&g.rec);
		return 0;
	}
	/* An upload's credential is its URL's token (the SDK sends no key). */
	if (template_build__is_upload(r->path))
		return template_build__upload_check(r->method, r->path, resp);
	if (!secret_eq(e2b__header(r, "X-API-KEY"), srv->api_key)) {
		reply__error(resp, 401, "Invalid API key");
		return -1;
	}
	return 0;
}

int route__request(struct e2b_server *srv, const struct e2b_req *r,
		   struct e2b_resp *resp)
{
	const char *id = e2b__header(r, "E2b-Sandbox-Id");

	if (id)
		return route_guest(srv, r, id, resp);
	if (template_build__is_upload(r->path))
		return template_build__upload(r, resp);
	if (!secret_eq(e2b__header(r, "X-API-KEY"), srv->api_key))
		return reply__error(resp, 401, "Invalid API key");
	return control__handle(srv, r, resp);
}

/* A body over the limit, answered in the shape that its client reads. */
void route__too_big(const struct e2b_req *r, struct e2b_resp *resp)
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
			reply__bytes(resp, 413, "text/plain; charset=utf-8",
				     msg, strlen(msg));
		else
			reply__error(resp, 413, "%s", msg);
		return;
	}
	if (!ctype || strncasecmp(ctype, "application/connect+", 20)) {
		reply__json(resp, connect__http_status("resource_exhausted"),
			    connect__error("resource_exhausted", msg));
		return;
	}
	/* A stream's error is in its END_STREAM message. */
	b = connect__end_stream("resource_exhausted", msg, &n);
	if (!b || reply__bytes(resp, 200, "application/connect+json", b, n))
		reply__error(resp, 500, "out of memory");
	free(b);
}
