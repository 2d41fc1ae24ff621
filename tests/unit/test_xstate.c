// SPDX-License-Identifier: Apache-2.0
/* Unit tests for vmm/pvm/xstate.c: XSAVE/XRSTOR on standard-format areas. */
#include <cpuid.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../vmm/pvm/xstate.h"
#include "test_util.h"

/* Legacy region and header offsets (SDM vol. 1 table 10-2, 13.4). */
#define FCW	   0
#define MXCSR	   24
#define MXCSR_MASK 28
#define ST	   32
#define XMM	   160
#define XMM_END	   416
#define BV	   512
#define XCOMP	   520
#define HDR_RSVD   528
#define YMM	   576
#define YMM_SIZE   256
#define AREA_SIZE  (YMM + YMM_SIZE)

#define AREA_FILL     0xa5
#define MXCSR_DEFAULT 0x1f80u
#define MASK_ALL      0xffffu
#define MASK_NO_DAZ   0xffbfu

struct fixture {
	struct xstate_layout l;
	uint8_t live[XSTATE_LIVE_SIZE];
	uint8_t area[XSTATE_LIVE_SIZE]; /* only AREA_SIZE of it used */
	uint8_t snap[XSTATE_LIVE_SIZE];
};

static void assert_same(const uint8_t *a, const uint8_t *b, size_t from,
			size_t to)
{
	assert_memory_equal(a + from, b + from, to - from);
}

static void assert_filled(const uint8_t *a, size_t from, size_t to, uint8_t v)
{
	size_t i;

	for (i = from; i < to; i++)
		assert_int_equal(a[i], v);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	size_t i;

	if (!f)
		return -1;
	f->l.offset[2] = YMM;
	f->l.size[2] = YMM_SIZE;
	f->l.supported = XSTATE_X87 | XSTATE_SSE | XSTATE_AVX;
	/* live: a pattern, a valid header and MXCSR. */
	for (i = 0; i < sizeof(f->live); i++)
		f->live[i] = (uint8_t)(i * 7 + 3);
	memset(f->live + BV, 0, XSTATE_HEADER_SIZE);
	wr64(f->live, BV, 7);
	wr32(f->live, MXCSR, 0x1fa0);
	wr32(f->live, MXCSR_MASK, MASK_ALL);
	memset(f->area, AREA_FILL, sizeof(f->area));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	free(*state);
	return 0;
}

/* A valid area to restore from: another pattern, all components marked. */
static void make_area(struct fixture *f, uint64_t bv)
{
	size_t i;

	for (i = 0; i < AREA_SIZE; i++)
		f->area[i] = (uint8_t)(i * 13 + 5);
	memset(f->area + BV, 0, XSTATE_HEADER_SIZE);
	wr64(f->area, BV, bv);
	wr32(f->area, MXCSR, MXCSR_DEFAULT);
}

static void test_area_size(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(xstate__area_size(&f->l, 0), XSTATE_MIN_SIZE);
	assert_int_equal(xstate__area_size(&f->l, XSTATE_X87), 576);
	assert_int_equal(xstate__area_size(&f->l, XSTATE_X87 | XSTATE_SSE),
			 576);
	assert_int_equal(xstate__area_size(&f->l, 7), 832);
	assert_int_equal(xstate__area_size(&f->l, XSTATE_AVX), 832);
	assert_int_equal(xstate__area_size(&f->l, 1ULL << 3), 0);
	assert_int_equal(xstate__area_size(&f->l, 7 | (1ULL << 9)), 0);
	assert_int_equal(xstate__area_size(&f->l, 1ULL << 63), 0);
}

static void test_save_all(void **state)
{
	struct fixture *f = *state;
	/* Bits outside RFBM (3, 9) must survive; bit 0 is rewritten. */
	uint64_t old_bv = (1ULL << 3) | (1ULL << 9);

	wr64(f->area, BV, old_bv);
	xstate__save(&f->l, f->live, 7, f->area);
	assert_same(f->area, f->live, FCW, MXCSR);
	assert_int_equal(rd32(f->area, MXCSR), 0x1fa0);
	assert_int_equal(rd32(f->area, MXCSR_MASK), MASK_ALL);
	assert_same(f->area, f->live, ST, XMM_END);
	assert_filled(f->area, XMM_END, BV, AREA_FILL);
	assert_int_equal(rd64(f->area, BV), old_bv | 7);
	/* XSAVE writes no other header byte. */
	assert_filled(f->area, XCOMP, YMM, AREA_FILL);
	assert_same(f->area, f->live, YMM, AREA_SIZE);
	assert_filled(f->area, AREA_SIZE, sizeof(f->area), AREA_FILL);
}

static void test_save_x87_only(void **state)
{
	struct fixture *f = *state;

	wr64(f->area, BV, 0);
	xstate__save(&f->l, f->live, XSTATE_X87, f->area);
	assert_same(f->area, f->live, FCW, MXCSR);
	/* No MXCSR, XMM or YMM without SSE/AVX in RFBM. */
	assert_filled(f->area, MXCSR, ST, AREA_FILL);
	assert_same(f->area, f->live, ST, XMM);
	assert_filled(f->area, XMM, BV, AREA_FILL);
	assert_int_equal(rd64(f->area, BV), XSTATE_X87);
	assert_filled(f->area, XCOMP, sizeof(f->area), AREA_FILL);
}

static void test_save_avx_only(void **state)
{
	struct fixture *f = *state;

	wr64(f->area, BV, XSTATE_X87 | XSTATE_SSE);
	wr64(f->live, BV, XSTATE_X87); /* live: AVX in init state */
	xstate__save(&f->l, f->live, XSTATE_AVX, f->area);
	assert_filled(f->area, FCW, MXCSR, AREA_FILL);
	/* MXCSR goes with AVX as well as with SSE. */
	assert_int_equal(rd32(f->area, MXCSR), 0x1fa0);
	assert_int_equal(rd32(f->area, MXCSR_MASK), MASK_ALL);
	assert_filled(f->area, ST, BV, AREA_FILL);
	/* XSTATE_BV[2] is live's (0); bits 0-1 keep the area's. */
	assert_int_equal(rd64(f->area, BV), XSTATE_X87 | XSTATE_SSE);
	assert_same(f->area, f->live, YMM, AREA_SIZE);
}

static void test_save_sse_clears_bv(void **state)
{
	struct fixture *f = *state;

	wr64(f->area, BV, 7);
	wr64(f->live, BV, XSTATE_X87 | XSTATE_AVX);
	xstate__save(&f->l, f->live, XSTATE_SSE, f->area);
	assert_int_equal(rd64(f->area, BV), XSTATE_X87 | XSTATE_AVX);
	assert_same(f->area, f->live, XMM, XMM_END);
	assert_int_equal(rd32(f->area, MXCSR), 0x1fa0);
	assert_filled(f->area, FCW, MXCSR, AREA_FILL);
	assert_filled(f->area, ST, XMM, AREA_FILL);
	assert_filled(f->area, YMM, AREA_SIZE, AREA_FILL);
}

static void test_restore_all(void **state)
{
	struct fixture *f = *state;

	make_area(f, 7);
	memcpy(f->snap, f->live, sizeof(f->snap));
	assert_int_equal(
		xstate__restore(&f->l, f->live, 7, 7, MASK_ALL, f->area), 0);
	assert_same(f->live, f->area, FCW, MXCSR);
	assert_int_equal(rd32(f->live, MXCSR), MXCSR_DEFAULT);
	assert_int_equal(rd32(f->live, MXCSR_MASK), MASK_ALL);
	assert_same(f->live, f->area, ST, XMM_END);
	assert_same(f->live, f->snap, XMM_END, BV);
	assert_int_equal(rd64(f->live, BV), 7);
	assert_same(f->live, f->area, YMM, AREA_SIZE);
	assert_same(f->live, f->snap, AREA_SIZE, sizeof(f->live));
}

static void test_restore_init(void **state)
{
	struct fixture *f = *state;

	make_area(f, 0);
	memcpy(f->snap, f->live, sizeof(f->snap));
	assert_int_equal(
		xstate__restore(&f->l, f->live, 7, 7, MASK_ALL, f->area), 0);
	/* x87 init: FCW 0x037f, everything else in the x87 parts zero. */
	assert_int_equal(f->live[FCW], 0x7f);
	assert_int_equal(f->live[FCW + 1], 0x03);
	assert_filled(f->live, FCW + 2, MXCSR, 0);
	assert_filled(f->live, ST, XMM, 0);
	assert_filled(f->live, XMM, XMM_END, 0);
	assert_filled(f->live, YMM, AREA_SIZE, 0);
	/* The standard form loads MXCSR even with XSTATE_BV[1] clear. */
	assert_int_equal(rd32(f->live, MXCSR), MXCSR_DEFAULT);
	assert_int_equal(rd64(f->live, BV) & (XSTATE_X87 | XSTATE_AVX), 0);
	assert_same(f->live, f->snap, AREA_SIZE, sizeof(f->live));
}

static void test_restore_partial(void **state)
{
	struct fixture *f = *state;

	/* RFBM x87 only: SSE/AVX state and MXCSR stay as they were. */
	make_area(f, 7);
	memcpy(f->snap, f->live, sizeof(f->snap));
	assert_int_equal(xstate__restore(&f->l, f->live, XSTATE_X87, 7,
					 MASK_ALL, f->area),
			 0);
	assert_same(f->live, f->area, FCW, MXCSR);
	assert_same(f->live, f->area, ST, XMM);
	assert_same(f->live, f->snap, MXCSR, ST);
	assert_same(f->live, f->snap, XMM, BV);
	assert_same(f->live, f->snap, YMM, sizeof(f->live));
}

static void test_restore_avx_init(void **state)
{
	struct fixture *f = *state;

	/* RFBM AVX with XSTATE_BV[2] clear: YMM upper zero, XMM kept. */
	make_area(f, XSTATE_X87 | XSTATE_SSE);
	memcpy(f->snap, f->live, sizeof(f->snap));
	assert_int_equal(xstate__restore(&f->l, f->live, XSTATE_AVX, 7,
					 MASK_ALL, f->area),
			 0);
	assert_filled(f->live, YMM, AREA_SIZE, 0);
	assert_same(f->live, f->snap, FCW, MXCSR);
	assert_int_equal(rd32(f->live, MXCSR), MXCSR_DEFAULT);
	assert_same(f->live, f->snap, ST, BV);
	assert_int_equal(rd64(f->live, BV) & XSTATE_AVX, 0);
	assert_int_equal(rd64(f->live, BV) & XSTATE_X87, XSTATE_X87);
}

/* Each error leaves live byte for byte as it was. */
static void expect_restore_error(struct fixture *f, uint64_t rfbm,
				 uint64_t xcr0, uint32_t mask, int err)
{
	memcpy(f->snap, f->live, sizeof(f->snap));
	assert_int_equal(
		xstate__restore(&f->l, f->live, rfbm, xcr0, mask, f->area),
		err);
	assert_memory_equal(f->live, f->snap, sizeof(f->live));
}

static void test_restore_errors(void **state)
{
	struct fixture *f = *state;
	size_t k;

	/* XSTATE_BV bit outside XCR0. */
	make_area(f, 7);
	expect_restore_error(f, 3, 3, MASK_ALL, -EINVAL);
	make_area(f, 7 | (1ULL << 5));
	expect_restore_error(f, 7, 7, MASK_ALL, -EINVAL);

	/* Non-zero XCOMP_BV without bit 63. */
	make_area(f, 7);
	wr64(f->area, XCOMP, 1);
	expect_restore_error(f, 7, 7, MASK_ALL, -EINVAL);

	/* Header bytes 16-23 (each of them). */
	for (k = 0; k < 8; k++) {
		make_area(f, 7);
		f->area[HDR_RSVD + k] = 0x01;
		expect_restore_error(f, 7, 7, MASK_ALL, -EINVAL);
	}

	/* Reserved MXCSR bit (DAZ not in the mask), with SSE or AVX. */
	make_area(f, 7);
	wr32(f->area, MXCSR, MXCSR_DEFAULT | 0x40);
	expect_restore_error(f, 7, 7, MASK_NO_DAZ, -EINVAL);
	expect_restore_error(f, XSTATE_AVX, 7, MASK_NO_DAZ, -EINVAL);
	wr32(f->area, MXCSR, MXCSR_DEFAULT | 0x10000);
	expect_restore_error(f, XSTATE_SSE, 7, MASK_ALL, -EINVAL);

	/* Compacted form. */
	make_area(f, 7);
	wr64(f->area, XCOMP, (1ULL << 63) | 7);
	expect_restore_error(f, 7, 7, MASK_ALL, -ENOTSUP);
	/* A compacted header that is invalid as such still raises #GP. */
	wr64(f->area, XCOMP, (1ULL << 63) | 3); /* XSTATE_BV 7 not in it */
	expect_restore_error(f, 7, 7, MASK_ALL, -EINVAL);
	wr64(f->area, XCOMP, (1ULL << 63) | 0xf); /* bit 3 not in XCR0 */
	expect_restore_error(f, 7, 7, MASK_ALL, -EINVAL);
	wr64(f->area, XCOMP, (1ULL << 63) | 7);
	f->area[BV + 40] = 1; /* header byte 40 */
	expect_restore_error(f, 7, 7, MASK_ALL, -EINVAL);
	memset(f->area, 0xff, sizeof(f->area)); /* all ones */
	expect_restore_error(f, 7, 7, MASK_ALL, -EINVAL);
}

static void test_restore_not_errors(void **state)
{
	struct fixture *f = *state;

	/* MXCSR is not loaded, so not checked, without SSE/AVX in RFBM. */
	make_area(f, 7);
	wr32(f->area, MXCSR, MXCSR_DEFAULT | 0x40);
	memcpy(f->snap, f->live, sizeof(f->snap));
	assert_int_equal(xstate__restore(&f->l, f->live, XSTATE_X87, 7,
					 MASK_NO_DAZ, f->area),
			 0);
	assert_int_equal(rd32(f->live, MXCSR), rd32(f->snap, MXCSR));

	/* Header bytes 24-63 are ignored by the standard form. */
	make_area(f, 7);
	memset(f->area + BV + 24, 0xee, XSTATE_HEADER_SIZE - 24);
	assert_int_equal(
		xstate__restore(&f->l, f->live, 7, 7, MASK_ALL, f->area), 0);
	assert_same(f->live, f->area, YMM, AREA_SIZE);
}

static void test_layout_host(void **state)
{
	struct xstate_layout l;
	unsigned int a, b, c, d;
	int avx = 0;

	(void)state;
	memset(&l, 0xff, sizeof(l));
	xstate__layout_host(&l);
	assert_int_equal(l.supported & 3, 3);
	assert_int_equal(l.offset[0], 0);
	assert_int_equal(l.offset[1], 0);
	if (__get_cpuid_max(0, NULL) >= 0xd) {
		__cpuid_count(0xd, 0, a, b, c, d);
		avx = !!(a & XSTATE_AVX);
	}
	if (avx) {
		assert_true(l.supported & XSTATE_AVX);
		assert_int_equal(l.offset[2], 576);
		assert_int_equal(l.size[2], 256);
		assert_int_equal(xstate__area_size(&l, 7), 832);
	} else {
		assert_false(l.supported & XSTATE_AVX);
		assert_int_equal(l.offset[2], 0);
	}
	/* Every reported component lies after the header. */
	for (a = 2; a < XSTATE_MAX_FEATURES; a++) {
		if (!(l.supported & (1ULL << a)))
			continue;
		assert_true(l.offset[a] >= XSTATE_MIN_SIZE);
		assert_true(l.size[a] > 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_area_size),	    T(test_save_all),
		T(test_save_x87_only),	    T(test_save_avx_only),
		T(test_save_sse_clears_bv), T(test_restore_all),
		T(test_restore_init),	    T(test_restore_partial),
		T(test_restore_avx_init),   T(test_restore_errors),
		T(test_restore_not_errors), T(test_layout_host),
#undef T
	};

	return cmocka_run_group_tests_name("xstate", tests, NULL, NULL);
}
