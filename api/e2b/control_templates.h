/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control plane's templates, snapshots and forks
 * (control_templates.c), one call per E2B path (control.c routes them).
 * Each answers in @resp (E2B's error shape on failure) and returns 0; @b
 * is the request's body, a JSON object (control.c reads it for the POST
 * calls).
 */
#ifndef EMBER_API_E2B_CONTROL_TEMPLATES_H
#define EMBER_API_E2B_CONTROL_TEMPLATES_H

#include <jansson.h>

#include "e2b.h"

/* Remove the fork templates that no sandbox uses any more. */
void control_templates__sweep_forks(void);

/* POST /sandboxes/ID/fork: ?count sandboxes from a snapshot of ID. */
int control_templates__fork(struct e2b_server *srv, const json_t *b,
			    const char *id, struct e2b_resp *resp);

/* POST /sandboxes/ID/snapshots: a snapshot of ID, as a template. */
int control_templates__snapshot(struct e2b_server *srv, const json_t *b,
				const char *id, struct e2b_resp *resp);

/* GET /snapshots (of sandbox @sandbox_id, NULL: of all). */
int control_templates__snapshots(const char *sandbox_id, struct e2b_resp *resp);

/* GET /templates: ember's templates. */
int control_templates__list(const struct e2b_server *srv,
			    struct e2b_resp *resp);

/* GET /templates/NAME. */
int control_templates__get(struct e2b_server *srv, const char *name,
			   struct e2b_resp *resp);

/* DELETE /templates/NAME: snapshots and fork templates only. */
int control_templates__delete(const char *name, struct e2b_resp *resp);

#endif /* EMBER_API_E2B_CONTROL_TEMPLATES_H */
