// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the image code's parsers of untrusted bytes
 * (api/sandbox/image.h): the first byte picks one.
 *   0  image__sniff_bytes() on the rest (a tar walk, the ext4 magic)
 *   1  image_config__parse() on the rest as an OCI config's JSON, and
 *      image__defaults() from what it parsed
 *   2  image__parse_src() on the rest as a NUL-terminated SRC
 *   3  image__ext4_bytes() on the rest as a superblock (>= 1024 bytes)
 *   4  image_tar__feed() on the rest as two layers, fed in chunks of
 *      1 + data[1] bytes (the scan of device nodes and security xattrs)
 *   5  image__user_add() on the rest as /etc/passwd, a NUL, /etc/group
 *   6  image__defaults_parse() on the rest as a defaults file read back
 *      from a disk, then image__defaults() from what it parsed
 * Oracle: the sanitizers; a parsed config is freed whole (LeakSanitizer).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/sandbox/image.h"
#include "api/sandbox/image_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The defaults file written back from what a parser made of the input. */
static void encode(const struct image_config *c)
{
	char err[256], *s;
	size_t len;

	if (!image__defaults(c, NULL, &s, &len, err, sizeof(err)))
		free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct image_config c;
	char err[256], path[256], tag[64];
	enum image_kind k;
	char *s;

	if (!size)
		return 0;
	switch (data[0] % 7) {
	case 0:
		image__sniff_bytes(data + 1, size - 1);
		break;
	case 1:
		memset(&c, 0, sizeof(c));
		if (!image_config__parse((const char *)data + 1, size - 1, &c,
					 err, sizeof(err)))
			encode(&c);
		image_config__free(&c);
		break;
	case 2:
		s = strndup((const char *)data + 1, size - 1);
		if (s)
			image__parse_src(s, &k, path, sizeof(path), tag,
					 sizeof(tag));
		free(s);
		break;
	case 3:
		if (size > 1024)
			image__ext4_bytes(data + 1);
		break;
	case 6:
		memset(&c, 0, sizeof(c));
		if (!image__defaults_parse(data + 1, size - 1, &c, err,
					   sizeof(err)))
			encode(&c);
		image_config__free(&c);
		break;
	case 5:
		s = malloc(size + 1);
		if (s) {
			char *pw, *gr, *group;
			uint32_t uid, gid;

			memcpy(s, data + 1, size - 1);
			s[size - 1] = s[size] = '\0';
			group = s + strlen(s) + 1;
			if (group > s + size - 1)
				group = NULL;
			if (!image__user_add(s, group, "user", "/home/user",
					     "/bin/sh", &pw, &gr, &uid, &gid)) {
				free(pw);
				free(gr);
			}
			free(s);
		}
		break;
	case 4:
		if (size > 2) {
			struct image_tar t;
			size_t chunk = 1 + data[1], half = (size - 2) / 2;

			image_tar__init(&t);
			for (size_t o = 0; o < size - 2; o += chunk) {
				size_t n = size - 2 - o < chunk ? size - 2 - o :
								  chunk;

				if (o <= half && o + n > half) {
					image_tar__feed(&t, data + 2 + o,
							half - o);
					image_tar__next_layer(&t);
					image_tar__feed(&t, data + 2 + half,
							o + n - half);
				} else {
					image_tar__feed(&t, data + 2 + o, n);
				}
			}
			image_tar__free(&t);
		}
		break;
	}
	return 0;
}
