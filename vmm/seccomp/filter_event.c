// SPDX-License-Identifier: Apache-2.0
/*
 * The event thread's allow-list (see filter.h; the calls of every thread
 * are in filter_common.c).  The epoll loop (vmm/event.c) serves the
 * devices' host side (queue notifications from ioeventfds, block I/O,
 * virtio-net's tap, vsock's Unix sockets, console input, timers), the
 * control socket (api/server/, libmicrohttpd) and every control call made
 * after the VM started: pause and resume, snapshot create (KVM state
 * read back, files written), PATCH /drives (an image opened), metrics.
 * As Firecracker's VMM thread, it may open files; it may not create a VM,
 * map memory executable, run programs or trace processes.
 */
#include <signal.h>
#include <sys/socket.h>

#include <linux/if_tun.h>
#include <linux/kvm.h>

#include "filter.h"

static const struct seccomp_rule event[] = {
	/* The loop itself, vsock's and libmicrohttpd's epoll sets. */
	SC_ALLOW(epoll_wait),
	/* Handlers on and off the loops (pause, connections, tap reads). */
	SC_ALLOW(epoll_ctl),
	/*
	 * eventfds (ioeventfds, wake-ups, event__call()), timerfds, console
	 * input; virtio-net's frames (read or readv from the tap, writev to
	 * it); images (virtio-blk, overlays, snapshot files).
	 */
	SC_ALLOW(read),
	SC_ALLOW(readv),
	SC_ALLOW(writev),
	SC_ALLOW(pread64),
	SC_ALLOW(pwrite64),
	/* virtio-blk's FLUSH; snapshot and overlay files made durable. */
	SC_ALLOW(fdatasync),
	SC_ALLOW(fsync),
	/* Re-arm the console's retry, the API server's and metrics' timers. */
	SC_ALLOW(timerfd_settime),
	/*
	 * virtio-rng's bytes, and its short wait while the pool fills
	 * (glibc's nanosleep() is clock_nanosleep).
	 */
	SC_ALLOW(getrandom),
	SC_ALLOW(clock_nanosleep),
	/*
	 * Kick a vCPU out of KVM_RUN (pause, stop): SIGUSR1 to a thread of
	 * this process only.
	 */
	{ .nr = SCMP_SYS(tgkill),
	  .ncmp = 2,
	  .cmp = { { 0, SCMP_CMP_EQ, SECCOMP_OWN_PID, 0 },
		   { 2, SCMP_CMP_EQ, SIGUSR1, 0 } } },

	/* --- sockets: the control socket, vsock's Unix sockets ----------- */
	/* New clients of the control socket and of vsock's listener. */
	SC_ALLOW(accept4),
	/*
	 * HTTP requests and replies (libmicrohttpd sends headers and body
	 * with one sendmsg); vsock streams both ways.
	 */
	SC_ALLOW(recvfrom),
	SC_ALLOW(sendto),
	SC_ALLOW(sendmsg),
	SC_ALLOW(shutdown),
	/*
	 * A guest connecting to host port P: vsock connects to the Unix
	 * socket <uds_path>_P (AF_UNIX only).
	 */
	SC_ALLOW_ARG(socket, 0, AF_UNIX),
	SC_ALLOW(connect),

	/* --- files: snapshot create, PATCH /drives, metrics -------------- */
	/*
	 * Snapshot files (state, memory, disks' overlays), a PATCH /drives
	 * image, /proc/self/pagemap (which pages a snapshot writes),
	 * /proc/self/status (metrics' RSS).
	 */
	SC_ALLOW(openat),
	SC_ALLOW(close),
	SC_ALLOW(fstat),
	SC_ALLOW(newfstatat),
	/* A Diff snapshot finds its base's data (SEEK_DATA, SEEK_HOLE). */
	SC_ALLOW(lseek),
	/* A drive's image is locked against a second writer (flock). */
	SC_ALLOW(flock),
	/* Memory and overlay files: their size; the state file's mode. */
	SC_ALLOW(ftruncate),
	SC_ALLOW(fchmod),
	/* Written beside their target, then renamed; removed on failure. */
	SC_ALLOW(rename),
	SC_ALLOW(unlink),
	/* realpath(3) of the files a snapshot names. */
	SC_ALLOW(readlink),
	SC_ALLOW(getcwd),
	/* Metrics: the guest RAM's resident pages. */
	SC_ALLOW(mincore),
	/*
	 * glibc's qsort() asks for the RAM size once (sysinfo) before it
	 * sorts more than 1 KiB: an overlay's cluster map, opened by PATCH
	 * /drives (snapshot/overlay.c).
	 */
	SC_ALLOW(sysinfo),

	/* --- ioctl: KVM state for snapshots, interrupts, the tap --------- */
	/*
	 * Snapshot create reads each parked vCPU's state (vmm/persist/
	 * vcpu_state.c) ...
	 */
	SC_IOCTL(KVM_GET_REGS),
	SC_IOCTL(KVM_GET_SREGS),
	SC_IOCTL(KVM_GET_XSAVE),
	SC_IOCTL(KVM_GET_XSAVE2),
	SC_IOCTL(KVM_GET_XCRS),
	SC_IOCTL(KVM_GET_LAPIC),
	SC_IOCTL(KVM_GET_VCPU_EVENTS),
	SC_IOCTL(KVM_GET_MP_STATE),
	SC_IOCTL(KVM_GET_DEBUGREGS),
	SC_IOCTL(KVM_GET_MSRS),
	SC_IOCTL(KVM_GET_CPUID2),
	/* ... which MSRs the host has, how large the XSAVE area is ... */
	SC_IOCTL(KVM_GET_MSR_INDEX_LIST),
	SC_IOCTL(KVM_CHECK_EXTENSION),
	/* ... and the VM's (vmm/persist/vm_state.c). */
	SC_IOCTL(KVM_GET_IRQCHIP),
	SC_IOCTL(KVM_GET_PIT2),
	SC_IOCTL(KVM_GET_CLOCK),
	/* The UART's interrupt as console input arrives (vmm/irq.c). */
	SC_IOCTL(KVM_IRQ_LINE),
	/*
	 * virtio-net: the offloads the tap may hand over follow the
	 * features the guest's driver accepted (vmm/backends/tap.c).
	 */
	SC_IOCTL(TUNSETOFFLOAD),

	/* The thread's end, as ember stops (event__destroy()). */
	SC_ALLOW(exit),
};

const struct seccomp_list filter_event = SC_LIST(event);
