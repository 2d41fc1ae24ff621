/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One vCPU: its KVM fd and kvm_run page, its boot state (Linux 64-bit boot
 * protocol register state), and the thread that runs KVM_RUN and
 * dispatches exits to the buses.
 */
#ifndef EMBER_VMM_VCPU_H
#define EMBER_VMM_VCPU_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <linux/kvm.h>

struct vm;

struct vcpu {
	struct vm *vm;
	unsigned int id;
	int fd;
	struct kvm_run *run;
	size_t run_size;
	pthread_t thread;
	bool started;
};

/*
 * vcpu__create() - KVM_CREATE_VCPU @id, map its kvm_run, set CPUID (the
 * template of cpuid.h), MSRs and LAPIC LINT0/LINT1.
 * Returns 0 or a negative errno (logged).
 */
int vcpu__create(struct vm *vm, unsigned int id, struct vcpu *v);

/*
 * vcpu__set_boot_state() - for the boot vCPU, once the kernel is loaded:
 * write the GDT and page tables and set the Linux 64-bit boot protocol
 * entry state (boot.rst): long mode, flat __BOOT_CS/__BOOT_DS, RIP at
 * vm->entry, RSI at the zero page.  Returns 0 or a negative errno (logged).
 */
int vcpu__set_boot_state(struct vcpu *v);

/* vcpu__start() - start the KVM_RUN thread.  Returns 0 or -errno. */
int vcpu__start(struct vcpu *v);

/* vcpu__kick() - make the thread leave KVM_RUN (signal + immediate_exit). */
void vcpu__kick(struct vcpu *v);

/* vcpu__destroy() - join the thread if started, unmap and close. */
void vcpu__destroy(struct vcpu *v);

/* vcpu__dump() - log the registers (for fatal errors). */
void vcpu__dump(struct vcpu *v);

#endif /* EMBER_VMM_VCPU_H */
