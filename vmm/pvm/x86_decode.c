// SPDX-License-Identifier: Apache-2.0
/* Minimal x86-64 decoder (see x86_decode.h). */
#include "x86_decode.h"

#include <errno.h>
#include <string.h>

static int x86__modrm(const uint8_t *b, size_t n, size_t *pos,
		      struct x86_insn *i)
{
	uint8_t modrm, sib;
	size_t disp_len = 0;
	size_t k;

	if (*pos >= n)
		return -EAGAIN;
	modrm = b[(*pos)++];
	i->has_modrm = 1;
	i->mod = modrm >> 6;
	i->reg = (modrm >> 3) & 7;
	i->rm = (uint8_t)((modrm & 7) | ((i->rex & 1) << 3));
	i->base = -1;
	i->index = -1;
	i->scale = 1;
	if (i->mod == 3)
		return 0;
	if ((modrm & 7) == 4) {
		if (*pos >= n)
			return -EAGAIN;
		sib = b[(*pos)++];
		i->scale = (uint8_t)(1u << (sib >> 6));
		if ((((sib >> 3) & 7) | ((i->rex & 2) << 2)) != 4)
			i->index = (int8_t)(((sib >> 3) & 7) |
					    ((i->rex & 2) << 2));
		if ((sib & 7) == 5 && i->mod == 0)
			disp_len = 4;
		else
			i->base = (int8_t)((sib & 7) | ((i->rex & 1) << 3));
	} else if ((modrm & 7) == 5 && i->mod == 0) {
		i->rip_relative = 1;
		disp_len = 4;
	} else {
		i->base = (int8_t)i->rm;
	}
	if (i->mod == 1)
		disp_len = 1;
	else if (i->mod == 2)
		disp_len = 4;
	if (*pos + disp_len > n)
		return -EAGAIN;
	if (disp_len == 1) {
		i->disp = (int8_t)b[*pos];
	} else if (disp_len == 4) {
		uint32_t d = 0;

		for (k = 0; k < 4; k++)
			d |= (uint32_t)b[*pos + k] << (8 * k);
		i->disp = (int32_t)d;
	}
	*pos += disp_len;
	return 0;
}

static int x86__decode_bytes(const uint8_t *b, size_t n, struct x86_insn *i)
{
	size_t pos = 0;
	int ret;

	for (;;) {
		if (pos >= n)
			return -EAGAIN;
		switch (b[pos]) {
		case 0x66:
			i->op66 = 1;
			break;
		case 0xf3:
			i->rep = 1;
			break;
		case 0xf2:
			i->repne = 1;
			break;
		case 0xf0:
			i->lock = 1;
			break;
		case 0x64:
		case 0x65:
			i->seg = b[pos];
			break;
		case 0x2e:
		case 0x36:
		case 0x3e:
		case 0x26:
			break; /* null segment overrides in 64-bit mode */
		case 0x67:
			return -ENOTSUP;
		default:
			goto prefixes_done;
		}
		pos++;
	}
prefixes_done:
	if ((b[pos] & 0xf0) == 0x40) {
		i->rex = b[pos++];
		if (pos >= n)
			return -EAGAIN;
	}
	if (b[pos] == 0x0f) {
		pos++;
		if (pos >= n)
			return -EAGAIN;
		i->two_byte = 1;
		i->opcode = b[pos++];
		if (i->opcode != 0xae && i->opcode != 0x01)
			return -ENOTSUP;
		ret = x86__modrm(b, n, &pos, i);
		if (ret)
			return ret;
	} else {
		i->opcode = b[pos++];
		if (i->opcode != 0xcc && i->opcode != 0x9b)
			return -ENOTSUP;
	}
	i->len = (uint8_t)pos;
	return 0;
}

int x86__decode(const uint8_t *b, size_t n, struct x86_insn *i)
{
	int ret;

	memset(i, 0, sizeof(*i));
	if (n < X86_MAX_INSN_LEN)
		return x86__decode_bytes(b, n, i);
	/* Running out of 15 bytes is an over-long instruction (#GP). */
	ret = x86__decode_bytes(b, X86_MAX_INSN_LEN, i);
	return ret == -EAGAIN ? -ENOTSUP : ret;
}

uint64_t x86__mem_address(const struct x86_insn *i, const uint64_t *gpr,
			  uint64_t rip, uint64_t seg_base)
{
	uint64_t a = (uint64_t)i->disp + seg_base;

	if (i->rip_relative)
		a += rip + i->len;
	if (i->base >= 0)
		a += gpr[i->base];
	if (i->index >= 0)
		a += gpr[i->index] * i->scale;
	return a;
}
