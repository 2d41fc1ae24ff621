/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What sandbox.c shares with the supervisor (supervisor.c) and with
 * nothing else: the names of the files in a sandbox directory (sandbox.h
 * says what each holds), the writer of its info file, and the helper for
 * the @err/@errlen convention of sandbox.h.  Implemented in sandbox.c.
 */
#ifndef EMBER_API_SANDBOX_INTERNAL_H
#define EMBER_API_SANDBOX_INTERNAL_H

#include <stddef.h>

#include "sandbox.h"

#define SANDBOX_LOCK_NAME    "lock"
#define SANDBOX_INFO_NAME    "info"
#define SANDBOX_INFO_TMP     "info.tmp" /* the next info, before rename */
#define SANDBOX_ROOTFS_NAME  "rootfs.ext4"
#define SANDBOX_CONSOLE_NAME "console.log"
#define SANDBOX_EMBER_LOG    "ember.log"
#define SANDBOX_PAUSE_LOCK   "pause.lock"

/*
 * Write @i as the info file of the sandbox directory @dir, atomically
 * (info.tmp, then rename): the pids and start times, created, ready,
 * ttl, mem and vcpus; id, dir and uds follow from @dir and are not
 * written.  0, or -ENAMETOOLONG or the failing call's negative errno,
 * and then the previous info file is unchanged and no info.tmp is left.
 */
int sandbox__write_info(const char *dir, const struct sandbox_info *i);

/* Fill @i from @dir's info file (fields it lacks stay as they are). */
int sandbox__read_info(const char *dir, struct sandbox_info *i);

/*
 * Leave the printf-style message in @err (@errlen bytes, always
 * terminated when > 0) and return @rc, the negative errno of the failure,
 * so that failing is one statement: return sandbox__errf(err, errlen,
 * -EINVAL, "not a sandbox id: %s", ref);
 */
__attribute__((format(printf, 4, 5))) int
sandbox__errf(char *err, size_t errlen, int rc, const char *fmt, ...);

#endif /* EMBER_API_SANDBOX_INTERNAL_H */
