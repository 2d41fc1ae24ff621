// SPDX-License-Identifier: Apache-2.0
/* Unit tests for vmm/pvm/x86_decode.c: the 0f ae / int3 / fwait decoder. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../vmm/pvm/x86_decode.h"

#define X86_R12 12

/* Distinct register values: gpr[r] = 0x1000 * (r + 1). */
static void fill_gprs(uint64_t *gpr)
{
	unsigned int r;

	for (r = 0; r < X86_NR_GPRS; r++)
		gpr[r] = 0x1000ULL * (r + 1);
}

static void decode_ok(const uint8_t *b, size_t n, struct x86_insn *i)
{
	assert_int_equal(x86__decode(b, n, i), 0);
	assert_int_equal(i->len, n);
}

/* Every strict prefix of a valid encoding is -EAGAIN. */
static void assert_truncations(const uint8_t *b, size_t n)
{
	struct x86_insn i;
	size_t k;

	for (k = 0; k < n; k++)
		assert_int_equal(x86__decode(b, k, &i), -EAGAIN);
}

static void test_int3_fwait(void **state)
{
	static const uint8_t int3[] = { 0xcc, 0x90, 0x90 };
	static const uint8_t fwait[] = { 0x9b };
	struct x86_insn i;

	(void)state;
	assert_int_equal(x86__decode(int3, sizeof(int3), &i), 0);
	assert_int_equal(i.len, 1);
	assert_int_equal(i.opcode, 0xcc);
	assert_int_equal(i.two_byte, 0);
	assert_int_equal(i.has_modrm, 0);
	assert_int_equal(i.rex, 0);

	decode_ok(fwait, sizeof(fwait), &i);
	assert_int_equal(i.opcode, 0x9b);
	assert_int_equal(i.two_byte, 0);
	assert_int_equal(i.has_modrm, 0);
}

static void test_xsave_family(void **state)
{
	static const uint8_t xsave[] = { 0x48, 0x0f, 0xae, 0x27 };
	static const uint8_t xrstor[] = { 0x48, 0x0f, 0xae, 0x2f };
	static const uint8_t xsaveopt[] = { 0x48, 0x0f, 0xae, 0x37 };
	uint64_t gpr[X86_NR_GPRS];
	struct x86_insn i;

	(void)state;
	fill_gprs(gpr);
	decode_ok(xsave, sizeof(xsave), &i);
	assert_int_equal(i.rex, 0x48);
	assert_int_equal(i.two_byte, 1);
	assert_int_equal(i.opcode, 0xae);
	assert_int_equal(i.has_modrm, 1);
	assert_int_equal(i.mod, 0);
	assert_int_equal(i.reg, 4);
	assert_int_equal(i.rm, X86_RDI);
	assert_int_equal(i.base, X86_RDI);
	assert_int_equal(i.index, -1);
	assert_int_equal(i.scale, 1);
	assert_int_equal(i.rip_relative, 0);
	assert_int_equal(i.disp, 0);
	assert_int_equal(x86__mem_address(&i, gpr, 0x5000, 0), gpr[X86_RDI]);

	decode_ok(xrstor, sizeof(xrstor), &i);
	assert_int_equal(i.reg, 5);
	assert_int_equal(i.base, X86_RDI);

	decode_ok(xsaveopt, sizeof(xsaveopt), &i);
	assert_int_equal(i.reg, 6);
	assert_int_equal(i.base, X86_RDI);
}

static void test_sib_disp8(void **state)
{
	/* ldmxcsr 8(%rsp) */
	static const uint8_t b[] = { 0x0f, 0xae, 0x54, 0x24, 0x08 };
	/* ldmxcsr -8(%rbp): mod 1, rm 5 is rbp, not RIP-relative */
	static const uint8_t rbp[] = { 0x0f, 0xae, 0x55, 0xf8 };
	uint64_t gpr[X86_NR_GPRS];
	struct x86_insn i;

	(void)state;
	fill_gprs(gpr);
	decode_ok(b, sizeof(b), &i);
	assert_int_equal(i.rex, 0);
	assert_int_equal(i.mod, 1);
	assert_int_equal(i.reg, 2);
	assert_int_equal(i.rm, 4);
	assert_int_equal(i.base, X86_RSP);
	assert_int_equal(i.index, -1);
	assert_int_equal(i.disp, 8);
	assert_int_equal(x86__mem_address(&i, gpr, 0, 0), gpr[X86_RSP] + 8);

	decode_ok(rbp, sizeof(rbp), &i);
	assert_int_equal(i.rip_relative, 0);
	assert_int_equal(i.base, X86_RBP);
	assert_int_equal(i.disp, -8);
	assert_int_equal(x86__mem_address(&i, gpr, 0, 0), gpr[X86_RBP] - 8);
}

static void test_rex_b_x(void **state)
{
	/* ldmxcsr (%r12): REX.B extends the SIB base */
	static const uint8_t b[] = { 0x41, 0x0f, 0xae, 0x14, 0x24 };
	/* ldmxcsr (%rsp,%r12,1): REX.X makes index 4 mean r12, not "none" */
	static const uint8_t x[] = { 0x42, 0x0f, 0xae, 0x14, 0x24 };
	/* xsave (%r15): REX.WB, no SIB */
	static const uint8_t r15[] = { 0x49, 0x0f, 0xae, 0x27 };
	uint64_t gpr[X86_NR_GPRS];
	struct x86_insn i;

	(void)state;
	fill_gprs(gpr);
	decode_ok(b, sizeof(b), &i);
	assert_int_equal(i.rex, 0x41);
	assert_int_equal(i.reg, 2);
	assert_int_equal(i.rm, X86_R12);
	assert_int_equal(i.base, X86_R12);
	assert_int_equal(i.index, -1);
	assert_int_equal(x86__mem_address(&i, gpr, 0, 0), gpr[X86_R12]);

	decode_ok(x, sizeof(x), &i);
	assert_int_equal(i.base, X86_RSP);
	assert_int_equal(i.index, X86_R12);
	assert_int_equal(i.scale, 1);
	assert_int_equal(x86__mem_address(&i, gpr, 0, 0),
			 gpr[X86_RSP] + gpr[X86_R12]);

	decode_ok(r15, sizeof(r15), &i);
	assert_int_equal(i.rm, 15);
	assert_int_equal(i.base, 15);
	assert_int_equal(x86__mem_address(&i, gpr, 0, 0), gpr[15]);
}

static void test_sib_index_scale(void **state)
{
	/* ldmxcsr (%rbx,%rcx,4): modrm 00 010 100, SIB 10 001 011 */
	static const uint8_t b[] = { 0x0f, 0xae, 0x14, 0x8b };
	/* stmxcsr 0x100(%rax,%rdx,8): mod 2, SIB 11 010 000, disp32 */
	static const uint8_t d32[] = { 0x0f, 0xae, 0x9c, 0xd0,
				       0x00, 0x01, 0x00, 0x00 };
	/* ldmxcsr 0x12345678(,%rsi,2): SIB base 5 with mod 0: no base */
	static const uint8_t nob[] = { 0x0f, 0xae, 0x14, 0x75,
				       0x78, 0x56, 0x34, 0x12 };
	/* ldmxcsr 0xfffffff0: SIB with neither base nor index */
	static const uint8_t abs[] = { 0x0f, 0xae, 0x14, 0x25,
				       0xf0, 0xff, 0xff, 0xff };
	uint64_t gpr[X86_NR_GPRS];
	struct x86_insn i;

	(void)state;
	fill_gprs(gpr);
	decode_ok(b, sizeof(b), &i);
	assert_int_equal(i.mod, 0);
	assert_int_equal(i.reg, 2);
	assert_int_equal(i.base, X86_RBX);
	assert_int_equal(i.index, X86_RCX);
	assert_int_equal(i.scale, 4);
	assert_int_equal(i.disp, 0);
	assert_int_equal(x86__mem_address(&i, gpr, 0, 0),
			 gpr[X86_RBX] + 4 * gpr[X86_RCX]);

	decode_ok(d32, sizeof(d32), &i);
	assert_int_equal(i.mod, 2);
	assert_int_equal(i.reg, 3);
	assert_int_equal(i.base, X86_RAX);
	assert_int_equal(i.index, X86_RDX);
	assert_int_equal(i.scale, 8);
	assert_int_equal(i.disp, 0x100);
	assert_int_equal(x86__mem_address(&i, gpr, 0, 0),
			 gpr[X86_RAX] + 8 * gpr[X86_RDX] + 0x100);

	decode_ok(nob, sizeof(nob), &i);
	assert_int_equal(i.base, -1);
	assert_int_equal(i.index, X86_RSI);
	assert_int_equal(i.scale, 2);
	assert_int_equal(i.rip_relative, 0);
	assert_int_equal(i.disp, 0x12345678);
	assert_int_equal(x86__mem_address(&i, gpr, 0x9999, 0),
			 2 * gpr[X86_RSI] + 0x12345678);

	decode_ok(abs, sizeof(abs), &i);
	assert_int_equal(i.base, -1);
	assert_int_equal(i.index, -1);
	assert_int_equal(i.disp, -16);
	assert_int_equal(x86__mem_address(&i, gpr, 0, 0), (uint64_t)-16);
}

static void test_rip_relative(void **state)
{
	/* ldmxcsr 0x100(%rip) */
	static const uint8_t b[] = { 0x0f, 0xae, 0x15, 0x00, 0x01, 0x00, 0x00 };
	/* REX.B does not turn RIP-relative into r13 */
	static const uint8_t rb[] = { 0x41, 0x0f, 0xae, 0x15,
				      0xfc, 0xff, 0xff, 0xff };
	uint64_t gpr[X86_NR_GPRS];
	struct x86_insn i;

	(void)state;
	fill_gprs(gpr);
	decode_ok(b, sizeof(b), &i);
	assert_int_equal(i.rip_relative, 1);
	assert_int_equal(i.base, -1);
	assert_int_equal(i.index, -1);
	assert_int_equal(i.disp, 0x100);
	/* Relative to the next instruction: rip + len + disp. */
	assert_int_equal(x86__mem_address(&i, gpr, 0x400000, 0),
			 0x400000 + 7 + 0x100);

	decode_ok(rb, sizeof(rb), &i);
	assert_int_equal(i.rip_relative, 1);
	assert_int_equal(i.base, -1);
	assert_int_equal(i.disp, -4);
	assert_int_equal(x86__mem_address(&i, gpr, 0x400000, 0),
			 0x400000 + 8 - 4);
}

static void test_prefixes(void **state)
{
	/* xsave %gs:0x10(%rdi) */
	static const uint8_t gs[] = { 0x65, 0x48, 0x0f, 0xae, 0x67, 0x10 };
	static const uint8_t fs[] = { 0x64, 0x0f, 0xae, 0x17 };
	/* null segment overrides, 66, f3, f2, f0 before 0f ae */
	static const uint8_t many[] = { 0x2e, 0x66, 0xf3, 0xf2,
					0xf0, 0x0f, 0xae, 0x17 };
	static const uint8_t ds[] = { 0x3e, 0x26, 0x36, 0xcc };
	uint64_t gpr[X86_NR_GPRS];
	struct x86_insn i;

	(void)state;
	fill_gprs(gpr);
	decode_ok(gs, sizeof(gs), &i);
	assert_int_equal(i.seg, 0x65);
	assert_int_equal(i.rex, 0x48);
	assert_int_equal(i.reg, 4);
	assert_int_equal(i.base, X86_RDI);
	assert_int_equal(i.disp, 0x10);
	assert_int_equal(x86__mem_address(&i, gpr, 0, 0x7f0000000000ULL),
			 0x7f0000000000ULL + gpr[X86_RDI] + 0x10);

	decode_ok(fs, sizeof(fs), &i);
	assert_int_equal(i.seg, 0x64);
	assert_int_equal(i.op66, 0);
	assert_int_equal(i.rep, 0);
	assert_int_equal(i.lock, 0);

	decode_ok(many, sizeof(many), &i);
	assert_int_equal(i.seg, 0);
	assert_int_equal(i.op66, 1);
	assert_int_equal(i.rep, 1);
	assert_int_equal(i.repne, 1);
	assert_int_equal(i.lock, 1);
	assert_int_equal(i.reg, 2);
	assert_int_equal(i.base, X86_RDI);

	decode_ok(ds, sizeof(ds), &i);
	assert_int_equal(i.seg, 0);
	assert_int_equal(i.opcode, 0xcc);
}

static void test_register_form(void **state)
{
	/* lfence: 0f ae e8 (mod 3) */
	static const uint8_t b[] = { 0x0f, 0xae, 0xe8 };
	struct x86_insn i;

	(void)state;
	decode_ok(b, sizeof(b), &i);
	assert_int_equal(i.mod, 3);
	assert_int_equal(i.reg, 5);
	assert_int_equal(i.rm, 0);
}

static void test_truncated(void **state)
{
	static const uint8_t a[] = { 0x65, 0x48, 0x0f, 0xae, 0x67, 0x10 };
	static const uint8_t b[] = { 0x0f, 0xae, 0x9c, 0xd0,
				     0x00, 0x01, 0x00, 0x00 };
	static const uint8_t c[] = { 0x0f, 0xae, 0x15, 0x00, 0x01, 0x00, 0x00 };
	static const uint8_t d[] = { 0x41, 0x0f, 0xae, 0x14, 0x24 };
	static const uint8_t e[] = { 0x66, 0xf0, 0xcc };

	(void)state;
	assert_truncations(a, sizeof(a));
	assert_truncations(b, sizeof(b));
	assert_truncations(c, sizeof(c));
	assert_truncations(d, sizeof(d));
	assert_truncations(e, sizeof(e));
}

static void test_unsupported(void **state)
{
	static const uint8_t nop[] = { 0x90 };
	static const uint8_t syscall[] = { 0x0f, 0x05 };
	static const uint8_t rex_nop[] = { 0x48, 0x90 };
	static const uint8_t addr32[] = { 0x67, 0x0f, 0xae, 0x17 };
	static const uint8_t addr32_late[] = { 0x66, 0x67, 0xcc };
	static const uint8_t rex_rex[] = { 0x48, 0x41, 0xcc };
	struct x86_insn i;

	(void)state;
	assert_int_equal(x86__decode(nop, sizeof(nop), &i), -ENOTSUP);
	assert_int_equal(x86__decode(syscall, sizeof(syscall), &i), -ENOTSUP);
	assert_int_equal(x86__decode(rex_nop, sizeof(rex_nop), &i), -ENOTSUP);
	assert_int_equal(x86__decode(addr32, sizeof(addr32), &i), -ENOTSUP);
	/* 0x67 is refused even before the rest is available. */
	assert_int_equal(x86__decode(addr32, 1, &i), -ENOTSUP);
	assert_int_equal(x86__decode(addr32_late, sizeof(addr32_late), &i),
			 -ENOTSUP);
	assert_int_equal(x86__decode(rex_rex, sizeof(rex_rex), &i), -ENOTSUP);
}

static void test_length_limit(void **state)
{
	uint8_t b[32];
	struct x86_insn i;

	(void)state;
	/* 14 prefixes + int3: exactly 15 bytes, valid. */
	memset(b, 0x66, sizeof(b));
	b[14] = 0xcc;
	assert_int_equal(x86__decode(b, sizeof(b), &i), 0);
	assert_int_equal(i.len, 15);
	assert_int_equal(i.op66, 1);
	assert_int_equal(x86__decode(b, 15, &i), 0);
	assert_int_equal(x86__decode(b, 14, &i), -EAGAIN);

	/* 15 prefixes + int3: 16 bytes, over the limit however much is given. */
	memset(b, 0x66, sizeof(b));
	b[15] = 0xcc;
	assert_int_equal(x86__decode(b, sizeof(b), &i), -ENOTSUP);
	assert_int_equal(x86__decode(b, 16, &i), -ENOTSUP);
	assert_int_equal(x86__decode(b, 15, &i), -ENOTSUP);
	assert_int_equal(x86__decode(b, 14, &i), -EAGAIN);

	/* 8 prefixes + 0f ae modrm sib disp32: 16 bytes. */
	memset(b, 0x66, sizeof(b));
	memcpy(b + 8,
	       (const uint8_t[]){ 0x0f, 0xae, 0x94, 0x24, 0x00, 0x01, 0x00,
				  0x00 },
	       8);
	assert_int_equal(x86__decode(b, sizeof(b), &i), -ENOTSUP);
	/* 7 prefixes: 15 bytes, valid. */
	assert_int_equal(x86__decode(b + 1, sizeof(b) - 1, &i), 0);
	assert_int_equal(i.len, 15);
	assert_int_equal(i.base, X86_RSP);
	assert_int_equal(i.disp, 0x100);
}

/* 0f 01 d0 is xgetbv: register form of the 0f 01 group, reg 2, rm 0. */
static void test_xgetbv(void **state)
{
	static const uint8_t b[] = { 0x0f, 0x01, 0xd0 };
	struct x86_insn i;

	(void)state;
	assert_int_equal(x86__decode(b, sizeof(b), &i), 0);
	assert_int_equal(i.len, 3);
	assert_int_equal(i.two_byte, 1);
	assert_int_equal(i.opcode, 0x01);
	assert_int_equal(i.mod, 3);
	assert_int_equal(i.reg, 2);
	assert_int_equal(i.rm, 0);
	assert_int_equal(x86__decode(b, 2, &i), -EAGAIN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_int3_fwait),
		cmocka_unit_test(test_xsave_family),
		cmocka_unit_test(test_sib_disp8),
		cmocka_unit_test(test_rex_b_x),
		cmocka_unit_test(test_sib_index_scale),
		cmocka_unit_test(test_rip_relative),
		cmocka_unit_test(test_prefixes),
		cmocka_unit_test(test_register_form),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_unsupported),
		cmocka_unit_test(test_length_limit),
		cmocka_unit_test(test_xgetbv),
	};

	return cmocka_run_group_tests_name("x86_decode", tests, NULL, NULL);
}
