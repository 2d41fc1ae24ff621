/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Paths and users as envd takes them (envd_path.c), which its file
 * services (file_transfer.c: REST /files; filesystem.c and fs_watch.c:
 * the filesystem.Filesystem Connect service) share: paths resolved the
 * way envd's permissions.ExpandAndResolve does, and the user a request
 * names.
 *
 * Users: envd runs each operation as the request's user ("user" by
 * default, uid 1000, home /home/user).  ember's guest agent runs
 * everything as root, so the user only has to be one envd would know:
 * "user" or "root" (or none) is accepted and otherwise ignored; files are
 * owned by root.  Relative paths resolve against E2B_HOME either way.
 */
#ifndef EMBER_API_E2B_ENVD_PATH_H
#define EMBER_API_E2B_ENVD_PATH_H

#include <stddef.h>

#include "e2b.h"

#define ENVD_PATH_MAX 4096 /* bytes of a resolved path, its NUL included */

/*
 * Resolve the client's path @in (@len bytes; NULL or empty: E2B_HOME)
 * into @out (ENVD_PATH_MAX bytes): "~" and "~/..." expand to E2B_HOME, a
 * relative path is taken under E2B_HOME, then "." and ".." components
 * and repeated slashes are removed lexically (".." stops at "/"; no
 * symbolic link is followed).  0, or -EINVAL with a one-line reason in
 * @err ("~user" forms, a NUL byte, a result over ENVD_PATH_MAX).
 */
int envd_path__resolve(const char *in, size_t len, char *out, char *err,
		       size_t errlen);

/*
 * Whether the user of request @r is one ember serves: @name (the
 * `username` query argument; NULL: look at the header instead), else the
 * user of an `Authorization: Basic base64(user:password)` header, must be
 * absent, empty, "user" or "root".  0, or -EACCES with a message in @err.
 */
int envd_path__user_ok(const struct e2b_req *r, const char *name, char *err,
		       size_t errlen);

/*
 * @path made fit to quote in a message (a JSON string must be UTF-8, and
 * a path is any bytes): its first ENVD_SHOWN bytes into @buf (@n bytes),
 * control bytes and bytes over 0x7e as '?'.  Returns @buf.
 */
#define ENVD_SHOWN 300
const char *envd_path__shown(const char *path, char *buf, size_t n);

#endif /* EMBER_API_E2B_ENVD_PATH_H */
