/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A process's stdin (proc_stdin.c), for the process service's SendInput
 * and CloseStdin.
 */
#ifndef EMBER_API_E2B_PROC_STDIN_H
#define EMBER_API_E2B_PROC_STDIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proc;

/*
 * Write all @n bytes of @b to @p's stdin, waiting up to 10 s for room.
 * 0; else -EPIPE (no stdin, or closed), -ETIMEDOUT, -errno, with the
 * Connect code in *@code and a message in @err.
 */
int proc_stdin__write(struct proc *p, const uint8_t *b, size_t n,
		      const char **code, char *err, size_t errlen);

/*
 * Close @p's stdin (the guest's process reads EOF); whether it was
 * started with one.
 */
bool proc_stdin__close(struct proc *p);

#endif /* EMBER_API_E2B_PROC_STDIN_H */
