// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for snapshot/memfile.c: raw (sparse) and compressed memory
 * files, page selections, corrupt and truncated files refused without a
 * write outside the ranges (each range sits between PROT_NONE guard
 * pages), and merging a diff onto a base.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "../../snapshot/memfile.h"
#include "test_util.h"

#define PG	    MEMFILE_PAGE
#define CHUNK_PAGES (MEMFILE_CHUNK / PG)

/*
 * Guest RAM as up to MEMFILE_MAX_RANGES ranges of @pages[i] pages, each
 * in its own mapping with a PROT_NONE page either side.
 */
struct ram {
	struct memfile_range r[MEMFILE_MAX_RANGES];
	uint8_t *map[MEMFILE_MAX_RANGES];
	unsigned int nr;
	uint64_t pages;
};

static void ram_new(struct ram *m, const unsigned int *pages, unsigned int nr)
{
	unsigned int i;

	memset(m, 0, sizeof(*m));
	m->nr = nr;
	for (i = 0; i < nr; i++) {
		size_t len = ((size_t)pages[i] + 2) * PG;
		uint8_t *p = mmap(NULL, len, PROT_NONE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		assert_true(p != MAP_FAILED);
		if (pages[i])
			assert_int_equal(mprotect(p + PG, (size_t)pages[i] * PG,
						  PROT_READ | PROT_WRITE),
					 0);
		m->map[i] = p;
		m->r[i].hva = p + PG;
		m->r[i].size = (uint64_t)pages[i] * PG;
		m->pages += pages[i];
	}
}

static void ram_free(struct ram *m)
{
	unsigned int i;

	for (i = 0; i < m->nr; i++)
		munmap(m->map[i], (size_t)(m->r[i].size / PG + 2) * PG);
	memset(m, 0, sizeof(*m));
}

static uint8_t *page_of(const struct ram *m, uint64_t g)
{
	unsigned int i;

	for (i = 0; i < m->nr; i++) {
		if (g < m->r[i].size / PG)
			return m->r[i].hva + g * PG;
		g -= m->r[i].size / PG;
	}
	fail_msg("page %llu out of the RAM", (unsigned long long)g);
	return NULL;
}

/* Page @g: zero when @g % 3 == 0 (or @g beyond @nonzero_below), else a
 * pattern of @seed. */
static void ram_fill(struct ram *m, uint8_t seed, uint64_t nonzero_below)
{
	uint64_t g;

	for (g = 0; g < m->pages; g++) {
		uint8_t *p = page_of(m, g);

		if (g % 3 == 0 || g >= nonzero_below) {
			memset(p, 0, PG);
			continue;
		}
		memset(p, (uint8_t)(g ^ seed) | 1, PG);
		wr64(p, 0, g);
		p[PG - 1] = seed;
	}
}

static void ram_set(struct ram *m, uint8_t v)
{
	unsigned int i;

	for (i = 0; i < m->nr; i++)
		memset(m->r[i].hva, v, m->r[i].size);
}

static int memfd(void)
{
	int fd = memfd_create("memfile", MFD_CLOEXEC);

	assert_true(fd >= 0);
	return fd;
}

static uint64_t file_size(int fd)
{
	struct stat st;

	assert_int_equal(fstat(fd, &st), 0);
	return (uint64_t)st.st_size;
}

/* Whether page @g of @fd is a hole. */
static bool is_hole(int fd, uint64_t g)
{
	off_t d = lseek(fd, (off_t)(g * PG), SEEK_DATA);

	return d < 0 || (uint64_t)d >= (g + 1) * PG;
}

static uint64_t *bitmap_new(uint64_t pages)
{
	uint64_t *bm = calloc(memfile__bitmap_words(pages * PG), 8);

	assert_non_null(bm);
	return bm;
}

static void bitmap_set(uint64_t *bm, uint64_t g)
{
	bm[g / 64] |= 1ull << (g % 64);
}

/* Ranges across chunk boundaries: 272 + 240 + 264 pages (4 chunks). */
static const unsigned int three[] = { 272, 240, 264 };

static void test_raw_roundtrip(void **state)
{
	struct memfile_stats st;
	struct ram a, b;
	uint64_t g, nonzero = 0;
	bool z = true;
	uint64_t bytes;
	char why[200];
	int fd = memfd();

	(void)state;
	ram_new(&a, three, 3);
	ram_new(&b, three, 3);
	ram_fill(&a, 0x5a, a.pages);
	for (g = 0; g < a.pages; g++)
		nonzero += g % 3 != 0;
	assert_int_equal(memfile__write(fd, a.r, a.nr, NULL, false, &st), 0);
	assert_int_equal(st.pages_selected, a.pages);
	assert_int_equal(st.pages_written, nonzero);
	assert_int_equal(st.file_bytes, nonzero * PG);
	assert_int_equal(file_size(fd), a.pages * PG);
	/* Zero pages are holes, the others data. */
	for (g = 0; g < a.pages; g++)
		assert_int_equal(is_hole(fd, g), g % 3 == 0);

	assert_int_equal(memfile__probe(fd, &z, &bytes, why, sizeof(why)), 0);
	assert_false(z);
	assert_int_equal(bytes, a.pages * PG);
	ram_set(&b, 0xaa);
	assert_int_equal(memfile__read(fd, b.r, b.nr, NULL, why, sizeof(why)),
			 0);
	for (g = 0; g < a.pages; g++)
		assert_memory_equal(page_of(&a, g), page_of(&b, g), PG);

	/* The same RAM cut into other ranges reads the same. */
	ram_free(&b);
	{
		static const unsigned int other[] = { 1, 500, 275 };

		ram_new(&b, other, 3);
	}
	assert_int_equal(memfile__read(fd, b.r, b.nr, NULL, why, sizeof(why)),
			 0);
	for (g = 0; g < a.pages; g++)
		assert_memory_equal(page_of(&a, g), page_of(&b, g), PG);
	ram_free(&a);
	ram_free(&b);
	close(fd);
}

static void test_raw_bitmap(void **state)
{
	struct memfile_stats st;
	uint64_t g, *bm, sel = 0, written = 0;
	struct ram a, b;
	char why[200];
	int fd = memfd();

	(void)state;
	ram_new(&a, three, 3);
	ram_new(&b, three, 3);
	ram_fill(&a, 0x33, a.pages);
	bm = bitmap_new(a.pages);
	/* Runs, single pages, a range's last and next range's first. */
	for (g = 0; g < a.pages; g++) {
		if ((g >= 60 && g < 200) || g % 7 == 1 || g == 271 ||
		    g == 272 || g == a.pages - 1) {
			bitmap_set(bm, g);
			sel++;
			written += g % 3 != 0;
		}
	}
	assert_int_equal(memfile__write(fd, a.r, a.nr, bm, false, &st), 0);
	assert_int_equal(st.pages_selected, sel);
	assert_int_equal(st.pages_written, written);
	assert_int_equal(file_size(fd), a.pages * PG);
	for (g = 0; g < a.pages; g++)
		assert_int_equal(is_hole(fd, g),
				 !memfile__page_selected(bm, g) || g % 3 == 0);

	/* Selected pages are copied, the others left as they were. */
	ram_set(&b, 0x55);
	assert_int_equal(memfile__read(fd, b.r, b.nr, bm, why, sizeof(why)), 0);
	for (g = 0; g < a.pages; g++) {
		if (memfile__page_selected(bm, g)) {
			assert_memory_equal(page_of(&a, g), page_of(&b, g), PG);
		} else {
			uint8_t want[PG];

			memset(want, 0x55, PG);
			assert_memory_equal(page_of(&b, g), want, PG);
		}
	}
	free(bm);
	ram_free(&a);
	ram_free(&b);
	close(fd);
}

/* The chunks of a compressed file: their lengths, in @len. */
static uint64_t chunk_lengths(int fd, uint32_t *len, uint64_t max)
{
	uint8_t hdr[32], l[4];
	uint64_t nch, c, off = 32;

	assert_int_equal(pread(fd, hdr, 32, 0), 32);
	assert_memory_equal(hdr, MEMFILE_MAGIC_Z, 8);
	assert_int_equal(rd32(hdr, 8), 1);
	assert_int_equal(rd32(hdr, 12), MEMFILE_CHUNK);
	nch = rd64(hdr, 24);
	assert_true(nch <= max);
	for (c = 0; c < nch; c++) {
		assert_int_equal(pread(fd, l, 4, (off_t)off), 4);
		len[c] = rd32(l, 0);
		off += 4 + len[c];
	}
	assert_int_equal(off, file_size(fd));
	return nch;
}

static void test_compressed_roundtrip(void **state)
{
	struct memfile_stats st;
	struct ram a, b;
	uint64_t g, bytes, nonzero = 0;
	uint32_t len[8];
	char why[200];
	bool z = false;
	int fd = memfd();

	(void)state;
	ram_new(&a, three, 3);
	ram_new(&b, three, 3);
	/* Chunk 2 (pages 512..767) all zero, chunk 3 partly not. */
	ram_fill(&a, 0x77, 512);
	page_of(&a, 775)[100] = 9;
	for (g = 0; g < a.pages; g++)
		nonzero += g < 512 && g % 3 != 0;
	nonzero++;
	assert_int_equal(memfile__write(fd, a.r, a.nr, NULL, true, &st), 0);
	assert_int_equal(st.pages_selected, a.pages);
	assert_int_equal(st.pages_written, nonzero);
	assert_int_equal(st.file_bytes, file_size(fd));
	assert_int_equal(chunk_lengths(fd, len, 8), 4);
	assert_true(len[0] > 0 && len[1] > 0 && len[3] > 0);
	assert_int_equal(len[2], 0);
	assert_true(file_size(fd) < a.pages * PG / 10);

	assert_int_equal(memfile__probe(fd, &z, &bytes, why, sizeof(why)), 0);
	assert_true(z);
	assert_int_equal(bytes, a.pages * PG);
	ram_set(&b, 0xaa);
	assert_int_equal(memfile__read(fd, b.r, b.nr, NULL, why, sizeof(why)),
			 0);
	for (g = 0; g < a.pages; g++)
		assert_memory_equal(page_of(&a, g), page_of(&b, g), PG);
	ram_free(&a);
	ram_free(&b);
	close(fd);
}

static void test_compressed_bitmap(void **state)
{
	struct memfile_stats st;
	uint64_t g, *bm, sel = 0, written = 0;
	struct ram a, b;
	uint32_t len[8];
	char why[200];
	int fd = memfd();

	(void)state;
	ram_new(&a, three, 3);
	ram_new(&b, three, 3);
	ram_fill(&a, 0x12, a.pages);
	bm = bitmap_new(a.pages);
	/* Chunk 0: a few pages; chunk 1: zero pages only; chunk 2: none;
	 * chunk 3: one. */
	for (g = 1; g < 40; g += 5)
		bitmap_set(bm, g);
	bitmap_set(bm, 300);
	bitmap_set(bm, 303);
	bitmap_set(bm, 770);
	for (g = 0; g < a.pages; g++) {
		if (memfile__page_selected(bm, g)) {
			sel++;
			written += g % 3 != 0;
		}
	}
	assert_int_equal(memfile__write(fd, a.r, a.nr, bm, true, &st), 0);
	assert_int_equal(st.pages_selected, sel);
	assert_int_equal(st.pages_written, written);
	assert_int_equal(chunk_lengths(fd, len, 8), 4);
	assert_true(len[0] > 0);
	assert_int_equal(len[1], 0);
	assert_int_equal(len[2], 0);
	assert_true(len[3] > 0);

	/* Selected zero pages come back zero; the rest stays. */
	ram_set(&b, 0x66);
	assert_int_equal(memfile__read(fd, b.r, b.nr, bm, why, sizeof(why)), 0);
	for (g = 0; g < a.pages; g++) {
		if (memfile__page_selected(bm, g)) {
			assert_memory_equal(page_of(&a, g), page_of(&b, g), PG);
		} else {
			uint8_t want[PG];

			memset(want, 0x66, PG);
			assert_memory_equal(page_of(&b, g), want, PG);
		}
	}
	free(bm);
	ram_free(&a);
	ram_free(&b);
	close(fd);
}

/* A small compressed file (2 chunks) into *@buf of *@len bytes. */
static uint8_t *small_z(size_t *len, struct ram *a)
{
	static const unsigned int pages[] = { 200, 80 };
	uint8_t *buf;
	int fd = memfd();

	ram_new(a, pages, 2);
	ram_fill(a, 0x44, a->pages);
	assert_int_equal(memfile__write(fd, a->r, a->nr, NULL, true, NULL), 0);
	*len = file_size(fd);
	buf = malloc(*len);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, *len, 0), (ssize_t)*len);
	close(fd);
	return buf;
}

static int read_bytes(const uint8_t *d, size_t len, struct ram *b,
		      const uint64_t *sel, char *why, size_t whylen)
{
	int fd = memfd(), ret;

	assert_int_equal(pwrite(fd, d, len, 0), (ssize_t)len);
	ret = memfile__read(fd, b->r, b->nr, sel, why, whylen);
	close(fd);
	return ret;
}

/* Whether @b holds @a's contents (same pages, other ranges). */
static bool same_ram(const struct ram *a, const struct ram *b)
{
	uint64_t g;

	for (g = 0; g < a->pages; g++) {
		if (memcmp(page_of(a, g), page_of(b, g), PG))
			return false;
	}
	return true;
}

/*
 * Every byte of a compressed file, inverted: refused, or (deflate has
 * bits that change nothing, such as code lengths of unused symbols) read
 * as the very same RAM, which the stream's Adler-32 vouches for.
 */
static void test_compressed_corrupt(void **state)
{
	size_t len, off, same = 0;
	struct ram a, b;
	char why[200];
	uint8_t *d;
	int ret;

	(void)state;
	d = small_z(&len, &a);
	ram_new(&b, (const unsigned int[]){ 130, 150 }, 2);
	assert_int_equal(read_bytes(d, len, &b, NULL, why, sizeof(why)), 0);
	assert_true(same_ram(&a, &b));
	for (off = 0; off < len; off++) {
		d[off] ^= 0xff;
		why[0] = '\0';
		ram_set(&b, 0xbb);
		ret = read_bytes(d, len, &b, NULL, why, sizeof(why));
		if (ret == 0 && off >= 36 && same_ram(&a, &b)) {
			same++;
		} else if (ret != -EINVAL) {
			fail_msg("byte %zu of %zu inverted: %d (%s)", off, len,
				 ret, why);
		} else {
			assert_true(strlen(why) > 0);
		}
		d[off] ^= 0xff;
	}
	/* Harmless changes are few (112 of 6442 bytes with zlib 1.2.13). */
	assert_true(same < len / 20);
	free(d);
	ram_free(&a);
	ram_free(&b);
}

static void test_compressed_truncated(void **state)
{
	struct ram a, b;
	char why[200];
	uint8_t *d, *e;
	size_t len, n;

	(void)state;
	d = small_z(&len, &a);
	ram_new(&b, (const unsigned int[]){ 280 }, 1);
	for (n = 0; n < len; n++) {
		why[0] = '\0';
		assert_int_equal(read_bytes(d, n, &b, NULL, why, sizeof(why)),
				 -EINVAL);
		assert_true(strlen(why) > 0);
	}
	/* A byte too many. */
	e = malloc(len + 1);
	assert_non_null(e);
	memcpy(e, d, len);
	e[len] = 0;
	assert_int_equal(read_bytes(e, len + 1, &b, NULL, why, sizeof(why)),
			 -EINVAL);
	assert_non_null(strstr(why, "stray"));
	free(e);
	free(d);
	ram_free(&a);
	ram_free(&b);
}

/* A compressed file by hand: header for @ram bytes, then @body. */
static size_t make_z(uint8_t *out, uint64_t ram, uint64_t nch,
		     const uint8_t *body, size_t blen)
{
	memcpy(out, MEMFILE_MAGIC_Z, 8);
	wr32(out, 8, 1);
	wr32(out, 12, MEMFILE_CHUNK);
	wr64(out, 16, ram);
	wr64(out, 24, nch);
	memcpy(out + 32, body, blen);
	return 32 + blen;
}

/* One chunk of a stream deflating @n bytes of @v, plus @extra bytes. */
static size_t chunk_of(uint8_t *out, size_t n, uint8_t v, size_t extra)
{
	uint8_t *src = malloc(n);
	uLongf clen = compressBound(n);

	assert_non_null(src);
	memset(src, v, n);
	assert_int_equal(compress2(out + 4, &clen, src, n, 1), Z_OK);
	memset(out + 4 + clen, 0, extra);
	wr32(out, 0, (uint32_t)(clen + extra));
	free(src);
	return 4 + clen + extra;
}

static void expect_z(const uint8_t *d, size_t len, struct ram *b, int err,
		     const char *what)
{
	char why[200];

	why[0] = '\0';
	assert_int_equal(read_bytes(d, len, b, NULL, why, sizeof(why)), err);
	if (!strstr(why, what))
		fail_msg("reason '%s' does not name '%s'", why, what);
}

static void test_compressed_lies(void **state)
{
	static uint8_t f[4 << 20], body[3 << 20];
	struct ram b;
	size_t n, len;

	(void)state;
	/* RAM of one chunk and 64 KiB. */
	ram_new(&b, (const unsigned int[]){ 272 }, 1);
	n = chunk_of(body, MEMFILE_CHUNK, 1, 0);
	n += chunk_of(body + n, 16 * PG, 2, 0);
	len = make_z(f, 272 * PG, 2, body, n);
	expect_z(f, len, &b, 0, "");
	assert_int_equal(b.r[0].hva[0], 1);
	assert_int_equal(b.r[0].hva[272 * PG - 1], 2);

	/* The second chunk inflates to a page too many, or too few. */
	n = chunk_of(body, MEMFILE_CHUNK, 1, 0);
	n += chunk_of(body + n, 17 * PG, 2, 0);
	len = make_z(f, 272 * PG, 2, body, n);
	expect_z(f, len, &b, -EINVAL, "more than 65536");
	n = chunk_of(body, MEMFILE_CHUNK, 1, 0);
	n += chunk_of(body + n, 15 * PG, 2, 0);
	len = make_z(f, 272 * PG, 2, body, n);
	expect_z(f, len, &b, -EINVAL, "inflates to 61440 bytes, not 65536");
	/* A first chunk of 2 MiB: bounded output, never past the chunk. */
	n = chunk_of(body, 2 * MEMFILE_CHUNK, 1, 0);
	n += chunk_of(body + n, 16 * PG, 2, 0);
	len = make_z(f, 272 * PG, 2, body, n);
	expect_z(f, len, &b, -EINVAL, "chunk 0 at offset 36");
	/* Bytes after a stream, inside the chunk's length. */
	n = chunk_of(body, MEMFILE_CHUNK, 1, 3);
	n += chunk_of(body + n, 16 * PG, 2, 0);
	len = make_z(f, 272 * PG, 2, body, n);
	expect_z(f, len, &b, -EINVAL, "3 stray bytes");

	/* Lengths that lie about the file. */
	n = chunk_of(body, MEMFILE_CHUNK, 1, 0);
	n += chunk_of(body + n, 16 * PG, 2, 0);
	len = make_z(f, 272 * PG, 2, body, n);
	wr32(f, 32, 0xffffffff);
	expect_z(f, len, &b, -EINVAL, "length 4294967295 at offset 32 runs");
	len = make_z(f, 272 * PG, 2, body, n);
	wr32(f, (size_t)(32 + 4 + rd32(body, 0)),
	     rd32(body, 4 + rd32(body, 0)) + 1);
	expect_z(f, len, &b, -EINVAL, "runs past the end");
	/* A length larger than zlib ever makes of the chunk. */
	memset(body, 0, sizeof(body));
	wr32(body, 0, (uint32_t)compressBound(MEMFILE_CHUNK) + 1);
	len = make_z(f, 272 * PG, 2, body,
		     4 + compressBound(MEMFILE_CHUNK) + 1 + 4);
	expect_z(f, len, &b, -EINVAL, "more than zlib makes");
	/* Zero-length chunks: both zero; file then ends. */
	memset(body, 0, 8);
	len = make_z(f, 272 * PG, 2, body, 8);
	memset(b.r[0].hva, 0xcc, b.r[0].size);
	expect_z(f, len, &b, 0, "");
	assert_int_equal(b.r[0].hva[0], 0);
	assert_int_equal(b.r[0].hva[272 * PG - 1], 0);
	/* Garbage as a stream. */
	wr32(body, 0, 16);
	memset(body + 4, 0x5a, 16);
	wr32(body, 20, 0);
	len = make_z(f, 272 * PG, 2, body, 24);
	expect_z(f, len, &b, -EINVAL, "chunk 0 at offset 36");

	/* Header fields. */
	memset(body, 0, 8);
	len = make_z(f, 272 * PG, 3, body, 12);
	expect_z(f, len, &b, -EINVAL, "chunk count 3 at offset 24");
	len = make_z(f, 272 * PG, 1, body, 4);
	expect_z(f, len, &b, -EINVAL, "chunk count 1");
	len = make_z(f, 272 * PG + 1, 2, body, 8);
	expect_z(f, len, &b, -EINVAL, "RAM size");
	len = make_z(f, 0, 0, body, 0);
	expect_z(f, len, &b, -EINVAL, "RAM size 0");
	len = make_z(f, 1ull << 62, (1ull << 62) / MEMFILE_CHUNK, body, 8);
	expect_z(f, len, &b, -EINVAL, "do not fit");
	len = make_z(f, 272 * PG, 2, body, 8);
	wr32(f, 8, 2);
	expect_z(f, len, &b, -EINVAL, "version 2");
	len = make_z(f, 272 * PG, 2, body, 8);
	wr32(f, 12, 4096);
	expect_z(f, len, &b, -EINVAL, "chunk size 4096");
	len = make_z(f, 272 * PG, 2, body, 8);
	expect_z(f, 20, &b, -EINVAL, "header needs 32");
	/* RAM that is not the VM's. */
	len = make_z(f, 16 * PG, 1, body, 4);
	expect_z(f, len, &b, -EINVAL, "the VM has 1114112");
	ram_free(&b);
}

static void test_probe_and_args(void **state)
{
	struct memfile_range bad[2];
	uint8_t page[PG];
	uint64_t bytes;
	struct ram a;
	char why[200];
	bool z;
	int fd = memfd();

	(void)state;
	assert_int_equal(memfile__probe(fd, &z, &bytes, why, sizeof(why)),
			 -EINVAL);
	assert_non_null(strstr(why, "raw memory file of 0 bytes"));
	assert_int_equal(ftruncate(fd, PG + 1), 0);
	assert_int_equal(memfile__probe(fd, &z, &bytes, why, sizeof(why)),
			 -EINVAL);
	assert_int_equal(ftruncate(fd, 3 * PG), 0);
	assert_int_equal(memfile__probe(fd, &z, &bytes, why, sizeof(why)), 0);
	assert_false(z);
	assert_int_equal(bytes, 3 * PG);

	/* Ranges that do not add up to the file. */
	ram_new(&a, (const unsigned int[]){ 2 }, 1);
	assert_int_equal(memfile__read(fd, a.r, a.nr, NULL, why, sizeof(why)),
			 -EINVAL);
	assert_non_null(strstr(why, "12288 bytes of RAM, the VM has 8192"));
	/* Writes want an empty file. */
	assert_int_equal(memfile__write(fd, a.r, a.nr, NULL, false, NULL),
			 -EINVAL);
	close(fd);

	fd = memfd();
	memset(bad, 0, sizeof(bad));
	bad[0].hva = page;
	bad[0].size = PG + 1;
	assert_int_equal(memfile__write(fd, bad, 1, NULL, false, NULL),
			 -EINVAL);
	bad[0].size = 0;
	assert_int_equal(memfile__write(fd, bad, 1, NULL, false, NULL),
			 -EINVAL);
	bad[0].size = PG;
	bad[1].size = PG; /* NULL hva */
	assert_int_equal(memfile__write(fd, bad, 2, NULL, false, NULL),
			 -EINVAL);
	assert_int_equal(memfile__write(fd, a.r, 0, NULL, false, NULL),
			 -EINVAL);
	assert_int_equal(memfile__write(fd, a.r, MEMFILE_MAX_RANGES + 1, NULL,
					true, NULL),
			 -EINVAL);
	assert_int_equal(memfile__read(fd, a.r, 0, NULL, why, sizeof(why)),
			 -EINVAL);
	assert_int_equal(file_size(fd), 0);
	close(fd);

	/* A pipe is no memory file. */
	{
		int p[2];

		assert_int_equal(pipe(p), 0);
		assert_int_equal(
			memfile__probe(p[0], &z, &bytes, why, sizeof(why)),
			-EINVAL);
		assert_non_null(strstr(why, "regular"));
		close(p[0]);
		close(p[1]);
	}
	ram_free(&a);
}

/* A raw file cut short: its size no longer matches the VM's RAM. */
static void test_raw_truncated(void **state)
{
	struct ram a;
	char why[200];
	int fd = memfd();

	(void)state;
	ram_new(&a, (const unsigned int[]){ 4 }, 1);
	ram_fill(&a, 1, 4);
	assert_int_equal(memfile__write(fd, a.r, a.nr, NULL, false, NULL), 0);
	assert_int_equal(ftruncate(fd, 3 * PG), 0);
	assert_int_equal(memfile__read(fd, a.r, a.nr, NULL, why, sizeof(why)),
			 -EINVAL);
	assert_non_null(strstr(why, "12288 bytes of RAM, the VM has 16384"));
	ram_free(&a);
	close(fd);
}

static void test_merge(void **state)
{
	struct memfile_stats st;
	struct ram a, b, c;
	uint64_t g, *bm;
	char why[200];
	int base = memfd(), diff = memfd(), zf = memfd();

	(void)state;
	ram_new(&a, three, 3);
	ram_new(&b, three, 3);
	ram_new(&c, three, 3);
	ram_fill(&a, 0x21, a.pages);
	assert_int_equal(memfile__write(base, a.r, a.nr, NULL, false, NULL), 0);

	/* b: a with some pages changed, some of them to zero. */
	memcpy(b.r[0].hva, a.r[0].hva, a.r[0].size);
	memcpy(b.r[1].hva, a.r[1].hva, a.r[1].size);
	memcpy(b.r[2].hva, a.r[2].hva, a.r[2].size);
	bm = bitmap_new(a.pages);
	for (g = 0; g < a.pages; g++) {
		if (g % 11 == 2 || (g >= 400 && g < 520)) {
			bitmap_set(bm, g);
			if (g % 2)
				memset(page_of(&b, g), 0, PG);
			else
				memset(page_of(&b, g), 0xe0 | (g & 15), PG);
		}
	}
	assert_int_equal(memfile__write(diff, b.r, b.nr, bm, false, &st), 0);
	assert_int_equal(memfile__merge(diff, base, bm, why, sizeof(why)), 0);
	assert_int_equal(file_size(base), a.pages * PG);
	ram_set(&c, 0x99);
	assert_int_equal(memfile__read(base, c.r, c.nr, NULL, why, sizeof(why)),
			 0);
	for (g = 0; g < a.pages; g++)
		assert_memory_equal(page_of(&b, g), page_of(&c, g), PG);
	/* Pages that became zero are holes again. */
	for (g = 0; g < a.pages; g++) {
		if (memfile__page_selected(bm, g) && g % 2)
			assert_true(is_hole(base, g));
	}

	/* Refused: a compressed side, another size. */
	assert_int_equal(memfile__write(zf, b.r, b.nr, bm, true, NULL), 0);
	assert_int_equal(memfile__merge(zf, base, bm, why, sizeof(why)),
			 -EINVAL);
	assert_non_null(strstr(why, "diff is compressed"));
	assert_int_equal(memfile__merge(diff, zf, bm, why, sizeof(why)),
			 -EINVAL);
	assert_non_null(strstr(why, "base is compressed"));
	assert_int_equal(ftruncate(diff, 4 * PG), 0);
	assert_int_equal(memfile__merge(diff, base, bm, why, sizeof(why)),
			 -EINVAL);
	assert_non_null(strstr(why, "the diff holds 16384 bytes"));
	free(bm);
	ram_free(&a);
	ram_free(&b);
	ram_free(&c);
	close(base);
	close(diff);
	close(zf);
}

/*
 * A raw file whose guest RAM starts with the compressed form's magic (a
 * guest can write it): read as what the caller knows it is, it round
 * trips; told it is compressed, it is refused.
 */
static void test_raw_with_magic(void **state)
{
	static const unsigned int one[] = { 300 };
	struct ram a, b;
	uint64_t g, bytes;
	char why[200];
	int fd = memfd();

	(void)state;
	ram_new(&a, one, 1);
	ram_new(&b, one, 1);
	ram_fill(&a, 0x33, a.pages);
	memcpy(a.r[0].hva, MEMFILE_MAGIC_Z, 8);
	memset(a.r[0].hva + 8, 0, 24); /* what a compressed header is not */
	assert_int_equal(memfile__write(fd, a.r, a.nr, NULL, false, NULL), 0);
	assert_int_equal(
		memfile__probe_as(fd, MEMFILE_RAW, &bytes, why, sizeof(why)),
		0);
	assert_int_equal(bytes, a.pages * PG);
	assert_int_equal(memfile__read_as(fd, MEMFILE_RAW, b.r, b.nr, NULL, why,
					  sizeof(why)),
			 0);
	for (g = 0; g < a.pages; g++)
		assert_memory_equal(page_of(&a, g), page_of(&b, g), PG);
	/* By its magic alone it would be taken for a broken compressed one. */
	assert_int_equal(memfile__read(fd, b.r, b.nr, NULL, why, sizeof(why)),
			 -EINVAL);
	assert_int_equal(memfile__probe_as(fd, MEMFILE_COMPRESSED, &bytes, why,
					   sizeof(why)),
			 -EINVAL);
	ram_free(&a);
	ram_free(&b);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_raw_roundtrip),
		cmocka_unit_test(test_raw_bitmap),
		cmocka_unit_test(test_compressed_roundtrip),
		cmocka_unit_test(test_compressed_bitmap),
		cmocka_unit_test(test_compressed_corrupt),
		cmocka_unit_test(test_compressed_truncated),
		cmocka_unit_test(test_compressed_lies),
		cmocka_unit_test(test_probe_and_args),
		cmocka_unit_test(test_raw_truncated),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_raw_with_magic),
	};

	return cmocka_run_group_tests_name("memfile", tests, NULL, NULL);
}
