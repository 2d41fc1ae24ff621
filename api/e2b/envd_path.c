// SPDX-License-Identifier: Apache-2.0
/* Paths and users as envd takes them (envd_path.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "../sandbox/base64.h"
#include "envd_path.h"

/* Append the component @c (@n bytes) to the path @out of *@len bytes. */
static int push(char *out, size_t *len, const char *c, size_t n)
{
	if (!n || (n == 1 && c[0] == '.'))
		return 0;
	if (n == 2 && c[0] == '.' && c[1] == '.') {
		while (*len && out[*len - 1] != '/')
			(*len)--;
		if (*len)
			(*len)--;
		return 0;
	}
	if (*len + 1 + n >= ENVD_PATH_MAX)
		return -ENAMETOOLONG;
	out[(*len)++] = '/';
	memcpy(out + *len, c, n);
	*len += n;
	return 0;
}

/* Append each component of @s (@n bytes) to @out. */
static int walk(char *out, size_t *len, const char *s, size_t n)
{
	size_t i = 0, j;

	while (i < n) {
		for (j = i; j < n && s[j] != '/'; j++)
			;
		if (push(out, len, s + i, j - i))
			return -ENAMETOOLONG;
		i = j + 1;
	}
	return 0;
}

int envd_path__resolve(const char *in, size_t len, char *out, char *err,
		       size_t errlen)
{
	size_t n = 0;
	int rc;

	if (!in)
		len = 0;
	if (len && memchr(in, '\0', len)) {
		snprintf(err, errlen, "the path holds a NUL byte");
		return -EINVAL;
	}
	if (len && in[0] == '~' && len > 1 && in[1] != '/') {
		snprintf(
			err, errlen,
			"cannot expand a user-specific home directory (~user)");
		return -EINVAL;
	}
	rc = 0;
	if (!len || in[0] != '/')
		rc = walk(out, &n, E2B_HOME, strlen(E2B_HOME));
	if (!rc && len)
		rc = in[0] == '~' ? walk(out, &n, in + 1, len - 1) :
				    walk(out, &n, in, len);
	if (rc) {
		snprintf(err, errlen, "the path is longer than %d bytes",
			 ENVD_PATH_MAX - 1);
		return -EINVAL;
	}
	if (!n)
		out[n++] = '/';
	out[n] = '\0';
	return 0;
}

/* Whether @s (@n bytes) is printable ASCII, fit to quote in a message. */
static bool printable(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

int envd_path__user_ok(const struct e2b_req *r, const char *name, char *err,
		       size_t errlen)
{
	const char *auth, *b;
	char dec[264];
	ssize_t n;
	size_t bl;

	if (!name) {
		auth = e2b__header(r, "Authorization");
		if (!auth || strncasecmp(auth, "Basic ", 6))
			return 0;
		for (b = auth + 6; *b == ' '; b++)
			;
		bl = strlen(b);
		n = bl <= 340 ? base64__decode(b, bl, dec) : -EINVAL;
		if (n < 0) {
			snprintf(err, errlen,
				 "malformed Authorization: Basic header");
			return -EACCES;
		}
		dec[n] = '\0';
		b = memchr(dec, ':', (size_t)n);
		if (b)
			dec[b - dec] = '\0';
		if (strlen(dec) != (size_t)(b ? b - dec : n))
			dec[0] = '\x01'; /* a NUL inside: unknown */
		name = dec;
	}
	if (!*name || !strcmp(name, "user") || !strcmp(name, "root"))
		return 0;
	if (printable(name, strlen(name)) && strlen(name) <= 64)
		snprintf(err, errlen,
			 "unknown user '%s': ember's sandboxes have the users "
			 "\"user\" and \"root\" (everything runs as root)",
			 name);
	else
		snprintf(err, errlen,
			 "unknown user: ember's sandboxes have the users "
			 "\"user\" and \"root\" (everything runs as root)");
	return -EACCES;
}

const char *envd_path__shown(const char *path, char *buf, size_t n)
{
	size_t i;

	for (i = 0; path[i] && i + 1 < n && i < ENVD_SHOWN; i++)
		buf[i] = (path[i] < 0x20 || path[i] > 0x7e) ? '?' : path[i];
	buf[i] = '\0';
	return buf;
}
