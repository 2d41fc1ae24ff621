// SPDX-License-Identifier: Apache-2.0
/*
 * A vCPU thread's allow-list (see filter.h; the calls of every thread are
 * in filter_common.c).  It runs KVM_RUN and handles the exits: port and
 * MMIO accesses dispatched to the devices (vmm/vcpu.c), the PVM emulation
 * fallbacks (vmm/pvm/), register dumps on fatal errors.  What a device
 * does on such an access stays on the vCPU's side of the fence: interrupts
 * through irqfds or KVM_IRQ_LINE, wake-ups of the event thread through
 * eventfds, console bytes.  Queue notifications, block I/O, sockets and
 * files are the event thread's.
 */
#include <linux/kvm.h>

#include "filter.h"

static const struct seccomp_rule vcpu[] = {
	/*
	 * After a pause, tell a kvm-clock guest it was stopped
	 * (vcpu__checkpoint()).
	 */
	SC_IOCTL(KVM_KVMCLOCK_CTRL),
	/*
	 * The PVM fallbacks (vmm/pvm/pvm_emulate.c): registers to decode and
	 * walk the guest's page tables, RIP += length, exceptions injected,
	 * XSAVE state for xsave/xrstor/xsaveopt, the FPU for ldmxcsr and
	 * stmxcsr.  GET_REGS and GET_SREGS also dump the registers when a
	 * vCPU stops on an error (vcpu__dump()).
	 */
	SC_IOCTL(KVM_GET_REGS),
	SC_IOCTL(KVM_SET_REGS),
	SC_IOCTL(KVM_GET_SREGS),
	SC_IOCTL(KVM_SET_SREGS),
	SC_IOCTL(KVM_GET_VCPU_EVENTS),
	SC_IOCTL(KVM_SET_VCPU_EVENTS),
	SC_IOCTL(KVM_GET_XSAVE),
	SC_IOCTL(KVM_SET_XSAVE),
	SC_IOCTL(KVM_GET_XCRS),
	SC_IOCTL(KVM_GET_FPU),
	SC_IOCTL(KVM_SET_FPU),
	/*
	 * Interrupt lines of the legacy devices the guest drives from here
	 * (the UART's IRQ 4 as its transmitter empties: vmm/irq.c).
	 */
	SC_IOCTL(KVM_IRQ_LINE),
	/*
	 * Console output waits for a slow reader with poll(2) rather than
	 * blocking in write(2) (vmm/backends/console_out.c).
	 */
	SC_ALLOW(poll),
	/*
	 * A drive's rate limiter arms its timerfd under the device lock, on
	 * whichever thread serves the device (vmm/dev/blk.c).
	 */
	SC_ALLOW(timerfd_settime),
	/* The thread's end, once the VM stops. */
	SC_ALLOW(exit),
	/*
	 * Run the guest until its next exit (vcpu__thread()), once per exit.
	 * Last: libseccomp tests the ioctl requests added last first.
	 */
	SC_IOCTL(KVM_RUN),
};

const struct seccomp_list filter_vcpu = SC_LIST(vcpu);
