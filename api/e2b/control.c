// SPDX-License-Identifier: Apache-2.0
/*
 * E2B's control plane (E2B's OpenAPI spec, the paths its SDKs call) on
 * the sandbox library: sandboxes created from ember's templates, listed,
 * looked up, killed, their timeout set, paused (parked on disk) and
 * resumed by connect, forked and snapshotted (a template made from a
 * running sandbox: template__from_sandbox()); the templates listed.
 * What ember has no counterpart for answers 501 in E2B's error shape.
 *
 * Errors are {"code": HTTP status, "message": ...}: the SDKs read the
 * body's code (404: SandboxNotFoundError; 409 on pause: already paused).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "../sandbox/template.h"
#include "e2b.h"
#include "forget.h"

#define MAX_TIMEOUT_S 86400 /* a sandbox's longest timeout, as E2B's Pro */
#define MAX_FORKS     16 /* sandboxes one fork call makes */
#define FORK_PREFIX   "fork-"
#define SNAP_PREFIX   "snap-"
#define NO_END	      "9999-12-31T23:59:59Z" /* endAt of a sandbox without TTL */

/* The names E2B's SDKs use for their default templates. */
static const char *const default_names[] = {
	"base",
	"code-interpreter-v1",
	"code-interpreter",
	"code-interpreter-beta",
};

static bool is_default_name(const char *t)
{
	for (size_t i = 0; i < sizeof(default_names) / sizeof(*default_names);
	     i++)
		if (!strcmp(t, default_names[i]))
			return true;
	return false;
}

/* RFC 3339 in UTC, as E2B writes times. */
static json_t *rfc3339(int64_t t)
{
	struct tm tm;
	char buf[32];
	time_t tt = (time_t)t;

	if (!gmtime_r(&tt, &tm) ||
	    !strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm))
		return json_string(NO_END);
	return json_string(buf);
}

static const char *e2b_state(const struct sandbox_info *i)
{
	return i->parked || i->paused ? "paused" : "running";
}

static int64_t disk_mib(const struct sandbox_info *i)
{
	char p[PATH_MAX + 16];
	struct stat st;

	snprintf(p, sizeof(p), "%s/rootfs.ext4", i->dir);
	return stat(p, &st) ? 0 : (int64_t)(st.st_size >> 20);
}

/* A ListedSandbox (or with @detail a SandboxDetail). */
static json_t *listed_json(const struct e2b_server *srv,
			   const struct sandbox_info *i,
			   const struct e2b_record *rec, bool detail)
{
	int64_t now = time(NULL), left = sandbox__ttl_left(i, now);
	json_t *j;

	j = json_pack(
		"{s:s, s:s, s:s, s:s, s:i, s:i, s:I, s:s, s:o, s:o, s:o, s:s}",
		"sandboxID", i->id, "templateID",
		rec && rec->template_id[0] ? rec->template_id :
					     i->template_name,
		"alias", i->template_name, "clientID", "ember", "cpuCount",
		(int)i->vcpus, "memoryMB", (int)i->mem_mib, "diskSizeMB",
		(json_int_t)disk_mib(i), "envdVersion", E2B_ENVD_VERSION,
		"metadata",
		rec && rec->metadata ? json_incref(rec->metadata) :
				       json_object(),
		"startedAt", rfc3339(i->created), "endAt",
		left < 0 ? json_string(NO_END) : rfc3339(now + left), "state",
		e2b_state(i));
	if (!j || !detail)
		return j;
	if (rec)
		json_object_set_new(j, "envdAccessToken",
				    json_string(rec->token));
	json_object_set_new(j, "allowInternetAccess",
			    json_boolean(i->net_mode == NET_NAT));
	json_object_set_new(
		j, "lifecycle",
		json_pack("{s:s, s:b}", "onTimeout", "kill", "autoResume", 0));
	(void)srv;
	return j;
}

/* The Sandbox that create, connect and fork answer. */
static json_t *sandbox_json(const struct sandbox_info *i,
			    const struct e2b_record *rec)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "sandboxID",
			 i->id, "templateID",
			 rec->template_id[0] ? rec->template_id :
					       i->template_name,
			 "alias", i->template_name, "clientID", "ember",
			 "envdVersion", E2B_ENVD_VERSION, "envdAccessToken",
			 rec->token, "trafficAccessToken", rec->token);
}

/* The body as a JSON object ({} when empty); NULL after answering 400. */
static json_t *body_object(const struct e2b_req *r, struct e2b_resp *resp)
{
	json_error_t jerr;
	json_t *j;

	if (!r->body || !r->len)
		return json_object();
	j = json_loadb(r->body, r->len, JSON_REJECT_DUPLICATES, &jerr);
	if (!j) {
		e2b__reply_error(resp, 400, "The body is not JSON: %s",
				 jerr.text);
		return NULL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		e2b__reply_error(resp, 400, "The body is not a JSON object");
		return NULL;
	}
	return j;
}

/*
 * Member @key of @o as seconds (1-MAX_TIMEOUT_S) in *@out, untouched
 * when absent or null.  -EINVAL after answering 400.
 */
static int get_seconds(const json_t *o, const char *key, unsigned int *out,
		       struct e2b_resp *resp)
{
	json_t *v = json_object_get(o, key);
	json_int_t n;

	if (!v || json_is_null(v))
		return 0;
	n = json_is_integer(v) ? json_integer_value(v) : -1;
	if (n < 1 || n > MAX_TIMEOUT_S) {
		e2b__reply_error(resp, 400,
				 "%s must be an integer of seconds, 1-%d", key,
				 MAX_TIMEOUT_S);
		return -EINVAL;
	}
	*out = (unsigned int)n;
	return 0;
}

/* An object of strings or absent; -EINVAL after answering 400. */
static int get_strings(const json_t *o, const char *key, json_t **out,
		       struct e2b_resp *resp)
{
	json_t *v = json_object_get(o, key), *x;
	const char *k;

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		goto bad;
	json_object_foreach(v, k, x) if (!json_is_string(x) || !*k) goto bad;
	*out = v;
	return 0;
bad:
	e2b__reply_error(resp, 400, "%s must be an object of strings", key);
	return -EINVAL;
}

/*
 * Whether a sandbox's @metadata and @env (objects of strings, or NULL)
 * fit: its record keeps both (RECORD_MAX_BYTES), and each of its
 * processes gets @env and PATH and HOME (E2B_MAX_ENV variables,
 * E2B_MAX_ENV_BYTES).  -E2BIG after answering 400.
 */
static int check_sizes(const json_t *metadata, const json_t *env,
		       struct e2b_resp *resp)
{
	size_t json = 0, bytes = 0;
	const char *k;
	json_t *v;

	if (metadata)
		json += json_dumpb(metadata, NULL, 0, JSON_COMPACT);
	if (env)
		json += json_dumpb(env, NULL, 0, JSON_COMPACT);
	json_object_foreach((json_t *)env, k, v)
	{
		bytes += strlen(k) + json_string_length(v) + 2;
	}
	if (json_object_size(env) > E2B_MAX_ENV - 2 ||
	    bytes > E2B_MAX_ENV_BYTES) {
		e2b__reply_error(resp, 400,
				 "envVars: at most %d variables of %u KiB in "
				 "all",
				 E2B_MAX_ENV - 2, E2B_MAX_ENV_BYTES >> 10);
		return -E2BIG;
	}
	/* The rest of the record: the token, the templateID, the keys. */
	if (json > RECORD_MAX_BYTES - 1024) {
		e2b__reply_error(resp, 400, "metadata and envVars: over %u KiB",
				 (RECORD_MAX_BYTES - 1024) >> 10);
		return -E2BIG;
	}
	return 0;
}

/*
 * Look up sandbox @id exactly (not by prefix): 0 with @info, else -ENOENT
 * after answering 404 in the shape the SDKs recognise.
 */
static int find(const char *id, struct sandbox_info *info,
		struct e2b_resp *resp)
{
	char err[512];

	if (strlen(id) == SANDBOX_ID_LEN &&
	    strspn(id, "0123456789abcdef") == SANDBOX_ID_LEN &&
	    !sandbox__find(id, info, err, sizeof(err)) && !strcmp(info->id, id))
		return 0;
	e2b__reply_error(resp, 404, "The sandbox %.64s was not found", id);
	return -ENOENT;
}

/*
 * Whether sandbox @id is gone (killed, or its timeout, meanwhile): an
 * operation on it that failed then answers 404, as for an unknown one.
 */
static bool vanished(const char *id)
{
	struct sandbox_info info;
	char err[256];

	return sandbox__find(id, &info, err, sizeof(err)) ||
	       strcmp(info.id, id);
}

/* The sandbox's record, made (and saved) when it has none yet. */
static int record_get(const struct sandbox_info *i, struct e2b_record *rec)
{
	int rc = record__load(i->dir, rec);

	if (rc != -ENOENT && rc != -EINVAL)
		return rc;
	rc = record__init(rec, i->template_name);
	if (!rc)
		rc = record__save(i->dir, rec);
	return rc;
}

/* Remove the fork templates that no sandbox uses any more. */
static void sweep_forks(void)
{
	struct template_info *t = NULL;
	char err[256], ids[8];
	size_t n = 0, users;

	if (template__list(&t, &n, err, sizeof(err)))
		return;
	for (size_t i = 0; i < n; i++) {
		if (strncmp(t[i].name, FORK_PREFIX, strlen(FORK_PREFIX)))
			continue;
		if (!template__users(t[i].name, &users, ids, sizeof(ids), err,
				     sizeof(err)) &&
		    !users)
			template__remove(t[i].name, false, err, sizeof(err));
	}
	free(t);
}

/*
 * Start a sandbox from ember's template @tname; its record says @asked
 * (the templateID the client gave), @metadata, @env.  0 with @info and
 * @rec filled; else an answer in @resp.
 */
static int start(struct e2b_server *srv, const char *tname, const char *asked,
		 unsigned int ttl_s, enum net_mode net, const json_t *metadata,
		 const json_t *env, struct sandbox_info *info,
		 struct e2b_record *rec, struct e2b_resp *resp)
{
	struct sandbox_opts o = {
		.ember = srv->ember,
		.template_name = tname,
		.mem_mib = SANDBOX_DEF_MEM,
		.vcpus = 1,
		.ttl_s = ttl_s,
		.boot_timeout_s = srv->boot_timeout_s,
		.net_mode = net,
	};
	struct template_info t;
	char id[SANDBOX_ID_LEN + 1], err[1024];
	int rc;

	rc = template__open(tname, &t, NULL, err, sizeof(err));
	if (rc == -ENOENT) {
		e2b__reply_error(
			resp, 404,
			"The template '%s' was not found among ember's "
			"templates (emberctl template ls)%s",
			asked,
			is_default_name(asked) ?
				"; build ember's default one with "
				"`emberctl template build default`" :
				"");
		return rc;
	}
	if (rc) {
		e2b__reply_error(resp, 400, "template '%s': %s", asked, err);
		return rc;
	}
	/* A mode other than none needs the template's network device. */
	if (!t.net)
		o.net_mode = NET_NONE;
	rc = sandbox__run(&o, id, err, sizeof(err));
	if (rc) {
		e2b__reply_error(resp, 500, "The sandbox could not start: %s",
				 err);
		return rc;
	}
	rc = sandbox__find(id, info, err, sizeof(err));
	if (!rc)
		rc = record__init(rec, asked);
	if (!rc) {
		if (metadata)
			json_object_update(rec->metadata, (json_t *)metadata);
		if (env)
			json_object_update(rec->env_vars, (json_t *)env);
		rc = record__save(info->dir, rec);
		if (rc)
			record__release(rec);
	}
	if (rc) {
		e2b__reply_error(resp, 500,
				 "The sandbox's record could not be kept: %s",
				 strerror(-rc));
		if (info->id[0])
			sandbox__kill(info, err, sizeof(err));
	}
	return rc;
}

/* Create fields that ask for what ember does not have. */
static const char *unsupported_create(const json_t *b)
{
	json_t *v;

	if (json_is_true(json_object_get(b, "autoPause")))
		return "autoPause (pause on timeout): ember kills a sandbox "
		       "when its timeout ends";
	v = json_object_get(b, "autoResume");
	if (json_is_true(json_object_get(v, "enabled")))
		return "autoResume: resume a paused sandbox with connect";
	v = json_object_get(b, "mcp");
	if (v && !json_is_null(v))
		return "mcp (the MCP gateway)";
	v = json_object_get(b, "network");
	if (v && !json_is_null(v) && json_object_size(v))
		return "network rules (allowOut, denyOut...): ember-e2b --net "
		       "sets the sandboxes' network";
	v = json_object_get(b, "volumeMounts");
	if (json_array_size(v))
		return "volumes";
	return NULL;
}

/* The create field of @b whose type is wrong, or NULL. */
static const char *mistyped_create(const json_t *b)
{
	static const struct {
		const char *key;
		json_type type;
	} fields[] = {
		{ "autoPause", JSON_TRUE }, /* a boolean */
		{ "autoResume", JSON_OBJECT },
		{ "network", JSON_OBJECT },
		{ "volumeMounts", JSON_ARRAY },
		{ "allow_internet_access", JSON_TRUE },
	};
	json_t *v;

	for (size_t i = 0; i < sizeof(fields) / sizeof(*fields); i++) {
		v = json_object_get(b, fields[i].key);
		if (!v || json_is_null(v))
			continue;
		if (fields[i].type == JSON_TRUE ?
			    !json_is_boolean(v) :
			    json_typeof(v) != fields[i].type)
			return fields[i].key;
	}
	v = json_object_get(json_object_get(b, "autoResume"), "enabled");
	if (v && !json_is_null(v) && !json_is_boolean(v))
		return "autoResume.enabled";
	return NULL;
}

static int create(struct e2b_server *srv, const struct e2b_req *r,
		  struct e2b_resp *resp)
{
	json_t *b = body_object(r, resp), *metadata, *env, *v;
	const char *asked = "base", *tname, *what;
	unsigned int ttl_s = SANDBOX_DEF_TTL;
	enum net_mode net = srv->net_mode;
	struct sandbox_info info;
	struct e2b_record rec;
	char err[256];

	if (!b)
		return 0;
	v = json_object_get(b, "templateID");
	if (v && !json_is_null(v)) {
		if (!json_is_string(v) || !json_string_length(v)) {
			e2b__reply_error(
				resp, 400,
				"templateID must be a non-empty string");
			goto out;
		}
		asked = json_string_value(v);
	}
	if (get_seconds(b, "timeout", &ttl_s, resp) ||
	    get_strings(b, "metadata", &metadata, resp) ||
	    get_strings(b, "envVars", &env, resp) ||
	    check_sizes(metadata, env, resp))
		goto out;
	what = mistyped_create(b);
	if (what) {
		e2b__reply_error(resp, 400, "%s is of the wrong type", what);
		goto out;
	}
	what = unsupported_create(b);
	if (what) {
		e2b__reply_error(resp, 400, "Not supported by ember: %s", what);
		goto out;
	}
	v = json_object_get(b, "allow_internet_access");
	if (json_is_false(v))
		net = NET_NONE;
	tname = is_default_name(asked) ? srv->default_template : asked;
	if (template__name_ok(tname, err, sizeof(err))) {
		e2b__reply_error(resp, 404,
				 "The template '%.128s' was not found: ember's "
				 "template names are a-z, 0-9, _ and -",
				 asked);
		goto out;
	}
	if (start(srv, tname, asked, ttl_s, net, metadata, env, &info, &rec,
		  resp))
		goto out;
	e2b__reply_json(resp, 201, sandbox_json(&info, &rec));
	record__release(&rec);
out:
	json_decref(b);
	return 0;
}

/*
 * The metadata filter of a list: "k=v&k2=v2", keys and values
 * percent-encoded (the SDK encodes them, then the query string again;
 * MHD undid the outer one).  NULL after answering 400.
 */
static int pct_decode(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (*s == '%') {
			unsigned int x;

			if (!s[1] || !s[2] || sscanf(s + 1, "%2x", &x) != 1)
				return -EINVAL;
			*o++ = (char)x;
			s += 2;
		} else {
			*o++ = *s == '+' ? ' ' : *s;
		}
	}
	*o = '\0';
	return 0;
}

static json_t *metadata_filter(const char *q, struct e2b_resp *resp)
{
	json_t *f = json_object();
	char *copy = strdup(q ? q : ""), *save = NULL, *kv;

	if (!f || !copy)
		goto oom;
	for (kv = strtok_r(copy, "&", &save); kv;
	     kv = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(kv, '=');

		if (!eq)
			goto bad;
		*eq = '\0';
		if (pct_decode(kv) || pct_decode(eq + 1) || !*kv)
			goto bad;
		/* Not UTF-8: no metadata holds it (and a pair left out
		   would widen the filter). */
		if (json_object_set_new(f, kv, json_string(eq + 1)))
			goto bad;
	}
	free(copy);
	return f;
bad:
	e2b__reply_error(resp, 400,
			 "metadata must be UTF-8 key=value pairs joined by &");
	free(copy);
	json_decref(f);
	return NULL;
oom:
	free(copy);
	json_decref(f);
	e2b__reply_error(resp, 500, "out of memory");
	return NULL;
}

static int list(struct e2b_server *srv, const struct e2b_req *r,
		struct e2b_resp *resp, bool v1)
{
	const char *state = e2b__query(r, "state");
	const char *limit_s = e2b__query(r, "limit");
	bool want_running = true, want_paused = !v1;
	struct sandbox_info *all = NULL;
	json_t *arr, *filter;
	char err[512];
	size_t n = 0, limit = SIZE_MAX;

	if (state && *state) {
		char copy[64], *save = NULL, *w;

		want_running = want_paused = false;
		snprintf(copy, sizeof(copy), "%s", state);
		for (w = strtok_r(copy, ",", &save); w;
		     w = strtok_r(NULL, ",", &save)) {
			if (!strcmp(w, "running")) {
				want_running = true;
			} else if (!strcmp(w, "paused")) {
				want_paused = true;
			} else {
				return e2b__reply_error(
					resp, 400,
					"state must be running and/or paused");
			}
		}
	}
	if (limit_s) {
		char *end;
		unsigned long l = strtoul(limit_s, &end, 10);

		if (*end || !*limit_s || !l || l > 1000000)
			return e2b__reply_error(resp, 400,
						"limit must be 1-1000000");
		limit = l;
	}
	filter = metadata_filter(e2b__query(r, "metadata"), resp);
	if (!filter)
		return 0;
	if (sandbox__list(&all, &n, err, sizeof(err))) {
		json_decref(filter);
		return e2b__reply_error(resp, 500, "%s", err);
	}
	arr = json_array();
	for (size_t i = 0; arr && i < n && json_array_size(arr) < limit; i++) {
		struct e2b_record rec;
		bool paused = all[i].parked || all[i].paused;
		int have;

		if (!all[i].ready && !all[i].parked)
			continue; /* still booting: not handed out yet */
		if ((paused && !want_paused) || (!paused && !want_running))
			continue;
		have = !record__load(all[i].dir, &rec);
		if (json_object_size(filter) &&
		    (!have || !record__metadata_match(&rec, filter))) {
			if (have)
				record__release(&rec);
			continue;
		}
		json_array_append_new(
			arr,
			listed_json(srv, &all[i], have ? &rec : NULL, false));
		if (have)
			record__release(&rec);
	}
	free(all);
	json_decref(filter);
	return e2b__reply_json(resp, 200, arr);
}

static int get(struct e2b_server *srv, const char *id, struct e2b_resp *resp)
{
	struct sandbox_info info;
	struct e2b_record rec;
	int have;

	if (find(id, &info, resp))
		return 0;
	have = !record__load(info.dir, &rec);
	e2b__reply_json(resp, 200,
			listed_json(srv, &info, have ? &rec : NULL, true));
	if (have)
		record__release(&rec);
	return 0;
}

static int kill_one(struct e2b_server *srv, const char *id,
		    struct e2b_resp *resp)
{
	struct sandbox_info info;
	char err[512];
	int rc;

	if (find(id, &info, resp))
		return 0;
	forget__sandbox(srv, id);
	rc = sandbox__kill(&info, err, sizeof(err));
	forget__sandbox(srv, id);
	if (rc < 0 && rc != -ENOENT)
		return e2b__reply_error(resp, 500, "%s", err);
	sweep_forks();
	return e2b__reply_empty(resp, 204);
}

static int set_timeout(struct e2b_server *srv, const struct e2b_req *r,
		       const char *id, const char *key, struct e2b_resp *resp)
{
	json_t *b = body_object(r, resp);
	unsigned int ttl_s = 0;
	struct sandbox_info info;
	char err[512];
	int rc;

	(void)srv;
	if (!b)
		return 0;
	if (get_seconds(b, key, &ttl_s, resp))
		goto out;
	if (!ttl_s) {
		e2b__reply_error(resp, 400, "%s is required", key);
		goto out;
	}
	if (find(id, &info, resp))
		goto out;
	rc = sandbox__renew(&info, ttl_s, err, sizeof(err));
	if (rc == -ENOENT || (rc && vanished(id)))
		e2b__reply_error(resp, 404, "The sandbox %s was not found", id);
	else if (rc)
		e2b__reply_error(resp, rc == -EINVAL ? 409 : 500, "%s", err);
	else
		e2b__reply_empty(resp, 204);
out:
	json_decref(b);
	return 0;
}

static int pause_one(struct e2b_server *srv, const struct e2b_req *r,
		     const char *id, struct e2b_resp *resp)
{
	json_t *b = body_object(r, resp);
	struct sandbox_info info;
	char err[512];
	int rc;

	if (!b)
		return 0;
	if (json_is_false(json_object_get(b, "memory"))) {
		e2b__reply_error(resp, 400,
				 "Not supported by ember: a pause without "
				 "memory (ember's pause keeps it)");
		goto out;
	}
	if (find(id, &info, resp))
		goto out;
	if (info.parked || info.paused) {
		e2b__reply_error(resp, 409, "The sandbox %s is already paused",
				 id);
		goto out;
	}
	forget__sandbox(srv, id);
	rc = sandbox__park(&info, err, sizeof(err));
	forget__sandbox(srv, id);
	if (rc == -ENOENT || (rc && vanished(id)))
		e2b__reply_error(resp, 404, "The sandbox %s was not found", id);
	else if (rc)
		e2b__reply_error(resp, rc == -EAGAIN ? 409 : 500,
				 "The sandbox could not be paused: %s", err);
	else
		e2b__reply_empty(resp, 204);
out:
	json_decref(b);
	return 0;
}

static int connect_one(struct e2b_server *srv, const struct e2b_req *r,
		       const char *id, struct e2b_resp *resp)
{
	json_t *b = body_object(r, resp);
	unsigned int ttl_s = 0, status = 200;
	struct sandbox_info info;
	struct e2b_record rec;
	char err[1024];
	int rc = 0;

	if (!b)
		return 0;
	if (get_seconds(b, "timeout", &ttl_s, resp))
		goto out;
	if (json_is_false(json_object_get(b, "memory"))) {
		e2b__reply_error(resp, 400,
				 "Not supported by ember: a resume that "
				 "reboots (memory: false)");
		goto out;
	}
	if (find(id, &info, resp)) {
		/* The SDK's words for this call. */
		e2b__reply_error(resp, 404, "The sandbox %.64s was not found",
				 id);
		goto out;
	}
	if (info.parked) {
		forget__sandbox(srv, id);
		rc = sandbox__unpark(&info, srv->ember, srv->boot_timeout_s,
				     err, sizeof(err));
		status = 201;
	} else if (info.paused) {
		rc = sandbox__pause(&info, false, err, sizeof(err));
		status = 201;
	}
	if (rc && vanished(id)) {
		e2b__reply_error(resp, 404, "The sandbox %s was not found", id);
		goto out;
	}
	if (rc) {
		e2b__reply_error(resp, rc == -EBUSY ? 409 : 500,
				 "The sandbox could not be resumed: %s", err);
		goto out;
	}
	if (sandbox__find(id, &info, err, sizeof(err))) {
		e2b__reply_error(resp, 404, "The sandbox %s was not found", id);
		goto out;
	}
	if (ttl_s &&
	    sandbox__renew(&info, ttl_s, err, sizeof(err)) == -ENOENT) {
		e2b__reply_error(resp, 404, "The sandbox %s was not found", id);
		goto out;
	}
	rc = record_get(&info, &rec);
	if (rc) {
		e2b__reply_error(resp, 500, "The sandbox's record: %s",
				 strerror(-rc));
		goto out;
	}
	e2b__reply_json(resp, status, sandbox_json(&info, &rec));
	record__release(&rec);
out:
	json_decref(b);
	return 0;
}

/* A new template from the running sandbox @info, named @prefix<id>-<hex>. */
static int save_template(const struct sandbox_info *info, const char *prefix,
			 char *name, size_t namelen, struct e2b_resp *resp)
{
	unsigned char rnd[3];
	char err[1024];
	bool busy;
	int rc;

	if (info->parked || info->paused) {
		e2b__reply_error(
			resp, 409,
			"The sandbox %s is paused: connect to it first",
			info->id);
		return -EINVAL;
	}
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		e2b__reply_error(resp, 500, "getrandom: %s", strerror(errno));
		return -EIO;
	}
	snprintf(name, namelen, "%s%s-%02x%02x%02x", prefix, info->id, rnd[0],
		 rnd[1], rnd[2]);
	rc = template__from_sandbox(info, name, err, sizeof(err));
	if (rc && vanished(info->id)) {
		e2b__reply_error(resp, 404, "The sandbox %s was not found",
				 info->id);
		return rc;
	}
	if (rc) {
		/* -EINVAL: parked meanwhile (the name is ours, valid). */
		busy = rc == -EBUSY || rc == -EAGAIN || rc == -EINVAL;
		e2b__reply_error(resp, busy ? 409 : 500,
				 "The sandbox's snapshot failed: %s", err);
		return rc;
	}
	return 0;
}

static int fork_one(struct e2b_server *srv, const struct e2b_req *r,
		    const char *id, struct e2b_resp *resp)
{
	json_t *b = body_object(r, resp), *v, *arr = NULL;
	unsigned int ttl_s = SANDBOX_DEF_TTL, count = 1;
	struct sandbox_info src, info;
	struct e2b_record srec, rec;
	char name[SANDBOX_TEMPLATE_MAX + 1];
	int have;

	if (!b)
		return 0;
	if (get_seconds(b, "timeout", &ttl_s, resp))
		goto out;
	v = json_object_get(b, "count");
	if (v && !json_is_null(v)) {
		json_int_t c = json_is_integer(v) ? json_integer_value(v) : 0;

		if (c < 1 || c > MAX_FORKS) {
			e2b__reply_error(resp, 400, "count must be 1-%d",
					 MAX_FORKS);
			goto out;
		}
		count = (unsigned int)c;
	}
	if (find(id, &src, resp))
		goto out;
	have = !record__load(src.dir, &srec);
	if (save_template(&src, FORK_PREFIX, name, sizeof(name), resp))
		goto rel;
	arr = json_array();
	for (unsigned int i = 0; arr && i < count; i++) {
		struct e2b_resp one = { .fd = -1 };

		if (start(srv, name,
			  have ? srec.template_id : src.template_name, ttl_s,
			  src.net_mode, have ? srec.metadata : NULL,
			  have ? srec.env_vars : NULL, &info, &rec, &one)) {
			json_t *e = json_loadb(one.body ? one.body : "",
					       one.len, 0, NULL);

			json_array_append_new(arr,
					      json_pack("{s:o}", "error",
							e ? e : json_object()));
		} else {
			json_array_append_new(
				arr, json_pack("{s:o}", "sandbox",
					       sandbox_json(&info, &rec)));
			record__release(&rec);
		}
		free(one.body);
	}
	e2b__reply_json(resp, 201, arr);
	/* Forks use it as long as they live; sweep_forks() removes it. */
	sweep_forks();
rel:
	if (have)
		record__release(&srec);
out:
	json_decref(b);
	return 0;
}

static int snapshot_one(struct e2b_server *srv, const struct e2b_req *r,
			const char *id, struct e2b_resp *resp)
{
	json_t *b = body_object(r, resp), *v;
	struct sandbox_info info;
	char name[SANDBOX_TEMPLATE_MAX + 1];

	(void)srv;
	if (!b)
		return 0;
	v = json_object_get(b, "name");
	if (v && !json_is_null(v)) {
		e2b__reply_error(resp, 400,
				 "Not supported by ember: named snapshots (a "
				 "snapshot's name is its snapshotID)");
		goto out;
	}
	if (find(id, &info, resp))
		goto out;
	if (save_template(&info, SNAP_PREFIX, name, sizeof(name), resp))
		goto out;
	e2b__reply_json(
		resp, 201,
		json_pack("{s:s, s:[s]}", "snapshotID", name, "names", name));
out:
	json_decref(b);
	return 0;
}

/* A Template, for an ember template. */
static json_t *template_json(const struct e2b_server *srv,
			     const struct template_info *t)
{
	json_t *aliases = json_pack("[s]", t->name);

	if (aliases && !strcmp(t->name, srv->default_template))
		for (size_t i = 0;
		     i < sizeof(default_names) / sizeof(*default_names); i++)
			json_array_append_new(aliases,
					      json_string(default_names[i]));
	return json_pack(
		"{s:s, s:s, s:i, s:i, s:I, s:b, s:o, s:O, s:o, s:o, s:n, s:n, s:i, s:i, s:s, s:s}",
		"templateID", t->name, "buildID", t->name, "cpuCount",
		(int)t->vcpus, "memoryMB", (int)t->mem_mib, "diskSizeMB",
		(json_int_t)(t->disk_bytes >> 20), "public", 0, "aliases",
		aliases, "names", aliases, "createdAt", rfc3339(t->created),
		"updatedAt", rfc3339(t->created), "createdBy", "lastSpawnedAt",
		"spawnCount", 0, "buildCount", 1, "buildStatus", "ready",
		"envdVersion", E2B_ENVD_VERSION);
}

static int templates(struct e2b_server *srv, struct e2b_resp *resp,
		     const char *prefix, const char *sandbox_id, bool snaps)
{
	struct template_info *t = NULL;
	char err[512];
	size_t n = 0;
	json_t *arr;

	if (template__list(&t, &n, err, sizeof(err)))
		return e2b__reply_error(resp, 500, "%s", err);
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++) {
		if (prefix && strncmp(t[i].name, prefix, strlen(prefix)))
			continue;
		if (sandbox_id && strncmp(t[i].name + strlen(SNAP_PREFIX),
					  sandbox_id, strlen(sandbox_id)))
			continue;
		json_array_append_new(
			arr, snaps ? json_pack("{s:s, s:[s]}", "snapshotID",
					       t[i].name, "names", t[i].name) :
				     template_json(srv, &t[i]));
	}
	free(t);
	return e2b__reply_json(resp, 200, arr);
}

static int template_get(struct e2b_server *srv, const char *name,
			struct e2b_resp *resp)
{
	struct template_info t;
	char err[512];
	json_t *j;

	if (template__open(is_default_name(name) ? srv->default_template : name,
			   &t, NULL, err, sizeof(err)))
		return e2b__reply_error(
			resp, 404, "The template %.128s was not found", name);
	j = template_json(srv, &t);
	if (j)
		json_object_set_new(j, "builds", json_array());
	return e2b__reply_json(resp, 200, j);
}

static int template_delete(const char *name, struct e2b_resp *resp)
{
	char err[512];
	int rc;

	if (strncmp(name, SNAP_PREFIX, strlen(SNAP_PREFIX)) &&
	    strncmp(name, FORK_PREFIX, strlen(FORK_PREFIX)))
		return e2b__reply_error(resp, 403,
					"ember-e2b deletes only snapshots; "
					"remove templates with `emberctl "
					"template rm`");
	rc = template__remove(name, false, err, sizeof(err));
	if (rc == -ENOENT || rc == -EINVAL)
		return e2b__reply_error(
			resp, 404, "The snapshot %.128s was not found", name);
	if (rc == -EBUSY)
		return e2b__reply_error(resp, 409, "%s", err);
	if (rc)
		return e2b__reply_error(resp, 500, "%s", err);
	return e2b__reply_empty(resp, 204);
}

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
	bool get_m = !strcmp(m, "GET"), post = !strcmp(m, "POST");

	if (!strcmp(p, "/health"))
		return e2b__reply_empty(resp, 200);
	if (!strcmp(p, "/v2/sandboxes") || !strcmp(p, "/sandboxes")) {
		if (post)
			return create(srv, r, resp);
		if (get_m)
			return list(srv, r, resp, !strcmp(p, "/sandboxes"));
		goto method;
	}
	if (!split(p, "/v2/sandboxes/", id, sizeof(id), act, sizeof(act))) {
		if (post && !strcmp(act, "connect"))
			return connect_one(srv, r, id, resp);
		goto nowhere;
	}
	if (!split(p, "/sandboxes/", id, sizeof(id), act, sizeof(act))) {
		if (!*act && get_m)
			return get(srv, id, resp);
		if (!*act && !strcmp(m, "DELETE"))
			return kill_one(srv, id, resp);
		if (post && !strcmp(act, "timeout"))
			return set_timeout(srv, r, id, "timeout", resp);
		if (post && !strcmp(act, "refreshes"))
			return set_timeout(srv, r, id, "duration", resp);
		if (post && !strcmp(act, "pause"))
			return pause_one(srv, r, id, resp);
		if (post && (!strcmp(act, "connect") || !strcmp(act, "resume")))
			return connect_one(srv, r, id, resp);
		if (post && !strcmp(act, "fork"))
			return fork_one(srv, r, id, resp);
		if (post && !strcmp(act, "snapshots"))
			return snapshot_one(srv, r, id, resp);
		if (!strcmp(act, "metrics") || !strcmp(act, "logs") ||
		    !strcmp(act, "network"))
			return e2b__reply_error(resp, 501,
						"Not supported by ember: the "
						"sandbox's %s",
						act);
		goto nowhere;
	}
	if (!strcmp(p, "/snapshots") && get_m)
		return templates(srv, resp, SNAP_PREFIX,
				 e2b__query(r, "sandboxID"), true);
	if (!strcmp(p, "/templates") && get_m)
		return templates(srv, resp, NULL, NULL, false);
	if (!split(p, "/templates/", id, sizeof(id), act, sizeof(act)) &&
	    !*act) {
		if (!strcmp(m, "DELETE"))
			return template_delete(id, resp);
		if (get_m)
			return template_get(srv, id, resp);
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
