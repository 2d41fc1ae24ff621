/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The builder: a configuration becomes a VM, ready to start.  First the
 * host side, which needs no KVM: it maps guest RAM, loads the kernel and
 * initrd into it, opens the console file and the drives' images.  Then
 * it opens /dev/kvm, creates the KVM VM, the devices (through vmm/dev/
 * and the device manager) and the vCPUs, and writes the command line,
 * zero page, MP table and boot register state.  So a bad input gets the
 * same error line on a host with or without KVM.  It decides nothing
 * about the VM's life: that is vm.c.
 */
#ifndef EMBER_VMM_BUILDER_H
#define EMBER_VMM_BUILDER_H

#include "../devices/device.h"
#include "vcpu.h"

struct vm;

/*
 * builder__build() - build @vm from @vm->cfg (already checked by
 * config.h's rules): devices report to @ev, vCPUs to @vcpu_event (both
 * with @vm as opaque).  On failure what was built stays in @vm for
 * vm__destroy() to free.  Returns 0, or a negative errno after one error
 * line naming the problem (missing or bad kernel, initrd or drive image,
 * image in use, console file, command line too long: all found before
 * /dev/kvm is opened; then no KVM).
 */
int builder__build(struct vm *vm, struct device_events ev,
		   void (*vcpu_event)(void *opaque, unsigned int vcpu,
				      enum vcpu_event e));

#endif /* EMBER_VMM_BUILDER_H */
