// SPDX-License-Identifier: Apache-2.0
/*
 * Jailed sandboxes: see jail.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../vmm/pvm/pvm.h"
#include "clock.h"
#include "files.h"
#include "jail.h"
#include "proc.h"
#include "record.h"
#include "template.h"

#define CGROUP2_MAGIC 0x63677270 /* statfs(2): CGROUP2_SUPER_MAGIC */
#define LDD_OUT_MAX   16384
#define CLEANUP_ERR   512

extern char **environ;

static bool jail_name_ok(const char *s, bool dots)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		      (dots && (s[i] == '.' || s[i] == '_'))))
			return false;
	return i > 0 && i <= 64 && strcmp(s, ".") && strcmp(s, "..");
}

int jail__root(const char *state, const char *ember, const char *id, char *out,
	       size_t outsz)
{
	const char *name = strrchr(ember, '/');

	name = name ? name + 1 : ember;
	if (!jail_name_ok(id, false) || !jail_name_ok(name, true) ||
	    !strcmp(name, "dev"))
		return -EINVAL;
	return files__pathf(out, outsz, "%s/" JAIL_DIR_NAME "/%s/%s/root",
			    state, name, id);
}

int jail__paths(const struct sandbox_info *i, const char *disk,
		struct sandbox_paths *p)
{
	const char *d = i->jail_root[0] ? i->jail_root : i->dir;
	int rc;

	memset(p, 0, sizeof(*p));
	rc = files__pathf(p->root, sizeof(p->root), "%s", i->jail_root);
	rc = rc	   ?:
		     files__pathf(p->api, sizeof(p->api),
				  "%s/" SANDBOX_API_NAME, d);
	rc = rc	   ?:
		     files__pathf(p->uds, sizeof(p->uds),
				  "%s/" SANDBOX_UDS_NAME, d);
	rc = rc	   ?:
		     files__pathf(p->console, sizeof(p->console),
				  "%s/" SANDBOX_CONSOLE_NAME, d);
	if (rc)
		return rc;
	if (!i->jail_root[0]) {
		memcpy(p->e_api, p->api, sizeof(p->api));
		memcpy(p->e_uds, p->uds, sizeof(p->uds));
		memcpy(p->e_console, p->console, sizeof(p->console));
		return disk ? files__pathf(p->e_disk, sizeof(p->e_disk), "%s",
					   disk) :
			      0;
	}
	snprintf(p->e_api, sizeof(p->e_api), "/" SANDBOX_API_NAME);
	snprintf(p->e_uds, sizeof(p->e_uds), "/" SANDBOX_UDS_NAME);
	snprintf(p->e_console, sizeof(p->e_console), "/" JAIL_CONSOLE_NAME);
	snprintf(p->e_disk, sizeof(p->e_disk), "/" JAIL_DISK_NAME);
	return 0;
}

/* Append the string @s to @a (in @a->buf, at *@used); -E2BIG / -ENAMETOOLONG. */
static int add(struct jail_argv *a, size_t *n, size_t *used, const char *s)
{
	size_t len = strlen(s) + 1;

	if (*n >= JAIL_ARGV_MAX)
		return -E2BIG;
	if (*used + len > sizeof(a->buf))
		return -ENAMETOOLONG;
	memcpy(a->buf + *used, s, len);
	a->argv[(*n)++] = a->buf + *used;
	*used += len;
	return 0;
}

/*
 * Run @argv (argv[0] a path), its stdout into @out (@outsz bytes,
 * NUL-terminated), its stderr to ours unless @err_to_out; its exit
 * status, or a negative errno.
 */
static int run_capture(const char *const *argv, char *out, size_t outsz,
		       bool err_to_out)
{
	posix_spawn_file_actions_t fa;
	size_t have = 0;
	int pfd[2], st, rc;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	if (err_to_out)
		posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
	rc = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv,
			 environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	if (rc) {
		close(pfd[0]);
		return -rc;
	}
	for (;;) {
		char sink[512];
		ssize_t r = have + 1 < outsz ?
				    read(pfd[0], out + have, outsz - 1 - have) :
				    read(pfd[0], sink, sizeof(sink));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (have + 1 < outsz)
			have += (size_t)r;
	}
	out[have] = '\0';
	close(pfd[0]);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ldd(1) as Debian has it: a script, found in these places. */
static const char *ldd_path(void)
{
	static const char *const where[] = { "/usr/bin/ldd", "/bin/ldd" };

	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++)
		if (access(where[i], X_OK) == 0)
			return where[i];
	return NULL;
}

/*
 * Add a --ro-bind of each directory of a library ldd lists for @ember
 * (none for a static one: "not a dynamic executable").
 */
static int add_lib_dirs(struct jail_argv *a, size_t *n, size_t *used,
			const char *ember, char *err, size_t errlen)
{
	static char out[LDD_OUT_MAX];
	char dirs[JAIL_MAX_BINDS][PATH_MAX];
	const char *ldd = ldd_path(), *argv[] = { ldd, ember, NULL };
	size_t nd = 0;
	char *save = NULL;
	int rc;

	if (!ldd)
		return sandbox__errf(err, errlen, -ENOENT,
				     "ldd not found (/usr/bin/ldd): the jail "
				     "needs ember's library directories");
	rc = run_capture(argv, out, sizeof(out), false);
	if (rc < 0)
		return sandbox__errf(err, errlen, rc, "running ldd %s: %s",
				     ember, strerror(-rc));
	if (rc != 0)
		return 0; /* a static ember: nothing to bind */
	for (char *tok = strtok_r(out, " \t\n", &save); tok;
	     tok = strtok_r(NULL, " \t\n", &save)) {
		char *slash = strrchr(tok, '/');
		size_t i;

		if (tok[0] != '/' || slash == tok)
			continue;
		*slash = '\0';
		for (i = 0; i < nd && strcmp(dirs[i], tok); i++)
			;
		if (i < nd)
			continue;
		if (nd == JAIL_MAX_BINDS - 1)
			return sandbox__errf(
				err, errlen, -E2BIG,
				"ember's libraries are in more than "
				"%d directories",
				JAIL_MAX_BINDS - 1);
		snprintf(dirs[nd++], PATH_MAX, "%s", tok);
		rc = add(a, n, used, "--ro-bind");
		rc = rc ?: add(a, n, used, tok);
		if (rc)
			return sandbox__errf(err, errlen, rc,
					     "the jailer's command line: %s",
					     strerror(-rc));
	}
	return 0;
}

int jail__argv(const struct jail_start *s, struct jail_argv *out, char *err,
	       size_t errlen)
{
	char base[PATH_MAX], con[PATH_MAX + 8], num[32];
	size_t n = 0, used = 0;
	struct statfs sf;
	int rc, i;

	/* root = BASE/<name>/<id>/root */
	rc = files__pathf(base, sizeof(base), "%s", s->root);
	for (i = 0; rc == 0 && i < 3; i++) {
		char *slash = strrchr(base, '/');

		if (!slash || slash == base)
			rc = -EINVAL;
		else
			*slash = '\0';
	}
	if (rc)
		return sandbox__errf(err, errlen, rc, "bad jail root %s",
				     s->root);
	rc = add(out, &n, &used, s->jailer);
	rc = rc ?: add(out, &n, &used, "--id");
	rc = rc ?: add(out, &n, &used, s->id);
	rc = rc ?: add(out, &n, &used, "--exec-file");
	rc = rc ?: add(out, &n, &used, s->ember);
	snprintf(num, sizeof(num), "%u", (unsigned int)s->uid);
	rc = rc ?: add(out, &n, &used, "--uid");
	rc = rc ?: add(out, &n, &used, num);
	snprintf(num, sizeof(num), "%u", (unsigned int)s->gid);
	rc = rc ?: add(out, &n, &used, "--gid");
	rc = rc ?: add(out, &n, &used, num);
	rc = rc ?: add(out, &n, &used, "--chroot-base-dir");
	rc = rc ?: add(out, &n, &used, base);
	rc = rc ?: add(out, &n, &used, "--parent-cgroup");
	rc = rc ?: add(out, &n, &used, JAIL_PARENT_CGROUP);
	if (rc == 0 && s->mem_mib) {
		char cg[64];
		bool v2 = statfs("/sys/fs/cgroup", &sf) == 0 &&
			  sf.f_type == CGROUP2_MAGIC;

		snprintf(
			cg, sizeof(cg), "%s=%llu",
			v2 ? "memory.max" : "memory.limit_in_bytes",
			((unsigned long long)s->mem_mib + JAIL_MEM_OVERHEAD_MIB)
				<< 20);
		rc = add(out, &n, &used, "--cgroup");
		rc = rc ?: add(out, &n, &used, cg);
	}
	if (rc == 0 && s->netns) {
		rc = add(out, &n, &used, "--netns");
		rc = rc ?: add(out, &n, &used, s->netns);
	}
	if (rc == 0 && s->template_dir) {
		rc = add(out, &n, &used, "--ro-bind");
		rc = rc ?: add(out, &n, &used, s->template_dir);
	}
	if (rc)
		return sandbox__errf(err, errlen, rc,
				     "the jailer's command line: %s",
				     strerror(-rc));
	rc = add_lib_dirs(out, &n, &used, s->ember, err, errlen);
	if (rc)
		return rc;
	if (files__pathf(con, sizeof(con), "file:%s", s->p->e_console))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "console path too long");
	rc = add(out, &n, &used, "--");
	rc = rc ?: add(out, &n, &used, "--api-sock");
	rc = rc ?: add(out, &n, &used, s->p->e_api);
	rc = rc ?: add(out, &n, &used, "--console");
	rc = rc ?: add(out, &n, &used, con);
	/* The jail has no /sys: ember cannot see kvm_pvm there. */
	if (rc == 0 && pvm__detect()) {
		rc = add(out, &n, &used, "--pvm");
		rc = rc ?: add(out, &n, &used, "on");
	}
	if (rc)
		return sandbox__errf(err, errlen, rc,
				     "the jailer's command line: %s",
				     strerror(-rc));
	out->argv[n] = NULL;
	return 0;
}

int jail__link_in(const char *path, const char *root, const char *name,
		  uid_t uid, gid_t gid, char *err, size_t errlen)
{
	char to[PATH_MAX];

	if (files__pathf(to, sizeof(to), "%s/%s", root, name))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "jail path too long");
	if (chown(path, uid, gid) < 0 || chmod(path, 0600) < 0)
		return sandbox__errf(err, errlen, -errno,
				     "giving %s to the jail's %u:%u: %s", path,
				     (unsigned int)uid, (unsigned int)gid,
				     strerror(errno));
	if (link(path, to) < 0)
		return sandbox__errf(err, errlen, -errno,
				     "linking %s as %s: %s", path, to,
				     strerror(errno));
	return 0;
}

int jail__share_template(const char *dir, char *err, size_t errlen)
{
	static const char *const names[] = { TEMPLATE_STATE_NAME,
					     TEMPLATE_MEM_NAME,
					     TEMPLATE_DISK_NAME };
	char path[PATH_MAX];

	if (chmod(dir, 0711) < 0)
		return sandbox__errf(err, errlen, -errno, "chmod %s: %s", dir,
				     strerror(errno));
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (files__pathf(path, sizeof(path), "%s/%s", dir, names[i]))
			return sandbox__errf(err, errlen, -ENAMETOOLONG,
					     "template path too long");
		if (chmod(path, 0444) < 0)
			return sandbox__errf(err, errlen, -errno,
					     "chmod %s: %s", path,
					     strerror(errno));
	}
	return 0;
}

int jail__cleanup(const struct sandbox_info *i, char *err, size_t errlen)
{
	char root[PATH_MAX], out[CLEANUP_ERR], *name, *slash;
	const char *argv[12];
	struct stat st;
	int rc, n = 0;

	if (!i->jail_root[0])
		return 0;
	for (int t = 0;
	     t < 100 && i->ember > 0 && proc__alive(i->ember, i->ember_start);
	     t++)
		clock__sleep_ms(20);
	/* root = BASE/<name>/<id>/root: the jailer wants BASE and name. */
	if (files__pathf(root, sizeof(root), "%s", i->jail_root))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "jail path too long");
	slash = strrchr(root, '/'); /* /root */
	if (slash)
		*slash = '\0';
	slash = strrchr(root, '/'); /* /<id> */
	if (!slash)
		return sandbox__errf(err, errlen, -EINVAL, "bad jail root %s",
				     i->jail_root);
	*slash = '\0';
	name = strrchr(root, '/'); /* /<name> */
	if (!name || name == root)
		return sandbox__errf(err, errlen, -EINVAL, "bad jail root %s",
				     i->jail_root);
	*name++ = '\0';
	if (!i->jailer[0])
		return sandbox__errf(err, errlen, -EINVAL,
				     "jail %s: no jailer recorded",
				     i->jail_root);
	argv[n++] = i->jailer;
	argv[n++] = "--cleanup";
	argv[n++] = "--id";
	argv[n++] = i->id;
	argv[n++] = "--exec-file";
	argv[n++] = name;
	argv[n++] = "--chroot-base-dir";
	argv[n++] = root;
	argv[n++] = "--parent-cgroup";
	argv[n++] = JAIL_PARENT_CGROUP;
	argv[n] = NULL;
	rc = run_capture(argv, out, sizeof(out), true);
	if (rc < 0)
		return sandbox__errf(err, errlen, rc, "running %s: %s",
				     i->jailer, strerror(-rc));
	if (rc == 0)
		return 0;
	out[strcspn(out, "\n")] = '\0';
	/* Removed already, e.g. by the supervisor before a lookup. */
	if (lstat(i->jail_root, &st) < 0 && errno == ENOENT &&
	    strstr(out, "no such jail"))
		return 0;
	return sandbox__errf(err, errlen, -EIO, "%s", out);
}

int jail__parse_ids(const char *s, uid_t *uid, gid_t *gid)
{
	unsigned long long u, g;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	u = strtoull(s, &end, 10);
	if (errno || *end != ':' || end[1] < '0' || end[1] > '9')
		return -EINVAL;
	g = strtoull(end + 1, &end, 10);
	if (errno || *end || !u || !g || u >= 0xffffffffULL ||
	    g >= 0xffffffffULL)
		return -EINVAL;
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return 0;
}
