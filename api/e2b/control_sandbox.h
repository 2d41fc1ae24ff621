/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the control plane's calls (control_lifecycle.c,
 * control_templates.c) share (control_sandbox.c).  Each function that
 * takes @resp answers the client's error there (E2B's error shape) when
 * it fails.
 */
#ifndef EMBER_API_E2B_CONTROL_SANDBOX_H
#define EMBER_API_E2B_CONTROL_SANDBOX_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "e2b.h"

#define CONTROL_NO_END "9999-12-31T23:59:59Z" /* endAt without a TTL */

/* Whether @t is a name E2B's SDKs use for their default template. */
bool control_sandbox__is_default(const char *t);

/*
 * A template's aliases: [@name], plus the default names when @name is
 * @dflt (the default template).  A new reference; NULL when out of
 * memory.
 */
json_t *control_sandbox__aliases(const char *name, const char *dflt);

/* The time @t (s since the epoch) in RFC 3339, UTC, as E2B writes it. */
json_t *control_sandbox__time(int64_t t);

/*
 * The Sandbox that create, connect and fork answer: with @srv's domain;
 * its trafficAccessToken is @rec's traffic token when it has one (its
 * ports are private), else its access token (the code interpreter's
 * SDK sends only that for some calls).
 */
json_t *control_sandbox__json(const struct e2b_server *srv,
			      const struct sandbox_info *i,
			      const struct e2b_record *rec);

/* The body as a JSON object ({} when empty); NULL after answering 400. */
json_t *control_sandbox__body(const struct e2b_req *r, struct e2b_resp *resp);

/*
 * Member @key of @o as seconds (1-86400) in *@out, untouched when absent
 * or null.  -EINVAL after answering 400.
 */
int control_sandbox__seconds(const json_t *o, const char *key,
			     unsigned int *out, struct e2b_resp *resp);

/*
 * Look up sandbox @id exactly (not by prefix): 0 with @info, else -ENOENT
 * after answering 404 in the shape the SDKs recognise.
 */
int control_sandbox__find(const char *id, struct sandbox_info *info,
			  struct e2b_resp *resp);

/*
 * Whether sandbox @id is gone (killed, or its timeout, meanwhile): an
 * operation on it that failed then answers 404, as for an unknown one.
 */
bool control_sandbox__vanished(const char *id);

/* Its life at the timeout's end (control_sandbox__start()'s @life). */
#define CONTROL_LIFE_PAUSE  1u /* parked, not killed (onTimeout: pause) */
#define CONTROL_LIFE_RESUME 2u /* auto-resumed by envd calls (autoResume) */
/* Not life, but kept as it: network {allowPublicTraffic: false}, its
   ports need the traffic token that its record is given */
#define CONTROL_LIFE_PRIVATE 4u

/*
 * Start a sandbox from ember's template @tname for @ttl_s seconds with
 * network @net (none when the template has no network device) and
 * @life (CONTROL_LIFE_* bits, 0: killed at the timeout's end); its
 * record says @asked (the templateID the client gave), @metadata and
 * @env (objects of strings, or NULL).  0 with @info and @rec filled
 * (release @rec); else a negative errno and an answer in @resp.
 */
int control_sandbox__start(struct e2b_server *srv, const char *tname,
			   const char *asked, unsigned int ttl_s,
			   unsigned int life, enum net_mode net,
			   const json_t *metadata, const json_t *env,
			   struct sandbox_info *info, struct e2b_record *rec,
			   struct e2b_resp *resp);

#endif /* EMBER_API_E2B_CONTROL_SANDBOX_H */
