// SPDX-License-Identifier: Apache-2.0
/*
 * Base64, RFC 4648 section 4: see base64.h.  The codec is the one
 * guest-init/protocol.h gives host and guest, here with the standard
 * alphabet and '=' padding.
 */
#include <errno.h>

#include "../../guest-init/protocol.h"
#include "base64.h"

size_t base64__encode(const void *src, size_t n, char *dst)
{
	return ember_b64_encode_with(src, n, dst, ember_b64std_alphabet, 1);
}

ssize_t base64__decode(const char *src, size_t n, void *dst)
{
	long got = ember_b64_decode_with(src, n, dst, n / 4 * 3 + 3,
					 ember_b64std_alphabet, 1);

	return got < 0 ? -EINVAL : (ssize_t)got;
}
