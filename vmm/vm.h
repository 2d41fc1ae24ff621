/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One microVM and its life: Configured -> Running <-> Paused -> Stopped.
 *
 *   vm__create()  builds it from a configuration (vmm/builder.c): Configured
 *   vm__start()   starts the vCPUs: Running
 *   vm__pause()   parks every vCPU and quiesces the devices: Paused
 *   vm__resume()  Running again
 *   vm__request_stop(), a guest reset or exit status, a fatal error: the
 *                 VM is to stop; vm__wait() returns once it has: Stopped
 *
 * The calls that change the state are made from one thread at a time (the
 * control layer's); the guest's own events arrive on any thread.
 */
#ifndef EMBER_VMM_VM_H
#define EMBER_VMM_VM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "devmgr.h"
#include "kvm.h"
#include "mem.h"
#include "pvm/xstate.h"
#include "vcpu.h"

struct event_loop;
struct console;
struct console_out;
struct seccomp_set;

enum vm_state {
	VM_STATE_CONFIGURED = 0, /* built, no vCPU has run */
	VM_STATE_RUNNING,
	VM_STATE_PAUSED,
	VM_STATE_STOPPED,
};

/* Why the VM stopped. */
enum vm_stop_reason {
	VM_STOP_NONE = 0,
	VM_STOP_REBOOT, /* the guest reset itself (i8042: reboot or panic) */
	VM_STOP_CRASH, /* the guest crashed (triple fault) */
	VM_STOP_QUIT, /* the user asked from the console (Ctrl-A x) */
	VM_STOP_GUEST_EXIT, /* guest init reported its exit status */
	VM_STOP_ERROR, /* fatal error, already logged */
	VM_STOP_SIGNAL, /* ember got SIGINT, SIGTERM or SIGHUP */
};

/* How long vm__pause() waits for each vCPU to park. */
#define VM_PAUSE_TIMEOUT_MS 1000

struct vm {
	struct vm_config cfg;
	struct event_loop *el; /* not owned */

	/* What the builder made (builder.c). */
	struct kvm_vm kvm;
	struct guest_mem mem;
	struct devmgr dm;
	struct vcpu_ctx vctx;
	struct vcpu *vcpus;
	unsigned int nr_vcpus;
	bool pvm; /* PVM profile active */
	struct xstate_layout xstate; /* host XSAVE layout (PVM emulation) */
	uint32_t tsc_khz;
	uint64_t entry;
	int root_drive; /* index in cfg.drives, -1: none */
	int console_fd; /* -1: discard */
	struct console_out *console_out; /* the UART's output side */
	struct console *console_in; /* stdin to the UART, while running */

	/*
	 * A VM restored from a snapshot (vmm/persist/): its RAM may be a
	 * MAP_PRIVATE mapping of @mem_base_path (the raw memory file whose
	 * unchanged pages it shares; NULL when RAM is anonymous), identified
	 * by size and mtime so that a diff can name its base.  @cfg's
	 * strings are then malloc()ed and owned (@cfg_owned).
	 */
	bool restored;
	bool cfg_owned;
	char *mem_base_path;
	uint64_t mem_base_size, mem_base_mtime_ns;
	bool vcpus_started; /* vm__start() or the first vm__resume() */
	int uffd, uffd_sock; /* the Uffd backend's fds, -1: none (persist.h) */
	int mem_base_fd; /* @mem_base_path, open; -1: none */

	pthread_mutex_t lock; /* guards the fields below */
	pthread_cond_t cond;
	enum vm_state state;
	enum vm_stop_reason stop;
	int stop_signal; /* VM_STOP_SIGNAL: which */
	bool have_status;
	uint32_t exit_status;
	double t_boot_timer_ms, t_stop_ms;
	uint64_t pauses; /* completed vm__pause() calls */
	double paused_ms; /* time spent paused, closed periods */
	double t_paused_ms; /* log__ms() of the current pause */
};

/*
 * vm__create() - build a VM from @cfg (copied; its strings must outlive the
 * VM) with its host-side work on the event loop @el (not owned, outliving
 * the VM; started or not): /dev/kvm, memory, devices, vCPUs, the kernel
 * loaded.  Every failure is logged in one line naming the problem.
 * Returns 0 with *@out in VM_STATE_CONFIGURED (free with vm__destroy), or
 * a negative errno.
 */
int vm__create(const struct vm_config *cfg, struct event_loop *el,
	       struct vm **out);

/*
 * vm__start() - Configured -> Running: start the vCPU threads (and console
 * input from stdin for an interactive console).  On the event thread.
 * With seccomp (vm__set_seccomp()), each vCPU thread installs its filter
 * and this thread its own before the guest runs.  Returns 0, -EBUSY when
 * not Configured, or a negative errno (logged; the VM is then stopping).
 */
int vm__start(struct vm *vm);

/*
 * vm__set_seccomp() - the filters (vmm/seccomp/seccomp.h; not owned, they
 * outlive the VM) that the vCPU threads and the event thread install when
 * the vCPUs first start: vm__start(), or a restored VM's first
 * vm__resume().  NULL (the default): none.  Call before that start.
 */
void vm__set_seccomp(struct vm *vm, const struct seccomp_set *s);

/*
 * vm__create_restored() - build a VM for a snapshot's configuration @cfg
 * (its strings, malloc()ed, now owned by the VM) on the guest RAM @mem
 * already filled (moved into the VM: on success and on failure @mem is
 * left zeroed): the devices and vCPUs are created but nothing is loaded
 * and no vCPU is set up to boot; vmm/persist/ then restores their state.
 * The VM starts Paused (vCPU threads not started, devices held):
 * vm__resume() runs it.  Returns 0 with *@out, or a negative errno
 * (logged) with everything freed, @cfg's strings included.
 */
int vm__create_restored(struct vm_config *cfg, struct guest_mem *mem,
			struct event_loop *el, struct vm **out);

/*
 * vm__pause() - Running -> Paused: every vCPU leaves KVM_RUN within
 * VM_PAUSE_TIMEOUT_MS, after KVM completed any port or MMIO access in
 * flight, and parks; then device work stops (devmgr__hold(): queue
 * notifications wait in their ioeventfds, vsock's sockets are not read,
 * console input is held), so that nothing changes guest memory or device
 * state.  Call it on the event thread (the control layer does): a block
 * request being served finishes first.  Returns 0, -EBUSY when not
 * Running, -ETIMEDOUT when a vCPU did not park (the VM stays Running, the
 * others resumed).
 */
int vm__pause(struct vm *vm);

/*
 * vm__resume() - Paused -> Running: device work, then the vCPUs, go on.
 * On the event thread.  A restored VM's first resume starts its vCPU
 * threads, with the seccomp filters as vm__start().  Returns 0, -EBUSY
 * (not Paused), or a negative errno from that start (logged; the VM is
 * then stopping).
 */
int vm__resume(struct vm *vm);

/* vm__state() - the current state (a snapshot of it: it may change). */
enum vm_state vm__state(struct vm *vm);

/*
 * vm__request_stop() - ask the VM to stop for @reason (first reason wins);
 * safe from any thread, in any state.
 */
void vm__request_stop(struct vm *vm, enum vm_stop_reason reason);

/* vm__stop_by_signal() - vm__request_stop() for signal @sig (128 + @sig). */
void vm__stop_by_signal(struct vm *vm, int sig);

/*
 * vm__wait() - wait until a stop was requested, stop the vCPUs (Stopped)
 * and return the process exit status ember should end with: the guest's
 * reported status; without --run, 0 when the guest rebooted itself or the
 * user quit; 128 + N after signal N; VM_EXIT_EMBER_ERROR for ember's
 * failures and for a guest that ended without the status it owed (a kernel
 * panic, a crash, a reboot before the --run command reported), each told
 * apart in one error line.  Call once, from the thread that started it.
 */
int vm__wait(struct vm *vm);

/*
 * vm__destroy() - stop and free everything; NULL is fine.  Devices with a
 * host side on the event loop (vsock) expect the loop to have stopped.
 */
void vm__destroy(struct vm *vm);

/* The exit status for failures of ember itself (not of the guest). */
#define VM_EXIT_EMBER_ERROR 125

#endif /* EMBER_VMM_VM_H */
