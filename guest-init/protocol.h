/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one header the host (ember) and the guest side (guest-init/) share.
 * It holds the guest-visible addresses and encodings of ember's own devices
 * and of the boot-time command hand-over.  Freestanding: no libc needed.
 */
#ifndef EMBER_GUEST_PROTOCOL_H
#define EMBER_GUEST_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

/*
 * Firecracker's boot timer: the guest writes the byte 123 at this
 * guest-physical address as soon as its init starts.  Same address and
 * value as Firecracker (MMIO_MEM_START, MAGIC_VALUE_SIGNAL_GUEST_BOOT_COMPLETE).
 */
#define EMBER_BOOT_TIMER_GPA   0xd0000000ULL
#define EMBER_BOOT_TIMER_MAGIC 123

/*
 * ember's exit-status device: one page of MMIO.  The guest writes a 32-bit
 * little-endian status to offset 0 (0-255, the shell's convention: 128+N
 * for signal N) once its filesystems are synced: ember ends the VM right
 * then and exits with that status.
 */
#define EMBER_EXIT_STATUS_GPA  0xd0001000ULL
#define EMBER_EXIT_STATUS_SIZE 0x1000ULL

/*
 * The command given by `ember --run CMD` travels on the kernel command line
 * as `ember.run=<base64url of CMD, no padding>`; guest init decodes it from
 * /proc/cmdline and runs it with /bin/sh -c.  Any bytes survive (a NUL byte
 * ends the command, as for any shell string).
 */
#define EMBER_RUN_PARAM "ember.run="

static const char ember_b64_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Length of the encoding of @len bytes, without a terminating NUL. */
static inline size_t ember_b64_encoded_len(size_t len)
{
	return len / 3 * 4 + (len % 3 ? len % 3 + 1 : 0);
}

/*
 * Encode @len bytes of @in as base64url without padding into @out, which
 * has room for @outsz bytes including the NUL.  Returns the encoded length,
 * or -1 if @out is too small.
 */
static inline long ember_b64_encode(const void *in, size_t len, char *out,
				    size_t outsz)
{
	const uint8_t *p = in;
	size_t need = ember_b64_encoded_len(len), i, o = 0;

	if (need >= outsz)
		return -1;
	for (i = 0; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 |
			     p[i + 2];

		out[o++] = ember_b64_alphabet[v >> 18 & 63];
		out[o++] = ember_b64_alphabet[v >> 12 & 63];
		out[o++] = ember_b64_alphabet[v >> 6 & 63];
		out[o++] = ember_b64_alphabet[v & 63];
	}
	if (len - i == 1) {
		uint32_t v = (uint32_t)p[i] << 16;

		out[o++] = ember_b64_alphabet[v >> 18 & 63];
		out[o++] = ember_b64_alphabet[v >> 12 & 63];
	} else if (len - i == 2) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;

		out[o++] = ember_b64_alphabet[v >> 18 & 63];
		out[o++] = ember_b64_alphabet[v >> 12 & 63];
		out[o++] = ember_b64_alphabet[v >> 6 & 63];
	}
	out[o] = '\0';
	return (long)o;
}

static inline int ember_b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return -1;
}

/*
 * Decode @len characters of base64url (no padding) from @in into @out
 * (room for @outsz bytes).  Returns the decoded length, or -1 on a bad
 * character, a bad length (len % 4 == 1) or a too small @out.
 */
static inline long ember_b64_decode(const char *in, size_t len, void *out,
				    size_t outsz)
{
	uint8_t *q = out;
	size_t i, o = 0;
	uint32_t acc = 0;
	int bits = 0;

	if (len % 4 == 1)
		return -1;
	for (i = 0; i < len; i++) {
		int v = ember_b64_value(in[i]);

		if (v < 0)
			return -1;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o >= outsz)
				return -1;
			q[o++] = (uint8_t)(acc >> bits);
		}
	}
	return (long)o;
}

#endif /* EMBER_GUEST_PROTOCOL_H */
