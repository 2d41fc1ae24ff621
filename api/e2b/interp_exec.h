/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The code interpreter's POST /execute (interp_exec.c), which the
 * interpreter service (interp.c) hands on.
 */
#ifndef EMBER_API_E2B_INTERP_EXEC_H
#define EMBER_API_E2B_INTERP_EXEC_H

#include "e2b.h"

/*
 * Run the body's code in @g's interpreter: 200 with a stream of
 * newline-delimited JSON lines, written by a thread of its own; errors
 * as plain text.  Returns 0.
 */
int interp_exec__handle(const struct e2b_req *r, struct e2b_guest *g,
			struct e2b_resp *resp);

#endif /* EMBER_API_E2B_INTERP_EXEC_H */
