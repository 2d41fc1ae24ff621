/* SPDX-License-Identifier: Apache-2.0 */
/*
 * envd's file operations run in the guest (fs_script.c): one busybox
 * script does stat, list, mkdir, move and remove, and its output comes
 * back as records of entries, parsed here into struct fs_ent and written
 * as envd's EntryInfo.  The filesystem service (filesystem.c) and its
 * watches (fs_watch.c) are built on it.
 */
#ifndef EMBER_API_E2B_FS_SCRIPT_H
#define EMBER_API_E2B_FS_SCRIPT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "e2b.h"

#define FS_NONCE_LEN 16 /* hex digits */

/* One entry as parsed; the strings point into the output. */
struct fs_ent {
	unsigned long mode; /* lstat's st_mode */
	long long size, mtime;
	long nsec;
	unsigned long uid, gid;
	unsigned long long ino;
	const char *owner, *group, *path, *target;
	size_t olen, glen, plen, tlen;
	bool tvalid; /* a link whose target exists: tmode */
	unsigned long tmode;
};
typedef int (*fs_ent_fn)(const struct fs_ent *e, void *ctx);

/* What an operation printed and how it ended. */
struct fs_op {
	char nonce[FS_NONCE_LEN + 1];
	char *out, *err;
	size_t outlen;
	int status;
};

/*
 * Run the script's operation @op in @g on the path @a (and @b, or NULL):
 *
 *   "stat"   @a's entry;
 *   "list"   the entries below directory @a, to depth @b ("" for all);
 *   "mkdir"  make @a and its parents, then its entry;
 *   "move"   @a to @b (parents made), then @b's entry;
 *   "remove" @a, recursively.
 *
 * 0 with @o filled (release it), its status the script's exit: 0 done;
 * 3 no such path; 4 not a directory; 5 a directory exists; 6 something
 * else exists; 7 the command failed (its stderr says why); 8 a move of a
 * directory into itself.  -1 with a Connect code in *@code and a message
 * in @msg when it could not run (no agent, its timeout, too much output).
 */
int fs_script__run(struct e2b_server *srv, const struct e2b_guest *g,
		   const char *op, const char *a, const char *b,
		   struct fs_op *o, const char **code, char *msg,
		   size_t msglen);

/* Free what @o holds. */
void fs_script__release(struct fs_op *o);

/*
 * Call @fn for each entry of @o's output (the records that carry its
 * nonce).  0, or what @fn returned first when not 0.
 */
int fs_script__parse(const struct fs_op *o, fs_ent_fn fn, void *ctx);

/* The EntryInfo of @e (a new reference), NULL when out of memory. */
json_t *fs_script__entry_json(const struct fs_ent *e);

/* The first line of @o's stderr, fit for a message, into @buf. */
const char *fs_script__why(const struct fs_op *o, char *buf, size_t n);

/* The last component of @path (@n bytes) and its length. */
const char *fs_script__last(const char *path, size_t n, size_t *len);

#endif /* EMBER_API_E2B_FS_SCRIPT_H */
