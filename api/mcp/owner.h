/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Who owns a sandbox ember-mcp made: its principal, recorded in the file
 * "mcp.owner" of the sandbox's directory (sandbox.h), so that it lives
 * exactly as long as the sandbox (parked too) and outlives the MCP
 * session and ember-mcp itself.  Key=value lines, 0600, replaced
 * atomically:
 *
 *   principal=user:<uid>            stdio: the local user
 *   principal=token:<sha256 hex>    HTTP: the bearer token (its hash only)
 *   ttl=<s>                         the TTL each use renews (0: none)
 *
 * A sandbox without the file (made by emberctl, ember-e2b) is nobody's
 * here: ember-mcp's tools do not touch it.
 */
#ifndef EMBER_MCP_OWNER_H
#define EMBER_MCP_OWNER_H

#include <stdbool.h>
#include <stddef.h>

#define OWNER_NAME	    "mcp.owner"
#define OWNER_PRINCIPAL_MAX 80 /* bytes of a principal, with its NUL */

/*
 * owner__user() - the principal of the local user (getuid()) into @out
 * (OWNER_PRINCIPAL_MAX bytes).
 */
void owner__user(char out[OWNER_PRINCIPAL_MAX]);

/*
 * owner__token() - the principal of the bearer token @token (a string,
 * never written anywhere): "token:" and its SHA-256 in hex, into @out.
 * 0, or -ENOMEM when the digest could not be made.
 */
int owner__token(const char *token, char out[OWNER_PRINCIPAL_MAX]);

/*
 * owner__save() - record @principal as the owner of the sandbox directory
 * @dir with the TTL @ttl_s (seconds, 0: none), replacing any record.
 * 0, or -ENAMETOOLONG or the failing call's negative errno (then the
 * previous record, if any, is unchanged).
 */
int owner__save(const char *dir, const char *principal, unsigned int ttl_s);

/*
 * owner__is() - whether the sandbox directory @dir records @principal as
 * its owner; when it does, its TTL into *@ttl_s (may be NULL).  False for
 * no record, an unreadable or malformed one, or another principal.
 */
bool owner__is(const char *dir, const char *principal, unsigned int *ttl_s);

#endif /* EMBER_MCP_OWNER_H */
