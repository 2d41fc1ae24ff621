/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Entry and exception stubs of the tiny test guests (see guest.h).
 * ember enters _start in 64-bit mode at CPL0 with a usable stack at
 * 0x8ff0: keep it, run guest_main() and hand its return value to the
 * exit-status device (guest-init/protocol.h), which ends the VM.
 */
#define EXIT_STATUS_GPA	0xd0001000

	.section .text.start, "ax"
	.globl	_start
_start:
	cld
	call	guest_main
	movl	$EXIT_STATUS_GPA, %edi
	movl	%eax, (%rdi)
1:	hlt
	jmp	1b

/*
 * One stub per architectural exception vector (0-31).  Vectors 8, 10-14,
 * 17, 21, 29 and 30 push an error code; the others get a 0 here so that
 * guest_exception() always sees the same frame.
 */
	.text
.irp v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
exc_stub_\v:
	.if (\v == 8) || (\v >= 10 && \v <= 14) || (\v == 17) || (\v == 21) || (\v == 29) || (\v == 30)
	.else
	pushq	$0
	.endif
	pushq	$\v
	jmp	exc_common
.endr

/* Stack: vector, error code, RIP, CS, RFLAGS, RSP, SS. */
exc_common:
	movq	(%rsp), %rdi
	movq	8(%rsp), %rsi
	movq	16(%rsp), %rdx
	andq	$-16, %rsp
	call	guest_exception
1:	hlt
	jmp	1b

	.section .rodata
	.balign	8
	.globl	guest_exc_stubs
guest_exc_stubs:
.irp v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	.quad	exc_stub_\v
.endr

	.section .note.GNU-stack, "", @progbits
