// SPDX-License-Identifier: Apache-2.0
/*
 * ember-jailer's command line: Firecracker's jailer flags (docs/jailer.md,
 * "Jailer Usage"), each validated here so that nothing is made for a
 * command line that cannot work.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "jailer.h"

enum opt {
	OPT_ID,
	OPT_EXEC_FILE,
	OPT_UID,
	OPT_GID,
	OPT_CHROOT_BASE,
	OPT_NETNS,
	OPT_CGROUP,
	OPT_CGROUP_VERSION,
	OPT_PARENT_CGROUP,
	OPT_RESOURCE_LIMIT,
	OPT_RO_BIND,
	OPT_DAEMONIZE,
	OPT_NEW_PID_NS,
	OPT_ALLOW_ROOT,
	OPT_CLEANUP,
	OPT_HELP,
	OPT_VERSION,
	OPT_COUNT
};

static const struct {
	const char *name;
	bool value; /* takes a value: --name V or --name=V */
	bool repeat; /* may be given more than once */
	bool cleanup; /* allowed with --cleanup */
} opts[OPT_COUNT] = {
	[OPT_ID] = { "id", true, false, true },
	[OPT_EXEC_FILE] = { "exec-file", true, false, true },
	[OPT_UID] = { "uid", true, false, false },
	[OPT_GID] = { "gid", true, false, false },
	[OPT_CHROOT_BASE] = { "chroot-base-dir", true, false, true },
	[OPT_NETNS] = { "netns", true, false, false },
	[OPT_CGROUP] = { "cgroup", true, true, false },
	[OPT_CGROUP_VERSION] = { "cgroup-version", true, false, true },
	[OPT_PARENT_CGROUP] = { "parent-cgroup", true, false, true },
	[OPT_RESOURCE_LIMIT] = { "resource-limit", true, true, false },
	[OPT_RO_BIND] = { "ro-bind", true, true, false },
	[OPT_DAEMONIZE] = { "daemonize", false, false, false },
	[OPT_NEW_PID_NS] = { "new-pid-ns", false, false, false },
	[OPT_ALLOW_ROOT] = { "allow-root", false, false, false },
	[OPT_CLEANUP] = { "cleanup", false, false, true },
	[OPT_HELP] = { "help", false, false, true },
	[OPT_VERSION] = { "version", false, false, true },
};

const char *jail_args__usage(void)
{
	return "usage: ember-jailer --id ID --exec-file FILE --uid UID --gid GID\n"
	       "                    [options] [-- EMBER-ARGS...]\n"
	       "       ember-jailer --cleanup --id ID [--exec-file FILE]\n"
	       "                    [--chroot-base-dir DIR] [--parent-cgroup P]\n"
	       "                    [--cgroup-version 1|2]\n"
	       "Run ember jailed as Firecracker's jailer runs Firecracker: in\n"
	       "the chroot BASE/NAME/ID/root (NAME: the exec file's name), in\n"
	       "its own mount namespace and cgroups, as UID:GID without any\n"
	       "capability.  It execs /NAME --id ID EMBER-ARGS...\n"
	       "\n"
	       "  --id ID              1-64 letters, digits or '-'\n"
	       "  --exec-file FILE     the ember binary, copied into the jail\n"
	       "  --uid UID, --gid GID whom ember runs as (0 too, as Kata\n"
	       "                       asks: then with CAP_DAC_OVERRIDE\n"
	       "                       alone, for Kata's mode-0000 FIFOs)\n"
	       "  --allow-root         accepted for older callers; uid 0 needs\n"
	       "                       it no more\n"
	       "  --chroot-base-dir DIR\n"
	       "                       absolute (default " JAIL_DEFAULT_BASE
	       ")\n"
	       "  --netns PATH         join this network namespace\n"
	       "                       (e.g. /var/run/netns/NAME)\n"
	       "  --cgroup FILE=VALUE  write VALUE to FILE in the jail's cgroup\n"
	       "                       (repeatable: memory.max=536870912,\n"
	       "                       cpuset.cpus=0 ...)\n"
	       "  --cgroup-version 1|2 default: 2 where /sys/fs/cgroup is\n"
	       "                       cgroup2, 1 otherwise\n"
	       "  --parent-cgroup P    the cgroup is P/ID (default " JAIL_DEFAULT_PARENT
	       ")\n"
	       "  --resource-limit RES=VALUE\n"
	       "                       fsize (bytes) or no-file (default 2048)\n"
	       "  --ro-bind DIR        ember's: bind DIR read-only at the same\n"
	       "                       path in the jail (repeatable).  The exec\n"
	       "                       file's loader and libraries (from its ELF\n"
	       "                       headers) are bound file by file where no\n"
	       "                       --ro-bind shows them already\n"
	       "  --daemonize          setsid(), standard I/O to /dev/null\n"
	       "  --new-pid-ns         ember runs as pid 1 of a new PID\n"
	       "                       namespace; its pid is in ROOT/NAME.pid\n"
	       "  --cleanup            remove jail ID's chroot and cgroups\n"
	       "  -h, --help           this text\n"
	       "  --version            print the version\n"
	       "\n"
	       "Exit status: 2 for refused arguments, 1 when a step failed\n"
	       "(one line names it); what was made is removed again.\n";
}

static int bad(struct jail_err *e, const char *opt, const char *val,
	       const char *why)
{
	return jail_err__set(e, EINVAL, why, "--%s %.80s", opt, val);
}

static int check_id(const char *id, struct jail_err *e)
{
	size_t i, n = strlen(id);

	if (strchr(id, '/'))
		return bad(
			e, "id", id,
			"contains '/'; an id is 1-64 letters, digits or '-'");
	if (strstr(id, ".."))
		return bad(
			e, "id", id,
			"contains '..'; an id is 1-64 letters, digits or '-'");
	if (n == 0 || n > JAIL_ID_MAX)
		return bad(
			e, "id", id,
			"is not 1-64 characters long; an id is 1-64 letters, "
			"digits or '-'");
	for (i = 0; i < n; i++) {
		char c = id[i];

		if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') &&
		    !(c >= '0' && c <= '9') && c != '-')
			return bad(e, "id", id,
				   "has a character other than letters, digits "
				   "or '-'");
	}
	return 0;
}

/* A decimal number, nothing else (strtoull() alone accepts " -1"). */
static bool parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno == 0 && *end == '\0';
}

static int parse_id_num(const char *opt, const char *s, uint32_t *v,
			struct jail_err *e)
{
	uint64_t n;

	/* (uid_t)-1 means "unchanged" to setresuid(2). */
	if (!parse_u64(s, &n) || n >= UINT32_MAX)
		return bad(e, opt, s, "is not a number from 0 to 4294967294");
	*v = (uint32_t)n;
	return 0;
}

/* A name for a path component: [A-Za-z0-9._-]+, not starting with '.'. */
static bool name_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || s[0] == '.')
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') &&
		    !(c >= '0' && c <= '9') && c != '-' && c != '_' && c != '.')
			return false;
	}
	return true;
}

static int check_exec(struct jail_args *a, struct jail_err *e)
{
	const char *slash = strrchr(a->exec_file, '/');
	struct stat st;

	a->exec_name = slash ? slash + 1 : a->exec_file;
	if (strlen(a->exec_name) > JAIL_NAME_MAX ||
	    !name_ok(a->exec_name, strlen(a->exec_name)) ||
	    !strcmp(a->exec_name, "dev"))
		return bad(e, "exec-file", a->exec_file,
			   "its name must be 1-64 of [A-Za-z0-9._-], not "
			   "starting with '.', and not 'dev'");
	if (a->mode != JAIL_RUN)
		return 0;
	if (stat(a->exec_file, &st))
		return jail_err__set(e, errno, NULL, "--exec-file %.200s",
				     a->exec_file);
	if (!S_ISREG(st.st_mode))
		return bad(e, "exec-file", a->exec_file,
			   "is not a regular file");
	return 0;
}

/* An absolute path without "." or ".." components (and not too long). */
static bool abs_path_ok(const char *p)
{
	const char *c = p;

	if (p[0] != '/' || strlen(p) > PATH_MAX / 2)
		return false;
	while (*c) {
		size_t n;

		while (*c == '/')
			c++;
		n = strcspn(c, "/");
		if ((n == 1 && c[0] == '.') ||
		    (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c += n;
	}
	return true;
}

static int check_parent(const char *p, struct jail_err *e)
{
	const char *c = p;

	if (strlen(p) > JAIL_PARENT_MAX || !*p)
		return bad(e, "parent-cgroup", p, "must be 1-255 characters");
	for (;;) {
		size_t n = strcspn(c, "/");

		if (!name_ok(c, n))
			return bad(e, "parent-cgroup", p,
				   "must be a relative path of names of "
				   "[A-Za-z0-9._-], none starting with '.'");
		if (!c[n])
			return 0;
		c += n + 1;
	}
}

static int add_cgroup(struct jail_args *a, const char *arg, struct jail_err *e)
{
	const char *eq = strchr(arg, '='), *dot;
	struct jail_cgroup_arg *cg;
	size_t n, i;

	if (a->n_cgroups == JAIL_MAX_CGROUPS)
		return bad(e, "cgroup", arg, "given more than 16 times");
	n = eq ? (size_t)(eq - arg) : 0;
	dot = memchr(arg, '.', n);
	if (!eq || !dot || dot == arg || n >= JAIL_CGROUP_FILE_MAX ||
	    arg[n - 1] == '.')
		return bad(e, "cgroup", arg,
			   "use FILE=VALUE with FILE as CONTROLLER.KNOB "
			   "(memory.max=536870912)");
	for (i = 0; i < n; i++) {
		char c = arg[i];

		if (!(c >= 'a' && c <= 'z') && c != '_' &&
		    !(i >= (size_t)(dot - arg) &&
		      ((c >= '0' && c <= '9') || c == '.')))
			return bad(e, "cgroup", arg,
				   "FILE must be CONTROLLER.KNOB of "
				   "[a-z0-9_.]");
	}
	if (memmem(arg, n, "..", 2))
		return bad(e, "cgroup", arg, "FILE contains '..'");
	if (!eq[1] || strchr(eq + 1, '\n') || strlen(eq + 1) >= 4096)
		return bad(e, "cgroup", arg,
			   "VALUE must be 1-4095 characters on one line");
	cg = &a->cgroups[a->n_cgroups++];
	memcpy(cg->file, arg, n);
	cg->file[n] = '\0';
	memcpy(cg->controller, arg, (size_t)(dot - arg));
	cg->controller[dot - arg] = '\0';
	cg->value = eq + 1;
	return 0;
}

static int add_rlimit(struct jail_args *a, const char *arg, struct jail_err *e)
{
	const char *eq = strchr(arg, '=');
	uint64_t v;

	if (!eq || !parse_u64(eq + 1, &v))
		return bad(e, "resource-limit", arg,
			   "use fsize=BYTES or no-file=N (decimal)");
	if ((size_t)(eq - arg) == 5 && !strncmp(arg, "fsize", 5))
		a->fsize = (rlim_t)v;
	else if ((size_t)(eq - arg) == 7 && !strncmp(arg, "no-file", 7))
		a->no_file = (rlim_t)v;
	else
		return bad(e, "resource-limit", arg,
			   "unknown resource: use fsize or no-file");
	return 0;
}

static int add_ro_bind(struct jail_args *a, const char *dir, struct jail_err *e)
{
	if (a->n_ro_binds == JAIL_MAX_RO_BINDS)
		return bad(e, "ro-bind", dir, "given more than 8 times");
	if (!abs_path_ok(dir) || !strcmp(dir, "/") ||
	    !strncmp(dir, "/dev", 4) || strstr(dir, "//") ||
	    dir[strlen(dir) - 1] == '/')
		return bad(e, "ro-bind", dir,
			   "must be an absolute directory without '.', '..', "
			   "'//' or a trailing '/', not / or under /dev");
	a->ro_binds[a->n_ro_binds++] = dir;
	return 0;
}

static int set_opt(struct jail_args *a, enum opt o, const char *v,
		   struct jail_err *e)
{
	uint32_t n;
	int ret;

	switch (o) {
	case OPT_ID:
		a->id = v;
		return check_id(v, e);
	case OPT_EXEC_FILE:
		a->exec_file = v;
		return 0; /* checked once the mode is known */
	case OPT_UID:
		ret = parse_id_num("uid", v, &n, e);
		a->uid = n;
		return ret;
	case OPT_GID:
		ret = parse_id_num("gid", v, &n, e);
		a->gid = n;
		return ret;
	case OPT_CHROOT_BASE:
		a->chroot_base = v;
		if (!abs_path_ok(v))
			return bad(e, "chroot-base-dir", v,
				   "must be an absolute path without '.' or "
				   "'..'");
		return 0;
	case OPT_NETNS:
		a->netns = v;
		return *v ? 0 : bad(e, "netns", v, "is empty");
	case OPT_CGROUP:
		return add_cgroup(a, v, e);
	case OPT_CGROUP_VERSION:
		if (strcmp(v, "1") && strcmp(v, "2"))
			return bad(e, "cgroup-version", v, "use 1 or 2");
		a->cgroup_version = v[0] - '0';
		return 0;
	case OPT_PARENT_CGROUP:
		a->parent_cgroup = v;
		return check_parent(v, e);
	case OPT_RESOURCE_LIMIT:
		return add_rlimit(a, v, e);
	case OPT_RO_BIND:
		return add_ro_bind(a, v, e);
	case OPT_DAEMONIZE:
		a->daemonize = true;
		return 0;
	case OPT_NEW_PID_NS:
		a->new_pid_ns = true;
		return 0;
	case OPT_ALLOW_ROOT:
		a->allow_root = true;
		return 0;
	case OPT_CLEANUP:
		a->mode = JAIL_CLEANUP;
		return 0;
	case OPT_HELP:
		a->mode = JAIL_HELP;
		return 0;
	case OPT_VERSION:
		a->mode = JAIL_VERSION;
		return 0;
	case OPT_COUNT:
		break;
	}
	return -EINVAL;
}

/* Everything that depends on more than one option. */
static int check_all(struct jail_args *a, const bool *seen, struct jail_err *e)
{
	static const enum opt run_need[] = { OPT_ID, OPT_EXEC_FILE, OPT_UID,
					     OPT_GID };
	size_t i;

	if (a->mode == JAIL_HELP || a->mode == JAIL_VERSION)
		return 0;
	if (a->mode == JAIL_CLEANUP) {
		for (i = 0; i < OPT_COUNT; i++)
			if (seen[i] && !opts[i].cleanup)
				return jail_err__set(e, EINVAL,
						     "not with --cleanup",
						     "--%s", opts[i].name);
		if (a->ember_argc)
			return jail_err__set(
				e, EINVAL, "--cleanup takes no ember arguments",
				"--");
		if (!seen[OPT_ID])
			return jail_err__set(e, EINVAL, "is required", "--id");
		if (!seen[OPT_EXEC_FILE])
			a->exec_name = JAIL_DEFAULT_EXEC_NAME;
		else
			return check_exec(a, e);
		return 0;
	}
	for (i = 0; i < sizeof(run_need) / sizeof(run_need[0]); i++)
		if (!seen[run_need[i]])
			return jail_err__set(e, EINVAL, "is required", "--%s",
					     opts[run_need[i]].name);
	for (i = 0; i < a->n_ro_binds; i++) {
		struct stat st;

		if (stat(a->ro_binds[i], &st))
			return jail_err__set(e, errno, NULL, "--ro-bind %.200s",
					     a->ro_binds[i]);
		if (!S_ISDIR(st.st_mode))
			return bad(e, "ro-bind", a->ro_binds[i],
				   "is not a directory");
	}
	return check_exec(a, e);
}

int jail_args__parse(struct jail_args *a, int argc, char *const argv[],
		     struct jail_err *e)
{
	bool seen[OPT_COUNT] = { false };
	int i, ret;

	memset(a, 0, sizeof(*a));
	a->chroot_base = JAIL_DEFAULT_BASE;
	a->parent_cgroup = JAIL_DEFAULT_PARENT;
	a->no_file = JAIL_DEFAULT_NO_FILE;
	a->fsize = RLIM_INFINITY;
	for (i = 1; i < argc; i++) {
		const char *arg = argv[i], *v = NULL, *eq;
		size_t n;
		int o;

		if (!strcmp(arg, "--")) {
			a->ember_argv = &argv[i + 1];
			a->ember_argc = argc - i - 1;
			break;
		}
		if (!strcmp(arg, "-h"))
			arg = "--help";
		if (strncmp(arg, "--", 2))
			return jail_err__set(e, EINVAL,
					     "unexpected argument: ember's "
					     "arguments go after --",
					     "%.80s", arg);
		arg += 2;
		eq = strchr(arg, '=');
		n = eq ? (size_t)(eq - arg) : strlen(arg);
		for (o = 0; o < OPT_COUNT; o++)
			if (strlen(opts[o].name) == n &&
			    !strncmp(opts[o].name, arg, n))
				break;
		if (o == OPT_COUNT)
			return jail_err__set(e, EINVAL,
					     "unknown option (see --help)",
					     "--%.80s", arg);
		if (opts[o].value) {
			if (eq)
				v = eq + 1;
			else if (i + 1 < argc)
				v = argv[++i];
			else
				return jail_err__set(e, EINVAL, "needs a value",
						     "--%s", opts[o].name);
		} else if (eq) {
			return jail_err__set(e, EINVAL, "takes no value",
					     "--%s", opts[o].name);
		}
		if (seen[o] && !opts[o].repeat)
			return jail_err__set(e, EINVAL, "given twice", "--%s",
					     opts[o].name);
		seen[o] = true;
		ret = set_opt(a, (enum opt)o, v, e);
		if (ret)
			return ret;
	}
	return check_all(a, seen, e);
}
