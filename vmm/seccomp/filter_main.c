// SPDX-License-Identifier: Apache-2.0
/*
 * The main thread's allow-list (see filter.h; the calls of every thread
 * are in filter_common.c).  Once everything is set up, main() only waits
 * for the VM's end (control__wait()), asks the event thread to stop the
 * vCPUs, prints --stats, and frees the VM: closes its fds, unmaps guest
 * memory, restores the terminal, removes its socket files.  No guest
 * action reaches this thread.
 */
#include <fcntl.h>

#include <sys/ioctl.h>

#include "filter.h"

static const struct seccomp_rule main_rules[] = {
	/*
	 * Freeing the VM and the control: /dev/kvm's, the devices',
	 * eventfds', sockets' and files' fds.
	 */
	SC_ALLOW(close),
	/* A device's fds taken off vsock's epoll set as it goes. */
	SC_ALLOW(epoll_ctl),
	/*
	 * The control socket's and vsock's listening socket files, removed
	 * as ember ends (api/server/server.c, vmm/backends/vsock_uds.c).
	 */
	SC_ALLOW(unlink),
	/* Disk overlays made durable as their drives close. */
	SC_ALLOW(fdatasync),
	SC_ALLOW(fsync),
	/*
	 * The terminal back in its own mode after an interactive console
	 * (tcsetattr: vmm/backends/console.c), and stdio's isatty() before
	 * --stats is printed.
	 */
	SC_IOCTL(TCGETS),
	SC_IOCTL(TCSETS),
	/* stdio's buffer for stdout (--stats). */
	SC_ALLOW(fstat),
	SC_ALLOW(newfstatat),
	/*
	 * --stats: RSS from /proc/self/status, read-only, and the guest
	 * RAM's resident pages.
	 */
	SC_ALLOW_NOT_BITS(openat, 2, O_WRONLY | O_RDWR | O_CREAT | O_TRUNC),
	SC_ALLOW(read),
	SC_ALLOW(mincore),
};

const struct seccomp_list filter_main = SC_LIST(main_rules);
