// SPDX-License-Identifier: Apache-2.0
/*
 * What the control plane's calls share (control_sandbox.h): E2B's names
 * for the default template, its times and Sandbox shape, the request
 * body and its timeouts, looking a sandbox up, and starting one from a
 * template with its record.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../sandbox/template.h"
#include "control_sandbox.h"
#include "e2b.h"

#define MAX_TIMEOUT_S 86400 /* a sandbox's longest timeout, as E2B's Pro */

/* The names E2B's SDKs use for their default templates. */
static const char *const default_names[] = {
	"base",
	"code-interpreter-v1",
	"code-interpreter",
	"code-interpreter-beta",
};

bool control_sandbox__is_default(const char *t)
{
	for (size_t i = 0; i < sizeof(default_names) / sizeof(*default_names);
	     i++)
		if (!strcmp(t, default_names[i]))
			return true;
	return false;
}

json_t *control_sandbox__time(int64_t t)
{
	struct tm tm;
	char buf[32];
	time_t tt = (time_t)t;

	if (!gmtime_r(&tt, &tm) ||
	    !strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm))
		return json_string(CONTROL_NO_END);
	return json_string(buf);
}

json_t *control_sandbox__json(const struct e2b_server *srv,
			      const struct sandbox_info *i,
			      const struct e2b_record *rec)
{
	return json_pack(
		"{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "sandboxID", i->id,
		"templateID",
		rec->template_id[0] ? rec->template_id : i->template_name,
		"alias", i->template_name, "clientID", "ember", "envdVersion",
		E2B_ENVD_VERSION, "envdAccessToken", rec->token, "domain",
		srv->domain, "trafficAccessToken",
		rec->traffic_token[0] ? rec->traffic_token : rec->token);
}

json_t *control_sandbox__body(const struct e2b_req *r, struct e2b_resp *resp)
{
	json_error_t jerr;
	json_t *j;

	if (!r->body || !r->len)
		return json_object();
	j = json_loadb(r->body, r->len, JSON_REJECT_DUPLICATES, &jerr);
	if (!j) {
		reply__error(resp, 400, "The body is not JSON: %s", jerr.text);
		return NULL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		reply__error(resp, 400, "The body is not a JSON object");
		return NULL;
	}
	return j;
}

int control_sandbox__seconds(const json_t *o, const char *key,
			     unsigned int *out, struct e2b_resp *resp)
{
	json_t *v = json_object_get(o, key);
	json_int_t n;

	if (!v || json_is_null(v))
		return 0;
	n = json_is_integer(v) ? json_integer_value(v) : -1;
	if (n < 1 || n > MAX_TIMEOUT_S) {
		reply__error(resp, 400,
			     "%s must be an integer of seconds, 1-%d", key,
			     MAX_TIMEOUT_S);
		return -EINVAL;
	}
	*out = (unsigned int)n;
	return 0;
}

int control_sandbox__find(const char *id, struct sandbox_info *info,
			  struct e2b_resp *resp)
{
	char err[512];

	if (strlen(id) == SANDBOX_ID_LEN &&
	    strspn(id, "0123456789abcdef") == SANDBOX_ID_LEN &&
	    !sandbox__find(id, info, err, sizeof(err)) && !strcmp(info->id, id))
		return 0;
	reply__error(resp, 404, "The sandbox %.64s was not found", id);
	return -ENOENT;
}

bool control_sandbox__vanished(const char *id)
{
	struct sandbox_info info;
	char err[256];

	return sandbox__find(id, &info, err, sizeof(err)) ||
	       strcmp(info.id, id);
}

int control_sandbox__start(struct e2b_server *srv, const char *tname,
			   const char *asked, unsigned int ttl_s,
			   unsigned int life, enum net_mode net,
			   const json_t *metadata, const json_t *env,
			   struct sandbox_info *info, struct e2b_record *rec,
			   struct e2b_resp *resp)
{
	struct sandbox_opts o = {
		.ember = srv->ember,
		.template_name = tname,
		.mem_mib = SANDBOX_DEF_MEM,
		.vcpus = 1,
		.ttl_s = ttl_s,
		.boot_timeout_s = srv->boot_timeout_s,
		.ttl_park = life & CONTROL_LIFE_PAUSE,
		.auto_resume = life & CONTROL_LIFE_RESUME,
		.net_mode = net,
	};
	struct template_info t;
	char id[SANDBOX_ID_LEN + 1], err[1024];
	int rc;

	rc = template__open(tname, &t, NULL, err, sizeof(err));
	if (rc == -ENOENT) {
		reply__error(resp, 404,
			     "The template '%s' was not found among ember's "
			     "templates (emberctl template ls)%s",
			     asked,
			     control_sandbox__is_default(asked) ?
				     "; build ember's default one with "
				     "`emberctl template build default`" :
				     "");
		return rc;
	}
	if (rc) {
		reply__error(resp, 400, "template '%s': %s", asked, err);
		return rc;
	}
	/* A mode other than none needs the template's network device. */
	if (!t.net)
		o.net_mode = NET_NONE;
	rc = sandbox__run(&o, id, err, sizeof(err));
	if (rc) {
		reply__error(resp, 500, "The sandbox could not start: %s", err);
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
		if (life & CONTROL_LIFE_PRIVATE)
			rc = record__add_traffic_token(rec);
		if (!rc)
			rc = record__save(info->dir, rec);
		if (rc)
			record__release(rec);
	}
	if (rc) {
		reply__error(resp, 500,
			     "The sandbox's record could not be kept: %s",
			     strerror(-rc));
		if (info->id[0])
			sandbox__kill(info, err, sizeof(err));
	}
	return rc;
}

json_t *control_sandbox__aliases(const char *name, const char *dflt)
{
	json_t *aliases = json_pack("[s]", name);

	if (aliases && !strcmp(name, dflt))
		for (size_t i = 0;
		     i < sizeof(default_names) / sizeof(*default_names); i++)
			json_array_append_new(aliases,
					      json_string(default_names[i]));
	return aliases;
}
