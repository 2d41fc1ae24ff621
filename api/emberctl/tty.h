/* SPDX-License-Identifier: Apache-2.0 */
/*
 * emberctl's side of `exec -t`: the host terminal in raw mode while the
 * guest's terminal session runs, restored on every way out (return, exit,
 * a signal that ends or stops emberctl; SIGKILL alone cannot be caught),
 * and its window size followed.  One terminal per process: the state is
 * static because the signal handlers need it.
 */
#ifndef EMBER_API_EMBERCTL_TTY_H
#define EMBER_API_EMBERCTL_TTY_H

#include <stdint.h>

/*
 * The window size of the terminal @fd into *@rows and *@cols: 0, or a
 * negative errno (-ENOTTY for no terminal; a size of 0 x 0 is -ERANGE,
 * what a terminal that was never given one reports).
 */
int tty__size(int fd, uint16_t *rows, uint16_t *cols);

/*
 * Follow the window size of the terminal @fd: on each SIGWINCH a struct
 * agent_exec_ctl RESIZE record with its new size is written to @ctl_fd
 * (the write end of a pipe, made non-blocking here; a record that does
 * not fit is dropped).  With @raw, also put @fd into raw mode (no echo,
 * no line editing, no signals from keys: ^C, ^Z and ^\ are bytes for the
 * guest) until tty__restore(), which is registered with atexit() and run
 * by handlers of the signals that would end emberctl (SIGALRM, SIGXCPU,
 * SIGXFSZ, SIGVTALRM, SIGPROF); SIGTSTP, SIGTTIN and SIGTTOU restore it,
 * stop emberctl, and on SIGCONT (in the foreground) make it raw again and
 * send the size.  0, or a negative errno (nothing changed).  At most one
 * call per process; @fd and @ctl_fd stay open until tty__restore().
 */
int tty__follow(int fd, int ctl_fd, int raw);

/*
 * Give the terminal its settings from before tty__follow() back and stop
 * following its size.  Idempotent, async-signal-safe; does nothing
 * without tty__follow().
 */
void tty__restore(void);

#endif /* EMBER_API_EMBERCTL_TTY_H */
