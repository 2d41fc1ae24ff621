// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: kernel__load() and zeropage__build() on arbitrary
 * bytes.  Any crash, sanitizer report or out-of-RAM write is a bug.
 */
#include <stddef.h>
#include <stdint.h>

#include "boot/kernel.h"
#include "boot/layout.h"
#include "boot/zeropage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_RAM_BYTES (64 * LAYOUT_MiB)

/* Static so that 64 MiB is not cleared on every input; RAM may be dirty. */
static uint8_t ram[FUZZ_RAM_BYTES] __attribute__((aligned(4096)));

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct zeropage_cfg cfg = { .cmdline = "console=ttyS0" };
	struct kernel_image k;
	struct guest_mem m;
	uint64_t gpa;

	if (mem__wrap(&m, ram, sizeof(ram)))
		return 0;
	if (kernel__load(&m, data, size, &k))
		return 0;
	if (zeropage__initrd_place(&m, &k, 0x1000, &gpa) == 0) {
		cfg.initrd_gpa = gpa;
		cfg.initrd_size = 0x1000;
	}
	zeropage__build(&m, &k, &cfg);
	return 0;
}
