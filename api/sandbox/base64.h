/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Base64 (RFC 4648 section 4, the standard alphabet with '=' padding), for
 * the binary parts of JSON: the code interpreter's PNG images and files
 * moved as text.
 */
#ifndef EMBER_API_BASE64_H
#define EMBER_API_BASE64_H

#include <stddef.h>
#include <sys/types.h>

/* Bytes base64__encode() writes for @n input bytes, its NUL included. */
#define BASE64_ENCODED_SIZE(n) ((((n) + 2) / 3) * 4 + 1)

/*
 * Encode the @n bytes at @src into @dst (BASE64_ENCODED_SIZE(@n) bytes),
 * NUL-terminated, padded.  Returns the length written, NUL not counted.
 */
size_t base64__encode(const void *src, size_t n, char *dst);

/*
 * Decode the @n characters at @src into @dst (room for @n / 4 * 3 + 3
 * bytes).  Padding is optional; ASCII white space (line breaks of MIME
 * bodies) is skipped.  Returns the bytes written, or -EINVAL for any
 * other character, misplaced padding or a lone trailing sixth.
 */
ssize_t base64__decode(const char *src, size_t n, void *dst);

#endif /* EMBER_API_BASE64_H */
