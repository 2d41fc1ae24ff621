/* SPDX-License-Identifier: Apache-2.0 */
/*
 * XSAVE-area arithmetic for emulating XSAVE, XSAVEOPT and XRSTOR in their
 * standard (non-compacted) form (Intel SDM vol. 1 chapter 13, "Managing
 * State Using the XSAVE Feature Set": 13.4 layout, 13.7 XSAVE, 13.8 XRSTOR).
 * "live" is the vCPU's state as KVM_GET_XSAVE returns it: the same
 * standard format, 4096 bytes.  Pure: no ioctl, no guest memory.
 */
#ifndef EMBER_VMM_XSTATE_H
#define EMBER_VMM_XSTATE_H

#include <stdint.h>

#define XSTATE_LIVE_SIZE    4096u /* struct kvm_xsave */
#define XSTATE_LEGACY_SIZE  512u
#define XSTATE_HEADER_SIZE  64u
#define XSTATE_MIN_SIZE	    (XSTATE_LEGACY_SIZE + XSTATE_HEADER_SIZE)
#define XSTATE_MAX_FEATURES 32
#define XSTATE_X87	    (1ULL << 0)
#define XSTATE_SSE	    (1ULL << 1)
#define XSTATE_AVX	    (1ULL << 2)

/* Where each extended component lives in the standard format. */
struct xstate_layout {
	uint32_t offset[XSTATE_MAX_FEATURES]; /* 0 for x87/SSE and absent */
	uint32_t size[XSTATE_MAX_FEATURES];
	uint64_t supported; /* components with a layout */
};

/*
 * xstate__layout_host() - fill @l from this CPU's CPUID leaf 0xD (the
 * layout of KVM_GET_XSAVE's buffer is the host's standard layout).
 */
void xstate__layout_host(struct xstate_layout *l);

/*
 * xstate__area_size() - bytes an XSAVE area needs for the components in
 * @rfbm: the end of the highest component, at least XSTATE_MIN_SIZE.
 * Returns 0 if a component of @rfbm has no known layout.
 */
uint32_t xstate__area_size(const struct xstate_layout *l, uint64_t rfbm);

/*
 * xstate__save() - XSAVE: store the components of @rfbm from @live into
 * @area (xstate__area_size(l, rfbm) bytes, holding the guest's previous
 * bytes: what XSAVE does not write is kept) and update XSTATE_BV bits of
 * @rfbm from @live's.  XSAVEOPT may behave the same way.
 */
void xstate__save(const struct xstate_layout *l, const uint8_t *live,
		  uint64_t rfbm, uint8_t *area);

/*
 * xstate__restore() - XRSTOR: load the components of @rfbm from @area
 * into @live, components whose XSTATE_BV bit is clear to their initial
 * state, and MXCSR when @rfbm has SSE or AVX.  @xcr0 is the guest's XCR0;
 * @mxcsr_mask the MXCSR bits that may be set.
 * Returns 0; -EINVAL for what raises #GP (XSTATE_BV bits outside XCR0,
 * non-zero header bytes 8-23, reserved MXCSR bits; in the compacted
 * form XCOMP_BV bits outside XCR0, XSTATE_BV bits outside XCOMP_BV or
 * non-zero header bytes 16-63); -ENOTSUP for a valid compacted header
 * (XCOMP_BV bit 63), which ember does not emulate.  On error @live is
 * unchanged.
 */
int xstate__restore(const struct xstate_layout *l, uint8_t *live, uint64_t rfbm,
		    uint64_t xcr0, uint32_t mxcsr_mask, const uint8_t *area);

#endif /* EMBER_VMM_XSTATE_H */
