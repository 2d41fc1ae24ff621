// SPDX-License-Identifier: Apache-2.0
/*
 * What a SRC is: its prefix, else its content (see image.h).  Pure: the
 * tar walk reads through a callback, so that the fuzzer and the unit
 * tests feed it bytes and image_unpack.c feeds it a file.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "files.h"
#include "image.h"
#include "image_internal.h"

#define TAR_BLOCK 512
/* Headers walked at most: a docker save of 100s of layers has ~4 each. */
#define TAR_MAX_ENTRIES 65536

const char *image__kind_name(enum image_kind k)
{
	switch (k) {
	case IMAGE_DOCKER_ARCHIVE:
		return "docker-archive";
	case IMAGE_OCI_ARCHIVE:
		return "oci-archive";
	case IMAGE_OCI_LAYOUT:
		return "oci";
	case IMAGE_ROOT_DIR:
		return "dir";
	case IMAGE_EXT4:
		return "ext4";
	case IMAGE_UNKNOWN:
		break;
	}
	return "unknown";
}

/* An octal field of a tar header (NUL or space ended): -1 when bad. */
static int64_t tar_octal(const uint8_t *f, size_t n)
{
	int64_t v = 0;
	size_t i = 0;

	while (i < n && f[i] == ' ')
		i++;
	if (i == n || f[i] < '0' || f[i] > '7')
		return -1;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v > (INT64_MAX >> 3))
			return -1;
		v = (v << 3) | (f[i] - '0');
	}
	if (i < n && f[i] != '\0' && f[i] != ' ')
		return -1;
	return v;
}

/* Whether @h is a tar header whose checksum (chksum at 148) adds up. */
static bool tar_header_ok(const uint8_t *h)
{
	int64_t want = tar_octal(h + 148, 8);
	int64_t sum = 0;

	if (want < 0)
		return false;
	for (size_t i = 0; i < TAR_BLOCK; i++)
		sum += (i >= 148 && i < 156) ? ' ' : h[i];
	return sum == want;
}

/* The entry name @h names, without "./", into @out (>= 101 bytes). */
static void tar_name(const uint8_t *h, char *out)
{
	const char *n = (const char *)h;
	size_t len = strnlen(n, 100);

	memcpy(out, n, len);
	out[len] = '\0';
	if (out[0] == '.' && out[1] == '/')
		memmove(out, out + 2, len - 1);
}

enum image_kind image__sniff_tar(image_read_fn rd, void *arg)
{
	uint8_t h[TAR_BLOCK];
	bool manifest = false, layout = false, index = false;
	uint64_t off = 0;
	char name[101];

	for (int i = 0; i < TAR_MAX_ENTRIES; i++) {
		int64_t size;

		if (rd(arg, off, h, sizeof(h)) != 0)
			break;
		if (!tar_header_ok(h))
			break; /* the two zero blocks at the end, or not a tar */
		size = tar_octal(h + 124, 12);
		if (size < 0)
			break;
		tar_name(h, name);
		/* Regular files only ('0' or NUL); long names and pax skipped. */
		if (h[156] == '0' || h[156] == '\0') {
			manifest |= !strcmp(name, "manifest.json");
			layout |= !strcmp(name, "oci-layout");
			index |= !strcmp(name, "index.json");
		}
		if ((uint64_t)size > UINT64_MAX - off - 2 * TAR_BLOCK)
			break;
		off += TAR_BLOCK + (((uint64_t)size + TAR_BLOCK - 1) &
				    ~(uint64_t)(TAR_BLOCK - 1));
	}
	/* An OCI archive may also carry manifest.json (skopeo's, podman's). */
	if (layout && index)
		return IMAGE_OCI_ARCHIVE;
	if (manifest)
		return IMAGE_DOCKER_ARCHIVE;
	return IMAGE_UNKNOWN;
}

struct mem_src {
	const uint8_t *buf;
	size_t len;
};

static int mem_read(void *arg, uint64_t off, void *out, size_t n)
{
	const struct mem_src *m = arg;

	if (off > m->len || n > m->len - off)
		return -ENODATA;
	memcpy(out, m->buf + off, n);
	return 0;
}

uint64_t image__ext4_bytes(const uint8_t *sb)
{
	uint32_t lo = (uint32_t)sb[4] | (uint32_t)sb[5] << 8 |
		      (uint32_t)sb[6] << 16 | (uint32_t)sb[7] << 24;
	uint32_t hi = (uint32_t)sb[0x150] | (uint32_t)sb[0x151] << 8 |
		      (uint32_t)sb[0x152] << 16 | (uint32_t)sb[0x153] << 24;
	uint32_t log = (uint32_t)sb[0x18] | (uint32_t)sb[0x19] << 8;
	/* INCOMPAT_64BIT (0x80 of s_feature_incompat, at 0x60). */
	uint64_t blocks = lo | ((sb[0x60] & 0x80) ? (uint64_t)hi << 32 : 0);

	if (sb[0x38] != 0x53 || sb[0x39] != 0xEF || log > 6)
		return 0; /* blocks of 1 KiB to 64 KiB */
	if (blocks > (UINT64_MAX >> (10 + log)))
		return 0;
	return blocks << (10 + log);
}

enum image_kind image__sniff_bytes(const uint8_t *buf, size_t len)
{
	struct mem_src m = { buf, len };

	/* s_magic 0xEF53, little-endian, at 1024 + 0x38. */
	if (len >= 1082 && buf[1080] == 0x53 && buf[1081] == 0xEF)
		return IMAGE_EXT4;
	return image__sniff_tar(mem_read, &m);
}

int image__parse_src(const char *src, enum image_kind *kind, char *path,
		     size_t pathsz, char *tag, size_t tagsz)
{
	static const struct {
		const char *prefix;
		enum image_kind kind;
	} pre[] = {
		{ "docker-archive:", IMAGE_DOCKER_ARCHIVE },
		{ "oci-archive:", IMAGE_OCI_ARCHIVE },
		{ "oci:", IMAGE_OCI_LAYOUT },
		{ "dir:", IMAGE_ROOT_DIR },
		{ "ext4:", IMAGE_EXT4 },
	};
	const char *slash, *colon;
	size_t plen;

	*kind = IMAGE_UNKNOWN;
	tag[0] = '\0';
	path[0] = '\0';
	for (size_t i = 0; i < sizeof(pre) / sizeof(pre[0]); i++) {
		size_t n = strlen(pre[i].prefix);

		if (!strncmp(src, pre[i].prefix, n)) {
			*kind = pre[i].kind;
			src += n;
			break;
		}
	}
	plen = strlen(src);
	/* A tag only for what may be an OCI layout: never inside a path. */
	slash = strrchr(src, '/');
	colon = strrchr(slash ? slash : src, ':');
	if (colon && (*kind == IMAGE_UNKNOWN || *kind == IMAGE_OCI_LAYOUT)) {
		size_t tlen = strlen(colon + 1);

		if (!tlen)
			return -EINVAL;
		if (tlen >= tagsz)
			return -ENAMETOOLONG;
		memcpy(tag, colon + 1, tlen + 1);
		plen = (size_t)(colon - src);
	}
	if (!plen)
		return -EINVAL;
	if (plen >= pathsz)
		return -ENAMETOOLONG;
	memcpy(path, src, plen);
	path[plen] = '\0';
	return 0;
}

int image__unpack_room(uint64_t free_bytes, const char *max_mib, uint64_t *room,
		       bool *capped, char *err, size_t errlen)
{
	uint64_t max = 0;

	*room = free_bytes / 2;
	*capped = false;
	if (!max_mib || !*max_mib)
		return 0;
	for (const char *c = max_mib; *c; c++) {
		if (*c < '0' || *c > '9' || max > (UINT64_MAX >> 20) / 10)
			return sandbox__errf(err, errlen, -EINVAL,
					     "%s=%.40s: not a number of MiB",
					     IMAGE_MAX_ENV, max_mib);
		max = max * 10 + (uint64_t)(*c - '0');
	}
	if (!max || max > (UINT64_MAX >> 20))
		return sandbox__errf(err, errlen, -EINVAL,
				     "%s=%.40s: not a number of MiB from 1",
				     IMAGE_MAX_ENV, max_mib);
	if ((max << 20) <= *room) {
		*room = max << 20;
		*capped = true;
	}
	return 0;
}
