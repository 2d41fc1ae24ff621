// SPDX-License-Identifier: Apache-2.0
/*
 * int3 at CPL0 raises #BP through the guest's IDT with RIP after the int3.
 * On a PVM host the emulator cannot run int3; ember skips it and injects
 * #BP (vmm/pvm/pvm_emulate.c).
 */
#include "guest.h"

static struct idt_gate idt[IDT_VECTORS] __attribute__((aligned(16)));

/* Written by bp_handler (asm below), hence not static and volatile. */
volatile u64 bp_count, bp_rip, bp_cs;

void bp_handler(void);
asm(".text\n"
    ".globl bp_handler\n"
    "bp_handler:\n"
    "	pushq %rax\n"
    "	movq 8(%rsp), %rax\n" /* the pushed RIP */
    "	movq %rax, bp_rip(%rip)\n"
    "	movq 16(%rsp), %rax\n" /* the pushed CS */
    "	movq %rax, bp_cs(%rip)\n"
    "	incq bp_count(%rip)\n"
    "	popq %rax\n"
    "	iretq\n");

/* Execute one int3 (0xcc) and return the address right after it. */
static u64 do_int3(void)
{
	u64 after;

	asm volatile("leaq 1f(%%rip), %0\n\t"
		     ".byte 0xcc\n"
		     "1:"
		     : "=r"(after)
		     :
		     : "memory");
	return after;
}

int guest_main(void)
{
	u64 after1, after2;

	idt_init(idt);
	idt_set(idt, 3, bp_handler);
	lidt(idt, IDT_VECTORS);

	after1 = do_int3();
	if (!check(bp_count == 1, "first int3 reached the #BP handler"))
		return 1;
	puts("  rip ");
	put_hex(bp_rip);
	puts(" cs ");
	put_hex(bp_cs);
	serial_putc('\n');
	if (!check(bp_rip == after1, "#BP frame RIP is right after the int3"))
		return 2;
	if (!check((bp_cs & 0xffff) == KERNEL_CS, "#BP frame CS is 0x10"))
		return 3;

	after2 = do_int3();
	if (!check(bp_count == 2, "second int3 counted"))
		return 4;
	if (!check(bp_rip == after2 && after2 != after1,
		   "second #BP frame RIP is right after the second int3"))
		return 5;
	puts("int3: all checks passed\n");
	return 0;
}
