/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whole-range I/O on host files (disk images, kernels, initrds): pread(2)
 * and pwrite(2) retried until all of the range moved.  Ground floor (see
 * device.h): libc only, no KVM, no guest memory; usable from devices/,
 * snapshot/ and vmm/ alike.
 */
#ifndef EMBER_DEVICES_FILEIO_H
#define EMBER_DEVICES_FILEIO_H

#include <errno.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

/* One call moves at most this much (Linux caps a transfer near 2 GiB). */
#define FILEIO_CHUNK (1U << 30)

/*
 * fileio__pread_all() - read all @len bytes at offset @off of @fd into
 * @dst.  Returns 0, -errno from pread(2), or -EIO when the file ends first
 * (it shrank under us).
 */
static inline int fileio__pread_all(int fd, void *dst, uint64_t len,
				    uint64_t off)
{
	uint8_t *p = dst;

	while (len) {
		ssize_t n =
			pread(fd, p, len > FILEIO_CHUNK ? FILEIO_CHUNK : len,
			      (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

/*
 * fileio__pwrite_all() - write all @len bytes of @src at offset @off of
 * @fd.  Returns 0, -errno from pwrite(2), or -EIO if it wrote nothing.
 */
static inline int fileio__pwrite_all(int fd, const void *src, uint64_t len,
				     uint64_t off)
{
	const uint8_t *p = src;

	while (len) {
		ssize_t n =
			pwrite(fd, p, len > FILEIO_CHUNK ? FILEIO_CHUNK : len,
			       (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

#endif /* EMBER_DEVICES_FILEIO_H */
