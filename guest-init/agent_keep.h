/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guest agent's kept processes (PROTOCOL.md, "Processes that outlive
 * their connection"): an exec with FLAGS bit KEEP is named by an abstract
 * Unix socket, "ember-agent.keep.PID", bound by the agent process that
 * started it.  When its connection closes (a sandbox parked and resumed
 * cuts every vsock connection) that process stays as the keeper of its
 * kept execs: it reads their output into a buffer of EMBER_AGENT_KEEP_BUF
 * bytes each (the oldest dropped and counted) and serves, on those
 * sockets, the ATTACH and LIST of other connections' agent processes,
 * which relay them with the same frames.
 */
#ifndef EMBER_GUEST_AGENT_KEEP_H
#define EMBER_GUEST_AGENT_KEEP_H

#include <poll.h>
#include <stdint.h>

#include "agent_conn.h"

struct ember_agent_exec;

/*
 * The EXEC @e of the just started exec @s had FLAGS bit KEEP: name it
 * (its socket), answer STARTED, and with DETACH detach it at once (its
 * stream is free, its output kept).  0, or an errno (ENOMEM, EADDRINUSE:
 * another process of that pid is kept) with nothing sent: the caller
 * answers ERROR and kills it.
 */
int agent_keep__start(struct conn *c, struct slot *s,
		      const struct ember_agent_exec *e);

/*
 * @n bytes of @buf (@type STDOUT or STDERR) that exec @s wrote: to its
 * stream on @c, to its attacher, or into its buffer.
 */
void agent_keep__emit(struct conn *c, struct slot *s, uint16_t type,
		      const void *buf, size_t n);

/*
 * Exec @s was reaped, @p its EXIT payload: sent to its stream or its
 * attacher, then 1 (the caller frees the slot); or kept for an ATTACH
 * when it is detached with nobody attached: 0, the slot stays.
 */
int agent_keep__exit(struct conn *c, struct slot *s, const uint8_t *p);

/*
 * @c's connection is gone: detach its kept execs, end its ATTACH relays.
 * Returns how many kept execs remain (the process serves them).
 */
int agent_keep__orphan(struct conn *c);

/* How many of @c's slots are kept execs. */
int agent_keep__count(const struct conn *c);

/* ATTACH: relay a kept process to this stream, or ERROR. */
void agent_keep__attach(struct conn *c, const struct ember_agent_hdr *h,
			const uint8_t *payload);

/* LIST: every kept process of the guest's agent, as one PROCS frame. */
void agent_keep__list(struct conn *c, const struct ember_agent_hdr *h);

/*
 * STDIN, KILL or RESIZE @h (payload already checked) on an ATTACH relay
 * @s: forwarded to the keeper.
 */
void agent_keep__relay(struct conn *c, struct slot *s,
		       const struct ember_agent_hdr *h, const uint8_t *payload);

/*
 * Add the kept execs' sockets and the relays' to @pfd from index @n (@who
 * the slot of each); returns the new count.  Room for 2 per slot.
 */
int agent_keep__watch(struct conn *c, struct pollfd *pfd, struct slot **who,
		      int n);

/* @fd of agent_keep__watch() is ready (for @s). */
void agent_keep__ready(struct conn *c, struct slot *s, int fd);

/* Free what keeps @s (its socket, attacher, buffer); safe to repeat. */
void agent_keep__release(struct slot *s);

#endif /* EMBER_GUEST_AGENT_KEEP_H */
