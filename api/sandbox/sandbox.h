/* SPDX-License-Identifier: Apache-2.0 */
/*
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
 *                state, the template it came from, its network (net.h)
 *   rootfs.ext4  its disk: a sparse copy of the rootfs (booted), or an
 *                overlay over the template's image (restored); kept for
 *                the sandbox's whole life, so that it can be parked
 *   snap-N.state, snap-N.mem   the snapshot of a parked sandbox (N: the
 *                park's number, so that the next park never overwrites
 *                the memory file the running ember maps)
 *   console.log  the guest's console, ember.log ember's stderr
 *   vsock.sock   ember's vsock Unix socket (and vsock.sock_<port>)
 *   api.sock     ember's control socket (Firecracker's API)
 *   pause.lock   flock()ed while a pause, park or resume is under way
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

#include "net.h"

#define SANDBOX_ID_LEN	     12
#define SANDBOX_UDS_NAME     "vsock.sock"
#define SANDBOX_API_NAME     "api.sock"
#define SANDBOX_GUEST_CID    3
#define SANDBOX_DEF_MEM	     256 /* MiB */
#define SANDBOX_DEF_TTL	     300 /* s */
#define SANDBOX_DEF_BOOT_S   300 /* s */
#define SANDBOX_TEMPLATE_MAX 64 /* bytes of a template name */
#define SANDBOX_DRIVE_ID     "rootfs" /* ember's id of the root drive */

/*
 * What `run` needs; every path must name an existing file.  A sandbox
 * boots @kernel on a copy of @rootfs (or on @disk), or, with
 * @template_name, restores that template (kernel, rootfs, disk, mem_mib
 * and vcpus are then the template's and these are not used).
 */
struct sandbox_opts {
	const char *ember; /* the VMM binary */
	const char *kernel; /* --kernel */
	const char *rootfs; /* the ext4 image copied (sparse) for the sandbox */
	const char *disk; /* NULL, or instead of a copy of rootfs, this file
			     (raw or an overlay) as it is; the caller's: it
			     is not removed with the sandbox */
	const char *template_name; /* NULL, or restore <state>/templates/NAME */
	unsigned int mem_mib; /* guest RAM, 1-1048576 MiB */
	unsigned int vcpus; /* 1-32 */
	unsigned int ttl_s; /* life after readiness; 0: none */
	unsigned int boot_timeout_s; /* until the agent answers, >= 1 */
	/*
	 * Its network (net.h).  A boot gets a network device (tap0 in the
	 * sandbox's own namespace, the guest's address on the kernel's
	 * command line) with @net_dev or a mode other than NET_NONE; a
	 * restore has one when its template does, and then always gets the
	 * namespace (NET_NONE: no network through it).  A mode other than
	 * NET_NONE for a template without a device is refused.
	 */
	enum net_mode net_mode;
	bool net_dev;
	/*
	 * NULL: ember runs as we do.  Else this ember-jailer (absolute)
	 * runs it in a jail (jail.h) as @jail_uid:@jail_gid (not 0); only
	 * a restore (@template_name) can be jailed.  @ember must then be
	 * a build that needs no /proc (not an ASan one).
	 */
	const char *jailer;
	uid_t jail_uid;
	gid_t jail_gid;
};

/* What the running ember was started from (info: origin). */
enum sandbox_origin {
	SANDBOX_BOOTED = 0, /* a kernel boot */
	SANDBOX_FROM_TEMPLATE = 1, /* the template's full snapshot */
	SANDBOX_FROM_PARK = 2, /* the sandbox's own parked snapshot */
};

/* A sandbox as its directory describes it. */
struct sandbox_info {
	char id[SANDBOX_ID_LEN + 1];
	char dir[PATH_MAX];
	char uds[PATH_MAX]; /* dir/vsock.sock */
	pid_t supervisor; /* 0: not known yet */
	pid_t ember; /* 0: not started yet */
	uint64_t supervisor_start; /* /proc/PID/stat start time, ticks */
	uint64_t ember_start;
	int64_t created; /* Unix time, s */
	int64_t ready; /* Unix time the agent first answered; 0: booting */
	unsigned int ttl_s; /* 0: none */
	unsigned int mem_mib;
	unsigned int vcpus;
	int64_t paused; /* Unix time the current pause (or park) began;
			   0: running */
	int64_t paused_s; /* seconds paused in pauses that ended */
	int parked; /* 1: on disk (snap-<snap_gen>.*), no ember */
	unsigned int snap_gen; /* the last park's number; 0: never parked */
	unsigned int origin; /* enum sandbox_origin */
	/*
	 * The last park was a Diff over the template's memory, so ember
	 * restored from it still has the template's memory file as its base
	 * and the next park can be a Diff too (info: snap_diff).
	 */
	int snap_diff;
	char template_name[SANDBOX_TEMPLATE_MAX + 1]; /* "": none */
	int net_dev; /* 1: ember has a network device (info: net_dev), so the
			sandbox has its namespace while ember runs */
	enum net_mode net_mode; /* its network through it (info: net) */
	/* The last restore, from the load request, ms: vCPUs running, agent
	   answering (0: not restored).  For benchmarks. */
	unsigned int restore_load_ms;
	unsigned int restore_ready_ms;
	/*
	 * A jailed sandbox (jail.h; info: jail_root, jailer, jail_uid,
	 * jail_gid): its ember's chroot as the host sees it, "" when not
	 * jailed (then uds is in dir); and the jailer that cleans it up.
	 */
	char jail_root[PATH_MAX];
	char jailer[PATH_MAX];
	unsigned int jail_uid;
	unsigned int jail_gid;
};

/*
 * Resolve the state directory (see above) into @out (@outsz bytes), as an
 * absolute path; create it (0700) and its missing parents.  Fails when it
 * is not a directory we own, or group/other may write it (-EPERM), or
 * when it is too long for the sockets below it (-ENAMETOOLONG).
 */
int sandbox__state_dir(char *out, size_t outsz, char *err, size_t errlen);

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
 * sandbox__state_name() - what @i is doing, as `ls` and the tools say it:
 * "parked", "booting", "paused" or "running" (a static string).
 */
const char *sandbox__state_name(const struct sandbox_info *i);

/*
 * sandbox__ttl_left() - seconds of TTL @i has left at Unix time @now
 * (the clock stops while it is paused); -1 for no TTL, 0 when over.
 */
int64_t sandbox__ttl_left(const struct sandbox_info *i, int64_t now);

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
 * Resume the parked sandbox @info: a new supervisor and ember (the VMM
 * binary @ember) for the same id, PUT /snapshot/load of its snapshot with
 * the same disk and vsock socket, then the agent's PING and init, within
 * @timeout_s; the TTL goes on where it stopped.  On a failure before the
 * snapshot is loaded the sandbox stays parked; after, it is removed (its
 * guest ran on from the snapshot, which no longer matches the disk), and
 * @err says which.  -EBUSY while another park or resume works on it,
 * -EINVAL when it is not parked.
 */
int sandbox__unpark(const struct sandbox_info *info, const char *ember,
		    unsigned int timeout_s, char *err, size_t errlen);

#endif /* EMBER_API_SANDBOX_H */
