/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whole-range I/O on host files (disk images, kernels, initrds): pread(2)
 * and pwrite(2) retried until all of the range moved; a sparse file's
 * data extents one at a time.  Ground floor (see
 * device.h): libc only, no KVM, no guest memory; usable from devices/,
 * snapshot/ and vmm/ alike.
 */
#ifndef EMBER_DEVICES_FILEIO_H
#define EMBER_DEVICES_FILEIO_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

/* One call moves at most this much (Linux caps a transfer near 2 GiB). */
#define FILEIO_CHUNK (1U << 30)

/*
 * fileio__rw_all() - the loop of both below: move all @len bytes at
 * offset @off of @fd from @buf (@to_file) or into it, one chunk at a time,
 * retrying after EINTR.  Returns 0, -errno, or -EIO when a call moved
 * nothing (the file ended first, or it took no byte).
 */
static inline int fileio__rw_all(int fd, uint8_t *buf, uint64_t len,
				 uint64_t off, bool to_file)
{
	while (len) {
		size_t chunk = len > FILEIO_CHUNK ? FILEIO_CHUNK : len;
		ssize_t n = to_file ? pwrite(fd, buf, chunk, (off_t)off) :
				      pread(fd, buf, chunk, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		buf += n;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

/*
 * fileio__pread_all() - read all @len bytes at offset @off of @fd into
 * @dst.  Returns 0, -errno from pread(2), or -EIO when the file ends first
 * (it shrank under us).
 */
static inline int fileio__pread_all(int fd, void *dst, uint64_t len,
				    uint64_t off)
{
	return fileio__rw_all(fd, dst, len, off, false);
}

/*
 * fileio__pwrite_all() - write all @len bytes of @src at offset @off of
 * @fd.  Returns 0, -errno from pwrite(2), or -EIO if it wrote nothing.
 * (@src is only read: the cast serves the shared loop.)
 */
static inline int fileio__pwrite_all(int fd, const void *src, uint64_t len,
				     uint64_t off)
{
	return fileio__rw_all(fd, (uint8_t *)src, len, off, true);
}

/*
 * fileio__next_data() - the next data extent of the sparse file @fd at or
 * past *@data (lseek(2) SEEK_DATA, then SEEK_HOLE): its start into *@data
 * and its end into *@hole.  Returns 1, 0 when no data follows (ENXIO), or
 * -errno from lseek(2).
 */
static inline int fileio__next_data(int fd, off_t *data, off_t *hole)
{
	*data = lseek(fd, *data, SEEK_DATA);
	if (*data < 0)
		return errno == ENXIO ? 0 : -errno;
	*hole = lseek(fd, *data, SEEK_HOLE);
	if (*hole < 0)
		return -errno;
	return 1;
}

#endif /* EMBER_DEVICES_FILEIO_H */
