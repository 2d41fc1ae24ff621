/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guest agent's EXEC, STDIN and KILL (PROTOCOL.md): each command a
 * child in a process group of its own, its output forwarded as frames.
 */
#ifndef EMBER_GUEST_AGENT_EXEC_H
#define EMBER_GUEST_AGENT_EXEC_H

#include <poll.h>
#include <stdint.h>

#include "agent_conn.h"

/*
 * Take the test hook EMBER_AGENT_DEFAULTS=FILE from the environment (the
 * image defaults file to read instead of EMBER_GUEST_DEFAULTS) and remove
 * it, so that execs do not inherit it.  0 or -ENOMEM.
 */
int agent_exec__from_env(void);

/*
 * EXEC @h with its @payload: resolve it against the image defaults file
 * (PROTOCOL.md, "Image defaults"), start the command, or answer ERROR.
 */
void agent_exec__start(struct conn *c, const struct ember_agent_hdr *h,
		       const uint8_t *payload);

/*
 * STDIN: write the payload to the exec's stdin (empty: close it; a TTY
 * exec's terminal gets its VEOF character instead, PROTOCOL.md).
 */
void agent_exec__stdin(struct conn *c, const struct ember_agent_hdr *h,
		       const uint8_t *payload);

/*
 * STDIN's work on the exec @s (found by stream or kept, agent_keep.c):
 * @len bytes of @payload to its stdin, or its end when @len is 0.
 */
void agent_exec__stdin_slot(struct conn *c, struct slot *s,
			    const uint8_t *payload, uint32_t len);

/* KILL: the signal to the exec's process group. */
void agent_exec__kill(struct conn *c, const struct ember_agent_hdr *h,
		      const uint8_t *payload);

/*
 * RESIZE: a TTY exec's window size (TIOCSWINSZ on its terminal: the
 * foreground process group gets SIGWINCH); ERROR(ENOTTY) for an exec
 * without a terminal, ESRCH for no exec, EPROTO for a bad payload.
 */
void agent_exec__resize(struct conn *c, const struct ember_agent_hdr *h,
			const uint8_t *payload);

/*
 * Add the open output pipes of @c's execs to @pfd from index @n (@who[i]
 * the slot of each) and lower *@timeout (ms, -1: none) to the nearest
 * deadline after @now (agent_conn__now_ms()).  Returns the new count; @pfd
 * and @who have room for 2 * EMBER_AGENT_MAX_EXECS more.
 */
int agent_exec__watch(struct conn *c, struct pollfd *pfd, struct slot **who,
		      int n, int64_t now, int *timeout);

/*
 * Forward a chunk of what @s's output pipe @fd has (poll said readable);
 * an fd of agent_keep__watch() goes to agent_keep__ready().
 */
void agent_exec__output(struct conn *c, struct slot *s, int fd);

/* SIGCHLD: reap every child that ended and send each exec's EXIT. */
void agent_exec__reap(struct conn *c);

/* SIGKILL the execs whose deadline is at or before @now (agent_conn__now_ms()). */
void agent_exec__timeouts(struct conn *c, int64_t now);

/*
 * The host is gone: kill @s's process group, wait for it, close its pipes
 * and whatever kept it (agent_keep__release()).
 */
void agent_exec__abandon(struct slot *s);

#endif /* EMBER_GUEST_AGENT_EXEC_H */
