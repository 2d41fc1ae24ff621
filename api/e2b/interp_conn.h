/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A connection to a sandbox's code interpreter (interp_conn.c), for
 * /execute (interp_exec.c) and /contexts (interp.c): each request opens
 * its own.
 */
#ifndef EMBER_API_E2B_INTERP_CONN_H
#define EMBER_API_E2B_INTERP_CONN_H

#include <jansson.h>
#include <stddef.h>

#include "e2b.h"

struct interp_client;

#define INTERP_LIST_MS 30000 /* list_contexts */

/*
 * A connection to @g's interpreter, which is started when nothing
 * listens.  *@watch (when not NULL) a duplicate of its socket, for a
 * shutdown() from another thread.  On failure the answer in @resp and a
 * negative errno.
 */
int interp_conn__open(const struct e2b_guest *g, struct interp_client **out,
		      int *watch, struct e2b_resp *resp);

/*
 * Send @req (consumed) and read its answer into *@ans.  0, or a negative
 * errno with @err (-EREMOTEIO: the interpreter refused).
 */
int interp_conn__ask(struct interp_client *c, json_t *req, int timeout_ms,
		     json_t **ans, char *err, size_t errlen);

/* Whether the interpreter has context @id: 1, 0, or a negative errno. */
int interp_conn__has_context(struct interp_client *c, const char *id, char *err,
			     size_t errlen);

/* Answer a failed request (@rc, @err) of @c that is not about a context. */
int interp_conn__failed(struct e2b_resp *resp, int rc, const char *err);

#endif /* EMBER_API_E2B_INTERP_CONN_H */
