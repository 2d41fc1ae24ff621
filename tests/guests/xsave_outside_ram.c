// SPDX-License-Identifier: Apache-2.0
/*
 * xsave64/xrstor64 whose memory operand the guest's page tables place
 * outside guest RAM.  On real hardware such accesses go to whatever the
 * physical address holds (MMIO, or nothing: reads of all ones); ember's
 * emulation of these instructions on a PVM host (vmm/pvm/pvm_emulate.c) does
 * not route them to devices, so by design it stops the VM with one error
 * naming the address ("reaches outside guest RAM") and exits 125.  It
 * must never crash or touch host memory outside guest RAM.  On hardware
 * KVM the instruction runs natively and this guest returns 0 (whatever
 * the instruction did, or after catching #PF/#GP).
 *
 * One case per boot (the VM ends at the first), chosen with
 * `--append xcase=N`:
 *   1  xsave64 to a page whose PTE holds 0xfff00000000 (far past RAM)
 *   2  xrstor64 through a page directory entry pointing at a page table
 *      at 0xfff00000000
 *   3  xsave64 to the last 0x100 bytes of RAM (--mem 64), the area
 *      running into the next page, mapped but not RAM (ember's boot page
 *      tables map all of the first 4 GiB)
 *   4  xsave64 to a page mapped onto the exit-status device (0xd0001000):
 *      no MMIO write may reach it, the VM must not end with a status
 */
#include "guest.h"
#include "recover.h"

#define ZERO_PAGE_GPA	 0x7000UL /* boot/layout.h */
#define CMD_LINE_PTR_OFF 0x228 /* struct boot_params: hdr.cmd_line_ptr */
#define RAM_END		 0x4000000UL /* --mem 64 */
#define FAR_PA		 0xfff00000000UL
#define WINDOW_VA	 0x100000000UL /* 4 GiB: ember maps nothing here */

static struct idt_gate idt[IDT_VECTORS] __attribute__((aligned(16)));
static u64 pd[512] __attribute__((aligned(4096)));
static u64 pt[512] __attribute__((aligned(4096)));
static u8 good[4096] __attribute__((aligned(64)));

RECOVER_TRY(try_xsave, "xsave64 (%0)")
RECOVER_TRY(try_xrstor, "xrstor64 (%0)")

/* The N of "xcase=N" on the kernel command line, or 0. */
static int xcase(void)
{
	const char *line = (const char *)(u64) *
			   (volatile u32 *)(ZERO_PAGE_GPA + CMD_LINE_PTR_OFF);
	static const char key[] = "xcase=";
	const char *p;
	unsigned int i;

	for (p = line; *p; p++) {
		if (p != line && p[-1] != ' ')
			continue;
		for (i = 0; key[i] && p[i] == key[i]; i++)
			;
		if (!key[i] && p[i] >= '0' && p[i] <= '9')
			return p[i] - '0';
	}
	return 0;
}

/* Map the 2 MiB at WINDOW_VA through pt[] (entries set by the caller). */
static void map_window(u64 pd_entry)
{
	u64 cr3, *pml4, *pdpt;

	asm volatile("mov %%cr3, %0" : "=r"(cr3));
	pml4 = (u64 *)(cr3 & PTE_ADDR);
	pdpt = (u64 *)(pml4[0] & PTE_ADDR);
	pd[0] = pd_entry;
	pdpt[4] = (u64)pd | PTE_P | PTE_RW;
	asm volatile("mov %0, %%cr3" : : "r"(cr3) : "memory");
}

int guest_main(void)
{
	u32 a, b, c, d;
	u64 cr0, cr4;
	int n = xcase();

	asm volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1));
	if (!(c & CPUID1_XSAVE)) {
		puts("xsave_outside_ram: no XSAVE: skipped\n");
		return 0;
	}
	asm volatile("mov %%cr0, %0" : "=r"(cr0));
	asm volatile("mov %0, %%cr0"
		     :
		     : "r"((cr0 | CR0_MP) & ~(CR0_EM | CR0_TS)));
	asm volatile("mov %%cr4, %0" : "=r"(cr4));
	asm volatile("mov %0, %%cr4"
		     :
		     : "r"(cr4 | CR4_OSFXSR | CR4_OSXMMEXCPT | CR4_OSXSAVE));
	asm volatile("xsetbv" : : "c"(0), "a"(3), "d"(0));

	idt_init(idt);
	idt_set(idt, 13, gp_handler);
	idt_set(idt, 14, pf_handler);
	lidt(idt, IDT_VECTORS);

	good[0] = 0x7f; /* FCW 0x037f; MXCSR 0x1f80; XSTATE_BV 3 */
	good[1] = 0x03;
	good[24] = 0x80;
	good[25] = 0x1f;
	good[512] = 3;

	puts("xsave_outside_ram: case ");
	put_hex((u64)n);
	serial_putc('\n');
	switch (n) {
	case 1:
		pt[0] = FAR_PA | PTE_P | PTE_RW;
		map_window((u64)pt | PTE_P | PTE_RW);
		try_xsave(WINDOW_VA);
		break;
	case 2:
		map_window(FAR_PA | PTE_P | PTE_RW);
		try_xrstor(WINDOW_VA);
		break;
	case 3:
		try_xsave(RAM_END - 0x100);
		break;
	case 4:
		pt[0] = EXIT_STATUS_GPA | PTE_P | PTE_RW;
		map_window((u64)pt | PTE_P | PTE_RW);
		try_xsave(WINDOW_VA);
		break;
	default:
		puts("xsave_outside_ram: no xcase=N on the command line\n");
		return 1;
	}
	puts("xsave_outside_ram: the instruction ran natively (");
	put_hex(f_count);
	puts(" faults)\n");
	return 0;
}
