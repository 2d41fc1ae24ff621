// SPDX-License-Identifier: Apache-2.0
/* The shim's socket address: see address.h. */
#include "address.h"

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

/* Go's path.Clean of @p in place (lexical; p is not empty). */
static void clean(char *p)
{
	bool rooted = p[0] == '/';
	char *out = p, *r = p;
	size_t dotdot; /* where ".." can no longer back up */

	if (rooted) {
		out++;
		r++;
	}
	dotdot = out - p;
	while (*r) {
		if (*r == '/') {
			r++;
		} else if (r[0] == '.' && (r[1] == '/' || !r[1])) {
			r++;
		} else if (r[0] == '.' && r[1] == '.' &&
			   (r[2] == '/' || !r[2])) {
			r += 2;
			if ((size_t)(out - p) > dotdot) {
				out--;
				while ((size_t)(out - p) > dotdot &&
				       *out != '/')
					out--;
			} else if (!rooted) {
				if (out > p)
					*out++ = '/';
				*out++ = '.';
				*out++ = '.';
				dotdot = out - p;
			}
		} else {
			if ((rooted && out != p + 1) || (!rooted && out != p))
				*out++ = '/';
			while (*r && *r != '/')
				*out++ = *r++;
		}
	}
	if (out == p)
		*out++ = '.';
	*out = 0;
}

int shim_address__join(const char *a, const char *b, const char *c, char *out,
		       size_t outlen)
{
	const char *parts[3] = { a, b, c };
	size_t n = 0, i, l;

	for (i = 0; i < 3; i++) {
		if (!parts[i] || !parts[i][0])
			continue;
		l = strlen(parts[i]);
		if (n + l + 2 > outlen)
			return -ENAMETOOLONG;
		if (n)
			out[n++] = '/';
		memcpy(out + n, parts[i], l);
		n += l;
	}
	if (!n) {
		if (outlen < 1)
			return -ENAMETOOLONG;
		out[0] = 0;
		return 0;
	}
	out[n] = 0;
	clean(out);
	return 0;
}

int shim_address__socket(const char *address, const char *ns, const char *group,
			 const char *dir, char *out, size_t outlen)
{
	unsigned char d[SHA256_DIGEST_LENGTH];
	char hex[2 * SHA256_DIGEST_LENGTH + 1];
	size_t joinlen, i;
	char *joined;
	int n, err;

	if (!ns || !ns[0] || !group || !group[0])
		return -EINVAL;
	joinlen =
		strlen(address ? address : "") + strlen(ns) + strlen(group) + 8;
	joined = malloc(joinlen);
	if (!joined)
		return -ENOMEM;
	err = shim_address__join(address, ns, group, joined, joinlen);
	if (err) {
		free(joined);
		return err;
	}
	SHA256((const unsigned char *)joined, strlen(joined), d);
	free(joined);
	for (i = 0; i < sizeof(d); i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	n = snprintf(out, outlen, "unix://%s/%s", dir, hex);
	if (n < 0 || (size_t)n >= outlen ||
	    (size_t)n - 7 >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return -ENAMETOOLONG;
	return 0;
}

int shim_address__group(const char *json, size_t len, const char *id, char *out,
			size_t outlen)
{
	const char *group = id;
	json_t *root, *v;
	int n;

	root = json_loadb(json, len, 0, NULL);
	if (!root)
		return -EINVAL;
	v = json_object_get(json_object_get(root, "annotations"),
			    SHIM_ANNOT_SANDBOX_ID);
	if (json_is_string(v) && json_string_value(v)[0])
		group = json_string_value(v);
	n = snprintf(out, outlen, "%s", group);
	json_decref(root);
	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

const char *shim_address__path(const char *address)
{
	if (!strncmp(address, "unix://", 7))
		address += 7;
	if (!address[0] || address[0] == '@')
		return NULL;
	return address;
}
