// SPDX-License-Identifier: Apache-2.0
/* XSAVE-area arithmetic (see xstate.h). */
#include "xstate.h"

#include <cpuid.h>
#include <errno.h>
#include <string.h>

/* Legacy region (SDM vol. 1 table 10-2, 64-bit format). */
#define FX_FCW	      0
#define FX_FTW	      4
#define FX_MXCSR      24
#define FX_ST	      32
#define FX_ST_SIZE    128
#define FX_XMM	      160
#define FX_XMM_SIZE   256
#define HDR_XSTATE_BV 512
#define HDR_XCOMP_BV  520

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

void xstate__layout_host(struct xstate_layout *l)
{
	unsigned int a, b, c, d, i;
	uint64_t mask;

	memset(l, 0, sizeof(*l));
	l->supported = XSTATE_X87 | XSTATE_SSE;
	if (__get_cpuid_max(0, NULL) < 0xd)
		return;
	__cpuid_count(0xd, 0, a, b, c, d);
	mask = a | (uint64_t)d << 32;
	for (i = 2; i < XSTATE_MAX_FEATURES; i++) {
		if (!(mask & (1ULL << i)))
			continue;
		__cpuid_count(0xd, i, a, b, c, d);
		/* ECX bit 0: supervisor state, never in the standard form. */
		if (!a || (c & 1))
			continue;
		l->size[i] = a;
		l->offset[i] = b;
		l->supported |= 1ULL << i;
	}
}

uint32_t xstate__area_size(const struct xstate_layout *l, uint64_t rfbm)
{
	uint32_t end = XSTATE_MIN_SIZE;
	unsigned int i;

	if (rfbm & ~l->supported)
		return 0;
	for (i = 2; i < XSTATE_MAX_FEATURES; i++)
		if ((rfbm & (1ULL << i)) && l->offset[i] + l->size[i] > end)
			end = l->offset[i] + l->size[i];
	return end;
}

static void xstate__copy_component(const struct xstate_layout *l,
				   unsigned int i, uint8_t *dst,
				   const uint8_t *src)
{
	if (i == 0) {
		memcpy(dst, src, FX_MXCSR);
		memcpy(dst + FX_ST, src + FX_ST, FX_ST_SIZE);
	} else if (i == 1) {
		memcpy(dst + FX_XMM, src + FX_XMM, FX_XMM_SIZE);
	} else {
		memcpy(dst + l->offset[i], src + l->offset[i], l->size[i]);
	}
}

static void xstate__init_component(const struct xstate_layout *l,
				   unsigned int i, uint8_t *dst)
{
	if (i == 0) {
		memset(dst, 0, FX_MXCSR);
		memset(dst + FX_ST, 0, FX_ST_SIZE);
		dst[FX_FCW] = 0x7f; /* FCW 0x037f */
		dst[FX_FCW + 1] = 0x03;
		dst[FX_FTW] = 0; /* abridged: all empty */
	} else if (i == 1) {
		memset(dst + FX_XMM, 0, FX_XMM_SIZE);
	} else {
		memset(dst + l->offset[i], 0, l->size[i]);
	}
}

void xstate__save(const struct xstate_layout *l, const uint8_t *live,
		  uint64_t rfbm, uint8_t *area)
{
	uint64_t bv;
	unsigned int i;

	rfbm &= l->supported;
	for (i = 0; i < XSTATE_MAX_FEATURES; i++)
		if (rfbm & (1ULL << i))
			xstate__copy_component(l, i, area, live);
	if (rfbm & (XSTATE_SSE | XSTATE_AVX))
		memcpy(area + FX_MXCSR, live + FX_MXCSR, 8); /* MXCSR, MASK */
	bv = get64(area + HDR_XSTATE_BV);
	bv = (bv & ~rfbm) | (get64(live + HDR_XSTATE_BV) & rfbm);
	put64(area + HDR_XSTATE_BV, bv);
}

int xstate__restore(const struct xstate_layout *l, uint8_t *live, uint64_t rfbm,
		    uint64_t xcr0, uint32_t mxcsr_mask, const uint8_t *area)
{
	uint64_t bv = get64(area + HDR_XSTATE_BV);
	uint64_t comp = get64(area + HDR_XCOMP_BV);
	uint64_t lbv;
	uint32_t mxcsr;
	unsigned int i;

	if (comp & (1ULL << 63)) {
		/*
		 * The compacted form: what raises #GP there still does
		 * (XCOMP_BV bits outside XCR0, XSTATE_BV bits outside
		 * XCOMP_BV, header bytes 16-63 not 0); only a valid header
		 * is "not emulated".
		 */
		if ((comp & ~(1ULL << 63) & ~xcr0) || (bv & ~comp))
			return -EINVAL;
		for (i = 16; i < XSTATE_HEADER_SIZE; i++)
			if (area[HDR_XSTATE_BV + i])
				return -EINVAL;
		return -ENOTSUP;
	}
	if (comp || get64(area + HDR_XCOMP_BV + 8) || (bv & ~xcr0))
		return -EINVAL;
	memcpy(&mxcsr, area + FX_MXCSR, 4);
	if ((rfbm & (XSTATE_SSE | XSTATE_AVX)) && (mxcsr & ~mxcsr_mask))
		return -EINVAL;

	rfbm &= l->supported;
	for (i = 0; i < XSTATE_MAX_FEATURES; i++) {
		if (!(rfbm & (1ULL << i)))
			continue;
		if (bv & (1ULL << i))
			xstate__copy_component(l, i, live, area);
		else
			xstate__init_component(l, i, live);
	}
	if (rfbm & (XSTATE_SSE | XSTATE_AVX))
		memcpy(live + FX_MXCSR, &mxcsr, 4);
	lbv = get64(live + HDR_XSTATE_BV);
	lbv = (lbv & ~rfbm) | (bv & rfbm);
	/* KVM takes MXCSR from the buffer only when SSE or AVX is marked. */
	if (rfbm & (XSTATE_SSE | XSTATE_AVX))
		lbv |= XSTATE_SSE;
	put64(live + HDR_XSTATE_BV, lbv);
	return 0;
}
