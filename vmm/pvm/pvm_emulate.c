// SPDX-License-Identifier: Apache-2.0
/*
 * Fallbacks for the instructions a PVM host's kernel-mode emulator cannot
 * execute but that have an architectural answer (see pvm.h and
 * PLATFORM.md).  Each is emulated exactly as the SDM specifies, or the VM
 * stops with the RIP, the bytes and the registers.
 */
#include "pvm.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include <linux/kvm.h>

#include "gva.h"
#include "../log.h"
#include "x86_decode.h"
#include "xstate.h"

#define X86_CR4_OSXSAVE	   (1ULL << 18)
#define X86_CR4_OSFXSR	   (1ULL << 9)
#define VEC_UD		   6
#define VEC_BP		   3
#define VEC_GP		   13
#define VEC_PF		   14
#define MXCSR_DEFAULT_MASK 0xffbfu
/* Standard XSAVE format (SDM vol. 1 13.4): MXCSR, MXCSR_MASK; XSTATE_BV. */
#define XSTATE_MXCSR_OFFSET 24
#define XSTATE_BV_OFFSET    512

/* ModRM reg field of the 0f ae group (SDM vol. 2 table A-6). */
enum {
	GRP15_LDMXCSR = 2,
	GRP15_STMXCSR = 3,
	GRP15_XSAVE = 4,
	GRP15_XRSTOR = 5,
	GRP15_XSAVEOPT = 6
};

struct emu {
	const struct pvm_vcpu *v;
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	struct gva_ctx ctx;
	uint64_t gpr[X86_NR_GPRS];
	uint8_t bytes[X86_MAX_INSN_LEN];
	size_t nbytes;
};

static void emu__load_gprs(struct emu *e)
{
	const struct kvm_regs *r = &e->regs;
	const uint64_t g[X86_NR_GPRS] = {
		r->rax, r->rcx, r->rdx, r->rbx, r->rsp, r->rbp, r->rsi, r->rdi,
		r->r8,	r->r9,	r->r10, r->r11, r->r12, r->r13, r->r14, r->r15,
	};

	memcpy(e->gpr, g, sizeof(g));
}

static unsigned int emu__cpl(const struct emu *e)
{
	return e->sregs.cs.selector & 3;
}

static int emu__inject(struct emu *e, unsigned int vector, bool has_ec,
		       uint32_t ec, uint64_t cr2)
{
	struct kvm_vcpu_events ev;

	if (vector == VEC_PF) {
		e->sregs.cr2 = cr2;
		if (ioctl(e->v->fd, KVM_SET_SREGS, &e->sregs) < 0)
			return -errno;
	}
	if (ioctl(e->v->fd, KVM_GET_VCPU_EVENTS, &ev) < 0)
		return -errno;
	ev.exception.injected = 1;
	ev.exception.nr = (uint8_t)vector;
	ev.exception.has_error_code = has_ec;
	ev.exception.error_code = ec;
	ev.flags = 0;
	if (ioctl(e->v->fd, KVM_SET_VCPU_EVENTS, &ev) < 0)
		return -errno;
	return 0;
}

static int emu__skip(struct emu *e, unsigned int len)
{
	e->regs.rip += len;
	if (ioctl(e->v->fd, KVM_SET_REGS, &e->regs) < 0)
		return -errno;
	return 0;
}

/* A guest-virtual access faulted (-EFAULT: #PF, -EINVAL: #GP): inject it. */
static int emu__fault(struct emu *e, int err, uint32_t pfec, uint64_t addr)
{
	if (emu__cpl(e) == 3)
		pfec |= GVA_ACCESS_USER;
	if (err == -EFAULT)
		return emu__inject(e, VEC_PF, true, pfec, addr);
	return emu__inject(e, VEC_GP, true, 0, 0);
}

static unsigned int emu__access(const struct emu *e, bool write)
{
	return (write ? GVA_ACCESS_WRITE : 0) |
	       (emu__cpl(e) == 3 ? GVA_ACCESS_USER : 0);
}

/* A gva__check()/gva__copy() answer: inject the fault, or stop. */
static int emu__result(struct emu *e, int ret, uint32_t pfec,
		       uint64_t fault_gva, int *faulted)
{
	if (ret == -EFAULT || ret == -EINVAL) {
		*faulted = 1;
		return emu__fault(e, ret, pfec, fault_gva);
	}
	if (ret == -EIO)
		log_error("vCPU %u: emulated access at 0x%llx reaches outside "
			  "guest RAM (page tables or area point there)",
			  e->v->id, (unsigned long long)fault_gva);
	else if (ret)
		log_error("vCPU %u: emulated access at 0x%llx: %s", e->v->id,
			  (unsigned long long)fault_gva, strerror(-ret));
	return ret;
}

static int emu__copy(struct emu *e, uint64_t gva, void *buf, uint64_t len,
		     bool write, int *faulted)
{
	uint64_t fault_gva = gva;
	uint32_t pfec = 0;
	int ret;

	*faulted = 0;
	ret = gva__copy(e->v->mem, &e->ctx, gva, buf, len,
			emu__access(e, write), &pfec, &fault_gva);
	return emu__result(e, ret, pfec, fault_gva, faulted);
}

/* Would a write of @len bytes at @gva succeed?  As emu__copy(). */
static int emu__check_write(struct emu *e, uint64_t gva, uint64_t len,
			    int *faulted)
{
	uint64_t fault_gva = gva;
	uint32_t pfec = 0;
	int ret;

	*faulted = 0;
	ret = gva__check(e->v->mem, &e->ctx, gva, len, emu__access(e, true),
			 &pfec, &fault_gva);
	return emu__result(e, ret, pfec, fault_gva, faulted);
}

/*
 * MXCSR goes through KVM_GET_XSAVE/KVM_SET_XSAVE, the path XSAVE/XRSTOR use,
 * not KVM_GET_FPU/KVM_SET_FPU: on the PVM host KVM_GET_FPU read MXCSR 0
 * (reset value 0x1f80) and a KVM_SET_FPU MXCSR never reached the vCPU
 * (tests/guests/fpu.c: stmxcsr after ldmxcsr 0x7f80 stored 0, xsave64
 * stored 0x1f80).
 */
static int emu__mxcsr(struct emu *e, const struct x86_insn *in, uint64_t ea)
{
	struct kvm_xsave live;
	uint8_t *r = (uint8_t *)live.region;
	uint32_t val, mask;
	uint64_t bv;
	int faulted, ret;

	if (!(e->sregs.cr4 & X86_CR4_OSFXSR))
		return emu__inject(e, VEC_UD, false, 0, 0);
	if (ioctl(e->v->fd, KVM_GET_XSAVE, &live) < 0)
		return -errno;
	if (in->reg == GRP15_STMXCSR) {
		memcpy(&val, r + XSTATE_MXCSR_OFFSET, 4);
		ret = emu__copy(e, ea, &val, 4, true, &faulted);
		if (ret || faulted)
			return ret;
		return emu__skip(e, in->len);
	}
	ret = emu__copy(e, ea, &val, 4, false, &faulted);
	if (ret || faulted)
		return ret;
	memcpy(&mask, r + XSTATE_MXCSR_OFFSET + 4, 4);
	if (!mask)
		mask = MXCSR_DEFAULT_MASK;
	if (val & ~mask)
		return emu__inject(e, VEC_GP, true, 0, 0);
	memcpy(r + XSTATE_MXCSR_OFFSET, &val, 4);
	/* KVM takes MXCSR from the buffer only when SSE or AVX is marked. */
	memcpy(&bv, r + XSTATE_BV_OFFSET, 8);
	bv |= XSTATE_SSE;
	memcpy(r + XSTATE_BV_OFFSET, &bv, 8);
	if (ioctl(e->v->fd, KVM_SET_XSAVE, &live) < 0)
		return -errno;
	return emu__skip(e, in->len);
}

/*
 * The checks XSAVE-family instructions share: #UD without CR4.OSXSAVE or
 * with a LOCK/REP/66 prefix (SDM vol. 2).  Returns true when #UD applies.
 */
static bool emu__xsave_ud(const struct emu *e, const struct x86_insn *in)
{
	return !(e->sregs.cr4 & X86_CR4_OSXSAVE) || in->lock || in->rep ||
	       in->repne || in->op66;
}

/* The guest's XCR0, through KVM_GET_XCRS.  Returns 0 or -errno. */
static int emu__xcr0(const struct emu *e, uint64_t *xcr0)
{
	struct kvm_xcrs xcrs;
	unsigned int i;

	if (ioctl(e->v->fd, KVM_GET_XCRS, &xcrs) < 0)
		return -errno;
	*xcr0 = 0;
	for (i = 0; i < xcrs.nr_xcrs && i < KVM_MAX_XCRS; i++)
		if (xcrs.xcrs[i].xcr == 0)
			*xcr0 = xcrs.xcrs[i].value;
	return 0;
}

static int emu__xsave_family(struct emu *e, const struct x86_insn *in,
			     uint64_t ea)
{
	const struct xstate_layout *l = e->v->xstate;
	struct kvm_xsave live;
	uint8_t area[XSTATE_LIVE_SIZE];
	uint64_t xcr0 = 0, rfbm;
	uint32_t size, mxcsr_mask;
	int faulted, ret;
	bool save = in->reg != GRP15_XRSTOR;

	if (emu__xsave_ud(e, in))
		return emu__inject(e, VEC_UD, false, 0, 0);
	if (ea & 63)
		return emu__inject(e, VEC_GP, true, 0, 0);
	ret = emu__xcr0(e, &xcr0);
	if (ret)
		return ret;
	rfbm = xcr0 &
	       ((uint64_t)(uint32_t)e->regs.rdx << 32 | (uint32_t)e->regs.rax);
	size = xstate__area_size(l, rfbm);
	if (!size || size > sizeof(area)) {
		log_error("vCPU %u: xsave components 0x%llx unknown to ember",
			  e->v->id, (unsigned long long)rfbm);
		return -ENOTSUP;
	}
	if (ioctl(e->v->fd, KVM_GET_XSAVE, &live) < 0)
		return -errno;
	/*
	 * XSAVE is a store: a fault on its area is a write fault (#PF with
	 * W=1), and must come before anything changes (a #PF retries).
	 */
	if (save) {
		ret = emu__check_write(e, ea, size, &faulted);
		if (ret || faulted)
			return ret;
	}
	ret = emu__copy(e, ea, area, size, false, &faulted);
	if (ret || faulted)
		return ret;
	if (save) {
		xstate__save(l, (const uint8_t *)live.region, rfbm, area);
		ret = emu__copy(e, ea, area, size, true, &faulted);
		if (ret || faulted)
			return ret;
		return emu__skip(e, in->len);
	}
	memcpy(&mxcsr_mask,
	       (const uint8_t *)live.region + XSTATE_MXCSR_OFFSET + 4, 4);
	if (!mxcsr_mask)
		mxcsr_mask = MXCSR_DEFAULT_MASK;
	ret = xstate__restore(l, (uint8_t *)live.region, rfbm, xcr0, mxcsr_mask,
			      area);
	if (ret == -ENOTSUP) {
		log_error(
			"vCPU %u: xrstor of a compacted XSAVE area at 0x%llx: "
			"ember emulates only the standard form",
			e->v->id, (unsigned long long)ea);
		return ret;
	}
	if (ret)
		return emu__inject(e, VEC_GP, true, 0, 0);
	if (ioctl(e->v->fd, KVM_SET_XSAVE, &live) < 0)
		return -errno;
	return emu__skip(e, in->len);
}

/*
 * XGETBV (SDM vol. 2B): ECX 0 reads XCR0.  ECX 1 (XINUSE) exists only with
 * XGETBV1, which the PVM profile hides, so it faults like any other ECX.
 */
static int emu__xgetbv(struct emu *e, const struct x86_insn *in)
{
	uint64_t xcr0;
	int ret;

	if (emu__xsave_ud(e, in))
		return emu__inject(e, VEC_UD, false, 0, 0);
	if ((uint32_t)e->regs.rcx != 0)
		return emu__inject(e, VEC_GP, true, 0, 0);
	ret = emu__xcr0(e, &xcr0);
	if (ret)
		return ret;
	e->regs.rax = (uint32_t)xcr0;
	e->regs.rdx = xcr0 >> 32;
	return emu__skip(e, in->len);
}

static int emu__fetch(struct emu *e)
{
	uint64_t rip = e->sregs.cs.base + e->regs.rip, gpa;
	uint32_t pfec;
	const uint8_t *p;

	for (e->nbytes = 0; e->nbytes < X86_MAX_INSN_LEN; e->nbytes++) {
		if (gva__translate(e->v->mem, &e->ctx, rip + e->nbytes,
				   GVA_ACCESS_FETCH, &gpa, &pfec))
			break;
		p = guest_mem__ptr(e->v->mem, gpa, 1);
		if (!p)
			break;
		e->bytes[e->nbytes] = *p;
	}
	return e->nbytes ? 0 : -EFAULT;
}

static const char *emu__name(const struct x86_insn *in)
{
	static const char *const grp15[8] = {
		[GRP15_LDMXCSR] = "ldmxcsr",   [GRP15_STMXCSR] = "stmxcsr",
		[GRP15_XSAVE] = "xsave",       [GRP15_XRSTOR] = "xrstor",
		[GRP15_XSAVEOPT] = "xsaveopt",
	};

	if (!in->two_byte)
		return in->opcode == 0xcc ? "int3" : "fwait";
	if (in->opcode == 0x01)
		return "xgetbv";
	return grp15[in->reg & 7] ? grp15[in->reg & 7] : "0f ae";
}

static void emu__report(struct emu *e, const char *why)
{
	char hex[X86_MAX_INSN_LEN * 3 + 1] = "";
	size_t i;

	for (i = 0; i < e->nbytes; i++)
		snprintf(hex + i * 3, sizeof(hex) - i * 3, "%02x ",
			 e->bytes[i]);
	log_error("vCPU %u: guest instruction the host cannot emulate (%s) at "
		  "rip 0x%llx, cpl %u: %s",
		  e->v->id, why, (unsigned long long)e->regs.rip, emu__cpl(e),
		  hex);
}

int pvm__emulate(const struct pvm_vcpu *v, bool *dump)
{
	struct emu e = { .v = v };
	struct x86_insn in;
	uint64_t ea, seg = 0;
	int ret;

	*dump = false;
	if (ioctl(v->fd, KVM_GET_REGS, &e.regs) < 0 ||
	    ioctl(v->fd, KVM_GET_SREGS, &e.sregs) < 0) {
		log_error(
			"vCPU %u: emulation failure, registers unreadable: %s",
			v->id, strerror(errno));
		return -errno;
	}
	*dump = true; /* each failure from here on is reported first */
	e.ctx = (struct gva_ctx){ e.sregs.cr0, e.sregs.cr3, e.sregs.cr4,
				  e.sregs.efer };
	emu__load_gprs(&e);
	if (emu__fetch(&e)) {
		emu__report(&e, "instruction bytes unreadable");
		return -EFAULT;
	}
	ret = x86__decode(e.bytes, e.nbytes, &in);
	if (ret) {
		emu__report(&e, "not an instruction ember emulates");
		return ret;
	}
	if (!in.two_byte && in.opcode == 0xcc) {
		/* int3: a trap; #BP is delivered with RIP after the int3. */
		ret = emu__skip(&e, in.len);
		if (!ret)
			ret = emu__inject(&e, VEC_BP, false, 0, 0);
		goto out;
	}
	if (!in.two_byte && in.opcode == 0x9b) {
		/* fwait: ember never leaves an x87 exception pending. */
		ret = emu__skip(&e, in.len);
		goto out;
	}
	if (in.opcode == 0x01) {
		/* 0f 01 d0: xgetbv, which this host cannot run at CPL0. */
		if (in.mod != 3 || in.reg != 2 || in.rm != 0) {
			emu__report(&e, "0f 01 form ember does not emulate");
			return -ENOTSUP;
		}
		ret = emu__xgetbv(&e, &in);
		goto out;
	}
	if (in.mod == 3) {
		emu__report(&e, "register form of 0f ae");
		return -ENOTSUP;
	}
	if (in.seg == 0x64)
		seg = e.sregs.fs.base;
	else if (in.seg == 0x65)
		seg = e.sregs.gs.base;
	ea = x86__mem_address(&in, e.gpr, e.regs.rip, seg);
	switch (in.reg) {
	case GRP15_LDMXCSR:
	case GRP15_STMXCSR:
		ret = emu__mxcsr(&e, &in, ea);
		break;
	case GRP15_XSAVE:
	case GRP15_XRSTOR:
	case GRP15_XSAVEOPT:
		ret = emu__xsave_family(&e, &in, ea);
		break;
	default:
		emu__report(&e, "0f ae form ember does not emulate");
		return -ENOTSUP;
	}
out:
	if (ret) {
		emu__report(&e, strerror(-ret));
		return ret;
	}
	log_debug("vCPU %u: emulated %s at rip 0x%llx", v->id, emu__name(&in),
		  (unsigned long long)e.regs.rip);
	return 0;
}
