/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One microVM: the KVM VM, its memory, buses, devices and vCPUs, and the
 * life cycle Configured -> Running -> Stopped.
 */
#ifndef EMBER_VMM_VM_H
#define EMBER_VMM_VM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "../devices/virtio_mmio.h"
#include "bus.h"
#include "config.h"
#include "mem.h"
#include "pvm/xstate.h"

struct vcpu;
struct event_loop;
struct console_out;

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

/* Exit counters, per reason (bench/boot prints them). */
enum vm_exit_kind {
	EXIT_IO,
	EXIT_MMIO,
	EXIT_EMULATED,
	EXIT_INTR,
	EXIT_OTHER,
	EXIT_KINDS
};

#define VM_MAX_VIRTIO (CONFIG_MAX_DRIVES + 2) /* drives, rng, vsock */

/* A queue notification arriving on an ioeventfd. */
struct vm_notify {
	struct virtio_mmio *t;
	unsigned int queue;
	int fd; /* the ioeventfd; -1 when unused */
};

/* One virtio-mmio slot: its device, interrupt and notification fds. */
struct vm_virtio {
	enum { VM_VIRTIO_BLK = 1, VM_VIRTIO_RNG, VM_VIRTIO_VSOCK } kind;
	void *dev; /* struct virtio_blk, virtio_rng or vsock_uds */
	struct virtio_mmio *t;
	uint64_t base; /* guest-physical */
	unsigned int gsi;
	int irqfd;
	struct vm_notify notify[VIRTIO_MMIO_MAX_QUEUES];
};

struct vm {
	struct vm_config cfg;
	int kvm_fd, vm_fd;
	struct guest_mem mem;
	struct bus pio, mmio;
	bool pvm; /* PVM profile active */
	struct xstate_layout xstate; /* host XSAVE layout (PVM emulation) */
	uint32_t tsc_khz;
	uint64_t entry;
	int console_fd; /* -1: discard */
	struct console_out *console_out; /* the UART's output side */
	struct event_loop *events; /* the event thread's loop */
	struct vm_virtio virtio[VM_MAX_VIRTIO];
	unsigned int nr_virtio;
	int root_drive; /* index in cfg.drives, -1: none */

	struct vcpu *vcpus;
	unsigned int nr_vcpus;

	struct device *serial, *i8042, *cmos, *boot_timer_dev, *exit_status_dev;

	pthread_mutex_t lock; /* guards the fields below */
	pthread_cond_t cond;
	enum vm_stop_reason stop;
	bool have_status;
	uint32_t exit_status;
	double t_first_run_ms, t_boot_timer_ms, t_stop_ms;
	int signal_fd; /* eventfd the stop signals' handler writes; -1 */
	uint64_t exits[EXIT_KINDS];
};

/*
 * vm__create() - build a VM from @cfg: open /dev/kvm, create the VM,
 * irqchip, PIT, memory, load the kernel and initrd, write the boot
 * structures, create devices and vCPUs.  Every failure is logged in one
 * line naming the problem.  Returns 0 with *@out set (free with
 * vm__destroy), or a negative errno.
 */
int vm__create(const struct vm_config *cfg, struct vm **out);

/*
 * vm__run() - start the vCPU threads and wait until the guest resets or
 * a fatal error or a signal stops it.  Returns the process exit status
 * ember should end with: the guest's reported status; without --run, 0
 * when the guest rebooted itself or the user quit; 128 + N after signal
 * N; VM_EXIT_EMBER_ERROR for ember's failures and for a guest that ended
 * without the status it owed (a kernel panic, a crash, a reboot before
 * the --run command reported), each told apart in one error line.
 */
int vm__run(struct vm *vm);

/* vm__destroy() - stop and free everything; NULL is fine. */
void vm__destroy(struct vm *vm);

/*
 * vm__request_stop() - ask the VM to stop for @reason (first reason wins);
 * safe from any thread.
 */
void vm__request_stop(struct vm *vm, enum vm_stop_reason reason);

/*
 * vm__signal_stop() - async-signal-safe: remember that signal @sig asks
 * the running VM to stop; vm__run() then returns 128 + @sig after
 * stopping the vCPUs and restoring the terminal.
 */
void vm__signal_stop(int sig);

/* The exit status for failures of ember itself (not of the guest). */
#define VM_EXIT_EMBER_ERROR 125

#endif /* EMBER_VMM_VM_H */
