// SPDX-License-Identifier: Apache-2.0
/* UTF-8 for JSON strings (utf8.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/*
 * The length of the valid UTF-8 sequence at @s (@len bytes left), or 0:
 * shortest forms only, no surrogates, nothing past U+10FFFF, no NUL.
 */
static size_t utf8_seq(const unsigned char *s, size_t len)
{
	unsigned char c = s[0];
	size_t n;
	uint32_t cp;

	if (c == 0)
		return 0;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

bool utf8__ok(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n;

	while (i < len) {
		n = utf8_seq(p + i, len - i);
		if (!n)
			return false;
		i += n;
	}
	return true;
}

json_t *utf8__json(const char *s, size_t len)
{
	static const char repl[] = "\xef\xbf\xbd"; /* U+FFFD */
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, o = 0, n;
	json_t *j;
	char *buf;

	if (utf8__ok(s, len))
		return json_stringn(s, len);
	if (len > SIZE_MAX / 3)
		return NULL;
	buf = malloc(len * 3 + 1);
	if (!buf)
		return NULL;
	while (i < len) {
		n = utf8_seq(p + i, len - i);
		if (n) {
			memcpy(buf + o, p + i, n);
			o += n;
			i += n;
		} else {
			memcpy(buf + o, repl, 3);
			o += 3;
			i++;
		}
	}
	j = json_stringn(buf, o);
	free(buf);
	return j;
}
