/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Jailed sandboxes: ember started through ember-jailer (api/jailer/,
 * README "ember-jailer: ember in a jail") as an unprivileged uid:gid in
 * a chroot of its own, with no capability, no /proc and no /sys.
 *
 * The jail of sandbox ID is <state>/jails/<exec name>/ID/root (the
 * jailer's --chroot-base-dir is <state>/jails: the same file system as
 * the sandbox directory, so that its files can be hard-linked in), its
 * cgroup ember/ID (memory limited to the guest's RAM plus
 * JAIL_MEM_OVERHEAD_MIB), its network namespace the sandbox's own
 * (net.h; the jailer joins it with --netns).  ember sees:
 *
 *   /api.sock, /vsock.sock(_<port>), /console.log   made by ember
 *   /rootfs.ext4        the sandbox's overlay, hard-linked in (owned by
 *                       the jail's uid) before the snapshot is loaded
 *   <template dir>      the template's directory bound read-only at its
 *                       own path (--ro-bind), so that the snapshot, the
 *                       memory file and the overlay's base path resolve
 *   the library directories of ember (ldd), bound read-only
 *
 * and emberctl reaches the sockets and the console at <root>/<name>.
 * Only a restore from a template is jailed: the boot of a kernel (and so
 * a template build) is not.  Everything that differs between a jailed
 * and an unjailed sandbox is in struct sandbox_paths.
 */
#ifndef EMBER_API_JAIL_H
#define EMBER_API_JAIL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "record.h"

#define JAIL_DIR_NAME	      "jails" /* in the state directory */
#define JAIL_PARENT_CGROUP    "ember" /* the jailer's --parent-cgroup */
#define JAIL_MEM_OVERHEAD_MIB 256 /* the cgroup's limit over guest RAM */
#define JAIL_DEF_UID	      1000
#define JAIL_DEF_GID	      1000
#define JAIL_DISK_NAME	      "rootfs.ext4" /* in the jail's root */
#define JAIL_CONSOLE_NAME     "console.log"
#define JAIL_MAX_BINDS	      8 /* the jailer's --ro-bind limit */
#define JAIL_ARGV_MAX	      (32 + 2 * JAIL_MAX_BINDS)

/*
 * Where a sandbox's files are, as emberctl (the host) sees them and as
 * its ember sees them.  Unjailed, both are the same paths in the
 * sandbox directory.
 */
struct sandbox_paths {
	char root[PATH_MAX]; /* host: the jail's root; "" unjailed */
	char api[PATH_MAX]; /* host: ember's control socket */
	char uds[PATH_MAX]; /* host: its vsock Unix socket */
	char console[PATH_MAX]; /* host: the guest's console log */
	char e_api[PATH_MAX]; /* ember: --api-sock */
	char e_uds[PATH_MAX]; /* ember: vsock uds_path */
	char e_console[PATH_MAX]; /* ember: --console file:... */
	char e_disk[PATH_MAX]; /* ember: the root drive; @disk unjailed */
};

/*
 * jail__root() - the jail root of sandbox @id for the VMM binary @ember
 * (its basename is the jailer's exec name) in the state directory
 * @state, into @out (@outsz bytes).  0, or -ENAMETOOLONG; -EINVAL when
 * the id or the name is not what the jailer takes ([A-Za-z0-9-]{1,64}
 * and a file name of [A-Za-z0-9._-]).
 */
int jail__root(const char *state, const char *ember, const char *id, char *out,
	       size_t outsz);

/*
 * jail__paths() - the paths of sandbox @i (its dir, uds and jail_root
 * set) whose root drive is @disk on the host, into @p.  0, or
 * -ENAMETOOLONG.
 */
int jail__paths(const struct sandbox_info *i, const char *disk,
		struct sandbox_paths *p);

/* What jail__argv() needs. */
struct jail_start {
	const char *jailer; /* ember-jailer, absolute */
	const char *ember; /* the exec file, absolute */
	const char *id; /* the sandbox's */
	const char *root; /* jail__root(): the base is 3 levels up */
	uid_t uid;
	gid_t gid;
	unsigned int mem_mib; /* guest RAM; 0: no memory limit */
	const char *netns; /* a netns file, or NULL */
	const char *template_dir; /* bound read-only, or NULL */
	const struct sandbox_paths *p; /* e_api, e_console */
};

/* jail__argv()'s result: argv points into buf. */
struct jail_argv {
	const char *argv[JAIL_ARGV_MAX + 1];
	char buf[8 * PATH_MAX];
};

/*
 * jail__argv() - the jailer's command line for @s into @out: the
 * jailer's flags (memory limit as memory.limit_in_bytes on cgroup v1,
 * memory.max on v2, as the jailer picks the version), a --ro-bind of
 * each directory `ldd @s->ember` names (run here) and of the template's,
 * then after "--" ember's --api-sock, --console and, on a PVM host
 * (/sys/module/kvm_pvm: the jail has no /sys to detect it), --pvm on.
 * 0, or a negative errno with @err (-E2BIG: more than JAIL_MAX_BINDS
 * directories, -ENAMETOOLONG, ldd's failure).
 */
int jail__argv(const struct jail_start *s, struct jail_argv *out, char *err,
	       size_t errlen);

/*
 * jail__link_in() - hard-link the host file @path into the jail root
 * @root as @name, having given it to @uid:@gid (mode 0600) so that the
 * jailed ember can open it read-write.  Both must be on one file system.
 * 0, or a negative errno with @err.
 */
int jail__link_in(const char *path, const char *root, const char *name,
		  uid_t uid, gid_t gid, char *err, size_t errlen);

/*
 * jail__share_template() - let a jailed ember (any uid) read the
 * template directory @dir: the directory 0711, its snapshot, memory file
 * and disk 0444.  The state directory above stays private (0700), so on
 * the host they remain root's alone.  0, or a negative errno with @err.
 */
int jail__share_template(const char *dir, char *err, size_t errlen);

/*
 * jail__cleanup() - remove the jail of sandbox @i (@i->jail_root set;
 * nothing to do when it is empty): wait up to 2 s for its ember
 * (@i->ember) to be gone, then run `@i->jailer --cleanup` for its id,
 * exec name, chroot base and parent cgroup, which removes the chroot
 * and the cgroups.  Nothing left is no error.  0, or a negative errno
 * with @err (the jailer's own line).
 */
int jail__cleanup(const struct sandbox_info *i, char *err, size_t errlen);

/*
 * jail__parse_ids() - "UID:GID" (each 1-4294967294; 0, root, refused)
 * into @uid and @gid; -EINVAL for anything else.
 */
int jail__parse_ids(const char *s, uid_t *uid, gid_t *gid);

#endif /* EMBER_API_JAIL_H */
