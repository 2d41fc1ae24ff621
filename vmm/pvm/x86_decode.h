/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A deliberately small x86-64 instruction decoder for the few
 * instructions ember emulates where the host cannot (vmm/pvm/pvm_emulate.c):
 * legacy prefixes, REX, one-byte opcodes and 0f-prefixed two-byte opcodes
 * with a ModRM memory operand (Intel SDM vol. 2A chapter 2).  Pure.
 */
#ifndef EMBER_VMM_X86_DECODE_H
#define EMBER_VMM_X86_DECODE_H

#include <stddef.h>
#include <stdint.h>

#define X86_MAX_INSN_LEN 15

/* General-purpose registers in encoding order (rax=0 ... r15=15). */
enum x86_gpr {
	X86_RAX,
	X86_RCX,
	X86_RDX,
	X86_RBX,
	X86_RSP,
	X86_RBP,
	X86_RSI,
	X86_RDI,
	X86_NR_GPRS = 16
};

struct x86_insn {
	uint8_t len; /* bytes, prefixes included */
	uint8_t rex; /* the REX byte, 0 if none */
	uint8_t op66, rep, repne, lock;
	uint8_t seg; /* 0, or 0x64 (FS) / 0x65 (GS) override */
	uint8_t two_byte; /* opcode was 0f xx */
	uint8_t opcode; /* the (second) opcode byte */
	uint8_t has_modrm;
	uint8_t mod, reg, rm; /* reg without REX.R; rm with REX.B */
	int8_t base, index; /* -1: none; with REX.B/REX.X applied */
	uint8_t scale; /* 1, 2, 4, 8 */
	uint8_t rip_relative;
	int64_t disp;
};

/*
 * x86__decode() - decode the instruction at @bytes (@n available, up to
 * X86_MAX_INSN_LEN).  Only the opcode map ember emulates is understood:
 * one-byte opcodes without operands, and 0f ae and 0f 01 with ModRM.
 * Returns 0, -EAGAIN if @n (< X86_MAX_INSN_LEN) is too short, -ENOTSUP
 * for anything else (other opcodes, the 0x67 address-size prefix, too
 * many prefixes: anything longer than X86_MAX_INSN_LEN bytes).
 */
int x86__decode(const uint8_t *bytes, size_t n, struct x86_insn *out);

/*
 * x86__mem_address() - the linear address of a decoded memory operand:
 * base + index*scale + disp (+ the next RIP when RIP-relative, + @seg_base).
 * @gpr holds the register values in enum x86_gpr order; @rip is the
 * address of the instruction.  Must not be called for mod == 3.
 */
uint64_t x86__mem_address(const struct x86_insn *i, const uint64_t *gpr,
			  uint64_t rip, uint64_t seg_base);

#endif /* EMBER_VMM_X86_DECODE_H */
