/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the image code (image_src.c, image_oci.c, image_unpack.c): not
 * for front ends.
 */
#ifndef EMBER_API_IMAGE_INTERNAL_H
#define EMBER_API_IMAGE_INTERNAL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "image.h"

/* Read exactly @n bytes at @off into @out: 0, or a negative errno. */
typedef int (*image_read_fn)(void *arg, uint64_t off, void *out, size_t n);

/*
 * image__sniff_tar() - walk the tar that @rd reads, header by header
 * (bad checksum or end: stop), for a docker or OCI archive's top files.
 */
enum image_kind image__sniff_tar(image_read_fn rd, void *arg);

/* An image_read_fn over pread(2) of the fd *@arg (an int). */
int image__pread_fn(void *arg, uint64_t off, void *out, size_t n);

/*
 * image__rootless_ids() - the uid and gid in umoci's
 * user.rootlesscontainers xattr value @buf (@len bytes; a protobuf, uid
 * field 1 and gid field 2; absent or -1 is 0).  Pure: 0 or -EPROTO.
 */
int image__rootless_ids(const uint8_t *buf, size_t len, uint32_t *uid,
			uint32_t *gid);

/* A device node or a security.* / trusted.* xattr of the image. */
struct image_special {
	char *path; /* relative to the root, no leading or trailing '/' */
	char kind; /* 'c', 'b' (device: major, minor, mode, uid, gid), 'x' */
	uint32_t major, minor, mode, uid, gid;
	char *xname; /* 'x': "security.capability", ... */
	uint8_t *xval; /* 'x': its value, xlen bytes */
	size_t xlen;
	unsigned int layer; /* the layer it came from */
};

#define IMAGE_TAR_XATTRS 16 /* per entry, kept */

enum image_tar_state {
	IMAGE_TAR_HEADER = 0,
	IMAGE_TAR_META, /* a pax or GNU long name header's data */
	IMAGE_TAR_SKIP, /* an entry's data and padding */
	IMAGE_TAR_END,
};

/*
 * The layers' special entries, read by a pure streaming tar scanner:
 * image_tar__init(), then for each layer in order image_tar__feed() its
 * uncompressed bytes (any chunks) and image_tar__next_layer(); the
 * result is v[0..n).  image_tar__free() releases all of it.
 */
struct image_tar {
	struct image_special *v;
	size_t n, cap;
	unsigned int layer;
	int error; /* the first error: the scan has stopped */
	/* the parser's state */
	enum image_tar_state state;
	uint8_t hdr[512];
	size_t hdr_len;
	uint64_t left, pad;
	uint8_t *pax;
	size_t pax_len;
	char pax_kind;
	char *long_name, *px_path;
	char *px_name[IMAGE_TAR_XATTRS];
	uint8_t *px_val[IMAGE_TAR_XATTRS];
	size_t px_len[IMAGE_TAR_XATTRS];
	size_t n_px;
};

void image_tar__init(struct image_tar *t);
/* 0, or the scan's first error (-EPROTO, -ENOMEM, -E2BIG: too many). */
int image_tar__feed(struct image_tar *t, const uint8_t *buf, size_t len);
void image_tar__next_layer(struct image_tar *t);
void image_tar__free(struct image_tar *t);

/*
 * image__owner_script() - write to @script the debugfs commands that give
 * each inode under @root (not @root itself) the owner that umoci recorded
 * in user.rootlesscontainers, else 0:0, and remove that xattr: for a disk
 * that mkfs.ext4 -d made from @root as non-root; then, when @special is
 * not NULL, make its device nodes and set its xattrs (the values in files
 * written to @work).  @root is not changed.
 */
int image__owner_script(const char *root, const char *script,
			const struct image_tar *special, const char *work,
			char *err, size_t errlen);

/*
 * image_oci__check() with, when @scan is not NULL, every layer's
 * uncompressed bytes fed to @scan (an image_tar__init()ed scan), and the
 * layers' tars (gunzipped) at most @room bytes together (UINT64_MAX: no
 * bound): past it, -EFBIG at once (nothing more is read).  *@unpacked
 * (when not NULL) is their bytes, those read so far on a failure.
 */
int image_oci__check_scan(const char *dir, const char *tag,
			  struct image_config *c, struct image_tar *scan,
			  uint64_t room, uint64_t *unpacked, char *err,
			  size_t errlen);

/* One image__to_ext4() call: its options, work dir, tool log and error. */
struct image_job {
	const struct image_opts *o;
	struct image_tar *special; /* as non-root: what umoci will lose */
	const char *work;
	char log[PATH_MAX], tmp[PATH_MAX]; /* the tools' output; TMPDIR */
	char *err;
	size_t errlen;
};

/*
 * image__step() - run the tool @argv for @j (its output to j->log, at
 * most j->o->timeout_s, stopped by j->o->stop_fd): 0, or its failure
 * with "@stage: <the tool's last line>" in j->err (-EIO, -ETIMEDOUT,
 * -ECANCELED, -ENOSPC when the work dir filled up).
 */
int image__step(struct image_job *j, const char *stage,
		const char *const *argv);

/*
 * image__debugfs() - `debugfs -w -f @script @disk` as image__step(), and
 * since debugfs exits 0 whatever its commands did, any line of its
 * output that is not its banner, an echoed command or "Allocated inode"
 * is the failure (-EIO, "@stage: LINE").
 */
int image__debugfs(struct image_job *j, const char *stage, const char *script,
		   const char *disk);

/*
 * image__read_defaults() - the run defaults of an ext4 disk @disk that
 * ember made (its EMBER_GUEST_DEFAULTS, read with debugfs: nothing
 * mounted) into @c (image__defaults_parse()); a disk without the file
 * leaves @c as it is.  0, or a negative errno with j->err (a malformed
 * or oversized file: -EINVAL, -EFBIG).
 */
int image__read_defaults(struct image_job *j, const char *disk,
			 struct image_config *c);

/*
 * image__add_guest() - add ember's guest parts (j->o->guest) to the ext4
 * disk @disk made from an image whose run defaults are @c: see
 * struct image_guest.  0, or a negative errno with j->err.
 */
int image__add_guest(struct image_job *j, const char *disk,
		     const struct image_config *c);

/* "sha256:" and 64 lowercase hex digits: no path can hide in it. */
#define IMAGE_DIGEST_LEN (7 + 64)

#endif /* EMBER_API_IMAGE_INTERNAL_H */
