/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Spare drives: virtio-blk disks a sandbox has beyond its root drive, so
 * that a disk can be given to a running guest later (a container's root
 * file system, for the containerd shim) although a restored VM's devices
 * are the template's and fixed.  As Kata does with Firecracker: each
 * spare starts on a placeholder file, and the caller's file takes its
 * place with PATCH /drives/{id} (ember tells the guest the new capacity
 * with a virtio config-change interrupt).
 *
 * A sandbox gets spare drives from struct sandbox_opts's spare_drives
 * (a boot) or from its template (one built with them: template.h's
 * spare_drives; a restore gets as many).  Spare K (0 ..
 * SANDBOX_MAX_SPARE_DRIVES - 1) is:
 *
 *   ember's drive   "spareK" (SANDBOX_SPARE_ID), read-write, after the
 *                   root drive "rootfs"
 *   in the guest    /dev/vd(b+K): the root drive is /dev/vda, spare 0
 *                   /dev/vdb, spare 1 /dev/vdc ... (ember makes the root
 *                   drive the first virtio-blk device and the others
 *                   follow in order; tests/integration/spare_drives.sh
 *                   checks it)
 *   placeholder     DIR/spare-K.img (SANDBOX_SPARE_NAME) in the
 *                   sandbox's own directory: a sparse file of
 *                   SANDBOX_SPARE_BYTES, made with the sandbox (a
 *                   restore makes its own and passes them as
 *                   drive_overrides to PUT /snapshot/load), removed with it
 *
 * Parking: a park's snapshot names the file each drive has then, and a
 * resume reopens that same file (placeholder or swapped-in), so the
 * guest finds the disk it had mounted; a swapped-in file must still be
 * there for the resume (else ember's load fails and the sandbox stays
 * parked, with ember's reason).  Saving a sandbox as a template
 * (template__from_sandbox) is refused while a file is swapped in (its
 * restores could not have it).  Jailed sandboxes have no spare drives.
 */
#ifndef EMBER_API_SPARE_H
#define EMBER_API_SPARE_H

#include <stddef.h>

#include "record.h"

/*
 * sandbox__make_spares() - the placeholders of @n spare drives
 * (<= SANDBOX_MAX_SPARE_DRIVES) in the sandbox directory @dir: DIR/
 * spare-K.img, sparse, SANDBOX_SPARE_BYTES, 0600, new (O_EXCL).  0, or
 * a negative errno with @err (those made are removed again).  For
 * sandbox.c, which calls it while it makes the directory.
 */
int sandbox__make_spares(const char *dir, unsigned int n, char *err,
			 size_t errlen);

/*
 * sandbox__swap_drive() - give the live sandbox @info's spare drive
 * @slot the file @path: PATCH /drives/spare<slot> {"drive_id",
 * "path_on_host"} on its ember's control socket.  @path is absolute and
 * names a regular file (or block device) ember can open read-write; the
 * guest sees /dev/vd(b+@slot) change to it (its size in
 * /sys/block/vdX/size, in 512-byte sectors, follows within moments).
 * NULL: back to the sandbox's own placeholder.  The caller makes sure
 * the guest no longer uses the drive (unmounted) before swapping a file
 * out, and keeps a swapped-in file until it is swapped out or the
 * sandbox ends (ember holds it open, and a park's resume reopens it).
 * Recorded in the info file (spare_swapped), under the sandbox's
 * pause.lock (no pause, park or resume meanwhile).  0, or: -ERANGE
 * (@slot >= @info's spare drives), -EINVAL (@path not absolute, or the
 * sandbox is parked), -EAGAIN (still booting), -ENOENT (gone), -EIO
 * with ember's fault message (ember refused: a missing file, ...),
 * other negative errno; with @err.
 */
int sandbox__swap_drive(const struct sandbox_info *info, unsigned int slot,
			const char *path, char *err, size_t errlen);

#endif /* EMBER_API_SPARE_H */
