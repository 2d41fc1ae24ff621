/* SPDX-License-Identifier: Apache-2.0 */
/*
 * File operations run in a sandbox's guest (guest_fs.c): one busybox
 * script does stat, list, mkdir, move and remove, every path an argument
 * and never in the script's text, and prints the entries it touched as
 * guest_stat.h's records; another writes a file from its stdin.  Each
 * runs as a given guest user (the agent's USER), so that what it makes is
 * that user's and its permissions apply.  ember-e2b's filesystem service,
 * watches and uploads and ember-mcp's list_files and write_file are built
 * on it.
 */
#ifndef EMBER_API_GUEST_FS_H
#define EMBER_API_GUEST_FS_H

#include <stddef.h>

#include "guest_stat.h"
#include "pool.h"
#include "record.h"

#define GUEST_FS_RUN_MS	 60000 /* one operation in the guest, at most */
#define GUEST_FS_OUT_MAX (32u << 20) /* bytes of a listing */

/* What an operation printed and how it ended. */
struct fs_op {
	char nonce[GUEST_NONCE_LEN + 1];
	char *out, *err; /* NUL-terminated */
	size_t outlen;
	int status;
};

/*
 * guest_fs__run() - run the operation @op in the live sandbox @sb on the
 * path @a (and @b, or NULL) as @user (the agent's USER; NULL: the guest's
 * default user), through an agent connection from @p (a new one answers
 * a PING within @connect_ms):
 *
 *   "stat"   @a's entry;
 *   "list"   the entries below directory @a, to depth @b ("" for all);
 *   "mkdir"  make @a and its parents, then its entry;
 *   "move"   @a to @b (parents made), then @b's entry;
 *   "remove" @a, recursively.
 *
 * A relative @a or @b is taken from the guest's "/" and must not begin
 * with '-'.  0 with @o filled (release it), its status the script's exit:
 * 0 done; 3 no such path; 4 not a directory; 5 a directory exists; 6
 * something else exists; 7 the command failed (its stderr says why); 8 a
 * move of a directory into itself.  Errors, with the reason in @err:
 * -ETIME when it ran over GUEST_FS_RUN_MS, -EFBIG when its output reached
 * GUEST_FS_OUT_MAX, or guest_run__capture()'s (-EIO no agent, -ENOMEM,
 * -EREMOTEIO...).
 */
int guest_fs__run(struct pool *p, const struct sandbox_info *sb, int connect_ms,
		  const char *user, const char *op, const char *a,
		  const char *b, struct fs_op *o, char *err, size_t errlen);

/*
 * guest_fs__put() - write everything @in_fd holds from its current offset
 * (a regular file or memfd, > 0) into the guest file @path (absolute) as
 * @user, through a busybox script run as that user with @in_fd as its
 * stdin: missing parents are made (umask 022: 0755), a new file gets
 * 0644 and an existing one is truncated and keeps its mode, all owned by
 * @user and with @user's permissions, as envd writes for its user (the
 * agent's WRITE_FILE has no user: it writes as root).  0 with @o filled
 * (release it), its status the script's exit: 0 done; 3 @path is a
 * directory; 4 its parents could not be made; 5 it could not be opened
 * for writing; 6 it is not a regular file; 7 writing failed (stderr says
 * why for 4, 5 and 7).  Errors as guest_fs__run()'s (-ETIME past
 * GUEST_FS_PUT_MS; -EREMOTEIO when the script could not start: an
 * unknown user), and -EINVAL for a bad @in_fd or a relative @path.
 */
#define GUEST_FS_PUT_MS 600000 /* one write, at most */
int guest_fs__put(struct pool *p, const struct sandbox_info *sb, int connect_ms,
		  const char *user, int in_fd, const char *path,
		  struct fs_op *o, char *err, size_t errlen);

/* Free what @o holds. */
void guest_fs__release(struct fs_op *o);

/*
 * Call @fn for each entry of @o's output (guest_stat__parse()).  0, or
 * what @fn returned first when not 0.
 */
int guest_fs__parse(const struct fs_op *o, fs_ent_fn fn, void *ctx);

/*
 * guest_fs__entries() - every entry of @o's output, in the order printed,
 * into a malloc()ed array *@v of *@n (free() it; its strings point into
 * @o's output, valid until guest_fs__release()).  0, or -ENOMEM.
 */
int guest_fs__entries(const struct fs_op *o, struct fs_ent **v, size_t *n);

#endif /* EMBER_API_GUEST_FS_H */
