// SPDX-License-Identifier: Apache-2.0
/*
 * ember's guest parts in a disk made from the user's image (image.h,
 * struct image_guest): init, the agent, the image's run defaults, a
 * busybox for images without a shell, and the `user` account.  All
 * written into the ext4 file with debugfs, like the owners
 * (image_disk.c): no mount, no root, and a root directory or ext4 SRC is
 * never changed (the disk is our copy).
 *
 * debugfs is driven by scripts of commands with plain names after a cd
 * (its mkdir of an absolute path that exists makes one inside the
 * current directory instead of failing); what is there already is asked
 * first, one `stat` per path (its output and errors share one log, in no
 * reliable order).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../guest-init/protocol.h"
#include "files.h"
#include "image.h"
#include "image_internal.h"

#define ETC_MAX	     (1u << 20) /* /etc/passwd or /etc/group read back */
#define SUDOERS_NAME "ember-user"

/* ---- pure: the defaults file and the account ----------------------------- */

int image__defaults(const struct image_config *c, const char *user, char **out,
		    size_t *len, char *err, size_t errlen)
{
	const char **env = NULL;
	char *path = NULL, *b = NULL;
	long n;

	*out = NULL;
	*len = 0;
	if (c->n_env > EMBER_DEFAULTS_MAX_ENV)
		return sandbox__errf(err, errlen, -E2BIG,
				     "the image has %zu Env entries; ember "
				     "takes %d",
				     c->n_env, EMBER_DEFAULTS_MAX_ENV);
	env = calloc(c->n_env + 1, sizeof(*env));
	b = malloc(EMBER_DEFAULTS_MAX);
	if (!env || !b)
		goto nomem;
	for (size_t i = 0; i < c->n_env; i++) {
		env[i] = c->env[i];
		/* ember's busybox last: images without sh or sync. */
		if (!strncmp(c->env[i], "PATH=", 5) && !path) {
			if (asprintf(&path, "%s:%s", c->env[i],
				     EMBER_GUEST_BINDIR) < 0) {
				path = NULL;
				goto nomem;
			}
			env[i] = path;
		}
	}
	if (!user && c->user && c->user[0])
		user = c->user;
	n = ember_defaults_encode(
		b, EMBER_DEFAULTS_MAX, env,
		c->workdir && c->workdir[0] ? c->workdir : NULL, user);
	free(env);
	free(path);
	if (n == EMBER_AGENT_E_NOSPACE) {
		free(b);
		return sandbox__errf(err, errlen, -E2BIG,
				     "the image's Env, WorkingDir and User "
				     "take over %u bytes (ember's limit)",
				     EMBER_DEFAULTS_MAX);
	}
	if (n < 0) {
		free(b);
		return sandbox__errf(err, errlen, -EINVAL,
				     "the image's Env, WorkingDir or User "
				     "cannot be a default: an Env entry "
				     "without NAME=, a relative WorkingDir "
				     "or a User that is not NAME, UID, "
				     "NAME:GROUP or UID:GID");
	}
	*out = b;
	*len = (size_t)n;
	return 0;
nomem:
	free(env);
	free(path);
	free(b);
	return sandbox__errf(err, errlen, -ENOMEM, "out of memory");
}

int image__defaults_parse(const void *buf, size_t len, struct image_config *c,
			  char *err, size_t errlen)
{
	static const char bindir[] = ":" EMBER_GUEST_BINDIR;
	struct ember_defaults d;
	size_t n;

	if (ember_defaults_decode(buf, len, &d) < 0)
		return sandbox__errf(err, errlen, -EINVAL,
				     "the defaults file: record %u: %s",
				     d.record, d.why);
	if (d.envc) {
		c->env = calloc(d.envc, sizeof(*c->env));
		if (!c->env)
			goto nomem;
	}
	for (uint32_t i = 0; i < d.envc; i++) {
		c->env[i] = strdup(d.env[i]);
		if (!c->env[i])
			goto nomem;
		c->n_env++;
		n = strlen(c->env[i]);
		if (!strncmp(c->env[i], "PATH=", 5) && n >= sizeof(bindir) &&
		    !strcmp(c->env[i] + n - (sizeof(bindir) - 1), bindir))
			c->env[i][n - (sizeof(bindir) - 1)] = '\0';
	}
	if ((d.cwd && !(c->workdir = strdup(d.cwd))) ||
	    (d.user && !(c->user = strdup(d.user))))
		goto nomem;
	return 0;
nomem:
	image_config__free(c);
	return sandbox__errf(err, errlen, -ENOMEM, "out of memory");
}

/*
 * Is @id the id (field @field, 2 or 3, of the colon-separated lines) of
 * a line of @text, or, with @name, is @name a line's first field?
 * Returns 1 and the line's fields 2 and 3 in *@a and *@b when found.
 */
static int etc_find(const char *text, const char *name, int field, uint32_t id,
		    uint32_t *a, uint32_t *b)
{
	const char *l = text;

	while (l && *l) {
		const char *end = strchr(l, '\n');
		size_t len = end ? (size_t)(end - l) : strlen(l);
		const char *f[4] = { l, NULL, NULL, NULL };
		int nf = 1;

		for (size_t i = 0; i < len && nf < 4; i++)
			if (l[i] == ':')
				f[nf++] = l + i + 1;
		if (nf == 4) {
			unsigned long v2 = strtoul(f[2], NULL, 10);
			unsigned long v3 = strtoul(f[3], NULL, 10);
			size_t nlen = (size_t)(f[1] - 1 - f[0]);
			bool hit = name ? (strlen(name) == nlen &&
					   !strncmp(f[0], name, nlen)) :
					  (field == 2 ? v2 : v3) == id;

			if (hit) {
				*a = (uint32_t)v2;
				*b = (uint32_t)v3;
				return 1;
			}
		}
		l = end ? end + 1 : NULL;
	}
	return 0;
}

/* The first id from IMAGE_USER_ID up that no line of @text has in @field. */
static int etc_free_id(const char *text, int field, uint32_t *id)
{
	uint32_t a, b;

	for (uint32_t i = IMAGE_USER_ID; i < 65534; i++) {
		if (!text || !etc_find(text, NULL, field, i, &a, &b)) {
			*id = i;
			return 0;
		}
	}
	return -EOVERFLOW;
}

/* @text (or @first when NULL), ending in a newline, then @line. */
static char *etc_append(const char *text, const char *first, const char *line)
{
	const char *t = text ? text : first;
	size_t tl = strlen(t);
	bool nl = tl && t[tl - 1] != '\n';
	char *out = malloc(tl + nl + strlen(line) + 1);

	if (out)
		sprintf(out, "%s%s%s", t, nl ? "\n" : "", line);
	return out;
}

int image__user_add(const char *passwd, const char *group, const char *name,
		    const char *home, const char *shell, char **new_passwd,
		    char **new_group, uint32_t *uid, uint32_t *gid)
{
	char line[512];
	uint32_t a, b;
	int rc;

	*new_passwd = *new_group = NULL;
	if (passwd && etc_find(passwd, name, 0, 0, uid, gid))
		return 1;
	rc = etc_free_id(passwd, 2, uid);
	if (rc)
		return rc;
	if (group && etc_find(group, name, 0, 0, gid, &b))
		; /* the group is there: keep it */
	else if (!group || !etc_find(group, NULL, 2, *uid, &a, &b))
		*gid = *uid;
	else if ((rc = etc_free_id(group, 2, gid)))
		return rc;
	snprintf(line, sizeof(line), "%s:x:%u:%u::%s:%s\n", name, *uid, *gid,
		 home, shell);
	*new_passwd =
		etc_append(passwd, "root:x:0:0:root:/root:/bin/sh\n", line);
	if (group && etc_find(group, name, 0, 0, &a, &b))
		*new_group = strdup(group);
	else {
		snprintf(line, sizeof(line), "%s:x:%u:\n", name, *gid);
		*new_group = etc_append(group, "root:x:0:\n", line);
	}
	if (!*new_passwd || !*new_group) {
		free(*new_passwd);
		free(*new_group);
		*new_passwd = *new_group = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* ---- asking the disk ----------------------------------------------------- */

/*
 * Can @path go in a debugfs command, between double quotes?  debugfs
 * has no escape for a '"' and a newline ends its command, so either
 * would let the image (its WorkingDir) write commands of its own, such
 * as `dump` to a host file; a backslash and other control characters
 * are refused as well.
 */
static bool debugfs_quotable(const char *path)
{
	for (const unsigned char *c = (const unsigned char *)path; *c; c++)
		if (*c == '"' || *c == '\\' || *c < 0x20 || *c == 0x7f)
			return false;
	return true;
}

/* One debugfs request (-R) on @disk, read-only, its output in j->log. */
static int ask(struct image_job *j, const char *disk, const char *request)
{
	const char *argv[] = { "debugfs", "-R", request, disk, NULL };

	return image__step(j, "reading the disk (debugfs)", argv);
}

/*
 * What @path is on @disk (symbolic links on the way followed, not the
 * last): 'd', 'f' (regular), 'l' (link), 'o' (other), or 0 when there is
 * none.  Negative errno with j->err when debugfs failed.
 */
static int disk_type(struct image_job *j, const char *disk, const char *path)
{
	char req[PATH_MAX + 16], line[512];
	int type = -EIO;
	FILE *f;
	int rc;

	if (!debugfs_quotable(path))
		return sandbox__errf(j->err, j->errlen, -EINVAL,
				     "a path with a quote, backslash or "
				     "control character (debugfs cannot "
				     "take it)");
	snprintf(req, sizeof(req), "stat \"%s\"", path);
	rc = ask(j, disk, req);
	if (rc)
		return rc;
	f = fopen(j->log, "re");
	if (!f)
		return sandbox__errf(j->err, j->errlen, -errno, "%s: %s",
				     j->log, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		const char *t = strstr(line, "Type: ");

		if (t && !strncmp(line, "Inode: ", 7)) {
			t += 6;
			type = !strncmp(t, "directory", 9) ? 'd' :
			       !strncmp(t, "regular", 7)   ? 'f' :
			       !strncmp(t, "symlink", 7)   ? 'l' :
							     'o';
			break;
		}
		if (strstr(line, "File not found by ext2_lookup")) {
			type = 0;
			break;
		}
	}
	fclose(f);
	if (type == -EIO)
		return sandbox__errf(j->err, j->errlen, -EIO,
				     "reading the disk (debugfs): cannot "
				     "stat %s",
				     path);
	return type;
}

/*
 * The regular file @path of @disk into the malloc()ed NUL-terminated
 * *@text (NULL when there is none), by `dump` to @host.
 */
static int disk_read(struct image_job *j, const char *disk, const char *path,
		     const char *host, char **text)
{
	char req[2 * PATH_MAX + 16];
	struct stat st;
	int type, fd, rc = 0;
	ssize_t n;

	*text = NULL;
	type = disk_type(j, disk, path);
	if (type <= 0)
		return type;
	if (type != 'f')
		return sandbox__errf(j->err, j->errlen, -EINVAL,
				     "the image's %s is not a regular file",
				     path);
	snprintf(req, sizeof(req), "dump \"%s\" \"%s\"", path, host);
	rc = ask(j, disk, req);
	if (rc)
		return rc;
	fd = open(host, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) || st.st_size > ETC_MAX) {
		rc = fd < 0 ? -errno : -EFBIG;
		if (fd >= 0)
			close(fd);
		return sandbox__errf(j->err, j->errlen, rc,
				     "reading the image's %s: %s", path,
				     strerror(-rc));
	}
	*text = malloc((size_t)st.st_size + 1);
	n = *text ? read(fd, *text, (size_t)st.st_size) : -1;
	close(fd);
	unlink(host);
	if (n != st.st_size) {
		free(*text);
		*text = NULL;
		return sandbox__errf(j->err, j->errlen, -EIO,
				     "reading the image's %s", path);
	}
	(*text)[n] = '\0';
	/* A NUL inside is no passwd file to edit line by line. */
	if (strlen(*text) != (size_t)n) {
		free(*text);
		*text = NULL;
		return sandbox__errf(j->err, j->errlen, -EINVAL,
				     "the image's %s holds a NUL byte", path);
	}
	return 0;
}

/* @text into the new host file @path (mode 0600: debugfs sets the mode). */
static int host_write(struct image_job *j, const char *path, const char *text,
		      size_t len)
{
	char tmp[PATH_MAX];
	int rc = files__pathf(tmp, sizeof(tmp), "%s.tmp", path);

	if (!rc)
		rc = files__replace(path, tmp, text, len, 0600, 0);
	return rc ? sandbox__errf(j->err, j->errlen, rc, "%s: %s", path,
				  strerror(-rc)) :
		    0;
}

/* ---- the script ---------------------------------------------------------- */

#define SCRIPT_DIRS 16

struct script {
	FILE *f;
	struct image_job *j;
	const char *disk;
	/* the directories the script makes: not on the disk yet */
	char *made[SCRIPT_DIRS];
	size_t n_made;
};

static bool script_made(const struct script *s, const char *dir)
{
	for (size_t i = 0; i < s->n_made; i++)
		if (!strcmp(s->made[i], dir))
			return true;
	return false;
}

/*
 * `mkdir` each missing directory of the absolute @dir (root-owned,
 * 0755), which must be a directory if it is there.
 */
static int ensure_dir(struct script *s, const char *dir, bool *made)
{
	char p[PATH_MAX];
	size_t len = strlen(dir);
	int type;

	*made = false;
	if (len >= sizeof(p))
		return sandbox__errf(s->j->err, s->j->errlen, -ENAMETOOLONG,
				     "%s: path too long", dir);
	if (!debugfs_quotable(dir))
		return sandbox__errf(s->j->err, s->j->errlen, -EINVAL,
				     "a directory of the image's with a "
				     "quote, backslash or control character "
				     "in its name: ember cannot make it");
	for (size_t i = 1; i <= len; i++) {
		if (dir[i] != '/' && dir[i] != '\0')
			continue;
		memcpy(p, dir, i);
		p[i] = '\0';
		if (script_made(s, p)) {
			*made = true;
			continue;
		}
		type = disk_type(s->j, s->disk, p);
		if (type < 0)
			return type;
		if (type == 'd')
			continue;
		if (type)
			return sandbox__errf(
				s->j->err, s->j->errlen, -ENOTDIR,
				"the image's %s is not a directory (%s)", p,
				!strncmp(dir, EMBER_GUEST_LIBDIR,
					 strlen(EMBER_GUEST_LIBDIR)) ?
					"ember puts its parts in " EMBER_GUEST_LIBDIR :
				!strcmp(dir, "/etc") || !strcmp(dir, "/home") ?
					"ember adds the account " IMAGE_USER_NAME :
					"ember makes the WorkingDir");
		if (s->n_made == SCRIPT_DIRS ||
		    !(s->made[s->n_made] = strdup(p)))
			return sandbox__errf(s->j->err, s->j->errlen, -ENOMEM,
					     "%s: too many directories", p);
		s->n_made++;
		{
			const char *base = strrchr(p, '/') + 1;

			fprintf(s->f, "cd \"%.*s\"\nmkdir \"%s\"\n",
				(int)(base - p), p, base);
			fprintf(s->f,
				"sif \"%s\" mode 040755\nsif \"%s\" uid 0\n"
				"sif \"%s\" gid 0\n",
				base, base, base);
		}
		*made = true;
	}
	return 0;
}

/*
 * Put the host file @host at @dir/@name (cd'ed there) as root's with
 * @mode; @fresh: @dir was just made, else a file there is removed first.
 */
static int put(struct script *s, const char *dir, const char *name,
	       const char *host, unsigned int mode, uint32_t uid, uint32_t gid,
	       bool fresh)
{
	char p[PATH_MAX];

	if (!debugfs_quotable(dir) || !debugfs_quotable(name) ||
	    !debugfs_quotable(host))
		return sandbox__errf(s->j->err, s->j->errlen, -EINVAL,
				     "a name with a quote, backslash or "
				     "control character (debugfs cannot "
				     "take it)");
	if (!fresh) {
		int type;

		snprintf(p, sizeof(p), "%s/%s", dir, name);
		type = disk_type(s->j, s->disk, p);
		if (type < 0)
			return type;
		if (type == 'd')
			return sandbox__errf(s->j->err, s->j->errlen, -EISDIR,
					     "the image's %s is a directory",
					     p);
		if (type)
			fprintf(s->f, "cd \"%s\"\nrm \"%s\"\n", dir, name);
	}
	fprintf(s->f,
		"cd \"%s\"\nwrite \"%s\" \"%s\"\nsif \"%s\" mode 0%o\n"
		"sif \"%s\" uid %u\nsif \"%s\" gid %u\n",
		dir, host, name, name, S_IFREG | mode, name, uid, name, gid);
	return 0;
}

/* busybox's applets, a link each in EMBER_GUEST_BINDIR (just made). */
static int applets(struct script *s, const char *busybox)
{
	const char *argv[] = { busybox, "--list", NULL };
	char line[128];
	FILE *f;
	int rc;

	rc = image__step(s->j, "listing busybox's applets", argv);
	if (rc)
		return rc;
	f = fopen(s->j->log, "re");
	if (!f)
		return sandbox__errf(s->j->err, s->j->errlen, -errno, "%s: %s",
				     s->j->log, strerror(errno));
	fprintf(s->f, "cd \"%s\"\n", EMBER_GUEST_BINDIR);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		/* Applet names: [, [[, and [a-z0-9_.-]. */
		if (!line[0] ||
		    strspn(line, "abcdefghijklmnopqrstuvwxyz"
				 "0123456789_.-[") != strlen(line) ||
		    !strcmp(line, "busybox"))
			continue;
		fprintf(s->f, "symlink \"%s\" busybox\n", line);
	}
	fclose(f);
	return 0;
}

/*
 * The account (image__user_add) and its home; sudo where the image has
 * /etc/sudoers.d.  *@user: the default user's name.
 */
static int account(struct script *s, const char *busybox, const char **user)
{
	char pw_host[PATH_MAX], gr_host[PATH_MAX], su_host[PATH_MAX];
	char *pw = NULL, *gr = NULL, *npw = NULL, *ngr = NULL;
	const char *shell = EMBER_GUEST_BINDIR "/sh";
	uint32_t uid, gid;
	bool made;
	int rc, type;

	if (files__pathf(pw_host, sizeof(pw_host), "%s/passwd", s->j->work) ||
	    files__pathf(gr_host, sizeof(gr_host), "%s/group", s->j->work) ||
	    files__pathf(su_host, sizeof(su_host), "%s/sudoers", s->j->work))
		return sandbox__errf(s->j->err, s->j->errlen, -ENAMETOOLONG,
				     "%s: path too long", s->j->work);
	/* Its login shell: bash, else sh, else busybox's. */
	type = disk_type(s->j, s->disk, "/bin/bash");
	if (type == 'f' || type == 'l')
		shell = "/bin/bash";
	else if (type >= 0)
		type = disk_type(s->j, s->disk, "/bin/sh");
	if (type < 0)
		return type;
	if (type && strcmp(shell, "/bin/bash"))
		shell = "/bin/sh";
	else if (!type && !busybox)
		shell = "/bin/sh"; /* none at all: no login */
	rc = disk_read(s->j, s->disk, "/etc/passwd", pw_host, &pw);
	if (!rc)
		rc = disk_read(s->j, s->disk, "/etc/group", gr_host, &gr);
	if (!rc)
		rc = image__user_add(pw, gr, IMAGE_USER_NAME, IMAGE_USER_HOME,
				     shell, &npw, &ngr, &uid, &gid);
	if (rc < 0) {
		if (rc == -EOVERFLOW || rc == -ENOMEM)
			sandbox__errf(s->j->err, s->j->errlen, rc,
				      "adding the account %s: %s",
				      IMAGE_USER_NAME, strerror(-rc));
		goto out;
	}
	*user = IMAGE_USER_NAME;
	if (rc == 0) {
		rc = ensure_dir(s, "/etc", &made);
		if (!rc)
			rc = host_write(s->j, pw_host, npw, strlen(npw));
		if (!rc)
			rc = put(s, "/etc", "passwd", pw_host, 0644, 0, 0, !pw);
		if (!rc)
			rc = host_write(s->j, gr_host, ngr, strlen(ngr));
		if (!rc)
			rc = put(s, "/etc", "group", gr_host, 0644, 0, 0, !gr);
		if (rc)
			goto out;
	}
	rc = ensure_dir(s, "/home", &made);
	if (rc)
		goto out;
	type = disk_type(s->j, s->disk, IMAGE_USER_HOME);
	if (type == 0)
		fprintf(s->f,
			"cd /home\nmkdir user\nsif user mode 040750\n"
			"sif user uid %u\nsif user gid %u\n",
			uid, gid);
	else if (type < 0) {
		rc = type;
		goto out;
	}
	if (disk_type(s->j, s->disk, "/etc/sudoers.d") == 'd') {
		static const char line[] =
			IMAGE_USER_NAME " ALL=(ALL:ALL) NOPASSWD: ALL\n";

		rc = host_write(s->j, su_host, line, sizeof(line) - 1);
		if (!rc)
			rc = put(s, "/etc/sudoers.d", SUDOERS_NAME, su_host,
				 0440, 0, 0, false);
	}
out:
	free(pw);
	free(gr);
	free(npw);
	free(ngr);
	return rc;
}

/* The files of the code interpreter (guest-init/interp/). */
static const char *const interp_files[] = {
	"ember-interp", "server.py",	"contexts.py",
	"accounts.py",	"py_worker.py", "js_worker.js",
};

/*
 * EMBER_GUEST_BINDIR/ember-interp: the image's own python3 runs the
 * interpreter (its shebang names Debian's /usr/bin/python3).
 */
static const char interp_wrapper[] =
	"#!" EMBER_GUEST_BINDIR "/sh\n"
	"# ember's code interpreter, run by the image's own python3.\n"
	"if ! command -v python3 >/dev/null 2>&1; then\n"
	"\techo 'ember-interp: this image has no Python (no python3 in "
	"PATH); the code interpreter needs Python 3' >&2\n"
	"\texit 69\n"
	"fi\n"
	"exec python3 " EMBER_GUEST_LIBDIR "/interp/ember-interp \"$@\"\n";

/* The interpreter's files, and its wrapper where there is a busybox. */
static int add_interp(struct script *s, const struct image_guest *g,
		      bool made_bin)
{
	char dir[] = EMBER_GUEST_LIBDIR "/interp", src[PATH_MAX],
	     wrap[PATH_MAX];
	bool made;
	int rc = ensure_dir(s, dir, &made);

	for (size_t i = 0;
	     !rc && i < sizeof(interp_files) / sizeof(*interp_files); i++) {
		if (files__pathf(src, sizeof(src), "%s/%s", g->interp,
				 interp_files[i]))
			return sandbox__errf(s->j->err, s->j->errlen,
					     -ENAMETOOLONG, "%s: path too long",
					     g->interp);
		if (access(src, R_OK))
			return sandbox__errf(s->j->err, s->j->errlen, -errno,
					     "the code interpreter's %s: %s",
					     src, strerror(errno));
		rc = put(s, dir, interp_files[i], src, i ? 0644 : 0755, 0, 0,
			 made);
	}
	if (rc || !g->busybox)
		return rc;
	if (files__pathf(wrap, sizeof(wrap), "%s/ember-interp", s->j->work))
		return sandbox__errf(s->j->err, s->j->errlen, -ENAMETOOLONG,
				     "%s: path too long", s->j->work);
	rc = host_write(s->j, wrap, interp_wrapper, sizeof(interp_wrapper) - 1);
	return rc ? rc :
		    put(s, EMBER_GUEST_BINDIR, "ember-interp", wrap, 0755, 0, 0,
			made_bin);
}

int image__read_defaults(struct image_job *j, const char *disk,
			 struct image_config *c)
{
	char out[PATH_MAX], cmd[PATH_MAX + 64], *buf = NULL;
	const char *argv[] = { "debugfs", "-R", cmd, disk, NULL };
	struct stat st;
	ssize_t n;
	int fd, rc;

	if (files__pathf(out, sizeof(out), "%s/old-defaults", j->work) ||
	    files__pathf(cmd, sizeof(cmd),
			 "dump " EMBER_GUEST_DEFAULTS " \"%s\"", out))
		return sandbox__errf(j->err, j->errlen, -ENAMETOOLONG,
				     "%s: path too long", j->work);
	if (strpbrk(out, "\"\n"))
		return sandbox__errf(j->err, j->errlen, -EINVAL,
				     "%s: a path with a quote or line break",
				     j->work);
	rc = image__step(j, "reading ember's defaults file", argv);
	if (rc)
		return rc;
	/* debugfs says "File not found" and writes nothing: none there. */
	fd = open(out, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ?
			       0 :
			       sandbox__errf(j->err, j->errlen, -errno,
					     "%s: %s", out, strerror(errno));
	rc = fstat(fd, &st) ? -errno : 0;
	if (!rc && (!S_ISREG(st.st_mode) || st.st_size > EMBER_DEFAULTS_MAX))
		rc = -EFBIG;
	if (!rc && !(buf = malloc((size_t)st.st_size + 1)))
		rc = -ENOMEM;
	if (!rc) {
		n = pread(fd, buf, (size_t)st.st_size, 0);
		rc = n != st.st_size ? (n < 0 ? -errno : -EIO) : 0;
	}
	close(fd);
	unlink(out);
	if (!rc)
		rc = image__defaults_parse(buf, (size_t)st.st_size, c, j->err,
					   j->errlen);
	else
		sandbox__errf(j->err, j->errlen, rc, "the image's %s: %s",
			      EMBER_GUEST_DEFAULTS,
			      rc == -EFBIG ? "not a file of at most 64 KiB" :
					     strerror(-rc));
	free(buf);
	return rc;
}

int image__add_guest(struct image_job *j, const char *disk,
		     const struct image_config *c)
{
	const struct image_guest *g = j->o->guest;
	char script[PATH_MAX], defaults[PATH_MAX], *text = NULL;
	struct script s = { .j = j, .disk = disk };
	const char *user = NULL;
	bool made_dir, made_bin = false;
	size_t len;
	int rc;

	if (files__pathf(script, sizeof(script), "%s/guest.debugfs", j->work) ||
	    files__pathf(defaults, sizeof(defaults), "%s/defaults", j->work))
		return sandbox__errf(j->err, j->errlen, -ENAMETOOLONG,
				     "%s: path too long", j->work);
	s.f = fopen(script, "we");
	if (!s.f)
		return sandbox__errf(j->err, j->errlen, -errno, "%s: %s",
				     script, strerror(errno));
	rc = ensure_dir(&s, EMBER_GUEST_LIBDIR, &made_dir);
	if (!rc)
		rc = put(&s, EMBER_GUEST_LIBDIR, "init", g->init, 0755, 0, 0,
			 made_dir);
	if (!rc)
		rc = put(&s, EMBER_GUEST_LIBDIR, "ember-agent", g->agent, 0755,
			 0, 0, made_dir);
	if (!rc && g->busybox) {
		rc = ensure_dir(&s, EMBER_GUEST_BINDIR, &made_bin);
		if (!rc)
			rc = put(&s, EMBER_GUEST_BINDIR, "busybox", g->busybox,
				 0755, 0, 0, made_bin);
		/* An earlier ember's bin has its links. */
		if (!rc && made_bin)
			rc = applets(&s, g->busybox);
	}
	if (!rc && g->interp)
		rc = add_interp(&s, g, made_bin);
	if (!rc && g->add_user && !(c->user && c->user[0]))
		rc = account(&s, g->busybox, &user);
	/* Not in one line, nor in debugfs's quotes (debugfs_quotable). */
	if (!rc && c->workdir && !debugfs_quotable(c->workdir))
		rc = sandbox__errf(j->err, j->errlen, -EINVAL,
				   "the image's WorkingDir has a quote, "
				   "backslash or control character: ember "
				   "cannot make it");
	/* As a container runtime does: the WorkingDir is made if missing. */
	if (!rc && c->workdir && c->workdir[0] == '/' && c->workdir[1])
		rc = ensure_dir(&s, c->workdir, &made_bin);
	if (!rc)
		rc = image__defaults(c, user, &text, &len, j->err, j->errlen);
	if (!rc)
		rc = host_write(j, defaults, text, len);
	if (!rc)
		rc = put(&s, EMBER_GUEST_LIBDIR, "defaults", defaults, 0644, 0,
			 0, made_dir);
	free(text);
	for (size_t i = 0; i < s.n_made; i++)
		free(s.made[i]);
	if (fclose(s.f) && !rc)
		rc = sandbox__errf(j->err, j->errlen, -EIO, "%s: %s", script,
				   strerror(errno));
	if (!rc)
		rc = image__debugfs(j, "adding ember's parts (debugfs)", script,
				    disk);
	return rc;
}
