// SPDX-License-Identifier: Apache-2.0
/*
 * image__to_ext4(): a SRC made into an ext4 disk (see image.h), by
 * Debian's tools run one after the other in @work:
 *
 *   archive or layout --skopeo copy--> work/oci (an OCI layout, tag "img")
 *   --image_oci__check--> digests, diff_ids, linux/amd64, run defaults
 *   --umoci unpack--> work/bundle/rootfs --mkfs.ext4 -d--> OUT
 *
 * A root directory goes straight to mkfs.ext4 -d; an ext4 image is
 * checked with e2fsck -fn and copied (sparse), then grown with resize2fs.
 *
 * The tools run through image__step() (image_tool.c).
 * As non-root, mkfs.ext4 -d copies the builder's owners and umoci
 * --rootless loses device nodes and security.* xattrs: fix_owners() puts
 * them right with debugfs (image_disk.c, from image_tar.c's scan).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "../../snapshot/overlay_format.h"
#include "files.h"
#include "image.h"
#include "image_internal.h"

#define WHY_MAX 512
/* mk-rootfs.sh's room: 1/32 for metadata, and 64 MiB free. */
#define DISK_FREE_MIB 64
/* The largest base a sandbox's overlay takes (512 GiB). */
#define DISK_MAX_MIB ((OVERLAY_MAP_MAX_ENTRIES << OVERLAY_CLUSTER_BITS) >> 20)

static const char POLICY[] =
	"{\"default\": [{\"type\": \"insecureAcceptAnything\"}]}\n";

/* ---- the work directory ------------------------------------------------- */

static int open_up(const char *p, const struct stat *st, int type,
		   struct FTW *f)
{
	(void)f;
	/* A rootless unpack leaves 0500 directories: rm needs u+rwx. */
	if (type == FTW_D && (st->st_mode & 0700) != 0700)
		chmod(p, (st->st_mode & 07777) | 0700);
	return 0;
}

static int rm_one(const char *p, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)f;
	if (type == FTW_DP)
		rmdir(p);
	else
		unlink(p);
	return 0;
}

/* rm -rf @path, however deep (umoci's trees may be), owner-writable. */
static void rm_tree(const char *path)
{
	nftw(path, open_up, 64, FTW_PHYS | FTW_MOUNT);
	nftw(path, rm_one, 64, FTW_PHYS | FTW_MOUNT | FTW_DEPTH);
}

/*
 * What walking a root tree found: bytes used and inodes.  Global because
 * nftw() passes its callback no argument; one walk at a time.
 */
static uint64_t walk_bytes, walk_files;

static int count_one(const char *p, const struct stat *st, int type,
		     struct FTW *f)
{
	(void)p;
	(void)type;
	(void)f;
	walk_bytes += (uint64_t)st->st_blocks * 512;
	walk_files++;
	return 0;
}

/* ---- the steps ---------------------------------------------------------- */

/* CLOCK_MONOTONIC in ms. */
static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Add the ms since *@t0 to *@ms, and restart *@t0. */
static void lap(unsigned int *ms, int64_t *t0)
{
	int64_t now = mono_ms();

	*ms += (unsigned int)(now - *t0);
	*t0 = now;
}

/* The stage @field of @j's image_times, or a sink when it is not timed. */
#define LAP(j, field, t0)                                                \
	do {                                                             \
		unsigned int sink_ = 0;                                  \
		lap((j)->o->times ? &(j)->o->times->field : &sink_, t0); \
	} while (0)

/* The kind of the existing file or directory @path, by its content. */
static enum image_kind sniff_path(const char *path, const struct stat *st)
{
	char p[PATH_MAX];
	uint8_t sb[2048];
	enum image_kind k = IMAGE_UNKNOWN;
	int fd;

	if (S_ISDIR(st->st_mode)) {
		if (files__pathf(p, sizeof(p), "%s/oci-layout", path))
			return IMAGE_UNKNOWN;
		return access(p, F_OK) ? IMAGE_ROOT_DIR : IMAGE_OCI_LAYOUT;
	}
	if (!S_ISREG(st->st_mode))
		return IMAGE_UNKNOWN;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return IMAGE_UNKNOWN;
	if (pread(fd, sb, sizeof(sb), 0) == (ssize_t)sizeof(sb) &&
	    sb[1080] == 0x53 && sb[1081] == 0xEF)
		k = IMAGE_EXT4;
	else
		k = image__sniff_tar(image__pread_fn, &fd);
	close(fd);
	return k;
}

int image__pread_fn(void *arg, uint64_t off, void *out, size_t n)
{
	ssize_t r = pread(*(int *)arg, out, n, (off_t)off);

	return r == (ssize_t)n ? 0 : -ENODATA;
}

/* Printable, no space, quote or backslash: a debugfs word as it is. */
static bool xattr_name_ok(const char *name)
{
	if (!name || !*name)
		return false;
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		if (*c <= 0x20 || *c >= 0x7f || *c == '"' || *c == '\\')
			return false;
	return true;
}

/* No control character: @s can be part of a one-line message. */
static bool one_line(const char *s)
{
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			return false;
	return true;
}

/*
 * As non-root, mkfs.ext4 -d gave every file the caller's owner: the
 * image's (or root's) through debugfs (image_disk.c).
 */
static int fix_owners(struct image_job *j, const char *root, const char *out)
{
	char script[PATH_MAX];
	int rc;

	if (files__pathf(script, sizeof(script), "%s/owners.debugfs", j->work))
		return sandbox__errf(j->err, j->errlen, -ENAMETOOLONG,
				     "%s: path too long", j->work);
	/*
	 * An xattr's name goes in the script as a word of its own: a
	 * space, quote, backslash or newline in it (a pax record's key may
	 * hold any) would be commands of the image's, `dump` to a host
	 * file among them.
	 */
	for (size_t i = 0; j->special && i < j->special->n; i++) {
		const struct image_special *sp = &j->special->v[i];

		if (sp->kind == 'x' && !xattr_name_ok(sp->xname))
			return sandbox__errf(j->err, j->errlen, -EINVAL,
					     "a layer has an xattr name with a "
					     "space, quote, backslash or "
					     "control character (on /%.200s)",
					     one_line(sp->path) ?
						     sp->path :
						     "a file with an odd name");
	}
	rc = image__owner_script(root, script, j->special, j->work, j->err,
				 j->errlen);
	return rc ? rc :
		    image__debugfs(j, "setting the owners (debugfs)", script,
				   out);
}

/*
 * -ENOSPC with one line when @need bytes are more than the file system of
 * the directory of @path has free: said before a tool fills it.
 */
static int room_for(struct image_job *j, const char *what, const char *path,
		    uint64_t need)
{
	char dir[PATH_MAX], *slash;
	struct statvfs vfs;
	uint64_t free_b;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	if (statvfs(dir, &vfs))
		return 0; /* the tool will say */
	free_b = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	if (need <= free_b)
		return 0;
	return sandbox__errf(
		j->err, j->errlen, -ENOSPC,
		"no space left: %s needs %llu MiB, the state "
		"directory has %llu MiB free",
		what, (unsigned long long)((need + (1u << 20) - 1) >> 20),
		(unsigned long long)(free_b >> 20));
}

/* The MiB of the journal mke2fs gives a file system of @mib MiB. */
static uint64_t journal_mib(uint64_t mib)
{
	static const struct {
		uint64_t below_mib, journal_mib;
	} t[] = {
		{ 8, 0 },      { 128, 4 },     { 1024, 16 },   { 2048, 32 },
		{ 16384, 64 }, { 32768, 128 }, { 65536, 256 }, { 131072, 512 }
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (mib < t[i].below_mib)
			return t[i].journal_mib;
	return 1024;
}

/* mkfs.ext4 -d @root into @out, sized for what @root holds. */
static int make_disk(struct image_job *j, const char *root, const char *out)
{
	char n_arg[32], size_arg[32];
	uint64_t mib;
	int fd, rc;

	walk_bytes = walk_files = 0;
	if (nftw(root, count_one, 64, FTW_PHYS | FTW_MOUNT))
		return sandbox__errf(j->err, j->errlen, -EIO,
				     "%s: cannot walk it", root);
	mib = (walk_bytes + (1u << 20) - 1) >> 20;
	mib += mib / 32 + DISK_FREE_MIB + 2;
	/* Inode tables: 256 bytes an inode. */
	mib += (walk_files * 5 / 4 + 4096) * 256 >> 20;
	if (j->o->disk_mib > mib)
		mib = j->o->disk_mib;
	if (mib > DISK_MAX_MIB)
		return sandbox__errf(j->err, j->errlen, -EFBIG,
				     "%s: %llu MiB is over the %llu MiB limit",
				     root, (unsigned long long)mib,
				     (unsigned long long)DISK_MAX_MIB);
	/* What mkfs writes: the files, inode tables, journal (sparse else). */
	rc = room_for(j, "the disk", out,
		      walk_bytes + (walk_files * 5 / 4 + 4096) * 256 +
			      ((journal_mib(mib) + 4) << 20));
	if (rc)
		return rc;
	snprintf(n_arg, sizeof(n_arg), "%llu",
		 (unsigned long long)(walk_files * 5 / 4 + 4096));
	snprintf(size_arg, sizeof(size_arg), "%lluM", (unsigned long long)mib);
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		  0644);
	if (fd < 0)
		return sandbox__errf(j->err, j->errlen, -errno, "%s: %s", out,
				     strerror(errno));
	rc = ftruncate(fd, (off_t)(mib << 20)) ? -errno : 0;
	close(fd);
	if (rc)
		return sandbox__errf(j->err, j->errlen, rc, "%s: %s", out,
				     strerror(-rc));
	{
		const char *argv[] = {
			"mkfs.ext4",
			"-q",
			"-F",
			"-d",
			root,
			"-L",
			"ember-root",
			"-T",
			"default",
			"-m",
			"0",
			"-N",
			n_arg,
			"-E",
			"root_owner=0:0,lazy_itable_init=0,lazy_journal_init=0",
			out,
			size_arg,
			NULL
		};
		rc = image__step(j, "making the disk (mkfs.ext4 -d)", argv);
		if (rc || geteuid() == 0)
			return rc;
	}
	return fix_owners(j, root, out);
}

/* An ext4 SRC: checked read-only, copied sparse to @out, grown. */
static int copy_ext4(struct image_job *j, const char *src, const char *out)
{
	const char *fsck[] = { "e2fsck", "-fn", src, NULL };
	uint8_t sb[1024];
	uint64_t want;
	int in, o, rc;
	struct stat st;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return sandbox__errf(j->err, j->errlen, -errno, "%s: %s", src,
				     strerror(errno));
	/* e2fsck -fn does not see a file cut short: its size is the test. */
	if (pread(in, sb, sizeof(sb), 1024) != (ssize_t)sizeof(sb) ||
	    fstat(in, &st) || !(want = image__ext4_bytes(sb)) ||
	    (uint64_t)st.st_size < want) {
		close(in);
		return sandbox__errf(j->err, j->errlen, -EBADMSG,
				     "%s: a truncated or bad ext4 image "
				     "(e2fsck -fn would not say)",
				     src);
	}
	rc = image__step(j, "checking the ext4 image (e2fsck -fn)", fsck);
	/* The copy is sparse: what the image has allocated. */
	if (!rc)
		rc = room_for(j, "the disk (a copy of the ext4 image)", out,
			      (uint64_t)st.st_blocks * 512);
	if (rc) {
		close(in);
		return rc;
	}
	o = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		 0644);
	rc = o < 0 ? -errno : files__copy_sparse(in, o);
	if (!rc && j->o->disk_mib && fstat(o, &st) == 0 &&
	    (uint64_t)st.st_size < (j->o->disk_mib << 20)) {
		if (j->o->disk_mib > DISK_MAX_MIB)
			rc = -EFBIG;
		else if (ftruncate(o, (off_t)(j->o->disk_mib << 20)))
			rc = -errno;
	}
	close(in);
	if (o >= 0)
		close(o);
	if (rc)
		return sandbox__errf(j->err, j->errlen, rc, "copying %s: %s",
				     src, strerror(-rc));
	if (j->o->disk_mib) {
		const char *fix[] = { "e2fsck", "-fy", out, NULL };
		const char *grow[] = { "resize2fs", out, NULL };

		/* resize2fs wants a freshly checked file system. */
		if ((rc = image__step(j, "checking the copy (e2fsck -fy)",
				      fix)) ||
		    (rc = image__step(j, "growing the disk (resize2fs)", grow)))
			return rc;
	}
	return 0;
}

/*
 * Every blob of the OCI layout @dir a regular file (links followed):
 * skopeo reads a blob that is /dev/zero or a FIFO until its timeout.
 */
static int layout_blobs(struct image_job *j, const char *dir)
{
	char p[PATH_MAX];
	struct dirent *a, *b;
	DIR *top, *alg;
	struct stat st;
	int rc = 0;

	if (files__pathf(p, sizeof(p), "%s/blobs", dir))
		return sandbox__errf(j->err, j->errlen, -ENAMETOOLONG,
				     "%s: path too long", dir);
	top = opendir(p);
	if (!top)
		return 0; /* skopeo says what is missing */
	while (!rc && (a = readdir(top))) {
		if (a->d_name[0] == '.')
			continue;
		if (files__pathf(p, sizeof(p), "%s/blobs/%s", dir, a->d_name)) {
			rc = -ENAMETOOLONG;
			break;
		}
		alg = opendir(p);
		if (!alg)
			continue;
		while (!rc && (b = readdir(alg))) {
			if (b->d_name[0] == '.')
				continue;
			if (files__pathf(p, sizeof(p), "%s/blobs/%s/%s", dir,
					 a->d_name, b->d_name))
				rc = -ENAMETOOLONG;
			else if (stat(p, &st) == 0 && !S_ISREG(st.st_mode))
				rc = sandbox__errf(j->err, j->errlen, -EINVAL,
						   "%s/blobs/%.20s/%.80s: a "
						   "blob that is not a regular "
						   "file",
						   dir, a->d_name, b->d_name);
		}
		closedir(alg);
	}
	closedir(top);
	if (rc == -ENAMETOOLONG)
		return sandbox__errf(j->err, j->errlen, rc, "%s: path too long",
				     dir);
	return rc;
}

/* An archive or a layout: to work/oci, checked, unpacked, the disk. */
static int from_image(struct image_job *j, enum image_kind k, const char *path,
		      const char *tag, const char *out, struct image_config *c)
{
	char policy[PATH_MAX], srcref[PATH_MAX + 300], dstref[PATH_MAX];
	char oci[PATH_MAX], bundle[PATH_MAX], ociref[PATH_MAX],
		rootfs[PATH_MAX];
	char ptmp[PATH_MAX], link[PATH_MAX], *abs;
	int64_t t0 = mono_ms();
	uint64_t room, unpacked = 0, free_b;
	struct statvfs vfs;
	bool capped;
	int rc;

	if (files__pathf(policy, sizeof(policy), "%s/policy.json", j->work) ||
	    files__pathf(ptmp, sizeof(ptmp), "%s.tmp", policy) ||
	    files__pathf(oci, sizeof(oci), "%s/oci", j->work) ||
	    files__pathf(dstref, sizeof(dstref), "oci:%s:img", oci) ||
	    files__pathf(ociref, sizeof(ociref), "%s:img", oci) ||
	    files__pathf(bundle, sizeof(bundle), "%s/bundle", j->work) ||
	    files__pathf(rootfs, sizeof(rootfs), "%s/rootfs", bundle) ||
	    files__pathf(link, sizeof(link), "%s/src", j->work) ||
	    files__pathf(srcref, sizeof(srcref), "%s:%s%s%s",
			 image__kind_name(k), link, tag[0] ? ":" : "", tag))
		return sandbox__errf(j->err, j->errlen, -ENAMETOOLONG,
				     "%s: path too long", j->work);
	if (k == IMAGE_OCI_LAYOUT && (rc = layout_blobs(j, path)))
		return rc;
	/* skopeo splits its references at ':': reach SRC by a plain name. */
	abs = realpath(path, NULL);
	rc = abs && symlink(abs, link) == 0 ? 0 : -errno;
	free(abs);
	if (rc)
		return sandbox__errf(j->err, j->errlen, rc, "%s: %s", path,
				     strerror(-rc));
	rc = files__replace(policy, ptmp, POLICY, sizeof(POLICY) - 1, 0600, 0);
	if (rc)
		return sandbox__errf(j->err, j->errlen, rc, "%s: %s", policy,
				     strerror(-rc));
	{
		/*
		 * --dest-compress-format gzip: zstd layers, which umoci 0.4.7
		 * cannot apply, become gzip ones (gzip and plain tar layers
		 * are copied as they are; skopeo checks the source's digests
		 * as it reads, ember the diff_ids after).
		 */
		const char *argv[] = { "skopeo",  "--tmpdir",
				       j->tmp,	  "--policy",
				       policy,	  "--override-arch",
				       "amd64",	  "--override-os",
				       "linux",	  "copy",
				       "--quiet", "--dest-compress-format",
				       "gzip",	  srcref,
				       dstref,	  NULL };
		char stage[PATH_MAX + 64];

		snprintf(stage, sizeof(stage), "reading %s (skopeo copy)",
			 path);
		rc = image__step(j, stage, argv);
		LAP(j, read_ms, &t0);
		if (rc)
			return rc;
	}
	/* Its layers' tars, summed as they are read, fit the host's disk. */
	free_b = statvfs(j->work, &vfs) ? UINT64_MAX :
					  (uint64_t)vfs.f_bavail * vfs.f_frsize;
	rc = image__unpack_room(free_b, getenv(IMAGE_MAX_ENV), &room, &capped,
				j->err, j->errlen);
	if (rc)
		return rc;
	rc = image_oci__check_scan(oci, "img", c, j->special, room, &unpacked,
				   j->err, j->errlen);
	LAP(j, check_ms, &t0);
	if (rc == -EFBIG && capped)
		return sandbox__errf(j->err, j->errlen, rc,
				     "%s needs over %llu MiB unpacked, over "
				     "%s=%s",
				     path, (unsigned long long)(room >> 20),
				     IMAGE_MAX_ENV, getenv(IMAGE_MAX_ENV));
	if (rc == -EFBIG)
		return sandbox__errf(j->err, j->errlen, -ENOSPC,
				     "no space left: %s needs over %llu MiB "
				     "unpacked, the state directory has %llu "
				     "MiB free (half for the layers, half for "
				     "the disk made from them)",
				     path, (unsigned long long)(room >> 20),
				     (unsigned long long)(free_b >> 20));
	if (rc) {
		/* It names skopeo's copy in @work, which goes: name SRC. */
		char why[WHY_MAX * 2];

		snprintf(why, sizeof(why), "%s", j->err);
		return sandbox__errf(j->err, j->errlen, rc, "checking %s: %s",
				     path, why);
	}
	{
		const char *argv[] = { "umoci", "unpack", "--image", ociref,
				       bundle,	NULL,	  NULL };

		if (geteuid() != 0) {
			argv[4] = "--rootless";
			argv[5] = bundle;
		}
		rc = image__step(j, "applying the layers (umoci unpack)", argv);
		LAP(j, unpack_ms, &t0);
		if (rc)
			return rc;
	}
	rc = make_disk(j, rootfs, out);
	LAP(j, disk_ms, &t0);
	return rc;
}

int image__src_abs(const char *src, char *out, size_t outsz)
{
	char path[PATH_MAX], tag[256], *abs = NULL;
	enum image_kind k;
	struct stat st;
	int n;

	if (image__parse_src(src, &k, path, sizeof(path), tag, sizeof(tag)))
		goto as_is;
	/* As image__to_ext4() reads it: "a:b" naming a file is that file. */
	if (tag[0] && k == IMAGE_UNKNOWN && stat(src, &st) == 0) {
		snprintf(path, sizeof(path), "%s", src);
		tag[0] = '\0';
	}
	abs = realpath(path, NULL);
	if (!abs)
		goto as_is;
	/* A prefix is the kind's name and a ':' (image__parse_src). */
	n = snprintf(out, outsz, "%s%s%s%s%s",
		     k == IMAGE_UNKNOWN ? "" : image__kind_name(k),
		     k == IMAGE_UNKNOWN ? "" : ":", abs, tag[0] ? ":" : "",
		     tag);
	free(abs);
	return n < 0 || (size_t)n >= outsz ? -ENAMETOOLONG : 0;
as_is:
	n = snprintf(out, outsz, "%s", src);
	return n < 0 || (size_t)n >= outsz ? -ENAMETOOLONG : 0;
}

int image__to_ext4(const struct image_opts *o, const char *src,
		   const char *work, const char *out_ext4,
		   struct image_config *cfg, char *err, size_t errlen)
{
	char path[PATH_MAX], tag[256], tmp_out[PATH_MAX];
	struct image_job j = {
		.o = o, .work = work, .err = err, .errlen = errlen
	};
	struct image_tar special;
	enum image_kind k;
	struct stat st;
	int64_t t0;
	int rc;

	memset(cfg, 0, sizeof(*cfg));
	if (o->times)
		memset(o->times, 0, sizeof(*o->times));
	rc = image__parse_src(src, &k, path, sizeof(path), tag, sizeof(tag));
	if (rc)
		return sandbox__errf(err, errlen, rc, "bad image source: %s",
				     src);
	/* "a:b" that names a file is that file, not a with the tag b. */
	if (tag[0] && k == IMAGE_UNKNOWN && stat(src, &st) == 0) {
		snprintf(path, sizeof(path), "%s", src);
		tag[0] = '\0';
	}
	if (stat(path, &st))
		return sandbox__errf(err, errlen, -errno, "%s: %s", path,
				     strerror(errno));
	if (k == IMAGE_UNKNOWN)
		k = sniff_path(path, &st);
	{
		uint64_t room;
		bool capped;

		/* A bad bound is said before any work. */
		rc = image__unpack_room(0, getenv(IMAGE_MAX_ENV), &room,
					&capped, err, errlen);
		if (rc)
			return rc;
	}
	if (k == IMAGE_UNKNOWN)
		return sandbox__errf(
			err, errlen, -EINVAL,
			"%s: not an image: neither a docker or OCI "
			"archive (tar), an OCI layout, a directory "
			"nor an ext4 image",
			path);
	if (files__pathf(tmp_out, sizeof(tmp_out), "%s.tmp", out_ext4) ||
	    files__pathf(j.log, sizeof(j.log), "%s/tool.log", work) ||
	    files__pathf(j.tmp, sizeof(j.tmp), "%s/tmp", work))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "%s: path too long", work);
	if (mkdir(work, 0700))
		return sandbox__errf(err, errlen, -errno, "%s: %s", work,
				     strerror(errno));
	if (mkdir(j.tmp, 0700)) {
		rc = sandbox__errf(err, errlen, -errno, "%s: %s", j.tmp,
				   strerror(errno));
		goto out;
	}
	image_tar__init(&special);
	if (geteuid() != 0)
		j.special = &special;
	t0 = mono_ms();
	switch (k) {
	case IMAGE_ROOT_DIR:
		rc = make_disk(&j, path, tmp_out);
		LAP(&j, disk_ms, &t0);
		break;
	case IMAGE_EXT4:
		rc = copy_ext4(&j, path, tmp_out);
		/* A disk ember made keeps its Env, WorkingDir and User. */
		if (!rc)
			rc = image__read_defaults(&j, tmp_out, cfg);
		LAP(&j, disk_ms, &t0);
		break;
	default:
		rc = from_image(&j, k, path, tag, tmp_out, cfg);
		t0 = mono_ms();
		break;
	}
	if (!rc && o->guest) {
		rc = image__add_guest(&j, tmp_out, cfg);
		LAP(&j, guest_ms, &t0);
	}
	if (!rc && rename(tmp_out, out_ext4))
		rc = sandbox__errf(err, errlen, -errno, "%s: %s", out_ext4,
				   strerror(errno));
	image_tar__free(&special);
out:
	if (rc)
		unlink(tmp_out);
	rm_tree(work);
	return rc;
}
