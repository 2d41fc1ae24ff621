/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The snapshot memory file: guest RAM, its regions one after another (the
 * region at GPA 0 from file offset 0, the next right after it), in 4 KiB
 * pages.  Pure file code: the caller hands in host ranges of RAM.
 *
 * Two forms:
 *   raw         exactly the RAM's size; pages that are zero (or not
 *               selected) are holes, so the file is sparse.  A raw file
 *               can be mapped MAP_PRIVATE as guest RAM.
 *   compressed  header: magic "EMBRMEMZ", u32 version (1), u32 chunk
 *               size (MEMFILE_CHUNK), u64 RAM bytes, u64 number of
 *               chunks; then per chunk u32 compressed length (0: the
 *               chunk is all zero or holds no selected page) and that
 *               many bytes of zlib stream inflating to exactly the chunk
 *               (the last may be shorter).  Read back into memory.
 *
 * A page selection is a bitmap of u64 words, bit i for page i of the file
 * (LSB first); NULL selects every page.  A diff is a memory file whose
 * selected pages are the ones changed; its bitmap lives in the state file.
 */
#ifndef EMBER_SNAPSHOT_MEMFILE_H
#define EMBER_SNAPSHOT_MEMFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MEMFILE_PAGE	   4096u
#define MEMFILE_CHUNK	   (1u << 20) /* bytes of RAM per compressed chunk */
#define MEMFILE_MAGIC_Z	   "EMBRMEMZ"
#define MEMFILE_MAX_RANGES 4

/* One host range of guest RAM, in file order; sizes are page multiples. */
struct memfile_range {
	uint8_t *hva;
	uint64_t size;
};

/* memfile__bitmap_words() - u64 words of a bitmap for @bytes of RAM. */
static inline uint64_t memfile__bitmap_words(uint64_t bytes)
{
	return (bytes / MEMFILE_PAGE + 63) / 64;
}

static inline bool memfile__page_selected(const uint64_t *bm, uint64_t page)
{
	return !bm || (bm[page / 64] >> (page % 64)) & 1;
}

/*
 * The form of a memory file, as its state file records it: a raw file
 * starts with guest RAM, which may hold the compressed form's magic, so a
 * reader that knows the form must say it (MEMFILE_ANY: tell by the magic).
 */
enum memfile_form { MEMFILE_ANY = 0, MEMFILE_RAW, MEMFILE_COMPRESSED };

/* What a write did, for the caller's figures. */
struct memfile_stats {
	uint64_t pages_selected; /* pages the bitmap selected */
	uint64_t pages_written; /* of them, the non-zero ones written */
	uint64_t file_bytes; /* bytes of data in the file */
};

/*
 * memfile__write() - write the selected pages of @nr ranges (1 to
 * MEMFILE_MAX_RANGES) to @fd, an empty file opened for writing: raw
 * (ftruncate to the RAM size, then only the non-zero selected pages, runs
 * coalesced) or compressed with zlib (@compress).  Zero pages are checked
 * by reading them (the caller leaves out pages it knows are untouched).
 * Does not fsync.  Returns 0 with @st filled (may be NULL), or a negative
 * errno (-EIO for a short write; -EINVAL for bad ranges or a regular file
 * that is not empty).
 */
int memfile__write(int fd, const struct memfile_range *r, unsigned int nr,
		   const uint64_t *sel, bool compress,
		   struct memfile_stats *st);

/*
 * memfile__probe() - what @fd holds: *@compressed, and the RAM bytes it
 * describes in *@ram_bytes (a raw file: its size).  Checks a compressed
 * header (magic, version, chunk size, chunk count matching the RAM size)
 * and that a raw file's size is a non-zero page multiple.  Returns 0, or
 * -EINVAL with the reason in @why (@whylen bytes), or a negative errno
 * from I/O.  The form is told by the magic alone, and a raw file starts
 * with guest RAM: a guest can make its raw file look compressed, so a
 * caller that recorded the form (in the state file) checks *@compressed.
 */
int memfile__probe(int fd, bool *compressed, uint64_t *ram_bytes, char *why,
		   size_t whylen);

/*
 * memfile__probe_as() - memfile__probe() for a file known to be of @form:
 * MEMFILE_RAW never looks at the magic (a raw file is any non-empty page
 * multiple), MEMFILE_COMPRESSED requires it.  Returns 0 with *@ram_bytes,
 * or -EINVAL (the reason in @why) or a negative errno from I/O.
 */
int memfile__probe_as(int fd, enum memfile_form form, uint64_t *ram_bytes,
		      char *why, size_t whylen);

/*
 * memfile__read() - copy the selected pages (@sel NULL: all) of the memory
 * file @fd, raw or compressed, into the @nr ranges, whose total size must
 * equal the file's RAM bytes.  Pages not selected are left as they are.
 * Every chunk length and inflated size is checked: a corrupt or truncated
 * file gives -EINVAL with the reason in @why, never a write outside the
 * ranges.  Returns 0 or a negative errno.
 */
int memfile__read(int fd, const struct memfile_range *r, unsigned int nr,
		  const uint64_t *sel, char *why, size_t whylen);

/* memfile__read_as() - memfile__read() of a file known to be of @form. */
int memfile__read_as(int fd, enum memfile_form form,
		     const struct memfile_range *r, unsigned int nr,
		     const uint64_t *sel, char *why, size_t whylen);

/*
 * memfile__merge() - write the pages @sel selects from the raw diff file
 * @diff_fd onto the raw memory file @base_fd (the same RAM size, checked;
 * a file that starts with the compressed form's magic is refused):
 * the base then holds the diff's memory.  Returns 0 or a negative errno
 * with the reason in @why.
 */
int memfile__merge(int diff_fd, int base_fd, const uint64_t *sel, char *why,
		   size_t whylen);

#endif /* EMBER_SNAPSHOT_MEMFILE_H */
