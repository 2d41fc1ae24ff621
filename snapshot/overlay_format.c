// SPDX-License-Identifier: Apache-2.0
/* The disk overlay's file format (see overlay_format.h). */
#include "overlay_format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>
#include <zlib.h>

#include "../devices/fileio.h"
#include "../devices/le.h"

/* Header field offsets (overlay_format.h). */
#define H_MAGIC	       0
#define H_VERSION      8
#define H_CLUSTER_BITS 12
#define H_SIZE	       16
#define H_MAP_OFF      24
#define H_ENTRIES      32
#define H_DATA_OFF     40
#define H_BASE_SIZE    48
#define H_BASE_CRC     56
#define H_PATH_LEN     60
#define H_MTIME_SEC    64
#define H_MTIME_NSEC   72
#define H_FLAGS	       76
#define H_PATH	       80
#define H_CRC	       (OVERLAY_HEADER_BYTES - 4)

uint64_t overlay_format__clusters(uint64_t size, unsigned int cluster_bits)
{
	uint64_t mask = (1ull << cluster_bits) - 1;

	return (size >> cluster_bits) + !!(size & mask);
}

/* Where the data starts for @clusters map entries of @cluster_bits. */
static uint64_t ovl__data_off(uint64_t clusters, unsigned int cluster_bits)
{
	uint64_t mask = (1ull << cluster_bits) - 1;

	return (OVERLAY_HEADER_BYTES + clusters * 8 + mask) & ~mask;
}

/*
 * The base identity's CRC (overlay_format.h): first and last
 * OVERLAY_SAMPLE_EDGE bytes and a block at every multiple of the stride,
 * of @fd's @size.
 */
int overlay_format__base_crc(int fd, uint64_t size, uint32_t *out)
{
	uint64_t off, n;
	uint8_t *buf;
	uLong crc;
	int ret;

	buf = malloc(OVERLAY_SAMPLE_EDGE);
	if (!buf)
		return -ENOMEM;
	crc = crc32(0, NULL, 0);
	n = size < OVERLAY_SAMPLE_EDGE ? size : OVERLAY_SAMPLE_EDGE;
	ret = fileio__pread_all(fd, buf, n, 0);
	if (ret)
		goto out;
	crc = crc32(crc, buf, (uInt)n);
	for (off = OVERLAY_SAMPLE_STRIDE; off < size;
	     off += OVERLAY_SAMPLE_STRIDE) {
		n = size - off < OVERLAY_SAMPLE_BLOCK ? size - off :
							OVERLAY_SAMPLE_BLOCK;
		ret = fileio__pread_all(fd, buf, n, off);
		if (ret)
			goto out;
		crc = crc32(crc, buf, (uInt)n);
	}
	n = size < OVERLAY_SAMPLE_EDGE ? size : OVERLAY_SAMPLE_EDGE;
	ret = fileio__pread_all(fd, buf, n, size - n);
	if (ret)
		goto out;
	crc = crc32(crc, buf, (uInt)n);
	*out = (uint32_t)crc;
out:
	free(buf);
	return ret;
}

uint64_t overlay_format__header(uint8_t *hdr, uint64_t size, uint32_t base_crc,
				const char *base_path, const struct stat *st)
{
	uint64_t clusters =
		overlay_format__clusters(size, OVERLAY_CLUSTER_BITS);
	uint64_t data_off = ovl__data_off(clusters, OVERLAY_CLUSTER_BITS);
	size_t plen = strlen(base_path);

	memcpy(hdr + H_MAGIC, OVERLAY_MAGIC, OVERLAY_MAGIC_BYTES);
	le__put32(hdr + H_VERSION, OVERLAY_FORMAT_VERSION);
	le__put32(hdr + H_CLUSTER_BITS, OVERLAY_CLUSTER_BITS);
	le__put64(hdr + H_SIZE, size);
	le__put64(hdr + H_MAP_OFF, OVERLAY_HEADER_BYTES);
	le__put64(hdr + H_ENTRIES, clusters);
	le__put64(hdr + H_DATA_OFF, data_off);
	le__put64(hdr + H_BASE_SIZE, size);
	le__put32(hdr + H_BASE_CRC, base_crc);
	le__put32(hdr + H_PATH_LEN, (uint32_t)plen);
	le__put64(hdr + H_MTIME_SEC, (uint64_t)st->st_mtim.tv_sec);
	le__put32(hdr + H_MTIME_NSEC, (uint32_t)st->st_mtim.tv_nsec);
	le__put32(hdr + H_FLAGS, 0);
	memcpy(hdr + H_PATH, base_path, plen);
	le__put32(hdr + H_CRC, (uint32_t)crc32(0, hdr, H_CRC));
	return data_off;
}

/*
 * Open the base @path for reading and check it is usable: a regular
 * file, not an overlay, shared-locked.  Returns the fd with its stat in
 * *@st, or -errno with the reason in @why.
 */
int overlay_format__open_base(const char *path, struct stat *st, char *why,
			      size_t whylen)
{
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		ret = -errno;
		snprintf(why, whylen, "base %s: %s", path, strerror(errno));
		return ret;
	}
	if (fstat(fd, st) < 0) {
		ret = -errno;
		snprintf(why, whylen, "base %s: %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st->st_mode) || st->st_size <= 0) {
		ret = -EINVAL;
		snprintf(why, whylen, "base %s: %s", path,
			 S_ISREG(st->st_mode) ? "empty" : "not a regular file");
		goto fail;
	}
	/* ember's writable drives hold LOCK_EX: no base under a writer. */
	if (flock(fd, LOCK_SH | LOCK_NB) < 0) {
		ret = errno == EWOULDBLOCK ? -EBUSY : -errno;
		snprintf(why, whylen, "base %s is in use by a writer (%s)",
			 path, strerror(errno));
		goto fail;
	}
	if (overlay__is_overlay(fd)) {
		ret = -EINVAL;
		snprintf(
			why, whylen,
			"base %s is itself an overlay (chains are not supported)",
			path);
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return ret;
}

/*
 * Check the header @h of a file of @file_size bytes into *@out.  Returns
 * 0 or -EINVAL / -EPROTONOSUPPORT with the reason in @why.
 */
int overlay_format__parse_header(const uint8_t *h, uint64_t file_size,
				 struct overlay_hdr *out, char *why,
				 size_t whylen)
{
	uint32_t version = le__get32(h + H_VERSION);
	uint32_t bits = le__get32(h + H_CLUSTER_BITS);
	uint32_t plen = le__get32(h + H_PATH_LEN);

	if (memcmp(h + H_MAGIC, OVERLAY_MAGIC, OVERLAY_MAGIC_BYTES)) {
		snprintf(why, whylen, "not an overlay (no magic)");
		return -EINVAL;
	}
	if (version != OVERLAY_FORMAT_VERSION) {
		snprintf(why, whylen, "overlay format version %u (this is %u)",
			 version, OVERLAY_FORMAT_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (le__get32(h + H_CRC) != (uint32_t)crc32(0, h, H_CRC)) {
		snprintf(why, whylen, "corrupt header (CRC)");
		return -EINVAL;
	}
	if (bits < OVERLAY_CLUSTER_BITS_MIN ||
	    bits > OVERLAY_CLUSTER_BITS_MAX) {
		snprintf(why, whylen, "corrupt header (cluster size 2^%u)",
			 bits);
		return -EINVAL;
	}
	out->cluster_bits = bits;
	out->size = le__get64(h + H_SIZE);
	if (!out->size || out->size > (uint64_t)INT64_MAX) {
		snprintf(why, whylen, "corrupt header (disk size %llu)",
			 (unsigned long long)out->size);
		return -EINVAL;
	}
	out->clusters = overlay_format__clusters(out->size, bits);
	if (out->clusters > OVERLAY_MAP_MAX_ENTRIES ||
	    le__get64(h + H_ENTRIES) != out->clusters) {
		snprintf(why, whylen, "corrupt header (map entries %llu)",
			 (unsigned long long)le__get64(h + H_ENTRIES));
		return -EINVAL;
	}
	out->data_off = ovl__data_off(out->clusters, bits);
	if (le__get64(h + H_MAP_OFF) != OVERLAY_HEADER_BYTES ||
	    le__get64(h + H_DATA_OFF) != out->data_off) {
		snprintf(why, whylen, "corrupt header (map or data offset)");
		return -EINVAL;
	}
	if (le__get64(h + H_BASE_SIZE) != out->size) {
		snprintf(why, whylen, "corrupt header (base size %llu)",
			 (unsigned long long)le__get64(h + H_BASE_SIZE));
		return -EINVAL;
	}
	if (le__get32(h + H_FLAGS)) {
		snprintf(why, whylen, "unknown overlay flags 0x%x",
			 le__get32(h + H_FLAGS));
		return -EINVAL;
	}
	if (!plen || plen > OVERLAY_BASE_PATH_MAX ||
	    memchr(h + H_PATH, 0, plen)) {
		snprintf(why, whylen, "corrupt header (base path)");
		return -EINVAL;
	}
	memcpy(out->base_path, h + H_PATH, plen);
	out->base_path[plen] = 0;
	out->base_crc = le__get32(h + H_BASE_CRC);
	if (file_size < out->data_off) {
		snprintf(why, whylen,
			 "truncated (%llu bytes, the map ends at %llu)",
			 (unsigned long long)file_size,
			 (unsigned long long)out->data_off);
		return -EINVAL;
	}
	return 0;
}

bool overlay__is_overlay(int fd)
{
	char m[OVERLAY_MAGIC_BYTES];

	return fileio__pread_all(fd, m, sizeof(m), 0) == 0 &&
	       !memcmp(m, OVERLAY_MAGIC, sizeof(m));
}
