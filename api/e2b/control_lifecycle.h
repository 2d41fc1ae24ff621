/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control plane's sandbox life cycle (control_lifecycle.c), one call
 * per E2B path (control.c routes them).  Each answers in @resp (E2B's
 * error shape on failure) and returns 0.  @id is the sandbox's ID from the
 * path; @b the request's body, a JSON object (control.c reads it for the
 * POST calls).
 */
#ifndef EMBER_API_E2B_CONTROL_LIFECYCLE_H
#define EMBER_API_E2B_CONTROL_LIFECYCLE_H

#include <jansson.h>
#include <stdbool.h>

#include "e2b.h"

/* POST /sandboxes: a new sandbox from a template (@id: NULL); 201 with
   a Sandbox. */
int control_lifecycle__create(struct e2b_server *srv, const json_t *b,
			      const char *id, struct e2b_resp *resp);

/*
 * GET /v2/sandboxes (?state, ?limit, ?metadata) and, with @v1, GET
 * /sandboxes (running ones unless ?state says otherwise).
 */
int control_lifecycle__list(const struct e2b_req *r, struct e2b_resp *resp,
			    bool v1);

/* GET /sandboxes/ID: a SandboxDetail. */
int control_lifecycle__get(const char *id, struct e2b_resp *resp);

/* DELETE /sandboxes/ID. */
int control_lifecycle__kill(struct e2b_server *srv, const char *id,
			    struct e2b_resp *resp);

/* POST /sandboxes/ID/timeout: a new timeout, from now, of the body's
   "timeout" seconds. */
int control_lifecycle__timeout(struct e2b_server *srv, const json_t *b,
			       const char *id, struct e2b_resp *resp);

/* POST /sandboxes/ID/refreshes: the same with the body's "duration". */
int control_lifecycle__refresh(struct e2b_server *srv, const json_t *b,
			       const char *id, struct e2b_resp *resp);

/* POST /sandboxes/ID/pause: parked on disk, memory kept. */
int control_lifecycle__pause(struct e2b_server *srv, const json_t *b,
			     const char *id, struct e2b_resp *resp);

/*
 * POST /sandboxes/ID/connect (and /resume, /v2/.../connect): resume it
 * when paused, renew its timeout; 200 (201 when resumed) with a Sandbox.
 */
int control_lifecycle__connect(struct e2b_server *srv, const json_t *b,
			       const char *id, struct e2b_resp *resp);

#endif /* EMBER_API_E2B_CONTROL_LIFECYCLE_H */
