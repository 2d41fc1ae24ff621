// SPDX-License-Identifier: Apache-2.0
/* The control socket's routes (see routes.h). */
#include "routes.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "body.h"

/* The longest path token kept for messages. */
#define ROUTES_TOKEN_MAX 64

void routes__fault(struct routes_reply *r, int status, const char *msg)
{
	json_t *o = json_pack("{s:s}", "fault_message", msg);

	r->status = status;
	r->body = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
}

/* 200 with @o (consumed) as the body. */
static void routes__json(struct routes_reply *r, json_t *o)
{
	r->status = 200;
	r->body = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(o);
	if (!r->body)
		routes__fault(r, 400, "Internal VMM error: out of memory");
}

static const char *routes__state_name(enum control_state s)
{
	switch (s) {
	case CONTROL_RUNNING:
		return "Running";
	case CONTROL_PAUSED:
		return "Paused";
	case CONTROL_STOPPED:
		return "Stopped";
	default:
		return "Not started";
	}
}

static json_t *routes__str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *routes__machine(const struct control_config *k)
{
	return json_pack("{s:I,s:I,s:b,s:b,s:s}", "vcpu_count",
			 (json_int_t)k->vcpu_count, "mem_size_mib",
			 (json_int_t)k->mem_size_mib, "smt", k->smt,
			 "track_dirty_pages", k->track_dirty_pages,
			 "huge_pages", "None");
}

/* A token bucket as Firecracker shows it, null when off. */
static json_t *routes__bucket(const struct token_bucket_config *tb)
{
	if (!tb->size || !tb->refill_time_ms)
		return json_null();
	return json_pack("{s:I,s:I,s:I}", "size", (json_int_t)tb->size,
			 "one_time_burst", (json_int_t)tb->one_time_burst,
			 "refill_time", (json_int_t)tb->refill_time_ms);
}

/* A RateLimiter object, null when both buckets are off. */
static json_t *routes__rate_limiter(const struct rate_limiter_config *r)
{
	json_t *bw = routes__bucket(&r->bandwidth),
	       *ops = routes__bucket(&r->ops);

	if (json_is_null(bw) && json_is_null(ops))
		return json_null();
	return json_pack("{s:o,s:o}", "bandwidth", bw, "ops", ops);
}

/* GET /vm/config: every top-level key, null for what is not configured. */
static json_t *routes__vm_config(struct control *c)
{
	struct control_config k = { 0 };
	json_t *o = json_object(), *drives = json_array(), *boot;
	json_t *nets = json_array();
	unsigned int i;

	control__config(c, &k);
	for (i = 0; i < k.nr_nets; i++) {
		const struct control_net *n = &k.nets[i];
		char mac[18];

		snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x",
			 n->guest_mac[0], n->guest_mac[1], n->guest_mac[2],
			 n->guest_mac[3], n->guest_mac[4], n->guest_mac[5]);
		json_array_append_new(
			nets,
			json_pack("{s:s,s:s,s:o,s:o,s:o}", "iface_id",
				  n->iface_id, "host_dev_name",
				  n->host_dev_name, "guest_mac",
				  n->has_mac ? json_string(mac) : json_null(),
				  "rx_rate_limiter",
				  routes__rate_limiter(&n->rx_rate_limiter),
				  "tx_rate_limiter",
				  routes__rate_limiter(&n->tx_rate_limiter)));
	}
	for (i = 0; i < k.nr_drives; i++) {
		const struct control_drive *d = &k.drives[i];

		json_array_append_new(
			drives,
			json_pack("{s:s,s:o,s:b,s:s,s:b,s:s,s:o,s:s,s:n}",
				  "drive_id", d->drive_id, "partuuid",
				  routes__str_or_null(d->partuuid),
				  "is_root_device", d->is_root_device,
				  "cache_type",
				  d->cache_writeback ? "Writeback" : "Unsafe",
				  "is_read_only", d->is_read_only,
				  "path_on_host", d->path_on_host,
				  "rate_limiter",
				  routes__rate_limiter(&d->rate_limiter),
				  "io_engine", "Sync", "socket"));
	}
	boot = json_pack("{s:s,s:o,s:o}", "kernel_image_path",
			 k.have_boot_source ? k.kernel_image_path : "",
			 "initrd_path", routes__str_or_null(k.initrd_path),
			 "boot_args", routes__str_or_null(k.boot_args));
	json_object_set_new(o, "balloon", json_null());
	json_object_set_new(o, "drives", drives);
	json_object_set_new(o, "boot-source", boot);
	json_object_set_new(o, "cpu-config", json_null());
	json_object_set_new(o, "logger", json_null());
	json_object_set_new(o, "machine-config", routes__machine(&k));
	json_object_set_new(o, "metrics", json_null());
	json_object_set_new(o, "mmds-config", json_null());
	json_object_set_new(o, "network-interfaces", nets);
	json_object_set_new(o, "vsock",
			    k.have_vsock ? json_pack("{s:I,s:s}", "guest_cid",
						     (json_int_t)k.guest_cid,
						     "uds_path", k.uds_path) :
					   json_null());
	json_object_set_new(o, "entropy",
			    k.have_entropy ?
				    json_pack("{s:n}", "rate_limiter") :
				    json_null());
	return o;
}

/* The reply for a control call's result: 204, or 400 with its message. */
static void routes__done(struct routes_reply *r, int ret,
			 const struct control_err *e)
{
	if (!ret) {
		r->status = 204;
		r->body = NULL;
	} else {
		routes__fault(r, 400,
			      e->msg[0] ? e->msg : "Internal VMM error");
	}
}

/* Parse the body as JSON: the object, or NULL with @e filled. */
static json_t *routes__parse(const char *body, size_t len,
			     struct control_err *e)
{
	json_error_t je;
	json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);

	if (!o)
		snprintf(e->msg, sizeof(e->msg),
			 BODY_JSON_ERROR "%s at line %d column %d.", je.text,
			 je.line, je.column);
	return o;
}

/*
 * The one string field @name of a body such as {"action_type": "..."}:
 * its value, or NULL with @e filled (not a map, another field, missing).
 */
static const char *routes__only_field(json_t *o, const char *name,
				      struct control_err *e)
{
	const char *key, *value = NULL;
	json_t *v;

	if (!json_is_object(o)) {
		snprintf(e->msg, sizeof(e->msg),
			 BODY_JSON_ERROR "invalid type, expected a map.");
		return NULL;
	}
	json_object_foreach(o, key, v)
	{
		if (strcmp(key, name)) {
			snprintf(e->msg, sizeof(e->msg),
				 BODY_JSON_ERROR
				 "unknown field `%.64s`, expected `%s`.",
				 key, name);
			return NULL;
		}
		value = json_string_value(v);
	}
	if (!value)
		snprintf(e->msg, sizeof(e->msg),
			 BODY_JSON_ERROR "missing field `%s`.", name);
	return value;
}

/* One value of a single-field body such as {"state": "Paused"}. */
struct routes_variant {
	const char *name;
	int (*call)(struct control *c, struct control_err *e);
};

/*
 * A body of one string field @field whose value picks a control call from
 * @v (@n entries); @expected lists the values for the error message.
 */
static int routes__variant(struct control *c, json_t *o, const char *field,
			   const struct routes_variant *v, size_t n,
			   const char *expected, struct control_err *e)
{
	const char *value = routes__only_field(o, field, e);
	size_t i;

	if (!value)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (!strcmp(value, v[i].name))
			return v[i].call(c, e);
	snprintf(e->msg, sizeof(e->msg),
		 BODY_JSON_ERROR "unknown variant `%.64s`, expected %s.", value,
		 expected);
	return -EINVAL;
}

static int routes__actions(struct control *c, json_t *o, struct control_err *e)
{
	static const struct routes_variant actions[] = {
		{ "InstanceStart", control__start },
		{ "SendCtrlAltDel", control__ctrl_alt_del },
		{ "FlushMetrics", control__flush_metrics },
	};

	return routes__variant(c, o, "action_type", actions,
			       sizeof(actions) / sizeof(actions[0]),
			       "one of `FlushMetrics`, `InstanceStart`, "
			       "`SendCtrlAltDel`",
			       e);
}

static int routes__vm(struct control *c, json_t *o, struct control_err *e)
{
	static const struct routes_variant states[] = {
		{ "Paused", control__pause },
		{ "Resumed", control__resume },
	};

	return routes__variant(c, o, "state", states,
			       sizeof(states) / sizeof(states[0]),
			       "`Paused` or `Resumed`", e);
}

/* Firecracker's rule for ids in paths: letters, digits, underscores. */
static bool routes__id_ok(const char *id)
{
	if (!*id)
		return false;
	for (; *id; id++)
		if (!((*id >= 'a' && *id <= 'z') ||
		      (*id >= 'A' && *id <= 'Z') ||
		      (*id >= '0' && *id <= '9') || *id == '_'))
			return false;
	return true;
}

/* The resources ember does not have yet: a 400 that says so. */
static const char *routes__later(const char *res)
{
	if (!strcmp(res, "mmds") || !strcmp(res, "balloon") ||
	    !strcmp(res, "cpu-config") || !strcmp(res, "hotplug") ||
	    !strcmp(res, "pmem") || !strcmp(res, "serial"))
		return "This resource is not supported by ember.";
	return NULL;
}

/*
 * Copy @n bytes of a path token to @out, printable ASCII only (others
 * become '?'), so that a fault message quoting it is always valid JSON.
 */
static void routes__token(char *out, const char *in, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		out[i] = in[i] >= 0x20 && in[i] < 0x7f ? in[i] : '?';
	out[n] = '\0';
}

void routes__handle(struct control *c, const char *method, const char *path,
		    const char *body, size_t len, struct routes_reply *r)
{
	char res[ROUTES_TOKEN_MAX + 1] = "", id[ROUTES_TOKEN_MAX + 1] = "",
				    msg[ROUTES_TOKEN_MAX * 2 + 64];
	struct control_err e = { .msg = "" };
	const char *p = path, *q, *later, *endpoint = "unknown";
	bool get = !strcmp(method, "GET"), put = !strcmp(method, "PUT"),
	     patch = !strcmp(method, "PATCH");
	size_t n;
	json_t *o = NULL;
	int ret;

	r->status = 400;
	r->body = NULL;
	/* Only the first path token picks the resource; the second is an id. */
	while (*p == '/')
		p++;
	q = strchr(p, '/');
	n = q ? (size_t)(q - p) : strlen(p);
	if (n > ROUTES_TOKEN_MAX)
		n = ROUTES_TOKEN_MAX;
	routes__token(res, p, n);
	if (q) {
		q++;
		n = strcspn(q, "/");
		if (n > ROUTES_TOKEN_MAX)
			n = ROUTES_TOKEN_MAX;
		routes__token(id, q, n);
	}

	if (get && len) {
		routes__fault(r, 400, "GET request cannot have a body.");
		goto out;
	}
	if (get && !res[0]) {
		endpoint = "instance_info";
		routes__json(r, json_pack("{s:s,s:s,s:s,s:s}", "id",
					  control__id(c), "state",
					  routes__state_name(control__state(c)),
					  "vmm_version", ROUTES_EMBER_VERSION,
					  "app_name", "ember"));
		goto out;
	}
	if (get && !strcmp(res, "version")) {
		endpoint = "vmm_version";
		routes__json(r,
			     json_pack("{s:s,s:s}", "firecracker_version",
				       ROUTES_FIRECRACKER_VERSION,
				       "ember_version", ROUTES_EMBER_VERSION));
		goto out;
	}
	if (get && !strcmp(res, "machine-config")) {
		struct control_config k = { 0 };

		endpoint = "machine_cfg";
		control__config(c, &k);
		routes__json(r, routes__machine(&k));
		goto out;
	}
	if (get && !strcmp(res, "vm") && !strcmp(id, "config")) {
		endpoint = "vm_config";
		routes__json(r, routes__vm_config(c));
		goto out;
	}
	if ((put || patch) && !len) {
		routes__fault(r, 400,
			      put ? "Empty PUT request." :
				    "Empty PATCH request.");
		goto out;
	}
	later = routes__later(res);
	if ((put || patch) && later) {
		endpoint = res;
		routes__fault(r, 400, later);
		goto out;
	}
	if ((put && (!strcmp(res, "actions") || !strcmp(res, "boot-source") ||
		     !strcmp(res, "drives") || !strcmp(res, "logger") ||
		     !strcmp(res, "machine-config") ||
		     !strcmp(res, "metrics") || !strcmp(res, "vsock") ||
		     !strcmp(res, "entropy") || !strcmp(res, "snapshot") ||
		     !strcmp(res, "network-interfaces"))) ||
	    (patch &&
	     (!strcmp(res, "drives") || !strcmp(res, "network-interfaces") ||
	      !strcmp(res, "machine-config") || !strcmp(res, "vm")))) {
		if (!strcmp(res, "snapshot") && strcmp(id, "create") &&
		    strcmp(id, "load")) {
			endpoint = "snapshot";
			routes__fault(r, 400,
				      "Invalid request method and/or path: "
				      "use /snapshot/create or "
				      "/snapshot/load.");
			goto out;
		}
		if ((!strcmp(res, "drives") ||
		     !strcmp(res, "network-interfaces")) &&
		    !routes__id_ok(id)) {
			endpoint = !strcmp(res, "drives") ? "drive" :
							    "network_interface";
			routes__fault(
				r, 400,
				id[0] ? "API Resource IDs can only contain "
					"alphanumeric characters and "
					"underscores." :
					"The ID cannot be empty.");
			goto out;
		}
		o = routes__parse(body, len, &e);
		if (!o) {
			routes__fault(r, 400, e.msg);
			goto out;
		}
		if (!strcmp(res, "actions")) {
			endpoint = "actions";
			ret = routes__actions(c, o, &e);
		} else if (!strcmp(res, "boot-source")) {
			endpoint = "boot_source";
			ret = body__boot_source(c, o, &e);
		} else if (!strcmp(res, "drives")) {
			endpoint = "drive";
			ret = put ? body__drive(c, id, o, &e) :
				    body__drive_patch(c, id, o, &e);
		} else if (!strcmp(res, "network-interfaces")) {
			endpoint = "network_interface";
			ret = put ? body__net(c, id, o, &e) :
				    body__net_patch(c, id, o, &e);
		} else if (!strcmp(res, "logger")) {
			endpoint = "logger";
			ret = body__logger(c, o, &e);
		} else if (!strcmp(res, "machine-config")) {
			endpoint = "machine_cfg";
			ret = body__machine_config(c, o, patch, &e);
		} else if (!strcmp(res, "metrics")) {
			endpoint = "metrics";
			ret = body__metrics(c, o, &e);
		} else if (!strcmp(res, "vsock")) {
			endpoint = "vsock";
			ret = body__vsock(c, o, &e);
		} else if (!strcmp(res, "entropy")) {
			endpoint = "entropy";
			ret = body__entropy(c, o, &e);
		} else if (!strcmp(res, "snapshot")) {
			endpoint = !strcmp(id, "create") ? "create_snapshot" :
							   "load_snapshot";
			ret = !strcmp(id, "create") ?
				      body__snapshot_create(c, o, &e) :
				      body__snapshot_load(c, o, &e);
		} else {
			endpoint = "vm";
			ret = routes__vm(c, o, &e);
		}
		routes__done(r, ret, &e);
		goto out;
	}
	snprintf(msg, sizeof(msg),
		 "Invalid request method and/or path: %.16s %s.", method, res);
	routes__fault(r, 400, msg);
out:
	json_decref(o);
	control__count_api(c,
			   get	 ? "GET" :
			   put	 ? "PUT" :
			   patch ? "PATCH" :
				   "OTHER",
			   endpoint, r->status >= 400);
	if (!r->body && r->status != 204) {
		r->status = 400;
		r->body = strdup("{\"fault_message\":\"Internal VMM error\"}");
	}
}
