/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What ember-e2b keeps about a sandbox beyond what the sandbox library
 * does: the file "e2b.json" in the sandbox's directory (sandbox.h), so
 * that it lives exactly as long as the sandbox (parked too) and survives
 * a restart of ember-e2b.  Written 0600 through a temporary file and a
 * rename, read on each request.
 *
 *   {"token": hex, "templateID": the name the client asked for,
 *    "metadata": {string: string}, "envVars": {string: string},
 *    "alias": string, "trafficToken": hex (only for a sandbox created
 *    with network {allowPublicTraffic: false}: requests to its own ports
 *    must carry it, port_proxy.h)}
 *
 * A sandbox without the file (made by emberctl or ember-mcp) gets one at
 * its first `connect`, which hands out its token.
 */
#ifndef EMBER_API_E2B_RECORD_H
#define EMBER_API_E2B_RECORD_H

#include <jansson.h>
#include <stddef.h>

#define RECORD_NAME	 "e2b.json"
#define RECORD_TOKEN_LEN 32 /* hex digits of an access token */
#define RECORD_ID_MAX	 128 /* bytes of a templateID kept */
#define RECORD_MAX_BYTES (1u << 20) /* bytes of the whole file */

struct e2b_record {
	char token[RECORD_TOKEN_LEN + 1];
	char traffic_token[RECORD_TOKEN_LEN + 1]; /* "": its ports are public */
	char template_id[RECORD_ID_MAX + 1];
	json_t *metadata; /* object of strings; owned */
	json_t *env_vars; /* object of strings; owned */
};

/*
 * A new record for template @template_id (truncated to RECORD_ID_MAX)
 * with a fresh random token and empty objects.  -ENOMEM, getrandom's
 * errno.
 */
int record__init(struct e2b_record *r, const char *template_id);

/*
 * Read @dir/e2b.json into @r.  -ENOENT (none), -EINVAL (not the shape
 * above: a record is never half-read), other errno.
 */
int record__load(const char *dir, struct e2b_record *r);

/* Write @r as @dir/e2b.json (replacing it atomically).  0 or -errno. */
int record__save(const char *dir, const struct e2b_record *r);

/* Release @r's objects (the struct stays usable for record__init). */
void record__release(struct e2b_record *r);

/*
 * Whether @token (NULL: none given) is @r's, compared in constant time.
 */
int record__token_ok(const struct e2b_record *r, const char *token);

/*
 * Give @r a fresh random traffic token (its ports then need it).
 * getrandom's -errno.
 */
int record__add_traffic_token(struct e2b_record *r);

/*
 * Whether a request to @r's own ports that carries @token (NULL: none)
 * may pass: always when @r has no traffic token, else when @token is it
 * (compared in constant time).  1 or 0.
 */
int record__traffic_ok(const struct e2b_record *r, const char *token);

/*
 * Whether every key of the object @want is in @r's metadata with the
 * same value (E2B's list filter).  1 or 0.
 */
int record__metadata_match(const struct e2b_record *r, const json_t *want);

#endif /* EMBER_API_E2B_RECORD_H */
