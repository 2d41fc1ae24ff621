// SPDX-License-Identifier: Apache-2.0
/*
 * The disk's owners as non-root (see image.h): umoci unpack --rootless
 * makes every file the caller's and records the image's owner, where it
 * is not root, in the user.rootlesscontainers xattr (a protobuf: uid is
 * field 1, gid field 2, varints; absent is 0).  mkfs.ext4 -d copies the
 * caller's owners, so a debugfs script then sets each inode's uid and
 * gid: the recorded ones, else root's, as mk-rootfs.sh gives every file
 * to root, and removes the xattr that mkfs copied.  The tree itself is
 * not changed (a root directory SRC is the user's).
 *
 * Device nodes (umoci makes them empty regular files) and security.* /
 * trusted.* xattrs (dropped) come back from the layer tars, which
 * image_oci.c scans as it hashes them (image_tar.c): rm + mknod + sif,
 * and ea_set with the value in a file of the work dir.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "files.h"
#include "image.h"
#include "image_internal.h"

#define ROOTLESS_XATTR "user.rootlesscontainers"

int image__rootless_ids(const uint8_t *buf, size_t len, uint32_t *uid,
			uint32_t *gid)
{
	size_t i = 0;

	*uid = *gid = 0;
	while (i < len) {
		uint64_t key = 0, v = 0;
		int shift = 0;

		/* The key, then (wire type 0 only) the varint value. */
		do {
			if (i >= len || shift > 63)
				return -EPROTO;
			key |= (uint64_t)(buf[i] & 0x7f) << shift;
			shift += 7;
		} while (buf[i++] & 0x80);
		if ((key & 7) != 0)
			return -EPROTO;
		shift = 0;
		do {
			if (i >= len || shift > 63)
				return -EPROTO;
			v |= (uint64_t)(buf[i] & 0x7f) << shift;
			shift += 7;
		} while (buf[i++] & 0x80);
		if (v > UINT32_MAX)
			return -EPROTO;
		if ((key >> 3) == 1)
			*uid = (uint32_t)v;
		else if ((key >> 3) == 2)
			*gid = (uint32_t)v;
	}
	/* umoci's NoopID (-1): not recorded, i.e. the caller's: root. */
	if (*uid == UINT32_MAX)
		*uid = 0;
	if (*gid == UINT32_MAX)
		*gid = 0;
	return 0;
}

/*
 * debugfs reads commands in lines of at most about 1 KiB: a long path is
 * reached by cd, one component at a time, and named by its last one.
 */
#define DEBUGFS_PATH_MAX 900

/* "@cmd "@rel" @args" on @f, by cd when @rel is long: <0 on error. */
static int emit(FILE *f, const char *cmd, const char *rel, const char *args)
{
	const char *c = rel + 1, *slash;

	if (strlen(rel) < DEBUGFS_PATH_MAX)
		return fprintf(f, "%s \"%s\" %s\n", cmd, rel, args);
	if (fprintf(f, "cd /\n") < 0)
		return -1;
	while ((slash = strchr(c, '/'))) {
		if (fprintf(f, "cd \"%.*s\"\n", (int)(slash - c), c) < 0)
			return -1;
		c = slash + 1;
	}
	return fprintf(f, "%s \"%s\" %s\ncd /\n", cmd, c, args);
}

/* nftw() takes no argument: the walk's state, one walk at a time. */
static FILE *fix_script;
static size_t fix_root_len;
static int fix_rc;

static int fix_one(const char *p, const struct stat *st, int type,
		   struct FTW *f)
{
	const char *rel = p + fix_root_len;
	uint8_t x[64];
	uint32_t uid = 0, gid = 0;
	char ids[2][16];
	ssize_t n;

	(void)st;
	(void)type;
	if (f->level == 0)
		return 0; /* the root: mkfs's root_owner=0:0 */
	if (strpbrk(rel, "\"\n\\")) {
		fix_rc = -EINVAL; /* debugfs cannot quote it */
		return 1;
	}
	n = lgetxattr(p, ROOTLESS_XATTR, x, sizeof(x));
	if (n > 0) {
		if (image__rootless_ids(x, (size_t)n, &uid, &gid)) {
			fix_rc = -EPROTO;
			return 1;
		}
		if (emit(fix_script, "ea_rm", rel, ROOTLESS_XATTR) < 0) {
			fix_rc = -EIO;
			return 1;
		}
	}
	snprintf(ids[0], sizeof(ids[0]), "uid %u", uid);
	snprintf(ids[1], sizeof(ids[1]), "gid %u", gid);
	if (emit(fix_script, "sif", rel, ids[0]) < 0 ||
	    emit(fix_script, "sif", rel, ids[1]) < 0) {
		fix_rc = -EIO;
		return 1;
	}
	return 0;
}

/* cd to the directory of @rel, one component a line: its last one. */
static const char *cd_parent(FILE *f, const char *rel)
{
	const char *c = rel + 1, *slash;

	fprintf(f, "cd /\n");
	while ((slash = strchr(c, '/'))) {
		fprintf(f, "cd \"%.*s\"\n", (int)(slash - c), c);
		c = slash + 1;
	}
	return c;
}

/* The lines for what the tars held and umoci --rootless lost. */
static int special_lines(FILE *f, const struct image_tar *t, const char *work)
{
	char rel[PATH_MAX + 1], vfile[PATH_MAX], cmd[PATH_MAX + 16];

	for (size_t i = 0; i < t->n; i++) {
		const struct image_special *s = &t->v[i];
		const char *name;

		if (snprintf(rel, sizeof(rel), "/%s", s->path) >=
			    (int)sizeof(rel) ||
		    strpbrk(rel, "\"\n\\"))
			return -EINVAL;
		if (s->kind == 'x') {
			if (files__pathf(vfile, sizeof(vfile), "%s/xattr.%zu",
					 work, i) ||
			    strpbrk(vfile, "\"\n\\"))
				return -ENAMETOOLONG;
			FILE *v = fopen(vfile, "we");

			if (!v)
				return -errno;
			if (s->xlen && fwrite(s->xval, s->xlen, 1, v) != 1) {
				fclose(v);
				return -EIO;
			}
			if (fclose(v))
				return -EIO;
			snprintf(cmd, sizeof(cmd), "ea_set -f \"%s\"", vfile);
			if (emit(f, cmd, rel, s->xname) < 0)
				return -EIO;
			continue;
		}
		name = cd_parent(f, rel);
		if (fprintf(f,
			    "rm \"%s\"\nmknod \"%s\" %c %u %u\n"
			    "sif \"%s\" mode 0%o\nsif \"%s\" uid %u\n"
			    "sif \"%s\" gid %u\ncd /\n",
			    name, name, s->kind, s->major, s->minor, name,
			    (s->kind == 'c' ? 020000u : 060000u) | s->mode,
			    name, s->uid, name, s->gid) < 0)
			return -EIO;
	}
	return 0;
}

int image__owner_script(const char *root, const char *script,
			const struct image_tar *special, const char *work,
			char *err, size_t errlen)
{
	int rc;

	fix_script = fopen(script, "we");
	if (!fix_script)
		return sandbox__errf(err, errlen, -errno, "%s: %s", script,
				     strerror(errno));
	fix_root_len = strlen(root);
	fix_rc = 0;
	rc = nftw(root, fix_one, 64, FTW_PHYS | FTW_MOUNT);
	if (!rc && !fix_rc && special)
		fix_rc = special_lines(fix_script, special, work);
	if (fclose(fix_script) && !fix_rc)
		fix_rc = -EIO;
	fix_script = NULL;
	if (fix_rc == -EINVAL)
		return sandbox__errf(err, errlen, fix_rc,
				     "%s: a name with a quote, backslash or "
				     "newline (not supported as non-root)",
				     root);
	if (fix_rc || rc)
		return sandbox__errf(err, errlen, fix_rc ? fix_rc : -EIO,
				     "%s: recording the owners: %s", root,
				     strerror(fix_rc ? -fix_rc : EIO));
	return 0;
}
