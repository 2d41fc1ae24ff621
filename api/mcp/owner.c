// SPDX-License-Identifier: Apache-2.0
/* The owner of a sandbox ember-mcp made: mcp.owner in its directory. */
#include <errno.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sandbox/files.h"
#include "owner.h"

#define OWNER_MAX_BYTES 256 /* of the whole record */
#define TTL_MAX		86400u

void owner__user(char out[OWNER_PRINCIPAL_MAX])
{
	snprintf(out, OWNER_PRINCIPAL_MAX, "user:%u", (unsigned int)getuid());
}

int owner__token(const char *token, char out[OWNER_PRINCIPAL_MAX])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	int n;

	if (!EVP_Digest(token, strlen(token), md, &len, EVP_sha256(), NULL) ||
	    len != 32)
		return -ENOMEM;
	n = snprintf(out, OWNER_PRINCIPAL_MAX, "token:");
	for (unsigned int i = 0; i < len; i++)
		n += snprintf(out + n, OWNER_PRINCIPAL_MAX - (size_t)n, "%02x",
			      md[i]);
	return 0;
}

int owner__save(const char *dir, const char *principal, unsigned int ttl_s)
{
	char path[PATH_MAX], tmp[PATH_MAX], text[OWNER_MAX_BYTES];
	int n;

	if (snprintf(path, sizeof(path), "%s/%s", dir, OWNER_NAME) >=
		    (int)sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, OWNER_NAME) >=
		    (int)sizeof(tmp))
		return -ENAMETOOLONG;
	n = snprintf(text, sizeof(text), "principal=%s\nttl=%u\n", principal,
		     ttl_s);
	if (n < 0 || n >= (int)sizeof(text))
		return -ENAMETOOLONG;
	return files__replace(path, tmp, text, (size_t)n, 0600, FILES_NOFOLLOW);
}

bool owner__is(const char *dir, const char *principal, unsigned int *ttl_s)
{
	char path[PATH_MAX], text[OWNER_MAX_BYTES], *save, *key, *val, *end;
	const char *who = NULL;
	unsigned long ttl = 0;
	bool has_ttl = false;

	if (snprintf(path, sizeof(path), "%s/%s", dir, OWNER_NAME) >=
		    (int)sizeof(path) ||
	    files__read_text(path, text, sizeof(text)) <= 0)
		return false;
	for (char *t = text; files__next_kv(t, &save, &key, &val); t = NULL) {
		if (!strcmp(key, "principal")) {
			who = val;
		} else if (!strcmp(key, "ttl")) {
			errno = 0;
			ttl = strtoul(val, &end, 10);
			has_ttl =
				!errno && end != val && !*end && ttl <= TTL_MAX;
		}
	}
	if (!who || !has_ttl || strcmp(who, principal))
		return false;
	if (ttl_s)
		*ttl_s = (unsigned int)ttl;
	return true;
}
