/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The disk overlay's file format (see overlay.h for what an overlay is
 * and how it is read and written): the header's layout, encoded for a
 * new overlay and parsed and checked on open, the geometry it implies,
 * and the base identity (opening a base and sampling its CRC).  Pure
 * file code (pread, flock, zlib's crc32()); no open overlay here.
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
 */
#ifndef EMBER_SNAPSHOT_OVERLAY_FORMAT_H
#define EMBER_SNAPSHOT_OVERLAY_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

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

/* The header as parsed, before the base is looked at. */
struct overlay_hdr {
	unsigned int cluster_bits;
	uint64_t size, clusters, data_off;
	uint32_t base_crc;
	char base_path[OVERLAY_BASE_PATH_MAX + 1];
};

/*
 * overlay_format__clusters() - map entries (clusters of 2^@cluster_bits
 * bytes) needed for a disk of @size bytes, the last one partial.
 */
uint64_t overlay_format__clusters(uint64_t size, unsigned int cluster_bits);

/*
 * overlay_format__header() - encode the header of a new overlay into @hdr
 * (OVERLAY_HEADER_BYTES bytes, zeroed by the caller): a disk of @size
 * bytes (the base's; at most OVERLAY_MAP_MAX_ENTRIES clusters) in
 * OVERLAY_CLUSTER_BITS clusters over the base @base_path (at most
 * OVERLAY_BASE_PATH_MAX bytes) whose sampled CRC is @base_crc and whose
 * stat is @st, with the header's CRC.  Returns the data offset: the
 * file's size before its first cluster.
 */
uint64_t overlay_format__header(uint8_t *hdr, uint64_t size, uint32_t base_crc,
				const char *base_path, const struct stat *st);

/*
 * overlay_format__parse_header() - check the header @h
 * (OVERLAY_HEADER_BYTES bytes) of a file of @file_size bytes: magic,
 * version, CRC, every geometry field against the others and the file's
 * size, flags, base path; into *@out.  Returns 0, or -EINVAL (not an
 * overlay, corrupt, truncated) / -EPROTONOSUPPORT (another version) with
 * a one-line reason in @why (@whylen bytes).
 */
int overlay_format__parse_header(const uint8_t *h, uint64_t file_size,
				 struct overlay_hdr *out, char *why,
				 size_t whylen);

/*
 * overlay_format__base_crc() - the base identity's CRC (above) of the
 * first @size bytes of @fd into *@out.  Returns 0, -ENOMEM, or a negative
 * errno of pread(2) (-EIO if the file ended early).
 */
int overlay_format__base_crc(int fd, uint64_t size, uint32_t *out);

/*
 * overlay_format__open_base() - open the base @path read-only
 * (O_NONBLOCK) and check it is usable: a regular file of at least one
 * byte, not an overlay, and shared-locked (fails if a writer holds it).
 * Returns the fd (the caller closes it) with its stat in *@st, or a
 * negative errno with a one-line reason naming @path in @why: -EINVAL,
 * -EBUSY, errors of open(2) and fstat(2).
 */
int overlay_format__open_base(const char *path, struct stat *st, char *why,
			      size_t whylen);

/*
 * overlay__is_overlay() - does the file @fd start with OVERLAY_MAGIC?
 * Reads 8 bytes at offset 0 (pread: the file position is unchanged);
 * false on any error or a shorter file.  Only the magic: overlay__open_fd()
 * checks the rest.
 */
bool overlay__is_overlay(int fd);

#endif /* EMBER_SNAPSHOT_OVERLAY_FORMAT_H */
