// SPDX-License-Identifier: Apache-2.0
/* In-kernel irqchip and interrupt lines (see irq.h). */
#include "irq.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

#include <linux/kvm.h>

#include "log.h"

int irq__create_chip(int vm_fd)
{
	struct kvm_pit_config pit = { .flags = KVM_PIT_SPEAKER_DUMMY };

	if (ioctl(vm_fd, KVM_CREATE_IRQCHIP, 0) < 0) {
		log_error("KVM_CREATE_IRQCHIP: %s", strerror(errno));
		return -errno;
	}
	if (ioctl(vm_fd, KVM_CREATE_PIT2, &pit) < 0) {
		log_error("KVM_CREATE_PIT2: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

static void irq__set(void *opaque, unsigned int gsi, int level)
{
	const int *vm_fd = opaque;
	struct kvm_irq_level irq = { .irq = gsi, .level = (uint32_t)level };

	if (ioctl(*vm_fd, KVM_IRQ_LINE, &irq) < 0)
		log_warn("KVM_IRQ_LINE %u: %s", gsi, strerror(errno));
}

struct irq_line irq__line(int *vm_fd, unsigned int gsi)
{
	return (struct irq_line){ .set = irq__set,
				  .opaque = vm_fd,
				  .gsi = gsi };
}
