// SPDX-License-Identifier: Apache-2.0
/*
 * xsave64/xrstor64 with hostile memory operands and headers: what ember's
 * emulation of them on a PVM host (vmm/pvm/pvm_emulate.c, vmm/pvm/gva.c,
 * vmm/pvm/xstate.c) must answer exactly as the CPU does.  On hardware KVM the
 * instructions run natively and the same checks hold.
 *
 * The guest builds its own 4-level page tables (identity map of RAM in
 * 2 MiB pages, with holes) and expects, per case (Intel SDM vol. 1 13.7,
 * 13.8; vol. 2 XSAVE/XRSTOR "64-Bit Mode Exceptions"; vol. 3A 4.7):
 *
 *  - an area in a not-present page, or running into one (also at RAM's
 *    end, where nothing is mapped past it): #PF with CR2 inside the area
 *    and in that page, error code P=0, U=0, and W=1 for XSAVE (a store)
 *    and W=0 for XRSTOR (a load);
 *  - XSAVE to a read-only page (CR0.WP=1): #PF, error code P=1 W=1, and
 *    the page unchanged; XRSTOR from it works;
 *  - a non-canonical area, or a canonical one whose end is not canonical
 *    (even when its first page is not present: the canonical check comes
 *    before paging): #GP(0);
 *  - XRSTOR of a bad header: XSTATE_BV bits outside XCR0, XCOMP_BV not 0
 *    (bit 63 clear), header bytes 16-23 not 0, MXCSR reserved bits, an
 *    all-ones area: #GP(0) with the state unchanged; XCOMP_BV bit 63
 *    while CPUID hides XSAVEC: #GP(0) (skipped where the guest sees
 *    XSAVEC, as at CPL0 on the PVM host: ember then stops the VM, since
 *    it emulates only the standard form); header bytes 24-63 are not
 *    checked in the standard form: that XRSTOR works;
 *  - a LOCK prefix, and CR4.OSXSAVE clear: #UD.
 *
 * Page tables pointing outside guest RAM are in xsave_outside_ram.c: ember
 * stops the VM there by design.
 */
#include "guest.h"
#include "recover.h"

#define CPUIDD1_XSAVEC (1U << 1)

#define MB2 0x200000UL

#define RAM_END	 0x4000000UL /* --mem 64 */
#define PT_BASE	 0x3000000UL /* 48 MiB: the 2 MiB mapped by pt[] */
#define HOLE	 (PT_BASE + 1 * PAGE) /* not present */
#define RO	 (PT_BASE + 2 * PAGE) /* read-only */
#define HOLE2	 (PT_BASE + 4 * PAGE) /* not present, after a RW page */
#define TOP_PAGE 0x7ffffffff000UL /* last canonical low page */
#define TOP_PA	 (PT_BASE + 16 * PAGE)

#define XS_MXCSR     24
#define XS_XSTATE_BV 512
#define XS_XCOMP_BV  520
#define XS_AREA	     4096
#define MXCSR_PAT    (0x1f80 | 0x2000)

#define VEC_UD 6
#define VEC_GP 13
#define VEC_PF 14

#define PF_P 1
#define PF_W 2
#define PF_U 4

static struct idt_gate idt[IDT_VECTORS] __attribute__((aligned(16)));
static u64 pml4[512] __attribute__((aligned(4096)));
static u64 pdpt0[512] __attribute__((aligned(4096)));
static u64 pd0[512] __attribute__((aligned(4096)));
static u64 pt[512] __attribute__((aligned(4096)));
static u64 pdpt_hi[512] __attribute__((aligned(4096)));
static u64 pd_hi[512] __attribute__((aligned(4096)));
static u64 pt_hi[512] __attribute__((aligned(4096)));
static u8 good[XS_AREA] __attribute__((aligned(64)));
static u8 bad[XS_AREA] __attribute__((aligned(64)));

static u32 area_size;
static u64 xcr0;

/*
 * Run one instruction on @area (in RDI, RFBM all ones) and resume after
 * it if it faults.  Return the vector, or -1 when it did not fault.
 */

RECOVER_TRY(try_xsave, "xsave64 (%0)")
RECOVER_TRY(try_xrstor, "xrstor64 (%0)")
/* lock xsave64 (%rdi): f0 48 0f ae 27 */
RECOVER_TRY(try_lock_xsave, ".byte 0xf0, 0x48, 0x0f, 0xae, 0x27")

static void cpuid(u32 leaf, u32 sub, u32 *a, u32 *b, u32 *c, u32 *d)
{
	asm volatile("cpuid"
		     : "=a"(*a), "=b"(*b), "=c"(*c), "=d"(*d)
		     : "a"(leaf), "c"(sub));
}

static u32 stmxcsr(void)
{
	u32 v;

	asm volatile("stmxcsr %0" : "=m"(v));
	return v;
}

static void write_cr3(u64 v)
{
	asm volatile("mov %0, %%cr3" : : "r"(v) : "memory");
}

/* CR0/CR4/XCR0 as fpu.c sets them.  0: no XSAVE, 1: ready. */
static int setup_xsave(void)
{
	u32 a, b, c, d;
	u64 cr0, cr4;

	asm volatile("mov %%cr0, %0" : "=r"(cr0));
	asm volatile("mov %0, %%cr0"
		     :
		     : "r"((cr0 | CR0_MP | CR0_WP) & ~(CR0_EM | CR0_TS)));
	cpuid(1, 0, &a, &b, &c, &d);
	if (!(c & CPUID1_XSAVE))
		return 0;
	asm volatile("mov %%cr4, %0" : "=r"(cr4));
	asm volatile("mov %0, %%cr4"
		     :
		     : "r"(cr4 | CR4_OSFXSR | CR4_OSXMMEXCPT | CR4_OSXSAVE));
	xcr0 = (c & CPUID1_AVX) ? 7 : 3;
	asm volatile("xsetbv" : : "c"(0), "a"((u32)xcr0), "d"(0));
	cpuid(0xd, 0, &a, &b, &c, &d);
	area_size = b;
	return 1;
}

/*
 * Identity-map RAM in 2 MiB pages, except: 48-50 MiB through pt[] with
 * HOLE and HOLE2 not present and RO read-only; nothing past RAM_END in
 * the first GiB; GiB 1-3 (the MMIO gap: exit status) as ember maps them;
 * TOP_PAGE through pt_hi[511] (made present by map_top()).
 */
static void build_page_tables(void)
{
	u64 cr3, *ember_pdpt;
	unsigned int i;

	asm volatile("mov %%cr3, %0" : "=r"(cr3));
	ember_pdpt = (u64 *)(((u64 *)(cr3 & PTE_ADDR))[0] & PTE_ADDR);
	for (i = 1; i < 4; i++)
		pdpt0[i] = ember_pdpt[i];
	for (i = 0; i < RAM_END / MB2; i++)
		pd0[i] = i * MB2 | PTE_P | PTE_RW | PTE_PS;
	for (i = 0; i < 512; i++)
		pt[i] = (PT_BASE + i * PAGE) | PTE_P | PTE_RW;
	pt[(HOLE - PT_BASE) / PAGE] = 0;
	pt[(HOLE2 - PT_BASE) / PAGE] = 0;
	pt[(RO - PT_BASE) / PAGE] &= ~PTE_RW;
	pd0[PT_BASE / MB2] = (u64)pt | PTE_P | PTE_RW;
	pdpt0[0] = (u64)pd0 | PTE_P | PTE_RW;
	pml4[0] = (u64)pdpt0 | PTE_P | PTE_RW;
	pd_hi[511] = (u64)pt_hi | PTE_P | PTE_RW;
	pdpt_hi[511] = (u64)pd_hi | PTE_P | PTE_RW;
	pml4[255] = (u64)pdpt_hi | PTE_P | PTE_RW;
}

static void map_top(int present)
{
	pt_hi[511] = present ? TOP_PA | PTE_P | PTE_RW : 0;
	write_cr3((u64)pml4);
}

/* A #PF at @area..@area+area_size with CR2 in [@page, end) and @ec. */
static int pf_ok(int vec, u64 area, u64 page, u64 ec)
{
	u64 end = area + area_size;

	if (vec != VEC_PF) {
		puts("  vector ");
		put_hex((u64)(unsigned int)vec);
		serial_putc('\n');
		return 0;
	}
	puts("  #PF cr2 ");
	put_hex(f_cr2);
	puts(" error code ");
	put_hex(f_ec);
	serial_putc('\n');
	return f_cr2 >= page && f_cr2 < page + PAGE && f_cr2 >= area &&
	       f_cr2 < end && (f_ec & (PF_P | PF_W | PF_U)) == ec;
}

static int gp0(int vec)
{
	return vec == VEC_GP && f_ec == 0;
}

static int paging_cases(void)
{
	int ok = 1;

	ok &= check(pf_ok(try_xsave(HOLE), HOLE, HOLE, PF_W),
		    "xsave64 to a not-present page: #PF, W=1 P=0");
	ok &= check(pf_ok(try_xrstor(HOLE), HOLE, HOLE, 0),
		    "xrstor64 from a not-present page: #PF, W=0 P=0");
	ok &= check(pf_ok(try_xsave(HOLE - 0x100), HOLE - 0x100, HOLE, PF_W),
		    "xsave64 running into a not-present page: #PF there");
	ok &= check(pf_ok(try_xrstor(HOLE2 - 0x100), HOLE2 - 0x100, HOLE2, 0),
		    "xrstor64 running into a not-present page: #PF there");
	ok &= check(
		pf_ok(try_xsave(RO), RO, RO, PF_P | PF_W) &&
			same((const u8 *)RO, good, area_size),
		"xsave64 to a read-only page: #PF, W=1 P=1, page unchanged");
	ok &= check(try_xrstor(RO) == -1 && stmxcsr() == MXCSR_PAT,
		    "xrstor64 from a read-only page works");
	ok &= check(pf_ok(try_xsave(RAM_END - 0x100), RAM_END - 0x100, RAM_END,
			  PF_W),
		    "xsave64 across RAM's end, nothing mapped past it: #PF");
	ok &= check(
		pf_ok(try_xrstor(RAM_END - 0x100), RAM_END - 0x100, RAM_END, 0),
		"xrstor64 across RAM's end: #PF");

	ok &= check(gp0(try_xsave(0x800000000000UL)) &&
			    gp0(try_xrstor(0x800000000000UL)) &&
			    gp0(try_xsave(0xffff7fffffffff00UL)) &&
			    gp0(try_xrstor(0x8000000000000000UL)),
		    "xsave64/xrstor64 at non-canonical addresses: #GP(0)");
	map_top(1);
	ok &= check(gp0(try_xsave(TOP_PAGE + PAGE - 0x100)) &&
			    gp0(try_xrstor(TOP_PAGE + PAGE - 0x100)),
		    "area from the last canonical page into non-canonical: "
		    "#GP(0)");
	map_top(0);
	ok &= check(gp0(try_xsave(TOP_PAGE + PAGE - 0x100)) &&
			    gp0(try_xrstor(TOP_PAGE + PAGE - 0x100)),
		    "the same with that page not present: #GP(0), not #PF");
	return ok;
}

/* xrstor64 of @bad must raise #GP(0) and leave MXCSR as it was. */
static int bad_header(const char *what)
{
	int ok = gp0(try_xrstor((u64)bad)) && stmxcsr() == MXCSR_PAT;

	return check(ok, what);
}

static int header_cases(void)
{
	u32 a, b, c, d;
	int ok = 1;

	copy(bad, good, area_size);
	put64(bad + XS_XSTATE_BV, get64(good + XS_XSTATE_BV) | 1UL << 63);
	ok &= bad_header("xrstor64, XSTATE_BV bit 63: #GP(0)");
	put64(bad + XS_XSTATE_BV, get64(good + XS_XSTATE_BV) | (xcr0 + 1));
	ok &= bad_header("xrstor64, XSTATE_BV bit outside XCR0: #GP(0)");
	copy(bad, good, area_size);
	put64(bad + XS_XCOMP_BV, 1);
	ok &= bad_header("xrstor64, XCOMP_BV 1: #GP(0)");
	copy(bad, good, area_size);
	bad[XS_XSTATE_BV + 19] = 1;
	ok &= bad_header("xrstor64, header byte 19 set: #GP(0)");
	copy(bad, good, area_size);
	put64(bad + XS_MXCSR, 0xffff0000UL | MXCSR_PAT);
	ok &= bad_header("xrstor64, MXCSR reserved bits: #GP(0)");
	fill(bad, 0xff, area_size);
	ok &= bad_header("xrstor64 of an all-ones area: #GP(0)");

	cpuid(0xd, 1, &a, &b, &c, &d);
	puts("hostile_xsave: CPUID.(0xD,1).EAX ");
	put_hex(a);
	serial_putc('\n');
	if (!(a & CPUIDD1_XSAVEC)) {
		copy(bad, good, area_size);
		put64(bad + XS_XCOMP_BV, 1UL << 63 | xcr0);
		ok &= bad_header("xrstor64, compacted form without XSAVEC: "
				 "#GP(0)");
	} else {
		puts("hostile_xsave: CPUID shows XSAVEC: compacted case "
		     "skipped\n");
	}

	copy(bad, good, area_size);
	fill(bad + XS_XSTATE_BV + 24, 0xa5, 40);
	ok &= check(try_xrstor((u64)bad) == -1 && stmxcsr() == MXCSR_PAT,
		    "xrstor64, header bytes 24-63 set: not checked, works");
	return ok;
}

int guest_main(void)
{
	u64 cr4;

	if (!setup_xsave()) {
		puts("hostile_xsave: no XSAVE: skipped\n");
		return 0;
	}
	idt_init(idt);
	idt_set(idt, VEC_UD, ud_handler);
	idt_set(idt, VEC_GP, gp_handler);
	idt_set(idt, VEC_PF, pf_handler);
	lidt(idt, IDT_VECTORS);

	/* A valid area with MXCSR_PAT, also on the (later) read-only page. */
	fill(good, 0, XS_AREA);
	good[0] = 0x7f; /* FCW 0x037f */
	good[1] = 0x03;
	put64(good + XS_MXCSR, MXCSR_PAT | 0xffffUL << 32);
	put64(good + XS_XSTATE_BV, 3);
	copy((u8 *)RO, good, area_size);
	build_page_tables();
	write_cr3((u64)pml4);
	if (!check(try_xrstor((u64)good) == -1 && stmxcsr() == MXCSR_PAT,
		   "own page tables loaded, xrstor64 of a good area"))
		return 1;

	if (!paging_cases())
		return 2;
	if (!header_cases())
		return 3;

	if (!check(try_lock_xsave((u64)bad) == VEC_UD, "lock xsave64: #UD"))
		return 4;
	asm volatile("mov %%cr4, %0" : "=r"(cr4));
	asm volatile("mov %0, %%cr4" : : "r"(cr4 & ~CR4_OSXSAVE));
	if (!check(try_xsave((u64)bad) == VEC_UD &&
			   try_xrstor((u64)good) == VEC_UD,
		   "xsave64/xrstor64 with CR4.OSXSAVE clear: #UD"))
		return 5;
	puts("hostile_xsave: all checks passed\n");
	return 0;
}
