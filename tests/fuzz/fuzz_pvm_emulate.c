// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for what the PVM instruction fallbacks read from a
 * (possibly hostile) guest: instruction bytes (x86__decode), page tables
 * (gva__translate/gva__copy) and XSAVE areas (xstate__restore).  Any
 * crash, sanitizer report or access outside guest RAM is a bug.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "vmm/pvm/gva.h"
#include "vmm/mem.h"
#include "vmm/pvm/x86_decode.h"
#include "vmm/pvm/xstate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RAM_BYTES (1u << 20)

static uint8_t ram[RAM_BYTES] __attribute__((aligned(4096)));

static uint64_t take64(const uint8_t **p, size_t *n)
{
	uint64_t v = 0;
	size_t k = *n < 8 ? *n : 8;

	memcpy(&v, *p, k);
	*p += k;
	*n -= k;
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xstate_layout l = { .supported = 7 };
	uint8_t live[XSTATE_LIVE_SIZE] = { 0 }, area[1024], buf[64];
	uint64_t gpr[X86_NR_GPRS], gva, gpa, fault;
	struct x86_insn in;
	struct guest_mem m;
	struct gva_ctx c;
	uint32_t pfec;
	size_t i;

	if (x86__decode(data, size, &in) == 0 && in.has_modrm && in.mod != 3) {
		for (i = 0; i < X86_NR_GPRS; i++)
			gpr[i] = i * 0x1111111111111111ULL;
		(void)x86__mem_address(&in, gpr, 0xffffffff81000000ULL, 0);
	}

	/* The rest: control registers, an address, then guest RAM contents. */
	c.cr0 = take64(&data, &size) | (1ULL << 31);
	c.cr3 = take64(&data, &size);
	c.cr4 = take64(&data, &size) | (1ULL << 5);
	c.efer = take64(&data, &size) | (1ULL << 10);
	gva = take64(&data, &size);
	memset(ram, 0, 64 * 1024);
	memcpy(ram, data, size < RAM_BYTES ? size : RAM_BYTES);
	if (mem__wrap(&m, ram, RAM_BYTES))
		return 0;
	(void)gva__translate(&m, &c, gva, (unsigned int)(gva & 0x16), &gpa,
			     &pfec);
	(void)gva__copy(&m, &c, gva, buf, sizeof(buf),
			(unsigned int)(gva & 0x6), &pfec, &fault);

	l.offset[2] = 576;
	l.size[2] = 256;
	memset(area, 0, sizeof(area));
	memcpy(area, ram, size < sizeof(area) ? size : sizeof(area));
	(void)xstate__restore(&l, live, c.cr0 & 7, c.cr4 & 7, 0xffbf, area);
	xstate__save(&l, live, c.efer & 7, area);
	return 0;
}
