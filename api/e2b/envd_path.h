/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Paths and users as envd takes them (envd_path.c), which its file
 * services (file_transfer.c: REST /files; filesystem.c and fs_watch.c:
 * the filesystem.Filesystem Connect service) share: paths resolved the
 * way envd's permissions.ExpandAndResolve does, and the user a request
 * names.
 *
 * Users: envd runs each operation as the request's user; ember runs it
 * as that guest account too (the agent's USER): "root" as root, E2B's
 * default "user" (or no user) as the template's default user when its
 * template records one (a template from an image: the image's User, or
 * the account "user" ember adds), else as the account "user" (uid 1000,
 * home /home/user) of ember's own rootfs; any other name as itself (the
 * guest refuses one it has no account for).  Relative paths resolve
 * against E2B_HOME whatever the user.
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

#define ENVD_USER_MAX E2B_USER_MAX

/*
 * envd_path__user() - the guest user request @r to sandbox @g runs as,
 * for the agent's USER (struct agent_exec_req.user): the name is @name
 * (the `username` query argument; NULL: the user of an `Authorization:
 * Basic base64(user:password)` header, if any).  E2B's default user
 * ("user", or none given) is the guest's default (*@user NULL: no USER)
 * when @g's template records a default user (template_info.user), else
 * "user"; any other name is itself ("root" included).  The name is
 * copied into @out (ENVD_USER_MAX bytes) and *@user points there or is
 * NULL.  0, or -EACCES with a message in @err: a malformed header, a
 * name over ENVD_USER_MAX - 1 bytes or not printable ASCII.
 */
int envd_path__user(const struct e2b_req *r, const char *name,
		    const struct e2b_guest *g, char *out, const char **user,
		    char *err, size_t errlen);

/*
 * @path made fit to quote in a message (a JSON string must be UTF-8, and
 * a path is any bytes): its first ENVD_SHOWN bytes into @buf (@n bytes),
 * control bytes and bytes over 0x7e as '?'.  Returns @buf.
 */
#define ENVD_SHOWN 300
const char *envd_path__shown(const char *path, char *buf, size_t n);

#endif /* EMBER_API_E2B_ENVD_PATH_H */
