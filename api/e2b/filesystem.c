// SPDX-License-Identifier: Apache-2.0
/*
 * envd's filesystem.Filesystem service over Connect's JSON codec (e2b.h,
 * connect_rpc.h; e2b-notes section 4): Stat, ListDir, MakeDir, Move and
 * Remove here, each one run of the guest-side script (fs_script.h);
 * WatchDir and CreateWatcher / GetWatcherEvents / RemoveWatcher are the
 * watches' (fs_watch.h).  ListDir lists in the order of Go's WalkDir
 * (depth first, names in byte order).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sandbox/utf8.h"
#include "connect_rpc.h"
#include "e2b.h"
#include "envd_path.h"
#include "fs_script.h"
#include "fs_watch.h"

#define PREFIX "/filesystem.Filesystem/"

/* A unary call's error, or (@streaming) a streaming call's. */
static int fail(struct e2b_resp *resp, bool streaming, const char *code,
		const char *msg)
{
	if (streaming)
		return reply__connect_end(resp, code, msg);
	return reply__connect(resp, code, "%s", msg);
}

/*
 * The path field @key of @req resolved into @out; -1 with the error
 * reply set (invalid_argument).
 */
static int req_path(const json_t *req, const char *key, char *out,
		    struct e2b_resp *resp, bool streaming)
{
	const json_t *v = json_object_get(req, key);
	char err[256];

	if (v && !json_is_string(v)) {
		snprintf(err, sizeof(err), "%s must be a string", key);
		goto bad;
	}
	if (!envd_path__resolve(json_string_value(v), json_string_length(v),
				out, err, sizeof(err)))
		return 0;
bad:
	fail(resp, streaming, "invalid_argument", err);
	return -1;
}

static int first_entry(const struct fs_ent *e, void *ctx)
{
	json_t **out = ctx;

	if (*out)
		return 0;
	*out = fs_script__entry_json(e);
	return *out ? 1 : -ENOMEM;
}

/* Answer {"entry": the first entry of @o}, or @fallback when none. */
static int reply_entry(struct e2b_resp *resp, const struct fs_op *o,
		       json_t *fallback)
{
	json_t *e = NULL;

	if (guest_fs__parse(o, first_entry, &e) < 0) {
		json_decref(fallback);
		return reply__connect(resp, "internal", "out of memory");
	}
	if (e) {
		json_decref(fallback);
	} else {
		e = fallback;
		if (!e)
			return reply__connect(resp, "not_found",
					      "the entry went away meanwhile");
	}
	return reply__json(resp, 200, json_pack("{s:o}", "entry", e));
}

/*
 * Run the script's @op on the request's "path" (resolved into @path,
 * ENVD_PATH_MAX bytes): 0 with @o (release it), or -1 with the answer
 * set.
 */
static int run_on_path(struct e2b_server *srv, const struct e2b_guest *g,
		       const json_t *req, const char *op, char *path,
		       struct fs_op *o, struct e2b_resp *resp)
{
	const char *code;
	char msg[512];

	if (req_path(req, "path", path, resp, false))
		return -1;
	if (!fs_script__run(srv, g, op, path, NULL, o, &code, msg, sizeof(msg)))
		return 0;
	reply__connect(resp, code, "%s", msg);
	return -1;
}

static int do_stat(struct e2b_server *srv, const struct e2b_guest *g,
		   const json_t *req, struct e2b_resp *resp)
{
	char path[ENVD_PATH_MAX], msg[512], p[ENVD_SHOWN + 1];
	struct fs_op o;
	int rc;

	if (run_on_path(srv, g, req, "stat", path, &o, resp))
		return 0;
	envd_path__shown(path, p, sizeof(p));
	if (o.status == 3)
		rc = reply__connect(resp, "not_found", "file not found: '%s'",
				    p);
	else if (o.status)
		rc = reply__connect(resp, "internal", "stat '%s': %s", p,
				    fs_script__why(&o, msg, sizeof(msg)));
	else
		rc = reply_entry(resp, &o, NULL);
	guest_fs__release(&o);
	return rc;
}

static int do_make_dir(struct e2b_server *srv, const struct e2b_guest *g,
		       const json_t *req, struct e2b_resp *resp)
{
	char path[ENVD_PATH_MAX], msg[512], p[ENVD_SHOWN + 1];
	const char *name;
	struct fs_op o;
	size_t nlen;
	int rc;

	if (run_on_path(srv, g, req, "mkdir", path, &o, resp))
		return 0;
	envd_path__shown(path, p, sizeof(p));
	switch (o.status) {
	case 0:
		name = guest_stat__last(path, strlen(path), &nlen);
		rc = reply_entry(resp, &o,
				 json_pack("{s:o, s:s, s:o}", "name",
					   utf8__json(name, nlen), "type",
					   "FILE_TYPE_DIRECTORY", "path",
					   utf8__json(path, strlen(path))));
		break;
	case 5:
		rc = reply__connect(resp, "already_exists",
				    "directory already exists: '%s'", p);
		break;
	case 6:
		rc = reply__connect(
			resp, "invalid_argument",
			"path already exists but it is not a directory: "
			"'%s'",
			p);
		break;
	default:
		rc = reply__connect(resp, fs_script__code(&o),
				    "cannot make directory '%s': %s", p,
				    fs_script__why(&o, msg, sizeof(msg)));
	}
	guest_fs__release(&o);
	return rc;
}

static int do_move(struct e2b_server *srv, const struct e2b_guest *g,
		   const json_t *req, struct e2b_resp *resp)
{
	char src[ENVD_PATH_MAX], dst[ENVD_PATH_MAX], msg[512];
	char p[ENVD_SHOWN + 1], q[ENVD_SHOWN + 1];
	const char *code;
	struct fs_op o;
	int rc;

	if (req_path(req, "source", src, resp, false) ||
	    req_path(req, "destination", dst, resp, false))
		return 0;
	if (fs_script__run(srv, g, "move", src, dst, &o, &code, msg,
			   sizeof(msg)))
		return reply__connect(resp, code, "%s", msg);
	envd_path__shown(src, p, sizeof(p));
	envd_path__shown(dst, q, sizeof(q));
	if (o.status == 3)
		rc = reply__connect(resp, "not_found",
				    "source file not found: '%s'", p);
	else if (o.status == 8)
		rc = reply__connect(resp, "invalid_argument",
				    "cannot move '%s' into itself ('%s')", p,
				    q);
	else if (o.status)
		rc = reply__connect(resp, fs_script__code(&o),
				    "cannot move '%s' to '%s': %s", p, q,
				    fs_script__why(&o, msg, sizeof(msg)));
	else
		rc = reply_entry(resp, &o, NULL);
	guest_fs__release(&o);
	return rc;
}

static int do_remove(struct e2b_server *srv, const struct e2b_guest *g,
		     const json_t *req, struct e2b_resp *resp)
{
	char path[ENVD_PATH_MAX], msg[512], p[ENVD_SHOWN + 1];
	struct fs_op o;
	int rc;

	if (run_on_path(srv, g, req, "remove", path, &o, resp))
		return 0;
	if (o.status)
		rc = reply__connect(resp, fs_script__code(&o),
				    "cannot remove '%s': %s",
				    envd_path__shown(path, p, sizeof(p)),
				    fs_script__why(&o, msg, sizeof(msg)));
	else
		rc = reply__json(resp, 200, json_object());
	guest_fs__release(&o);
	return rc;
}

struct listed {
	char *key; /* the raw path, for sorting */
	json_t *entry;
};

struct list_ctx {
	struct listed *v;
	size_t n;
};

/* @o's entries into @l, each its raw path and EntryInfo; -ENOMEM. */
static int collect(const struct fs_op *o, struct list_ctx *l)
{
	struct fs_ent *v;
	struct listed *it;
	size_t n;
	int rc = 0;

	if (guest_fs__entries(o, &v, &n))
		return -ENOMEM;
	l->v = calloc(n ? n : 1, sizeof(*l->v));
	for (size_t i = 0; l->v && i < n; i++) {
		it = &l->v[l->n];
		it->key = strndup(v[i].path, v[i].plen);
		it->entry = fs_script__entry_json(&v[i]);
		if (!it->key || !it->entry) {
			free(it->key);
			json_decref(it->entry);
			break;
		}
		l->n++;
	}
	if (!l->v || l->n < n)
		rc = -ENOMEM;
	free(v);
	return rc;
}

/* WalkDir's order: byte order with '/' before every other byte. */
static int walk_order(const void *a, const void *b)
{
	const unsigned char *x = (const void *)((const struct listed *)a)->key;
	const unsigned char *y = (const void *)((const struct listed *)b)->key;
	int cx, cy;

	while (*x && *x == *y) {
		x++;
		y++;
	}
	cx = !*x ? 0 : *x == '/' ? 1 : *x + 2;
	cy = !*y ? 0 : *y == '/' ? 1 : *y + 2;
	return cx - cy;
}

static void list_release(struct list_ctx *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].key);
		json_decref(l->v[i].entry);
	}
	free(l->v);
}

/*
 * List @path in @g to @depth ("" for all) into @l, sorted.  0, or -1 with
 * a Connect code and message.
 */
static int list(struct e2b_server *srv, const struct e2b_guest *g,
		const char *path, const char *depth, struct list_ctx *l,
		const char **code, char *msg, size_t msglen)
{
	char p[ENVD_SHOWN + 1], w[256];
	struct fs_op o;
	int rc = -1;

	memset(l, 0, sizeof(*l));
	if (fs_script__run(srv, g, "list", path, depth, &o, code, msg, msglen))
		return -1;
	envd_path__shown(path, p, sizeof(p));
	if (o.status == 3) {
		*code = "not_found";
		snprintf(msg, msglen, "directory not found: '%s'", p);
	} else if (o.status == 4) {
		*code = "invalid_argument";
		snprintf(msg, msglen, "path is not a directory: '%s'", p);
	} else if (o.status) {
		*code = "internal";
		snprintf(msg, msglen, "cannot list '%s': %s", p,
			 fs_script__why(&o, w, sizeof(w)));
	} else if (collect(&o, l)) {
		*code = "internal";
		snprintf(msg, msglen, "out of memory");
	} else {
		qsort(l->v, l->n, sizeof(*l->v), walk_order);
		rc = 0;
	}
	guest_fs__release(&o);
	if (rc)
		list_release(l);
	return rc;
}

static int do_list_dir(struct e2b_server *srv, const struct e2b_guest *g,
		       const json_t *req, struct e2b_resp *resp)
{
	const json_t *jd = json_object_get(req, "depth");
	char path[ENVD_PATH_MAX], msg[512], depth[24];
	struct list_ctx l;
	const char *code;
	uint64_t d = 0;
	json_t *arr;

	if (req_path(req, "path", path, resp, false))
		return 0;
	if (jd && !json_is_null(jd) && connect__json_uint(jd, UINT32_MAX, &d))
		return reply__connect(
			resp, "invalid_argument",
			"depth must be an unsigned 32-bit integer");
	/* busybox's find takes an int; no path is deeper than this. */
	if (d > ENVD_PATH_MAX / 2)
		d = ENVD_PATH_MAX / 2;
	snprintf(depth, sizeof(depth), "%llu", (unsigned long long)(d ? d : 1));
	if (list(srv, g, path, depth, &l, &code, msg, sizeof(msg)))
		return reply__connect(resp, code, "%s", msg);
	arr = json_array();
	for (size_t i = 0; arr && i < l.n; i++) {
		if (json_array_append(arr, l.v[i].entry)) {
			json_decref(arr);
			arr = NULL;
		}
	}
	list_release(&l);
	if (!arr)
		return reply__connect(resp, "internal", "out of memory");
	return reply__json(resp, 200, json_pack("{s:o}", "entries", arr));
}

/* --- the service --------------------------------------------------------- */

int filesystem__handle(struct e2b_server *srv, const struct e2b_req *r,
		       struct e2b_guest *g, struct e2b_resp *resp)
{
	const char *m = r->path + strlen(PREFIX), *code = NULL, *user;
	bool streaming = !strcmp(m, "WatchDir");
	char err[512], path[ENVD_PATH_MAX];
	json_t *req;
	int rc;

	if (strcmp(r->method, "POST"))
		return reply__connect(resp, "unimplemented",
				      "Connect calls are POST requests");
	if (!streaming && strcmp(m, "Stat") && strcmp(m, "ListDir") &&
	    strcmp(m, "MakeDir") && strcmp(m, "Move") && strcmp(m, "Remove") &&
	    strcmp(m, "CreateWatcher") && strcmp(m, "GetWatcherEvents") &&
	    strcmp(m, "RemoveWatcher")) {
		envd_path__shown(m, err, sizeof(err));
		return reply__connect(resp, "unimplemented",
				      "filesystem.Filesystem has no method %s",
				      err);
	}
	if (envd_path__user(r, NULL, g, g->user, &user, err, sizeof(err)))
		return fail(resp, streaming, "unauthenticated", err);
	if (!user)
		g->user[0] = '\0';
	req = r->body ? connect__request(r->body, r->len, streaming, &code, err,
					 sizeof(err)) :
			NULL;
	if (!req || !json_is_object(req)) {
		if (req || !code) {
			code = "invalid_argument";
			snprintf(err, sizeof(err),
				 "the request is not a JSON object");
		}
		json_decref(req);
		return fail(resp, streaming, code, err);
	}
	if (streaming)
		rc = req_path(req, "path", path, resp, true) ?
			     0 :
			     fs_watch__stream(srv, r, g, req, path, resp);
	else if (!strcmp(m, "Stat"))
		rc = do_stat(srv, g, req, resp);
	else if (!strcmp(m, "ListDir"))
		rc = do_list_dir(srv, g, req, resp);
	else if (!strcmp(m, "MakeDir"))
		rc = do_make_dir(srv, g, req, resp);
	else if (!strcmp(m, "Move"))
		rc = do_move(srv, g, req, resp);
	else if (!strcmp(m, "Remove"))
		rc = do_remove(srv, g, req, resp);
	else if (!strcmp(m, "CreateWatcher"))
		rc = req_path(req, "path", path, resp, false) ?
			     0 :
			     fs_watch__create(srv, g, req, path, resp);
	else if (!strcmp(m, "GetWatcherEvents"))
		rc = fs_watch__events(srv, g, req, resp);
	else
		rc = fs_watch__remove(g, req, resp);
	json_decref(req);
	return rc;
}
