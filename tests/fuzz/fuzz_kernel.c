// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: kernel__load() and zeropage__build() on arbitrary
 * bytes.  Any crash, sanitizer report or out-of-RAM write is a bug.
 *
 * Inputs whose first byte is odd are made into bzImages first: the boot
 * sector's magic, "HdrS", a 2.12+ version and XLF_KERNEL_64 are forced
 * and every other setup_header field (setup_sects, syssize, the payload,
 * init_size, pref_address, the header's length) and the file's length
 * stay the fuzzer's, so that it spends its time in the size checks
 * instead of searching for the magic.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "boot/kernel.h"
#include "boot/layout.h"
#include "boot/zeropage.h"
#include "devices/le.h"
#include "vmm/mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_RAM_BYTES (64 * LAYOUT_MiB)
#define FUZZ_BZ_MAX    (256 * 1024)
#define HDR(f)	       (0x1f1 + offsetof(struct setup_header, f))

/* Static so that 64 MiB is not cleared on every input; RAM may be dirty. */
static uint8_t ram[FUZZ_RAM_BYTES] __attribute__((aligned(4096)));
static uint8_t bz[FUZZ_BZ_MAX];

/* @data without its mode byte, as a bzImage in bz[]; returns its length. */
static size_t make_bzimage(const uint8_t *data, size_t size)
{
	uint16_t version;

	if (size > FUZZ_BZ_MAX)
		size = FUZZ_BZ_MAX;
	if (size < HDR(xloadflags) + 2)
		return 0;
	memcpy(bz, data, size);
	le__put16(bz + HDR(boot_flag), 0xaa55);
	le__put32(bz + HDR(header), 0x53726448);
	version = le__get16(bz + HDR(version));
	if (version < 0x020c)
		le__put16(bz + HDR(version), 0x020c);
	le__put16(bz + HDR(xloadflags),
		  le__get16(bz + HDR(xloadflags)) | XLF_KERNEL_64);
	return size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct zeropage_cfg cfg = { .cmdline = "console=ttyS0" };
	struct kernel_image k;
	struct guest_mem m;
	uint64_t gpa;

	if (mem__wrap(&m, ram, sizeof(ram)))
		return 0;
	if (size && (data[0] & 1)) {
		size = make_bzimage(data + 1, size - 1);
		data = bz;
	}
	if (kernel__load(&m, data, size, &k))
		return 0;
	if (zeropage__initrd_place(&m, &k, 0x1000, &gpa) == 0) {
		cfg.initrd_gpa = gpa;
		cfg.initrd_size = 0x1000;
	}
	zeropage__build(&m, &k, &cfg);
	return 0;
}
