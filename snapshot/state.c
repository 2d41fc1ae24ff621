// SPDX-License-Identifier: Apache-2.0
/*
 * The snapshot state file (see state.h): a writer into memory, a parser
 * that trusts no length, count or offset of the file, bounded cursors over
 * the sections, and the atomic file write and bounded file read.
 */
#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
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

/* Header field offsets (state.h). */
#define HDR_MAGIC    0
#define HDR_VERSION  8
#define HDR_ARCH     12
#define HDR_SIZE     16
#define HDR_NR	     24
#define HDR_RESERVED 28
#define CRC_BYTES    4
/* A section's fixed part: name length, version, payload length. */
#define SEC_FIXED (1 + 4 + 8)

static uint32_t crc_of(const uint8_t *p, size_t len)
{
	uLong crc = crc32(0L, Z_NULL, 0);

	/* zlib takes uInt lengths; SNAP_STATE_MAX fits, but stay general. */
	while (len) {
		uInt n = len > 0x40000000u ? 0x40000000u : (uInt)len;

		crc = crc32(crc, p, n);
		p += n;
		len -= n;
	}
	return (uint32_t)crc;
}

static bool name_byte_ok(uint8_t ch)
{
	return ch >= 0x21 && ch <= 0x7e;
}

/* --- writer ------------------------------------------------------------ */

/* Room for @n more bytes, the file then at most @max bytes. */
static uint8_t *buf_room(struct snap_buf *b, size_t n, size_t max)
{
	size_t need, cap;
	uint8_t *p;

	if (b->err)
		return NULL;
	if (b->len > max || n > max - b->len) {
		b->err = -E2BIG;
		return NULL;
	}
	need = b->len + n;
	if (need > b->cap) {
		cap = b->cap ? b->cap : 256;
		while (cap < need)
			cap *= 2; /* need <= SNAP_STATE_MAX: cannot wrap */
		if (cap > SNAP_STATE_MAX)
			cap = SNAP_STATE_MAX;
		p = realloc(b->data, cap);
		if (!p) {
			b->err = -ENOMEM;
			return NULL;
		}
		b->data = p;
		b->cap = cap;
	}
	p = b->data + b->len;
	b->len = need;
	return p;
}

/* Room for @n more bytes of header or sections, leaving room for the CRC. */
static uint8_t *buf_grow(struct snap_buf *b, size_t n)
{
	return buf_room(b, n, SNAP_STATE_MAX - CRC_BYTES);
}

void snap_buf__init(struct snap_buf *b)
{
	uint8_t *p;

	memset(b, 0, sizeof(*b));
	p = buf_grow(b, SNAP_HEADER_BYTES);
	if (p)
		memset(p, 0, SNAP_HEADER_BYTES);
}

/* Writes the open section's payload length; no section is open after. */
static void buf_close_section(struct snap_buf *b)
{
	if (!b->sec_len_off || b->err)
		return;
	le__put64(b->data + b->sec_len_off, b->len - (b->sec_len_off + 8));
	b->sec_len_off = 0;
}

/* Whether a section named @name (@nl bytes) is already in @b. */
static bool buf_has_section(const struct snap_buf *b, const char *name,
			    size_t nl)
{
	size_t off = SNAP_HEADER_BYTES;
	unsigned int i;

	/* Walks what this writer wrote: every length is its own. */
	for (i = 0; i < b->nr_sections; i++) {
		size_t l = b->data[off];

		if (l == nl && !memcmp(b->data + off + 1, name, nl))
			return true;
		off += 1 + l + 4;
		off += 8 + (size_t)le__get64(b->data + off);
	}
	return false;
}

void snap_buf__section(struct snap_buf *b, const char *name, uint32_t version)
{
	size_t nl, i;
	uint8_t *p;

	if (b->err)
		return;
	buf_close_section(b);
	nl = name ? strnlen(name, SNAP_NAME_MAX + 1) : 0;
	if (!nl || nl > SNAP_NAME_MAX) {
		b->err = -EINVAL;
		return;
	}
	for (i = 0; i < nl; i++) {
		if (!name_byte_ok((uint8_t)name[i])) {
			b->err = -EINVAL;
			return;
		}
	}
	/* A reader refuses a file with a name twice: refuse to write one. */
	if (buf_has_section(b, name, nl)) {
		b->err = -EINVAL;
		return;
	}
	p = buf_grow(b, SEC_FIXED + nl);
	if (!p)
		return;
	p[0] = (uint8_t)nl;
	memcpy(p + 1, name, nl);
	le__put32(p + 1 + nl, version);
	le__put64(p + 1 + nl + 4, 0);
	b->sec_len_off = (size_t)(p + 1 + nl + 4 - b->data);
	b->nr_sections++;
}

/* Room for a value of @n bytes in the open section. */
static uint8_t *buf_value(struct snap_buf *b, size_t n)
{
	if (b->err)
		return NULL;
	if (!b->sec_len_off) {
		b->err = -EINVAL;
		return NULL;
	}
	return buf_grow(b, n);
}

void snap_buf__u8(struct snap_buf *b, uint8_t v)
{
	uint8_t *p = buf_value(b, 1);

	if (p)
		*p = v;
}

void snap_buf__u16(struct snap_buf *b, uint16_t v)
{
	uint8_t *p = buf_value(b, 2);

	if (p)
		le__put16(p, v);
}

void snap_buf__u32(struct snap_buf *b, uint32_t v)
{
	uint8_t *p = buf_value(b, 4);

	if (p)
		le__put32(p, v);
}

void snap_buf__u64(struct snap_buf *b, uint64_t v)
{
	uint8_t *p = buf_value(b, 8);

	if (p)
		le__put64(p, v);
}

void snap_buf__bytes(struct snap_buf *b, const void *p, size_t n)
{
	uint8_t *d = buf_value(b, n);

	if (d && n)
		memcpy(d, p, n);
}

void snap_buf__str(struct snap_buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n > UINT32_MAX) {
		if (!b->err)
			b->err = -E2BIG;
		return;
	}
	snap_buf__u32(b, (uint32_t)n);
	snap_buf__bytes(b, s, n);
}

int snap_buf__finish(struct snap_buf *b)
{
	uint8_t *p;

	if (b->err)
		return b->err;
	buf_close_section(b);
	/* buf_grow() kept room for the CRC. */
	p = buf_room(b, CRC_BYTES, SNAP_STATE_MAX);
	if (!p)
		return b->err;
	memcpy(b->data + HDR_MAGIC, SNAP_MAGIC, 8);
	le__put32(b->data + HDR_VERSION, SNAP_FORMAT_VERSION);
	le__put32(b->data + HDR_ARCH, SNAP_ARCH_X86_64);
	le__put64(b->data + HDR_SIZE, b->len);
	le__put32(b->data + HDR_NR, b->nr_sections);
	le__put32(b->data + HDR_RESERVED, 0);
	le__put32(p, crc_of(b->data, b->len - CRC_BYTES));
	return 0;
}

void snap_buf__free(struct snap_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

/* --- parser ------------------------------------------------------------ */

/* Orders section names (each a pointer to its length byte). */
static int name_cmp(const void *a, const void *b)
{
	const uint8_t *x = *(const uint8_t *const *)a;
	const uint8_t *y = *(const uint8_t *const *)b;
	size_t n = x[0] < y[0] ? x[0] : y[0];
	int r = memcmp(x + 1, y + 1, n);

	if (r)
		return r;
	return (int)x[0] - (int)y[0];
}

/*
 * Names unique: sorted, so that a file of millions of tiny sections costs
 * n log n, not n^2.  @names holds @nr pointers to the length bytes.
 */
static int check_unique(const uint8_t *base, const uint8_t **names,
			unsigned int nr, char *why, size_t whylen)
{
	unsigned int i;

	if (nr < 2)
		return 0;
	qsort(names, nr, sizeof(*names), name_cmp);
	for (i = 1; i < nr; i++) {
		if (!name_cmp(&names[i - 1], &names[i]))
			return why_set(why, whylen, -EINVAL,
				       "section name '%.*s' at offset %zu "
				       "appears twice",
				       (int)names[i][0], names[i] + 1,
				       (size_t)(names[i] - base));
	}
	return 0;
}

int snap_state__parse(struct snap_state *s, const void *data, size_t len,
		      char *why, size_t whylen)
{
	const uint8_t *d = data, **names = NULL;
	size_t off, end, left;
	uint32_t version, arch, nr, crc, want;
	uint64_t size, plen;
	unsigned int i;
	int ret;

	memset(s, 0, sizeof(*s));
	if (why && whylen)
		why[0] = '\0';
	if (!d || len < SNAP_HEADER_BYTES + CRC_BYTES)
		return why_set(why, whylen, -EINVAL,
			       "file too short: %zu bytes, a header and CRC "
			       "need %u",
			       d ? len : 0, SNAP_HEADER_BYTES + CRC_BYTES);
	if (len > SNAP_STATE_MAX)
		return why_set(why, whylen, -EINVAL,
			       "file too large: %zu bytes, at most %u", len,
			       SNAP_STATE_MAX);
	if (memcmp(d + HDR_MAGIC, SNAP_MAGIC, 8))
		return why_set(why, whylen, -EINVAL,
			       "bad magic at offset 0: not an ember state "
			       "file");
	version = le__get32(d + HDR_VERSION);
	if (version != SNAP_FORMAT_VERSION)
		return why_set(why, whylen, -EPROTONOSUPPORT,
			       "format version %u at offset %u, this ember "
			       "reads version %u",
			       version, HDR_VERSION, SNAP_FORMAT_VERSION);
	arch = le__get32(d + HDR_ARCH);
	if (arch != SNAP_ARCH_X86_64)
		return why_set(why, whylen, -ENOEXEC,
			       "architecture %u at offset %u, this ember "
			       "runs %u (x86_64)",
			       arch, HDR_ARCH, SNAP_ARCH_X86_64);
	size = le__get64(d + HDR_SIZE);
	if (size != len)
		return why_set(why, whylen, -EINVAL,
			       "size field at offset %u says %llu bytes, "
			       "the file has %zu (truncated or extended)",
			       HDR_SIZE, (unsigned long long)size, len);
	end = len - CRC_BYTES;
	crc = le__get32(d + end);
	want = crc_of(d, end);
	if (crc != want)
		return why_set(why, whylen, -EINVAL,
			       "CRC mismatch: 0x%08x stored at offset %zu, "
			       "0x%08x computed (the file is corrupt)",
			       crc, end, want);
	if (le__get32(d + HDR_RESERVED))
		return why_set(why, whylen, -EINVAL,
			       "reserved header field at offset %u is not 0",
			       HDR_RESERVED);
	nr = le__get32(d + HDR_NR);
	/* Each section takes at least SEC_FIXED + 1 bytes. */
	if (nr > (end - SNAP_HEADER_BYTES) / (SEC_FIXED + 1))
		return why_set(why, whylen, -EINVAL,
			       "section count %u at offset %u cannot fit in "
			       "%zu bytes",
			       nr, HDR_NR, end - SNAP_HEADER_BYTES);
	if (nr) {
		names = malloc(nr * sizeof(*names));
		if (!names)
			return why_set(why, whylen, -ENOMEM,
				       "out of memory for %u section names",
				       nr);
	}

	off = SNAP_HEADER_BYTES;
	for (i = 0; i < nr; i++) {
		size_t nl, j;

		left = end - off;
		if (left < SEC_FIXED + 1) {
			ret = why_set(why, whylen, -EINVAL,
				      "section %u at offset %zu: %zu bytes "
				      "left, its header needs at least %u",
				      i, off, left, SEC_FIXED + 1);
			goto out;
		}
		nl = d[off];
		if (!nl || nl > SNAP_NAME_MAX) {
			ret = why_set(why, whylen, -EINVAL,
				      "section %u at offset %zu: name length "
				      "%zu not in 1..%u",
				      i, off, nl, SNAP_NAME_MAX);
			goto out;
		}
		if (left < SEC_FIXED + nl) {
			ret = why_set(why, whylen, -EINVAL,
				      "section %u at offset %zu: header of "
				      "%zu bytes runs past the sections' end "
				      "(%zu bytes left)",
				      i, off, SEC_FIXED + nl, left);
			goto out;
		}
		for (j = 0; j < nl; j++) {
			if (!name_byte_ok(d[off + 1 + j])) {
				ret = why_set(why, whylen, -EINVAL,
					      "section %u: name byte 0x%02x "
					      "at offset %zu is not printable",
					      i, d[off + 1 + j], off + 1 + j);
				goto out;
			}
		}
		names[i] = d + off;
		plen = le__get64(d + off + 1 + nl + 4);
		left -= SEC_FIXED + nl;
		if (plen > left) {
			ret = why_set(why, whylen, -EINVAL,
				      "section '%.*s': payload length %llu "
				      "at offset %zu runs past the sections' "
				      "end (%zu bytes left)",
				      (int)nl, (const char *)d + off + 1,
				      (unsigned long long)plen,
				      off + 1 + nl + 4, left);
			goto out;
		}
		off += SEC_FIXED + nl + (size_t)plen;
	}
	if (off != end) {
		ret = why_set(why, whylen, -EINVAL,
			      "%zu stray bytes at offset %zu after the last "
			      "of %u sections",
			      end - off, off, nr);
		goto out;
	}
	ret = check_unique(d, names, nr, why, whylen);
	if (ret)
		goto out;
	s->data = d;
	s->len = len;
	s->version = version;
	s->arch = arch;
	s->nr_sections = nr;
out:
	free(names);
	return ret;
}

int snap_state__next(const struct snap_state *s, size_t *iter,
		     char name[SNAP_NAME_MAX + 1], struct snap_cur *c)
{
	size_t off = *iter, nl;
	uint64_t plen;

	/* Offsets walk a parsed file: its bounds were all checked. */
	if (!s->data || s->len < SNAP_HEADER_BYTES + CRC_BYTES)
		return 0;
	if (off < SNAP_HEADER_BYTES)
		off = SNAP_HEADER_BYTES;
	if (off >= s->len - CRC_BYTES)
		return 0;
	nl = s->data[off];
	memcpy(name, s->data + off + 1, nl);
	name[nl] = '\0';
	memset(c, 0, sizeof(*c));
	c->version = le__get32(s->data + off + 1 + nl);
	plen = le__get64(s->data + off + 1 + nl + 4);
	c->p = s->data + off + SEC_FIXED + nl;
	c->len = (size_t)plen;
	*iter = off + SEC_FIXED + nl + (size_t)plen;
	return 1;
}

int snap_state__find(const struct snap_state *s, const char *name,
		     struct snap_cur *c)
{
	char n[SNAP_NAME_MAX + 1];
	struct snap_cur cur;
	size_t it = 0;

	while (snap_state__next(s, &it, n, &cur)) {
		if (!strcmp(n, name)) {
			*c = cur;
			return 0;
		}
	}
	return -ENOENT;
}

/* --- cursor ------------------------------------------------------------ */

/* The next @n bytes, or NULL (and the error set) past the end. */
static const uint8_t *cur_take(struct snap_cur *c, size_t n)
{
	const uint8_t *p;

	/* After an error the rest of the section means nothing. */
	if (c->err || c->off > c->len || n > c->len - c->off) {
		c->err = true;
		return NULL;
	}
	p = c->p + c->off;
	c->off += n;
	return p;
}

uint8_t snap_cur__u8(struct snap_cur *c)
{
	const uint8_t *p = cur_take(c, 1);

	return p ? *p : 0;
}

uint16_t snap_cur__u16(struct snap_cur *c)
{
	const uint8_t *p = cur_take(c, 2);

	return p ? le__get16(p) : 0;
}

uint32_t snap_cur__u32(struct snap_cur *c)
{
	const uint8_t *p = cur_take(c, 4);

	return p ? le__get32(p) : 0;
}

uint64_t snap_cur__u64(struct snap_cur *c)
{
	const uint8_t *p = cur_take(c, 8);

	return p ? le__get64(p) : 0;
}

void snap_cur__bytes(struct snap_cur *c, void *dst, size_t n)
{
	const uint8_t *p = cur_take(c, n);

	if (!n)
		return;
	if (p)
		memcpy(dst, p, n);
	else
		memset(dst, 0, n);
}

const void *snap_cur__ptr(struct snap_cur *c, size_t n)
{
	return cur_take(c, n);
}

char *snap_cur__str(struct snap_cur *c, char *dst, size_t dstsz)
{
	uint32_t n = snap_cur__u32(c);
	const uint8_t *p;

	if (!dstsz) {
		c->err = true;
		return dst;
	}
	dst[0] = '\0';
	if (c->err)
		return dst;
	if (n >= dstsz) {
		c->err = true;
		return dst;
	}
	p = cur_take(c, n);
	if (!p)
		return dst;
	if (memchr(p, '\0', n)) {
		c->err = true;
		return dst;
	}
	memcpy(dst, p, n);
	dst[n] = '\0';
	return dst;
}

void snap_cur__fail(struct snap_cur *c)
{
	c->err = true;
}

int snap_cur__end(const struct snap_cur *c)
{
	return !c->err && c->off == c->len ? 0 : -EINVAL;
}

/* --- files ------------------------------------------------------------- */

/* fsync of the directory that holds @path, so that a rename is durable. */
static int fsync_dir_of(const char *path)
{
	char *copy = strdup(path);
	int fd, ret = 0;

	if (!copy)
		return -ENOMEM;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	if (fsync(fd))
		ret = -errno;
	close(fd);
out:
	free(copy);
	return ret;
}

int snap_file__write(const char *path, const void *data, size_t len)
{
	static const char suffix[] = ".tmp-XXXXXX";
	size_t plen;
	char *tmp;
	int fd, ret;

	if (!path || !*path || (len && !data))
		return -EINVAL;
	plen = strlen(path);
	tmp = malloc(plen + sizeof(suffix));
	if (!tmp)
		return -ENOMEM;
	memcpy(tmp, path, plen);
	memcpy(tmp + plen, suffix, sizeof(suffix));
	/* Next to @path, so that rename() stays on one filesystem. */
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto out_free;
	}
	/* mkostemp() makes 0600 less the umask; the file holds secrets. */
	if (fchmod(fd, 0600)) {
		ret = -errno;
		goto out_unlink;
	}
	ret = fileio__pwrite_all(fd, data, len, 0);
	if (ret)
		goto out_unlink;
	if (fsync(fd)) {
		ret = -errno;
		goto out_unlink;
	}
	ret = close(fd);
	fd = -1;
	if (ret) {
		ret = -errno;
		goto out_unlink;
	}
	if (rename(tmp, path)) {
		ret = -errno;
		goto out_unlink;
	}
	/* The new file is in place; a failure now only means less durable. */
	ret = fsync_dir_of(path);
	goto out_free;

out_unlink:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
out_free:
	free(tmp);
	return ret;
}

int snap_file__read(const char *path, void **data, size_t *len, char *why,
		    size_t whylen)
{
	uint8_t *buf = NULL;
	struct stat st;
	size_t got = 0;
	ssize_t n;
	int fd, ret;

	*data = NULL;
	*len = 0;
	if (why && whylen)
		why[0] = '\0';
	/* O_NONBLOCK: a FIFO must be refused, not wait for a writer. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		ret = -errno;
		return why_set(why, whylen, ret, "open %s: %s", path,
			       strerror(-ret));
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		why_set(why, whylen, ret, "stat %s: %s", path, strerror(-ret));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = why_set(why, whylen, -EINVAL, "%s is not a regular file",
			      path);
		goto out;
	}
	if (st.st_size < 0 || (uint64_t)st.st_size > SNAP_STATE_MAX) {
		ret = why_set(why, whylen, -EFBIG,
			      "%s has %lld bytes, a state file at most %u",
			      path, (long long)st.st_size, SNAP_STATE_MAX);
		goto out;
	}
	/* One byte more than the size: a file that grew is noticed. */
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		ret = why_set(why, whylen, -ENOMEM,
			      "out of memory for %lld bytes of %s",
			      (long long)st.st_size, path);
		goto out;
	}
	for (;;) {
		n = read(fd, buf + got, (size_t)st.st_size + 1 - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			why_set(why, whylen, ret, "read %s at offset %zu: %s",
				path, got, strerror(-ret));
			goto out;
		}
		if (!n)
			break;
		got += (size_t)n;
		if (got > (size_t)st.st_size) {
			ret = why_set(why, whylen, -EAGAIN,
				      "%s grew while it was read", path);
			goto out;
		}
	}
	*data = buf;
	*len = got;
	buf = NULL;
	ret = 0;
out:
	free(buf);
	close(fd);
	return ret;
}
