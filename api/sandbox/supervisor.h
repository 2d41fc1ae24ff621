/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The supervisor of one sandbox (see sandbox.h): the process that
 * sandbox__run() forks.  It starts ember, waits until the guest agent
 * answers, tells `run` its verdict through a pipe, and from then on owns
 * the sandbox's life: the TTL, a stop on a signal or on ember's own exit,
 * the removal of the directory.
 *
 * ember either boots the kernel or, in a restore, starts with only its
 * control socket and gets PUT /snapshot/load (the sandbox's own disk and
 * vsock socket as overrides), after which the agent's init step follows
 * the PING.
 *
 * The verdict is written once, at most SUPERVISOR_VERDICT_MAX - 1 bytes,
 * and the pipe closed: "R" when the agent answered a PING, or
 * "F<errno> <text>" once everything is removed again: a positive errno,
 * a one-line reason, then the last lines of the guest console and of
 * ember's log as "\n<console|ember>: <line>" when there are any.
 */
#ifndef EMBER_API_SUPERVISOR_H
#define EMBER_API_SUPERVISOR_H

#include <stdbool.h>

#include "record.h"

#define SUPERVISOR_VERDICT_MAX	 4096 /* bytes, with a terminating NUL */
#define SUPERVISOR_STOP_GRACE_MS 5000 /* SIGTERM to SIGKILL for ember */

/* How to start ember; every path absolute. */
struct supervisor_how {
	const char *disk; /* the root drive */
	const char *snap_state; /* NULL: boot o->kernel; else load this */
	const char *snap_mem; /* ... with this memory file */
	const char *template_dir; /* NULL, or the template's directory (a
				     jailed ember gets it read-only) */
	bool parked; /* resuming a parked sandbox: a failure before the
			snapshot is loaded leaves the directory as it was */
};

/*
 * Become the supervisor of the sandbox @info, in the child of the fork(),
 * and never return.  @info has id, dir, uds, created, ttl_s, mem_mib and
 * vcpus set, and its directory in the state directory @state is complete
 * (info file, disk, lock); @o are the options it was made with.
 * @info is copied; @o, @state and @how are used for the supervisor's
 * whole life (the caller's memory stays valid: this never returns).  The
 * TTL is armed once the agent answers with what @info has left of it
 * (sandbox__ttl_left(), after a park's pause is closed).  @lock_fd is the
 * directory's lock, flock()ed by the caller and held here for life;
 * @verdict_fd is the write end of the pipe to `run`.  Every other fd above
 * 2 is closed; stdin and stdout become /dev/null, stderr
 * $EMBER_SUPERVISOR_LOG (appended to) or /dev/null.  Exit status: 0 after
 * an end by TTL, signal or ember's exit, or after a park (the directory is
 * then kept); 1 after a failure (verdict "F...") or when nobody read "R"
 * (everything is removed then too, but for a parked sandbox whose
 * snapshot was not loaded yet); 125 when it cannot chdir("/") (nothing
 * removed: `run` sees the pipe close without a verdict).
 */
__attribute__((noreturn)) void supervisor__run(const struct sandbox_opts *o,
					       const char *state,
					       const struct sandbox_info *info,
					       const struct supervisor_how *how,
					       int lock_fd, int verdict_fd);

/*
 * supervisor__snapshot() - the snapshot half of a park, shared by
 * sandbox__park() (pause.c) and the supervisor's own park at the TTL's
 * end (run --on-timeout pause).  The caller holds the sandbox's
 * pause.lock, and @cur is its info file read under it: ready, not parked,
 * not jailed.  Pauses the vCPUs unless paused (PATCH /vm), has ember
 * write snap-N.state and snap-N.mem into @cur->dir (N = snap_gen + 1; a
 * Diff over the template's memory when the running ember was restored
 * from the template or from a Diff park, else Full), and writes @cur,
 * marked parked, as the info file.  The supervisor's part (stopping
 * ember, leaving the directory) is the caller's.  On failure no
 * snapshot file is left, the vCPUs run again if they ran, the info file
 * is unchanged: a negative errno with @err (ember's refusal as -EIO).
 */
int supervisor__snapshot(struct sandbox_info *cur, char *err, size_t errlen);

#endif /* EMBER_API_SUPERVISOR_H */
