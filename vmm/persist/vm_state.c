// SPDX-License-Identifier: Apache-2.0
/* The VM-wide KVM state in a snapshot: irqchip, PIT, clock (parts.h). */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

#include <linux/kvm.h>

#include "../log.h"
#include "parts.h"

static int vm_state__fail(const char *what)
{
	int ret = errno ? -errno : -EIO;

	log_error("%s: %s", what, strerror(errno));
	return ret;
}

int vm_state__save(int vm_fd, struct snap_buf *b)
{
	struct kvm_irqchip chip;
	struct kvm_pit_state2 pit;
	struct kvm_clock_data clock;
	unsigned int i;

	for (i = 0; i < 3; i++) {
		memset(&chip, 0, sizeof(chip));
		chip.chip_id = i; /* PIC master, PIC slave, IOAPIC */
		if (ioctl(vm_fd, KVM_GET_IRQCHIP, &chip) < 0)
			return vm_state__fail("KVM_GET_IRQCHIP");
		snap_buf__u32(b, sizeof(chip));
		snap_buf__bytes(b, &chip, sizeof(chip));
	}
	if (ioctl(vm_fd, KVM_GET_PIT2, &pit) < 0)
		return vm_state__fail("KVM_GET_PIT2");
	snap_buf__u32(b, sizeof(pit));
	snap_buf__bytes(b, &pit, sizeof(pit));
	memset(&clock, 0, sizeof(clock));
	if (ioctl(vm_fd, KVM_GET_CLOCK, &clock) < 0)
		return vm_state__fail("KVM_GET_CLOCK");
	snap_buf__u64(b, clock.clock);
	return 0;
}

static void vm_state__get(struct snap_cur *c, void *p, size_t n)
{
	if (snap_cur__u32(c) != n)
		snap_cur__fail(c);
	snap_cur__bytes(c, p, n);
}

int vm_state__restore(int vm_fd, struct snap_cur *c)
{
	struct kvm_irqchip chip[3];
	struct kvm_pit_state2 pit;
	struct kvm_clock_data clock;
	unsigned int i;

	for (i = 0; i < 3; i++) {
		vm_state__get(c, &chip[i], sizeof(chip[i]));
		if (chip[i].chip_id != i)
			snap_cur__fail(c);
	}
	vm_state__get(c, &pit, sizeof(pit));
	memset(&clock, 0, sizeof(clock));
	clock.clock = snap_cur__u64(c);
	if (snap_cur__end(c)) {
		log_error("snapshot: section vm is malformed");
		return -EINVAL;
	}
	for (i = 0; i < 3; i++)
		if (ioctl(vm_fd, KVM_SET_IRQCHIP, &chip[i]) < 0)
			return vm_state__fail("KVM_SET_IRQCHIP");
	if (ioctl(vm_fd, KVM_SET_PIT2, &pit) < 0)
		return vm_state__fail("KVM_SET_PIT2");
	/* kvm-clock continues from where it was (flags: none). */
	if (ioctl(vm_fd, KVM_SET_CLOCK, &clock) < 0)
		return vm_state__fail("KVM_SET_CLOCK");
	return 0;
}
