/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandbox library: the verbs every front end calls (emberctl,
 * ember-mcp, ember-e2b), so that each front end is only its protocol.
 * It runs ember as a program and reaches a VM only through ember's
 * control socket and the guest agent.  Its files, from the top down:
 *
 *   verbs        sandbox.h (this file: run, resume of a parked sandbox
 *                in sandbox.c; pause, park, renew and the resume rule in
 *                pause.c; the agent's connection in connect.c), lookup.h
 *                (the state directory, find, list, kill), template.h
 *                (the store in template.c; build: template_build.c, which
 *                runs a sandbox; save: template_save.c),
 *                pool.h (agent connections borrowed and kept), spare.h
 *                (spare drives: a disk swapped into a live sandbox), jail.h
 *                (a jailed ember), net.h (a sandbox's network namespace;
 *                net_plan.h its pure plan)
 *   supervisor   supervisor.h: the process that owns one sandbox's life
 *                (ember's start, readiness, TTL, stop), and ember_api.h,
 *                ember's control socket as a client
 *   record       record.h: what a sandbox is on disk (its info file, lock
 *                and names), below both the verbs and the supervisor
 *   guest        agent_client.h (the guest agent's protocol, over
 *   clients      agent_wire.c, agent_exec.c, agent_files.c) and
 *                interp_client.h (the code interpreter's), knowing
 *                nothing of sandboxes
 *   front-end    sibling.h (the files beside the binary), loopback.h (a
 *   plumbing     loopback address, [ADDR:]PORT), listener.h (the servers'
 *                HTTP listener, libmicrohttpd: not linked by emberctl)
 *   helpers      files.h (files, the @err/@errlen convention), proc.h,
 *                clock.h, base64.h: generic, knowing nothing above them
 *
 * Sandboxes: one ember microVM each, its root filesystem a private disk
 * (a copy of an image, or an overlay over a template's image), the guest
 * agent reachable over vsock, a supervisor process that owns its life
 * (readiness check, TTL, stop, clean-up), and a directory of state on the
 * host.  A sandbox starts by booting a kernel, or by restoring a template
 * (template.h); it can be parked on disk and resumed later.
 *
 * State directory (sandbox__state_dir): $EMBER_STATE_DIR, else
 * /var/lib/ember/sandboxes for root, else $XDG_RUNTIME_DIR/ember, else
 * /tmp/ember-<uid>; private (0700, ours).  Templates live in its
 * "templates" directory (template.h).  Each sandbox is the directory
 * <state>/<id>, id = 12 lowercase hex digits, holding:
 *
 *   lock         flock()ed by the supervisor for as long as it lives
 *   info         key=value lines: supervisor/ember pids and start times,
 *                created/ready times, ttl, mem, vcpus, pause and park
 *                state, what the TTL's end does (on_timeout=kill|pause)
 *                and auto_resume, the template it came from, its network
 *                (net.h)
 *   rootfs.ext4  its disk: a sparse copy of the rootfs (booted), or an
 *                overlay over the template's image (restored); kept for
 *                the sandbox's whole life, so that it can be parked
 *   spare-K.img  the placeholder of spare drive K (spare.h), when it
 *                has spare drives
 *   snap-N.state, snap-N.mem   the snapshot of a parked sandbox (N: the
 *                park's number, so that the next park never overwrites
 *                the memory file the running ember maps)
 *   console.log  the guest's console, ember.log ember's stderr
 *   vsock.sock   ember's vsock Unix socket (and vsock.sock_<port>)
 *   api.sock     ember's control socket (Firecracker's API)
 *   pause.lock   flock()ed while a pause, park or resume is under way
 *   mcp.owner    ember-mcp's record of its owner, when it made it
 *                (api/mcp/owner.h)
 *   e2b.json     ember-e2b's record of it, when it made or connected to
 *                it (api/e2b/record.h)
 *
 * A directory whose lock nobody holds belongs to a dead supervisor (host
 * crash, SIGKILL): lookups and listings remove it, any ember left and
 * its network (net.h), unless its info says it is parked: then the
 * directory is the sandbox's whole state and it stays until `kill` or a
 * resume.  Directories being
 * created or removed are hidden (.<id>.new, .<id>.dead).
 *
 * Functions that can fail take @err/@errlen and leave there one line of
 * text (no "emberctl:" prefix) on failure.
 */
#ifndef EMBER_API_SANDBOX_H
#define EMBER_API_SANDBOX_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lookup.h"
#include "record.h"

/*
 * Create and start a sandbox: make its disk (a sparse copy of the rootfs,
 * or an overlay over the template's image), start the
 * supervisor (its own session) which starts ember (booting, or restoring
 * the template: PUT /snapshot/load with the sandbox's own disk and vsock
 * socket), and wait until the guest agent answers a PING (after a
 * restore, then takes the agent's init: wall clock, RNG reseed) or the
 * boot timeout runs out.  On success returns 0
 * with the new id in @id and the TTL armed from now.  On failure nothing
 * is left behind (no process, no file) and @err says why, with the last
 * lines of the guest console and ember's log after a newline when they
 * help.  SIGINT/SIGTERM/SIGHUP must be blocked by the caller; one of them
 * arriving while it waits ends the boot (-EINTR).
 */
int sandbox__run(const struct sandbox_opts *o, char id[SANDBOX_ID_LEN + 1],
		 char *err, size_t errlen);

struct agent_client;

/*
 * sandbox__agent_connect() - a connection to the guest agent of the live
 * sandbox @info (guest-init/PROTOCOL.md) that answered a PING, tried
 * again every 100 ms while nothing listens yet, for up to @timeout_ms
 * (> 0).  On success *@out is the client (the caller frees it with
 * agent_client__free()).  -ENOENT (the sandbox went away meanwhile),
 * -EAGAIN (it is still booting), -ETIMEDOUT (no answer; the client's
 * last error in @err), -ENOMEM.
 */
int sandbox__agent_connect(const struct sandbox_info *info, int timeout_ms,
			   struct agent_client **out, char *err, size_t errlen);

/*
 * sandbox__renew() - renew the TTL of the live sandbox @info: from now it
 * has @ttl_s seconds (1-31536000) left before it is stopped (pauses still
 * stop the clock), as E2B's sandbox timeout is renewed on use.  Recorded
 * in its info file (ttl, counted from readiness) and told to its
 * supervisor (SIGUSR1).  -EINVAL (bad @ttl_s, a parked sandbox or one
 * without a TTL), -EAGAIN (still booting), -ENOENT (gone), other errno.
 */
int sandbox__renew(const struct sandbox_info *info, unsigned int ttl_s,
		   char *err, size_t errlen);

/*
 * Pause (@pause true) or resume the sandbox @info: PATCH /vm on ember's
 * control socket (every vCPU parked: no CPU used, memory kept), the TTL
 * clock stopped while it is paused (the supervisor is told with SIGUSR1),
 * the state recorded in its info file.  Pausing a paused sandbox, or
 * resuming a running one, does nothing.  Returns 0, or a negative errno
 * with the reason in @err (ember's fault message when it refused).
 */
int sandbox__pause(const struct sandbox_info *info, bool pause, char *err,
		   size_t errlen);

/*
 * Park the sandbox @info on disk: pause it (PATCH /vm), PUT
 * /snapshot/create into its directory (snap-N.state and snap-N.mem; a
 * Diff over the template's memory when this ember was restored from its
 * template, else Full), record it as parked, then its supervisor stops
 * ember and ends, leaving the directory.  The TTL stands still while
 * parked.  Parking a parked sandbox does nothing.  On failure the sandbox
 * is as it was (running or paused in memory).  Returns 0 or a negative
 * errno (-EAGAIN still booting, ember's refusal as -EIO).
 */
int sandbox__park(const struct sandbox_info *info, char *err, size_t errlen);

/*
 * sandbox__park(), except that a sandbox parked already when its
 * pause.lock is ours (parked before, or by a park that held the lock
 * while we waited for it) is -EALREADY with @err, not 0: of two parks at
 * once, one parks and the other learns that it did not.
 */
int sandbox__park_once(const struct sandbox_info *info, char *err,
		       size_t errlen);

/*
 * Resume the parked sandbox @info: a new supervisor and ember (the VMM
 * binary @ember) for the same id, PUT /snapshot/load of its snapshot with
 * the same disk and vsock socket, then the agent's PING and init, within
 * @timeout_s; the TTL goes on where it stopped.  On a failure before the
 * snapshot is loaded the sandbox stays parked; after, it is removed (its
 * guest ran on from the snapshot, which no longer matches the disk), and
 * @err says which.  -EBUSY while another park or resume works on it,
 * -EINVAL when it is not parked, -ENXIO when the template it was made
 * from is gone (it stays parked: nothing is tried).
 */
int sandbox__unpark(const struct sandbox_info *info, const char *ember,
		    unsigned int timeout_s, char *err, size_t errlen);

/*
 * sandbox__resume() - the resume rule every front end follows: the
 * sandbox @info (from sandbox__find()) runs on whatever way it stopped:
 * a parked one is restored (sandbox__unpark() with the VMM binary @ember,
 * which may be NULL when @info is not parked, and @timeout_s), any other
 * is resumed in memory (sandbox__pause() with false: nothing for a
 * running one, -EAGAIN for one still booting).  0, or their negative
 * errno with @err.
 */
int sandbox__resume(const struct sandbox_info *info, const char *ember,
		    unsigned int timeout_s, char *err, size_t errlen);

/*
 * sandbox__wake() - bring the sandbox @info (from sandbox__find()) back
 * for a request that names it: a parked or paused one is resumed as
 * sandbox__resume() does (with @ember, which may be NULL when @info is
 * not parked, and @timeout_s), and a resume that another process has
 * under way (-EBUSY) is waited for, up to @timeout_s, so that requests
 * that come at once all find it running.  A running one is left as it
 * is.  On success 0 and @info read again (running, ready).  -ENOENT (it
 * went away), -ETIMEDOUT, or sandbox__resume()'s errno (-ENXIO: its
 * template is gone), with @err.  Front ends call it for sandboxes made
 * with auto_resume (struct sandbox_opts), and on E2B's connect.
 */
int sandbox__wake(struct sandbox_info *info, const char *ember,
		  unsigned int timeout_s, char *err, size_t errlen);

#endif /* EMBER_API_SANDBOX_H */
