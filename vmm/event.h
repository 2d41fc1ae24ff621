/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The event thread: an epoll loop for what arrives from the host side.
 * Today that is the console's standard input, fed to the guest's UART;
 * sockets, tap fds and timers join it with their devices.
 */
#ifndef EMBER_VMM_EVENT_H
#define EMBER_VMM_EVENT_H

#include "../devices/device.h"

struct event_loop;

/*
 * event__start() - read @in_fd (not owned) and queue its bytes into the
 * UART @serial.  A terminal is put in raw mode (restored by event__stop);
 * Ctrl-A then x asks @vm_stop(@opaque) to end the VM.
 * Returns the loop, or NULL (logged) when it cannot start.
 */
struct event_loop *event__start(int in_fd, struct device *serial,
				void (*vm_stop)(void *opaque), void *opaque);

/* event__stop() - stop and join the thread, restore the terminal. */
void event__stop(struct event_loop *el);

#endif /* EMBER_VMM_EVENT_H */
