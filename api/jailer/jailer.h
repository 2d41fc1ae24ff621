/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ember-jailer: Firecracker's jailer (docs/jailer.md in Firecracker's
 * tree) for ember.  It validates its arguments, creates the chroot
 * <base>/<exec-name>/<id>/root with a copy of the exec file, creates and
 * joins the cgroups the --cgroup files name, enters a new mount namespace
 * and pivot_root()s into the chroot, creates /dev/kvm, /dev/net/tun and
 * /dev/userfaultfd there, joins the network namespace, sets resource
 * limits, drops to --uid/--gid with no capability and no_new_privs, and
 * execs /<exec-name> --id <id> followed by the arguments after "--".
 *
 * api/jailer/ is a program of its own, one of those above ember (beside
 * emberctl, ember-mcp, ember-e2b): it builds a jail and execs ember in it.
 * It includes only the C library, the kernel's uapi headers and libcap-ng;
 * nothing of vmm/, devices/, boot/ or snapshot/, and nothing includes it
 * but its own files and its unit test.  (ember's own seccomp filters, per
 * thread, are vmm/seccomp/.)
 *
 * One concern per file: main.c (the steps in order, --cleanup),
 * jailer_args.c (the command line), jailer_err.c (the one-line errors),
 * jailer_chroot.c (the jail's directory, mount namespace and devices),
 * jailer_cgroup.c (cgroup v1 and v2), jailer_privs.c (rlimits, uid/gid,
 * capabilities), jailer_elf.c (an ELF file's loader, libraries and search
 * paths: untrusted input, no I/O) and jailer_libs.c (finding them as
 * ld.so does and binding each file read-only into the jail).  A failure
 * before the exec undoes what the jailer made.
 */
#ifndef EMBER_API_JAILER_JAILER_H
#define EMBER_API_JAILER_JAILER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

#define JAIL_ID_MAX	       64 /* --id: 1-64 of [A-Za-z0-9-] */
#define JAIL_NAME_MAX	       64 /* the exec file's name */
#define JAIL_PARENT_MAX	       255 /* --parent-cgroup */
#define JAIL_MAX_CGROUPS       16 /* --cgroup FILE=VALUE */
#define JAIL_CGROUP_FILE_MAX   64 /* FILE in --cgroup FILE=VALUE */
#define JAIL_MAX_RO_BINDS      8 /* --ro-bind DIR */
#define JAIL_DEFAULT_BASE      "/srv/jailer"
#define JAIL_DEFAULT_PARENT    "ember"
#define JAIL_DEFAULT_EXEC_NAME "ember" /* --cleanup without --exec-file */
#define JAIL_DEFAULT_NO_FILE   2048 /* Firecracker's default */
#define JAIL_ELF_MAX_NEEDED    64 /* DT_NEEDED entries of one object */
#define JAIL_ELF_PATHS_MAX     1024 /* a DT_RUNPATH or DT_RPATH string */
#define JAIL_MAX_LIBS	       128 /* the loader and every library */

/* Exit statuses: arguments refused, or a step failed. */
#define JAIL_EXIT_USAGE 2
#define JAIL_EXIT_FAIL	1

/* --- errors (jailer_err.c) ---------------------------------------------- */

/*
 * A failed step: what was being done (with its path), the errno and, when
 * strerror() would not say it well, a reason of our own.  Printed as
 * "ember-jailer: STEP: WHY (errno N)".
 */
struct jail_err {
	int errnum; /* positive errno */
	const char *why; /* static text, or NULL: strerror(errnum) */
	char step[PATH_MAX + 256];
};

/*
 * jail_err__set() - record a failure of the step described by @fmt (printf
 * style) with @errnum (positive errno; 0 becomes EIO) and @why (static
 * text or NULL).  Returns -errnum, so callers can `return jail_err__set()`.
 */
int jail_err__set(struct jail_err *e, int errnum, const char *why,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* jail_err__print() - the one line for @e on stderr. */
void jail_err__print(const struct jail_err *e);

/* --- arguments (jailer_args.c) ------------------------------------------ */

enum jail_mode { JAIL_RUN, JAIL_CLEANUP, JAIL_HELP, JAIL_VERSION };

/* --cgroup FILE=VALUE, FILE being CONTROLLER.KNOB (memory.max). */
struct jail_cgroup_arg {
	char file[JAIL_CGROUP_FILE_MAX];
	char controller[JAIL_CGROUP_FILE_MAX];
	const char *value; /* points into argv */
};

/* The validated command line; strings point into argv. */
struct jail_args {
	enum jail_mode mode;
	const char *id;
	const char *exec_file;
	const char *exec_name; /* basename of exec_file */
	uid_t uid;
	gid_t gid;
	bool allow_root;
	bool daemonize;
	bool new_pid_ns;
	const char *chroot_base; /* absolute, default JAIL_DEFAULT_BASE */
	const char *netns; /* a netns file, or NULL */
	int cgroup_version; /* 1, 2, or 0: as /sys/fs/cgroup is */
	const char *parent_cgroup;
	struct jail_cgroup_arg cgroups[JAIL_MAX_CGROUPS];
	size_t n_cgroups;
	rlim_t no_file; /* RLIMIT_NOFILE, default JAIL_DEFAULT_NO_FILE */
	rlim_t fsize; /* RLIMIT_FSIZE in bytes, default RLIM_INFINITY */
	const char *ro_binds[JAIL_MAX_RO_BINDS]; /* absolute directories */
	size_t n_ro_binds;
	char *const *ember_argv; /* after "--" (argv's NULL ends it) */
	int ember_argc;
};

/*
 * jail_args__parse() - parse and validate ember-jailer's command line
 * (@argc, @argv as main() gets them; argv is not modified) into @a, with
 * Firecracker's jailer flags (docs/jailer.md, "Jailer Usage") plus
 * ember's --allow-root, --ro-bind and --cleanup.  In JAIL_RUN mode the
 * exec file must be a regular file (stat(2)) and each --ro-bind a
 * directory.  Returns 0, or -errno (-EINVAL for a malformed argument)
 * with @e naming the argument.
 */
int jail_args__parse(struct jail_args *a, int argc, char *const argv[],
		     struct jail_err *e);

/* jail_args__usage() - the --help text. */
const char *jail_args__usage(void);

/* --- ELF headers (jailer_elf.c) ----------------------------------------- */

/* What one ELF object needs at load time; strings are copies. */
struct jail_elf {
	bool dynamic; /* has PT_DYNAMIC */
	char interp[PATH_MAX]; /* PT_INTERP, "" for none */
	char needed[JAIL_ELF_MAX_NEEDED][NAME_MAX + 1]; /* DT_NEEDED */
	size_t n_needed;
	bool has_runpath, has_rpath;
	char runpath[JAIL_ELF_PATHS_MAX]; /* DT_RUNPATH, ':'-separated */
	char rpath[JAIL_ELF_PATHS_MAX]; /* DT_RPATH (ignored with RUNPATH) */
};

/*
 * jail_elf__parse() - read @len bytes at @data (a whole file, untrusted)
 * as a 64-bit little-endian ELF executable or shared object for this
 * machine into @out.  Returns 0; -ENOEXEC when it is not one (not ELF,
 * another class or machine: a loader would skip it); -EINVAL, -E2BIG or
 * -ENAMETOOLONG when it is malformed (an offset or string outside the
 * file, more than JAIL_ELF_MAX_NEEDED names).  *@why is then a static
 * text saying what; NULL on success.
 */
int jail_elf__parse(const void *data, size_t len, struct jail_elf *out,
		    const char **why);

/* --- the libraries (jailer_libs.c) -------------------------------------- */

/* The files the exec file's loader opens, as paths it opens them by. */
struct jail_libs {
	char path[JAIL_MAX_LIBS][PATH_MAX]; /* [0]: the loader (PT_INTERP) */
	size_t n; /* 0: a static executable */
};

/*
 * jail_libs__resolve() - the loader and every library @a's exec file
 * needs (recursively), found as ld.so finds them on this system: the
 * needing object's DT_RUNPATH, else its DT_RPATH and the executable's
 * ($ORIGIN expanded), then the directories of /etc/ld.so.conf (and its
 * includes), then /lib/<triplet>, /usr/lib/<triplet>, /lib64,
 * /usr/lib64, /lib, /usr/lib; a file of another ELF class or machine is
 * skipped.  A name found only in a --ro-bind directory is left to it.
 * /etc/ld.so.cache is added when a library came from an ld.so.conf
 * directory (the jail's ld.so finds it through the cache).  Returns 0,
 * or -errno with @e naming the loader or library that cannot be found or
 * read and the --ro-bind that would provide it.
 */
int jail_libs__resolve(struct jail_libs *l, const struct jail_args *a,
		       struct jail_err *e);

/* --- the chroot (jailer_chroot.c) --------------------------------------- */

/*
 * The jail's directory.  Every component of @rel below @anchor_fd was made
 * by this jailer, so undoing is removing @rel's tree and then its now
 * empty parents; both fds stay valid after pivot_root().
 */
struct jail_chroot {
	const struct jail_args *a;
	char path[PATH_MAX]; /* <base>/<exec-name>/<id>/root */
	int anchor_fd; /* O_PATH: the deepest directory that existed */
	char rel[PATH_MAX]; /* anchor_fd -> "root", "" while nothing made */
	int root_fd; /* O_PATH: the chroot */
	dev_t kvm, tun, uffd;
	bool have_uffd;
	bool entered; /* in the jail's mount namespace */
	size_t n_bound; /* --ro-bind mounts made */
	bool pivoted; /* "/" is the chroot */
	bool root_existed; /* root/ was there (Kata makes it): keep it */
	char made[16][NAME_MAX + 1]; /* root_existed: what we made in root/ */
	size_t n_made;
	/* Library files bound, by their symlink-free path in the jail. */
	char lib_mounts[JAIL_MAX_LIBS][PATH_MAX];
	size_t n_lib_mounts;
};

/*
 * jail_chroot__init() - @c with nothing made, and the host's device
 * numbers of /dev/kvm, /dev/net/tun (Documentation/admin-guide/
 * devices.txt: 10,232 and 10,200 when absent) and /dev/userfaultfd (a
 * dynamic minor: not created in the jail when the host lacks it).
 */
void jail_chroot__init(struct jail_chroot *c);

/*
 * jail_chroot__create() - make <base>/<exec-name>/<id>/root (mode 0700;
 * the components above it 0755 where missing) and copy the exec file to
 * root/<exec-name> (0755).  A root that exists (Kata makes it, with its
 * files bound in, before it runs the jailer) is used as Firecracker's
 * jailer does; only what the jailer adds is undone then.  Returns 0 or
 * -errno with @e set; what it made is recorded in @c for
 * jail_chroot__undo().
 */
int jail_chroot__create(struct jail_chroot *c, const struct jail_args *a,
			struct jail_err *e);

/*
 * jail_chroot__enter() - unshare(CLONE_NEWNS), make / a recursive slave,
 * bind-mount the chroot onto itself (recursively: mounts a caller made
 * in it stay), add the --ro-bind directories (read only, nosuid, nodev),
 * then each file of @l the jail does not already see: its path's
 * directories and symlinks recreated in the jail as on the host, and the
 * file itself bound read-only (nosuid, nodev); pivot_root(2) into it,
 * detach the old root and chroot("."): from then on "/" is the chroot.
 * Returns 0 or -errno.
 */
int jail_chroot__enter(struct jail_chroot *c, const struct jail_args *a,
		       const struct jail_libs *l, struct jail_err *e);

/*
 * jail_chroot__note_made() - record @name (a file or directory just made
 * in the chroot's top directory) for jail_chroot__undo() when the root
 * existed before the jailer; nothing otherwise (the whole root goes).
 */
void jail_chroot__note_made(struct jail_chroot *c, const char *name);

/*
 * jail_chroot__make_devices() - in the entered chroot: /dev/kvm,
 * /dev/net/tun and /dev/userfaultfd (character devices, mode 0600, owned
 * by uid:gid), nothing else.  Returns 0 or -errno.
 */
int jail_chroot__make_devices(struct jail_chroot *c, const struct jail_args *a,
			      struct jail_err *e);

/*
 * jail_chroot__undo() - remove what jail_chroot__create() made (works
 * before and after jail_chroot__enter(); never follows a symlink).
 * Returns 0, or -errno when something is left.  Closes @c's fds.
 */
int jail_chroot__undo(struct jail_chroot *c);

/*
 * jail_chroot__remove_tree() - remove @name (a directory below @dirfd) and
 * everything under it, for --cleanup and undo: symlinks are removed, never
 * followed; a directory on another filesystem than @name's (a mount) is
 * refused with EXDEV.  Returns 0 or -errno with @e naming the path
 * (@shown is how @name's directory is shown in messages).
 */
int jail_chroot__remove_tree(int dirfd, const char *name, const char *shown,
			     struct jail_err *e);

/*
 * jail_chroot__user() - the pid of a process (one this process can see in
 * /proc) whose root directory is @root_fd's directory, or 0 when none is.
 */
pid_t jail_chroot__user(int root_fd);

/* --- cgroups (jailer_cgroup.c) ------------------------------------------ */

/* One hierarchy the jail joins: a v1 controller's mount, or the v2 root. */
struct jail_cgroup_hier {
	char mount[PATH_MAX]; /* its mount point, for messages */
	int mount_fd; /* O_PATH, valid after pivot_root() */
	bool cpuset; /* v1 cpuset: cpus/mems are copied down */
	char orig[PATH_MAX]; /* the jailer's own cgroup there, relative */
	char rel[JAIL_PARENT_MAX + JAIL_ID_MAX + 2]; /* <parent>/<id> */
	int n_made; /* trailing components of rel this jailer made */
	bool joined; /* the jailer's pid was written to cgroup.procs */
};

struct jail_cgroups {
	int version;
	struct jail_cgroup_hier h[JAIL_MAX_CGROUPS];
	size_t n;
};

/*
 * jail_cgroup__default_version() - 2 when /sys/fs/cgroup is a cgroup2
 * mount (statfs(2) CGROUP2_SUPER_MAGIC), 1 otherwise.
 */
int jail_cgroup__default_version(void);

/*
 * jail_cgroup__setup() - for @a's --cgroup files: find each one's
 * hierarchy in /proc/mounts (v1: the mount with the controller's option;
 * v2: the cgroup2 mount), create <parent>/<id> there (refused with EEXIST,
 * "an existing cgroup", when <id> exists; v1 cpuset: copying
 * cpuset.cpus and cpuset.mems down from the parent; v2: enabling the
 * controllers in cgroup.subtree_control from the root down) and write the
 * values.  Nothing is joined yet.  Returns 0 or -errno; what it made is in
 * @cg for jail_cgroup__undo().
 */
int jail_cgroup__setup(struct jail_cgroups *cg, const struct jail_args *a,
		       struct jail_err *e);

/*
 * jail_cgroup__join() - move the calling process into each of @cg's
 * cgroups (its pid to cgroup.procs).  Returns 0 or -errno.
 */
int jail_cgroup__join(struct jail_cgroups *cg, struct jail_err *e);

/*
 * jail_cgroup__undo() - move the caller back to the cgroups it came from
 * and remove the directories jail_cgroup__setup() made (deepest first,
 * waiting briefly for exiting tasks).  Returns 0, or -errno when one is
 * left.  Closes @cg's fds.
 */
int jail_cgroup__undo(struct jail_cgroups *cg);

/*
 * jail_cgroup__remove() - --cleanup: remove <parent>/<id> (not the parent)
 * from every hierarchy of @version where it exists; refuses (EBUSY) one
 * that still holds processes.  Sets *@found when one existed.  Returns 0
 * or -errno with @e set.
 */
int jail_cgroup__remove(const struct jail_args *a, int version, bool *found,
			struct jail_err *e);

/* --- privileges (jailer_privs.c) ---------------------------------------- */

/*
 * jail_privs__set_rlimits() - RLIMIT_NOFILE and RLIMIT_FSIZE (soft and
 * hard) from @a.  Returns 0 or -errno.
 */
int jail_privs__set_rlimits(const struct jail_args *a, struct jail_err *e);

/*
 * jail_privs__drop_bounding() - empty the capability bounding set (needs
 * CAP_SETPCAP; done before the chroot, where libcap-ng still finds
 * /proc), but for CAP_DAC_OVERRIDE when @a's uid is 0: Firecracker's
 * jailer leaves root all its capabilities, and Kata (--uid 0) passes
 * FIFOs of mode 0000.  Current capabilities are unchanged.  Returns 0 or
 * -EPERM.
 */
int jail_privs__drop_bounding(const struct jail_args *a, struct jail_err *e);

/*
 * jail_privs__drop() - become @a's uid and gid with no supplementary
 * group, an empty ambient, permitted, effective and inheritable capability
 * set (libcap-ng; for uid 0 CAP_DAC_OVERRIDE alone stays permitted and
 * effective, see jail_privs__drop_bounding()), and PR_SET_NO_NEW_PRIVS;
 * checks that every set, the bounding set too, is so.
 * Returns 0 or -errno; *@dropped tells whether the uid had changed when it
 * failed (then nothing can be undone).
 */
int jail_privs__drop(const struct jail_args *a, bool *dropped,
		     struct jail_err *e);

#endif /* EMBER_API_JAILER_JAILER_H */
