// SPDX-License-Identifier: Apache-2.0
/* A JSON Schema subset, enough for the tools' arguments (schema.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../sandbox/utf8.h"
#include "schema.h"

#define MAX_DEPTH 16 /* of nested schemas: ours are 3 deep */

static int fail(char *err, size_t errlen, const char *where, const char *what)
{
	snprintf(err, errlen, "%s: %s", where, what);
	return -EINVAL;
}

static int type_is(const char *t, const json_t *v)
{
	if (!strcmp(t, "object"))
		return json_is_object(v);
	if (!strcmp(t, "array"))
		return json_is_array(v);
	if (!strcmp(t, "string"))
		return json_is_string(v);
	if (!strcmp(t, "integer"))
		return json_is_integer(v) ||
		       (json_is_real(v) &&
			json_real_value(v) == floor(json_real_value(v)));
	if (!strcmp(t, "number"))
		return json_is_number(v);
	if (!strcmp(t, "boolean"))
		return json_is_boolean(v);
	if (!strcmp(t, "null"))
		return json_is_null(v);
	return 0;
}

static int check_type(const json_t *type, const json_t *v, const char *where,
		      char *err, size_t errlen)
{
	char what[128];
	size_t i;
	json_t *t;

	if (!type)
		return 0;
	if (json_is_string(type)) {
		if (type_is(json_string_value(type), v))
			return 0;
		snprintf(what, sizeof(what), "must be %s %s",
			 strchr("aeiou", json_string_value(type)[0]) ? "an" :
								       "a",
			 json_string_value(type));
		return fail(err, errlen, where, what);
	}
	json_array_foreach(type, i,
			   t) if (json_is_string(t) &&
				  type_is(json_string_value(t), v)) return 0;
	return fail(err, errlen, where, "has the wrong type");
}

static int check(const json_t *schema, const json_t *v, const char *where,
		 int depth, char *err, size_t errlen);

static int check_object(const json_t *schema, const json_t *v,
			const char *where, int depth, char *err, size_t errlen)
{
	const json_t *props = json_object_get(schema, "properties");
	const json_t *extra = json_object_get(schema, "additionalProperties");
	const json_t *req = json_object_get(schema, "required"), *sub, *r;
	char path[256], what[160];
	const char *key;
	json_t *val;
	size_t i;
	int rc;

	json_array_foreach(req, i, r)
	{
		if (json_is_string(r) &&
		    !json_object_get(v, json_string_value(r))) {
			snprintf(what, sizeof(what), "missing \"%.100s\"",
				 json_string_value(r));
			return fail(err, errlen, where, what);
		}
	}
	json_object_foreach((json_t *)v, key, val)
	{
		snprintf(path, sizeof(path), "%.120s.%.120s", where, key);
		if (!utf8__ok(path, strlen(path)))
			snprintf(path, sizeof(path), "%.120s.?", where);
		sub = json_object_get(props, key);
		if (!sub && json_is_false(extra)) {
			snprintf(what, sizeof(what),
				 "unknown member \"%.100s\"", key);
			if (!utf8__ok(what, strlen(what)))
				snprintf(what, sizeof(what), "unknown member");
			return fail(err, errlen, where, what);
		}
		if (!sub && json_is_object(extra))
			sub = extra;
		if (!sub)
			continue;
		rc = check(sub, val, path, depth + 1, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

static int check(const json_t *schema, const json_t *v, const char *where,
		 int depth, char *err, size_t errlen)
{
	const json_t *e, *x;
	char what[160], path[256];
	size_t i;
	int rc;

	if (depth > MAX_DEPTH || !json_is_object(schema))
		return fail(err, errlen, where, "bad schema");
	rc = check_type(json_object_get(schema, "type"), v, where, err, errlen);
	if (rc)
		return rc;
	e = json_object_get(schema, "enum");
	if (json_is_array(e)) {
		json_array_foreach(e, i,
				   x) if (json_equal(x, (json_t *)v)) break;
		if (i == json_array_size(e)) {
			snprintf(what, sizeof(what), "must be one of ");
			json_array_foreach(e, i, x) if (json_is_string(x))
				snprintf(what + strlen(what),
					 sizeof(what) - strlen(what), "%s%s",
					 i ? ", " : "", json_string_value(x));
			return fail(err, errlen, where, what);
		}
	}
	if (json_is_number(v)) {
		x = json_object_get(schema, "minimum");
		if (json_is_number(x) &&
		    json_number_value(v) < json_number_value(x)) {
			snprintf(what, sizeof(what), "must be at least %g",
				 json_number_value(x));
			return fail(err, errlen, where, what);
		}
		x = json_object_get(schema, "maximum");
		if (json_is_number(x) &&
		    json_number_value(v) > json_number_value(x)) {
			snprintf(what, sizeof(what), "must be at most %g",
				 json_number_value(x));
			return fail(err, errlen, where, what);
		}
	}
	if (json_is_string(v)) {
		x = json_object_get(schema, "minLength");
		if (json_is_integer(x) &&
		    json_string_length(v) < (size_t)json_integer_value(x))
			return fail(err, errlen, where, "is too short");
		x = json_object_get(schema, "maxLength");
		if (json_is_integer(x) &&
		    json_string_length(v) > (size_t)json_integer_value(x))
			return fail(err, errlen, where, "is too long");
	}
	if (json_is_object(v))
		return check_object(schema, v, where, depth, err, errlen);
	x = json_object_get(schema, "items");
	if (json_is_array(v) && x) {
		json_array_foreach(v, i, e)
		{
			snprintf(path, sizeof(path), "%.200s[%zu]", where, i);
			rc = check(x, e, path, depth + 1, err, errlen);
			if (rc)
				return rc;
		}
	}
	return 0;
}

int schema__check(const json_t *schema, const json_t *v, const char *where,
		  char *err, size_t errlen)
{
	return check(schema, v, where, 0, err, errlen);
}
