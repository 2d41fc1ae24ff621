/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside the image code (image_src.c, image_oci.c, image_unpack.c): not
 * for front ends.
 */
#ifndef EMBER_API_IMAGE_INTERNAL_H
#define EMBER_API_IMAGE_INTERNAL_H

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

/*
 * image__owner_script() - write to @script the debugfs commands that give
 * each inode under @root (not @root itself) the owner that umoci recorded
 * in user.rootlesscontainers, else 0:0, and remove that xattr: for a disk
 * that mkfs.ext4 -d made from @root as non-root.  @root is not changed.
 */
int image__owner_script(const char *root, const char *script, char *err,
			size_t errlen);

/* "sha256:" and 64 lowercase hex digits: no path can hide in it. */
#define IMAGE_DIGEST_LEN (7 + 64)

#endif /* EMBER_API_IMAGE_INTERNAL_H */
