/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Interrupts: KVM's in-kernel irqchip (8259 PICs, IOAPIC, LAPICs) and PIT,
 * and the lines devices drive (Documentation/virt/kvm/api.rst:
 * KVM_CREATE_IRQCHIP, KVM_CREATE_PIT2, KVM_IRQ_LINE).
 */
#ifndef EMBER_VMM_IRQ_H
#define EMBER_VMM_IRQ_H

#include "../devices/device.h"

/*
 * irq__create_chip() - create the in-kernel irqchip and the PIT (with a
 * dummy speaker port) on VM @vm_fd.  Returns 0 or a negative errno
 * (logged).
 */
int irq__create_chip(int vm_fd);

/*
 * irq__line() - a struct irq_line driving IOAPIC pin @gsi (0-23) of VM
 * @vm_fd through KVM_IRQ_LINE.  @vm_fd must outlive the line's use.
 */
struct irq_line irq__line(int *vm_fd, unsigned int gsi);

/*
 * irq__irqfd() - an eventfd bound to IOAPIC pin @gsi with KVM_IRQFD, so a
 * device raises its interrupt without an ioctl (an edge on the pin per
 * write).  Returns the eventfd (the caller closes it after the VM is
 * gone) or -errno (logged).
 */
int irq__irqfd(int vm_fd, unsigned int gsi);

/*
 * irq__irqfd_line() - a struct irq_line that writes eventfd *@efd when its
 * level rises (a falling level needs nothing for an edge-triggered pin).
 * *@efd must outlive the line's use.
 */
struct irq_line irq__irqfd_line(int *efd, unsigned int gsi);

#endif /* EMBER_VMM_IRQ_H */
