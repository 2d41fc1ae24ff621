/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A container's root file system on the host, as containerd hands it to
 * a shim (CreateTaskRequest.rootfs: the snapshotter's mounts), made into
 * the block device its microVM gets:
 *
 *   overlay, bind (the default overlayfs and the native snapshotters)
 *           mounted at BUNDLE/rootfs as runc's shim does, then copied into
 *           a sparse ext4 image with the images issue's disk builder
 *           (image__to_ext4: mkfs.ext4 -d).  A guest cannot see a host
 *           overlay without a shared file system (virtio-fs, which ember
 *           does not have), so it gets a copy: what the container writes
 *           stays in the copy and goes with the task, as a container's
 *           writable layer goes with `ctr run --rm`.
 *   a block device (the devmapper snapshotter: one mount whose source is a
 *           block device) is given to the guest as it is: nothing copied,
 *           and the container's writes land in containerd's snapshot.
 */
#ifndef EMBER_CONTAINERD_ROOTFS_H
#define EMBER_CONTAINERD_ROOTFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One of containerd's mounts (containerd.types.Mount). */
struct rootfs_mount {
	const char *type, *source;
	const char *const *options; /* NULL-terminated, may be NULL */
};

/*
 * rootfs__mount_flags() - the mount(2) flags and the data string of the
 * options @opts (NULL-terminated) as mount(8) reads them: ro, rw, nosuid,
 * nodev, noexec, sync, noatime, nodiratime, relatime, strictatime, bind,
 * rbind, private/rprivate (dropped), the rest joined with ',' into @data
 * (@datalen bytes).  Pure.  0, or -E2BIG when @data is too small.
 */
int rootfs__mount_flags(const char *const *opts, unsigned long *flags,
			char *data, size_t datalen);

/*
 * rootfs__block_device() - when @m (@n mounts) is one mount whose source
 * is a block device (the devmapper snapshotter), that device's path;
 * else NULL.  Reads the source's stat only.
 */
const char *rootfs__block_device(const struct rootfs_mount *m, size_t n);

/*
 * rootfs__mount() - mount the @n mounts @m on @target (a directory that
 * exists; BUNDLE/rootfs), in order, as containerd's own mount.All does.
 * 0, or -errno with the mount and the reason in @err; on failure what
 * was mounted is unmounted again.
 */
int rootfs__mount(const struct rootfs_mount *m, size_t n, const char *target,
		  char *err, size_t errlen);

/*
 * rootfs__unmount() - unmount everything mounted on @target (lazily when
 * busy).  0 or -errno.  Unmounting a target with nothing mounted is 0.
 */
int rootfs__unmount(const char *target);

/*
 * rootfs__to_disk() - the ext4 image @out (created; sparse) holding the
 * tree @root, at least @min_mib MiB (room for what the container writes;
 * 0: what the builder leaves free), made in the work directory @work (must not exist; always removed).
 * *@sectors is the image's size in 512-byte sectors.  0, or -errno with
 * the builder's stage and reason in @err; nothing is left on failure.
 */
int rootfs__to_disk(const char *root, const char *out, const char *work,
		    unsigned int min_mib, uint64_t *sectors, char *err,
		    size_t errlen);

#endif /* EMBER_CONTAINERD_ROOTFS_H */
