/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Little-endian values at any alignment: what virtio structures, device
 * config space, x86 boot images and ember's snapshot files hold.  Ground
 * floor: includes only libc, usable from devices/, boot/, snapshot/ and
 * vmm/ alike.
 */
#ifndef EMBER_DEVICES_LE_H
#define EMBER_DEVICES_LE_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

/*
 * le__get16/32/64() - the value at @p; @p must point to 2, 4 or 8
 * readable bytes (a guest range checked by guest_mem__ptr(), or a host
 * buffer).
 */
static inline uint16_t le__get16(const void *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return le16toh(v);
}

static inline uint32_t le__get32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static inline uint64_t le__get64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

/* le__put16/32/64() - store @v at @p, which has 2, 4 or 8 writable bytes. */
static inline void le__put16(void *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void le__put32(void *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void le__put64(void *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

#endif /* EMBER_DEVICES_LE_H */
