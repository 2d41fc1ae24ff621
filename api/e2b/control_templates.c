// SPDX-License-Identifier: Apache-2.0
/*
 * The control plane's templates (control_templates.h): ember's templates
 * listed and looked up, snapshots (a template made from a running
 * sandbox: template__from_sandbox()) taken, listed and deleted, and
 * forks (sandboxes started from such a template, which is removed once
 * no sandbox uses it).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "../sandbox/template.h"
#include "control_sandbox.h"
#include "control_templates.h"
#include "e2b.h"

#define MAX_FORKS   16 /* sandboxes one fork call makes */
#define FORK_PREFIX "fork-"
#define SNAP_PREFIX "snap-"

/* Remove the fork templates that no sandbox uses any more. */
void control_templates__sweep_forks(void)
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

/* A new template from the running sandbox @info, named @prefix<id>-<hex>. */
static int save_template(const struct sandbox_info *info, const char *prefix,
			 char *name, size_t namelen, struct e2b_resp *resp)
{
	unsigned char rnd[3];
	char err[1024];
	bool busy;
	int rc;

	if (info->parked || info->paused) {
		reply__error(resp, 409,
			     "The sandbox %s is paused: connect to it first",
			     info->id);
		return -EINVAL;
	}
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		reply__error(resp, 500, "getrandom: %s", strerror(errno));
		return -EIO;
	}
	snprintf(name, namelen, "%s%s-%02x%02x%02x", prefix, info->id, rnd[0],
		 rnd[1], rnd[2]);
	rc = template__from_sandbox(info, name, err, sizeof(err));
	if (rc && control_sandbox__vanished(info->id)) {
		reply__error(resp, 404, "The sandbox %s was not found",
			     info->id);
		return rc;
	}
	if (rc) {
		/* -EINVAL: parked meanwhile (the name is ours, valid). */
		busy = rc == -EBUSY || rc == -EAGAIN || rc == -EINVAL;
		reply__error(resp, busy ? 409 : 500,
			     "The sandbox's snapshot failed: %s", err);
		return rc;
	}
	return 0;
}

int control_templates__fork(struct e2b_server *srv, const json_t *b,
			    const char *id, struct e2b_resp *resp)
{
	json_t *v, *arr = NULL;
	unsigned int ttl_s = SANDBOX_DEF_TTL, count = 1;
	struct sandbox_info src, info;
	struct e2b_record srec, rec;
	char name[SANDBOX_TEMPLATE_MAX + 1];
	int have;

	if (control_sandbox__seconds(b, "timeout", &ttl_s, resp))
		return 0;
	v = json_object_get(b, "count");
	if (v && !json_is_null(v)) {
		json_int_t c = json_is_integer(v) ? json_integer_value(v) : 0;

		if (c < 1 || c > MAX_FORKS) {
			reply__error(resp, 400, "count must be 1-%d",
				     MAX_FORKS);
			return 0;
		}
		count = (unsigned int)c;
	}
	if (control_sandbox__find(id, &src, resp))
		return 0;
	have = !record__load(src.dir, &srec);
	if (save_template(&src, FORK_PREFIX, name, sizeof(name), resp))
		goto rel;
	arr = json_array();
	for (unsigned int i = 0; arr && i < count; i++) {
		struct e2b_resp one = { .fd = -1 };

		if (control_sandbox__start(
			    srv, name,
			    have ? srec.template_id : src.template_name, ttl_s,
			    (src.ttl_park ? CONTROL_LIFE_PAUSE : 0) |
				    (src.auto_resume ? CONTROL_LIFE_RESUME :
						       0) |
				    (have && srec.traffic_token[0] ?
					     CONTROL_LIFE_PRIVATE :
					     0),
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
					       control_sandbox__json(srv, &info,
								     &rec)));
			record__release(&rec);
		}
		free(one.body);
	}
	reply__json(resp, 201, arr);
	/* Forks use it as long as they live; control_templates__sweep_forks() removes it. */
	control_templates__sweep_forks();
rel:
	if (have)
		record__release(&srec);
	return 0;
}

int control_templates__snapshot(struct e2b_server *srv, const json_t *b,
				const char *id, struct e2b_resp *resp)
{
	json_t *v;
	struct sandbox_info info;
	char name[SANDBOX_TEMPLATE_MAX + 1];

	(void)srv;
	v = json_object_get(b, "name");
	if (v && !json_is_null(v)) {
		reply__error(resp, 400,
			     "Not supported by ember: named snapshots (a "
			     "snapshot's name is its snapshotID)");
		return 0;
	}
	if (control_sandbox__find(id, &info, resp))
		return 0;
	if (save_template(&info, SNAP_PREFIX, name, sizeof(name), resp))
		return 0;
	reply__json(
		resp, 201,
		json_pack("{s:s, s:[s]}", "snapshotID", name, "names", name));
	return 0;
}

/* A Template, for the ember template @t (@dflt: the default one's name). */
static json_t *template_json(const char *dflt, const struct template_info *t)
{
	json_t *aliases = control_sandbox__aliases(t->name, dflt);

	return json_pack(
		"{s:s, s:s, s:i, s:i, s:I, s:b, s:o, s:O, s:o, s:o, s:n, s:n, s:i, s:i, s:s, s:s}",
		"templateID", t->name, "buildID", t->name, "cpuCount",
		(int)t->vcpus, "memoryMB", (int)t->mem_mib, "diskSizeMB",
		(json_int_t)(t->disk_bytes >> 20), "public", 0, "aliases",
		aliases, "names", aliases, "createdAt",
		control_sandbox__time(t->created), "updatedAt",
		control_sandbox__time(t->created), "createdBy", "lastSpawnedAt",
		"spawnCount", 0, "buildCount", 1, "buildStatus", "ready",
		"envdVersion", E2B_ENVD_VERSION);
}

/*
 * Answer the templates (@snaps: as snapshots) whose names begin with
 * @prefix (NULL: all) and then @sandbox_id (NULL: any).
 */
static int templates(const char *dflt, struct e2b_resp *resp,
		     const char *prefix, const char *sandbox_id, bool snaps)
{
	struct template_info *t = NULL;
	char err[512];
	size_t n = 0;
	json_t *arr;

	if (template__list(&t, &n, err, sizeof(err)))
		return reply__error(resp, 500, "%s", err);
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
				     template_json(dflt, &t[i]));
	}
	free(t);
	return reply__json(resp, 200, arr);
}

int control_templates__list(const struct e2b_server *srv, struct e2b_resp *resp)
{
	return templates(srv->default_template, resp, NULL, NULL, false);
}

int control_templates__snapshots(const char *sandbox_id, struct e2b_resp *resp)
{
	return templates(NULL, resp, SNAP_PREFIX, sandbox_id, true);
}

int control_templates__get(struct e2b_server *srv, const char *name,
			   struct e2b_resp *resp)
{
	struct template_info t;
	char err[512];
	json_t *j;

	if (template__open(control_sandbox__is_default(name) ?
				   srv->default_template :
				   name,
			   &t, NULL, err, sizeof(err)))
		return reply__error(resp, 404,
				    "The template %.128s was not found", name);
	j = template_json(srv->default_template, &t);
	if (j)
		json_object_set_new(j, "builds", json_array());
	return reply__json(resp, 200, j);
}

int control_templates__delete(const char *name, struct e2b_resp *resp)
{
	char err[512];
	int rc;

	if (strncmp(name, SNAP_PREFIX, strlen(SNAP_PREFIX)) &&
	    strncmp(name, FORK_PREFIX, strlen(FORK_PREFIX)))
		return reply__error(resp, 403,
				    "ember-e2b deletes only snapshots; "
				    "remove templates with `emberctl "
				    "template rm`");
	rc = template__remove(name, false, err, sizeof(err));
	if (rc == -ENOENT || rc == -EINVAL)
		return reply__error(resp, 404,
				    "The snapshot %.128s was not found", name);
	if (rc == -EBUSY)
		return reply__error(resp, 409, "%s", err);
	if (rc)
		return reply__error(resp, 500, "%s", err);
	return reply__empty(resp, 204);
}
