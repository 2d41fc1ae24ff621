// SPDX-License-Identifier: Apache-2.0
/*
 * A container's root file system made into its microVM's disk
 * (rootfs.h).
 */
#include "rootfs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../sandbox/files.h"
#include "../sandbox/image.h"

const char *rootfs__block_device(const struct rootfs_mount *m, size_t n)
{
	struct stat st;

	if (n != 1 || !m[0].source || m[0].source[0] != '/')
		return NULL;
	if (stat(m[0].source, &st) || !S_ISBLK(st.st_mode))
		return NULL;
	return m[0].source;
}

int rootfs__mount(const struct rootfs_mount *m, size_t n, const char *target,
		  char *err, size_t errlen)
{
	unsigned long flags;
	char data[4096];
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		const char *type = m[i].type && *m[i].type ? m[i].type : NULL;

		rc = rootfs__mount_flags(m[i].options, &flags, data,
					 sizeof(data));
		if (rc) {
			snprintf(err, errlen,
				 "rootfs mount %zu: options over %zu bytes", i,
				 sizeof(data));
			goto undo;
		}
		if (mount(m[i].source, target, type, flags & ~MS_RDONLY,
			  data[0] ? data : NULL)) {
			rc = -errno;
			snprintf(err, errlen,
				 "mounting the rootfs (%s %s on %s): %s",
				 type ? type : "bind", m[i].source, target,
				 strerror(errno));
			goto undo;
		}
		/* A read-only bind takes a remount, as mount(8) does. */
		if ((flags & MS_BIND) && (flags & MS_RDONLY) &&
		    mount(NULL, target, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY,
			  NULL)) {
			rc = -errno;
			snprintf(err, errlen,
				 "remounting the rootfs %s read-only: %s",
				 target, strerror(errno));
			i++;
			goto undo;
		}
	}
	return 0;
undo:
	while (i--)
		umount2(target, MNT_DETACH);
	return rc;
}

int rootfs__unmount(const char *target)
{
	int tries;

	for (tries = 0; tries < 64; tries++) {
		if (umount2(target, 0) == 0)
			continue;
		if (errno == EINVAL || errno == ENOENT)
			return 0; /* nothing (more) mounted there */
		if (errno != EBUSY)
			return -errno;
		if (umount2(target, MNT_DETACH))
			return -errno;
	}
	return -EBUSY;
}

int rootfs__to_disk(const char *root, const char *out, const char *work,
		    unsigned int min_mib, uint64_t *sectors, char *err,
		    size_t errlen)
{
	struct image_opts o = { .stop_fd = -1, .disk_mib = min_mib };
	struct image_config cfg;
	char src[4200];
	struct stat st;
	int rc;

	memset(&cfg, 0, sizeof(cfg));
	if ((size_t)snprintf(src, sizeof(src), "dir:%s", root) >= sizeof(src))
		return -ENAMETOOLONG;
	rc = image__to_ext4(&o, src, work, out, &cfg, err, errlen);
	image_config__free(&cfg);
	if (rc)
		return rc;
	if (stat(out, &st)) {
		rc = -errno;
		sandbox__errf(err, errlen, 0, "%s: %s", out, strerror(errno));
		unlink(out);
		return rc;
	}
	*sectors = (uint64_t)st.st_size / 512;
	return 0;
}
