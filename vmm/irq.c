// SPDX-License-Identifier: Apache-2.0
/* In-kernel irqchip and interrupt lines (see irq.h). */
#include "irq.h"

#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

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

int irq__irqfd(int vm_fd, unsigned int gsi)
{
	struct kvm_irqfd irqfd = { .gsi = gsi };
	int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), ret;

	if (fd < 0) {
		ret = -errno;
		log_error("eventfd: %s", strerror(errno));
		return ret;
	}
	irqfd.fd = (uint32_t)fd;
	if (ioctl(vm_fd, KVM_IRQFD, &irqfd) < 0) {
		ret = -errno;
		log_error("KVM_IRQFD gsi %u: %s", gsi, strerror(errno));
		close(fd);
		return ret;
	}
	return fd;
}

static void irq__irqfd_set(void *opaque, unsigned int gsi, int level)
{
	const int *efd = opaque;
	uint64_t one = 1;

	(void)gsi;
	if (level && write(*efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("irqfd write: %s", strerror(errno));
}

struct irq_line irq__irqfd_line(int *efd, unsigned int gsi)
{
	return (struct irq_line){ .set = irq__irqfd_set,
				  .opaque = efd,
				  .gsi = gsi };
}
