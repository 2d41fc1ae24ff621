// SPDX-License-Identifier: Apache-2.0
/*
 * Reads and writes virtio-mmio registers of slot 0 (the virtio-rng, with no
 * drives) in a long loop while the test pauses and resumes the VM through
 * the control socket: a pause must land between accesses, or complete the
 * one in flight (KVM_RUN with immediate_exit finishes a pending MMIO read),
 * and never lose or garble one.  Every read is checked; returns 0 when all
 * of them were right, 1 and the iteration otherwise.
 */
#include "guest.h"
#include "virtio.h"

#define POLL_ROUNDS 150000

int guest_main(void)
{
	u64 base = virtio_slot(0), i;

	if (!virtio_probe(base, 4)) {
		puts("mmio_poll: no virtio-rng in slot 0\n");
		return 2;
	}
	for (i = 0; i < POLL_ROUNDS; i++) {
		u32 sel = (u32)(i & 1);

		/* A write, then reads, one of them depending on it. */
		vio_wr(base, VIO_DEV_FEATURES_SEL, sel);
		if (vio_rd(base, VIO_MAGIC) != VIRTIO_MAGIC ||
		    vio_rd(base, VIO_VERSION) != 2 ||
		    vio_rd(base, VIO_DEVICE_ID) != 4 ||
		    /* Feature bits 32-63 hold VERSION_1 (bit 32): 1. */
		    (vio_rd(base, VIO_DEV_FEATURES) & 1) != sel) {
			puts("mmio_poll: a wrong value at round ");
			put_hex(i);
			puts("\n");
			return 1;
		}
		if (i % 50000 == 0) {
			puts("mmio_poll: round ");
			put_hex(i);
			puts("\n");
		}
	}
	puts("mmio_poll: all reads right\n");
	return 0;
}
