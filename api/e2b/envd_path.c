// SPDX-License-Identifier: Apache-2.0
/* Paths and users as envd takes them (envd_path.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "../sandbox/base64.h"
#include "../sandbox/template.h"
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

/*
 * The user name request @r gives: @name, else the user of its
 * `Authorization: Basic` header, else "" (none), into @out (
 * ENVD_USER_MAX bytes).  0, or -EACCES with @err.
 */
static int request_user(const struct e2b_req *r, const char *name, char *out,
			char *err, size_t errlen)
{
	const char *auth, *b;
	char dec[264];
	ssize_t n;
	size_t bl;

	if (!name) {
		auth = e2b__header(r, "Authorization");
		if (!auth || strncasecmp(auth, "Basic ", 6)) {
			out[0] = '\0';
			return 0;
		}
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
		if (strlen(dec) != (size_t)(b ? b - dec : n)) {
			snprintf(err, errlen,
				 "malformed Authorization: Basic header (a "
				 "NUL byte in the user)");
			return -EACCES;
		}
		name = dec;
	}
	if (strlen(name) >= ENVD_USER_MAX || !printable(name, strlen(name))) {
		snprintf(err, errlen,
			 "bad user: a user name is at most %d printable "
			 "ASCII characters",
			 ENVD_USER_MAX - 1);
		return -EACCES;
	}
	memcpy(out, name, strlen(name) + 1); /* fits: checked above */
	return 0;
}

int envd_path__user(const struct e2b_req *r, const char *name,
		    const struct e2b_guest *g, char *out, const char **user,
		    char *err, size_t errlen)
{
	struct template_info t;
	char terr[256];
	int rc;

	*user = NULL;
	rc = request_user(r, name, out, err, errlen);
	if (rc)
		return rc;
	if (*out && strcmp(out, E2B_USER)) {
		*user = out; /* "root", or any other: the guest says */
		return 0;
	}
	/*
	 * E2B's default user: the template's default user when it records
	 * one (the guest applies it: no USER), else ember's own rootfs's
	 * account "user".
	 */
	if (g->info.template_name[0] &&
	    !template__open(g->info.template_name, &t, NULL, terr,
			    sizeof(terr)) &&
	    t.user[0])
		return 0;
	snprintf(out, ENVD_USER_MAX, "%s", E2B_USER);
	*user = out;
	return 0;
}

const char *envd_path__shown(const char *path, char *buf, size_t n)
{
	size_t i;

	for (i = 0; path[i] && i + 1 < n && i < ENVD_SHOWN; i++)
		buf[i] = (path[i] < 0x20 || path[i] > 0x7e) ? '?' : path[i];
	buf[i] = '\0';
	return buf;
}
