// SPDX-License-Identifier: Apache-2.0
/* A vCPU's state in a snapshot (see parts.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include <linux/kvm.h>

#include "../log.h"
#include "../vcpu.h"
#include "parts.h"

#define VCPU_STATE_MAX_MSRS  1024
#define VCPU_STATE_MAX_CPUID 256
#define VCPU_STATE_MAX_XSAVE (64u << 10) /* bytes; hosts have ~11 KiB */

/*
 * MSRs a guest uses that KVM_GET_MSR_INDEX_LIST does not list: the MTRRs
 * (fixed, variable, default type), the TSC deadline timer, and the KVM
 * paravirtual MSRs (kvm-clock, async page faults, steal time, PV EOI,
 * poll control).  Saved when the host can read them.
 */
static const uint32_t
	vcpu_state_extra_msrs[] = {
		0x2ff, /* MTRR default type */
		0x250,	    0x258,	0x259, /* fixed-range MTRRs */
		0x268,	    0x269,	0x26a,	    0x26b,	0x26c,
		0x26d,	    0x26e,	0x26f,	    0x200,	0x201,
		0x202,	    0x203,	0x204,	    0x205,	0x206,
		0x207, /* variable */
		0x208,	    0x209,	0x20a,	    0x20b,	0x20c,
		0x20d,	    0x20e,	0x20f,	    0x277, /* PAT */
		0x6e0, /* TSC deadline */
		0x1a0, /* misc enable */
		0x4b564d00, 0x4b564d01, 0x4b564d02, 0x4b564d03, /* KVM PV */
		0x4b564d04, 0x4b564d05, 0x4b564d06, 0x4b564d07, 0x11,
		0x12, /* old kvm-clock wall clock / system time */
	};

static int vcpu_state__fail(const struct vcpu *v, const char *what)
{
	int ret = -errno;

	log_error("vCPU %u: %s: %s", v->id, what, strerror(errno));
	return ret ? ret : -EIO;
}

/* A raw kernel structure: u32 length, then its bytes. */
static void vcpu_state__put(struct snap_buf *b, const void *p, size_t n)
{
	snap_buf__u32(b, (uint32_t)n);
	snap_buf__bytes(b, p, n);
}

/* Read back a structure of exactly @n bytes, else refuse. */
static void vcpu_state__get(struct snap_cur *c, void *p, size_t n)
{
	if (snap_cur__u32(c) != n) {
		snap_cur__fail(c);
		memset(p, 0, n);
		return;
	}
	snap_cur__bytes(c, p, n);
}

/* The candidate MSRs: the host's list, then the extras not in it. */
static struct kvm_msrs *vcpu_state__msr_list(const struct vcpu *v)
{
	const unsigned int nextra = sizeof(vcpu_state_extra_msrs) /
				    sizeof(vcpu_state_extra_msrs[0]);
	struct kvm_msr_list probe = { .nmsrs = 0 }, *list;
	struct kvm_msrs *m = NULL;
	unsigned int i, j, n;

	/* The first call only says how many (E2BIG). */
	ioctl(v->ctx->kvm_fd, KVM_GET_MSR_INDEX_LIST, &probe);
	if (probe.nmsrs > VCPU_STATE_MAX_MSRS)
		return NULL;
	list = calloc(1, sizeof(*list) + probe.nmsrs * sizeof(uint32_t));
	if (!list)
		return NULL;
	list->nmsrs = probe.nmsrs;
	if (ioctl(v->ctx->kvm_fd, KVM_GET_MSR_INDEX_LIST, list) < 0)
		goto out;
	m = calloc(1, sizeof(*m) + (list->nmsrs + nextra) *
					   sizeof(struct kvm_msr_entry));
	if (!m)
		goto out;
	for (i = 0, n = 0; i < list->nmsrs; i++)
		m->entries[n++].index = list->indices[i];
	for (i = 0; i < nextra; i++) {
		for (j = 0; j < list->nmsrs; j++)
			if (list->indices[j] == vcpu_state_extra_msrs[i])
				break;
		if (j == list->nmsrs)
			m->entries[n++].index = vcpu_state_extra_msrs[i];
	}
	m->nmsrs = n;
out:
	free(list);
	return m;
}

/*
 * Read every candidate MSR; KVM_GET_MSRS stops at the first it cannot
 * read, which is dropped (the host does not have it) before going on.
 */
static int vcpu_state__get_msrs(const struct vcpu *v, struct kvm_msrs *m)
{
	struct kvm_msrs *part;
	unsigned int done = 0;

	part = malloc(sizeof(*part) + m->nmsrs * sizeof(m->entries[0]));
	if (!part)
		return -ENOMEM;
	while (done < m->nmsrs) {
		uint32_t left = m->nmsrs - done;
		int got;

		part->nmsrs = left;
		part->pad = 0;
		memcpy(part->entries, m->entries + done,
		       left * sizeof(m->entries[0]));
		got = ioctl(v->fd, KVM_GET_MSRS, part);
		if (got < 0) {
			free(part);
			return vcpu_state__fail(v, "KVM_GET_MSRS");
		}
		memcpy(m->entries + done, part->entries,
		       (size_t)got * sizeof(m->entries[0]));
		done += (unsigned int)got;
		if (done < m->nmsrs) {
			/* Entry @done is unreadable on this host: drop it. */
			memmove(m->entries + done, m->entries + done + 1,
				(m->nmsrs - done - 1) * sizeof(m->entries[0]));
			m->nmsrs--;
		}
	}
	free(part);
	return 0;
}

/* The XSAVE area's size: KVM_CAP_XSAVE2 says when it exceeds 4 KiB. */
static size_t vcpu_state__xsave_size(const struct vcpu *v)
{
	int n = ioctl(v->ctx->vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_XSAVE2);

	if (n > (int)sizeof(struct kvm_xsave) &&
	    (unsigned int)n <= VCPU_STATE_MAX_XSAVE)
		return (size_t)n;
	return sizeof(struct kvm_xsave);
}

/* A vCPU's fixed-size KVM structures, as save and restore move them. */
struct vcpu_state_fixed {
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	struct kvm_xcrs xcrs;
	struct kvm_lapic_state lapic;
	struct kvm_vcpu_events events;
	struct kvm_mp_state mp;
	struct kvm_debugregs dbg;
};

int vcpu_state__save(struct vcpu *v, struct snap_buf *b)
{
	struct vcpu_state_fixed f;
	struct kvm_cpuid2 *cpuid = NULL;
	struct kvm_msrs *msrs = NULL;
	void *xsave = NULL;
	size_t xsize = vcpu_state__xsave_size(v);
	unsigned int i;
	int ret;

	const struct {
		unsigned long req;
		void *arg;
		const char *name;
	} get[] = {
		{ KVM_GET_REGS, &f.regs, "KVM_GET_REGS" },
		{ KVM_GET_SREGS, &f.sregs, "KVM_GET_SREGS" },
		{ KVM_GET_XCRS, &f.xcrs, "KVM_GET_XCRS" },
		{ KVM_GET_LAPIC, &f.lapic, "KVM_GET_LAPIC" },
		{ KVM_GET_VCPU_EVENTS, &f.events, "KVM_GET_VCPU_EVENTS" },
		{ KVM_GET_MP_STATE, &f.mp, "KVM_GET_MP_STATE" },
		{ KVM_GET_DEBUGREGS, &f.dbg, "KVM_GET_DEBUGREGS" },
	};

	for (i = 0; i < sizeof(get) / sizeof(get[0]); i++)
		if (ioctl(v->fd, get[i].req, get[i].arg) < 0)
			return vcpu_state__fail(v, get[i].name);
	xsave = calloc(1, xsize);
	cpuid = calloc(1, sizeof(*cpuid) + VCPU_STATE_MAX_CPUID *
						   sizeof(cpuid->entries[0]));
	msrs = vcpu_state__msr_list(v);
	if (!xsave || !cpuid || !msrs) {
		ret = -ENOMEM;
		log_error("vCPU %u: no memory for its state", v->id);
		goto out;
	}
	if (ioctl(v->fd,
		  xsize > sizeof(struct kvm_xsave) ? KVM_GET_XSAVE2 :
						     KVM_GET_XSAVE,
		  xsave) < 0) {
		ret = vcpu_state__fail(v, "KVM_GET_XSAVE");
		goto out;
	}
	cpuid->nent = VCPU_STATE_MAX_CPUID;
	if (ioctl(v->fd, KVM_GET_CPUID2, cpuid) < 0) {
		ret = vcpu_state__fail(v, "KVM_GET_CPUID2");
		goto out;
	}
	ret = vcpu_state__get_msrs(v, msrs);
	if (ret)
		goto out;

	vcpu_state__put(b, &f.regs, sizeof(f.regs));
	vcpu_state__put(b, &f.sregs, sizeof(f.sregs));
	vcpu_state__put(b, xsave, xsize);
	vcpu_state__put(b, &f.xcrs, sizeof(f.xcrs));
	snap_buf__u32(b, msrs->nmsrs);
	for (i = 0; i < msrs->nmsrs; i++) {
		snap_buf__u32(b, msrs->entries[i].index);
		snap_buf__u64(b, msrs->entries[i].data);
	}
	vcpu_state__put(b, &f.lapic, sizeof(f.lapic));
	vcpu_state__put(b, &f.events, sizeof(f.events));
	vcpu_state__put(b, &f.mp, sizeof(f.mp));
	vcpu_state__put(b, &f.dbg, sizeof(f.dbg));
	snap_buf__u32(b, cpuid->nent);
	snap_buf__bytes(b, cpuid->entries,
			cpuid->nent * sizeof(cpuid->entries[0]));
out:
	free(msrs);
	free(cpuid);
	free(xsave);
	return ret;
}

int vcpu_state__restore(struct vcpu *v, struct snap_cur *c)
{
	struct vcpu_state_fixed f;
	struct kvm_cpuid2 *cpuid = NULL;
	struct kvm_msrs *msrs = NULL;
	void *xsave = NULL;
	uint32_t xsize, nmsrs, nent, i;
	int ret = -EINVAL, got;

	vcpu_state__get(c, &f.regs, sizeof(f.regs));
	vcpu_state__get(c, &f.sregs, sizeof(f.sregs));
	xsize = snap_cur__u32(c);
	/* The host's area must hold what was saved (same or larger). */
	if (xsize < sizeof(struct kvm_xsave) || xsize > VCPU_STATE_MAX_XSAVE ||
	    xsize > vcpu_state__xsave_size(v)) {
		log_error("vCPU %u: saved XSAVE area of %u bytes does not fit "
			  "this host's (%zu bytes)",
			  v->id, xsize, vcpu_state__xsave_size(v));
		return -EINVAL;
	}
	xsave = calloc(1, vcpu_state__xsave_size(v));
	if (!xsave)
		return -ENOMEM;
	snap_cur__bytes(c, xsave, xsize);
	vcpu_state__get(c, &f.xcrs, sizeof(f.xcrs));
	nmsrs = snap_cur__u32(c);
	if (nmsrs > VCPU_STATE_MAX_MSRS) {
		log_error("vCPU %u: %u MSRs saved, at most %u", v->id, nmsrs,
			  VCPU_STATE_MAX_MSRS);
		goto out;
	}
	msrs = calloc(1, sizeof(*msrs) + nmsrs * sizeof(msrs->entries[0]));
	if (!msrs) {
		ret = -ENOMEM;
		goto out;
	}
	msrs->nmsrs = nmsrs;
	for (i = 0; i < nmsrs; i++) {
		msrs->entries[i].index = snap_cur__u32(c);
		msrs->entries[i].data = snap_cur__u64(c);
	}
	vcpu_state__get(c, &f.lapic, sizeof(f.lapic));
	vcpu_state__get(c, &f.events, sizeof(f.events));
	vcpu_state__get(c, &f.mp, sizeof(f.mp));
	vcpu_state__get(c, &f.dbg, sizeof(f.dbg));
	nent = snap_cur__u32(c);
	if (nent > VCPU_STATE_MAX_CPUID) {
		log_error("vCPU %u: %u CPUID entries saved, at most %u", v->id,
			  nent, VCPU_STATE_MAX_CPUID);
		goto out;
	}
	cpuid = calloc(1, sizeof(*cpuid) + nent * sizeof(cpuid->entries[0]));
	if (!cpuid) {
		ret = -ENOMEM;
		goto out;
	}
	cpuid->nent = nent;
	snap_cur__bytes(c, cpuid->entries, nent * sizeof(cpuid->entries[0]));
	if (snap_cur__end(c)) {
		log_error("vCPU %u: its section is malformed", v->id);
		goto out;
	}

	/* Firecracker's order: CPUID first, MSRs after the LAPIC. */
	{
		const struct vcpu_state_set {
			unsigned long req;
			const void *arg;
			const char *name;
		} set[] = {
			{ KVM_SET_CPUID2, cpuid, "KVM_SET_CPUID2" },
			{ KVM_SET_MP_STATE, &f.mp, "KVM_SET_MP_STATE" },
			{ KVM_SET_REGS, &f.regs, "KVM_SET_REGS" },
			{ KVM_SET_SREGS, &f.sregs, "KVM_SET_SREGS" },
			{ KVM_SET_XSAVE, xsave, "KVM_SET_XSAVE" },
			{ KVM_SET_XCRS, &f.xcrs, "KVM_SET_XCRS" },
			{ KVM_SET_DEBUGREGS, &f.dbg, "KVM_SET_DEBUGREGS" },
			{ KVM_SET_LAPIC, &f.lapic, "KVM_SET_LAPIC" },
		};

		for (i = 0; i < sizeof(set) / sizeof(set[0]); i++) {
			/*
			 * A host without XSAVE has no XCRs to give: its
			 * KVM_GET_XCRS says nr_xcrs 0 and its KVM_SET_XCRS
			 * refuses any (EINVAL), even none (x86.c; api.rst
			 * 4.44, 4.45).
			 */
			if (set[i].req == KVM_SET_XCRS && !f.xcrs.nr_xcrs)
				continue;
			if (ioctl(v->fd, set[i].req, set[i].arg) < 0) {
				ret = vcpu_state__fail(v, set[i].name);
				goto out;
			}
		}
	}
	ret = -EINVAL;
	got = ioctl(v->fd, KVM_SET_MSRS, msrs);
	if (got < 0) {
		ret = vcpu_state__fail(v, "KVM_SET_MSRS");
		goto out;
	}
	if ((uint32_t)got != nmsrs) {
		log_error("vCPU %u: KVM_SET_MSRS took %d of %u MSRs: MSR 0x%x "
			  "refused",
			  v->id, got, nmsrs, msrs->entries[got].index);
		goto out;
	}
	if (ioctl(v->fd, KVM_SET_VCPU_EVENTS, &f.events) < 0) {
		ret = vcpu_state__fail(v, "KVM_SET_VCPU_EVENTS");
		goto out;
	}
	ret = 0;
out:
	free(cpuid);
	free(msrs);
	free(xsave);
	return ret;
}
