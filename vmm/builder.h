/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The builder: a configuration becomes a VM, ready to start.  It opens
 * /dev/kvm and the host files (kernel, initrd, images, console file),
 * maps guest RAM, creates the KVM VM, the devices (through vmm/dev/ and the
 * device manager) and the vCPUs, loads the kernel and initrd, writes the
 * zero page, command line, MP table and boot register state.  It decides
 * nothing about the VM's life: that is vm.c.
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
 * line naming the problem (missing or bad kernel, image in use, no KVM).
 */
int builder__build(struct vm *vm, struct device_events ev,
		   void (*vcpu_event)(void *opaque, unsigned int vcpu,
				      enum vcpu_event e));

#endif /* EMBER_VMM_BUILDER_H */
