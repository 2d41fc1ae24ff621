// SPDX-License-Identifier: Apache-2.0
/*
 * The OCI runtime spec, as far as ember's containerd shim honours it
 * (oci_spec.h).  Pure.
 */
#include "oci_spec.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/*
 * Make the absolute path @p lexically clean, in place, as runc joins a
 * mount's destination to the root: no "." or ".." (kept at "/", so the
 * path cannot leave the container's root), no doubled or trailing '/'.
 */
static void clean_path(char *p)
{
	char *r = p + 1, *w = p + 1, *end = p + strlen(p), *seg;
	size_t n;

	/* w never passes r: a '/' written at r is the one read there. */
	while (r < end) {
		while (r < end && *r == '/')
			r++;
		seg = r;
		while (r < end && *r != '/')
			r++;
		n = (size_t)(r - seg);
		if (!n || (n == 1 && seg[0] == '.'))
			continue;
		if (n == 2 && seg[0] == '.' && seg[1] == '.') {
			/* back over the last segment written */
			if (w > p + 1)
				w--;
			while (w > p + 1 && w[-1] != '/')
				w--;
			continue;
		}
		memmove(w, seg, n);
		w += n;
		*w++ = '/';
	}
	if (w > p + 1)
		w--; /* the trailing '/' */
	*w = '\0';
}

static const struct {
	const char *name;
	int nr;
} rlimit_names[] = {
	{ "RLIMIT_CPU", RLIMIT_CPU },
	{ "RLIMIT_FSIZE", RLIMIT_FSIZE },
	{ "RLIMIT_DATA", RLIMIT_DATA },
	{ "RLIMIT_STACK", RLIMIT_STACK },
	{ "RLIMIT_CORE", RLIMIT_CORE },
	{ "RLIMIT_RSS", RLIMIT_RSS },
	{ "RLIMIT_NPROC", RLIMIT_NPROC },
	{ "RLIMIT_NOFILE", RLIMIT_NOFILE },
	{ "RLIMIT_MEMLOCK", RLIMIT_MEMLOCK },
	{ "RLIMIT_AS", RLIMIT_AS },
	{ "RLIMIT_LOCKS", RLIMIT_LOCKS },
	{ "RLIMIT_SIGPENDING", RLIMIT_SIGPENDING },
	{ "RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE },
	{ "RLIMIT_NICE", RLIMIT_NICE },
	{ "RLIMIT_RTPRIO", RLIMIT_RTPRIO },
	{ "RLIMIT_RTTIME", RLIMIT_RTTIME },
};

int oci_rlimit__number(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(rlimit_names) / sizeof(rlimit_names[0]); i++)
		if (!strcmp(name, rlimit_names[i].name))
			return rlimit_names[i].nr;
	return -EINVAL;
}

/* A string member: NULL when absent; -EINVAL when not a string. */
static int get_str(const json_t *o, const char *key, const char *where,
		   const char **out, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return fail(err, errlen, -EINVAL, "%s.%s: not a string", where,
			    key);
	*out = json_string_value(v);
	if (strlen(*out) != json_string_length(v))
		return fail(err, errlen, -EINVAL, "%s.%s: a NUL in it", where,
			    key);
	return 0;
}

/* A non-negative integer member (0 when absent). */
static int get_u64(const json_t *o, const char *key, const char *where,
		   uint64_t max, uint64_t *out, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);

	*out = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) > max)
		return fail(err, errlen, -EINVAL,
			    "%s.%s: not an integer from 0 to %llu", where, key,
			    (unsigned long long)max);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

/* A NULL-terminated copy of the string array @a (absent: an empty one). */
static int str_array(const json_t *a, const char *where, size_t max,
		     char ***out, char *err, size_t errlen)
{
	size_t i, n = 0;
	json_t *v;

	if (a && !json_is_null(a) && !json_is_array(a))
		return fail(err, errlen, -EINVAL, "%s: not an array", where);
	if (a && json_is_array(a))
		n = json_array_size(a);
	if (n > max)
		return fail(err, errlen, -E2BIG, "%s: over %zu entries", where,
			    max);
	*out = calloc(n + 1, sizeof(char *));
	if (!*out)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		v = json_array_get(a, i);
		if (!json_is_string(v) ||
		    strlen(json_string_value(v)) != json_string_length(v))
			return fail(err, errlen, -EINVAL,
				    "%s[%zu]: not a string", where, i);
		(*out)[i] = strdup(json_string_value(v));
		if (!(*out)[i])
			return -ENOMEM;
	}
	return 0;
}

static void str_array_free(char **a)
{
	size_t i;

	if (!a)
		return;
	for (i = 0; a[i]; i++)
		free(a[i]);
	free(a);
}

static int parse_rlimits(const json_t *a, struct oci_process *p, char *err,
			 size_t errlen)
{
	size_t i;
	json_t *r;

	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a))
		return fail(err, errlen, -EINVAL,
			    "process.rlimits: not an array");
	if (json_array_size(a) > OCI_MAX_RLIMITS)
		return fail(err, errlen, -E2BIG,
			    "process.rlimits: over %d entries",
			    OCI_MAX_RLIMITS);
	json_array_foreach(a, i, r)
	{
		struct oci_rlimit *l = &p->rlimits[p->nr_rlimits];
		const char *type;
		char where[48];
		int nr, rc;

		snprintf(where, sizeof(where), "process.rlimits[%zu]", i);
		if (!json_is_object(r))
			return fail(err, errlen, -EINVAL, "%s: not an object",
				    where);
		rc = get_str(r, "type", where, &type, err, errlen);
		if (rc)
			return rc;
		nr = type ? oci_rlimit__number(type) : -EINVAL;
		if (nr < 0)
			return fail(err, errlen, -EINVAL,
				    "%s.type: not an RLIMIT_ name", where);
		l->resource = (uint32_t)nr;
		rc = get_u64(r, "soft", where, UINT64_MAX, &l->soft, err,
			     errlen);
		if (!rc)
			rc = get_u64(r, "hard", where, UINT64_MAX, &l->hard,
				     err, errlen);
		if (rc)
			return rc;
		if (l->soft > l->hard)
			return fail(err, errlen, -EINVAL, "%s: soft over hard",
				    where);
		p->nr_rlimits++;
	}
	return 0;
}

static int parse_process(const json_t *o, struct oci_process *p, char *err,
			 size_t errlen)
{
	const json_t *user, *size, *v;
	const char *cwd;
	uint64_t n;
	size_t i;
	int rc;

	memset(p, 0, sizeof(*p));
	if (!json_is_object(o))
		return fail(err, errlen, -EINVAL, "process: not an object");
	v = json_object_get(o, "terminal");
	if (v && !json_is_boolean(v))
		return fail(err, errlen, -EINVAL,
			    "process.terminal: not a boolean");
	p->terminal = v && json_is_true(v);
	size = json_object_get(o, "consoleSize");
	if (size && json_is_object(size)) {
		rc = get_u64(size, "height", "process.consoleSize", 65535, &n,
			     err, errlen);
		if (rc)
			return rc;
		p->rows = (uint16_t)n;
		rc = get_u64(size, "width", "process.consoleSize", 65535, &n,
			     err, errlen);
		if (rc)
			return rc;
		p->cols = (uint16_t)n;
	}
	rc = str_array(json_object_get(o, "args"), "process.args", OCI_MAX_ARGS,
		       &p->args, err, errlen);
	if (rc)
		return rc;
	if (!p->args[0] || !p->args[0][0])
		return fail(err, errlen, -EINVAL,
			    "process.args: nothing to run");
	rc = str_array(json_object_get(o, "env"), "process.env", OCI_MAX_ENV,
		       &p->env, err, errlen);
	if (rc)
		return rc;
	for (i = 0; p->env[i]; i++)
		if (!strchr(p->env[i], '=') || p->env[i][0] == '=')
			return fail(err, errlen, -EINVAL,
				    "process.env[%zu]: not NAME=value", i);
	rc = get_str(o, "cwd", "process", &cwd, err, errlen);
	if (rc)
		return rc;
	if (!cwd || cwd[0] != '/')
		return fail(err, errlen, -EINVAL,
			    "process.cwd: not an absolute path");
	p->cwd = strdup(cwd);
	if (!p->cwd)
		return -ENOMEM;
	user = json_object_get(o, "user");
	if (user && !json_is_object(user))
		return fail(err, errlen, -EINVAL,
			    "process.user: not an object");
	if (user) {
		rc = get_u64(user, "uid", "process.user", UINT32_MAX - 1, &n,
			     err, errlen);
		if (rc)
			return rc;
		p->uid = (uint32_t)n;
		rc = get_u64(user, "gid", "process.user", UINT32_MAX - 1, &n,
			     err, errlen);
		if (rc)
			return rc;
		p->gid = (uint32_t)n;
		v = json_object_get(user, "additionalGids");
		if (v && !json_is_null(v)) {
			if (!json_is_array(v))
				return fail(err, errlen, -EINVAL,
					    "process.user.additionalGids: "
					    "not an array");
			if (json_array_size(v) > OCI_MAX_GIDS)
				return fail(err, errlen, -E2BIG,
					    "process.user.additionalGids: "
					    "over %d",
					    OCI_MAX_GIDS);
			for (i = 0; i < json_array_size(v); i++) {
				json_t *g = json_array_get(v, i);

				if (!json_is_integer(g) ||
				    json_integer_value(g) < 0 ||
				    json_integer_value(g) >= UINT32_MAX)
					return fail(err, errlen, -EINVAL,
						    "process.user."
						    "additionalGids[%zu]: "
						    "not a gid",
						    i);
				p->gids[p->nr_gids++] =
					(uint32_t)json_integer_value(g);
			}
		}
		if (json_object_get(user, "username") &&
		    !json_object_get(user, "uid"))
			return fail(err, errlen, -ENOTSUP,
				    "process.user.username: a user by name "
				    "(Windows) is not supported");
	}
	return parse_rlimits(json_object_get(o, "rlimits"), p, err, errlen);
}

void oci_process__free(struct oci_process *p)
{
	str_array_free(p->args);
	str_array_free(p->env);
	free(p->cwd);
	memset(p, 0, sizeof(*p));
}

int oci_process__parse(const char *text, size_t len, struct oci_process *p,
		       char *err, size_t errlen)
{
	json_error_t je;
	json_t *o;
	int rc;

	memset(p, 0, sizeof(*p));
	o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return fail(err, errlen, -EINVAL, "process spec: %s", je.text);
	rc = parse_process(o, p, err, errlen);
	json_decref(o);
	return rc;
}

static int parse_mount(const json_t *m, size_t at, struct oci_mount *out,
		       char *err, size_t errlen)
{
	const char *dest, *type, *src;
	char where[32];
	size_t i;
	json_t *opts, *v;
	int rc;

	snprintf(where, sizeof(where), "mounts[%zu]", at);
	if (!json_is_object(m))
		return fail(err, errlen, -EINVAL, "%s: not an object", where);
	rc = get_str(m, "destination", where, &dest, err, errlen);
	if (!rc)
		rc = get_str(m, "type", where, &type, err, errlen);
	if (!rc)
		rc = get_str(m, "source", where, &src, err, errlen);
	if (rc)
		return rc;
	if (!dest || dest[0] != '/')
		return fail(err, errlen, -EINVAL,
			    "%s.destination: not an absolute path", where);
	out->destination = strdup(dest);
	if (out->destination)
		clean_path(out->destination);
	out->type = strdup(type ? type : "");
	out->source = strdup(src ? src : "");
	if (!out->destination || !out->type || !out->source)
		return -ENOMEM;
	out->bind = !strcmp(out->type, "bind");
	opts = json_object_get(m, "options");
	if (opts && !json_is_null(opts) && !json_is_array(opts))
		return fail(err, errlen, -EINVAL, "%s.options: not an array",
			    where);
	if (opts && json_array_size(opts) > OCI_MAX_OPTS)
		return fail(err, errlen, -E2BIG, "%s.options: over %d", where,
			    OCI_MAX_OPTS);
	for (i = 0; opts && i < json_array_size(opts); i++) {
		v = json_array_get(opts, i);
		if (!json_is_string(v) ||
		    strlen(json_string_value(v)) != json_string_length(v))
			return fail(err, errlen, -EINVAL,
				    "%s.options[%zu]: not a string", where, i);
		out->options[i] = strdup(json_string_value(v));
		if (!out->options[i])
			return -ENOMEM;
		if (!strcmp(out->options[i], "bind") ||
		    !strcmp(out->options[i], "rbind"))
			out->bind = true;
		if (!strcmp(out->options[i], "ro"))
			out->readonly = true;
	}
	return 0;
}

/* Refuse what a microVM cannot honour; see oci_spec.h. */
static int check_linux(const json_t *lx, char *err, size_t errlen)
{
	static const char *const needed[] = { "network", "pid", "ipc" };
	const json_t *ns, *devs;
	bool have[3] = { false, false, false };
	size_t i, k;
	json_t *n;

	if (!lx || json_is_null(lx))
		return 0;
	if (!json_is_object(lx))
		return fail(err, errlen, -EINVAL, "linux: not an object");
	devs = json_object_get(lx, "devices");
	if (devs && json_is_array(devs) && json_array_size(devs))
		return fail(err, errlen, -ENOTSUP,
			    "linux.devices: a microVM has no host devices "
			    "(a privileged container, or --device): not "
			    "supported by the ember runtime");
	ns = json_object_get(lx, "namespaces");
	if (!ns || json_is_null(ns))
		return 0;
	if (!json_is_array(ns))
		return fail(err, errlen, -EINVAL,
			    "linux.namespaces: not an array");
	json_array_foreach(ns, i, n)
	{
		const char *type =
			json_string_value(json_object_get(n, "type"));

		if (!type)
			return fail(err, errlen, -EINVAL,
				    "linux.namespaces[%zu].type: not a string",
				    i);
		for (k = 0; k < 3; k++)
			if (!strcmp(type, needed[k]))
				have[k] = true;
	}
	for (k = 0; k < 3; k++)
		if (!have[k])
			return fail(err, errlen, -ENOTSUP,
				    "linux.namespaces: no %s namespace: the "
				    "host's %s namespace%s is not "
				    "supported by the ember runtime (the "
				    "container runs in a microVM)",
				    needed[k], needed[k],
				    k == 0 ? " (--net-host)" : "");
	return 0;
}

static int parse_resources(const json_t *lx, struct oci_spec *s, char *err,
			   size_t errlen)
{
	const json_t *res, *mem, *cpu, *lim;
	int rc;

	res = lx ? json_object_get(lx, "resources") : NULL;
	if (!res || !json_is_object(res))
		return 0;
	mem = json_object_get(res, "memory");
	if (mem && json_is_object(mem)) {
		lim = json_object_get(mem, "limit");
		/* -1 (and any negative) is "no limit" in runtime-spec. */
		if (lim && json_is_integer(lim) && json_integer_value(lim) > 0)
			s->mem_limit = (uint64_t)json_integer_value(lim);
		else if (lim && !json_is_null(lim) && !json_is_integer(lim))
			return fail(err, errlen, -EINVAL,
				    "linux.resources.memory.limit: not an "
				    "integer");
	}
	cpu = json_object_get(res, "cpu");
	if (cpu && json_is_object(cpu)) {
		lim = json_object_get(cpu, "quota");
		if (lim && json_is_integer(lim) && json_integer_value(lim) > 0)
			s->cpu_quota = (uint64_t)json_integer_value(lim);
		rc = get_u64(cpu, "period", "linux.resources.cpu", UINT32_MAX,
			     &s->cpu_period, err, errlen);
		if (rc)
			return rc;
	}
	if (!s->cpu_period)
		s->cpu_period = 100000;
	return 0;
}

int oci_spec__parse(const char *text, size_t len, struct oci_spec *s, char *err,
		    size_t errlen)
{
	const json_t *root, *mounts, *ann, *lx, *hooks;
	const char *str;
	json_error_t je;
	json_t *o, *m, *v;
	size_t i;
	int rc;

	memset(s, 0, sizeof(*s));
	o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return fail(err, errlen, -EINVAL, "config.json: line %d: %s",
			    je.line, je.text);
	rc = -EINVAL;
	if (!json_is_object(o)) {
		fail(err, errlen, rc, "config.json: not an object");
		goto out;
	}
	v = json_object_get(o, "process");
	if (!v) {
		fail(err, errlen, rc, "process: missing");
		goto out;
	}
	rc = parse_process(v, &s->process, err, errlen);
	if (rc)
		goto out;
	root = json_object_get(o, "root");
	if (root && json_is_object(root)) {
		rc = get_str(root, "path", "root", &str, err, errlen);
		if (rc)
			goto out;
		s->root_path = strdup(str ? str : "rootfs");
		v = json_object_get(root, "readonly");
		s->root_readonly = v && json_is_true(v);
	} else {
		s->root_path = strdup("rootfs");
	}
	rc = -ENOMEM;
	if (!s->root_path)
		goto out;
	rc = get_str(o, "hostname", "", &str, err, errlen);
	if (rc)
		goto out;
	if (str && !(s->hostname = strdup(str))) {
		rc = -ENOMEM;
		goto out;
	}
	mounts = json_object_get(o, "mounts");
	if (mounts && !json_is_null(mounts) && !json_is_array(mounts)) {
		rc = fail(err, errlen, -EINVAL, "mounts: not an array");
		goto out;
	}
	if (mounts && json_array_size(mounts) > OCI_MAX_MOUNTS) {
		rc = fail(err, errlen, -E2BIG, "mounts: over %d",
			  OCI_MAX_MOUNTS);
		goto out;
	}
	json_array_foreach(mounts, i, m)
	{
		rc = parse_mount(m, i, &s->mounts[i], err, errlen);
		s->nr_mounts = i + 1;
		if (rc)
			goto out;
	}
	hooks = json_object_get(o, "hooks");
	if (hooks && json_is_object(hooks) && json_object_size(hooks)) {
		const char *k;

		json_object_foreach((json_t *)hooks, k, v)
		{
			if (json_is_array(v) && json_array_size(v)) {
				rc = fail(err, errlen, -ENOTSUP,
					  "hooks.%s: OCI hooks run on the "
					  "host's side of a container, which "
					  "the ember runtime does not have",
					  k);
				goto out;
			}
		}
	}
	lx = json_object_get(o, "linux");
	rc = check_linux(lx, err, errlen);
	if (!rc)
		rc = parse_resources(lx, s, err, errlen);
	if (rc)
		goto out;
	ann = json_object_get(o, "annotations");
	if (ann && json_is_object(ann)) {
		rc = get_str(ann, OCI_ANN_CONTAINER_TYPE, "annotations", &str,
			     err, errlen);
		if (!rc && str && !(s->container_type = strdup(str)))
			rc = -ENOMEM;
		if (!rc)
			rc = get_str(ann, OCI_ANN_SANDBOX_ID, "annotations",
				     &str, err, errlen);
		if (!rc && str && !(s->sandbox_id = strdup(str)))
			rc = -ENOMEM;
	}
out:
	json_decref(o);
	return rc;
}

void oci_spec__free(struct oci_spec *s)
{
	size_t i, k;

	oci_process__free(&s->process);
	free(s->root_path);
	free(s->hostname);
	for (i = 0; i < s->nr_mounts; i++) {
		free(s->mounts[i].destination);
		free(s->mounts[i].type);
		free(s->mounts[i].source);
		for (k = 0; s->mounts[i].options[k]; k++)
			free(s->mounts[i].options[k]);
	}
	free(s->container_type);
	free(s->sandbox_id);
	memset(s, 0, sizeof(*s));
}

void oci_spec__vm_size(const struct oci_spec *s, unsigned int min_mib,
		       unsigned int *mem_mib, unsigned int *vcpus)
{
	uint64_t mib, n;

	*mem_mib = 0;
	*vcpus = 0;
	if (s->mem_limit) {
		mib = (s->mem_limit + (1 << 20) - 1) >> 20;
		if (mib < min_mib)
			mib = min_mib;
		*mem_mib = mib > 1048576 ? 1048576 : (unsigned int)mib;
	}
	if (s->cpu_quota && s->cpu_period) {
		n = (s->cpu_quota + s->cpu_period - 1) / s->cpu_period;
		*vcpus = n < 1 ? 1 : n > 32 ? 32 : (unsigned int)n;
	}
}
