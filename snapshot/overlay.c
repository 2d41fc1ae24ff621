// SPDX-License-Identifier: Apache-2.0
/* Copy-on-write disk overlays (see overlay.h). */
#include "overlay.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../devices/fileio.h"
#include "../devices/le.h"
#include "overlay_format.h"

#define FLATTEN_BLOCK 4096u /* holes in a flattened image: this granule */

struct overlay {
	int fd; /* the overlay file */
	int base_fd; /* the raw base, read-only */
	bool read_only;
	unsigned int cluster_bits;
	uint64_t cluster_bytes;
	uint64_t size; /* virtual disk bytes */
	uint64_t clusters; /* map entries */
	uint64_t map_off, data_off;
	uint64_t next_free; /* file offset of the next new cluster */
	uint64_t allocated, dropped;
	uint64_t *map; /* host order, a copy of the file's */
	uint8_t *buf; /* one cluster: merges of new data with the base */
	char *base_path; /* as resolved */
};

int overlay__create(const char *path, const char *base_path, char *why,
		    size_t whylen)
{
	uint8_t *hdr = NULL;
	uint64_t size, clusters, data_off;
	char *real;
	struct stat st;
	uint32_t crc;
	size_t plen;
	int bfd, fd, ret;

	real = realpath(base_path, NULL);
	if (!real) {
		ret = -errno;
		snprintf(why, whylen, "base %s: %s", base_path,
			 strerror(errno));
		return ret;
	}
	plen = strlen(real);
	if (plen > OVERLAY_BASE_PATH_MAX) {
		snprintf(why, whylen, "base path longer than %d bytes",
			 OVERLAY_BASE_PATH_MAX);
		ret = -ENAMETOOLONG;
		goto out_real;
	}
	bfd = overlay_format__open_base(real, &st, why, whylen);
	if (bfd < 0) {
		ret = bfd;
		goto out_real;
	}
	size = (uint64_t)st.st_size;
	clusters = overlay_format__clusters(size, OVERLAY_CLUSTER_BITS);
	if (clusters > OVERLAY_MAP_MAX_ENTRIES) {
		snprintf(why, whylen, "base %s: larger than %llu clusters",
			 real, (unsigned long long)OVERLAY_MAP_MAX_ENTRIES);
		ret = -EINVAL;
		goto out_base;
	}
	ret = overlay_format__base_crc(bfd, size, &crc);
	if (ret) {
		snprintf(why, whylen, "base %s: %s", real, strerror(-ret));
		goto out_base;
	}
	hdr = calloc(1, OVERLAY_HEADER_BYTES);
	if (!hdr) {
		snprintf(why, whylen, "out of memory");
		ret = -ENOMEM;
		goto out_base;
	}
	data_off = overlay_format__header(hdr, size, crc, real, &st);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		snprintf(why, whylen, "%s", strerror(errno));
		goto out_hdr;
	}
	/* The map is a hole of zeroes: every cluster reads from the base. */
	if (ftruncate(fd, (off_t)data_off) < 0)
		ret = -errno;
	else
		ret = fileio__pwrite_all(fd, hdr, OVERLAY_HEADER_BYTES, 0);
	if (!ret && fdatasync(fd) < 0)
		ret = -errno;
	if (ret) {
		snprintf(why, whylen, "%s", strerror(-ret));
		unlink(path);
	}
	close(fd);
out_hdr:
	free(hdr);
out_base:
	close(bfd);
out_real:
	free(real);
	return ret;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Read and check the map of @o (its file @file_size bytes long): see
 * overlay.h.  Entries past the end are dropped here, in memory only;
 * *@raw (malloc()ed, the caller frees it, also on failure) keeps the
 * file's map for ovl__clear_dropped().  Returns 0 or -errno with the
 * reason in @why.
 */
static int ovl__load_map(struct overlay *o, uint64_t file_size, uint8_t **raw,
			 char *why, size_t whylen)
{
	uint64_t i, n = 0, bytes = o->clusters * 8, mask = o->cluster_bytes - 1;
	uint64_t *sorted = NULL;
	int ret;

	*raw = malloc(bytes);
	o->map = malloc(bytes);
	if (!*raw || !o->map) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	ret = fileio__pread_all(o->fd, *raw, bytes, o->map_off);
	if (ret) {
		snprintf(why, whylen, "reading the map: %s", strerror(-ret));
		return ret;
	}
	for (i = 0; i < o->clusters; i++) {
		uint64_t e = le__get64(*raw + i * 8);

		if (e && ((e & mask) || e < o->data_off)) {
			snprintf(why, whylen,
				 "corrupt map (cluster %llu at offset %llu)",
				 (unsigned long long)i, (unsigned long long)e);
			return -EINVAL;
		}
		if (e && (e > file_size || file_size - e < o->cluster_bytes)) {
			/* A write lost before a flush (overlay.h). */
			o->dropped++;
			e = 0;
		}
		o->map[i] = e;
		if (e)
			n++;
	}
	o->allocated = n;
	/* No two entries at one cluster: sort the offsets, look at pairs. */
	if (n > 1) {
		sorted = malloc(n * sizeof(*sorted));
		if (!sorted) {
			snprintf(why, whylen, "out of memory");
			return -ENOMEM;
		}
		for (i = 0, n = 0; i < o->clusters; i++)
			if (o->map[i])
				sorted[n++] = o->map[i];
		qsort(sorted, n, sizeof(*sorted), cmp_u64);
		for (i = 1; i < n; i++) {
			if (sorted[i] == sorted[i - 1]) {
				snprintf(
					why, whylen,
					"corrupt map (two clusters at offset %llu)",
					(unsigned long long)sorted[i]);
				ret = -EINVAL;
				break;
			}
		}
		free(sorted);
		if (ret)
			return ret;
	}
	/* New clusters go past everything in the file, whole or not. */
	o->next_free = (file_size + mask) & ~mask;
	if (o->next_free < o->data_off)
		o->next_free = o->data_off;
	return 0;
}

/*
 * Zero in the file the entries ovl__load_map() dropped (@raw: the file's
 * map), durably: a new cluster may take such an entry's offset, and a
 * crash must not leave two entries at one cluster.  Only once the whole
 * overlay checked out, so that a refused file is never written.
 */
static int ovl__clear_dropped(struct overlay *o, const uint8_t *raw, char *why,
			      size_t whylen)
{
	static const uint8_t zero[8];
	uint64_t i;
	int ret;

	if (!o->dropped || o->read_only)
		return 0;
	for (i = 0; i < o->clusters; i++) {
		if (o->map[i] || !le__get64(raw + i * 8))
			continue;
		ret = fileio__pwrite_all(o->fd, zero, 8, o->map_off + i * 8);
		if (ret)
			goto fail;
	}
	ret = fdatasync(o->fd) < 0 ? -errno : 0;
	if (!ret)
		return 0;
fail:
	snprintf(why, whylen, "clearing dangling map entries: %s",
		 strerror(-ret));
	return ret;
}

/*
 * The base path @stored, relative to the directory of the overlay @path
 * unless absolute, into a malloc()ed string; NULL with errno ENOMEM or
 * ENAMETOOLONG (longer than PATH_MAX).
 */
static char *ovl__resolve(const char *stored, const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;
	size_t dlen, need;
	char *s;

	if (stored[0] == '/' || !slash)
		return strdup(stored);
	dlen = (size_t)(slash - path) + 1;
	need = dlen + strlen(stored) + 1;
	if (need > PATH_MAX) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	s = malloc(need);
	if (!s)
		return NULL;
	memcpy(s, path, dlen);
	strcpy(s + dlen, stored);
	return s;
}

int overlay__open_fd(int fd, const char *path, bool read_only,
		     struct overlay **out, char *why, size_t whylen)
{
	struct overlay_hdr *h;
	struct overlay *o;
	struct stat st, bst;
	uint8_t *raw;
	uint32_t crc;
	int ret;

	if (fstat(fd, &st) < 0) {
		ret = -errno;
		snprintf(why, whylen, "%s", strerror(errno));
		return ret;
	}
	if (!S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size < OVERLAY_HEADER_BYTES) {
		snprintf(why, whylen, "not an overlay (%s)",
			 S_ISREG(st.st_mode) ? "shorter than its header" :
					       "not a regular file");
		return -EINVAL;
	}
	raw = malloc(OVERLAY_HEADER_BYTES);
	h = malloc(sizeof(*h));
	o = calloc(1, sizeof(*o));
	if (!raw || !h || !o) {
		snprintf(why, whylen, "out of memory");
		ret = -ENOMEM;
		goto fail;
	}
	o->fd = fd;
	o->base_fd = -1;
	o->read_only = read_only;
	ret = fileio__pread_all(fd, raw, OVERLAY_HEADER_BYTES, 0);
	if (ret) {
		snprintf(why, whylen, "reading the header: %s", strerror(-ret));
		goto fail;
	}
	ret = overlay_format__parse_header(raw, (uint64_t)st.st_size, h, why,
					   whylen);
	if (ret)
		goto fail;
	o->cluster_bits = h->cluster_bits;
	o->cluster_bytes = 1ull << h->cluster_bits;
	o->size = h->size;
	o->clusters = h->clusters;
	o->map_off = OVERLAY_HEADER_BYTES;
	o->data_off = h->data_off;
	o->base_path = ovl__resolve(h->base_path, path);
	if (!o->base_path) {
		ret = -errno;
		snprintf(why, whylen, "base %s: %s", h->base_path,
			 strerror(errno));
		goto fail;
	}
	o->buf = malloc(o->cluster_bytes);
	if (!o->buf) {
		snprintf(why, whylen, "out of memory");
		ret = -ENOMEM;
		goto fail;
	}
	ret = overlay_format__open_base(o->base_path, &bst, why, whylen);
	if (ret < 0)
		goto fail;
	o->base_fd = ret;
	if ((uint64_t)bst.st_size != o->size) {
		snprintf(
			why, whylen,
			"base %s changed since the overlay was made (%llu bytes, was %llu)",
			o->base_path, (unsigned long long)bst.st_size,
			(unsigned long long)o->size);
		ret = -ESTALE;
		goto fail;
	}
	ret = overlay_format__base_crc(o->base_fd, o->size, &crc);
	if (ret) {
		snprintf(why, whylen, "base %s: %s", o->base_path,
			 strerror(-ret));
		goto fail;
	}
	if (crc != h->base_crc) {
		snprintf(why, whylen,
			 "base %s changed since the overlay was made (content)",
			 o->base_path);
		ret = -ESTALE;
		goto fail;
	}
	free(raw);
	raw = NULL;
	ret = ovl__load_map(o, (uint64_t)st.st_size, &raw, why, whylen);
	if (ret)
		goto fail;
	ret = ovl__clear_dropped(o, raw, why, whylen);
	if (ret)
		goto fail;
	free(h);
	free(raw);
	*out = o;
	return 0;
fail:
	if (o) {
		o->fd = -1; /* the caller's on failure */
		overlay__close(o);
	}
	free(h);
	free(raw);
	return ret;
}

int overlay__open(const char *path, bool read_only, struct overlay **out,
		  char *why, size_t whylen)
{
	int fd, ret;

	fd = open(path,
		  (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		ret = -errno;
		snprintf(why, whylen, "%s", strerror(errno));
		return ret;
	}
	if (flock(fd, (read_only ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0) {
		ret = errno == EWOULDBLOCK ? -EBUSY : -errno;
		snprintf(why, whylen, "in use by another process (%s)",
			 strerror(errno));
		close(fd);
		return ret;
	}
	ret = overlay__open_fd(fd, path, read_only, out, why, whylen);
	if (ret)
		close(fd);
	return ret;
}

/* Is [@off, @off + @len) inside the disk?  (No overflow possible.) */
static bool ovl__in_range(const struct overlay *o, uint64_t off, uint64_t len)
{
	return off <= o->size && len <= o->size - off;
}

int overlay__read(struct overlay *o, void *buf, uint64_t len, uint64_t off)
{
	uint64_t mask = o->cluster_bytes - 1;
	uint8_t *p = buf;
	int ret;

	if (!ovl__in_range(o, off, len))
		return -EINVAL;
	while (len) {
		uint64_t ci = off >> o->cluster_bits, first = ci;
		uint64_t e = o->map[ci], in = off & mask;
		uint64_t n = o->cluster_bytes - in;
		int fd = e ? o->fd : o->base_fd;

		/* One pread for the clusters that follow in the same file. */
		while (n < len && ++ci < o->clusters &&
		       o->map[ci] ==
			       (e ? e + ((ci - first) << o->cluster_bits) : 0))
			n += o->cluster_bytes;
		if (n > len)
			n = len;
		ret = fileio__pread_all(fd, p, n, e ? e + in : off);
		if (ret)
			return ret;
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

/*
 * Give cluster @ci its own copy in the file with @n bytes of @src at
 * @in inside it, the rest from the base (zeroes past the disk's end):
 * the data, then the map entry.
 */
static int ovl__alloc(struct overlay *o, uint64_t ci, const uint8_t *src,
		      uint64_t n, uint64_t in)
{
	uint64_t start = ci << o->cluster_bits;
	uint64_t valid = o->size - start < o->cluster_bytes ? o->size - start :
							      o->cluster_bytes;
	uint64_t at = o->next_free;
	const uint8_t *data = o->buf;
	uint8_t le[8];
	int ret;

	if (at > (uint64_t)INT64_MAX - o->cluster_bytes)
		return -EFBIG;
	if (in == 0 && n == o->cluster_bytes) {
		data = src;
	} else {
		if (in != 0 || n < valid) {
			ret = fileio__pread_all(o->base_fd, o->buf, valid,
						start);
			if (ret)
				return ret;
		}
		memset(o->buf + valid, 0, o->cluster_bytes - valid);
		memcpy(o->buf + in, src, n);
	}
	/* Never reused, even if this fails half-way: no entry points here. */
	o->next_free += o->cluster_bytes;
	ret = fileio__pwrite_all(o->fd, data, o->cluster_bytes, at);
	if (ret)
		return ret;
	le__put64(le, at);
	ret = fileio__pwrite_all(o->fd, le, sizeof(le), o->map_off + ci * 8);
	if (ret)
		return ret;
	o->map[ci] = at;
	o->allocated++;
	return 0;
}

int overlay__write(struct overlay *o, const void *buf, uint64_t len,
		   uint64_t off)
{
	uint64_t mask = o->cluster_bytes - 1;
	const uint8_t *p = buf;
	int ret;

	if (o->read_only)
		return -EROFS;
	if (!ovl__in_range(o, off, len))
		return -EINVAL;
	while (len) {
		uint64_t ci = off >> o->cluster_bits, in = off & mask;
		uint64_t n = o->cluster_bytes - in;

		if (n > len)
			n = len;
		if (o->map[ci])
			ret = fileio__pwrite_all(o->fd, p, n, o->map[ci] + in);
		else
			ret = ovl__alloc(o, ci, p, n, in);
		if (ret)
			return ret;
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

int overlay__flush(struct overlay *o)
{
	int r;

	if (o->read_only)
		return 0;
	do
		r = fdatasync(o->fd);
	while (r < 0 && errno == EINTR);
	return r ? -errno : 0;
}

uint64_t overlay__size(const struct overlay *o)
{
	return o->size;
}

uint64_t overlay__allocated(const struct overlay *o)
{
	return o->allocated;
}

void overlay__info(const struct overlay *o, struct overlay_info *out)
{
	out->size = o->size;
	out->cluster_bytes = (uint32_t)o->cluster_bytes;
	out->clusters = o->clusters;
	out->allocated = o->allocated;
	out->dropped = o->dropped;
	out->base_path = o->base_path;
}

void overlay__close(struct overlay *o)
{
	if (!o)
		return;
	if (o->fd >= 0)
		close(o->fd);
	if (o->base_fd >= 0)
		close(o->base_fd);
	free(o->map);
	free(o->buf);
	free(o->base_path);
	free(o);
}

/* Is the block @p of @n bytes all zero? */
static bool ovl__zero(const uint8_t *p, uint64_t n)
{
	return !n || (!p[0] && !memcmp(p, p + 1, n - 1));
}

int overlay__flatten(const char *path, const char *out_path, char *why,
		     size_t whylen)
{
	struct overlay *o;
	uint64_t off, i, n, b;
	uint8_t *buf;
	int fd, ret;

	ret = overlay__open(path, true, &o, why, whylen);
	if (ret)
		return ret;
	buf = malloc(o->cluster_bytes);
	if (!buf) {
		snprintf(why, whylen, "out of memory");
		ret = -ENOMEM;
		goto out_o;
	}
	fd = open(out_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		snprintf(why, whylen, "%s: %s", out_path, strerror(errno));
		goto out_buf;
	}
	ret = ftruncate(fd, (off_t)o->size) < 0 ? -errno : 0;
	for (off = 0; !ret && off < o->size; off += n) {
		n = o->size - off < o->cluster_bytes ? o->size - off :
						       o->cluster_bytes;
		ret = overlay__read(o, buf, n, off);
		/* Write the runs of blocks that are not zero. */
		for (i = 0; !ret && i < n; i += b) {
			b = 0;
			while (i + b < n) {
				uint64_t k = n - i - b < FLATTEN_BLOCK ?
						     n - i - b :
						     FLATTEN_BLOCK;

				if (ovl__zero(buf + i + b, k))
					break;
				b += k;
			}
			if (b)
				ret = fileio__pwrite_all(fd, buf + i, b,
							 off + i);
			else
				b = n - i < FLATTEN_BLOCK ? n - i :
							    FLATTEN_BLOCK;
		}
	}
	if (!ret && fdatasync(fd) < 0)
		ret = -errno;
	close(fd);
	if (ret) {
		snprintf(why, whylen, "%s: %s", out_path, strerror(-ret));
		unlink(out_path);
	}
out_buf:
	free(buf);
out_o:
	overlay__close(o);
	return ret;
}
