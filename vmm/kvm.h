/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The KVM VM: /dev/kvm and the VM fd, the capabilities ember needs, the
 * x86 set-up (TSS and identity-map pages, in-kernel irqchip and PIT),
 * guest RAM as memslots, ioeventfds and irqfds, and the TSC rate
 * (Documentation/virt/kvm/api.rst).  The only module besides vcpu.c and
 * irq.c that issues VM ioctls.
 */
#ifndef EMBER_VMM_KVM_H
#define EMBER_VMM_KVM_H

#include <stdint.h>

struct guest_mem;

struct kvm_vm {
	int kvm_fd; /* /dev/kvm; -1 when closed */
	int vm_fd; /* KVM_CREATE_VM; -1 when closed */
};

/*
 * kvm__open() - open /dev/kvm, check the API version and the capabilities
 * ember needs (irqchip, user memory, TSS address, PIT2, immediate_exit,
 * extended CPUID).  Returns 0, or a negative errno after one error line
 * naming the problem (no KVM, no permission, a missing capability).
 */
int kvm__open(struct kvm_vm *k);

/*
 * kvm__create_vm() - create the VM on @k, its TSS and identity-map pages
 * (boot/layout.h), the in-kernel irqchip and PIT, and one memslot per
 * region of @m (not owned; must outlive the VM).  Returns 0 or a negative
 * errno (logged).
 */
int kvm__create_vm(struct kvm_vm *k, const struct guest_mem *m);

/*
 * kvm__ioeventfd() - an eventfd KVM signals, instead of exiting, when the
 * guest writes @len bytes equal to @datamatch at guest-physical @gpa (MMIO).
 * Returns the eventfd (non-blocking; the caller closes it after the VM) or
 * a negative errno (logged).
 */
int kvm__ioeventfd(const struct kvm_vm *k, uint64_t gpa, uint32_t len,
		   uint64_t datamatch);

/*
 * kvm__tsc_khz() - the TSC rate KVM gives vCPU @vcpu_fd, in kHz; 0 when
 * unknown.
 */
uint32_t kvm__tsc_khz(int vcpu_fd);

/* kvm__close() - close the VM and /dev/kvm (guest RAM is the caller's). */
void kvm__close(struct kvm_vm *k);

#endif /* EMBER_VMM_KVM_H */
