/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared helpers for the cmocka unit tests: a guest-RAM fixture and
 * little-endian field readers/writers.  Header-only (static inline), so
 * the Makefile's tests/unit/test_*.c wildcard does not pick it up.
 */
#ifndef EMBER_TESTS_UNIT_TEST_UTIL_H
#define EMBER_TESTS_UNIT_TEST_UTIL_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../devices/le.h"
#include "../../vmm/mem.h"

/*
 * A malloc'd guest RAM buffer wrapped as guest memory from GPA 0.  A test's
 * own fixture may embed one as its FIRST member and be allocated with
 * test_ram__new_in(), so that a pointer to the fixture is also a pointer to
 * its struct test_ram (C11 6.7.2.1p15) and test_ram__teardown() frees both.
 */
struct test_ram {
	struct guest_mem m;
	uint8_t *ram;
	size_t bytes;
};

/*
 * Allocate a zeroed object of @size bytes (>= sizeof(struct test_ram)) that
 * starts with a struct test_ram, and give it @bytes of guest RAM with every
 * byte set to @fill.  Returns the object, or NULL on failure.
 */
static inline void *test_ram__new_in(size_t size, size_t bytes, uint8_t fill)
{
	struct test_ram *r;

	if (size < sizeof(*r))
		return NULL;
	r = calloc(1, size);
	if (!r)
		return NULL;
	r->ram = malloc(bytes);
	if (!r->ram || mem__wrap(&r->m, r->ram, bytes)) {
		free(r->ram);
		free(r);
		return NULL;
	}
	memset(r->ram, fill, bytes);
	r->bytes = bytes;
	return r;
}

/* A bare struct test_ram with @bytes of RAM set to @fill; NULL on failure. */
static inline struct test_ram *test_ram__new(size_t bytes, uint8_t fill)
{
	return test_ram__new_in(sizeof(struct test_ram), bytes, fill);
}

/* Free a test_ram__new{,_in}() result and its RAM; NULL is a no-op. */
static inline void test_ram__free(struct test_ram *r)
{
	if (!r)
		return;
	free(r->ram);
	free(r);
}

/* cmocka teardown for a *state set from test_ram__new{,_in}(). */
static inline int test_ram__teardown(void **state)
{
	test_ram__free(*state);
	return 0;
}

/* Read a little-endian 16-bit value at @p + @off (unaligned is fine). */
static inline uint16_t rd16(const uint8_t *p, size_t off)
{
	return le__get16(p + off);
}

/* Read a little-endian 32-bit value at @p + @off (unaligned is fine). */
static inline uint32_t rd32(const uint8_t *p, size_t off)
{
	return le__get32(p + off);
}

/* Read a little-endian 64-bit value at @p + @off (unaligned is fine). */
static inline uint64_t rd64(const uint8_t *p, size_t off)
{
	return le__get64(p + off);
}

/* Store @v little-endian as 16 bits at @p + @off (unaligned is fine). */
static inline void wr16(uint8_t *p, size_t off, uint16_t v)
{
	le__put16(p + off, v);
}

/* Store @v little-endian as 32 bits at @p + @off (unaligned is fine). */
static inline void wr32(uint8_t *p, size_t off, uint32_t v)
{
	le__put32(p + off, v);
}

/* Store @v little-endian as 64 bits at @p + @off (unaligned is fine). */
static inline void wr64(uint8_t *p, size_t off, uint64_t v)
{
	le__put64(p + off, v);
}

#endif /* EMBER_TESTS_UNIT_TEST_UTIL_H */
