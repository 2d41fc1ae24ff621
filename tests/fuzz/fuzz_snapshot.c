// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the snapshot formats on arbitrary bytes.  Any crash,
 * sanitizer report, write outside the RAM ranges or broken invariant
 * (__builtin_trap) is a bug.
 *
 * The first byte is a mode:
 *   bit 0  as a state file: parsed, then every section read with value
 *          types chosen by the input; a file that parses is rebuilt with
 *          snap_buf and must come out byte for byte the same.
 *   bit 1  force the state header (magic, version, architecture, size)
 *          and the CRC, so that the fuzzer spends its time in the section
 *          checks instead of searching for a CRC.
 *   bit 2  as a compressed memory file in a memfd, read into two small
 *          ranges (1 MiB + 64 KiB: two chunks, the first across both).
 *   bit 3  force the memory file's header to match those ranges.
 *   bit 4  read with a page selection taken from the input.
 * Neither bit 0 nor bit 2: both.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "snapshot/memfile.h"
#include "snapshot/state.h"
#include "devices/le.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define R0_PAGES  200
#define R1_PAGES  72
#define RAM_PAGES (R0_PAGES + R1_PAGES)

/* Separate objects, so that ASan sees a write past either range. */
static uint8_t r0[R0_PAGES * MEMFILE_PAGE];
static uint8_t r1[R1_PAGES * MEMFILE_PAGE];
static uint8_t copy[SNAP_STATE_MAX / 64];
static int mfd = -1;

/* Reads the whole section with types picked from @ops (@nops bytes). */
static void read_section(struct snap_cur *c, const uint8_t *ops, size_t nops)
{
	char str[24];
	uint8_t buf[16];
	size_t i, n = 0;

	for (i = 0; !c->err && c->off < c->len && n < 4096; i++, n++) {
		uint8_t op = nops ? ops[i % nops] : 0;

		switch (op & 7) {
		case 0:
			snap_cur__u8(c);
			break;
		case 1:
			snap_cur__u16(c);
			break;
		case 2:
			snap_cur__u32(c);
			break;
		case 3:
			snap_cur__u64(c);
			break;
		case 4:
			snap_cur__bytes(c, buf, (op >> 3) % sizeof(buf));
			break;
		case 5:
			if (!snap_cur__ptr(c, op >> 3) && !c->err)
				__builtin_trap();
			break;
		case 6:
			snap_cur__str(c, str, (op >> 3) % sizeof(str));
			if (strlen(str) >= sizeof(str))
				__builtin_trap();
			break;
		default:
			if (op & 0x80)
				snap_cur__fail(c);
			else
				snap_cur__u32(c);
			break;
		}
	}
	/* The rest in one go: then the section was read whole. */
	if (!c->err && (!snap_cur__ptr(c, c->len - c->off) || snap_cur__end(c)))
		__builtin_trap();
	/* Past the end: zeroes, and the error sticks. */
	if (snap_cur__u64(c) != 0 || !c->err || !snap_cur__end(c))
		__builtin_trap();
}

static void fuzz_state(const uint8_t *d, size_t size, bool fix)
{
	char why[256], name[SNAP_NAME_MAX + 1];
	struct snap_state s;
	struct snap_cur c, f;
	struct snap_buf b;
	const uint8_t *in = d;
	size_t it = 0;
	unsigned int n = 0;

	if (fix && size >= SNAP_HEADER_BYTES + 4 && size <= sizeof(copy)) {
		memcpy(copy, d, size);
		memcpy(copy, SNAP_MAGIC, 8);
		le__put32(copy + 8, SNAP_FORMAT_VERSION);
		le__put32(copy + 12, SNAP_ARCH_X86_64);
		le__put64(copy + 16, size);
		le__put32(copy + size - 4,
			  (uint32_t)crc32(crc32(0, Z_NULL, 0), copy,
					  (uInt)(size - 4)));
		in = copy;
	}
	if (snap_state__parse(&s, in, size, why, sizeof(why))) {
		if (!why[0] || strlen(why) >= sizeof(why))
			__builtin_trap();
		return;
	}
	snap_buf__init(&b);
	while (snap_state__next(&s, &it, name, &c)) {
		n++;
		/* Each name finds its own section. */
		if (snap_state__find(&s, name, &f) || f.p != c.p ||
		    f.len != c.len)
			__builtin_trap();
		snap_buf__section(&b, name, c.version);
		snap_buf__bytes(&b, c.p, c.len);
		read_section(&c, in, size);
	}
	if (n != s.nr_sections || snap_buf__finish(&b) || b.len != size ||
	    memcmp(b.data, in, size))
		__builtin_trap();
	snap_buf__free(&b);
}

static void fuzz_memfile(const uint8_t *d, size_t size, bool fix, bool sel)
{
	struct memfile_range r[2] = { { r0, sizeof(r0) }, { r1, sizeof(r1) } };
	uint64_t bm[(RAM_PAGES + 63) / 64], ram;
	uint8_t hdr[32];
	char why[256];
	size_t i;
	bool z;

	if (mfd < 0) {
		mfd = memfd_create("fuzz_snapshot", MFD_CLOEXEC);
		if (mfd < 0)
			abort();
	}
	if (ftruncate(mfd, 0) ||
	    (size && pwrite(mfd, d, size, 0) != (ssize_t)size))
		abort();
	if (fix && size >= sizeof(hdr)) {
		memcpy(hdr, MEMFILE_MAGIC_Z, 8);
		le__put32(hdr + 8, 1);
		le__put32(hdr + 12, MEMFILE_CHUNK);
		le__put64(hdr + 16, (uint64_t)RAM_PAGES * MEMFILE_PAGE);
		le__put64(hdr + 24, 2);
		if (pwrite(mfd, hdr, sizeof(hdr), 0) != sizeof(hdr))
			abort();
	}
	for (i = 0; i < sizeof(bm) / sizeof(bm[0]); i++) {
		bm[i] = 0;
		if (size)
			bm[i] = (uint64_t)d[i % size] * 0x0101010101010101ull;
	}
	why[0] = '\0';
	if (memfile__probe(mfd, &z, &ram, why, sizeof(why))) {
		if (!why[0])
			__builtin_trap();
		return;
	}
	if (memfile__read(mfd, r, 2, sel ? bm : NULL, why, sizeof(why)) &&
	    !why[0])
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t mode;

	if (!size)
		return 0;
	mode = data[0];
	data++;
	size--;
	if (!(mode & 5))
		mode |= 5;
	if (mode & 1)
		fuzz_state(data, size, mode & 2);
	if (mode & 4)
		fuzz_memfile(data, size, mode & 8, mode & 16);
	return 0;
}
