/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The parts of a snapshot, each saved into and restored from its own
 * section of the state file (snapshot/state.h) by vmm/persist/persist.c.
 * Saving runs while the VM is paused (every vCPU parked, devices held);
 * restoring runs on a VM just built from the saved configuration, before
 * any vCPU runs.  Each restore function checks what it reads and returns
 * 0 or a negative errno after one error line (log_error) saying what was
 * refused; KVM refuses register values it cannot take (the error names
 * the ioctl).
 */
#ifndef EMBER_VMM_PERSIST_PARTS_H
#define EMBER_VMM_PERSIST_PARTS_H

#include <stdint.h>

#include "../../snapshot/state.h"

struct vcpu;
struct vm;
struct vm_config;
struct devmgr;

/*
 * Section "vcpu.N", version 1: general and special registers, XSAVE
 * (KVM_GET_XSAVE2 where the host's area is larger than 4 KiB), XCRs, the
 * MSRs (KVM_GET_MSR_INDEX_LIST plus those KVM does not list but a guest
 * uses: MTRRs, TSC deadline, the KVM paravirtual MSRs; whichever the host
 * can read), LAPIC, pending events, MP state, debug registers, CPUID.
 * Returns 0 or -errno (the KVM call that failed is logged).
 */
int vcpu_state__save(struct vcpu *v, struct snap_buf *b);
/* vcpu_state__restore() - the reverse, in Firecracker's order; every
 * MSR must be taken by KVM_SET_MSRS (the first refused one is named). */
int vcpu_state__restore(struct vcpu *v, struct snap_cur *c);

/* Section "vm", version 1: PIC master and slave, IOAPIC, PIT, clock. */
int vm_state__save(int vm_fd, struct snap_buf *b);
int vm_state__restore(int vm_fd, struct snap_cur *c);

/*
 * The version of the "config" section: 2 added the network interfaces and
 * their rate limiters, 3 the drives' rate limiters (each drive's six u64
 * after its partuuid).  Older snapshots are refused by name.
 */
#define CONFIG_STATE_VERSION 3

/*
 * Section "config", CONFIG_STATE_VERSION: the configuration the VM was
 * built from (machine, drives and their rate limiters, vsock, entropy,
 * network interfaces, boot source for reference).  restore
 * fills @cfg with strings malloc()ed (config_state__free() frees them)
 * and checks them as the API would (limits of vmm/config.h).
 */
void config_state__save(const struct vm_config *cfg, struct snap_buf *b);
int config_state__restore(struct vm_config *cfg, struct snap_cur *c);
void config_state__free(struct vm_config *cfg);

/*
 * Sections "dev.<id>", version 1: each device's class name, its
 * virtio-mmio transport (virtio classes) and what its class saves.
 * restore finds every device of @dm in the file (and refuses a file with
 * a device @dm does not have, or of another class), then calls each
 * class's restored().
 */
int dev_state__save(struct devmgr *dm, struct snap_buf *b);
int dev_state__restore(struct devmgr *dm, const struct snap_state *s);

#endif /* EMBER_VMM_PERSIST_PARTS_H */
