// SPDX-License-Identifier: Apache-2.0
/* Base64, RFC 4648 section 4: see base64.h. */
#include <errno.h>
#include <stdint.h>

#include "base64.h"

static const char alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t base64__encode(const void *src, size_t n, char *dst)
{
	const uint8_t *s = src;
	size_t i, o = 0;

	for (i = 0; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 |
			     s[i + 2];

		dst[o++] = alphabet[v >> 18];
		dst[o++] = alphabet[(v >> 12) & 63];
		dst[o++] = alphabet[(v >> 6) & 63];
		dst[o++] = alphabet[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)s[i] << 16 |
			     (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0);

		dst[o++] = alphabet[v >> 18];
		dst[o++] = alphabet[(v >> 12) & 63];
		dst[o++] = i + 1 < n ? alphabet[(v >> 6) & 63] : '=';
		dst[o++] = '=';
	}
	dst[o] = '\0';
	return o;
}

/* The sextet of @c, -1 for padding, -2 for white space, -3 otherwise. */
static int sextet(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	if (c == '=')
		return -1;
	if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
		return -2;
	return -3;
}

ssize_t base64__decode(const char *src, size_t n, void *dst)
{
	uint8_t *d = dst;
	uint32_t acc = 0;
	size_t i, o = 0;
	int have = 0, pad = 0;

	for (i = 0; i < n; i++) {
		int v = sextet(src[i]);

		if (v == -2)
			continue;
		if (v == -3)
			return -EINVAL;
		if (v == -1) {
			/* "xx==" or "xxx=": only after 2 or 3 sextets. */
			if (have < 2 && !pad)
				return -EINVAL;
			pad++;
			if (pad > 2)
				return -EINVAL;
			continue;
		}
		if (pad)
			return -EINVAL; /* data after padding */
		acc = acc << 6 | (uint32_t)v;
		if (++have == 4) {
			d[o++] = (uint8_t)(acc >> 16);
			d[o++] = (uint8_t)(acc >> 8);
			d[o++] = (uint8_t)acc;
			acc = 0;
			have = 0;
		}
	}
	if (have == 1 || (pad && pad != 4 - have))
		return -EINVAL;
	if (have == 2) {
		d[o++] = (uint8_t)(acc >> 4);
	} else if (have == 3) {
		d[o++] = (uint8_t)(acc >> 10);
		d[o++] = (uint8_t)(acc >> 2);
	}
	return (ssize_t)o;
}
