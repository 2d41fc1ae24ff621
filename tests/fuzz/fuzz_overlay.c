// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: snapshot/overlay.c on hostile overlay files.  A small
 * raw base (made once, in /tmp) and a valid empty overlay over it (its
 * header is the template).  Per input an overlay file is built in a
 * memfd and opened over the base; then the input's operations run on it.
 *
 * Input: u8 mode, 96 bytes of header patch, le32 file size, le16 map
 * entries given, that many map entries (le64, or le16 with mode bit 5),
 * then 8-byte operations.
 *   mode bit 0  the patch replaces header bytes 0..95 (else the
 *               template's stay)
 *        bit 1  then the magic, version and header CRC are made right
 *        bit 3  the base's size, CRC and path and the disk's size are
 *               the template's
 *        bit 2  then the entries and data offset follow from the size
 *               and cluster size (as overlay__create() computes them)
 *        bit 4  open read-only
 *        bit 5  map entries are le16 v: 0 stays 0, else the data offset
 *               + (v & 0x7fff) - 1 clusters, + 512 bytes if v & 0x8000
 *               (so that most are plausible; the rest hostile)
 *        bit 6  the cluster size is 2^(12 + patch byte 12 % 10), before
 *               bit 2 applies
 * The file is the header, the map entries at 4096, and zeroes (a hole)
 * up to the file size (at most 8 MiB).  Each operation: u8 kind (low 2
 * bits: read, write, flush, reopen; bit 4: 128 KiB longer), le16 length,
 * le32 offset (taken modulo the disk size + 64 KiB), u8 fill byte.
 *
 * Oracle: once open, the disk is read whole into a model; every read
 * inside the disk must succeed and equal the model, every write inside
 * it must succeed (read-write) or fail with -EROFS (read-only), ranges
 * outside must fail with -EINVAL, and a reopen of the same file must
 * succeed with the model's content.  Any crash, leak, sanitizer report
 * or abort is a bug.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "snapshot/overlay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_BASE_BYTES (200 * 1024 + 1234) /* 4 clusters, a partial one */
#define FUZZ_FILE_MAX	(8u << 20)
#define FUZZ_PATCH	96
#define FUZZ_OP_BYTES	8
#define FUZZ_LONG	(128u * 1024)
#define FUZZ_BUF	(64u * 1024 + FUZZ_LONG)
#define FUZZ_MAP_MAX	4096 /* entries given by an input */

static char base_path[] = "/tmp/ember-fuzz-ovl-base-XXXXXX";
static uint8_t tmpl[OVERLAY_HEADER_BYTES]; /* a valid header */
static uint8_t model[FUZZ_BASE_BYTES], got[FUZZ_BASE_BYTES];
static uint8_t buf[FUZZ_BUF];
static uint8_t map[FUZZ_MAP_MAX * 8];

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return le32(p) | (uint64_t)le32(p + 4) << 32;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

/* The base and the template header, once; abort if the host cannot. */
/* libFuzzer ends with exit(): the base goes with it. */
static void fuzz_cleanup(void)
{
	unlink(base_path);
}

static void fuzz_setup(void)
{
	char path[64], why[256];
	uint8_t *b = malloc(FUZZ_BASE_BYTES);
	size_t i;
	int fd;

	fd = mkstemp(base_path);
	if (fd < 0 || !b)
		abort();
	atexit(fuzz_cleanup);
	for (i = 0; i < FUZZ_BASE_BYTES; i++)
		b[i] = (uint8_t)(i * 7 + (i >> 12));
	if (write(fd, b, FUZZ_BASE_BYTES) != FUZZ_BASE_BYTES)
		abort();
	close(fd);
	free(b);
	snprintf(path, sizeof(path), "%s.ovl", base_path);
	unlink(path);
	if (overlay__create(path, base_path, why, sizeof(why))) {
		fprintf(stderr, "fuzz_overlay: %s\n", why);
		abort();
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || pread(fd, tmpl, sizeof(tmpl), 0) != sizeof(tmpl))
		abort();
	close(fd);
	unlink(path);
}

/* The header from the template, the patch and the mode (see the top). */
static void make_header(uint8_t *h, uint8_t mode, const uint8_t *patch)
{
	uint32_t bits;
	uint64_t sz, n, mask;

	memcpy(h, tmpl, OVERLAY_HEADER_BYTES);
	if (mode & 1)
		memcpy(h, patch, FUZZ_PATCH);
	if (mode & 2) {
		memcpy(h, OVERLAY_MAGIC, OVERLAY_MAGIC_BYTES);
		put32(h + 8, OVERLAY_FORMAT_VERSION);
	}
	if (mode & 8) {
		memcpy(h + 48, tmpl + 48, 16); /* base size, CRC, path length */
		memcpy(h + 80, tmpl + 80, 16); /* the path's first bytes */
		put64(h + 16, le64(tmpl + 16)); /* the disk's size */
	}
	if (mode & 64)
		put32(h + 12, 12 + patch[12] % 10);
	bits = le32(h + 12);
	if ((mode & 4) && bits >= OVERLAY_CLUSTER_BITS_MIN &&
	    bits <= OVERLAY_CLUSTER_BITS_MAX) {
		sz = le64(h + 16);
		mask = (1ull << bits) - 1;
		n = (sz >> bits) + !!(sz & mask);
		put64(h + 24, OVERLAY_HEADER_BYTES);
		put64(h + 32, n);
		if (n <= OVERLAY_MAP_MAX_ENTRIES)
			put64(h + 40,
			      (OVERLAY_HEADER_BYTES + n * 8 + mask) & ~mask);
	}
	if (mode & 2)
		put32(h + OVERLAY_HEADER_BYTES - 4,
		      (uint32_t)crc32(0, h, OVERLAY_HEADER_BYTES - 4));
}

/* The @n map entries of the input @p into map[] (see the top). */
static void make_map(const uint8_t *h, uint8_t mode, const uint8_t *p,
		     uint64_t n)
{
	uint64_t i, v, cs = 1ull << (le32(h + 12) & 63);

	for (i = 0; i < n; i++) {
		if (!(mode & 32)) {
			memcpy(map + i * 8, p + i * 8, 8);
			continue;
		}
		v = le16(p + i * 2);
		put64(map + i * 8, v ? le64(h + 40) + ((v & 0x7fff) - 1) * cs +
						   (v >> 15) * 512 :
				       0);
	}
}

/* Open the overlay in a dup of @fd; abort unless @must is false. */
static struct overlay *reopen(int fd, bool ro, bool must)
{
	struct overlay *o = NULL;
	char why[256];
	int d = dup(fd);

	if (d < 0)
		abort();
	if (overlay__open_fd(d, "/tmp/fuzz.ovl", ro, &o, why, sizeof(why))) {
		close(d);
		if (must) {
			fprintf(stderr, "reopen failed: %s\n", why);
			abort();
		}
		return NULL;
	}
	return o;
}

static void run_ops(struct overlay **op, int fd, bool ro, const uint8_t *p,
		    size_t n)
{
	uint64_t disk = overlay__size(*op);

	for (; n >= FUZZ_OP_BYTES; p += FUZZ_OP_BYTES, n -= FUZZ_OP_BYTES) {
		uint64_t len = le16(p + 1) + (p[0] & 0x10 ? FUZZ_LONG : 0);
		uint64_t off = le32(p + 3) % (disk + 65536);
		bool in = off <= disk && len <= disk - off;
		int ret;

		switch (p[0] & 3) {
		case 0:
			ret = overlay__read(*op, buf, len, off);
			if (ret != (in ? 0 : -EINVAL))
				abort();
			if (in && memcmp(buf, model + off, len))
				abort();
			break;
		case 1:
			memset(buf, p[7], len);
			ret = overlay__write(*op, buf, len, off);
			if (ret != (ro ? -EROFS : in ? 0 : -EINVAL))
				abort();
			if (!ret)
				memcpy(model + off, buf, len);
			break;
		case 2:
			if (overlay__flush(*op))
				abort();
			break;
		default:
			overlay__close(*op);
			*op = reopen(fd, ro, true);
			if (overlay__read(*op, got, disk, 0) ||
			    memcmp(got, model, disk))
				abort();
			break;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	static uint8_t h[OVERLAY_HEADER_BYTES];
	const size_t fixed = 1 + FUZZ_PATCH + 4 + 2;
	struct overlay *o;
	uint64_t fsize, nmap, disk, esize;
	uint8_t mode;
	bool ro;
	int fd;

	if (!ready) {
		fuzz_setup();
		ready = true;
	}
	if (size < fixed)
		return 0;
	mode = data[0];
	ro = mode & 16;
	make_header(h, mode, data + 1);
	fsize = le32(data + 1 + FUZZ_PATCH) % FUZZ_FILE_MAX;
	nmap = le16(data + 1 + FUZZ_PATCH + 4);
	data += fixed;
	size -= fixed;
	esize = mode & 32 ? 2 : 8;
	if (nmap > size / esize)
		nmap = size / esize;
	if (nmap > FUZZ_MAP_MAX)
		nmap = FUZZ_MAP_MAX;
	make_map(h, mode, data, nmap);

	fd = memfd_create("fuzz-ovl", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	if (ftruncate(fd, (off_t)fsize) ||
	    pwrite(fd, h, sizeof(h), 0) != sizeof(h) ||
	    pwrite(fd, map, nmap * 8, OVERLAY_HEADER_BYTES) !=
		    (ssize_t)(nmap * 8))
		abort();
	data += nmap * esize;
	size -= nmap * esize;

	o = reopen(fd, ro, false);
	if (!o)
		goto out;
	disk = overlay__size(o);
	if (disk != FUZZ_BASE_BYTES) /* the base's identity was checked */
		abort();
	if (overlay__read(o, model, disk, 0))
		abort();
	run_ops(&o, fd, ro, data, size);
	overlay__close(o);
out:
	close(fd);
	return 0;
}
