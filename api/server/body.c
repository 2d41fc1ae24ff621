// SPDX-License-Identifier: Apache-2.0
/* Firecracker's request bodies as control calls (see body.h). */
#include "body.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* One field of a body's schema. */
enum body_type { T_UINT, T_BOOL, T_STR, T_NULL_ONLY, T_ANY };

struct body_field {
	const char *name;
	enum body_type type;
	bool required;
	bool nullable; /* null means absent */
};

/* How body__check() reads a schema. */
enum body_check_flags {
	BODY_UNKNOWN_OK = 1 << 0, /* fields not in the schema are ignored */
	BODY_PATCH = 1 << 1, /* a PATCH: no field is required */
};

/* A body that does not fit its schema: BODY_JSON_ERROR and the reason. */
static int body__err(struct control_err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int body__err(struct control_err *e, const char *fmt, ...)
{
	size_t n = strlen(BODY_JSON_ERROR);
	va_list ap;

	memcpy(e->msg, BODY_JSON_ERROR, n + 1);
	va_start(ap, fmt);
	vsnprintf(e->msg + n, sizeof(e->msg) - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* A body that fits its schema but asks what ember refuses: no prefix. */
static int body__refuse(struct control_err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int body__refuse(struct control_err *e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* An id in the body must be the one in the path (PUT /drives/{id}). */
static int body__same_id(const char *path_id, const char *body_id,
			 struct control_err *e)
{
	if (path_id && strcmp(path_id, body_id))
		return body__refuse(e, "The id from the path does not match "
				       "the id from the body!");
	return 0;
}

/* An enum field's value @v (NULL: absent) must be @a or @b. */
static int body__either(const char *v, const char *a, const char *b,
			struct control_err *e)
{
	if (v && strcmp(v, a) && strcmp(v, b))
		return body__err(e,
				 "unknown variant `%.64s`, expected `%s` or "
				 "`%s`",
				 v, a, b);
	return 0;
}

static const char *body__type_name(enum body_type t)
{
	switch (t) {
	case T_UINT:
		return "an unsigned integer";
	case T_BOOL:
		return "a boolean";
	case T_STR:
		return "a string";
	case T_NULL_ONLY:
		return "null";
	default:
		return "a value";
	}
}

static const char *body__json_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "map";
	case JSON_ARRAY:
		return "sequence";
	case JSON_STRING:
		return "string";
	case JSON_INTEGER:
		return json_integer_value(v) < 0 ? "negative integer" :
						   "integer";
	case JSON_REAL:
		return "floating point";
	case JSON_TRUE:
	case JSON_FALSE:
		return "boolean";
	default:
		return "null";
	}
}

/*
 * Check @o against @f: an object, every required field present (none
 * with BODY_PATCH), every field of the right type; unknown fields refused
 * unless BODY_UNKNOWN_OK.  @flags: enum body_check_flags.
 */
static int body__check(json_t *o, const struct body_field *f, size_t n,
		       unsigned int flags, struct control_err *e)
{
	const char *key;
	json_t *v;
	size_t i;

	if (!json_is_object(o))
		return body__err(e, "invalid type: %s, expected a map",
				 body__json_name(o));
	json_object_foreach(o, key, v)
	{
		for (i = 0; i < n && strcmp(f[i].name, key); i++)
			;
		if (i == n) {
			char names[256] = "";
			size_t len = 0;

			if (flags & BODY_UNKNOWN_OK)
				continue;
			for (i = 0; i < n && len < sizeof(names); i++)
				len += (size_t)snprintf(
					names + len, sizeof(names) - len,
					"%s`%s`", i ? ", " : "", f[i].name);
			return body__err(e,
					 "unknown field `%.64s`, expected %s%s",
					 key, n > 1 ? "one of " : "", names);
		}
		if (json_is_null(v) &&
		    (f[i].nullable || f[i].type == T_NULL_ONLY))
			continue;
		if ((f[i].type == T_UINT &&
		     !(json_is_integer(v) && json_integer_value(v) >= 0)) ||
		    (f[i].type == T_BOOL && !json_is_boolean(v)) ||
		    (f[i].type == T_STR && !json_is_string(v)) ||
		    f[i].type == T_NULL_ONLY)
			return body__err(e,
					 "invalid type: %s, expected %s for "
					 "`%s`",
					 body__json_name(v),
					 body__type_name(f[i].type), f[i].name);
	}
	for (i = 0; i < n && !(flags & BODY_PATCH); i++) {
		v = json_object_get(o, f[i].name);
		if (f[i].required && (!v || json_is_null(v)))
			return body__err(e, "missing field `%s`", f[i].name);
	}
	return 0;
}

/* A field's value, NULL when absent or null. */
static json_t *body__get(json_t *o, const char *name)
{
	json_t *v = json_object_get(o, name);

	return v && !json_is_null(v) ? v : NULL;
}

static const char *body__str(json_t *o, const char *name)
{
	json_t *v = body__get(o, name);

	return v ? json_string_value(v) : NULL;
}

static bool body__bool(json_t *o, const char *name, bool dflt)
{
	json_t *v = body__get(o, name);

	return v ? json_is_true(v) : dflt;
}

/* A string field must not hold a NUL: C strings would cut it. */
static int body__plain(json_t *o, const char *name, struct control_err *e)
{
	json_t *v = body__get(o, name);

	if (v && json_is_string(v) &&
	    strlen(json_string_value(v)) != json_string_length(v))
		return body__err(e, "`%s` holds a NUL character", name);
	return 0;
}

static int body__strings_plain(json_t *o, const struct body_field *f, size_t n,
			       struct control_err *e)
{
	size_t i;
	int ret = 0;

	for (i = 0; i < n && !ret; i++)
		if (f[i].type == T_STR)
			ret = body__plain(o, f[i].name, e);
	return ret;
}

#define BODY_CHECK(o, f, flags, e)                                             \
	({                                                                     \
		int r_ =                                                       \
			body__check(o, f, sizeof(f) / sizeof(f[0]), flags, e); \
		if (!r_)                                                       \
			r_ = body__strings_plain(o, f,                         \
						 sizeof(f) / sizeof(f[0]), e); \
		r_;                                                            \
	})

int body__machine_config(struct control *c, json_t *o, bool patch,
			 struct control_err *e)
{
	static const struct body_field f[] = {
		{ "vcpu_count", T_UINT, true, false },
		{ "mem_size_mib", T_UINT, true, false },
		{ "smt", T_BOOL, false, false },
		{ "track_dirty_pages", T_BOOL, false, false },
		{ "cpu_template", T_STR, false, true },
		{ "huge_pages", T_STR, false, false },
	};
	struct control_config cfg = { 0 };
	const char *tmpl, *huge;
	uint64_t vcpus, mem;
	json_t *v;
	int ret;

	ret = BODY_CHECK(o, f, patch ? BODY_PATCH : 0, e);
	if (ret)
		return ret;
	if (patch && !json_object_size(o))
		return body__refuse(e, "Empty PATCH request.");
	tmpl = body__str(o, "cpu_template");
	if (tmpl && strcmp(tmpl, "None"))
		return body__refuse(e, "Machine config error: CPU templates "
				       "are not supported by ember (only "
				       "\"None\").");
	huge = body__str(o, "huge_pages");
	if (huge && strcmp(huge, "None"))
		return body__refuse(e, "Machine config error: huge pages are "
				       "not supported by ember (only "
				       "\"None\").");
	control__config(c, &cfg);
	v = body__get(o, "vcpu_count");
	vcpus = v ? (uint64_t)json_integer_value(v) : cfg.vcpu_count;
	if (vcpus > 255)
		return body__err(e,
				 "invalid value: integer `%llu`, expected u8",
				 (unsigned long long)vcpus);
	v = body__get(o, "mem_size_mib");
	mem = v ? (uint64_t)json_integer_value(v) : cfg.mem_size_mib;
	/* PUT resets what it leaves out; PATCH keeps it. */
	return control__set_machine(
		c, (unsigned int)vcpus, mem,
		body__bool(o, "smt", patch ? cfg.smt : false),
		body__bool(o, "track_dirty_pages",
			   patch ? cfg.track_dirty_pages : false),
		e);
}

int body__boot_source(struct control *c, json_t *o, struct control_err *e)
{
	static const struct body_field f[] = {
		{ "kernel_image_path", T_STR, true, false },
		{ "initrd_path", T_STR, false, true },
		{ "boot_args", T_STR, false, true },
	};
	int ret = BODY_CHECK(o, f, 0, e);

	if (ret)
		return ret;
	return control__set_boot_source(c, body__str(o, "kernel_image_path"),
					body__str(o, "initrd_path"),
					body__str(o, "boot_args"), e);
}

/* One TokenBucket object (or null: off) of a RateLimiter into @tb. */
static int body__token_bucket(json_t *v, const char *name,
			      struct token_bucket_config *tb,
			      struct control_err *e)
{
	static const struct body_field f[] = {
		{ "size", T_UINT, true, false },
		{ "one_time_burst", T_UINT, false, true },
		{ "refill_time", T_UINT, true, false },
	};
	json_t *burst;
	int ret;

	memset(tb, 0, sizeof(*tb));
	if (!v || json_is_null(v))
		return 0;
	ret = BODY_CHECK(v, f, 0, e);
	if (ret) {
		size_t len = strlen(e->msg);

		snprintf(e->msg + len, sizeof(e->msg) - len, " (in %s)", name);
		return ret;
	}
	tb->size = (uint64_t)json_integer_value(json_object_get(v, "size"));
	tb->refill_time_ms =
		(uint64_t)json_integer_value(json_object_get(v, "refill_time"));
	burst = body__get(v, "one_time_burst");
	tb->one_time_burst = burst ? (uint64_t)json_integer_value(burst) : 0;
	return 0;
}

int body__rate_limiter(json_t *v, const char *name,
		       struct rate_limiter_config *r, struct control_err *e)
{
	static const struct body_field f[] = {
		{ "bandwidth", T_ANY, false, true },
		{ "ops", T_ANY, false, true },
	};
	char why[256];
	int ret;

	memset(r, 0, sizeof(*r));
	if (!v || json_is_null(v))
		return 0;
	ret = BODY_CHECK(v, f, 0, e);
	if (!ret)
		ret = body__token_bucket(json_object_get(v, "bandwidth"), name,
					 &r->bandwidth, e);
	if (!ret)
		ret = body__token_bucket(json_object_get(v, "ops"), name,
					 &r->ops, e);
	if (!ret && config__check_rate_limiter(r, why, sizeof(why)))
		ret = body__err(e, "%s: %s", name, why);
	if (ret)
		memset(r, 0, sizeof(*r)); /* as promised: nothing half-read */
	return ret;
}

int body__rate_limiter_patch(json_t *v, const char *name,
			     struct rate_limiter_config *r,
			     struct control_err *e)
{
	struct rate_limiter_config given;
	int ret = body__rate_limiter(v, name, &given, e);

	if (ret || !v)
		return ret;
	if (body__get(v, "bandwidth"))
		r->bandwidth = given.bandwidth;
	if (body__get(v, "ops"))
		r->ops = given.ops;
	return 0;
}

/* Only null: the entropy device has no rate limiter in ember. */
static int body__no_rate_limiter(json_t *o, const char *name,
				 struct control_err *e)
{
	if (!body__get(o, name))
		return 0;
	return body__refuse(e,
			    "%s is not supported by ember yet: leave it out or "
			    "null",
			    name);
}

int body__drive(struct control *c, const char *path_id, json_t *o,
		struct control_err *e)
{
	static const struct body_field f[] = {
		{ "drive_id", T_STR, true, false },
		{ "path_on_host", T_STR, false, true },
		{ "is_root_device", T_BOOL, true, false },
		{ "is_read_only", T_BOOL, false, true },
		{ "partuuid", T_STR, false, true },
		{ "cache_type", T_STR, false, false },
		{ "io_engine", T_STR, false, false },
		{ "rate_limiter", T_ANY, false, true },
		{ "socket", T_STR, false, true },
	};
	struct control_drive d = { 0 };
	const char *cache, *engine;
	int ret = BODY_CHECK(o, f, 0, e);

	if (ret)
		return ret;
	d.drive_id = body__str(o, "drive_id");
	ret = body__same_id(path_id, d.drive_id, e);
	if (ret)
		return ret;
	cache = body__str(o, "cache_type");
	ret = body__either(cache, "Unsafe", "Writeback", e);
	if (ret)
		return ret;
	engine = body__str(o, "io_engine");
	ret = body__either(engine, "Sync", "Async", e);
	if (ret)
		return ret;
	if (engine && !strcmp(engine, "Async"))
		return body__refuse(e, "Drive config error: io_engine "
				       "\"Async\" is not supported by ember "
				       "(only \"Sync\").");
	if (body__get(o, "socket"))
		return body__refuse(e, "Drive config error: vhost-user drives "
				       "(socket) are not supported by ember.");
	ret = body__rate_limiter(body__get(o, "rate_limiter"), "rate_limiter",
				 &d.rate_limiter, e);
	if (ret)
		return ret;
	d.path_on_host = body__str(o, "path_on_host");
	d.is_root_device = body__bool(o, "is_root_device", false);
	d.is_read_only = body__bool(o, "is_read_only", false);
	d.partuuid = body__str(o, "partuuid");
	d.cache_writeback = cache && !strcmp(cache, "Writeback");
	return control__set_drive(c, &d, e);
}

int body__drive_patch(struct control *c, const char *path_id, json_t *o,
		      struct control_err *e)
{
	static const struct body_field f[] = {
		{ "drive_id", T_STR, true, false },
		{ "path_on_host", T_STR, false, false },
		{ "rate_limiter", T_ANY, false, true },
	};
	struct rate_limiter_config rl = { 0 };
	struct control_config cfg = { 0 };
	const char *path;
	unsigned int i;
	json_t *v;
	int ret = BODY_CHECK(o, f, 0, e);

	if (ret)
		return ret;
	ret = body__same_id(path_id, body__str(o, "drive_id"), e);
	if (ret)
		return ret;
	path = body__str(o, "path_on_host");
	/* Before the start that is the answer, whatever else is wrong. */
	if (control__state(c) == CONTROL_NOT_STARTED)
		return control__update_drive(c, path_id, path ? path : "", NULL,
					     e);
	v = body__get(o, "rate_limiter");
	if (v) {
		/* Firecracker's PATCH: a bucket left out keeps its setting. */
		control__config(c, &cfg);
		for (i = 0; i < cfg.nr_drives; i++)
			if (!strcmp(cfg.drives[i].drive_id, path_id))
				rl = cfg.drives[i].rate_limiter;
		ret = body__rate_limiter_patch(v, "rate_limiter", &rl, e);
		if (ret)
			return ret;
	}
	return control__update_drive(c, path_id, path, v ? &rl : NULL, e);
}

/*
 * A network interface's rate limiter field @name of @o into @r: absent or
 * null is none.
 */
static int body__net_limiter(json_t *o, const char *name,
			     struct rate_limiter_config *r,
			     struct control_err *e)
{
	json_t *v = body__get(o, name);

	memset(r, 0, sizeof(*r));
	if (!v)
		return 0;
	return body__rate_limiter(v, name, r, e);
}

int body__net(struct control *c, const char *path_id, json_t *o,
	      struct control_err *e)
{
	static const struct body_field f[] = {
		{ "iface_id", T_STR, true, false },
		{ "host_dev_name", T_STR, true, false },
		{ "guest_mac", T_STR, false, true },
		{ "rx_rate_limiter", T_ANY, false, true },
		{ "tx_rate_limiter", T_ANY, false, true },
	};
	struct control_net n = { 0 };
	const char *mac;
	int ret = BODY_CHECK(o, f, 0, e);

	if (ret)
		return ret;
	n.iface_id = body__str(o, "iface_id");
	ret = body__same_id(path_id, n.iface_id, e);
	if (ret)
		return ret;
	n.host_dev_name = body__str(o, "host_dev_name");
	mac = body__str(o, "guest_mac");
	if (mac) {
		if (config__parse_mac(mac, n.guest_mac))
			return body__err(e,
					 "guest_mac `%.64s` is not a unicast "
					 "MAC address aa:bb:cc:dd:ee:ff",
					 mac);
		n.has_mac = true;
	}
	ret = body__net_limiter(o, "rx_rate_limiter", &n.rx_rate_limiter, e);
	if (!ret)
		ret = body__net_limiter(o, "tx_rate_limiter",
					&n.tx_rate_limiter, e);
	if (ret)
		return ret;
	return control__set_net(c, &n, e);
}

int body__net_patch(struct control *c, const char *path_id, json_t *o,
		    struct control_err *e)
{
	static const struct body_field f[] = {
		{ "iface_id", T_STR, true, false },
		{ "rx_rate_limiter", T_ANY, false, true },
		{ "tx_rate_limiter", T_ANY, false, true },
	};
	struct rate_limiter_config rx = { 0 }, tx = { 0 };
	struct control_config k = { 0 };
	unsigned int i;
	int ret = BODY_CHECK(o, f, 0, e);

	if (ret)
		return ret;
	ret = body__same_id(path_id, body__str(o, "iface_id"), e);
	if (ret)
		return ret;
	/* Firecracker's update: each bucket given replaces, others stay. */
	control__config(c, &k);
	for (i = 0; i < k.nr_nets; i++) {
		if (!strcmp(k.nets[i].iface_id, path_id)) {
			rx = k.nets[i].rx_rate_limiter;
			tx = k.nets[i].tx_rate_limiter;
		}
	}
	ret = body__rate_limiter_patch(body__get(o, "rx_rate_limiter"),
				       "rx_rate_limiter", &rx, e);
	if (!ret)
		ret = body__rate_limiter_patch(body__get(o, "tx_rate_limiter"),
					       "tx_rate_limiter", &tx, e);
	if (ret)
		return ret;
	return control__update_net(c, path_id, &rx, &tx, e);
}

int body__vsock(struct control *c, json_t *o, struct control_err *e)
{
	static const struct body_field f[] = {
		{ "guest_cid", T_UINT, true, false },
		{ "uds_path", T_STR, true, false },
		{ "vsock_id", T_STR, false, true },
	};
	int ret = BODY_CHECK(o, f, 0, e);

	if (ret)
		return ret;
	return control__set_vsock(
		c, (uint64_t)json_integer_value(body__get(o, "guest_cid")),
		body__str(o, "uds_path"), e);
}

int body__entropy(struct control *c, json_t *o, struct control_err *e)
{
	static const struct body_field f[] = {
		{ "rate_limiter", T_ANY, false, true },
	};
	int ret = BODY_CHECK(o, f, 0, e);

	if (!ret)
		ret = body__no_rate_limiter(o, "rate_limiter", e);
	return ret ? ret : control__set_entropy(c, true, e);
}

int body__logger(struct control *c, json_t *o, struct control_err *e)
{
	static const struct body_field f[] = {
		{ "log_path", T_STR, false, true },
		{ "level", T_STR, false, true },
		{ "show_level", T_BOOL, false, true },
		{ "show_log_origin", T_BOOL, false, true },
		{ "module", T_STR, false, true },
	};
	static const struct {
		const char *name;
		enum control_log_level level;
	} levels[] = {
		{ "Off", CONTROL_LOG_OFF },
		{ "Error", CONTROL_LOG_ERROR },
		{ "Warning", CONTROL_LOG_WARNING },
		{ "Warn", CONTROL_LOG_WARNING },
		{ "Info", CONTROL_LOG_INFO },
		{ "Debug", CONTROL_LOG_DEBUG },
		{ "Trace", CONTROL_LOG_TRACE },
	};
	enum control_log_level level = CONTROL_LOG_INFO;
	const char *name;
	size_t i;
	int ret = BODY_CHECK(o, f, 0, e);

	if (ret)
		return ret;
	name = body__str(o, "level");
	if (name) {
		for (i = 0; i < sizeof(levels) / sizeof(levels[0]) &&
			    strcasecmp(levels[i].name, name);
		     i++)
			;
		if (i == sizeof(levels) / sizeof(levels[0]))
			return body__err(e, "Invalid LevelFilter `%.32s`",
					 name);
		level = levels[i].level;
	}
	return control__set_logger(c, body__str(o, "log_path"), level, e);
}

int body__metrics(struct control *c, json_t *o, struct control_err *e)
{
	static const struct body_field f[] = {
		{ "metrics_path", T_STR, true, false },
	};
	int ret = BODY_CHECK(o, f, BODY_UNKNOWN_OK, e);

	return ret ? ret :
		     control__set_metrics(c, body__str(o, "metrics_path"), e);
}

int body__snapshot_create(struct control *c, json_t *o, struct control_err *e)
{
	static const struct body_field f[] = {
		{ "snapshot_type", T_STR, false, true },
		{ "snapshot_path", T_STR, true, false },
		{ "mem_file_path", T_STR, true, false },
		{ "version", T_STR, false, true },
		{ "compress", T_BOOL, false, true },
	};
	struct control_snapshot_create req = { 0 };
	const char *type;
	int ret = BODY_CHECK(o, f, 0, e);

	if (ret)
		return ret;
	type = body__str(o, "snapshot_type");
	ret = body__either(type, "Full", "Diff", e);
	if (ret)
		return ret;
	req.snapshot_path = body__str(o, "snapshot_path");
	req.mem_file_path = body__str(o, "mem_file_path");
	req.diff = type && !strcmp(type, "Diff");
	req.compress = body__bool(o, "compress", false);
	if (!req.snapshot_path[0] || !req.mem_file_path[0])
		return body__refuse(e, "Create snapshot error: snapshot_path "
				       "and mem_file_path must not be empty.");
	return control__snapshot_create(c, &req, e);
}

/*
 * An overrides array of snapshot/load, @name: [{@id_key, @val_key}, ...]
 * (both strings, required), at most @max, into @ids, @vals and *@nr.
 */
static int body__overrides(json_t *a, const char *name, const char *id_key,
			   const char *val_key, unsigned int max,
			   const char **ids, const char **vals,
			   unsigned int *nr, struct control_err *e)
{
	const struct body_field f[] = {
		{ id_key, T_STR, true, false },
		{ val_key, T_STR, true, false },
	};
	json_t *d;
	size_t i;
	int ret;

	if (!json_is_array(a))
		return body__err(e,
				 "invalid type: %s, expected a sequence for %s",
				 body__json_name(a), name);
	if (json_array_size(a) > max)
		return body__err(e, "at most %u %s", max, name);
	json_array_foreach(a, i, d)
	{
		ret = BODY_CHECK(d, f, 0, e);
		if (ret)
			return ret;
		ids[i] = body__str(d, id_key);
		vals[i] = body__str(d, val_key);
	}
	*nr = (unsigned int)json_array_size(a);
	return 0;
}

int body__snapshot_load(struct control *c, json_t *o, struct control_err *e)
{
	static const struct body_field f[] = {
		{ "snapshot_path", T_STR, true, false },
		{ "mem_file_path", T_STR, false, true },
		{ "mem_backend", T_ANY, false, true },
		{ "enable_diff_snapshots", T_BOOL, false, true },
		{ "track_dirty_pages", T_BOOL, false, true },
		{ "resume_vm", T_BOOL, false, true },
		{ "network_overrides", T_ANY, false, true },
		{ "vsock_override", T_ANY, false, true },
		{ "drive_overrides", T_ANY, false, true },
	};
	static const struct body_field backend[] = {
		{ "backend_type", T_STR, true, false },
		{ "backend_path", T_STR, true, false },
	};
	static const struct body_field vsock[] = {
		{ "uds_path", T_STR, true, false },
	};
	struct control_snapshot_load req = { 0 };
	json_t *mb, *v, *n, *d;
	const char *type;
	int ret = BODY_CHECK(o, f, 0, e);

	if (ret)
		return ret;
	req.snapshot_path = body__str(o, "snapshot_path");
	mb = body__get(o, "mem_backend");
	if (!mb == !body__get(o, "mem_file_path"))
		return body__refuse(e, "Load snapshot error: give either "
				       "mem_backend or the deprecated "
				       "mem_file_path (one of them).");
	if (mb) {
		ret = BODY_CHECK(mb, backend, 0, e);
		if (ret)
			return ret;
		type = body__str(mb, "backend_type");
		ret = body__either(type, "File", "Uffd", e);
		if (ret)
			return ret;
		req.uffd = !strcmp(type, "Uffd");
		req.mem_backend_path = body__str(mb, "backend_path");
	} else {
		req.mem_backend_path = body__str(o, "mem_file_path");
	}
	req.resume_vm = body__bool(o, "resume_vm", false);
	v = body__get(o, "vsock_override");
	if (v) {
		ret = BODY_CHECK(v, vsock, 0, e);
		if (ret)
			return ret;
		req.vsock_uds_path = body__str(v, "uds_path");
	}
	n = body__get(o, "network_overrides");
	if (n) {
		ret = body__overrides(n, "network_overrides", "iface_id",
				      "host_dev_name", CONFIG_MAX_NETS,
				      req.net_iface_id, req.net_tap,
				      &req.nr_net_overrides, e);
		if (ret)
			return ret;
	}
	d = body__get(o, "drive_overrides");
	if (d) {
		ret = body__overrides(d, "drive_overrides", "drive_id",
				      "path_on_host", CONTROL_MAX_OVERRIDES,
				      req.drive_id, req.drive_path,
				      &req.nr_drive_overrides, e);
		if (ret)
			return ret;
	}
	if (!req.snapshot_path[0] || !req.mem_backend_path[0])
		return body__refuse(e, "Load snapshot error: snapshot_path and "
				       "the memory backend's path must not be "
				       "empty.");
	return control__snapshot_load(c, &req, e);
}
