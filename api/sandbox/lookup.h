/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Finding sandboxes in the state directory (sandbox.h says where it is
 * and what each sandbox directory holds): the state directory itself, a
 * sandbox by id or prefix, all of them, and stopping one (`kill`).  Each
 * removes on the way what dead supervisors left (record.h: a free lock).
 */
#ifndef EMBER_API_LOOKUP_H
#define EMBER_API_LOOKUP_H

#include <stddef.h>

#include "record.h"

#define SANDBOX_KILL_WAIT_MS 15000 /* sandbox__kill: for the supervisor */

/*
 * Resolve the state directory (see above) into @out (@outsz bytes), as an
 * absolute path; create it (0700) and its missing parents.  Fails when it
 * is not a directory we own, or group/other may write it (-EPERM), or
 * when it is too long for the sockets below it (-ENAMETOOLONG).
 */
int sandbox__state_dir(char *out, size_t outsz, char *err, size_t errlen);

/*
 * Find the live or parked sandbox whose id is @ref or starts with @ref (a
 * unique prefix, 1-12 hex digits) and fill @info.  Errors: -ENOENT (none: "no
 * sandbox <ref>"), -EINVAL (not an id), -EEXIST (ambiguous prefix),
 * -ESRCH (its supervisor was dead: it has just been cleaned up; @info->id
 * holds the full id), other errno for state directory failures.
 */
int sandbox__find(const char *ref, struct sandbox_info *info, char *err,
		  size_t errlen);

/*
 * Stop the sandbox @info (from sandbox__find): SIGTERM its supervisor and
 * wait up to 15 s until its directory is gone; past that (or without a
 * live supervisor), kill the supervisor and ember and remove the
 * directory here.  Returns 0, 1 when it had to force, -ENOENT when it was
 * already gone, or another negative errno.
 */
int sandbox__kill(const struct sandbox_info *info, char *err, size_t errlen);

/*
 * The live and parked sandboxes, oldest first, in a malloc()ed array the
 * caller frees (*@out NULL when *@n is 0).  Dead leftovers are cleaned up
 * silently.
 */
int sandbox__list(struct sandbox_info **out, size_t *n, char *err,
		  size_t errlen);

/*
 * sandbox__reap_hidden() - remove the .<@id>.dead directory of the state
 * directory @state when nobody works on it any more (its lock is free or
 * gone); nothing when there is none.
 */
void sandbox__reap_hidden(const char *state, const char *id);

#endif /* EMBER_API_LOOKUP_H */
