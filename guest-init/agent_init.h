/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guest agent's INIT (PROTOCOL.md), sent by the host after a restore:
 * the random pool and the wall clock.
 */
#ifndef EMBER_GUEST_AGENT_INIT_H
#define EMBER_GUEST_AGENT_INIT_H

#include <stdint.h>

#include "agent_conn.h"

/*
 * Read EMBER_AGENT_INIT_REPORT (see agent.c) once, at start, and take it
 * out of the environment the execs inherit.  Returns 0, or -ENOMEM.
 */
int agent_init__from_env(void);

/* INIT, its payload in @c->rx (wiped once used): OK or ERROR. */
void agent_init__handle(struct conn *c, const struct ember_agent_hdr *h);

#endif /* EMBER_GUEST_AGENT_INIT_H */
