/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Forgetting a sandbox (forget.c): what ember-e2b keeps for one, its
 * processes (procs.h) and its idle pooled agent connections (pool.h),
 * dropped in one place once the sandbox is killed, parked or gone.
 */
#ifndef EMBER_API_E2B_FORGET_H
#define EMBER_API_E2B_FORGET_H

#include <stdbool.h>

struct e2b_server;

/*
 * Sandbox @id was killed or paused (its agent connections are gone):
 * end and forget its processes, drop its pooled agent connections.
 */
void forget__sandbox(struct e2b_server *srv, const char *id);

/*
 * Forget the sandboxes that are gone without ember-e2b (their timeout,
 * `emberctl kill`), as forget__sandbox().  Call it now and then; with
 * @all, at exit, for every sandbox.
 */
void forget__sweep(struct e2b_server *srv, bool all);

#endif /* EMBER_API_E2B_FORGET_H */
