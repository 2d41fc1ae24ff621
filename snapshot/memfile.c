// SPDX-License-Identifier: Apache-2.0
/*
 * The snapshot memory file (see memfile.h): raw and sparse, or zlib
 * chunks.  Every length, count and size read from a file is checked
 * against the file and the caller's ranges before it is used.
 */
#include "memfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../devices/fileio.h"
#include "../devices/le.h"
#include "why.h"

/* Compressed header (memfile.h): magic, version, chunk, RAM, chunks. */
#define Z_HDR_BYTES   32
#define Z_HDR_VERSION 1
#define Z_OFF_VERSION 8
#define Z_OFF_CHUNK   12
#define Z_OFF_RAM     16
#define Z_OFF_NR      24
#define Z_LEN_BYTES   4 /* a chunk's length field */
#define Z_LEVEL	      1 /* snapshots favour speed over size */
#define CHUNK_PAGES   (MEMFILE_CHUNK / MEMFILE_PAGE)
#define IO_MAX	      (1u << 30) /* bytes per pread/pwrite call */
#define MERGE_BUF     (1u << 20)

/* Checks @nr ranges and sums their sizes into *@total (> 0). */
static int ranges_check(const struct memfile_range *r, unsigned int nr,
			uint64_t *total)
{
	uint64_t t = 0;
	unsigned int i;

	if (!r || !nr || nr > MEMFILE_MAX_RANGES)
		return -EINVAL;
	for (i = 0; i < nr; i++) {
		if (r[i].size % MEMFILE_PAGE || (r[i].size && !r[i].hva) ||
		    r[i].size > (uint64_t)INT64_MAX - t)
			return -EINVAL;
		t += r[i].size;
	}
	if (!t)
		return -EINVAL;
	*total = t;
	return 0;
}

/* Host address of page @g of the file; @g is below the ranges' total. */
static uint8_t *page_hva(const struct memfile_range *r, unsigned int nr,
			 uint64_t g)
{
	unsigned int i;

	for (i = 0; i < nr; i++) {
		uint64_t n = r[i].size / MEMFILE_PAGE;

		if (g < n)
			return r[i].hva + g * MEMFILE_PAGE;
		g -= n;
	}
	return NULL;
}

/* Pages [*@first, *@end) of the range holding page @g. */
static void page_range(const struct memfile_range *r, unsigned int nr,
		       uint64_t g, uint64_t *first, uint64_t *end)
{
	uint64_t base = 0;
	unsigned int i;

	for (i = 0; i < nr; i++) {
		uint64_t n = r[i].size / MEMFILE_PAGE;

		if (g < base + n)
			break;
		base += n;
	}
	*first = base;
	*end = i < nr ? base + r[i].size / MEMFILE_PAGE : base;
}

static bool page_zero(const uint8_t *p)
{
	return !p[0] && !memcmp(p, p + 1, MEMFILE_PAGE - 1);
}

/* First selected page in [@p, @end), or @end. */
static uint64_t next_sel(const uint64_t *sel, uint64_t p, uint64_t end)
{
	uint64_t w;

	if (!sel)
		return p < end ? p : end;
	while (p < end) {
		w = sel[p / 64] >> (p % 64);
		if (w) {
			p += (uint64_t)__builtin_ctzll(w);
			return p < end ? p : end;
		}
		p = (p / 64 + 1) * 64;
	}
	return end;
}

/* First page not selected in [@p, @end), or @end. */
static uint64_t next_unsel(const uint64_t *sel, uint64_t p, uint64_t end)
{
	uint64_t w;

	if (!sel)
		return end;
	while (p < end) {
		w = ~sel[p / 64] >> (p % 64);
		if (w) {
			p += (uint64_t)__builtin_ctzll(w);
			return p < end ? p : end;
		}
		p = (p / 64 + 1) * 64;
	}
	return end;
}

/* Reads @len bytes at @off; -ENODATA when the file ends first. */
static int pread_all(int fd, uint8_t *p, uint64_t len, uint64_t off)
{
	ssize_t n;

	while (len) {
		n = pread(fd, p, len > IO_MAX ? IO_MAX : (size_t)len,
			  (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!n)
			return -ENODATA;
		p += n;
		len -= (uint64_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* --- write ------------------------------------------------------------- */

/*
 * First page in [@p, @e) that is zero (@zero) or not (!@zero), or @e;
 * page @base of the file is at @hva.
 */
static uint64_t find_page(const uint8_t *hva, uint64_t base, uint64_t p,
			  uint64_t e, bool zero)
{
	for (; p < e; p++) {
		if (page_zero(hva + (p - base) * MEMFILE_PAGE) == zero)
			return p;
	}
	return e;
}

static int write_raw(int fd, const struct memfile_range *r, unsigned int nr,
		     const uint64_t *sel, uint64_t total,
		     struct memfile_stats *st)
{
	uint64_t base = 0, end, p, e, q;
	const uint8_t *hva, *at;
	unsigned int i;
	int ret;

	if (ftruncate(fd, (off_t)total))
		return -errno;
	for (i = 0; i < nr; base = end, i++) {
		end = base + r[i].size / MEMFILE_PAGE;
		hva = r[i].hva;
		p = base;
		while ((p = next_sel(sel, p, end)) < end) {
			e = next_unsel(sel, p, end);
			st->pages_selected += e - p;
			/* Runs of non-zero pages, one pwrite each. */
			p = find_page(hva, base, p, e, false);
			while (p < e) {
				q = find_page(hva, base, p + 1, e, true);
				at = hva + (p - base) * MEMFILE_PAGE;
				ret = fileio__pwrite_all(fd, at,
							 (q - p) * MEMFILE_PAGE,
							 p * MEMFILE_PAGE);
				if (ret)
					return ret;
				st->pages_written += q - p;
				if (q == e)
					break;
				/* Page q was seen to be zero. */
				p = find_page(hva, base, q + 1, e, false);
			}
			p = e;
		}
	}
	st->file_bytes = st->pages_written * MEMFILE_PAGE;
	return 0;
}

/*
 * One chunk, pages [@first, @end), deflated into @out after its length
 * field; returns the bytes to write at the chunk's offset (the length
 * field and the data), or a negative errno.
 */
static long deflate_chunk(z_stream *z, const struct memfile_range *r,
			  unsigned int nr, const uint64_t *sel, uint64_t first,
			  uint64_t end, uint8_t *stage, uint8_t *out,
			  size_t outcap, struct memfile_stats *st)
{
	uint64_t g, nonzero = 0, nsel = 0, rfirst, rend;
	const uint8_t *src;
	size_t bytes = (end - first) * MEMFILE_PAGE;
	uLong clen;
	int zr;

	for (g = next_sel(sel, first, end); g < end;
	     g = next_sel(sel, g + 1, end)) {
		nsel++;
		if (!page_zero(page_hva(r, nr, g)))
			nonzero++;
	}
	st->pages_selected += nsel;
	st->pages_written += nonzero;
	if (!nonzero) {
		le__put32(out, 0);
		return Z_LEN_BYTES;
	}
	page_range(r, nr, first, &rfirst, &rend);
	if (nsel == end - first && end <= rend) {
		/* Every page selected, one range: deflate in place. */
		src = page_hva(r, nr, first);
	} else {
		for (g = first; g < end; g++) {
			uint8_t *d = stage + (g - first) * MEMFILE_PAGE;

			if (memfile__page_selected(sel, g))
				memcpy(d, page_hva(r, nr, g), MEMFILE_PAGE);
			else
				memset(d, 0, MEMFILE_PAGE);
		}
		src = stage;
	}
	if (deflateReset(z) != Z_OK)
		return -EIO;
	z->next_in = (Bytef *)src; /* zlib's API is not const */
	z->avail_in = (uInt)bytes;
	z->next_out = out + Z_LEN_BYTES;
	z->avail_out = (uInt)(outcap - Z_LEN_BYTES);
	/* outcap is deflateBound(): one Z_FINISH call always ends. */
	zr = deflate(z, Z_FINISH);
	if (zr != Z_STREAM_END)
		return zr == Z_MEM_ERROR ? -ENOMEM : -EIO;
	clen = z->total_out;
	le__put32(out, (uint32_t)clen);
	return (long)(Z_LEN_BYTES + clen);
}

static int write_z(int fd, const struct memfile_range *r, unsigned int nr,
		   const uint64_t *sel, uint64_t total,
		   struct memfile_stats *st)
{
	uint64_t pages = total / MEMFILE_PAGE, nch, c, first, end, off;
	uint8_t hdr[Z_HDR_BYTES], *stage = NULL, *out = NULL;
	size_t outcap;
	z_stream z;
	long n;
	int ret;

	memset(&z, 0, sizeof(z));
	if (deflateInit(&z, Z_LEVEL) != Z_OK)
		return -ENOMEM;
	outcap = Z_LEN_BYTES + deflateBound(&z, MEMFILE_CHUNK);
	stage = malloc(MEMFILE_CHUNK);
	out = malloc(outcap);
	if (!stage || !out) {
		ret = -ENOMEM;
		goto out;
	}
	nch = (total + MEMFILE_CHUNK - 1) / MEMFILE_CHUNK;
	memcpy(hdr, MEMFILE_MAGIC_Z, 8);
	le__put32(hdr + Z_OFF_VERSION, Z_HDR_VERSION);
	le__put32(hdr + Z_OFF_CHUNK, MEMFILE_CHUNK);
	le__put64(hdr + Z_OFF_RAM, total);
	le__put64(hdr + Z_OFF_NR, nch);
	ret = fileio__pwrite_all(fd, hdr, sizeof(hdr), 0);
	if (ret)
		goto out;
	off = sizeof(hdr);
	for (c = 0; c < nch; c++) {
		first = c * CHUNK_PAGES;
		end = first + CHUNK_PAGES < pages ? first + CHUNK_PAGES : pages;
		n = deflate_chunk(&z, r, nr, sel, first, end, stage, out,
				  outcap, st);
		if (n < 0) {
			ret = (int)n;
			goto out;
		}
		ret = fileio__pwrite_all(fd, out, (uint64_t)n, off);
		if (ret)
			goto out;
		off += (uint64_t)n;
	}
	st->file_bytes = off;
	ret = 0;
out:
	deflateEnd(&z);
	free(out);
	free(stage);
	return ret;
}

int memfile__write(int fd, const struct memfile_range *r, unsigned int nr,
		   const uint64_t *sel, bool compress, struct memfile_stats *st)
{
	struct memfile_stats local;
	struct stat sb;
	uint64_t total;
	int ret;

	ret = ranges_check(r, nr, &total);
	if (ret)
		return ret;
	if (fstat(fd, &sb))
		return -errno;
	/* Old bytes of a non-empty file would stand for pages not written. */
	if (S_ISREG(sb.st_mode) && sb.st_size)
		return -EINVAL;
	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	if (compress)
		return write_z(fd, r, nr, sel, total, st);
	return write_raw(fd, r, nr, sel, total, st);
}

/* --- probe ------------------------------------------------------------- */

/* memfile__probe() that also gives the file's size. */
static int probe(int fd, enum memfile_form form, bool *compressed,
		 uint64_t *ram_bytes, uint64_t *file_bytes, char *why,
		 size_t whylen)
{
	uint64_t size, ram, nch, want;
	uint8_t hdr[Z_HDR_BYTES];
	uint32_t v;
	struct stat sb;
	int ret;

	if (fstat(fd, &sb)) {
		ret = -errno;
		return why_set(why, whylen, ret, "stat of the memory file: %s",
			       strerror(-ret));
	}
	if (!S_ISREG(sb.st_mode))
		return why_set(why, whylen, -EINVAL,
			       "the memory file is not a regular file");
	size = (uint64_t)sb.st_size;
	*file_bytes = size;
	if (size >= sizeof(hdr)) {
		ret = pread_all(fd, hdr, sizeof(hdr), 0);
	} else if (size >= 8) {
		ret = pread_all(fd, hdr, 8, 0);
	} else {
		ret = 0;
		memset(hdr, 0, 8);
	}
	if (ret)
		return why_set(why, whylen, ret == -ENODATA ? -EINVAL : ret,
			       "reading the memory file's header: %s",
			       strerror(ret == -ENODATA ? EINVAL : -ret));
	/*
	 * A raw file starts with guest RAM, which may hold the magic: the
	 * caller that knows the form says so, and the magic is not looked at.
	 */
	if (form == MEMFILE_RAW || size < 8 ||
	    memcmp(hdr, MEMFILE_MAGIC_Z, 8)) {
		if (form == MEMFILE_COMPRESSED)
			return why_set(why, whylen, -EINVAL,
				       "not a compressed memory file (no "
				       "magic)");
		if (!size || size % MEMFILE_PAGE)
			return why_set(why, whylen, -EINVAL,
				       "raw memory file of %llu bytes: not a "
				       "positive multiple of %u",
				       (unsigned long long)size, MEMFILE_PAGE);
		*compressed = false;
		*ram_bytes = size;
		return 0;
	}
	if (size < sizeof(hdr))
		return why_set(why, whylen, -EINVAL,
			       "compressed memory file of %llu bytes: its "
			       "header needs %u",
			       (unsigned long long)size, Z_HDR_BYTES);
	v = le__get32(hdr + Z_OFF_VERSION);
	if (v != Z_HDR_VERSION)
		return why_set(why, whylen, -EINVAL,
			       "compressed memory file version %u at offset "
			       "%u, expected %u",
			       v, Z_OFF_VERSION, Z_HDR_VERSION);
	v = le__get32(hdr + Z_OFF_CHUNK);
	if (v != MEMFILE_CHUNK)
		return why_set(why, whylen, -EINVAL,
			       "chunk size %u at offset %u, expected %u", v,
			       Z_OFF_CHUNK, MEMFILE_CHUNK);
	ram = le__get64(hdr + Z_OFF_RAM);
	if (!ram || ram % MEMFILE_PAGE || ram > (uint64_t)INT64_MAX)
		return why_set(why, whylen, -EINVAL,
			       "RAM size %llu at offset %u: not a positive "
			       "multiple of %u",
			       (unsigned long long)ram, Z_OFF_RAM,
			       MEMFILE_PAGE);
	nch = le__get64(hdr + Z_OFF_NR);
	want = ram / MEMFILE_CHUNK + (ram % MEMFILE_CHUNK != 0);
	if (nch != want)
		return why_set(why, whylen, -EINVAL,
			       "chunk count %llu at offset %u, %llu bytes of "
			       "RAM take %llu",
			       (unsigned long long)nch, Z_OFF_NR,
			       (unsigned long long)ram,
			       (unsigned long long)want);
	if (nch > (size - Z_HDR_BYTES) / Z_LEN_BYTES)
		return why_set(why, whylen, -EINVAL,
			       "chunk count %llu at offset %u: their lengths "
			       "alone do not fit in a file of %llu bytes",
			       (unsigned long long)nch, Z_OFF_NR,
			       (unsigned long long)size);
	*compressed = true;
	*ram_bytes = ram;
	return 0;
}

int memfile__probe(int fd, bool *compressed, uint64_t *ram_bytes, char *why,
		   size_t whylen)
{
	uint64_t size;

	if (why && whylen)
		why[0] = '\0';
	return probe(fd, MEMFILE_ANY, compressed, ram_bytes, &size, why,
		     whylen);
}

int memfile__probe_as(int fd, enum memfile_form form, uint64_t *ram_bytes,
		      char *why, size_t whylen)
{
	uint64_t size;
	bool z;

	if (why && whylen)
		why[0] = '\0';
	return probe(fd, form, &z, ram_bytes, &size, why, whylen);
}

/* --- read -------------------------------------------------------------- */

static int read_raw(int fd, const struct memfile_range *r, unsigned int nr,
		    const uint64_t *sel, char *why, size_t whylen)
{
	uint64_t base = 0, end, p, e;
	unsigned long long at;
	unsigned int i;
	int ret;

	for (i = 0; i < nr; base = end, i++) {
		end = base + r[i].size / MEMFILE_PAGE;
		p = base;
		while ((p = next_sel(sel, p, end)) < end) {
			e = next_unsel(sel, p, end);
			at = p * MEMFILE_PAGE;
			ret = pread_all(fd,
					r[i].hva + (p - base) * MEMFILE_PAGE,
					(e - p) * MEMFILE_PAGE, at);
			if (ret)
				goto err;
			p = e;
		}
	}
	return 0;
err:
	if (ret == -ENODATA)
		return why_set(why, whylen, -EINVAL,
			       "raw memory file ends before offset %llu "
			       "(truncated while read)",
			       (unsigned long long)(e * MEMFILE_PAGE));
	return why_set(why, whylen, ret,
		       "reading the memory file at offset %llu: %s", at,
		       strerror(-ret));
}

/* Where the chunk's pages go: zeroes (@src NULL) or from @src. */
static void chunk_place(const struct memfile_range *r, unsigned int nr,
			const uint64_t *sel, uint64_t first, uint64_t end,
			const uint8_t *src)
{
	uint64_t g;

	for (g = next_sel(sel, first, end); g < end;
	     g = next_sel(sel, g + 1, end)) {
		uint8_t *d = page_hva(r, nr, g);

		if (src)
			memcpy(d, src + (g - first) * MEMFILE_PAGE,
			       MEMFILE_PAGE);
		else if (!page_zero(d))
			/* Reading a zero page first keeps fresh memory lazy. */
			memset(d, 0, MEMFILE_PAGE);
	}
}

/* Inflates chunk @c of @bytes from @in (@clen bytes at @off) into @dst. */
static int chunk_inflate(z_stream *z, uint64_t c, uint64_t off,
			 const uint8_t *in, uint32_t clen, uint8_t *dst,
			 size_t bytes, char *why, size_t whylen)
{
	int zr;

	if (inflateReset(z) != Z_OK)
		return why_set(why, whylen, -EIO, "zlib inflateReset failed");
	z->next_in = (Bytef *)in; /* zlib's API is not const */
	z->avail_in = clen;
	z->next_out = dst;
	z->avail_out = (uInt)bytes;
	zr = inflate(z, Z_FINISH);
	switch (zr) {
	case Z_STREAM_END:
		if (z->avail_out)
			return why_set(why, whylen, -EINVAL,
				       "chunk %llu at offset %llu inflates to "
				       "%zu bytes, not %zu",
				       (unsigned long long)c,
				       (unsigned long long)off,
				       bytes - z->avail_out, bytes);
		if (z->avail_in)
			return why_set(why, whylen, -EINVAL,
				       "chunk %llu at offset %llu: %u stray "
				       "bytes after its zlib stream",
				       (unsigned long long)c,
				       (unsigned long long)off, z->avail_in);
		return 0;
	case Z_MEM_ERROR:
		return why_set(why, whylen, -ENOMEM,
			       "out of memory inflating chunk %llu",
			       (unsigned long long)c);
	case Z_BUF_ERROR:
	case Z_OK:
		if (!z->avail_out)
			return why_set(why, whylen, -EINVAL,
				       "chunk %llu at offset %llu inflates to "
				       "more than %zu bytes",
				       (unsigned long long)c,
				       (unsigned long long)off, bytes);
		return why_set(why, whylen, -EINVAL,
			       "chunk %llu at offset %llu: zlib stream of %u "
			       "bytes ends early (truncated)",
			       (unsigned long long)c, (unsigned long long)off,
			       clen);
	default:
		return why_set(why, whylen, -EINVAL,
			       "chunk %llu at offset %llu: corrupt zlib data "
			       "(%s)",
			       (unsigned long long)c, (unsigned long long)off,
			       z->msg ? z->msg : "no message");
	}
}

static int read_z(int fd, const struct memfile_range *r, unsigned int nr,
		  const uint64_t *sel, uint64_t ram, uint64_t size, char *why,
		  size_t whylen)
{
	uint64_t pages = ram / MEMFILE_PAGE, nch, c, first, end, off, rf, re;
	uint8_t *in = NULL, *stage = NULL, *dst, lenbuf[Z_LEN_BYTES];
	uLong inmax = compressBound(MEMFILE_CHUNK), bound;
	size_t bytes;
	uint32_t clen;
	z_stream z;
	int ret;

	memset(&z, 0, sizeof(z));
	if (inflateInit(&z) != Z_OK)
		return why_set(why, whylen, -ENOMEM, "zlib inflateInit failed");
	in = malloc(inmax);
	stage = malloc(MEMFILE_CHUNK);
	if (!in || !stage) {
		ret = why_set(why, whylen, -ENOMEM,
			      "out of memory for chunk buffers");
		goto out;
	}
	nch = (ram + MEMFILE_CHUNK - 1) / MEMFILE_CHUNK;
	off = Z_HDR_BYTES;
	for (c = 0; c < nch; c++) {
		first = c * CHUNK_PAGES;
		end = first + CHUNK_PAGES < pages ? first + CHUNK_PAGES : pages;
		bytes = (end - first) * MEMFILE_PAGE;
		if (size - off < Z_LEN_BYTES) {
			ret = why_set(why, whylen, -EINVAL,
				      "chunk %llu: its length at offset %llu "
				      "is past the end of the file (%llu "
				      "bytes)",
				      (unsigned long long)c,
				      (unsigned long long)off,
				      (unsigned long long)size);
			goto out;
		}
		ret = pread_all(fd, lenbuf, Z_LEN_BYTES, off);
		if (ret)
			goto io;
		clen = le__get32(lenbuf);
		off += Z_LEN_BYTES;
		if (clen > size - off) {
			ret = why_set(why, whylen, -EINVAL,
				      "chunk %llu: length %u at offset %llu "
				      "runs past the end of the file (%llu "
				      "bytes left)",
				      (unsigned long long)c, clen,
				      (unsigned long long)(off - Z_LEN_BYTES),
				      (unsigned long long)(size - off));
			goto out;
		}
		bound = compressBound(bytes);
		if (clen > bound) {
			ret = why_set(why, whylen, -EINVAL,
				      "chunk %llu: length %u at offset %llu "
				      "is more than zlib makes of %zu bytes "
				      "(%lu)",
				      (unsigned long long)c, clen,
				      (unsigned long long)(off - Z_LEN_BYTES),
				      bytes, (unsigned long)bound);
			goto out;
		}
		if (next_sel(sel, first, end) == end) {
			/* Nothing of this chunk is wanted. */
			off += clen;
			continue;
		}
		if (!clen) {
			chunk_place(r, nr, sel, first, end, NULL);
			continue;
		}
		ret = pread_all(fd, in, clen, off);
		if (ret)
			goto io;
		page_range(r, nr, first, &rf, &re);
		/* Every page wanted and in one range: inflate in place. */
		dst = next_unsel(sel, first, end) == end && end <= re ?
			      page_hva(r, nr, first) :
			      stage;
		ret = chunk_inflate(&z, c, off, in, clen, dst, bytes, why,
				    whylen);
		if (ret)
			goto out;
		if (dst == stage)
			chunk_place(r, nr, sel, first, end, stage);
		off += clen;
	}
	if (off != size) {
		ret = why_set(why, whylen, -EINVAL,
			      "%llu stray bytes at offset %llu after the last "
			      "chunk",
			      (unsigned long long)(size - off),
			      (unsigned long long)off);
		goto out;
	}
	ret = 0;
	goto out;
io:
	if (ret == -ENODATA)
		ret = why_set(why, whylen, -EINVAL,
			      "compressed memory file ends before offset %llu "
			      "(truncated while read)",
			      (unsigned long long)off);
	else
		why_set(why, whylen, ret,
			"reading the memory file at offset %llu: %s",
			(unsigned long long)off, strerror(-ret));
out:
	inflateEnd(&z);
	free(stage);
	free(in);
	return ret;
}

int memfile__read(int fd, const struct memfile_range *r, unsigned int nr,
		  const uint64_t *sel, char *why, size_t whylen)
{
	return memfile__read_as(fd, MEMFILE_ANY, r, nr, sel, why, whylen);
}

int memfile__read_as(int fd, enum memfile_form form,
		     const struct memfile_range *r, unsigned int nr,
		     const uint64_t *sel, char *why, size_t whylen)
{
	uint64_t total, ram, size;
	bool z;
	int ret;

	if (why && whylen)
		why[0] = '\0';
	if (ranges_check(r, nr, &total))
		return why_set(why, whylen, -EINVAL,
			       "bad RAM ranges: 1 to %u of them, page "
			       "multiples, not all empty",
			       MEMFILE_MAX_RANGES);
	ret = probe(fd, form, &z, &ram, &size, why, whylen);
	if (ret)
		return ret;
	if (ram != total)
		return why_set(why, whylen, -EINVAL,
			       "the memory file holds %llu bytes of RAM, the "
			       "VM has %llu",
			       (unsigned long long)ram,
			       (unsigned long long)total);
	if (z)
		return read_z(fd, r, nr, sel, ram, size, why, whylen);
	return read_raw(fd, r, nr, sel, why, whylen);
}

/* --- merge ------------------------------------------------------------- */

/* Bytes [@off, @off + @len) of @fd read as zero afterwards. */
static int zero_range(int fd, uint64_t off, uint64_t len, const uint8_t *zero)
{
	uint64_t n;
	int ret;

	/* A hole keeps the base sparse. */
	if (!fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		       (off_t)off, (off_t)len))
		return 0;
	if (errno != EOPNOTSUPP && errno != ENOSYS)
		return -errno;
	while (len) {
		n = len > MERGE_BUF ? MERGE_BUF : len;
		ret = fileio__pwrite_all(fd, zero, n, off);
		if (ret)
			return ret;
		off += n;
		len -= n;
	}
	return 0;
}

/* Diff bytes [@a, @b) onto the base: data copied, holes punched. */
static int merge_run(int diff_fd, int base_fd, uint64_t a, uint64_t b,
		     uint8_t *buf, const uint8_t *zero, char *why,
		     size_t whylen)
{
	uint64_t pos = a, data, hole, n;
	off_t o;
	int ret;

	while (pos < b) {
		o = lseek(diff_fd, (off_t)pos, SEEK_DATA);
		if (o >= 0)
			data = (uint64_t)o < b ? (uint64_t)o : b;
		else
			/* ENXIO: holes to the end; else no hole support. */
			data = errno == ENXIO ? b : pos;
		if (data > pos) {
			ret = zero_range(base_fd, pos, data - pos, zero);
			if (ret)
				return why_set(why, whylen, ret,
					       "zeroing the base at offset "
					       "%llu: %s",
					       (unsigned long long)pos,
					       strerror(-ret));
			pos = data;
			continue;
		}
		o = lseek(diff_fd, (off_t)pos, SEEK_HOLE);
		hole = o > (off_t)pos && (uint64_t)o < b ? (uint64_t)o : b;
		while (pos < hole) {
			n = hole - pos > MERGE_BUF ? MERGE_BUF : hole - pos;
			ret = pread_all(diff_fd, buf, n, pos);
			if (ret == -ENODATA)
				return why_set(why, whylen, -EINVAL,
					       "the diff ends before offset "
					       "%llu (truncated while read)",
					       (unsigned long long)(pos + n));
			if (ret)
				return why_set(why, whylen, ret,
					       "reading the diff at offset "
					       "%llu: %s",
					       (unsigned long long)pos,
					       strerror(-ret));
			ret = fileio__pwrite_all(base_fd, buf, n, pos);
			if (ret)
				return why_set(why, whylen, ret,
					       "writing the base at offset "
					       "%llu: %s",
					       (unsigned long long)pos,
					       strerror(-ret));
			pos += n;
		}
	}
	return 0;
}

int memfile__merge(int diff_fd, int base_fd, const uint64_t *sel, char *why,
		   size_t whylen)
{
	uint64_t dram, bram, dsize, bsize, pages, p, e;
	uint8_t *buf = NULL, *zero = NULL;
	bool dz, bz;
	int ret;

	if (why && whylen)
		why[0] = '\0';
	ret = probe(diff_fd, MEMFILE_ANY, &dz, &dram, &dsize, why, whylen);
	if (ret)
		return ret;
	ret = probe(base_fd, MEMFILE_ANY, &bz, &bram, &bsize, why, whylen);
	if (ret)
		return ret;
	if (dz || bz)
		return why_set(why, whylen, -EINVAL,
			       "the %s is compressed: only raw memory files "
			       "merge",
			       dz ? "diff" : "base");
	if (dram != bram)
		return why_set(why, whylen, -EINVAL,
			       "the diff holds %llu bytes of RAM, the base "
			       "%llu",
			       (unsigned long long)dram,
			       (unsigned long long)bram);
	buf = malloc(MERGE_BUF);
	zero = calloc(1, MERGE_BUF);
	if (!buf || !zero) {
		ret = why_set(why, whylen, -ENOMEM,
			      "out of memory for the merge buffers");
		goto out;
	}
	pages = dram / MEMFILE_PAGE;
	p = 0;
	while ((p = next_sel(sel, p, pages)) < pages) {
		e = next_unsel(sel, p, pages);
		ret = merge_run(diff_fd, base_fd, p * MEMFILE_PAGE,
				e * MEMFILE_PAGE, buf, zero, why, whylen);
		if (ret)
			goto out;
		p = e;
	}
	ret = 0;
out:
	free(zero);
	free(buf);
	return ret;
}
