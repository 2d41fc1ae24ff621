/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Console input: ember's standard input fed to the guest's UART through
 * the event loop.  Input that arrives before the guest opens its tty, or
 * faster than it reads, is held (and stdin left unread meanwhile) instead
 * of lost.  A terminal is put in raw mode; Ctrl-A x asks to stop the VM.
 */
#ifndef EMBER_VMM_CONSOLE_H
#define EMBER_VMM_CONSOLE_H

#include <stdbool.h>

#include "../../devices/device.h"
#include "../event.h"

struct console;

/*
 * console__start() - feed @in_fd (not owned: pipe, terminal or regular
 * file) into UART @serial from loop @el; Ctrl-A x on a terminal calls
 * @quit(@opaque).  Returns the console (free with console__destroy, after
 * the loop has stopped), or NULL (logged) when it cannot start.
 */
struct console *console__start(struct event_loop *el, int in_fd,
			       struct device *serial,
			       void (*quit)(void *opaque), void *opaque);

/*
 * console__hold() - while @hold (the VM is paused) no input reaches the
 * UART and stdin is not read; released, input flows again.  Called on the
 * event thread (the control layer's), or while it cannot run the
 * console's handlers.  NULL is fine.
 */
void console__hold(struct console *c, bool hold);

/* console__destroy() - restore the terminal and free; NULL is fine. */
void console__destroy(struct console *c);

#endif /* EMBER_VMM_CONSOLE_H */
