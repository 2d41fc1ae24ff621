/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Copy-on-write disk overlays: one read-only raw base image shared by many
 * sandboxes, each writing only its own clusters into its overlay file.
 * Pure file code (pread, pwrite, fdatasync, flock): no KVM, no guest
 * memory.  vmm/dev/blk.c opens one when a drive's file starts with
 * OVERLAY_MAGIC, and vmm/dev/blk_backing.c makes it the backing of a
 * virtio-blk device, which never sees the format.
 *
 * The file format (layout, base identity) is in overlay_format.h.
 *
 * Order of writes, so that a write the caller saw complete survives a
 * kill -9 at any moment, and after overlay__flush() a host crash: a new
 * cluster's whole data (the base's bytes merged with the new ones) is
 * written at the end of the file first, then its map entry (an aligned
 * 8-byte pwrite), then the write returns; an allocated cluster is
 * rewritten in place; a flush is fdatasync().  A map entry never changes
 * once set, so a cluster's data is never moved or shared.
 *
 * Everything read from a file is untrusted.  Open checks the magic,
 * version, header CRC, every geometry field against the others and
 * against the file's size, the flags, the base path, and every map
 * entry: cluster-aligned, at or past the data offset, no two entries at
 * one cluster (each refused as corrupt).  An entry whose cluster reaches
 * past the end of the file can only be a write lost before a flush when a
 * host crashed (its data went first, and a flush persists both): open
 * drops it, the cluster reads from the base again (the value the guest
 * had before the unflushed write), a read-write open clears it in the
 * file before anything else, and overlay__info() counts it in .dropped so
 * that the caller can warn (a truncated copy of an overlay shows up
 * there too).
 *
 * Not thread-safe: one caller at a time per struct overlay (virtio-blk
 * calls it under its device lock).
 */
#ifndef EMBER_SNAPSHOT_OVERLAY_H
#define EMBER_SNAPSHOT_OVERLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "overlay_format.h"

struct overlay;

/* What overlay__info() reports. */
struct overlay_info {
	uint64_t size; /* virtual disk size in bytes */
	uint32_t cluster_bytes;
	uint64_t clusters; /* map entries */
	uint64_t allocated; /* clusters written into the overlay */
	uint64_t
		dropped; /* entries past the end of the file, dropped at open */
	const char *base_path; /* as resolved; owned by the overlay */
};

/*
 * overlay__create() - a new, empty overlay file @path (O_EXCL, mode 0600,
 * sparse) over the raw image @base_path (a regular file of at least one
 * byte and at most OVERLAY_MAP_MAX_ENTRIES clusters, not itself an
 * overlay): virtual size = the base's size, 64 KiB clusters, the base's
 * canonical path and identity.  The header and map are fdatasync()ed.
 * Returns 0, or a negative errno with a one-line reason in @why (@whylen
 * bytes, not naming @path; the caller does): -EEXIST if @path exists,
 * -EINVAL for an unusable base, -ENAMETOOLONG for a base path over
 * OVERLAY_BASE_PATH_MAX, errors of open(2), pread(2), pwrite(2).  On
 * failure nothing is left at @path.
 */
int overlay__create(const char *path, const char *base_path, char *why,
		    size_t whylen);

/*
 * overlay__open() - open the overlay @path (read-write unless @read_only;
 * flock shared for read-only, else exclusive, without waiting), then as
 * overlay__open_fd().  Returns 0 with *@out set (free with
 * overlay__close()), or a negative errno with the reason in @why: -EBUSY
 * when another process holds a conflicting lock, else as
 * overlay__open_fd().
 */
int overlay__open(const char *path, bool read_only, struct overlay **out,
		  char *why, size_t whylen);

/*
 * overlay__open_fd() - the overlay in the open file @fd (a regular file,
 * readable, writable unless @read_only; locking it is the caller's
 * business), named @path (for relative base paths and nothing else).
 * Checks the header and map (see above), opens the base read-only
 * (O_NONBLOCK, must be a regular raw file), takes a shared flock on it
 * (fails if a writer holds it) and checks its identity.  On success the
 * overlay owns @fd; on failure the caller still does.  Returns 0 with
 * *@out set, or a negative errno with a one-line reason in @why (@whylen
 * bytes, naming the base where it is at fault, not @path): -EINVAL (not
 * an overlay, corrupt header or map), -EPROTONOSUPPORT (another format
 * version), -ESTALE (base changed since the overlay was made), -EBUSY
 * (base locked by a writer), -ENOMEM, errors of open(2) and pread(2).
 */
int overlay__open_fd(int fd, const char *path, bool read_only,
		     struct overlay **out, char *why, size_t whylen);

/*
 * overlay__read() - @len bytes of the disk at byte offset @off into @buf.
 * Returns 0, -EINVAL if [@off, @off + @len) is not inside the disk (no
 * overflow possible), or a negative errno of pread(2) (-EIO if a file
 * ended early).
 */
int overlay__read(struct overlay *o, void *buf, uint64_t len, uint64_t off);

/*
 * overlay__write() - @len bytes of @buf onto the disk at byte offset @off,
 * in the order described above: when it returns 0 the bytes survive a
 * kill -9 of the process.  Returns 0, -EINVAL for a range outside the
 * disk, -EROFS for a read-only overlay, or a negative errno of pread(2)
 * / pwrite(2) (-ENOSPC...); on error some clusters of the range may hold
 * the new bytes and others the old ones.
 */
int overlay__write(struct overlay *o, const void *buf, uint64_t len,
		   uint64_t off);

/*
 * overlay__flush() - make every completed write survive a host crash
 * (fdatasync of the overlay file; the base is never written).  Returns 0
 * (at once for a read-only overlay) or a negative errno of fdatasync(2).
 */
int overlay__flush(struct overlay *o);

/* overlay__size() - the virtual disk size in bytes. */
uint64_t overlay__size(const struct overlay *o);

/* overlay__allocated() - clusters written into the overlay so far. */
uint64_t overlay__allocated(const struct overlay *o);

/* overlay__info() - geometry and counts of @o into *@out. */
void overlay__info(const struct overlay *o, struct overlay_info *out);

/*
 * overlay__close() - close the overlay and its base and free @o (NULL is
 * a no-op).  Does not flush: a caller that needs durability flushes.
 */
void overlay__close(struct overlay *o);

/*
 * overlay__flatten() - write the disk the overlay @path presents (its
 * clusters over its base) into a new raw image @out_path (O_EXCL, mode
 * 0600; all-zero 4 KiB blocks left as holes), fdatasync()ed.  The overlay
 * is opened read-only and with a shared lock, so an overlay a running VM
 * writes is refused (-EBUSY).  Returns 0, or a negative errno with a
 * one-line reason in @why as overlay__open() and overlay__create(); on
 * failure nothing is left at @out_path.
 */
int overlay__flatten(const char *path, const char *out_path, char *why,
		     size_t whylen);

#endif /* EMBER_SNAPSHOT_OVERLAY_H */
