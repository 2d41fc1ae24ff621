/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Console output: the host side of the bytes the guest's UART transmits.
 * They go to a file descriptor (ember's stdout or a console file).  A
 * reader that has gone (a closed pipe, a hung-up terminal) never ends the
 * VM: from then on the output is dropped and counted.  A reader that is
 * merely slow holds the transmitting vCPU back, as a terminal's flow
 * control would, but never past console_out__stop().
 *
 * It also watches the text for the guest kernel's panic line, so that
 * ember can say why a guest reset ("Kernel panic - not syncing: ...").
 */
#ifndef EMBER_VMM_CONSOLE_OUT_H
#define EMBER_VMM_CONSOLE_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct console_out;

/* The longest panic reason kept (bytes, without the NUL). */
#define CONSOLE_OUT_PANIC_MAX 200

/*
 * console_out__create() - output to @fd (not owned; -1 discards the bytes
 * but still watches them for a panic).  Returns the console or NULL
 * without memory.  Free with console_out__destroy().
 */
struct console_out *console_out__create(int fd);

/*
 * console_out__tx() - one byte from the guest: the struct serial_host tx
 * callback (devices/serial.h), @opaque being the console.  Called under
 * the UART's lock, so never concurrently for one console.  Waits while
 * the reader is slow (100 ms at a time, until console_out__stop()); a
 * write error drops the byte, and EPIPE, EIO, EBADF or ENXIO (the reader
 * has gone) drop every later byte too.
 */
void console_out__tx(void *opaque, uint8_t byte);

/*
 * console_out__stop() - the VM is stopping: from now on no write waits for
 * the reader (a byte that cannot go at once is dropped), so a vCPU never
 * hangs on a stalled pipe.  Safe from any thread.
 */
void console_out__stop(struct console_out *c);

/*
 * console_out__hold() - while @hold (the VM is pausing or paused), no
 * write waits for the reader either: a vCPU must park within a bounded
 * time.  Safe from any thread; NULL is fine.
 */
void console_out__hold(struct console_out *c, bool hold);

/* console_out__dropped() - bytes of guest output dropped so far. */
uint64_t console_out__dropped(const struct console_out *c);

/*
 * console_out__first_ms() - when the guest transmitted its first byte, in
 * ms since ember started (log__ms()); 0 if it has not (or @c is NULL).
 */
double console_out__first_ms(const struct console_out *c);

/*
 * console_out__panic() - the reason of the first guest kernel panic seen
 * on the console (the text after "Kernel panic - not syncing: ", printable
 * ASCII only, at most CONSOLE_OUT_PANIC_MAX bytes), or NULL when none was.
 * The guest controls this text: quote it, never act on it.  Valid until
 * console_out__destroy(); read it once the vCPUs have stopped.
 */
const char *console_out__panic(const struct console_out *c);

/* console_out__destroy() - free (NULL is fine); the fd stays open. */
void console_out__destroy(struct console_out *c);

#endif /* EMBER_VMM_CONSOLE_OUT_H */
