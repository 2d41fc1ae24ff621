/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandbox record: what a sandbox is asked to be (struct sandbox_opts)
 * and what its directory says it is (struct sandbox_info), the names of
 * the files in that directory (sandbox.h lists what each holds), its info
 * file (written atomically, read back), its lock (held by the supervisor
 * for its whole life), and what follows from the record alone (the state
 * shown, the TTL left).  Below both the life-cycle verbs (sandbox.c,
 * lookup.c, pause.c) and the supervisor (supervisor.c), which share the
 * record and nothing else.
 */
#ifndef EMBER_API_RECORD_H
#define EMBER_API_RECORD_H

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
/* The longest "_<port>" ember appends for guest-initiated connections. */
#define SANDBOX_PORT_SUFFIX_MAX 11
#define SANDBOX_DRIVE_ID	"rootfs" /* ember's id of the root drive */
/*
 * Spare drives (spare.h): a sandbox has at most 7 beyond its root drive
 * (vdb to vdh; ember itself takes up to 16 drives).  Spare K is ember's drive "spareK",
 * backed by DIR/spare-K.img (a sparse placeholder of SANDBOX_SPARE_BYTES)
 * until a file is swapped in.
 */
#define SANDBOX_MAX_SPARE_DRIVES 7
#define SANDBOX_SPARE_ID	 "spare%u"
#define SANDBOX_SPARE_NAME	 "spare-%u.img"
#define SANDBOX_SPARE_BYTES	 (1U << 20)

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
	 * At the TTL's end the sandbox is parked on disk (as sandbox__park())
	 * instead of ended (run --on-timeout pause); not for a jailed one.
	 */
	bool ttl_park;
	/*
	 * A request that names it while it is parked or paused resumes it
	 * first (run --auto-resume; sandbox__wake()).
	 */
	bool auto_resume;
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
	const char *append; /* NULL, or more kernel command line words for
			       a boot (not a restore) */
	/*
	 * Spare drives after the root drive (0..SANDBOX_MAX_SPARE_DRIVES,
	 * spare.h), for a boot; a restore has its template's and this must
	 * be 0 or that number.  None for a jailed sandbox.
	 */
	unsigned int spare_drives;
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
	/*
	 * The length of the TTL last given (at run, or by sandbox__renew()),
	 * s: a resume that finds the TTL over (a park at its end) gives the
	 * sandbox that much again (info: ttl_len).
	 */
	unsigned int ttl_len;
	int ttl_park; /* 1: parked at the TTL's end (info: on_timeout=pause) */
	int auto_resume; /* 1: resumed by the next request (info: auto_resume) */
	unsigned int mem_mib;
	unsigned int vcpus;
	int64_t paused; /* Unix time the current pause (or park) began;
			   0: running */
	int64_t paused_s; /* seconds paused in pauses that ended */
	/*
	 * The TTL counts on CLOCK_MONOTONIC, never on the wall clock (a jump
	 * of the host's clock neither ends a sandbox early nor keeps it): the
	 * ms of TTL used by runs that ended (a pause or a park ended them;
	 * info: ttl_used_ms), and the CLOCK_MONOTONIC ms the current run
	 * began, 0 while paused, parked or booting (info: run_since_ms).  A
	 * run does not outlive the host's boot: a parked sandbox has none.
	 */
	int64_t ttl_used_ms;
	int64_t run_since_ms;
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
	/*
	 * Its spare drives (info: spare_drives), ember's drives spare0 ..
	 * (spare.h), and which of them have a file of the caller's swapped
	 * in (bit K: spare K; info: spare_swapped): 0 when each has its
	 * placeholder.
	 */
	unsigned int spare_drives;
	unsigned int spare_swapped;
};

#define SANDBOX_LOCK_NAME    "lock"
#define SANDBOX_INFO_NAME    "info"
#define SANDBOX_INFO_TMP     "info.tmp" /* the next info, before rename */
#define SANDBOX_ROOTFS_NAME  "rootfs.ext4"
#define SANDBOX_CONSOLE_NAME "console.log"
#define SANDBOX_EMBER_LOG    "ember.log"
#define SANDBOX_PAUSE_LOCK   "pause.lock"
#define SANDBOX_SNAP_STATE   "snap-%u.state" /* park number N */
#define SANDBOX_SNAP_MEM     "snap-%u.mem"

/* Is @s a sandbox id (SANDBOX_ID_LEN lowercase hex digits)? */
bool sandbox__is_id(const char *s);

/*
 * Zero @i and give it the id @id (SANDBOX_ID_LEN digits) and the paths
 * that follow from it in the state directory @state: dir and uds.
 * 0, or -ENAMETOOLONG.
 */
int sandbox__info_init(struct sandbox_info *i, const char *state,
		       const char *id);

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

/*
 * Remove park @gen's snapshot files (snap-@gen.state, snap-@gen.mem) from
 * the sandbox directory @dir, if they are there.
 */
void sandbox__snap_gone(const char *dir, unsigned int gen);

/* Remove the sockets a stopped ember left in @dir (api, vsock, _<port>). */
void sandbox__sockets_gone(const char *dir);

/*
 * Does the sandbox directory @dir hold a park's snapshot (snap-N.state)?
 * Such a directory is never removed as a dead one, whatever its info
 * file says: it may be all that is left of a parked sandbox.
 */
bool sandbox__holds_snapshot(const char *dir);

/*
 * sandbox__state_name() - what @i is doing, as `ls` and the tools say it:
 * "parked", "booting", "paused" or "running" (a static string).
 */
const char *sandbox__state_name(const struct sandbox_info *i);

/*
 * sandbox__ttl_left_ms() - ms of TTL @i has left at CLOCK_MONOTONIC
 * @mono_ms (its clock stops while it is paused or parked); -1 for no TTL
 * or while booting, 0 when over.
 */
int64_t sandbox__ttl_left_ms(const struct sandbox_info *i, int64_t mono_ms);

/*
 * sandbox__ttl_left() - seconds of TTL @i has left now, rounded up; -1 for
 * no TTL or while booting, 0 when over.  For `ls` and the APIs' answers.
 */
int64_t sandbox__ttl_left(const struct sandbox_info *i);

/*
 * sandbox__ttl_from_now() - the TTL (s from readiness, what ttl_s holds)
 * under which @i has @left_s s left at CLOCK_MONOTONIC @mono_ms: what a
 * renewal, or a resume that finds the TTL over, gives it.  In whole
 * seconds, rounded down (so up to 1 s less is left; sandbox__ttl_left()
 * then says @left_s, never more); may exceed UINT32_MAX (the caller
 * refuses that).
 */
int64_t sandbox__ttl_from_now(const struct sandbox_info *i, unsigned int left_s,
			      int64_t mono_ms);

/*
 * sandbox__run_stop() - a pause or a park of running @i begins at Unix
 * time @wall_s and CLOCK_MONOTONIC @mono_ms: its TTL clock stops.
 * sandbox__run_start() - @i runs from then on: ready, resumed or restored
 * from its park (a pause, if any, ends).  Both only change @i.
 */
void sandbox__run_stop(struct sandbox_info *i, int64_t wall_s, int64_t mono_ms);
void sandbox__run_start(struct sandbox_info *i, int64_t wall_s,
			int64_t mono_ms);

#endif /* EMBER_API_RECORD_H */
