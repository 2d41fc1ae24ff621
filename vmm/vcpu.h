/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One vCPU: its KVM fd and kvm_run page, its boot state (Linux 64-bit boot
 * protocol register state), and the thread that runs KVM_RUN, dispatches
 * exits to the buses and parks when the VM pauses.  A vCPU sees the VM only
 * through struct vcpu_ctx: it never reaches into struct vm.
 */
#ifndef EMBER_VMM_VCPU_H
#define EMBER_VMM_VCPU_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <linux/kvm.h>

struct bus;
struct guest_mem;
struct xstate_layout;
struct seccomp_set;

/* Exit counters, per reason (--stats and bench/boot print them). */
enum vcpu_exit_kind {
	EXIT_IO,
	EXIT_MMIO,
	EXIT_EMULATED,
	EXIT_INTR,
	EXIT_OTHER,
	EXIT_KINDS
};

/* What ends a vCPU's run, as it reports it to the VM. */
enum vcpu_event {
	VCPU_EVENT_TRIPLE_FAULT = 1, /* KVM_EXIT_SHUTDOWN: the guest crashed */
	VCPU_EVENT_RESET, /* KVM_EXIT_SYSTEM_EVENT: reset or shutdown */
	VCPU_EVENT_CRASH, /* KVM_EXIT_SYSTEM_EVENT: crash */
	VCPU_EVENT_ERROR, /* a fatal error, already logged */
};

/*
 * What the vCPUs of one VM share, owned by the VM and filled before the
 * first vcpu__create(); the fields below @exits never change afterwards.
 */
struct vcpu_ctx {
	int kvm_fd, vm_fd;
	unsigned int nr_vcpus;
	const struct bus *pio, *mmio; /* exits are dispatched here */
	const struct guest_mem *mem;
	bool pvm; /* the PVM profile: CPUID bits, instruction fallbacks */
	const struct xstate_layout *xstate; /* host XSAVE layout (PVM) */
	/*
	 * The filters each vCPU thread installs (SECCOMP_VCPU) before it
	 * runs the guest; NULL: none (--no-seccomp).  Set before
	 * vcpu__start().
	 */
	const struct seccomp_set *seccomp;
	/* Called once per vCPU that stops on its own (any thread). */
	void (*event)(void *opaque, unsigned int vcpu, enum vcpu_event ev);
	void *opaque;

	uint64_t exits[EXIT_KINDS]; /* atomic counters */
	double t_first_run_ms; /* log__ms() of vCPU 0's first KVM_RUN */
};

/* What the thread is asked to do (vcpu__pause(), vcpu__resume(), ...). */
enum vcpu_want { VCPU_WANT_RUN = 0, VCPU_WANT_PAUSE, VCPU_WANT_STOP };

struct vcpu {
	struct vcpu_ctx *ctx;
	unsigned int id;
	int fd;
	struct kvm_run *run;
	size_t run_size;
	pthread_t thread;
	bool started;

	pthread_mutex_t lock; /* guards want and parked */
	pthread_cond_t cond;
	enum vcpu_want want;
	bool parked; /* out of KVM_RUN, nothing pending, waiting */
	bool ended; /* the thread has returned */
};

/*
 * vcpu__create() - KVM_CREATE_VCPU @id on @ctx's VM, map its kvm_run, set
 * CPUID (the template of cpuid.h), MSRs and LAPIC LINT0/LINT1.  @ctx is not
 * owned and must outlive @v.  Returns 0 or a negative errno (logged).
 */
int vcpu__create(struct vcpu_ctx *ctx, unsigned int id, struct vcpu *v);

/*
 * vcpu__set_boot_state() - for the boot vCPU, once the kernel is loaded:
 * write the GDT and page tables and set the Linux 64-bit boot protocol
 * entry state (boot.rst): long mode, flat __BOOT_CS/__BOOT_DS, RIP at
 * @entry (guest-physical), RSI at the zero page.  Returns 0 or a negative
 * errno (logged).
 */
int vcpu__set_boot_state(struct vcpu *v, uint64_t entry);

/*
 * vcpu__start() - start the KVM_RUN thread; it first installs its seccomp
 * filter (ctx->seccomp).  With @parked it then waits, parked as after
 * vcpu__pause(), until vcpu__resume().  Returns 0 or -errno.
 */
int vcpu__start(struct vcpu *v, bool parked);

/*
 * vcpu__pause() - ask the thread to park: it leaves KVM_RUN (signal and
 * immediate_exit), lets KVM complete a pending port or MMIO read first, and
 * waits.  Waits up to @timeout_ms for it to be parked (or ended).  Returns
 * 0, or -ETIMEDOUT (the request stays: the thread parks when it can).
 */
int vcpu__pause(struct vcpu *v, unsigned int timeout_ms);

/* vcpu__resume() - let a paused thread run the guest again. */
void vcpu__resume(struct vcpu *v);

/* vcpu__kick() - make the thread leave KVM_RUN (signal + immediate_exit). */
void vcpu__kick(struct vcpu *v);

/* vcpu__destroy() - stop and join the thread if started, unmap, close. */
void vcpu__destroy(struct vcpu *v);

/* vcpu__dump() - log the registers (for fatal errors). */
void vcpu__dump(struct vcpu *v);

#endif /* EMBER_VMM_VCPU_H */
