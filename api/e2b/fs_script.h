/* SPDX-License-Identifier: Apache-2.0 */
/*
 * envd's file operations run in the guest (fs_script.c): the sandbox
 * library's (../sandbox/guest_fs.h) with its errors as Connect codes,
 * and its entries (struct fs_ent) written as envd's EntryInfo.  The
 * filesystem service (filesystem.c) and its watches (fs_watch.c) are
 * built on it.
 */
#ifndef EMBER_API_E2B_FS_SCRIPT_H
#define EMBER_API_E2B_FS_SCRIPT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "../sandbox/guest_fs.h"
#include "e2b.h"

/*
 * Run the operation @op in @g on the path @a (and @b, or NULL), as
 * guest_fs__run() says, as the user @g->user, through @srv's pool.  0 with @o filled (release
 * it), its status the script's exit.  -1 with a Connect code in *@code
 * and a message in @msg when it could not run (no agent, its timeout,
 * too much output, a user the guest does not know).
 */
int fs_script__run(struct e2b_server *srv, const struct e2b_guest *g,
		   const char *op, const char *a, const char *b,
		   struct fs_op *o, const char **code, char *msg,
		   size_t msglen);

/* The EntryInfo of @e (a new reference), NULL when out of memory. */
json_t *fs_script__entry_json(const struct fs_ent *e);

/* The first line of @o's stderr, fit for a message, into @buf. */
const char *fs_script__why(const struct fs_op *o, char *buf, size_t n);

/*
 * The Connect code for @o's failed command (status 7) by the errno text
 * busybox printed on its stderr: "invalid_argument" when a parent is a
 * file (ENOTDIR), "permission_denied" for EACCES, EPERM and EROFS and for
 * ENOENT, which a command that made its parents first gets only where
 * the file system takes no new entries (/proc, /sys), "resource_exhausted"
 * for ENOSPC and EDQUOT, "internal" for anything else.
 */
const char *fs_script__code(const struct fs_op *o);

#endif /* EMBER_API_E2B_FS_SCRIPT_H */
