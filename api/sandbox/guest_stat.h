/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Entries of a guest's file system as the guest printed them (pure):
 * records that each begin, at the start of the output or after a
 * newline, with a nonce fresh for the run, "<nonce> <kind> <payload>",
 * from `stat -c` and readlink (guest_fs.c's script prints them).  A
 * payload ends where the next record begins, so file names may hold
 * newlines and anything else; a name that happened to hold "\n<nonce> "
 * could only confuse the caller's own listing (the parser is bounded by
 * the output's length).  Kinds: S "mode(hex) size mtime uid gid ino",
 * U owner, G group, T %y (for the nanoseconds), N the path, L the link
 * target's raw mode ("-" when none), R the resolved target.
 */
#ifndef EMBER_API_GUEST_STAT_H
#define EMBER_API_GUEST_STAT_H

#include <stdbool.h>
#include <stddef.h>

#define GUEST_NONCE_LEN 16 /* hex digits */

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

/*
 * guest_stat__parse() - call @fn for each whole entry in the @len bytes
 * at @out (the records that carry @nonce, GUEST_NONCE_LEN characters).
 * 0, or what @fn returned first when not 0.
 */
int guest_stat__parse(const char *out, size_t len, const char *nonce,
		      fs_ent_fn fn, void *ctx);

/* The last component of @path (@n bytes) and its length into *@len. */
const char *guest_stat__last(const char *path, size_t n, size_t *len);

#endif /* EMBER_API_GUEST_STAT_H */
