/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Copy-on-write disk overlays: one read-only raw base image shared by many
 * sandboxes, each writing only its own clusters into its overlay file.
 * Pure file code (pread, pwrite, fdatasync, flock): no KVM, no guest
 * memory.  vmm/dev/blk.c opens one when a drive's file starts with
 * OVERLAY_MAGIC, and vmm/dev/blk_backing.c makes it the backing of a
 * virtio-blk device, which never sees the format.
 *
 * Layout, all integers little-endian:
 *
 *   header   OVERLAY_HEADER_BYTES (4 KiB) at offset 0:
 *              0  magic "EMBROVLY" (8 bytes)
 *              8  u32 format version (OVERLAY_FORMAT_VERSION)
 *             12  u32 log2 of the cluster size (OVERLAY_CLUSTER_BITS_MIN..
 *                 _MAX; overlay__create() writes 16: 64 KiB)
 *             16  u64 virtual disk size in bytes (> 0; equals the base's)
 *             24  u64 map offset (OVERLAY_HEADER_BYTES)
 *             32  u64 map entries: clusters of the disk, size rounded up
 *             40  u64 data offset: map offset + 8 * entries, rounded up
 *                 to a cluster
 *             48  u64 base size in bytes
 *             56  u32 CRC-32 of the base's sampled content (below)
 *             60  u32 base path length (1..OVERLAY_BASE_PATH_MAX)
 *             64  u64 base st_mtim seconds, 72 u32 nanoseconds
 *                 (informative only, see "base identity")
 *             76  u32 flags, 0
 *             80  the base path, no NUL; zeroes after it
 *           4092  u32 CRC-32 (zlib's crc32()) of bytes 0..4091
 *   map      one u64 per cluster: 0, the cluster was never written and
 *            reads from the base; otherwise the file offset of its data
 *   data     whole clusters (the disk's last one zero-padded), appended
 *            at the end of the file in the order they were first
 *            written, from the first cluster boundary at or past both
 *            the data offset and the file's end when it was opened (the
 *            file is sparse: the map is mostly a hole)
 *
 * Base identity: the base's size and the CRC-32 of its first and last
 * 64 KiB and of one 4 KiB block at every multiple of 64 MiB, in that
 * order (overlapping blocks are read twice).  An overlay refuses a base
 * whose size or sampled CRC differs.  The mtime is kept for a reader's
 * information and not compared: copying a base (to another host, into a
 * template directory) changes it while the content is the same.  The
 * sample does not see every byte: a base edited between samples passes,
 * so a base must never be written while overlays use it (overlay__open()
 * takes a shared flock on it, which ember's writable drives conflict
 * with).  A relative base path is relative to the overlay's directory;
 * overlay__create() stores the base's canonical absolute path.  The base
 * must be a raw regular file, never another overlay.
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

#define OVERLAY_MAGIC		 "EMBROVLY"
#define OVERLAY_MAGIC_BYTES	 8
#define OVERLAY_FORMAT_VERSION	 1u
#define OVERLAY_HEADER_BYTES	 4096u
#define OVERLAY_CLUSTER_BITS	 16 /* what overlay__create() writes */
#define OVERLAY_CLUSTER_BITS_MIN 12 /* 4 KiB */
#define OVERLAY_CLUSTER_BITS_MAX 21 /* 2 MiB */
#define OVERLAY_BASE_PATH_MAX	 4000 /* bytes, fits the header */
#define OVERLAY_MAP_MAX_ENTRIES	 (1ull << 23) /* 64 MiB of map in memory */
#define OVERLAY_SAMPLE_EDGE	 (64u * 1024) /* first/last bytes sampled */
#define OVERLAY_SAMPLE_BLOCK	 4096u /* bytes sampled per stride */
#define OVERLAY_SAMPLE_STRIDE	 (64ull << 20) /* one block per 64 MiB */

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
 * overlay__is_overlay() - does the file @fd start with OVERLAY_MAGIC?
 * Reads 8 bytes at offset 0 (pread: the file position is unchanged);
 * false on any error or a shorter file.  Only the magic: overlay__open_fd()
 * checks the rest.
 */
bool overlay__is_overlay(int fd);

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
