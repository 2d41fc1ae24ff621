/* SPDX-License-Identifier: Apache-2.0 */
/*
 * envd's ProcessEvent messages (process.proto: start, data, end,
 * keepalive), each as a Connect envelope {"event": {KIND: ...}} that a
 * process's stream sends (proc_event.c).  Pure.  Each returns a malloc()ed
 * envelope of *@n bytes, or NULL when out of memory.
 */
#ifndef EMBER_API_E2B_PROC_EVENT_H
#define EMBER_API_E2B_PROC_EVENT_H

#include <stddef.h>
#include <stdint.h>

struct agent_exec_result;

/* start {pid}: the first message of every process stream. */
uint8_t *proc_event__start(uint32_t pid, size_t *n);

/* data {@kind: base64 of @len bytes of @buf}; @kind "stdout"/"stderr". */
uint8_t *proc_event__data(const char *kind, const uint8_t *buf, size_t len,
			  size_t *n);

/*
 * end {exitCode, exited, status[, error]} of an exec that ran to its end
 * (@res, agent_client.h), the status as Go's ProcessState says it.
 */
uint8_t *proc_event__end(const struct agent_exec_result *res, size_t *n);

/* keepalive {}: what a quiet stream sends now and then. */
uint8_t *proc_event__keepalive(size_t *n);

#endif /* EMBER_API_E2B_PROC_EVENT_H */
