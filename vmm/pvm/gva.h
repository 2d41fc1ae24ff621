/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Guest-virtual to guest-physical translation by walking the guest's
 * 4-level page tables (Intel SDM vol. 3A 4.5 "4-level paging"), for the
 * instructions ember emulates.  Pure: reads and updates page-table entries
 * only through devices/guest_mem.h.
 */
#ifndef EMBER_VMM_GVA_H
#define EMBER_VMM_GVA_H

#include <stdint.h>

#include "../../devices/guest_mem.h"

/* Access kinds, and the #PF error-code bits (SDM 4.7) they map onto. */
#define GVA_ACCESS_WRITE 0x02u
#define GVA_ACCESS_USER	 0x04u
#define GVA_ACCESS_FETCH 0x10u
#define GVA_PFEC_PRESENT 0x01u

/* The control registers that decide how the guest translates. */
struct gva_ctx {
	uint64_t cr0, cr3, cr4, efer;
};

/*
 * gva__translate() - translate @gva for an access of kind @access
 * (GVA_ACCESS_* bits), checking present, writable (for writes when user or
 * CR0.WP) and user bits at every level, and setting accessed (and, for
 * writes, dirty) bits as the CPU would.  Paging off: @gva is the GPA.
 * Returns 0 with *@gpa set; -EFAULT for a page fault, with the error code
 * in *@pfec; -EINVAL for a non-canonical address (a #GP); -EIO if a page
 * table lies outside guest RAM; -ENOTSUP for paging modes other than
 * 4-level long mode.
 */
int gva__translate(const struct guest_mem *m, const struct gva_ctx *c,
		   uint64_t gva, unsigned int access, uint64_t *gpa,
		   uint32_t *pfec);

/*
 * gva__check() - check that an access of kind @access to the @len bytes
 * at @gva would succeed: the first and last byte canonical (else -EINVAL,
 * a #GP), then every page as gva__translate() does, each inside guest RAM
 * (else -EIO).  Sets accessed/dirty bits like gva__translate(); copies
 * nothing.  On an error, *@fault_gva is the address that failed.
 */
int gva__check(const struct guest_mem *m, const struct gva_ctx *c, uint64_t gva,
	       uint64_t len, unsigned int access, uint32_t *pfec,
	       uint64_t *fault_gva);

/*
 * gva__copy() - copy @len bytes between guest-virtual @gva and @buf
 * (to the guest when @access has GVA_ACCESS_WRITE), page by page.  The
 * whole range passes gva__check() before any byte is copied, so a fault
 * changes nothing.  On -EFAULT, *@fault_gva is the first faulting address.
 * Returns 0 or as gva__translate().
 */
int gva__copy(const struct guest_mem *m, const struct gva_ctx *c, uint64_t gva,
	      void *buf, uint64_t len, unsigned int access, uint32_t *pfec,
	      uint64_t *fault_gva);

#endif /* EMBER_VMM_GVA_H */
