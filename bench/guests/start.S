/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Entry points of bench/vs-qemu's trivial guest: one image that both
 * ember and QEMU's microvm machine boot (see trivial.c).
 *
 * - ember loads the PT_LOAD segments at their p_paddr and enters _start
 *   (e_entry) in 64-bit long mode, paging on, the first 4 GiB
 *   identity-mapped, CS 0x10.
 * - QEMU finds the PVH entry in the XEN_ELFNOTE_PHYS32_ENTRY note below and
 *   enters pvh_start in 32-bit protected mode, paging off, flat segments,
 *   no stack.  pvh_start builds identity page tables for the first 4 GiB
 *   (2 MiB pages: the exit-status device sits at 3.25 GiB), enables PAE,
 *   sets EFER.LME, turns paging on and far-jumps through its own GDT into
 *   the same 64-bit code.
 *
 * Both then run guest_main() on this image's own stack and hand its
 * return value to both VMMs' exit devices (trivial.c).
 */
#define XEN_ELFNOTE_PHYS32_ENTRY 18
#define CR0_PE		0x00000001
#define CR0_PG		0x80000000
#define CR4_PAE		0x00000020
#define MSR_EFER	0xc0000080
#define EFER_LME	0x00000100
#define PTE_P_RW	0x003
#define PTE_PS		0x080	/* a 2 MiB page in a PD entry */
#define CODE64		0x10	/* the same selector ember's boot GDT uses */
#define DATA		0x18

/* The PVH entry note: name "Xen", an 8-byte physical entry address. */
	.section .note.pvh, "a", @note
	.balign	4
	.long	4			/* n_namesz */
	.long	8			/* n_descsz */
	.long	XEN_ELFNOTE_PHYS32_ENTRY
	.asciz	"Xen"
	.quad	pvh_start

	.section .text.start, "ax"
	.code64
	.globl	_start
_start:					/* ember: long mode already */
	cli
	movq	$stack_top, %rsp
	cld
	call	guest_main
	movl	%eax, %edi
	call	guest_exit		/* does not return */
1:	hlt
	jmp	1b

	.code32
	.globl	pvh_start
pvh_start:				/* QEMU: 32-bit, paging off */
	cli
	movl	$stack_top, %esp
	cld

	/* PML4[0] -> PDPT; PDPT[0..3] -> the 4 PDs; PD entries map 4 GiB. */
	movl	$pdpt + PTE_P_RW, pml4
	xorl	%ecx, %ecx
1:	movl	%ecx, %eax
	shll	$12, %eax
	addl	$pd + PTE_P_RW, %eax
	movl	%eax, pdpt(,%ecx,8)
	incl	%ecx
	cmpl	$4, %ecx
	jb	1b

	xorl	%ecx, %ecx		/* 2048 entries of 2 MiB */
2:	movl	%ecx, %eax
	shll	$21, %eax
	orl	$PTE_P_RW + PTE_PS, %eax
	movl	%eax, pd(,%ecx,8)	/* the high halves stay 0 (.bss) */
	incl	%ecx
	cmpl	$2048, %ecx
	jb	2b

	movl	%cr4, %eax
	orl	$CR4_PAE, %eax
	movl	%eax, %cr4
	movl	$pml4, %eax
	movl	%eax, %cr3
	movl	$MSR_EFER, %ecx
	rdmsr
	orl	$EFER_LME, %eax
	wrmsr
	movl	%cr0, %eax
	orl	$CR0_PG + CR0_PE, %eax
	movl	%eax, %cr0		/* long mode, compatibility submode */

	lgdt	gdt_desc
	ljmp	$CODE64, $long64

	.code64
long64:
	movl	$DATA, %eax
	movl	%eax, %ds
	movl	%eax, %es
	movl	%eax, %ss
	xorl	%eax, %eax
	movl	%eax, %fs
	movl	%eax, %gs
	jmp	_start

	.section .rodata
	.balign	8
gdt:
	.quad	0			/* 0x00 null */
	.quad	0			/* 0x08 unused */
	.quad	0x00af9b000000ffff	/* 0x10 64-bit code, DPL 0 */
	.quad	0x00cf93000000ffff	/* 0x18 data, DPL 0 */
gdt_end:
gdt_desc:
	.word	gdt_end - gdt - 1
	.long	gdt

	.section .bss
	.balign	4096
pml4:	.skip	4096
pdpt:	.skip	4096
pd:	.skip	4 * 4096
	.balign	16
	.skip	8192
stack_top:

	.section .note.GNU-stack, "", @progbits
