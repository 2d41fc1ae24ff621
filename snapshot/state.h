/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapshot/: pure file formats: the state file (this header), the memory
 * file (memfile.h) and the copy-on-write disk overlay (overlay.h).  A
 * file here includes libc, zlib and the ground of devices/ (le.h,
 * fileio.h): never vmm/ or a device model, never <linux/kvm.h>, no ioctl.
 * The formats know nothing of what they carry; vmm/persist/ and vmm/dev/
 * put the VM into them.
 *
 * The snapshot state file: everything of a VM but its RAM and disks, as
 * named, versioned sections behind a header and before a CRC.  Pure: no
 * ioctl, no knowledge of what a section holds (vmm/persist/ asks each
 * part of the VM for its section; a device's section is written by its
 * class in vmm/dev/).
 *
 * Layout, all integers little-endian:
 *
 *   header   magic "EMBRSNAP" (8 bytes), u32 format version
 *            (SNAP_FORMAT_VERSION), u32 architecture (SNAP_ARCH_X86_64),
 *            u64 file size in bytes (CRC included), u32 number of
 *            sections, u32 0 (reserved)
 *   section  u8 name length (1..SNAP_NAME_MAX), the name (bytes 0x21 to
 *            0x7e), u32 section version, u64 payload length, the payload
 *   trailer  u32 CRC-32 (zlib's crc32(), ISO-HDLC) of every byte before it
 *
 * A reader checks the magic, version, architecture, size, CRC and the
 * bounds of every section before it hands out any of them, and section
 * names are unique.  Inside a section, struct snap_cur reads values with
 * bounds checks: reading past the end sets an error flag and yields
 * zeroes, so a consumer checks once at the end (snap_cur__end()).
 */
#ifndef EMBER_SNAPSHOT_STATE_H
#define EMBER_SNAPSHOT_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SNAP_MAGIC	    "EMBRSNAP"
#define SNAP_FORMAT_VERSION 1
#define SNAP_ARCH_X86_64    1
#define SNAP_NAME_MAX	    127 /* bytes of a section name */
#define SNAP_STATE_MAX	    (64u << 20) /* bytes: a larger file is refused */
#define SNAP_HEADER_BYTES   32

/* A state file being built in memory. */
struct snap_buf {
	uint8_t *data; /* malloc()ed, owned */
	size_t len, cap;
	int err; /* first error (-ENOMEM, -E2BIG, -EINVAL); sticky */
	size_t sec_len_off; /* where the open section's length goes; 0: none */
	unsigned int nr_sections;
};

/*
 * snap_buf__init() - an empty state file (the header, to be filled by
 * snap_buf__finish()).  Errors are sticky in @b->err: every later call
 * does nothing, snap_buf__finish() returns the error.
 */
void snap_buf__init(struct snap_buf *b);

/*
 * snap_buf__section() - end the open section (if any) and open section
 * @name (1..SNAP_NAME_MAX printable bytes, no space; -EINVAL otherwise)
 * at @version.  Values written next go into it.
 */
void snap_buf__section(struct snap_buf *b, const char *name, uint32_t version);

/* Values of the open section, little-endian. */
void snap_buf__u8(struct snap_buf *b, uint8_t v);
void snap_buf__u16(struct snap_buf *b, uint16_t v);
void snap_buf__u32(struct snap_buf *b, uint32_t v);
void snap_buf__u64(struct snap_buf *b, uint64_t v);
void snap_buf__bytes(struct snap_buf *b, const void *p, size_t n);
/* A string: u32 length then the bytes (no NUL); NULL is length 0. */
void snap_buf__str(struct snap_buf *b, const char *s);

/*
 * snap_buf__finish() - close the open section, fill the header and append
 * the CRC.  Returns 0 (the file is @b->data, @b->len bytes) or the first
 * error met (-ENOMEM; -E2BIG past SNAP_STATE_MAX; -EINVAL for a bad name,
 * a name used twice, or a value written outside a section).
 */
int snap_buf__finish(struct snap_buf *b);

/* snap_buf__free() - release @b's memory; safe on a zeroed @b. */
void snap_buf__free(struct snap_buf *b);

/* A parsed state file; points into the caller's buffer. */
struct snap_state {
	const uint8_t *data;
	size_t len;
	uint32_t version;
	uint32_t arch;
	unsigned int nr_sections;
};

/* A cursor over one section's payload. */
struct snap_cur {
	const uint8_t *p;
	size_t len, off;
	uint32_t version; /* the section's version */
	bool err; /* a read went past the end, or a value was refused */
};

/*
 * snap_state__parse() - check the state file @data of @len bytes (owned by
 * the caller, must outlive @s): size, magic, format version, architecture,
 * header size field, CRC, then every section's name and bounds, names
 * unique, nothing after the last section but the CRC.  Returns 0, or
 * -EINVAL (malformed or corrupt), -EPROTONOSUPPORT (another format
 * version), -ENOEXEC (another architecture), -ENOMEM (no memory to check
 * the names), with one line saying which check failed (and at which byte
 * offset) in @why (@whylen bytes).
 */
int snap_state__parse(struct snap_state *s, const void *data, size_t len,
		      char *why, size_t whylen);

/*
 * snap_state__find() - point @c at section @name of @s.  Returns 0 or
 * -ENOENT.
 */
int snap_state__find(const struct snap_state *s, const char *name,
		     struct snap_cur *c);

/*
 * snap_state__next() - iterate over @s's sections in file order: start
 * with *@iter = 0; each call that returns 1 gives the next section's name
 * (NUL-terminated, in @name of SNAP_NAME_MAX + 1 bytes) and its cursor;
 * returns 0 after the last.
 */
int snap_state__next(const struct snap_state *s, size_t *iter,
		     char name[SNAP_NAME_MAX + 1], struct snap_cur *c);

/*
 * Bounded reads: past the end they set @c->err and give 0 (bytes: zero
 * fill; ptr: NULL).  Once @c->err is set, every read gives 0.
 */
uint8_t snap_cur__u8(struct snap_cur *c);
uint16_t snap_cur__u16(struct snap_cur *c);
uint32_t snap_cur__u32(struct snap_cur *c);
uint64_t snap_cur__u64(struct snap_cur *c);
void snap_cur__bytes(struct snap_cur *c, void *dst, size_t n);
const void *snap_cur__ptr(struct snap_cur *c, size_t n);
/*
 * snap_cur__str() - a string written by snap_buf__str() into @dst
 * (@dstsz bytes, NUL-terminated); an embedded NUL or a string that does
 * not fit sets @c->err.  Returns @dst ("" on error).
 */
char *snap_cur__str(struct snap_cur *c, char *dst, size_t dstsz);

/* snap_cur__fail() - a consumer refuses a value it read: sets @c->err. */
void snap_cur__fail(struct snap_cur *c);

/*
 * snap_cur__end() - the section was read whole and nothing was refused:
 * 0, else -EINVAL.
 */
int snap_cur__end(const struct snap_cur *c);

/*
 * snap_file__write() - write @len bytes of @data to @path so that a reader
 * sees the old file or the new one, never a part: a temporary file in the
 * same directory (mode 0600: it holds guest secrets), fsync, rename, fsync
 * of the directory.  Returns 0 or a negative errno (nothing left behind;
 * only a failed fsync of the directory comes after the new file is in
 * place).
 */
int snap_file__write(const char *path, const void *data, size_t len);

/*
 * snap_file__read() - read the whole regular file @path (at most
 * SNAP_STATE_MAX bytes) into a malloc()ed buffer *@data (the caller frees)
 * of *@len bytes.  Returns 0 or a negative errno (-EFBIG when too large,
 * -EINVAL when not a regular file, -EAGAIN when it grew while read) with
 * the reason in @why.
 */
int snap_file__read(const char *path, void **data, size_t *len, char *why,
		    size_t whylen);

#endif /* EMBER_SNAPSHOT_STATE_H */
