/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What sandbox.c shares with the supervisor (supervisor.c) and with
 * nothing else: the names of the files in a sandbox directory (sandbox.h
 * says what each holds), the writer of its info file, and the helper for
 * the @err/@errlen convention of sandbox.h.  Implemented in sandbox.c.
 */
#ifndef EMBER_API_SANDBOX_INTERNAL_H
#define EMBER_API_SANDBOX_INTERNAL_H

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "sandbox.h"

#define SANDBOX_LOCK_NAME    "lock"
#define SANDBOX_INFO_NAME    "info"
#define SANDBOX_INFO_TMP     "info.tmp" /* the next info, before rename */
#define SANDBOX_ROOTFS_NAME  "rootfs.ext4"
#define SANDBOX_CONSOLE_NAME "console.log"
#define SANDBOX_EMBER_LOG    "ember.log"
#define SANDBOX_PAUSE_LOCK   "pause.lock"
#define SANDBOX_SNAP_STATE   "snap-%u.state" /* park number N */
#define SANDBOX_SNAP_MEM     "snap-%u.mem"

/*
 * sandbox__grow() - make room for one more element of @size bytes in the
 * malloc()ed array *@v of *@cap elements holding @n (doubling, from 8).
 * Returns 0, or -ENOMEM with *@v unchanged (still the caller's to free).
 */
static inline int sandbox__grow(void **v, size_t *cap, size_t n, size_t size)
{
	size_t c;
	void *nv;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 8;
	nv = realloc(*v, c * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = c;
	return 0;
}

/* The longest info file sandbox__write_info() writes, in bytes. */
#define SANDBOX_INFO_MAX 8192

/*
 * Write @i as the info file of the sandbox directory @dir, atomically
 * (info.tmp, then rename): every field of struct sandbox_info but id,
 * dir and uds, which follow from @dir.  0, or -ENAMETOOLONG or the failing call's negative errno,
 * and then the previous info file is unchanged and no info.tmp is left.
 */
int sandbox__write_info(const char *dir, const struct sandbox_info *i);

/* Fill @i from @dir's info file (fields it lacks stay as they are). */
int sandbox__read_info(const char *dir, struct sandbox_info *i);

/*
 * The lock of the sandbox directory @dir: 1 when a live supervisor (or
 * `run`, or a resume) holds it; 0 when it is free, and then *@fd holds it
 * locked for the caller; -ENOENT when there is no lock file, other
 * negative errno.
 */
int sandbox__lock_probe(const char *dir, int *fd);

/*
 * Wait up to @ms for the sandbox directory @dir's lock to be free (its
 * supervisor gone): 0, or -ETIMEDOUT.
 */
int sandbox__wait_unlocked(const char *dir, int ms);

/* Remove the sockets a stopped ember left in @dir (api, vsock, _<port>). */
void sandbox__sockets_gone(const char *dir);

/*
 * Leave the printf-style message in @err (@errlen bytes, always
 * terminated when > 0) and return @rc, the negative errno of the failure,
 * so that failing is one statement: return sandbox__errf(err, errlen,
 * -EINVAL, "not a sandbox id: %s", ref);
 */
__attribute__((format(printf, 4, 5))) int
sandbox__errf(char *err, size_t errlen, int rc, const char *fmt, ...);

#endif /* EMBER_API_SANDBOX_INTERNAL_H */
