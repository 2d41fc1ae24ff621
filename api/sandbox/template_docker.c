// SPDX-License-Identifier: Apache-2.0
/*
 * A template from a Dockerfile (template.h, template__build_dockerfile):
 * the FROM image made into the base disk with ember's parts
 * (image__to_ext4()), then each step run in the build sandbox booted from
 * it (never on the host: a Dockerfile is untrusted input), the disk after
 * each step that changes it kept in the build cache under the step's key
 * (dockerfile__step_key(): the base's digest, every step before, the
 * step and its files) after each RUN and COPY, so that a rebuild starts
 * after the last cached step.  Then the image's new defaults (ENV, WORKDIR, USER) are written
 * into the guest and the build goes on as template__build() does (setup
 * commands, start and ready commands, interpreter, snapshot).
 *
 *   RUN        argv as the step gives it (shell form: its SHELL), as the
 *              USER in effect (else the base image's, else root), in the
 *              WORKDIR in effect, its ENV and ARGs added to the defaults
 *   COPY/ADD   the context's files through the agent: a directory as a
 *              tar made on the host (root's, --numeric-owner) and
 *              unpacked by the guest's tar, a file by `cat`; --chown and
 *              --chmod by chown -R / chmod -R in the guest; ADD of a
 *              local tar archive (plain or gzip, told by its content)
 *              streams it whole to tar in the guest, which extracts it
 *              into the destination (owners root's; --chown and --chmod
 *              not applied to what it holds, as Docker)
 *   WORKDIR    mkdir -p, as root
 *   the rest   metadata, into the defaults file at the end
 *
 * The cache: <state>/build-cache/KEY.ext4, a flattened disk each
 * (sparse), written to a temporary file and renamed; never evicted
 * (remove the directory to free it).
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../guest-init/protocol.h"
#include "../../snapshot/overlay.h"
#include "agent_client.h"
#include "build_cache.h"
#include "dockerfile.h"
#include "dockerignore.h"
#include "ember_api.h"
#include "files.h"
#include "image.h"
#include "lookup.h"
#include "sandbox.h"
#include "template.h"

#define CACHE_DIR_NAME "build-cache"
#define AGENT_MS       10000
#define KEY_LEN	       64

struct docker_build {
	const struct template_build_opts *o;
	const struct template_docker_opts *d;
	struct dockerfile df;
	struct dockerignore *ign; /* the context's .dockerignore; NULL: none */
	char *text;
	size_t len;
	struct image_config cfg; /* the base image's run defaults */
	char base_key[80]; /* "sha256:" and 64 hex digits */
	char (*keys)[KEY_LEN + 1]; /* one per step */
	size_t start; /* the first step to run: those before are cached */
	char cache[PATH_MAX];
	char base_user
		[64]; /* RUN's user without a USER: "root" or the base's */
	char user[64]; /* the template's default user */
};

/*
 * A step whose result is cached: RUN and COPY.  A WORKDIR (mkdir -p) is
 * redone after the last cached step: cheaper than a disk in the cache.
 */
static bool cached_step(const struct dockerfile_step *s)
{
	return s->kind == DOCKERFILE_RUN || s->kind == DOCKERFILE_COPY;
}

/* ---- the base and the keys (in the build's make_base) -------------------- */

/* sha256 hex of @n bytes at @p, as "sha256:HEX" into @out. */
static void sha256_key(const void *p, size_t n, char *out, size_t outsz)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	size_t off;

	EVP_Digest(p, n, md, &len, EVP_sha256(), NULL);
	off = (size_t)snprintf(out, outsz, "sha256:");
	for (unsigned int i = 0; i < len && off + 3 <= outsz; i++)
		off += (size_t)snprintf(out + off, outsz - off, "%02x", md[i]);
}

/*
 * The base's key: the image's manifest digest; for a directory or ext4
 * SRC (no digest) its path, size and change time; for a template its
 * name and creation time.
 */
static int base_key(struct docker_build *b, const char *src,
		    const struct template_info *t, char *err, size_t errlen)
{
	char buf[PATH_MAX + 128], path[PATH_MAX], tag[256];
	enum image_kind k;
	struct stat st;
	int n;

	if (t) {
		n = snprintf(buf, sizeof(buf), "template\n%s\n%lld\n", t->name,
			     (long long)t->created);
	} else if (b->cfg.digest[0]) {
		snprintf(b->base_key, sizeof(b->base_key), "%s", b->cfg.digest);
		return 0;
	} else {
		if (image__parse_src(src, &k, path, sizeof(path), tag,
				     sizeof(tag)) ||
		    stat(path, &st))
			return sandbox__errf(err, errlen, -ENOENT,
					     "FROM %s: cannot stat it", src);
		n = snprintf(buf, sizeof(buf), "src\n%s\n%lld\n%lld.%09ld\n",
			     src, (long long)st.st_size,
			     (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
	}
	if (n < 0 || (size_t)n >= sizeof(buf))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "FROM %s: too long", src);
	sha256_key(buf, (size_t)n, b->base_key, sizeof(b->base_key));
	return 0;
}

/* Parse the text again with the base's defaults and the build args. */
static int parse_with_base(struct docker_build *b, char *err, size_t errlen)
{
	const struct dockerfile_opts po = {
		.build_args = b->d->build_args,
		.n_build_args = b->d->n_build_args,
		.base_env = (const char *const *)b->cfg.env,
		.n_base_env = b->cfg.n_env,
		.base_workdir = b->cfg.workdir,
		.base_user = b->cfg.user && b->cfg.user[0] ? b->cfg.user : NULL,
	};

	dockerfile__free(&b->df);
	return dockerfile__parse(b->text, b->len, &po, &b->df, err, errlen);
}

/* Every step's key, and the first step not in the cache. */
static int step_keys(struct docker_build *b, char *err, size_t errlen)
{
	const char *prev = b->base_key;
	char path[PATH_MAX];
	uint8_t digest[32];
	int rc;

	b->keys = calloc(b->df.n_steps + 1, sizeof(*b->keys));
	if (!b->keys)
		return sandbox__errf(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; i < b->df.n_steps; i++) {
		const struct dockerfile_step *s = &b->df.steps[i];

		if (s->kind == DOCKERFILE_COPY) {
			rc = dockerfile__copy_digest(b->d->context, s, digest,
						     err, errlen);
			if (rc)
				return rc;
		}
		rc = dockerfile__step_key(
			s, prev, s->kind == DOCKERFILE_COPY ? digest : NULL,
			b->keys[i]);
		if (rc)
			return sandbox__errf(err, errlen, rc, "out of memory");
		prev = b->keys[i];
	}
	b->start = 0;
	for (size_t i = b->df.n_steps; i-- > 0;) {
		if (!cached_step(&b->df.steps[i]))
			continue;
		if (files__pathf(path, sizeof(path), "%s/%s.ext4", b->cache,
				 b->keys[i]))
			return sandbox__errf(err, errlen, -ENAMETOOLONG,
					     "%s: path too long", b->cache);
		if (access(path, R_OK) == 0) {
			b->start = i + 1;
			break;
		}
	}
	return 0;
}

/* The cached disk after step @i replaces @base. */
static int base_from_cache(struct docker_build *b, size_t i, const char *base,
			   char *err, size_t errlen)
{
	char path[PATH_MAX];
	int in, out, rc;

	if (files__pathf(path, sizeof(path), "%s/%s.ext4", b->cache,
			 b->keys[i]))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "%s: path too long", b->cache);
	in = open(path, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return sandbox__errf(err, errlen, -errno, "%s: %s", path,
				     strerror(errno));
	build_cache__touch(path); /* used now: evicted last */
	out = open(base, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	rc = out < 0 ? -errno : files__copy_sparse(in, out);
	if (out >= 0 && close(out) && !rc)
		rc = -errno;
	close(in);
	return rc ? sandbox__errf(err, errlen, rc, "copying %s: %s", path,
				  strerror(-rc)) :
		    0;
}

/*
 * A copy of the ext4 image @disk at @out with its journal recovered
 * (e2fsck -fy: 0, or 1 and 2 for what it fixed, are success).
 */
static int recovered_copy(const char *disk, const char *out, char *err,
			  size_t errlen)
{
	int in, o, rc, status;
	pid_t pid;

	in = open(disk, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return sandbox__errf(err, errlen, -errno, "%s: %s", disk,
				     strerror(errno));
	o = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	rc = o < 0 ? -errno : files__copy_sparse(in, o);
	if (o >= 0 && close(o) && !rc)
		rc = -errno;
	close(in);
	if (rc)
		return sandbox__errf(err, errlen, rc, "copying %s: %s", disk,
				     strerror(-rc));
	pid = fork();
	if (pid < 0)
		return sandbox__errf(err, errlen, -errno, "fork: %s",
				     strerror(errno));
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
		    dup2(null, 2) < 0)
			_exit(126);
		execlp("e2fsck", "e2fsck", "-fy", out, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return sandbox__errf(err, errlen, -errno, "waitpid: %s",
					     strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) > 2)
		return sandbox__errf(err, errlen, -EIO,
				     "FROM template: e2fsck -fy of its disk "
				     "failed (status %d)",
				     WIFEXITED(status) ? WEXITSTATUS(status) :
							 -1);
	return 0;
}

/* template_build_opts.make_base: the FROM image, or the cache's disk. */
static int docker_base(void *arg, const char *base, const char *work, char *err,
		       size_t errlen)
{
	struct docker_build *b = arg;
	const struct image_guest guest = {
		.init = b->d->img.init,
		.agent = b->d->img.agent,
		.busybox = b->d->img.busybox,
		.interp = b->d->img.interp,
		.add_user = true,
	};
	const struct image_opts io = {
		.disk_mib = b->d->img.disk_mib,
		.stop_fd = b->o->sig_fd,
		.guest = &guest,
		.times = b->o->times ? &b->o->times->image : NULL,
	};
	struct template_info t;
	char src[PATH_MAX + 8], copy[PATH_MAX] = "";
	int rc;

	if (b->df.from_template) {
		rc = template__open(b->df.from, &t, NULL, err, errlen);
		if (rc)
			return rc;
		if (files__pathf(src, sizeof(src),
				 "ext4:%s/" TEMPLATE_DISK_NAME, t.dir))
			return sandbox__errf(err, errlen, -ENAMETOOLONG,
					     "%s: path too long", t.dir);
		/*
		 * A template's disk was saved with the guest running: its
		 * journal needs recovery, which the guest parts written into
		 * it (debugfs) would not survive.  A copy, recovered.
		 */
		if (files__pathf(copy, sizeof(copy), "%s.from", base))
			return sandbox__errf(err, errlen, -ENAMETOOLONG,
					     "%s: path too long", base);
		rc = recovered_copy(src + 5, copy, err, errlen);
		if (rc) {
			unlink(copy);
			return rc;
		}
		snprintf(src, sizeof(src), "ext4:%s", copy);
	} else {
		snprintf(src, sizeof(src), "%s", b->df.from);
	}
	rc = image__to_ext4(&io, src, work, base, &b->cfg, err, errlen);
	if (copy[0])
		unlink(copy);
	if (!rc)
		rc = base_key(b, src, b->df.from_template ? &t : NULL, err,
			      errlen);
	/* A template's default user stands for its image's User. */
	if (!rc && b->df.from_template && t.user[0] && !b->cfg.user)
		b->cfg.user = strdup(t.user);
	if (!rc)
		rc = parse_with_base(b, err, errlen);
	if (!rc)
		rc = step_keys(b, err, errlen);
	if (!rc && b->start)
		rc = base_from_cache(b, b->start - 1, base, err, errlen);
	if (rc)
		return rc;
	snprintf(b->base_user, sizeof(b->base_user), "%s",
		 b->cfg.user && b->cfg.user[0] ? b->cfg.user : "root");
	snprintf(b->user, sizeof(b->user), "%s",
		 b->df.user		       ? b->df.user :
		 b->cfg.user && b->cfg.user[0] ? b->cfg.user :
						 IMAGE_USER_NAME);
	return 0;
}

/* ---- the steps, in the build sandbox --------------------------------------- */

/*
 * Run @argv in @sb as @user (NULL: the guest's default) in @cwd (NULL:
 * the default) with @env added to the defaults, stdin from @in_fd (-1:
 * none), output on @o->out_fd: 0 when it exited 0, else -ECANCELED (or
 * the failure) with "@what failed: ..." in @err.
 */
static int run_in(const struct docker_build *b, const struct sandbox_info *sb,
		  const char *const *argv, const char *user, const char *cwd,
		  const char *const *env, int in_fd, const char *what,
		  char *err, size_t errlen)
{
	struct agent_exec_req req = {
		.argv = argv,
		.env = env,
		.env_add = env != NULL,
		.user = user,
		.cwd = cwd,
		.stdin_fd = in_fd,
		.stdout_fd = b->o->out_fd,
		.stderr_fd = b->o->out_fd,
		.sig_fd = b->o->sig_fd,
	};
	struct agent_exec_result res;
	struct agent_client *c = agent_client__new();
	int rc;

	if (!c)
		return sandbox__errf(err, errlen, -ENOMEM, "out of memory");
	rc = agent_client__connect(c, sb->uds, EMBER_AGENT_PORT, AGENT_MS);
	if (!rc)
		rc = agent_client__exec(c, &req, &res);
	if (rc < 0)
		sandbox__errf(err, errlen, rc, "%s: %s", what,
			      agent_client__error(c));
	else if (res.kind == EMBER_AGENT_EXITED && res.code == 0)
		rc = 0;
	else
		rc = sandbox__errf(
			err, errlen, -ECANCELED, "%s failed: %s %d", what,
			res.kind == EMBER_AGENT_EXITED	  ? "exit status" :
			res.kind == EMBER_AGENT_SIGNALLED ? "killed by signal" :
							    "timed out after",
			res.code);
	agent_client__free(c);
	return rc;
}

/* A NULL-terminated copy of @v (@n entries); NULL when out of memory. */
static const char **vec(char *const *v, size_t n)
{
	const char **out = calloc(n + 1, sizeof(*out));

	for (size_t i = 0; out && i < n; i++)
		out[i] = v[i];
	return out;
}

/* RUN: the step's argv with its environment, user and workdir. */
static int step_run(const struct docker_build *b, const struct sandbox_info *sb,
		    const struct dockerfile_step *s, const char *what,
		    char *err, size_t errlen)
{
	const char **argv = vec(s->argv, s->argc);
	const char **env = vec(s->env, s->n_env);
	int rc;

	if (!argv || !env || !s->argc)
		rc = sandbox__errf(
			err, errlen, argv && env ? -EINVAL : -ENOMEM, "%s: %s",
			what, argv && env ? "nothing to run" : "out of memory");
	else
		rc = run_in(b, sb, argv, s->user ? s->user : b->base_user,
			    s->workdir, env, -1, what, err, errlen);
	free(argv);
	free(env);
	return rc;
}

/*
 * A pipe whose read end @fds[0] carries a tar of the files of @dir that
 * the NUL-separated list on @list names (dockerignore__tar_list(): what
 * .dockerignore leaves in; the host's GNU tar, every file root's): the
 * tar's pid, or a negative errno.
 */
static pid_t host_tar(const char *dir, int list, int fds[2])
{
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		pid = -errno;
		close(fds[0]);
		close(fds[1]);
		return pid;
	}
	if (pid == 0) {
		if (dup2(fds[1], 1) < 0 || dup2(list, 0) < 0)
			_exit(126);
		signal(SIGPIPE, SIG_DFL);
		execlp("tar", "tar", "-C", dir, "--owner=0", "--group=0",
		       "--numeric-owner", "--no-recursion", "--null", "-T", "-",
		       "-cf", "-", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	return pid;
}

/* One COPY source @host (a directory or a file) to the guest's @dest. */
static int copy_one(const struct docker_build *b, const struct sandbox_info *sb,
		    const char *host, const char *dest, bool into_dir,
		    const struct dockerfile_step *s, const char *what,
		    char *err, size_t errlen)
{
	static const char untar[] =
		"mkdir -p -- \"$0\" && exec tar -xf - -C \"$0\"";
	static const char cat[] =
		"mkdir -p -- \"$(dirname -- \"$0\")\" && cat >\"$0\" && "
		"chmod \"$1\" \"$0\"";
	char target[PATH_MAX], mode[8];
	struct stat st;
	int rc, fd, fds[2], status, list;
	pid_t pid;

	if (stat(host, &st))
		return sandbox__errf(err, errlen, -errno, "%s: %s: %s", what,
				     host, strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		const char *argv[] = { "sh", "-c", untar, dest, NULL };

		snprintf(target, sizeof(target), "%s", dest);
		list = dockerignore__tar_list(b->ign, b->d->context, host, err,
					      errlen);
		if (list < 0)
			return list;
		pid = host_tar(host, list, fds);
		close(list);
		if (pid < 0)
			return sandbox__errf(err, errlen, (int)pid,
					     "%s: tar: %s", what,
					     strerror((int)-pid));
		rc = run_in(b, sb, argv, "root", "/", NULL, fds[0], what, err,
			    errlen);
		close(fds[0]);
		if (waitpid(pid, &status, 0) == pid && rc == 0 &&
		    !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
			rc = sandbox__errf(err, errlen, -EIO,
					   "%s: the host's tar of %s failed",
					   what, host);
	} else if (S_ISREG(st.st_mode)) {
		const char *argv[] = { "sh", "-c", cat, target, mode, NULL };
		const char *slash = strrchr(host, '/');

		if (files__pathf(target, sizeof(target), "%s%s%s", dest,
				 into_dir && dest[strlen(dest) - 1] != '/' ?
					 "/" :
					 "",
				 into_dir ? slash + 1 : ""))
			return sandbox__errf(err, errlen, -ENAMETOOLONG,
					     "%s: path too long", what);
		snprintf(mode, sizeof(mode), "%o", st.st_mode & 07777);
		fd = open(host, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return sandbox__errf(err, errlen, -errno, "%s: %s: %s",
					     what, host, strerror(errno));
		rc = run_in(b, sb, argv, "root", "/", NULL, fd, what, err,
			    errlen);
		close(fd);
	} else {
		return sandbox__errf(err, errlen, -EINVAL,
				     "%s: %s is not a file or a directory",
				     what, host);
	}
	if (!rc && (s->chown || s->chmod)) {
		const char *chown[] = { "chown",  "-R",	  "--",
					s->chown, target, NULL };
		const char *chmod[] = { "chmod", "-R", s->chmod, target, NULL };

		if (s->chown)
			rc = run_in(b, sb, chown, "root", "/", NULL, -1, what,
				    err, errlen);
		if (!rc && s->chmod)
			rc = run_in(b, sb, chmod, "root", "/", NULL, -1, what,
				    err, errlen);
	}
	return rc;
}

/*
 * Whether @host is a local tar archive ADD extracts, by its content as
 * Docker tells: gzip's magic (*@gz set) or tar's "ustar" at 257.
 */
static bool is_archive(const char *host, bool *gz)
{
	unsigned char h[263];
	struct stat st;
	ssize_t n;
	int fd;

	*gz = false;
	if (stat(host, &st) || !S_ISREG(st.st_mode))
		return false;
	fd = open(host, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = pread(fd, h, sizeof(h), 0);
	close(fd);
	if (n >= 2 && h[0] == 0x1f && h[1] == 0x8b)
		return *gz = true;
	return n == (ssize_t)sizeof(h) && !memcmp(h + 257, "ustar", 5);
}

/*
 * ADD of a local archive @host: its bytes streamed to the guest, where
 * tar (ember's busybox when the image has it, else the image's)
 * extracts them into @dest as root, owners not restored (root's, as
 * Docker's); gzip undone in the guest too: nothing of the archive is
 * unpacked on the host.
 */
static int extract_one(const struct docker_build *b,
		       const struct sandbox_info *sb, const char *host,
		       const char *dest, bool gz, const char *what, char *err,
		       size_t errlen)
{
	static const char untar[] =
		"mkdir -p -- \"$0\" && bb=" EMBER_GUEST_BINDIR "/busybox && "
		"{ [ -x \"$bb\" ] || bb=; } && exec $bb tar -x\"$1\"of - -C \"$0\"";
	const char *argv[] = { "sh", "-c", untar, dest, gz ? "z" : "", NULL };
	int fd, rc;

	fd = open(host, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sandbox__errf(err, errlen, -errno, "%s: %s: %s", what,
				     host, strerror(errno));
	rc = run_in(b, sb, argv, "root", "/", NULL, fd, what, err, errlen);
	close(fd);
	return rc;
}

/*
 * Drop from @g the matches .dockerignore leaves out of the context; the
 * number left.
 */
static size_t ignore_matches(const struct docker_build *b, glob_t *g)
{
	size_t n = 0;

	for (size_t k = 0; k < g->gl_pathc; k++) {
		if (dockerignore__match_under(b->ign, b->d->context,
					      g->gl_pathv[g->gl_offs + k])) {
			free(g->gl_pathv[g->gl_offs + k]);
			continue;
		}
		g->gl_pathv[g->gl_offs + n++] = g->gl_pathv[g->gl_offs + k];
	}
	g->gl_pathc = n;
	g->gl_pathv[g->gl_offs + n] = NULL;
	return n;
}

/* COPY and ADD: every source, globs expanded; ADD extracts archives. */
static int step_copy(const struct docker_build *b,
		     const struct sandbox_info *sb,
		     const struct dockerfile_step *s, const char *what,
		     char *err, size_t errlen)
{
	char pattern[PATH_MAX];
	size_t total = 0;
	glob_t g[64];
	int rc = 0;

	if (s->n_src > sizeof(g) / sizeof(g[0]))
		return sandbox__errf(err, errlen, -E2BIG,
				     "%s: more than %zu sources", what,
				     sizeof(g) / sizeof(g[0]));
	memset(g, 0, sizeof(g));
	for (size_t i = 0; i < s->n_src && !rc; i++) {
		if (files__pathf(pattern, sizeof(pattern), "%s/%s",
				 b->d->context, s->src[i]))
			rc = sandbox__errf(err, errlen, -ENAMETOOLONG,
					   "%s: path too long", what);
		else if (glob(pattern, GLOB_NOSORT, NULL, &g[i]))
			rc = sandbox__errf(err, errlen, -ENOENT,
					   "%s: %s matches nothing in the "
					   "context",
					   what, s->src[i]);
		else
			total += ignore_matches(b, &g[i]);
		if (!rc && !g[i].gl_pathc)
			rc = sandbox__errf(err, errlen, -ENOENT,
					   "%s: %s matches nothing in the "
					   "context (.dockerignore leaves it "
					   "out)",
					   what, s->src[i]);
	}
	for (size_t i = 0; i < s->n_src && !rc; i++)
		for (size_t k = 0; k < g[i].gl_pathc && !rc; k++) {
			const char *host = g[i].gl_pathv[k];
			bool gz;

			if (s->add && is_archive(host, &gz))
				rc = extract_one(b, sb, host, s->dest, gz, what,
						 err, errlen);
			else
				rc = copy_one(
					b, sb, host, s->dest,
					total > 1 ||
						s->dest[strlen(s->dest) - 1] ==
							'/',
					s, what, err, errlen);
		}
	for (size_t i = 0; i < s->n_src; i++)
		if (g[i].gl_pathv)
			globfree(&g[i]);
	return rc;
}

/*
 * The disk as it is now into the cache under @key: the guest synced and
 * paused while its overlay is copied, then the copy flattened over the
 * base.  A failure to cache is said, not fatal.
 */
static void cache_save(const struct docker_build *b,
		       const struct sandbox_info *sb, const char *ovl,
		       const char *key)
{
	const char *sync[] = { "sync", NULL };
	char api[PATH_MAX], copy[PATH_MAX], tmp[PATH_MAX], path[PATH_MAX],
		why[512];
	int in = -1, out = -1, rc;

	if (files__pathf(api, sizeof(api), "%s/" SANDBOX_API_NAME, sb->dir) ||
	    files__pathf(copy, sizeof(copy), "%s.copy", ovl) ||
	    files__pathf(path, sizeof(path), "%s/%s.ext4", b->cache, key) ||
	    files__pathf(tmp, sizeof(tmp), "%s.tmp-%d", path, (int)getpid()))
		return;
	rc = run_in(b, sb, sync, "root", "/", NULL, -1, "sync", why,
		    sizeof(why));
	if (!rc)
		rc = ember_api__pause(api, true, why, sizeof(why));
	if (!rc) {
		in = open(ovl, O_RDONLY | O_CLOEXEC);
		out = open(copy, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			   0600);
		rc = in < 0 || out < 0 ? -errno : files__copy_sparse(in, out);
		if (in >= 0)
			close(in);
		if (out >= 0)
			close(out);
		if (ember_api__pause(api, false, why, sizeof(why)) < 0 && !rc)
			rc = -EIO;
	}
	if (!rc)
		rc = overlay__flatten(copy, tmp, why, sizeof(why));
	if (!rc && rename(tmp, path))
		rc = -errno;
	unlink(copy);
	unlink(tmp);
	if (rc)
		dprintf(b->o->out_fd, "(not cached: %s)\n",
			why[0] ? why : strerror(-rc));
}

/* The image's defaults after the last step, as the guest's file. */
static int write_defaults(const struct docker_build *b,
			  const struct sandbox_info *sb, char *err,
			  size_t errlen)
{
	const char *argv[] = { "sh", "-c", "cat >\"$0\"", EMBER_GUEST_DEFAULTS,
			       NULL };
	struct image_config c = {
		.env = b->df.env,
		.n_env = b->df.n_env,
		.workdir = (char *)b->df.workdir,
		.user = (char *)b->user,
	};
	char *text = NULL;
	size_t len;
	int fd, rc;

	rc = image__defaults(&c, NULL, &text, &len, err, errlen);
	if (rc)
		return rc;
	fd = memfd_create("ember-defaults", MFD_CLOEXEC);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len ||
	    lseek(fd, 0, SEEK_SET) < 0) {
		rc = sandbox__errf(err, errlen, -errno, "memfd: %s",
				   strerror(errno));
	} else {
		rc = run_in(b, sb, argv, "root", "/", NULL, fd,
			    "writing the image's defaults", err, errlen);
	}
	if (fd >= 0)
		close(fd);
	free(text);
	return rc;
}

static void evict(const struct docker_build *b);

/* template_build_opts.steps: each step not in the cache, then defaults. */
static int docker_steps(void *arg, const struct sandbox_info *sb,
			const char *ovl, char *err, size_t errlen)
{
	struct docker_build *b = arg;
	size_t n = b->df.n_steps;
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++) {
		const struct dockerfile_step *s = &b->df.steps[i];
		char what[96];

		snprintf(what, sizeof(what), "step %zu/%zu (line %d, %s)",
			 i + 1, n, s->line, dockerfile__kind_name(s->kind));
		if (i < b->start) {
			dprintf(b->o->out_fd, "+ %s: cached\n", what);
			continue;
		}
		dprintf(b->o->out_fd, "+ %s%s%s\n", what,
			s->kind == DOCKERFILE_RUN ? ": " : "",
			s->kind == DOCKERFILE_RUN ? s->argv[s->argc - 1] : "");
		switch (s->kind) {
		case DOCKERFILE_RUN:
			rc = step_run(b, sb, s, what, err, errlen);
			break;
		case DOCKERFILE_COPY:
			rc = step_copy(b, sb, s, what, err, errlen);
			break;
		case DOCKERFILE_WORKDIR: {
			const char *argv[] = { "mkdir", "-p", "--", s->workdir,
					       NULL };

			rc = run_in(b, sb, argv, "root", "/", NULL, -1, what,
				    err, errlen);
			break;
		}
		default:
			break; /* metadata: into the defaults at the end */
		}
		if (!rc && cached_step(s)) {
			cache_save(b, sb, ovl, b->keys[i]);
			/* A build of many steps adds a disk each: the floor
			   holds during the build too (the newest stay). */
			evict(b);
		}
	}
	return rc ? rc : write_defaults(b, sb, err, errlen);
}

/*
 * The cache kept under its bounds (build_cache.h) before a build (room
 * for it), after each step it caches, and after it, failed or not; what
 * went is said.  A bad EMBER_BUILD_CACHE_MIB or
 * EMBER_BUILD_CACHE_MIN_FREE_MIB was refused before the build.
 */
static void evict(const struct docker_build *b)
{
	char why[512];
	uint64_t max, floor, kept;
	size_t gone;

	if (build_cache__limit(&max, why, sizeof(why)) < 0 ||
	    build_cache__min_free(b->cache, &floor, why, sizeof(why)) < 0)
		return;
	if (build_cache__evict(b->cache, max, floor, &gone, &kept, why,
			       sizeof(why)) < 0)
		dprintf(b->o->out_fd, "(build cache: %s)\n", why);
	else if (gone)
		dprintf(b->o->out_fd,
			"(build cache: %zu least recently used step%s "
			"removed, %llu MiB kept, bound %llu MiB, %llu MiB "
			"left free on its disk)\n",
			gone, gone == 1 ? "" : "s",
			(unsigned long long)(kept >> 20),
			(unsigned long long)(max >> 20),
			(unsigned long long)(floor >> 20));
}

/* ---- the build ------------------------------------------------------------ */

int template__build_dockerfile(const struct template_build_opts *o,
			       const struct template_docker_opts *d,
			       const char *name, char *err, size_t errlen)
{
	struct docker_build b = { .o = o, .d = d };
	struct template_build_opts bo = *o;
	char state[PATH_MAX], rec[PATH_MAX + 16];
	int fd, rc;

	/* The text, parsed once now: a bad Dockerfile starts nothing. */
	fd = open(d->dockerfile, O_RDONLY | O_CLOEXEC);
	b.text = malloc(DOCKERFILE_MAX_BYTES + 1);
	rc = fd < 0 || !b.text ? (fd < 0 ? -errno : -ENOMEM) : 0;
	while (!rc && b.len <= DOCKERFILE_MAX_BYTES) {
		ssize_t n = read(fd, b.text + b.len,
				 DOCKERFILE_MAX_BYTES + 1 - b.len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : 0;
			break;
		}
		b.len += (size_t)n;
	}
	if (fd >= 0)
		close(fd);
	if (!rc && b.len > DOCKERFILE_MAX_BYTES)
		rc = -EFBIG;
	if (rc) {
		free(b.text);
		return sandbox__errf(err, errlen, rc, "%s: %s", d->dockerfile,
				     rc == -EFBIG ? "over 1 MiB" :
						    strerror(-rc));
	}
	rc = dockerfile__parse(b.text, b.len, NULL, &b.df, err, errlen);
	if (!rc)
		rc = dockerignore__load(d->context, &b.ign, err, errlen);
	if (!rc) {
		uint64_t max, floor;

		/* The environment's bounds checked now, before anything. */
		rc = build_cache__limit(&max, err, errlen);
		if (!rc)
			rc = build_cache__min_free(".", &floor, err, errlen);
	}
	for (size_t i = 0; !rc && i < b.df.n_notes; i++)
		dprintf(o->out_fd, "%s: %s\n", d->dockerfile, b.df.notes[i]);
	if (!rc)
		rc = sandbox__state_dir(state, sizeof(state), err, errlen);
	if (!rc &&
	    files__pathf(b.cache, sizeof(b.cache), "%s/" CACHE_DIR_NAME, state))
		rc = sandbox__errf(err, errlen, -ENAMETOOLONG,
				   "state path too long");
	if (!rc && mkdir(b.cache, 0700) && errno != EEXIST)
		rc = sandbox__errf(err, errlen, -errno, "%s: %s", b.cache,
				   strerror(errno));
	if (rc)
		goto out;
	evict(&b);
	snprintf(rec, sizeof(rec), "dockerfile:%s", d->dockerfile);
	bo.rootfs = rec;
	bo.make_base = docker_base;
	bo.make_base_arg = &b;
	bo.steps = docker_steps;
	bo.steps_arg = &b;
	bo.append = "init=" IMAGE_GUEST_INIT;
	bo.user = b.user; /* filled by docker_base() */
	rc = template__build(&bo, name, err, errlen);
	evict(&b);
out:
	dockerignore__free(b.ign);
	dockerfile__free(&b.df);
	image_config__free(&b.cfg);
	free(b.keys);
	free(b.text);
	return rc;
}
