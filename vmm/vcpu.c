// SPDX-License-Identifier: Apache-2.0
/* vCPU set-up and the KVM_RUN loop (see vcpu.h). */
#include "vcpu.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../boot/cpu_tables.h"
#include "../boot/layout.h"
#include "bus.h"
#include "cpuid.h"
#include "seccomp/seccomp.h"
#include "log.h"
#include "pvm/pvm.h"

#define X86_CR0_PE   (1ULL << 0)
#define X86_CR0_ET   (1ULL << 4)
#define X86_CR0_NE   (1ULL << 5)
#define X86_CR0_PG   (1ULL << 31)
#define X86_CR4_PAE  (1ULL << 5)
#define X86_EFER_LME (1ULL << 8)
#define X86_EFER_LMA (1ULL << 10)

#define MSR_IA32_TSC	      0x10
#define MSR_IA32_SYSENTER_CS  0x174
#define MSR_IA32_SYSENTER_ESP 0x175
#define MSR_IA32_SYSENTER_EIP 0x176
#define MSR_IA32_MISC_ENABLE  0x1a0
#define MSR_MTRR_DEF_TYPE     0x2ff
#define MSR_STAR	      0xc0000081
#define MSR_LSTAR	      0xc0000082
#define MSR_CSTAR	      0xc0000083
#define MSR_SYSCALL_MASK      0xc0000084
#define MSR_KERNEL_GS_BASE    0xc0000102

#define APIC_LVT0	 0x350
#define APIC_LVT1	 0x360
#define APIC_MODE_NMI	 0x4
#define APIC_MODE_EXTINT 0x7

#define CPUID_MAX_ENTRIES 256

static int vcpu__set_cpuid(struct vcpu *v)
{
	const struct vcpu_ctx *ctx = v->ctx;
	struct kvm_cpuid2 *c;
	struct cpuid_cfg cfg = {
		.vcpu_id = v->id,
		.nr_vcpus = ctx->nr_vcpus,
		.pvm = ctx->pvm,
	};
	int ret = 0;

	c = calloc(1, sizeof(*c) + CPUID_MAX_ENTRIES * sizeof(c->entries[0]));
	if (!c)
		return -ENOMEM;
	c->nent = CPUID_MAX_ENTRIES;
	if (ioctl(ctx->kvm_fd, KVM_GET_SUPPORTED_CPUID, c) < 0) {
		ret = -errno;
		log_error("KVM_GET_SUPPORTED_CPUID: %s", strerror(errno));
		goto out;
	}
	cpuid__apply(c->entries, c->nent, &cfg);
	if (ioctl(v->fd, KVM_SET_CPUID2, c) < 0) {
		ret = -errno;
		log_error("vCPU %u: KVM_SET_CPUID2: %s", v->id,
			  strerror(errno));
	}
out:
	free(c);
	return ret;
}

static int vcpu__set_msrs(struct vcpu *v)
{
	static const struct {
		uint32_t index;
		uint64_t data;
	} boot_msrs[] = {
		{ MSR_IA32_SYSENTER_CS, 0 },
		{ MSR_IA32_SYSENTER_ESP, 0 },
		{ MSR_IA32_SYSENTER_EIP, 0 },
		{ MSR_STAR, 0 },
		{ MSR_CSTAR, 0 },
		{ MSR_KERNEL_GS_BASE, 0 },
		{ MSR_SYSCALL_MASK, 0 },
		{ MSR_LSTAR, 0 },
		{ MSR_IA32_TSC, 0 },
		{ MSR_IA32_MISC_ENABLE, 1 }, /* fast strings */
		{ MSR_MTRR_DEF_TYPE, (1 << 11) | 6 }, /* MTRRs on, WB */
	};
	const unsigned int n = sizeof(boot_msrs) / sizeof(boot_msrs[0]);
	struct kvm_msrs *m;
	unsigned int i;
	int ret;

	m = calloc(1, sizeof(*m) + n * sizeof(m->entries[0]));
	if (!m)
		return -ENOMEM;
	m->nmsrs = n;
	for (i = 0; i < n; i++) {
		m->entries[i].index = boot_msrs[i].index;
		m->entries[i].data = boot_msrs[i].data;
	}
	ret = ioctl(v->fd, KVM_SET_MSRS, m);
	if (ret < 0) {
		ret = -errno;
		log_error("vCPU %u: KVM_SET_MSRS: %s", v->id, strerror(errno));
	} else if ((unsigned int)ret != n) {
		/* Not fatal: the kernel programs what it needs itself. */
		log_info("vCPU %u: MSR 0x%x not accepted", v->id,
			 m->entries[ret].index);
		ret = 0;
	} else {
		ret = 0;
	}
	free(m);
	return ret;
}

static uint32_t lapic_get(const struct kvm_lapic_state *s, unsigned int reg)
{
	uint32_t v;

	memcpy(&v, s->regs + reg, 4);
	return v;
}

static void lapic_set(struct kvm_lapic_state *s, unsigned int reg, uint32_t v)
{
	memcpy(s->regs + reg, &v, 4);
}

static int vcpu__set_lapic(struct vcpu *v)
{
	struct kvm_lapic_state s;

	if (ioctl(v->fd, KVM_GET_LAPIC, &s) < 0)
		goto fail;
	/* LINT0 delivers the 8259's ExtINT, LINT1 NMIs (MP spec 5.1). */
	lapic_set(&s, APIC_LVT0,
		  (lapic_get(&s, APIC_LVT0) & ~0x700u) |
			  (APIC_MODE_EXTINT << 8));
	lapic_set(&s, APIC_LVT1,
		  (lapic_get(&s, APIC_LVT1) & ~0x700u) | (APIC_MODE_NMI << 8));
	if (ioctl(v->fd, KVM_SET_LAPIC, &s) < 0)
		goto fail;
	return 0;
fail:
	log_error("vCPU %u: LAPIC set-up: %s", v->id, strerror(errno));
	return -errno;
}

static void vcpu__segment(struct kvm_segment *k, const struct boot_segment *b)
{
	memset(k, 0, sizeof(*k));
	k->base = b->base;
	k->limit = b->limit;
	k->selector = b->selector;
	k->type = b->type;
	k->present = b->present;
	k->dpl = b->dpl;
	k->db = b->db;
	k->s = b->s;
	k->l = b->l;
	k->g = b->g;
	k->avl = b->avl;
}

/* Linux 64-bit boot protocol entry state (Documentation/x86/boot.rst). */
int vcpu__set_boot_state(struct vcpu *v, uint64_t entry)
{
	struct boot_segment code, data, tss;
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	struct kvm_fpu fpu;
	int ret;

	ret = cpu_tables__write(v->ctx->mem, &code, &data, &tss);
	if (ret) {
		log_error("writing page tables and GDT: %s", strerror(-ret));
		return ret;
	}
	if (ioctl(v->fd, KVM_GET_SREGS, &sregs) < 0)
		goto fail;
	vcpu__segment(&sregs.cs, &code);
	vcpu__segment(&sregs.ds, &data);
	sregs.es = sregs.fs = sregs.gs = sregs.ss = sregs.ds;
	vcpu__segment(&sregs.tr, &tss);
	sregs.gdt.base = LAYOUT_GDT_GPA;
	sregs.gdt.limit = LAYOUT_GDT_ENTRIES * 8 - 1;
	sregs.idt.base = LAYOUT_IDT_GPA;
	sregs.idt.limit = 7;
	sregs.cr0 = X86_CR0_PE | X86_CR0_ET | X86_CR0_NE | X86_CR0_PG;
	sregs.cr3 = LAYOUT_PML4_GPA;
	sregs.cr4 = X86_CR4_PAE;
	sregs.efer = X86_EFER_LME | X86_EFER_LMA;
	if (ioctl(v->fd, KVM_SET_SREGS, &sregs) < 0)
		goto fail;

	memset(&regs, 0, sizeof(regs));
	regs.rflags = 0x2;
	regs.rip = entry;
	regs.rsi = LAYOUT_ZERO_PAGE_GPA;
	regs.rsp = regs.rbp = LAYOUT_BOOT_STACK_GPA;
	if (ioctl(v->fd, KVM_SET_REGS, &regs) < 0)
		goto fail;

	memset(&fpu, 0, sizeof(fpu));
	fpu.fcw = 0x37f;
	fpu.mxcsr = 0x1f80;
	if (ioctl(v->fd, KVM_SET_FPU, &fpu) < 0)
		goto fail;
	return 0;
fail:
	log_error("vCPU %u: boot register state: %s", v->id, strerror(errno));
	return -errno;
}

int vcpu__create(struct vcpu_ctx *ctx, unsigned int id, struct vcpu *v)
{
	pthread_condattr_t ca;
	int size, ret;

	memset(v, 0, sizeof(*v));
	v->ctx = ctx;
	v->id = id;
	pthread_mutex_init(&v->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&v->cond, &ca);
	pthread_condattr_destroy(&ca);
	v->fd = ioctl(ctx->vm_fd, KVM_CREATE_VCPU, (unsigned long)id);
	if (v->fd < 0) {
		ret = -errno;
		log_error("KVM_CREATE_VCPU %u: %s", id, strerror(errno));
		return ret;
	}
	size = ioctl(ctx->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (size < (int)sizeof(struct kvm_run)) {
		log_error("KVM_GET_VCPU_MMAP_SIZE: %s", strerror(errno));
		return -EINVAL;
	}
	v->run_size = (size_t)size;
	v->run = mmap(NULL, v->run_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      v->fd, 0);
	if (v->run == MAP_FAILED) {
		v->run = NULL;
		ret = -errno;
		log_error("mmap kvm_run: %s", strerror(errno));
		return ret;
	}
	ret = vcpu__set_cpuid(v);
	if (!ret)
		ret = vcpu__set_msrs(v);
	if (!ret)
		ret = vcpu__set_lapic(v);
	return ret;
}

void vcpu__dump(struct vcpu *v)
{
	struct kvm_regs r;
	struct kvm_sregs s;

	if (ioctl(v->fd, KVM_GET_REGS, &r) < 0 ||
	    ioctl(v->fd, KVM_GET_SREGS, &s) < 0) {
		log_error("vCPU %u: cannot read registers: %s", v->id,
			  strerror(errno));
		return;
	}
	log_error(
		"vCPU %u: rip=%016llx rsp=%016llx rflags=%08llx cs=%04x ss=%04x",
		v->id, r.rip, r.rsp, r.rflags, s.cs.selector, s.ss.selector);
	log_error("  rax=%016llx rbx=%016llx rcx=%016llx rdx=%016llx", r.rax,
		  r.rbx, r.rcx, r.rdx);
	log_error("  rsi=%016llx rdi=%016llx rbp=%016llx r8 =%016llx", r.rsi,
		  r.rdi, r.rbp, r.r8);
	log_error("  r9 =%016llx r10=%016llx r11=%016llx r12=%016llx", r.r9,
		  r.r10, r.r11, r.r12);
	log_error("  r13=%016llx r14=%016llx r15=%016llx", r.r13, r.r14, r.r15);
	log_error("  cr0=%016llx cr2=%016llx cr3=%016llx cr4=%016llx efer=%llx",
		  s.cr0, s.cr2, s.cr3, s.cr4, s.efer);
}

static void vcpu__count(struct vcpu *v, enum vcpu_exit_kind k)
{
	__atomic_fetch_add(&v->ctx->exits[k], 1, __ATOMIC_RELAXED);
}

/* Report why this vCPU stops; the VM decides what that means. */
static void vcpu__event(struct vcpu *v, enum vcpu_event ev)
{
	if (v->ctx->event)
		v->ctx->event(v->ctx->opaque, v->id, ev);
}

static void vcpu__io(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	uint8_t *data = (uint8_t *)run + run->io.data_offset;
	bool out = run->io.direction == KVM_EXIT_IO_OUT;
	uint32_t i;

	/* data_offset and count*size come from KVM and lie in the page. */
	for (i = 0; i < run->io.count; i++, data += run->io.size) {
		if (bus__access(v->ctx->pio, run->io.port, data, run->io.size,
				out))
			log_debug("unclaimed port %s 0x%x",
				  out ? "write" : "read", run->io.port);
	}
}

static void vcpu__mmio(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	uint32_t len = run->mmio.len;

	if (len > sizeof(run->mmio.data))
		len = sizeof(run->mmio.data);
	if (bus__access(v->ctx->mmio, run->mmio.phys_addr, run->mmio.data, len,
			run->mmio.is_write))
		log_debug("unclaimed MMIO %s 0x%llx",
			  run->mmio.is_write ? "write" : "read",
			  run->mmio.phys_addr);
}

/*
 * An instruction the PVM host could not emulate: ember's fallback
 * (pvm/pvm.h), and the registers after the failure it reported.
 */
static int vcpu__pvm_emulate(struct vcpu *v)
{
	const struct pvm_vcpu pv = {
		.fd = v->fd,
		.id = v->id,
		.mem = v->ctx->mem,
		.xstate = v->ctx->xstate,
	};
	bool dump;
	int ret = pvm__emulate(&pv, &dump);

	if (ret && dump)
		vcpu__dump(v);
	return ret;
}

/* Returns 0 to go on, non-zero when this vCPU stops (reported). */
static int vcpu__handle_exit(struct vcpu *v)
{
	struct kvm_run *run = v->run;

	switch (run->exit_reason) {
	case KVM_EXIT_IO:
		vcpu__count(v, EXIT_IO);
		vcpu__io(v);
		return 0;
	case KVM_EXIT_MMIO:
		vcpu__count(v, EXIT_MMIO);
		vcpu__mmio(v);
		return 0;
	case KVM_EXIT_INTERNAL_ERROR:
		vcpu__count(v, EXIT_EMULATED);
		if (run->internal.suberror == KVM_INTERNAL_ERROR_EMULATION &&
		    v->ctx->pvm) {
			if (vcpu__pvm_emulate(v) == 0)
				return 0;
		} else {
			log_error("vCPU %u: KVM internal error, suberror %u",
				  v->id, run->internal.suberror);
			vcpu__dump(v);
		}
		vcpu__event(v, VCPU_EVENT_ERROR);
		return -1;
	case KVM_EXIT_SHUTDOWN:
		vcpu__count(v, EXIT_OTHER);
		log_info("vCPU %u: triple fault: the guest crashed", v->id);
		vcpu__event(v, VCPU_EVENT_TRIPLE_FAULT);
		return -1;
	case KVM_EXIT_SYSTEM_EVENT:
		vcpu__count(v, EXIT_OTHER);
		log_info("vCPU %u: system event %u", v->id,
			 run->system_event.type);
		vcpu__event(v,
			    run->system_event.type == KVM_SYSTEM_EVENT_CRASH ?
				    VCPU_EVENT_CRASH :
				    VCPU_EVENT_RESET);
		return -1;
	case KVM_EXIT_FAIL_ENTRY:
		log_error("vCPU %u: VM entry failed, reason 0x%llx", v->id,
			  (unsigned long long)run->fail_entry
				  .hardware_entry_failure_reason);
		vcpu__dump(v);
		vcpu__event(v, VCPU_EVENT_ERROR);
		return -1;
	default:
		vcpu__count(v, EXIT_OTHER);
		log_error("vCPU %u: unexpected exit reason %u", v->id,
			  run->exit_reason);
		vcpu__dump(v);
		vcpu__event(v, VCPU_EVENT_ERROR);
		return -1;
	}
}

/*
 * Out of KVM_RUN with nothing pending: honour a pause (wait parked until
 * resumed) or a stop.  Returns false when the thread must end.
 */
static bool vcpu__checkpoint(struct vcpu *v)
{
	bool go, paused = false;

	pthread_mutex_lock(&v->lock);
	if (v->want == VCPU_WANT_PAUSE) {
		paused = true;
		v->parked = true;
		pthread_cond_broadcast(&v->cond);
		while (v->want == VCPU_WANT_PAUSE)
			pthread_cond_wait(&v->cond, &v->lock);
		v->parked = false;
	}
	go = v->want == VCPU_WANT_RUN;
	pthread_mutex_unlock(&v->lock);
	/*
	 * Tell a kvm-clock guest it was stopped, so that its watchdogs do
	 * not take the pause for a soft lockup (api.rst KVM_KVMCLOCK_CTRL).
	 * A guest without kvm-clock (the PVM profile) answers EINVAL: fine.
	 */
	if (paused && go)
		ioctl(v->fd, KVM_KVMCLOCK_CTRL, 0);
	return go;
}

static void *vcpu__thread(void *arg)
{
	struct vcpu *v = arg;
	sigset_t set;
	char name[16];
	int ret;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);

	/* Locked down before anything the guest drives (seccomp.h). */
	if (v->ctx->seccomp) {
		snprintf(name, sizeof(name), "vcpu%u", v->id);
		ret = seccomp__install(v->ctx->seccomp, SECCOMP_VCPU, name);
		if (ret) {
			log_error("vCPU %u: seccomp filter: %s", v->id,
				  strerror(-ret));
			vcpu__event(v, VCPU_EVENT_ERROR);
			goto out;
		}
	}
	/* Started parked: wait for vcpu__resume(). */
	if (!vcpu__checkpoint(v))
		goto out;
	if (v->id == 0)
		v->ctx->t_first_run_ms = log__ms();
	for (;;) {
		if (ioctl(v->fd, KVM_RUN, 0) < 0) {
			if (errno != EINTR && errno != EAGAIN) {
				log_error("vCPU %u: KVM_RUN: %s", v->id,
					  strerror(errno));
				vcpu__event(v, VCPU_EVENT_ERROR);
				break;
			}
			/*
			 * A kick: KVM_RUN has completed any pending port or
			 * MMIO read (immediate_exit), so the state is whole.
			 * Clear the flag before reading the request, so that
			 * a kick racing with this cannot be lost.
			 */
			__atomic_store_n(&v->run->immediate_exit, 0,
					 __ATOMIC_SEQ_CST);
			vcpu__count(v, EXIT_INTR);
			if (!vcpu__checkpoint(v))
				break;
			continue;
		}
		if (vcpu__handle_exit(v))
			break;
	}
out:
	pthread_mutex_lock(&v->lock);
	v->ended = true;
	pthread_cond_broadcast(&v->cond);
	pthread_mutex_unlock(&v->lock);
	return NULL;
}

int vcpu__start(struct vcpu *v, bool parked)
{
	char name[16];
	int ret;

	if (v->want != VCPU_WANT_STOP)
		v->want = parked ? VCPU_WANT_PAUSE : VCPU_WANT_RUN;
	ret = pthread_create(&v->thread, NULL, vcpu__thread, v);
	if (ret) {
		log_error("vCPU %u: thread: %s", v->id, strerror(ret));
		return -ret;
	}
	/* Named for top, perf and bench/idle; at most 15 characters. */
	snprintf(name, sizeof(name), "ember-vcpu%u", v->id);
	pthread_setname_np(v->thread, name);
	v->started = true;
	return 0;
}

void vcpu__kick(struct vcpu *v)
{
	if (!v->started)
		return;
	/* The request is visible before the flag the thread clears. */
	__atomic_store_n(&v->run->immediate_exit, 1, __ATOMIC_SEQ_CST);
	pthread_kill(v->thread, SIGUSR1);
}

/* Set the thread's request and kick it out of KVM_RUN. */
static void vcpu__want(struct vcpu *v, enum vcpu_want want)
{
	pthread_mutex_lock(&v->lock);
	if (v->want != VCPU_WANT_STOP)
		v->want = want;
	pthread_cond_broadcast(&v->cond);
	pthread_mutex_unlock(&v->lock);
	if (want != VCPU_WANT_RUN)
		vcpu__kick(v);
}

int vcpu__pause(struct vcpu *v, unsigned int timeout_ms)
{
	struct timespec end;
	int ret = 0;

	if (!v->started)
		return 0;
	vcpu__want(v, VCPU_WANT_PAUSE);
	/* CLOCK_MONOTONIC (v->cond's): a jump of the wall clock is no timeout. */
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += timeout_ms / 1000;
	end.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&v->lock);
	while (!v->parked && !v->ended && !ret) {
		/* Re-kick now and then: a signal may have come too early. */
		struct timespec t;

		clock_gettime(CLOCK_MONOTONIC, &t);
		t.tv_nsec += 10 * 1000000L;
		if (t.tv_nsec >= 1000000000L) {
			t.tv_sec++;
			t.tv_nsec -= 1000000000L;
		}
		if (t.tv_sec > end.tv_sec ||
		    (t.tv_sec == end.tv_sec && t.tv_nsec > end.tv_nsec))
			t = end;
		if (pthread_cond_timedwait(&v->cond, &v->lock, &t) ==
		    ETIMEDOUT) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if (t.tv_sec > end.tv_sec || (t.tv_sec == end.tv_sec &&
						      t.tv_nsec >= end.tv_nsec))
				ret = -ETIMEDOUT;
			else if (!v->parked && !v->ended) {
				pthread_mutex_unlock(&v->lock);
				vcpu__kick(v);
				pthread_mutex_lock(&v->lock);
			}
		}
	}
	pthread_mutex_unlock(&v->lock);
	return ret;
}

void vcpu__resume(struct vcpu *v)
{
	vcpu__want(v, VCPU_WANT_RUN);
}

void vcpu__destroy(struct vcpu *v)
{
	if (v->started) {
		vcpu__want(v, VCPU_WANT_STOP);
		pthread_join(v->thread, NULL);
		v->started = false;
	}
	if (v->run)
		munmap(v->run, v->run_size);
	if (v->fd >= 0)
		close(v->fd);
	if (v->ctx) {
		pthread_cond_destroy(&v->cond);
		pthread_mutex_destroy(&v->lock);
		v->ctx = NULL;
	}
	v->run = NULL;
	v->fd = -1;
}
