// SPDX-License-Identifier: Apache-2.0
/*
 * The control plane's sandbox life cycle (control_lifecycle.h): create,
 * list, get, kill, set the timeout, pause (parked on disk) and connect
 * (which resumes a paused one).
 *
 * Errors are {"code": HTTP status, "message": ...}: the SDKs read the
 * body's code (404: SandboxNotFoundError; 409 on pause: already paused).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../sandbox/template.h"
#include "control_lifecycle.h"
#include "control_sandbox.h"
#include "control_templates.h"
#include "e2b.h"
#include "forget.h"

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
static json_t *listed_json(const struct sandbox_info *i,
			   const struct e2b_record *rec, bool detail)
{
	int64_t now = time(NULL), left = sandbox__ttl_left(i);
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
		"startedAt", control_sandbox__time(i->created), "endAt",
		left < 0 ? json_string(CONTROL_NO_END) :
			   control_sandbox__time(now + left),
		"state", e2b_state(i));
	if (!j || !detail)
		return j;
	if (rec)
		json_object_set_new(j, "envdAccessToken",
				    json_string(rec->token));
	json_object_set_new(j, "allowInternetAccess",
			    json_boolean(i->net_mode == NET_NAT));
	json_object_set_new(j, "network",
			    json_pack("{s:b}", "allowPublicTraffic",
				      !rec || !rec->traffic_token[0]));
	json_object_set_new(j, "lifecycle",
			    json_pack("{s:s, s:b}", "onTimeout",
				      i->ttl_park ? "pause" : "kill",
				      "autoResume", i->auto_resume));
	return j;
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
	reply__error(resp, 400, "%s must be an object of strings", key);
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
		reply__error(resp, 400,
			     "envVars: at most %d variables of %u KiB in "
			     "all",
			     E2B_MAX_ENV - 2, E2B_MAX_ENV_BYTES >> 10);
		return -E2BIG;
	}
	/* The rest of the record: the token, the templateID, the keys. */
	if (json > RECORD_MAX_BYTES - 1024) {
		reply__error(resp, 400, "metadata and envVars: over %u KiB",
			     (RECORD_MAX_BYTES - 1024) >> 10);
		return -E2BIG;
	}
	return 0;
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

/* Create fields that ask for what ember does not have. */
static const char *unsupported_create(const json_t *b)
{
	json_t *v;

	if (json_is_false(json_object_get(b, "autoPauseMemory")))
		return "autoPauseMemory: false (a pause without memory: "
		       "ember's pause keeps it)";
	v = json_object_get(b, "mcp");
	if (v && !json_is_null(v))
		return "mcp (the MCP gateway)";
	v = json_object_get(b, "network");
	if (v && !json_is_null(v) &&
	    json_object_size(v) > !!json_object_get(v, "allowPublicTraffic"))
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
		{ "autoPauseMemory", JSON_TRUE },
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
	v = json_object_get(json_object_get(b, "network"),
			    "allowPublicTraffic");
	if (v && !json_is_null(v) && !json_is_boolean(v))
		return "network.allowPublicTraffic";
	return NULL;
}

int control_lifecycle__create(struct e2b_server *srv, const json_t *b,
			      const char *id, struct e2b_resp *resp)
{
	json_t *metadata, *env, *v;
	const char *asked = "base", *tname, *what;
	unsigned int ttl_s = SANDBOX_DEF_TTL, life = 0;
	enum net_mode net = srv->net_mode;
	struct sandbox_info info;
	struct e2b_record rec;
	char err[256];

	(void)id; /* none: a new one */
	v = json_object_get(b, "templateID");
	if (v && !json_is_null(v)) {
		if (!json_is_string(v) || !json_string_length(v)) {
			reply__error(resp, 400,
				     "templateID must be a non-empty string");
			return 0;
		}
		asked = json_string_value(v);
	}
	if (control_sandbox__seconds(b, "timeout", &ttl_s, resp) ||
	    get_strings(b, "metadata", &metadata, resp) ||
	    get_strings(b, "envVars", &env, resp) ||
	    check_sizes(metadata, env, resp))
		return 0;
	what = mistyped_create(b);
	if (what) {
		reply__error(resp, 400, "%s is of the wrong type", what);
		return 0;
	}
	what = unsupported_create(b);
	if (what) {
		reply__error(resp, 400, "Not supported by ember: %s", what);
		return 0;
	}
	/*
	 * lifecycle {onTimeout: 'pause', autoResume} as the SDKs send it
	 * (and older SDKs' autoPause alone): parked at the timeout's end;
	 * with autoResume.enabled, envd calls resume it too (connect always
	 * does).
	 */
	if (json_is_true(json_object_get(b, "autoPause")))
		life |= CONTROL_LIFE_PAUSE;
	if (json_is_true(json_object_get(json_object_get(b, "autoResume"),
					 "enabled")))
		life |= CONTROL_LIFE_RESUME;
	if (life == CONTROL_LIFE_RESUME) {
		reply__error(resp, 400,
			     "autoResume can only be true when onTimeout is "
			     "pause (autoPause)");
		return 0;
	}
	v = json_object_get(b, "allow_internet_access");
	if (json_is_false(v))
		net = NET_NONE;
	/* Its own ports (port_proxy.h) only with its traffic token. */
	if (json_is_false(json_object_get(json_object_get(b, "network"),
					  "allowPublicTraffic")))
		life |= CONTROL_LIFE_PRIVATE;
	tname = control_sandbox__is_default(asked) ? srv->default_template :
						     asked;
	if (template__name_ok(tname, err, sizeof(err))) {
		reply__error(resp, 404,
			     "The template '%.128s' was not found: ember's "
			     "template names are a-z, 0-9, _ and -",
			     asked);
		return 0;
	}
	if (control_sandbox__start(srv, tname, asked, ttl_s, life, net,
				   metadata, env, &info, &rec, resp))
		return 0;
	reply__json(resp, 201, control_sandbox__json(srv, &info, &rec));
	record__release(&rec);
	return 0;
}

/* Undo @s's percent-encoding in place; -EINVAL when malformed. */
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

/*
 * The metadata filter of a list: "k=v&k2=v2", keys and values
 * percent-encoded (the SDK encodes them, then the query string again;
 * MHD undid the outer one).  NULL after answering 400.
 */
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
	reply__error(resp, 400,
		     "metadata must be UTF-8 key=value pairs joined by &");
	free(copy);
	json_decref(f);
	return NULL;
oom:
	free(copy);
	json_decref(f);
	reply__error(resp, 500, "out of memory");
	return NULL;
}

int control_lifecycle__list(const struct e2b_req *r, struct e2b_resp *resp,
			    bool v1)
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
				return reply__error(
					resp, 400,
					"state must be running and/or paused");
			}
		}
	}
	if (limit_s) {
		char *end;
		unsigned long l = strtoul(limit_s, &end, 10);

		if (*end || !*limit_s || !l || l > 1000000)
			return reply__error(resp, 400,
					    "limit must be 1-1000000");
		limit = l;
	}
	filter = metadata_filter(e2b__query(r, "metadata"), resp);
	if (!filter)
		return 0;
	if (sandbox__list(&all, &n, err, sizeof(err))) {
		json_decref(filter);
		return reply__error(resp, 500, "%s", err);
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
			arr, listed_json(&all[i], have ? &rec : NULL, false));
		if (have)
			record__release(&rec);
	}
	free(all);
	json_decref(filter);
	return reply__json(resp, 200, arr);
}

int control_lifecycle__get(const char *id, struct e2b_resp *resp)
{
	struct sandbox_info info;
	struct e2b_record rec;
	int have;

	if (control_sandbox__find(id, &info, resp))
		return 0;
	have = !record__load(info.dir, &rec);
	reply__json(resp, 200, listed_json(&info, have ? &rec : NULL, true));
	if (have)
		record__release(&rec);
	return 0;
}

int control_lifecycle__kill(struct e2b_server *srv, const char *id,
			    struct e2b_resp *resp)
{
	struct sandbox_info info;
	char err[512];
	int rc;

	if (control_sandbox__find(id, &info, resp))
		return 0;
	forget__sandbox(srv, id);
	rc = sandbox__kill(&info, err, sizeof(err));
	forget__sandbox(srv, id);
	if (rc < 0 && rc != -ENOENT)
		return reply__error(resp, 500, "%s", err);
	control_templates__sweep_forks();
	return reply__empty(resp, 204);
}

/*
 * Answer the outcome @rc of a verb on sandbox @id: 204 when done, 404
 * when the sandbox is gone (-ENOENT, or a failure once it vanished), else
 * 409 for @busy or 500, with @err after @what ("" or NULL for none).
 */
static void reply_done(struct e2b_resp *resp, const char *id, int rc, int busy,
		       const char *what, const char *err)
{
	if (rc == -ENOENT || (rc && control_sandbox__vanished(id)))
		reply__error(resp, 404, "The sandbox %s was not found", id);
	else if (rc)
		reply__error(resp, rc == busy ? 409 : 500, "%s%s",
			     what ? what : "", err);
	else
		reply__empty(resp, 204);
}

/* A new timeout, from now, of @b's @key seconds. */
static int set_timeout(const json_t *b, const char *id, const char *key,
		       struct e2b_resp *resp)
{
	unsigned int ttl_s = 0;
	struct sandbox_info info;
	char err[512];
	int rc;

	if (control_sandbox__seconds(b, key, &ttl_s, resp))
		return 0;
	if (!ttl_s) {
		reply__error(resp, 400, "%s is required", key);
		return 0;
	}
	if (control_sandbox__find(id, &info, resp))
		return 0;
	rc = sandbox__renew(&info, ttl_s, err, sizeof(err));
	reply_done(resp, id, rc, -EINVAL, NULL, err);
	return 0;
}

int control_lifecycle__timeout(struct e2b_server *srv, const json_t *b,
			       const char *id, struct e2b_resp *resp)
{
	(void)srv;
	return set_timeout(b, id, "timeout", resp);
}

int control_lifecycle__refresh(struct e2b_server *srv, const json_t *b,
			       const char *id, struct e2b_resp *resp)
{
	(void)srv;
	return set_timeout(b, id, "duration", resp);
}

int control_lifecycle__pause(struct e2b_server *srv, const json_t *b,
			     const char *id, struct e2b_resp *resp)
{
	struct sandbox_info info;
	char err[512];
	int rc;

	if (json_is_false(json_object_get(b, "memory"))) {
		reply__error(resp, 400,
			     "Not supported by ember: a pause without "
			     "memory (ember's pause keeps it)");
		return 0;
	}
	if (control_sandbox__find(id, &info, resp))
		return 0;
	if (info.parked || info.paused) {
		reply__error(resp, 409, "The sandbox %s is already paused", id);
		return 0;
	}
	forget__sandbox(srv, id);
	rc = sandbox__park_once(&info, err, sizeof(err));
	forget__sandbox(srv, id);
	/* Paused by another call meanwhile: E2B's 409, as above. */
	if (rc == -EALREADY) {
		reply__error(resp, 409, "The sandbox %s is already paused", id);
		return 0;
	}
	reply_done(resp, id, rc, -EAGAIN,
		   "The sandbox could not be paused: ", err);
	return 0;
}

int control_lifecycle__connect(struct e2b_server *srv, const json_t *b,
			       const char *id, struct e2b_resp *resp)
{
	unsigned int ttl_s = 0, status = 200;
	struct sandbox_info info;
	struct e2b_record rec;
	char err[1024];
	int rc = 0;

	if (control_sandbox__seconds(b, "timeout", &ttl_s, resp))
		return 0;
	if (json_is_false(json_object_get(b, "memory"))) {
		reply__error(resp, 400,
			     "Not supported by ember: a resume that "
			     "reboots (memory: false)");
		return 0;
	}
	if (control_sandbox__find(id, &info, resp)) {
		/* The SDK's words for this call. */
		reply__error(resp, 404, "The sandbox %.64s was not found", id);
		return 0;
	}
	/* A running or booting one answers 200 and is left alone. */
	if (info.parked || info.paused) {
		if (info.parked)
			forget__sandbox(srv, id);
		rc = sandbox__wake(&info, srv->ember, srv->boot_timeout_s, err,
				   sizeof(err));
		status = 201;
	}
	if (rc && control_sandbox__vanished(id)) {
		reply__error(resp, 404, "The sandbox %s was not found", id);
		return 0;
	}
	if (rc) {
		reply__error(resp, rc == -EBUSY ? 409 : 500,
			     "The sandbox could not be resumed: %s", err);
		return 0;
	}
	if (sandbox__find(id, &info, err, sizeof(err))) {
		reply__error(resp, 404, "The sandbox %s was not found", id);
		return 0;
	}
	if (ttl_s &&
	    sandbox__renew(&info, ttl_s, err, sizeof(err)) == -ENOENT) {
		reply__error(resp, 404, "The sandbox %s was not found", id);
		return 0;
	}
	rc = record_get(&info, &rec);
	if (rc) {
		reply__error(resp, 500, "The sandbox's record: %s",
			     strerror(-rc));
		return 0;
	}
	reply__json(resp, status, control_sandbox__json(srv, &info, &rec));
	record__release(&rec);
	return 0;
}
