// SPDX-License-Identifier: Apache-2.0
/*
 * containerd's mount options as mount(2) flags and data (rootfs.h):
 * pure, so that the unit test and the fuzz target link it alone.
 */
#include <errno.h>
#include <string.h>
#include <sys/mount.h>

#include "rootfs.h"

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
