/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Faults a tiny guest expects and survives: #UD, #GP and #PF handlers
 * that, when f_recover holds an address, record the fault (f_vec, f_ec,
 * f_rip, f_cr2), count it (f_count), clear f_recover and resume at that
 * address; with f_recover 0 they pass the fault to the catch-all, which
 * ends the VM with EXIT_EXCEPTION + vector.  A guest installs the ones it
 * needs with idt_set().  Include once, after guest.h (each guest is one
 * translation unit).
 */
#ifndef EMBER_TESTS_GUEST_RECOVER_H
#define EMBER_TESTS_GUEST_RECOVER_H

#include "guest.h"

/* Written by the handlers; not static: the asm below names them. */
volatile u64 f_count, f_vec, f_ec, f_rip, f_cr2, f_recover;

void ud_handler(void);
void gp_handler(void);
void pf_handler(void);

/* has_ec: the CPU pushed an error code (#GP, #PF); else 0 is pushed. */
asm(".macro recover_handler name, vec, has_ec\n"
    ".globl \\name\n"
    "\\name:\n"
    "	.if !\\has_ec\n"
    "	pushq $0\n"
    "	.endif\n"
    "	pushq %rax\n"
    "	movq $\\vec, %rax\n"
    "	movq %rax, f_vec(%rip)\n"
    "	movq 8(%rsp), %rax\n"
    "	movq %rax, f_ec(%rip)\n"
    "	movq 16(%rsp), %rax\n"
    "	movq %rax, f_rip(%rip)\n"
    "	movq %cr2, %rax\n"
    "	movq %rax, f_cr2(%rip)\n"
    "	movq f_recover(%rip), %rax\n"
    "	testq %rax, %rax\n"
    "	jz 1f\n"
    "	movq %rax, 16(%rsp)\n"
    "	movq $0, f_recover(%rip)\n"
    "	incq f_count(%rip)\n"
    "	popq %rax\n"
    "	addq $8, %rsp\n"
    "	iretq\n"
    "1:	popq %rax\n"
    "	.if !\\has_ec\n"
    "	addq $8, %rsp\n"
    "	.endif\n"
    "	jmp *guest_exc_stubs+\\vec*8(%rip)\n"
    ".endm\n"
    ".text\n"
    "recover_handler ud_handler, 6, 0\n"
    "recover_handler gp_handler, 13, 1\n"
    "recover_handler pf_handler, 14, 1\n");

/*
 * RECOVER_TRY(name, insn) defines int name(u64 area): run @insn (an asm
 * string; %0 is @area in rdi, eax and edx hold ~0: an all-components
 * XSAVE mask) with f_recover set, and return the vector it faulted with,
 * or -1 when it did not fault.
 */
#define RECOVER_TRY(name, insn)                                          \
	static int name(u64 area)                                        \
	{                                                                \
		u64 before = f_count;                                    \
                                                                         \
		asm volatile("leaq 1f(%%rip), %%r8\n\t"                  \
			     "movq %%r8, f_recover(%%rip)\n\t" insn "\n" \
			     "1:\n\t"                                    \
			     "movq $0, f_recover(%%rip)"                 \
			     :                                           \
			     : "D"(area), "a"(~0U), "d"(~0U)             \
			     : "r8", "memory");                          \
		return f_count != before ? (int)f_vec : -1;              \
	}

#endif /* EMBER_TESTS_GUEST_RECOVER_H */
