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

static const struct {
	const char *name;
	bool clear; /* the option clears the flag */
	unsigned long flag;
} mount_opts[] = {
	{ "ro", false, MS_RDONLY },
	{ "rw", true, MS_RDONLY },
	{ "nosuid", false, MS_NOSUID },
	{ "suid", true, MS_NOSUID },
	{ "nodev", false, MS_NODEV },
	{ "dev", true, MS_NODEV },
	{ "noexec", false, MS_NOEXEC },
	{ "exec", true, MS_NOEXEC },
	{ "sync", false, MS_SYNCHRONOUS },
	{ "async", true, MS_SYNCHRONOUS },
	{ "noatime", false, MS_NOATIME },
	{ "atime", true, MS_NOATIME },
	{ "nodiratime", false, MS_NODIRATIME },
	{ "diratime", true, MS_NODIRATIME },
	{ "relatime", false, MS_RELATIME },
	{ "norelatime", true, MS_RELATIME },
	{ "strictatime", false, MS_STRICTATIME },
	{ "bind", false, MS_BIND },
	{ "rbind", false, MS_BIND | MS_REC },
	{ "private", false, 0 },
	{ "rprivate", false, 0 },
	{ "defaults", false, 0 },
};

int rootfs__mount_flags(const char *const *opts, unsigned long *flags,
			char *data, size_t datalen)
{
	size_t i, k, used = 0;

	*flags = 0;
	if (datalen)
		data[0] = '\0';
	for (i = 0; opts && opts[i]; i++) {
		bool known = false;

		for (k = 0; k < sizeof(mount_opts) / sizeof(mount_opts[0]);
		     k++) {
			if (strcmp(opts[i], mount_opts[k].name))
				continue;
			known = true;
			if (mount_opts[k].clear)
				*flags &= ~mount_opts[k].flag;
			else
				*flags |= mount_opts[k].flag;
		}
		if (known)
			continue;
		k = strlen(opts[i]);
		if (used + (used ? 1 : 0) + k + 1 > datalen)
			return -E2BIG;
		if (used)
			data[used++] = ',';
		memcpy(data + used, opts[i], k + 1);
		used += k;
	}
	return 0;
}

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
		    mount(NULL, target, NULL,
			  MS_REMOUNT | MS_BIND | MS_RDONLY, NULL)) {
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
