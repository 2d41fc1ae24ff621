/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ember-e2b's router (route.c): the HTTP layer (http.c) hands it each
 * request; it checks the request's credential and calls the service that
 * answers it (e2b.h: the control plane, envd's services, the code
 * interpreter).
 */
#ifndef EMBER_API_E2B_ROUTE_H
#define EMBER_API_E2B_ROUTE_H

#include "reply.h"

struct e2b_server;
struct sandbox_info;

/*
 * Whether request @r (its headers) carries its credential: 0, or -1 with
 * the refusal answered in @resp.  Looked at before the body is read too,
 * so that no stranger's body is kept (an upload's goes to a memfd).
 */
int route__check(struct e2b_server *srv, const struct e2b_req *r,
		 struct e2b_resp *resp);

/*
 * Answer request @r (its body complete) into @resp: the credential
 * checked again, then the service that serves its path.  Returns 0; any
 * failure is an answer in @resp.
 */
int route__request(struct e2b_server *srv, const struct e2b_req *r,
		   struct e2b_resp *resp);

/*
 * The sandbox @id whose own port request @r is for (port_proxy.h), into
 * @info: 0 when it is running (resumed first when it was created with
 * autoResume and is parked or paused) and @r carries its traffic access
 * token if it has one (header E2b-Traffic-Access-Token); else -1 with
 * the refusal in @resp: 502 (no such sandbox, not running, the resume
 * failed), 403 (the token).
 */
int route__port_guest(struct e2b_server *srv, const struct e2b_req *r,
		      const char *id, struct sandbox_info *info,
		      struct e2b_resp *resp);

/*
 * Answer @r, whose body is over the limit (E2B_MAX_BODY, or
 * E2B_MAX_UPLOAD for an upload), with 413 in the shape its client reads:
 * E2B's error, the interpreter's text, or Connect's error (in an
 * END_STREAM message for a streaming call).
 */
void route__too_big(const struct e2b_req *r, struct e2b_resp *resp);

#endif /* EMBER_API_E2B_ROUTE_H */
