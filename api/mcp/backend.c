// SPDX-License-Identifier: Apache-2.0
/*
 * Tool handlers on the sandbox library (backend.h): the same calls
 * emberctl makes (sandbox.h, template.h, agent_client.h) and the code
 * interpreter's client (interp_client.h).  A guest's output is captured
 * in memfds, cut at OUT_MAX bytes, and turned into valid UTF-8.  The
 * sandboxes a session may touch are its roster (roster.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../guest-init/protocol.h"
#include "../sandbox/agent_client.h"
#include "../sandbox/base64.h"
#include "../sandbox/expose.h"
#include "../sandbox/clock.h"
#include "../sandbox/guest_fs.h"
#include "../sandbox/guest_run.h"
#include "../sandbox/interp_client.h"
#include "../sandbox/net.h"
#include "../sandbox/sandbox.h"
#include "../sandbox/template.h"
#include "../sandbox/utf8.h"
#include "backend.h"
#include "roster.h"
#include "../sandbox/pool.h"

#define CONNECT_MS 60000 /* until the agent answers a PING */
#define INTERP_START_MS \
	300000 /* starting an interpreter that is not warm:
				  ~2 min in a fresh guest on a PVM host */
#define DEF_TIMEOUT_MS 300000 /* run_code, run_command without timeout */
#define FILE_IDLE_MS   120000 /* a transfer with no byte moving */
#define OUT_MAX	       (16u << 20) /* bytes of stdout (stderr) kept */
#define READ_MAX       (16u << 20) /* bytes read_file returns */
#define EXIT_TIMEOUT   124

struct backend {
	struct backend_opts o;
	struct roster *r; /* the sandboxes it made */
	struct pool *pool; /* idle connections to them (the session's) */
};

struct backend *backend__new(const struct backend_opts *o)
{
	struct backend *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->o = *o;
	b->r = roster__new(o->principal, o->kill_on_disconnect);
	if (!b->r) {
		free(b);
		return NULL;
	}
	b->pool = roster__pool(b->r);
	return b;
}

void backend__free(struct backend *b)
{
	if (!b)
		return;
	roster__free(b->r);
	free(b);
}

void backend__end(struct backend *b)
{
	roster__end(b->r);
}

void backend__prune(struct backend *b)
{
	pool__prune(roster__pool(b->r));
}

/* --- the guest agent --------------------------------------------------- */

/*
 * The guest user of a tool call: its `user` argument (the agent's USER),
 * or NULL: the guest's default user (the image's, else root).
 */
static const char *arg_user(const json_t *args)
{
	return json_string_value(json_object_get(args, "user"));
}

/*
 * Whether the files of a call as @user (arg_user()) in @sb are root's:
 * "root", or no user in a sandbox whose template records no default user
 * (ember's own rootfs: root).  Those go through the agent's WRITE_FILE
 * and READ_FILE (as root); others through commands run as the user.
 */
static bool files_as_root(const struct sandbox_info *sb, const char *user)
{
	struct template_info t;
	char err[256];

	if (user)
		return !strcmp(user, "root") || !strcmp(user, "0");
	return !sb->template_name[0] ||
	       template__open(sb->template_name, &t, NULL, err, sizeof(err)) ||
	       !t.user[0];
}

/* What an exec left: its output and how it ended. */
struct captured {
	json_t *out, *err; /* JSON strings */
	struct agent_exec_result res;
	int guest_errno; /* of a command that could not start */
};

/*
 * Run @argv in @sb as @user (NULL: the guest's default) through an agent
 * connection from the pool, @env (NULL: none) over the guest's default
 * environment, capturing stdout and stderr (guest_run__capture()).  0 with @cap filled (release
 * its strings), -EREMOTEIO when the command could not start
 * (cap->guest_errno), or another negative errno with @err.
 */
static int capture(struct backend *b, const struct sandbox_info *sb,
		   const char *const *argv, const char *const *env,
		   const char *cwd, const char *user, uint32_t timeout_ms,
		   struct captured *cap, char *err, size_t errlen)
{
	const struct guest_cmd cmd = {
		.argv = argv,
		.env = env,
		.env_add = true,
		.cwd = cwd,
		.user = user,
		.timeout_ms = timeout_ms,
		.out_max = OUT_MAX,
	};
	struct guest_output o;
	int rc;

	memset(cap, 0, sizeof(*cap));
	rc = guest_run__capture(b->pool, sb, CONNECT_MS, &cmd, &o, err, errlen);
	cap->res = o.res;
	cap->guest_errno = o.guest_errno;
	if (rc < 0)
		return rc;
	cap->out = utf8__json(o.out, o.outlen);
	cap->err = utf8__json(o.err, o.errlen);
	guest_run__release(&o);
	if (!cap->out || !cap->err) {
		json_decref(cap->out);
		json_decref(cap->err);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* Seconds (a JSON number, optional) as milliseconds, at least 1. */
static uint32_t timeout_ms(const json_t *args)
{
	const json_t *t = json_object_get(args, "timeout");
	double ms;

	if (!json_is_number(t))
		return DEF_TIMEOUT_MS;
	ms = json_number_value(t) * 1000;
	return ms < 1 ? 1 : (uint32_t)ms;
}

/* --- create_sandbox ---------------------------------------------------- */

static json_t *create_sandbox(struct backend *b, const json_t *args)
{
	const json_t *jt = json_object_get(args, "template");
	const json_t *jm = json_object_get(args, "memory_mib");
	const json_t *jc = json_object_get(args, "vcpus");
	const json_t *jto = json_object_get(args, "timeout");
	const json_t *jn = json_object_get(args, "network");
	const char *tname = jt ? json_string_value(jt) : b->o.template_name;
	struct sandbox_opts o = {
		.ember = b->o.ember,
		.mem_mib = SANDBOX_DEF_MEM,
		.vcpus = 1,
		.ttl_s = (unsigned int)tools__int(jto, b->o.ttl_s),
		.boot_timeout_s = SANDBOX_DEF_BOOT_S,
	};
	char id[SANDBOX_ID_LEN + 1], err[4096], why_buf[512];
	struct sandbox_info info;
	struct template_info t;
	const char *why = NULL;
	int rc;

	if (template__name_ok(tname, err, sizeof(err)))
		return tools__fail("%s", err);
	/* The schema lets only the three words through. */
	if (jn && net__mode_parse(json_string_value(jn), &o.net_mode))
		return tools__fail("network: none, nat or host-only");
	if (template__open(tname, &t, NULL, err, sizeof(err)) == 0) {
		o.mem_mib = t.mem_mib;
		o.vcpus = t.vcpus;
	} else if (jt) {
		return tools__fail("%s", err);
	} else {
		why = "the default template does not exist";
	}
	/* Integers as schema__check() took them: 256.0 too. */
	if (jm && (unsigned int)tools__int(jm, 0) != o.mem_mib) {
		o.mem_mib = (unsigned int)tools__int(jm, 0);
		why = "memory_mib differs from the template";
	}
	if (jc && (unsigned int)tools__int(jc, 0) != o.vcpus) {
		o.vcpus = (unsigned int)tools__int(jc, 0);
		why = "vcpus differs from the template";
	}
	if (!why) {
		o.template_name = tname;
	} else if (!b->o.kernel || !*b->o.kernel || !b->o.rootfs ||
		   !*b->o.rootfs) {
		return tools__fail("cannot boot a sandbox (%s): no kernel or "
				   "rootfs (ember-mcp --kernel, --rootfs)",
				   why);
	} else {
		o.kernel = b->o.kernel;
		o.rootfs = b->o.rootfs;
	}
	rc = sandbox__run(&o, id, err, sizeof(err));
	if (rc < 0)
		return tools__fail("creating a sandbox: %s", err);
	rc = roster__add(b->r, id, o.ttl_s, err, sizeof(err));
	if (rc == -ENOENT)
		return tools__fail("sandbox %s: %s", id, err);
	if (rc < 0) {
		if (sandbox__find(id, &info, why_buf, sizeof(why_buf)) == 0)
			sandbox__kill(&info, why_buf, sizeof(why_buf));
		return tools__fail("sandbox %s: %s", id, err);
	}
	return tools__ok(json_pack("{s:s, s:s?, s:i, s:i, s:i, s:s}",
				   "sandbox_id", id, "template",
				   o.template_name ? o.template_name : NULL,
				   "memory_mib", (int)o.mem_mib, "vcpus",
				   (int)o.vcpus, "timeout", (int)o.ttl_s,
				   "network", net__mode_name(o.net_mode)),
			 NULL);
}

/* --- run_code ---------------------------------------------------------- */

static int gather(void *arg, const json_t *event)
{
	return interp__gather(arg, event);
}

/*
 * An MCP image content for each PNG and JPEG of @results, in order (an
 * SVG stays text, in the structured content).  NULL when out of memory.
 */
static json_t *images_of(const json_t *results)
{
	static const struct {
		const char *member, *mime;
	} kinds[] = { { "png", "image/png" }, { "jpeg", "image/jpeg" } };
	json_t *images = json_array(), *r, *data;
	size_t i, k;

	if (!images)
		return NULL;
	json_array_foreach(results, i, r)
	{
		for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
			data = json_object_get(r, kinds[k].member);
			if (json_is_string(data) &&
			    json_array_append_new(
				    images,
				    json_pack("{s:s, s:O, s:s}", "type",
					      "image", "data", data, "mimeType",
					      kinds[k].mime))) {
				json_decref(images);
				return NULL;
			}
		}
	}
	return images;
}

/* The interpreter: python and javascript, in a context that keeps state. */
static json_t *run_interp(const struct sandbox_info *sb, const json_t *args)
{
	struct interp_exec_req req = {
		.code = json_string_value(json_object_get(args, "code")),
		.language =
			json_string_value(json_object_get(args, "language")),
		.context = json_string_value(json_object_get(args, "context")),
		.timeout_ms = timeout_ms(args),
		.user = arg_user(args),
	};
	struct interp_client *ic = NULL;
	struct interp_gather g = { 0 };
	json_t *exec = NULL, *images;
	char err[1024];
	int rc;

	if (!req.language)
		req.language = "python";
	/*
	 * A new connection per call: kept ones (as for the agent) measured
	 * slower here, ~80 against ~60 ms for `1+1` through ember-mcp on a
	 * PVM host, the guest answering later on a connection left open.
	 */
	rc = interp_client__ensure(sb->uds, INTERP_START_MS, &ic, err,
				   sizeof(err));
	if (rc == -ENOEXEC)
		return tools__fail("sandbox %s: %s: use language bash, or "
				   "run_command",
				   sb->id, err);
	if (rc < 0)
		return tools__fail("sandbox %s: the code interpreter: %s",
				   sb->id, err);
	exec = interp__execution_new();
	if (!exec)
		goto oom;
	g.execution = exec;
	rc = interp_client__execute(ic, &req, gather, &g, err, sizeof(err));
	interp_client__free(ic);
	ic = NULL;
	if (rc == -ENOMEM)
		goto oom;
	if (rc < 0) {
		json_decref(exec);
		return tools__fail("run_code in sandbox %s: %s", sb->id, err);
	}
	images = images_of(json_object_get(exec, "results"));
	if (!images)
		goto oom;
	return tools__ok(exec, images);
oom:
	interp_client__free(ic);
	json_decref(exec);
	return NULL;
}

/* bash (or sh when the guest has no bash) -c CODE, as an execution. */
static json_t *run_shell_code(struct backend *b, const struct sandbox_info *sb,
			      const json_t *args)
{
	const char *code = json_string_value(json_object_get(args, "code"));
	const char *argv[] = { "bash", "-c", code, NULL };
	struct captured cap;
	json_t *error = json_null();
	char err[1024];
	int rc;

	rc = capture(b, sb, argv, NULL, NULL, arg_user(args), timeout_ms(args),
		     &cap, err, sizeof(err));
	if (rc == -EREMOTEIO && cap.guest_errno == ENOENT) {
		argv[0] = "sh";
		rc = capture(b, sb, argv, NULL, NULL, arg_user(args),
			     timeout_ms(args), &cap, err, sizeof(err));
	}
	if (rc < 0)
		return tools__fail("run_code (bash) in sandbox %s: %s", sb->id,
				   err);
	err[0] = '\0';
	if (cap.res.kind == EMBER_AGENT_TIMEOUT)
		snprintf(err, sizeof(err), "timed out");
	else if (cap.res.kind == EMBER_AGENT_SIGNALLED)
		snprintf(err, sizeof(err), "killed by signal %d", cap.res.code);
	else if (cap.res.code)
		snprintf(err, sizeof(err), "exit status %d", cap.res.code);
	if (err[0])
		error = json_pack("{s:s, s:s, s:s}", "name",
				  cap.res.kind == EMBER_AGENT_TIMEOUT ?
					  "TimeoutError" :
					  "ExitError",
				  "value", err, "traceback", "");
	return tools__ok(json_pack("{s:o, s:o, s:[], s:o, s:i}", "stdout",
				   cap.out, "stderr", cap.err, "results",
				   "error", error ? error : json_null(),
				   "execution_count", 0),
			 NULL);
}

static json_t *run_code(struct backend *b, const json_t *args)
{
	const char *lang = json_string_value(json_object_get(args, "language"));
	struct sandbox_info sb;
	json_t *fail = roster__usable(b->r, args, &sb);

	if (fail)
		return fail;
	if (lang && !strcmp(lang, "bash"))
		return run_shell_code(b, &sb, args);
	return run_interp(&sb, args);
}

/* --- run_command ------------------------------------------------------- */

static json_t *run_command(struct backend *b, const json_t *args)
{
	const char *argv[] = {
		"sh", "-c", json_string_value(json_object_get(args, "command")),
		NULL
	};
	const json_t *jenv = json_object_get(args, "env"), *v;
	const char *cwd = json_string_value(json_object_get(args, "cwd"));
	const char **env = NULL, *key;
	char **owned = NULL, err[1024];
	size_t n = 0, nown = 0, k;
	struct sandbox_info sb;
	struct captured cap;
	json_t *res = NULL, *sig;
	int code, rc;

	res = roster__usable(b->r, args, &sb);
	if (res)
		return res;
	if (jenv) {
		if (json_object_size(jenv) > EMBER_AGENT_MAX_ENV)
			return tools__fail("env: at most %d variables",
					   EMBER_AGENT_MAX_ENV);
		env = calloc(json_object_size(jenv) + 1, sizeof(*env));
		owned = calloc(json_object_size(jenv) + 1, sizeof(*owned));
		if (!env || !owned)
			goto out;
		json_object_foreach((json_t *)jenv, key, v)
		{
			if (!*key || strchr(key, '=')) {
				res = tools__fail("env: bad variable name "
						  "'%.100s'",
						  key);
				goto out;
			}
			if (asprintf(&owned[nown], "%s=%s", key,
				     json_string_value(v)) < 0)
				goto out;
			env[n++] = owned[nown++];
		}
	}
	rc = capture(b, &sb, argv, env, cwd, arg_user(args), timeout_ms(args),
		     &cap, err, sizeof(err));
	if (rc < 0) {
		res = tools__fail("run_command in sandbox %s: %s", sb.id, err);
		goto out;
	}
	code = cap.res.code;
	sig = json_null();
	if (cap.res.kind == EMBER_AGENT_SIGNALLED) {
		sig = json_integer(cap.res.code);
		code = 128 + cap.res.code;
	} else if (cap.res.kind == EMBER_AGENT_TIMEOUT) {
		code = EXIT_TIMEOUT;
	}
	res = tools__ok(json_pack("{s:o, s:o, s:i, s:o, s:b}", "stdout",
				  cap.out, "stderr", cap.err, "exit_code", code,
				  "signal", sig, "timed_out",
				  cap.res.kind == EMBER_AGENT_TIMEOUT),
			NULL);
out:
	for (k = 0; k < nown; k++)
		free(owned[k]);
	free(owned);
	free(env);
	return res;
}

/* --- files ------------------------------------------------------------- */

/*
 * write_file as @user (not root): guest_fs__put(), so that the file and
 * the parents it makes are the user's.  The tool's result.
 */
static json_t *put_as_user(struct backend *b, const struct sandbox_info *sb,
			   const char *user, int fd, const char *path,
			   size_t len)
{
	static const char *const why[] = {
		[3] = "it is a directory",
		[4] = "cannot create its parent directories",
		[5] = "cannot open it for writing",
		[6] = "not a regular file",
		[7] = "writing failed",
	};
	const char *u = user ? user : "(the default user)";
	char err[1024];
	struct fs_op o;
	json_t *res, *msg;
	size_t n;
	int rc;

	if (path[0] != '/')
		return tools__fail("write_file: path must be absolute as user "
				   "%.64s",
				   u);
	rc = guest_fs__put(b->pool, sb, CONNECT_MS, user, fd, path, &o, err,
			   sizeof(err));
	if (rc < 0)
		return tools__fail("writing %s in sandbox %s as %.64s: %s",
				   path, sb->id, u, err);
	if (!o.status) {
		res = tools__ok(json_pack("{s:s, s:I}", "path", path, "bytes",
					  (json_int_t)len),
				NULL);
	} else {
		n = strcspn(o.err, "\n");
		msg = utf8__json(o.err, n);
		res = tools__fail(
			"writing %s in sandbox %s as %.64s: %s%s%s", path,
			sb->id, u,
			o.status < 8 && why[o.status] ? why[o.status] :
							"failed",
			n ? ": " : "", msg ? json_string_value(msg) : "");
		json_decref(msg);
	}
	guest_fs__release(&o);
	return res;
}

static json_t *write_file(struct backend *b, const json_t *args)
{
	const char *path = json_string_value(json_object_get(args, "path"));
	const json_t *content = json_object_get(args, "content");
	const char *enc = json_string_value(json_object_get(args, "encoding"));
	unsigned char *data = NULL;
	struct agent_client *c = NULL;
	struct sandbox_info sb;
	json_t *res;
	char err[1024];
	size_t len;
	ssize_t n;
	int fd = -1, rc = -EIO;

	res = roster__usable(b->r, args, &sb);
	if (res)
		return res;
	if (enc && !strcmp(enc, "base64")) {
		data = malloc(json_string_length(content) / 4 * 3 + 3);
		if (!data)
			return NULL;
		n = base64__decode(json_string_value(content),
				   json_string_length(content), data);
		if (n < 0) {
			free(data);
			return tools__fail("content is not valid base64");
		}
		len = (size_t)n;
	} else {
		len = json_string_length(content);
	}
	fd = memfd_create("ember-mcp-file", MFD_CLOEXEC);
	if (fd < 0) {
		res = tools__fail("memfd: %s", strerror(errno));
		goto out;
	}
	if (len && (size_t)write(fd,
				 data ? (void *)data :
					(void *)json_string_value(content),
				 len) != len) {
		res = tools__fail("memfd: %s", strerror(errno));
		goto out;
	}
	lseek(fd, 0, SEEK_SET);
	if (!files_as_root(&sb, arg_user(args))) {
		res = put_as_user(b, &sb, arg_user(args), fd, path, len);
		goto out;
	}
	c = pool__borrow(b->pool, &sb, CONNECT_MS, err, sizeof(err));
	if (!c) {
		res = tools__fail("%s", err);
		goto out;
	}
	rc = agent_client__write_file(c, fd, path, 0644, FILE_IDLE_MS);
	if (rc < 0) {
		res = tools__fail("writing %s in sandbox %s: %s", path, sb.id,
				  agent_client__error(c));
		goto out;
	}
	res = tools__ok(
		json_pack("{s:s, s:I}", "path", path, "bytes", (json_int_t)len),
		NULL);
out:
	pool__return(b->pool, sb.id, c, rc == 0 || rc == -EREMOTEIO);
	if (fd >= 0)
		close(fd);
	free(data);
	return res;
}

/*
 * read_file as @user (not root): `cat` run as the user, its stdout into
 * @fd (READ_MAX + 1 bytes at most, enough to tell a file too big), so
 * that the user's permissions apply.  0; 1 when the command failed in the
 * guest (its stderr's first line in @err); or agent_client__exec()'s
 * negative errno (-EREMOTEIO: it could not start, e.g. no such user).
 */
static int cat_as_user(struct agent_client *c, const char *user,
		       const char *path, int fd, char *err, size_t errlen)
{
	static const char script[] =
		"if [ -e \"$1\" ] && [ ! -f \"$1\" ]; then\n"
		"	echo \"not a regular file\" >&2; exit 1\n"
		"fi\n"
		"exec cat -- \"$1\"\n";
	const char *argv[] = { "/bin/sh", "-c", script, "sh", path, NULL };
	struct agent_exec_req req = {
		.argv = argv,
		.cwd = "/",
		.user = user,
		.timeout_ms = FILE_IDLE_MS,
		.stdin_fd = -1,
		.stdout_fd = fd,
		.out_max = READ_MAX + 1,
		.sig_fd = -1,
	};
	struct agent_exec_result res;
	char buf[512];
	ssize_t n;
	int fe, rc;

	fe = memfd_create("ember-mcp-err", MFD_CLOEXEC);
	if (fe < 0) {
		rc = -errno;
		snprintf(err, errlen, "memfd: %s", strerror(-rc));
		return rc;
	}
	req.stderr_fd = fe;
	rc = agent_client__exec(c, &req, &res);
	if (rc < 0) {
		snprintf(err, errlen, "%s", agent_client__error(c));
		close(fe);
		return rc;
	}
	if (res.kind == EMBER_AGENT_EXITED && !res.code) {
		close(fe);
		return 0;
	}
	n = pread(fe, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	for (char *q = buf; *q; q++)
		if ((unsigned char)*q < 0x20 || (unsigned char)*q > 0x7e)
			*q = '?'; /* the guest's bytes: any */
	snprintf(err, errlen, "%s",
		 buf[0]				 ? buf :
		 res.kind == EMBER_AGENT_TIMEOUT ? "timed out" :
						   "cat failed");
	close(fe);
	return 1;
}

static json_t *read_file(struct backend *b, const json_t *args)
{
	const char *path = json_string_value(json_object_get(args, "path"));
	const char *enc = json_string_value(json_object_get(args, "encoding"));
	struct agent_client *c = NULL;
	struct sandbox_info sb;
	char err[1024], *b64;
	void *p = MAP_FAILED;
	struct stat st;
	json_t *res;
	size_t len = 0;
	bool text;
	int fd = -1, rc = -EIO;

	res = roster__usable(b->r, args, &sb);
	if (res)
		return res;
	fd = memfd_create("ember-mcp-file", MFD_CLOEXEC);
	if (fd < 0)
		return tools__fail("memfd: %s", strerror(errno));
	c = pool__borrow(b->pool, &sb, CONNECT_MS, err, sizeof(err));
	if (!c) {
		res = tools__fail("%s", err);
		goto out;
	}
	if (files_as_root(&sb, arg_user(args))) {
		rc = agent_client__read_file(c, path, fd, FILE_IDLE_MS);
		if (rc < 0) {
			res = tools__fail("reading %s in sandbox %s: %s", path,
					  sb.id, agent_client__error(c));
			goto out;
		}
	} else {
		rc = cat_as_user(c, arg_user(args), path, fd, err, sizeof(err));
		if (rc) {
			res = tools__fail("reading %s in sandbox %s as %.64s: "
					  "%s",
					  path, sb.id,
					  arg_user(args) ? arg_user(args) :
							   "(the default user)",
					  err);
			if (rc > 0)
				rc = 0; /* the connection is sound */
			goto out;
		}
	}
	if (fstat(fd, &st) < 0) {
		res = tools__fail("memfd: %s", strerror(errno));
		goto out;
	}
	len = (size_t)st.st_size;
	if (len > READ_MAX) {
		res = tools__fail("%s is %zu bytes: read_file returns at most "
				  "%u",
				  path, len, READ_MAX);
		goto out;
	}
	if (len) {
		p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED) {
			res = tools__fail("mmap: %s", strerror(errno));
			goto out;
		}
	}
	text = !(enc && !strcmp(enc, "base64")) && (!len || utf8__ok(p, len));
	if (text) {
		res = tools__ok(json_pack("{s:s%, s:s, s:I}", "content",
					  len ? (const char *)p : "", len,
					  "encoding", "text", "bytes",
					  (json_int_t)len),
				NULL);
	} else {
		b64 = len < (1u << 30) ? malloc(BASE64_ENCODED_SIZE(len)) :
					 NULL;
		if (b64)
			base64__encode(p, len, b64);
		res = b64 ? tools__ok(json_pack("{s:s, s:s, s:I}", "content",
						b64, "encoding", "base64",
						"bytes", (json_int_t)len),
				      NULL) :
			    NULL;
		free(b64);
	}
out:
	if (p != MAP_FAILED)
		munmap(p, len);
	pool__return(b->pool, sb.id, c, rc == 0 || rc == -EREMOTEIO);
	close(fd);
	return res;
}

/*
 * list_files lists through the sandbox library's file operations
 * (guest_fs.h: one `find ... -exec stat` for all the entries, links not
 * followed), in the order of the shell glob it once used: names that
 * begin with one '.', then with "..", then the rest, each group in byte
 * order.
 */
static int glob_group(const char *name, size_t len)
{
	if (name[0] != '.')
		return 2;
	return len > 1 && name[1] == '.' ? 1 : 0;
}

static int glob_order(const void *a, const void *b)
{
	const struct fs_ent *x = a, *y = b;
	const char *nx, *ny;
	size_t lx, ly;
	int gx, gy, c;

	nx = guest_stat__last(x->path, x->plen, &lx);
	ny = guest_stat__last(y->path, y->plen, &ly);
	gx = glob_group(nx, lx);
	gy = glob_group(ny, ly);
	if (gx != gy)
		return gx - gy;
	c = memcmp(nx, ny, lx < ly ? lx : ly);
	if (c)
		return c;
	return lx < ly ? -1 : lx > ly;
}

/* @e as list_files writes it: name, type and size. */
static json_t *listed(const struct fs_ent *e)
{
	const char *type, *name;
	size_t len;

	switch (e->mode & S_IFMT) {
	case S_IFREG:
		type = "file";
		break;
	case S_IFDIR:
		type = "dir";
		break;
	case S_IFLNK:
		type = "link";
		break;
	default:
		type = "other";
	}
	name = guest_stat__last(e->path, e->plen, &len);
	return json_pack("{s:o, s:s, s:I}", "name", utf8__json(name, len),
			 "type", type, "size", (json_int_t)e->size);
}

static json_t *list_files(struct backend *b, const json_t *args)
{
	const char *path = json_string_value(json_object_get(args, "path"));
	json_t *entries = NULL, *res, *why;
	struct fs_ent *v = NULL;
	size_t n = 0;
	struct sandbox_info sb;
	char err[1024], *rel = NULL;
	struct fs_op o;
	int rc;

	res = roster__usable(b->r, args, &sb);
	if (res)
		return res;
	if (!path)
		path = EMBER_GUEST_HOME;
	/* "./" first: a relative path must not read as an option. */
	if (path[0] != '/' && asprintf(&rel, "./%s", path) < 0)
		return NULL;
	rc = guest_fs__run(b->pool, &sb, CONNECT_MS, arg_user(args), "list",
			   rel ? rel : path, "1", &o, err, sizeof(err));
	free(rel);
	if (rc < 0)
		return tools__fail("list_files in sandbox %s: %s", sb.id, err);
	if (o.status) {
		why = utf8__json(o.err, strlen(o.err));
		res = tools__fail("list_files: %s: %s", path,
				  o.status == 3 || o.status == 4 ?
					  "no such directory (or not one)" :
					  json_string_value(why));
		json_decref(why);
		goto out;
	}
	res = NULL;
	if (guest_fs__entries(&o, &v, &n))
		goto out;
	qsort(v, n, sizeof(*v), glob_order);
	entries = json_array();
	for (size_t i = 0; entries && i < n; i++) {
		if (json_array_append_new(entries, listed(&v[i]))) {
			json_decref(entries);
			entries = NULL;
		}
	}
	if (entries)
		res = tools__ok(json_pack("{s:s, s:o}", "path", path, "entries",
					  entries),
				NULL);
out:
	free(v);
	guest_fs__release(&o);
	return res;
}

/* --- life: pause, resume, kill, list ---------------------------------- */

static json_t *state_result(const char *id)
{
	struct sandbox_info info;
	char err[512];

	if (sandbox__find(id, &info, err, sizeof(err)) < 0)
		return tools__fail("%s", err);
	return tools__ok(json_pack("{s:s, s:s}", "sandbox_id", info.id, "state",
				   sandbox__state_name(&info)),
			 NULL);
}

static json_t *pause_sandbox(struct backend *b, const json_t *args)
{
	bool disk = json_is_true(json_object_get(args, "to_disk"));
	struct sandbox_info sb;
	unsigned int ttl_s;
	char err[4096];
	json_t *fail;
	int rc;

	fail = roster__lookup(b->r, args, &sb, &ttl_s);
	if (fail)
		return fail;
	if (disk)
		pool__drop(b->pool, sb.id); /* ember goes: they would break */
	rc = disk ? sandbox__park(&sb, err, sizeof(err)) :
		    sandbox__pause(&sb, true, err, sizeof(err));
	if (rc < 0)
		return tools__fail("%s", err);
	return state_result(sb.id);
}

static json_t *resume_sandbox(struct backend *b, const json_t *args)
{
	struct sandbox_info sb;
	unsigned int ttl_s;
	char err[4096];
	json_t *fail;
	int rc;

	fail = roster__lookup(b->r, args, &sb, &ttl_s);
	if (fail)
		return fail;
	rc = sandbox__resume(&sb, b->o.ember, SANDBOX_DEF_BOOT_S, err,
			     sizeof(err));
	if (rc < 0)
		return tools__fail("%s", err);
	if (sandbox__find(sb.id, &sb, err, sizeof(err)) == 0)
		roster__renew(&sb, ttl_s);
	return state_result(sb.id);
}

static json_t *kill_sandbox(struct backend *b, const json_t *args)
{
	struct sandbox_info sb;
	unsigned int ttl_s;
	char err[512];
	json_t *fail;
	int rc;

	fail = roster__lookup(b->r, args, &sb, &ttl_s);
	if (fail)
		return fail;
	rc = sandbox__kill(&sb, err, sizeof(err));
	roster__forget(b->r, sb.id);
	if (rc < 0 && rc != -ENOENT)
		return tools__fail("%s", err);
	return tools__ok(
		json_pack("{s:s, s:b}", "sandbox_id", sb.id, "killed", 1),
		NULL);
}

static json_t *list_sandboxes(struct backend *b)
{
	struct sandbox_info *v = NULL, *info;
	int64_t left;
	json_t *arr, *e;
	char err[512];
	size_t n;

	if (roster__list(b->r, &v, &n, err, sizeof(err)) < 0)
		return tools__fail("list_sandboxes: %s", err);
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++) {
		info = &v[i];
		left = sandbox__ttl_left(info);
		e = json_pack("{s:s, s:s, s:o, s:s?, s:i, s:i, s:s}",
			      "sandbox_id", info->id, "state",
			      sandbox__state_name(info), "ttl_left",
			      left >= 0 ? json_integer(left) : json_null(),
			      "template",
			      info->template_name[0] ? info->template_name :
						       NULL,
			      "memory_mib", (int)info->mem_mib, "vcpus",
			      (int)info->vcpus, "network",
			      net__mode_name(info->net_mode));
		if (!e || json_array_append_new(arr, e)) {
			json_decref(arr);
			arr = NULL;
		}
	}
	free(v);
	return arr ? tools__ok(json_pack("{s:o}", "sandboxes", arr), NULL) :
		     NULL;
}

/* --- ports --------------------------------------------------------------- */

/*
 * The guest's port on the host's 127.0.0.1 (api/sandbox/expose.h); one
 * exposed already is answered with its address.
 */
static json_t *expose_port(struct backend *b, const json_t *args)
{
	json_int_t port = tools__int(json_object_get(args, "port"), 0);
	json_int_t hp = tools__int(json_object_get(args, "host_port"), 0);
	struct expose_entry e, *v = NULL;
	struct sandbox_info sb;
	char err[512], host[32];
	size_t n = 0;
	json_t *res;
	int rc;

	res = roster__usable(b->r, args, &sb);
	if (res)
		return res;
	if (port < 1 || port > 65535 || hp < 0 || hp > 65535)
		return tools__fail("port out of range");
	snprintf(host, sizeof(host), EXPOSE_DEFAULT_HOST ":%d", (int)hp);
	expose__set_ember(b->o.ember); /* an auto-resume sandbox's */
	rc = expose__add(&sb, (unsigned int)port, host, 0, &e, err,
			 sizeof(err));
	if (rc == -EEXIST && expose__list(&sb, &v, &n, err, sizeof(err)) == 0)
		for (size_t i = 0; i < n; i++)
			if (v[i].port == (unsigned int)port) {
				e = v[i];
				rc = 0;
			}
	free(v);
	if (rc < 0)
		return tools__fail("%s", err);
	rc = expose__probe(&sb, (unsigned int)port, CONNECT_MS, err,
			   sizeof(err));
	return tools__ok(json_pack("{s:s, s:i, s:s, s:s+, s:b}", "sandbox_id",
				   sb.id, "port", (int)port, "address", e.addr,
				   "url", "http://", e.addr, "listening",
				   rc == 0),
			 NULL);
}

json_t *backend__call(void *arg, const struct mcp_tool *t, const json_t *args)
{
	struct backend *b = arg;

	switch (t->id) {
	case TOOL_CREATE_SANDBOX:
		return create_sandbox(b, args);
	case TOOL_RUN_CODE:
		return run_code(b, args);
	case TOOL_RUN_COMMAND:
		return run_command(b, args);
	case TOOL_WRITE_FILE:
		return write_file(b, args);
	case TOOL_READ_FILE:
		return read_file(b, args);
	case TOOL_LIST_FILES:
		return list_files(b, args);
	case TOOL_PAUSE_SANDBOX:
		return pause_sandbox(b, args);
	case TOOL_RESUME_SANDBOX:
		return resume_sandbox(b, args);
	case TOOL_KILL_SANDBOX:
		return kill_sandbox(b, args);
	case TOOL_LIST_SANDBOXES:
		return list_sandboxes(b);
	case TOOL_EXPOSE_PORT:
		return expose_port(b, args);
	default:
		return tools__fail("tool %s is not implemented", t->name);
	}
}
