// SPDX-License-Identifier: Apache-2.0
/*
 * Bind mounts copied into the guest (binds.h): the tree walked on the
 * host; directories and links made by one sh script, files written by
 * the agent.
 */
#include "binds.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../sandbox/agent_client.h"
#include "../sandbox/files.h"
#include "../sandbox/sandbox.h"

#define BINDS_SCRIPT_MAX (256u << 10)
#define BINDS_AGENT_MS	 30000

struct walk {
	struct pod *pod;
	struct agent_client *ac;
	char *script; /* mkdir and ln lines, run before the files */
	size_t len;
	size_t entries;
	uint64_t bytes;
	/* Files to write once the directories exist: host, guest path. */
	char **files;
	mode_t *modes;
	size_t nr_files;
	char *err;
	size_t errlen;
};

/* Append "@cmd '@a' ['@b']\n" to the script, quoted for sh. */
static int line(struct walk *w, const char *cmd, const char *a, const char *b)
{
	const char *args[2] = { a, b };
	size_t i, need = strlen(cmd) + 2;
	const char *p;

	for (i = 0; i < 2 && args[i]; i++)
		for (p = args[i], need += 3; *p; p++)
			need += *p == '\'' ? 4 : 1;
	if (w->len + need + 1 > BINDS_SCRIPT_MAX)
		return sandbox__errf(w->err, w->errlen, -E2BIG,
				     "bind mounts: over %u KiB of names",
				     BINDS_SCRIPT_MAX >> 10);
	w->len += (size_t)sprintf(w->script + w->len, "%s", cmd);
	for (i = 0; i < 2 && args[i]; i++) {
		w->script[w->len++] = ' ';
		w->script[w->len++] = '\'';
		for (p = args[i]; *p; p++) {
			if (*p == '\'') {
				memcpy(w->script + w->len, "'\\''", 4);
				w->len += 4;
			} else {
				w->script[w->len++] = *p;
			}
		}
		w->script[w->len++] = '\'';
	}
	w->script[w->len++] = '\n';
	w->script[w->len] = '\0';
	return 0;
}

static int add_file(struct walk *w, const char *host, const char *guest,
		    mode_t mode)
{
	char **f = realloc(w->files, (w->nr_files + 1) * 2 * sizeof(char *));
	mode_t *m;

	if (!f)
		return -ENOMEM;
	w->files = f;
	m = realloc(w->modes, (w->nr_files + 1) * sizeof(mode_t));
	if (!m)
		return -ENOMEM;
	w->modes = m;
	f[w->nr_files * 2] = strdup(host);
	f[w->nr_files * 2 + 1] = strdup(guest);
	m[w->nr_files] = mode & 07777;
	w->nr_files++;
	if (!f[w->nr_files * 2 - 2] || !f[w->nr_files * 2 - 1])
		return -ENOMEM;
	return 0;
}

/* @host (lstat'ed as @st) to @guest: the tree below a directory too. */
static int walk(struct walk *w, const char *host, const char *guest,
		const struct stat *st, int depth)
{
	char target[PATH_MAX], hchild[PATH_MAX], gchild[PATH_MAX * 2];
	struct dirent *de;
	struct stat cst;
	ssize_t n;
	DIR *d;
	int rc = 0;

	if (++w->entries > BINDS_MAX_ENTRIES)
		return sandbox__errf(w->err, w->errlen, -E2BIG,
				     "bind mounts: over %d files",
				     BINDS_MAX_ENTRIES);
	if (S_ISLNK(st->st_mode)) {
		n = readlink(host, target, sizeof(target) - 1);
		if (n < 0)
			return sandbox__errf(w->err, w->errlen, -errno,
					     "%s: %s", host, strerror(errno));
		target[n] = '\0';
		return line(w, "ln -sfn", target, guest);
	}
	if (S_ISREG(st->st_mode)) {
		w->bytes += (uint64_t)st->st_size;
		if (w->bytes > BINDS_MAX_BYTES)
			return sandbox__errf(w->err, w->errlen, -E2BIG,
					     "bind mounts: over %u MiB",
					     BINDS_MAX_BYTES >> 20);
		return add_file(w, host, guest, st->st_mode);
	}
	if (!S_ISDIR(st->st_mode))
		return sandbox__errf(w->err, w->errlen, -ENOTSUP,
				     "bind mount %s: neither a file, a "
				     "directory nor a link: a microVM gets "
				     "copies",
				     host);
	if (depth > BINDS_MAX_DEPTH)
		return sandbox__errf(w->err, w->errlen, -E2BIG,
				     "bind mount %s: over %d levels", host,
				     BINDS_MAX_DEPTH);
	rc = line(w, "mkdir -p", guest, NULL);
	if (rc)
		return rc;
	d = opendir(host);
	if (!d)
		return sandbox__errf(w->err, w->errlen, -errno, "%s: %s", host,
				     strerror(errno));
	while (!rc && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if ((size_t)snprintf(hchild, sizeof(hchild), "%s/%s", host,
				     de->d_name) >= sizeof(hchild) ||
		    (size_t)snprintf(gchild, sizeof(gchild), "%s/%s", guest,
				     de->d_name) >= sizeof(gchild)) {
			rc = -ENAMETOOLONG;
			break;
		}
		if (lstat(hchild, &cst)) {
			rc = sandbox__errf(w->err, w->errlen, -errno, "%s: %s",
					   hchild, strerror(errno));
			break;
		}
		rc = walk(w, hchild, gchild, &cst, depth + 1);
	}
	closedir(d);
	return rc;
}

static int write_files(struct walk *w)
{
	size_t i;
	int fd, rc = 0;

	if (!w->nr_files)
		return 0;
	rc = sandbox__agent_connect(&w->pod->info, BINDS_AGENT_MS, &w->ac,
				    w->err, w->errlen);
	for (i = 0; !rc && i < w->nr_files; i++) {
		fd = open(w->files[i * 2], O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			return sandbox__errf(w->err, w->errlen, -errno,
					     "%s: %s", w->files[i * 2],
					     strerror(errno));
		rc = agent_client__write_file(w->ac, fd, w->files[i * 2 + 1],
					      w->modes[i], BINDS_AGENT_MS);
		close(fd);
		if (rc)
			sandbox__errf(w->err, w->errlen, 0,
				      "copying %s into the guest: %s",
				      w->files[i * 2],
				      agent_client__error(w->ac));
	}
	return rc;
}

int binds__copy(struct pod *pod, const char *cid, const struct oci_spec *spec,
		char *err, size_t errlen)
{
	struct walk w = { .pod = pod, .err = err, .errlen = errlen };
	char root[PATH_MAX], dst[PATH_MAX * 2], src[PATH_MAX], out[512];
	struct stat st;
	size_t i;
	int rc = 0;

	pod__root(cid, root, sizeof(root));
	for (i = 0; i < spec->nr_mounts; i++)
		if (spec->mounts[i].bind)
			break;
	if (i == spec->nr_mounts)
		return 0;
	w.script = malloc(BINDS_SCRIPT_MAX + 1);
	if (!w.script)
		return -ENOMEM;
	w.script[0] = '\0';
	rc = line(&w, "set -e\numask 022\n:", NULL, NULL);
	for (i = 0; !rc && i < spec->nr_mounts; i++) {
		const struct oci_mount *m = &spec->mounts[i];
		char parent[PATH_MAX * 2], *slash;

		if (!m->bind)
			continue;
		/*
		 * Links in the source: what they point to, as mount does
		 * (/etc/localtime is one); the files are then opened
		 * O_NOFOLLOW by their real path.
		 */
		if (!realpath(m->source, src) || lstat(src, &st)) {
			rc = sandbox__errf(err, errlen, -errno,
					   "bind mount %s on %s: %s", m->source,
					   m->destination, strerror(errno));
			break;
		}
		if ((size_t)snprintf(dst, sizeof(dst), "%s%s", root,
				     m->destination) >= sizeof(dst)) {
			rc = -ENAMETOOLONG;
			break;
		}
		snprintf(parent, sizeof(parent), "%s", dst);
		slash = strrchr(parent, '/');
		if (slash && slash != parent)
			*slash = '\0';
		rc = line(&w, "mkdir -p", parent, NULL);
		if (!rc)
			rc = walk(&w, src, dst, &st, 0);
	}
	if (!rc) {
		rc = pod__guest_sh(pod, w.script, out, sizeof(out), err,
				   errlen);
		if (rc > 0) {
			out[strcspn(out, "\n")] = '\0';
			rc = sandbox__errf(err, errlen, -EIO,
					   "bind mounts in the guest: %s", out);
		}
	}
	if (!rc)
		rc = write_files(&w);
	agent_client__free(w.ac);
	for (i = 0; i < w.nr_files * 2; i++)
		free(w.files[i]);
	free(w.files);
	free(w.modes);
	free(w.script);
	return rc;
}
