// SPDX-License-Identifier: Apache-2.0
/*
 * FPU/SSE/AVX state at CPL0: ldmxcsr/stmxcsr, fwait, and the standard
 * (non-compacted) xsave64, xsaveopt64 and xrstor64, including their #GP
 * cases.  On a PVM host these are exactly the instructions ember emulates
 * itself (vmm/pvm/pvm_emulate.c, vmm/pvm/xstate.c); on hardware they run natively
 * and the same checks hold.
 *
 * The PVM emulator cannot run VEX-encoded instructions (vmovdqu stops the
 * VM), so the YMM registers are loaded with xrstor64 from a pattern area
 * and their upper halves are read back with xsave64; the XMM halves are
 * also read directly with legacy-SSE movdqu, which checks that a restore
 * reached the real registers.  Vector registers appear in inline asm only:
 * like every test guest this is built with -mgeneral-regs-only, so the
 * compiler keeps nothing in them (the asm needs no xmm clobbers, which that
 * flag rejects anyway) and emits no SSE of its own (without the flag gcc
 * zeroes structs with pxor/movaps, code the PVM emulator would have to run).
 */
#include "guest.h"

#define MXCSR_RZ   (0x1f80 | 0x6000) /* masked, round to zero */
#define MXCSR_PAT  (0x1f80 | 0x2000) /* round down */
#define MXCSR_CLOB (0x1f80 | 0x4000) /* round up */

/* Standard-format offsets (SDM vol. 1 13.4). */
#define XS_FCW	       0
#define XS_MXCSR       24
#define XS_XMM	       160
#define XS_XSTATE_BV   512
#define XS_AVX_DEFAULT 576
#define XS_AREA	       4096

#define NREGS 16

static struct idt_gate idt[IDT_VECTORS] __attribute__((aligned(16)));

static u8 pat[XS_AREA] __attribute__((aligned(64))); /* the patterns */
static u8 clob[XS_AREA] __attribute__((aligned(64))); /* other values */
static u8 sav[XS_AREA] __attribute__((aligned(64))); /* xsave64 */
static u8 opt[XS_AREA] __attribute__((aligned(64))); /* xsaveopt64 */
static u8 chk[XS_AREA] __attribute__((aligned(64))); /* read-backs */
static u8 bad[XS_AREA] __attribute__((aligned(64))); /* #GP cases */

static int have_avx;
static u32 avx_off = XS_AVX_DEFAULT;
static u32 area_size;

/* #GP bookkeeping, written by gp_handler (asm below). */
volatile u64 gp_count, gp_rip, gp_ec, gp_recover;

/*
 * #GP: when gp_recover is set, count the fault and resume there (the
 * instruction is skipped); otherwise it is unexpected: the catch-all.
 */
void gp_handler(void);
asm(".text\n"
    ".globl gp_handler\n"
    "gp_handler:\n"
    "	pushq %rax\n"
    "	movq 8(%rsp), %rax\n" /* error code */
    "	movq %rax, gp_ec(%rip)\n"
    "	movq 16(%rsp), %rax\n" /* faulting RIP */
    "	movq %rax, gp_rip(%rip)\n"
    "	movq gp_recover(%rip), %rax\n"
    "	testq %rax, %rax\n"
    "	jz 1f\n"
    "	movq %rax, 16(%rsp)\n"
    "	movq $0, gp_recover(%rip)\n"
    "	incq gp_count(%rip)\n"
    "	popq %rax\n"
    "	addq $8, %rsp\n" /* drop the error code */
    "	iretq\n"
    "1:	popq %rax\n"
    "	jmp *guest_exc_stubs+13*8(%rip)\n");

static int all_zero(const u8 *a, u32 len)
{
	const volatile u8 *x = a;
	u32 i;

	for (i = 0; i < len; i++)
		if (x[i])
			return 0;
	return 1;
}

static u32 get32(const u8 *p)
{
	return (u32)get64(p);
}

static void cpuid(u32 leaf, u32 sub, u32 *a, u32 *b, u32 *c, u32 *d)
{
	asm volatile("cpuid"
		     : "=a"(*a), "=b"(*b), "=c"(*c), "=d"(*d)
		     : "a"(leaf), "c"(sub));
}

static void xsave64(void *area)
{
	asm volatile("xsave64 (%0)"
		     :
		     : "D"(area), "a"(~0U), "d"(~0U)
		     : "memory");
}

static void xsaveopt64(void *area)
{
	asm volatile("xsaveopt64 (%0)"
		     :
		     : "D"(area), "a"(~0U), "d"(~0U)
		     : "memory");
}

static void xrstor64(const void *area)
{
	asm volatile("xrstor64 (%0)"
		     :
		     : "D"(area), "a"(~0U), "d"(~0U)
		     : "memory");
}

/*
 * The faulting forms: resume after the instruction if it raises #GP.
 * Return whether it did.
 */
static int xrstor64_faults(const void *area)
{
	u64 before = gp_count;

	asm volatile("leaq 1f(%%rip), %%r8\n\t"
		     "movq %%r8, gp_recover(%%rip)\n\t"
		     "xrstor64 (%0)\n"
		     "1:\n\t"
		     "movq $0, gp_recover(%%rip)"
		     :
		     : "D"(area), "a"(~0U), "d"(~0U)
		     : "r8", "memory");
	return gp_count != before;
}

static int xsave64_faults(void *area)
{
	u64 before = gp_count;

	asm volatile("leaq 1f(%%rip), %%r8\n\t"
		     "movq %%r8, gp_recover(%%rip)\n\t"
		     "xsave64 (%0)\n"
		     "1:\n\t"
		     "movq $0, gp_recover(%%rip)"
		     :
		     : "D"(area), "a"(~0U), "d"(~0U)
		     : "r8", "memory");
	return gp_count != before;
}

/* xmm0-15 as the registers hold them, in XSAVE order. */
static void read_xmm(u8 *out)
{
	asm volatile("movdqu %%xmm0, 0(%0)\n\t"
		     "movdqu %%xmm1, 16(%0)\n\t"
		     "movdqu %%xmm2, 32(%0)\n\t"
		     "movdqu %%xmm3, 48(%0)\n\t"
		     "movdqu %%xmm4, 64(%0)\n\t"
		     "movdqu %%xmm5, 80(%0)\n\t"
		     "movdqu %%xmm6, 96(%0)\n\t"
		     "movdqu %%xmm7, 112(%0)\n\t"
		     "movdqu %%xmm8, 128(%0)\n\t"
		     "movdqu %%xmm9, 144(%0)\n\t"
		     "movdqu %%xmm10, 160(%0)\n\t"
		     "movdqu %%xmm11, 176(%0)\n\t"
		     "movdqu %%xmm12, 192(%0)\n\t"
		     "movdqu %%xmm13, 208(%0)\n\t"
		     "movdqu %%xmm14, 224(%0)\n\t"
		     "movdqu %%xmm15, 240(%0)"
		     :
		     : "r"(out)
		     : "memory");
}

static void ldmxcsr(u32 v)
{
	asm volatile("ldmxcsr %0" : : "m"(v));
}

static u32 stmxcsr(void)
{
	u32 v;

	asm volatile("stmxcsr %0" : "=m"(v));
	return v;
}

/* Build a standard-format area whose registers all differ from @seed's. */
static void make_area(u8 *a, u8 seed, u32 mxcsr)
{
	u32 i;

	fill(a, 0, area_size);
	a[XS_FCW] = 0x7f; /* FCW 0x037f, all x87 registers empty */
	a[XS_FCW + 1] = 0x03;
	put64(a + XS_MXCSR, mxcsr | (u64)0xffff << 32);
	for (i = 0; i < NREGS * 16; i++) {
		a[XS_XMM + i] = (u8)(seed + i);
		if (have_avx)
			a[avx_off + i] = (u8)(seed + 0x80 + i) ^ 0x5a;
	}
	put64(a + XS_XSTATE_BV, have_avx ? 7 : 3);
}

/* The registers (read directly and by xsave64) hold @want's values. */
static int regs_match(const u8 *want, const char *what)
{
	int ok;

	read_xmm(chk);
	ok = same(chk, want + XS_XMM, NREGS * 16);
	puts(ok ? "ok - " : "FAIL - ");
	puts(what);
	puts(": xmm0-15 (movdqu)\n");
	if (!ok)
		return 0;
	fill(chk, 0, area_size);
	xsave64(chk);
	ok = same(chk + XS_XMM, want + XS_XMM, NREGS * 16) &&
	     (!have_avx || same(chk + avx_off, want + avx_off, NREGS * 16)) &&
	     get32(chk + XS_MXCSR) == get32(want + XS_MXCSR);
	puts(ok ? "ok - " : "FAIL - ");
	puts(what);
	puts(have_avx ? ": ymm0-15 and MXCSR (xsave64)\n" :
			": xmm0-15 and MXCSR (xsave64)\n");
	return ok;
}

static int setup(void)
{
	u32 a, b, c, d, want;
	u64 cr0, cr4;

	asm volatile("mov %%cr0, %0" : "=r"(cr0));
	asm volatile("mov %0, %%cr0"
		     :
		     : "r"((cr0 | CR0_MP) & ~(CR0_EM | CR0_TS)));
	cpuid(1, 0, &a, &b, &c, &d);
	asm volatile("mov %%cr4, %0" : "=r"(cr4));
	cr4 |= CR4_OSFXSR | CR4_OSXMMEXCPT;
	if (c & CPUID1_XSAVE)
		cr4 |= CR4_OSXSAVE;
	asm volatile("mov %0, %%cr4" : : "r"(cr4));
	puts("fpu: CPUID.1 ECX ");
	put_hex(c);
	serial_putc('\n');
	if (!(c & CPUID1_XSAVE))
		return 0;

	have_avx = !!(c & CPUID1_AVX);
	want = have_avx ? 7 : 3;
	asm volatile("xsetbv" : : "c"(0), "a"(want), "d"(0));
	puts("fpu: XCR0 set to ");
	put_hex(want);
	serial_putc('\n');
	/* The PVM host cannot run xgetbv at CPL0: ember emulates it. */
	{
		u32 lo, hi;

		asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
		if (!check(lo == want && hi == 0, "xgetbv reads XCR0 back")) {
			puts("fpu: xgetbv read ");
			put_hex(((u64)hi << 32) | lo);
			serial_putc('\n');
			return -1;
		}
	}
	if (have_avx) {
		cpuid(0xd, 2, &a, &b, &c, &d);
		avx_off = b;
		if (!check(a == 256 && b >= 576 && b + 256 <= XS_AREA,
			   "CPUID.0xD.2: AVX component of 256 bytes"))
			return -1;
	}
	cpuid(0xd, 0, &a, &b, &c, &d);
	area_size = b;
	puts("fpu: XSAVE area ");
	put_hex(area_size);
	puts(" bytes, AVX at ");
	put_hex(avx_off);
	serial_putc('\n');
	return check(area_size >= 576 && area_size <= XS_AREA - 64,
		     "CPUID.0xD.0 area size") ?
		       1 :
		       -1;
}

int guest_main(void)
{
	u64 rax = 0x1234;
	int xs;

	/* First: nothing may touch an XMM register before CR4.OSFXSR. */
	xs = setup();
	if (xs < 0)
		return 1;

	idt_init(idt);
	idt_set(idt, 13, gp_handler);
	lidt(idt, IDT_VECTORS);

	ldmxcsr(MXCSR_RZ);
	if (!check(stmxcsr() == MXCSR_RZ, "ldmxcsr 0x7f80, stmxcsr reads it"))
		return 2;
	asm volatile("fwait" : "+a"(rax));
	if (!check(rax == 0x1234, "fwait is a no-op"))
		return 3;
	if (!xs) {
		puts("fpu: no XSAVE: xsave checks skipped\n");
		return 0;
	}

	/* xsave64 of state loaded by xrstor64, restored after a clobber. */
	make_area(pat, 0x10, MXCSR_PAT);
	make_area(clob, 0xa0, MXCSR_CLOB);
	xrstor64(pat);
	if (!check(stmxcsr() == MXCSR_PAT, "xrstor64 loaded MXCSR"))
		return 10;
	if (!regs_match(pat, "xrstor64 loaded the patterns"))
		return 11;
	xsave64(sav);
	puts("fpu: XSTATE_BV ");
	put_hex(get64(sav + XS_XSTATE_BV));
	serial_putc('\n');
	if (!check((get64(sav + XS_XSTATE_BV) & (have_avx ? 6 : 2)) ==
			   (have_avx ? 6 : 2),
		   "xsave64 XSTATE_BV has SSE (and AVX)"))
		return 12;
	if (have_avx &&
	    !check(same(sav + XS_AVX_DEFAULT + 16, pat + avx_off + 16, 16),
		   "ymm1 upper half at offset 576+16"))
		return 13;
	if (!check(same(sav + XS_XMM, pat + XS_XMM, NREGS * 16) &&
			   get32(sav + XS_MXCSR) == MXCSR_PAT,
		   "xsave64 stored xmm0-15 and MXCSR"))
		return 14;
	xrstor64(clob);
	if (!regs_match(clob, "clobbered every register"))
		return 15;
	xrstor64(sav);
	if (!regs_match(pat, "xrstor64 restored the xsave64 area"))
		return 16;

	/* The same with xsaveopt64. */
	xsaveopt64(opt);
	if (!check((get64(opt + XS_XSTATE_BV) & (have_avx ? 6 : 2)) ==
				   (have_avx ? 6 : 2) &&
			   same(opt + XS_XMM, pat + XS_XMM, NREGS * 16) &&
			   (!have_avx ||
			    same(opt + avx_off, pat + avx_off, NREGS * 16)),
		   "xsaveopt64 stored the registers"))
		return 20;
	xrstor64(clob);
	if (!regs_match(clob, "clobbered every register again"))
		return 21;
	xrstor64(opt);
	if (!regs_match(pat, "xrstor64 restored the xsaveopt64 area"))
		return 22;

	/* XSTATE_BV bit 2 clear: the upper halves go to their init state. */
	if (have_avx) {
		xrstor64(clob);
		put64(sav + XS_XSTATE_BV, get64(sav + XS_XSTATE_BV) & ~4ULL);
		xrstor64(sav);
		read_xmm(chk);
		if (!check(same(chk, pat + XS_XMM, NREGS * 16),
			   "xrstor64 without AVX in XSTATE_BV kept xmm0-15"))
			return 30;
		fill(chk, 0xff, area_size);
		put64(chk + XS_XSTATE_BV, 0);
		xsave64(chk);
		if (!check(!(get64(chk + XS_XSTATE_BV) & 4) ||
				   all_zero(chk + avx_off, NREGS * 16),
			   "ymm upper halves are in their init state (zero)"))
			return 31;
	}

	/* #GP: XSTATE_BV bit outside XCR0 (9, PKRU); state unchanged. */
	xrstor64(pat);
	copy(bad, pat, area_size);
	put64(bad + XS_XSTATE_BV, get64(pat + XS_XSTATE_BV) | 1ULL << 9);
	if (!check(xrstor64_faults(bad), "xrstor64 with XSTATE_BV bit 9: #GP"))
		return 40;
	if (!check(gp_ec == 0, "#GP error code 0"))
		return 41;
	if (!regs_match(pat, "the faulting xrstor64 changed nothing"))
		return 42;

	/* #GP: an area that is not 64-byte aligned. */
	fill(bad, 0x77, area_size + 8);
	if (!check(xsave64_faults(bad + 8),
		   "xsave64 to a misaligned area: #GP"))
		return 43;
	if (!check(bad[8 + XS_XMM] == 0x77,
		   "the faulting xsave64 wrote nothing"))
		return 44;
	if (!check(gp_count == 2, "exactly two #GP"))
		return 45;
	puts("fpu: all checks passed\n");
	return 0;
}
