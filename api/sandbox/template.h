/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Templates: a snapshot of a booted, set-up sandbox that `run` restores
 * in milliseconds (shared/DESIGN.md, "Snapshots and templates").  Each
 * sandbox restored from one gets its own overlay over the template's disk
 * image and its own vsock socket; the template's memory file is mapped
 * MAP_PRIVATE, so its pages stay shared between the sandboxes until one
 * writes them.
 *
 * A template NAME ([a-z0-9_-], 1 to SANDBOX_TEMPLATE_MAX bytes) is the
 * directory <state>/templates/NAME (state: sandbox__state_dir()):
 *
 *   lock            flock()ed shared while a sandbox is being created
 *                   from it, exclusive while it is removed
 *   info            key=value lines: mem, vcpus, created (Unix time, s),
 *                   kernel, rootfs (the image it was built from), setup
 *                   (the number of setup commands), interp (1: the
 *                   code interpreter was started before the snapshot),
 *                   net (1: the guest has a network device, tap0 in
 *                   its sandbox's namespace, and its address: net.h),
 *                   user (the guest's default user, a template from an
 *                   image's: its User or "user"; absent: root),
 *                   spare_drives (its spare drives, spare.h; absent: 0)
 *   rootfs.ext4     the disk image, raw, read-only (0400)
 *   snapshot.state  the state file of the Full snapshot (0400)
 *   memory          its memory file (sparse; 0400)
 *
 * A template being built is .NAME.new (with its own lock, held by the
 * build), one being removed .NAME.dead; listings skip both, and a build
 * removes a .NAME.new whose lock is free (a build that died).  Sandboxes
 * made from NAME record it in their info file (template=NAME).
 *
 * Functions that can fail take @err/@errlen and leave there one line of
 * text (no "emberctl:" prefix) on failure.
 */
#ifndef EMBER_API_TEMPLATE_H
#define EMBER_API_TEMPLATE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "image.h"
#include "record.h"

#define TEMPLATE_DIR_NAME   "templates"
#define TEMPLATE_LOCK_NAME  "lock"
#define TEMPLATE_INFO_NAME  "info"
#define TEMPLATE_DISK_NAME  "rootfs.ext4"
#define TEMPLATE_STATE_NAME "snapshot.state"
#define TEMPLATE_MEM_NAME   "memory"

/* A template as its directory describes it. */
struct template_info {
	char name[SANDBOX_TEMPLATE_MAX + 1];
	char dir[PATH_MAX];
	unsigned int mem_mib;
	unsigned int vcpus;
	int64_t created; /* Unix time, s */
	char kernel[PATH_MAX]; /* the kernel it booted */
	char rootfs[PATH_MAX]; /* the image its disk was made from */
	unsigned int setup; /* setup commands it ran */
	bool interp; /* the code interpreter's start was run (its
			image had one or not): it is warm in the snapshot */
	bool net; /* the guest has a network device (net.h): each sandbox
		     restored from it gets a namespace with tap0 */
	uint64_t disk_bytes; /* allocated bytes of all its files */
	char user[64]; /* its commands' default user; "": root (the agent's) */
	unsigned int spare_drives; /* spare drives (spare.h) its snapshot has:
				      each sandbox restored from it gets as
				      many, with its own placeholders */
};

/*
 * template__name_ok() - 0 when @name is a valid template name, else
 * -EINVAL with the rule in @err.
 */
int template__name_ok(const char *name, char *err, size_t errlen);

/*
 * template__open() - look up template @name and fill @t; with @lock_fd
 * not NULL, also take its lock shared (so that it cannot be removed until
 * *@lock_fd is closed, by the caller).  -ENOENT ("no template NAME"),
 * -EINVAL (bad name, or an incomplete directory), other errno.
 */
int template__open(const char *name, struct template_info *t, int *lock_fd,
		   char *err, size_t errlen);

/*
 * template__list() - every template, by name, in a malloc()ed array the
 * caller frees (*@out NULL when *@n is 0).
 */
int template__list(struct template_info **out, size_t *n, char *err,
		   size_t errlen);

/* A template build's stages, for template_times. */
enum template_stage {
	TEMPLATE_T_BASE = 0, /* the base disk: a copy, or made from an image */
	TEMPLATE_T_BOOT, /* the build sandbox booted, its agent answering */
	TEMPLATE_T_STEPS, /* a Dockerfile's steps (template_docker.c) */
	TEMPLATE_T_SETUP, /* the setup commands */
	TEMPLATE_T_READY, /* the start command, until ready */
	TEMPLATE_T_INTERP, /* the code interpreter started */
	TEMPLATE_T_SNAPSHOT, /* sync, pause, the Full snapshot, kill */
	TEMPLATE_T_DISK, /* base + overlay flattened */
	TEMPLATE_T_N,
};

/* Where a build's time went, in ms per stage (0: it did not run). */
struct template_times {
	unsigned int ms[TEMPLATE_T_N];
	struct image_times image; /* inside TEMPLATE_T_BASE, from an image */
};

/*
 * template_times__format() - @t as one line into @out (@outsz bytes):
 * "base 3.1 s (read 0.2 s, check 0.1 s, ...), boot 1.2 s, ..." with the
 * stages that ran.  Pure.
 */
void template_times__format(const struct template_times *t, char *out,
			    size_t outsz);

/* What template__build() needs. */
struct template_build_opts {
	const char *ember; /* the VMM binary */
	const char *kernel; /* the kernel to boot */
	const char *rootfs; /* the image copied as the template's base */
	unsigned int mem_mib; /* guest RAM */
	unsigned int vcpus;
	unsigned int boot_timeout_s; /* until the agent answers */
	unsigned int build_ttl_s; /* the build sandbox's TTL: a build cut
				     off leaves nothing after it */
	const char *const *setup; /* shell commands (sh -c), in order */
	size_t nsetup;
	int out_fd; /* their stdout and stderr go here, as they come */
	int sig_fd; /* -1, or a signalfd: a stop signal ends the build
		       (while a setup command runs, it goes to it first) */
	bool no_interp; /* do not start the code interpreter */
	bool no_net; /* no network device (else one: net.h) */
	enum net_mode net_mode; /* the build sandbox's network while the
				   setup commands run (NET_NONE without a
				   device) */
	/*
	 * NULL: the template's base disk is a sparse copy of @rootfs.  Else
	 * this makes it: the new file @base, using the directory @work
	 * (which must not exist; it is removed whatever happens), both in
	 * the template being built, so that a build that dies leaves them
	 * with it; 0, or a negative errno with one line in @err.  @rootfs
	 * is then only recorded (the info's rootfs: what it was made from).
	 * template_image.c makes one from the user's image.
	 */
	int (*make_base)(void *arg, const char *base, const char *work,
			 char *err, size_t errlen);
	void *make_base_arg;
	const char *append; /* NULL, or kernel command line words for the
			       build's boot (init=..., see image.h) */
	/*
	 * E2B's start and ready commands, after the setup commands: NULL,
	 * or `sh -c @start_cmd` started in the background (a session of its
	 * own, stdin /dev/null, output appended to TEMPLATE_START_LOG), so
	 * that it runs on in every sandbox restored from the template; then
	 * the build waits (at most @ready_timeout_s, 0: TEMPLATE_READY_S)
	 * until `sh -c @ready_cmd` exits 0 (tried every 250 ms) and, with
	 * @ready_port (1-65535; 0: none), something listens on that TCP
	 * port.  Not ready in time: -ETIMEDOUT, the start log's last lines
	 * on @out_fd.
	 */
	const char *start_cmd, *ready_cmd;
	unsigned int ready_port;
	unsigned int ready_timeout_s;
	/*
	 * NULL, or the guest's default user, recorded in the info (read
	 * when the template is published: @make_base may fill it).
	 */
	const char *user;
	struct template_times *times; /* NULL, or added to as stages end */
	/*
	 * The build sandbox's spare drives (0..SANDBOX_MAX_SPARE_DRIVES,
	 * spare.h), in the snapshot: every sandbox restored from the
	 * template has as many, each on its own placeholder.
	 */
	unsigned int spare_drives;
	/*
	 * NULL, or run once the build sandbox @sb answers, before the setup
	 * commands, with the path of its disk's overlay @ovl (over @base):
	 * a Dockerfile's steps.  0, or a negative errno with @err (the build
	 * ends, nothing left).
	 */
	int (*steps)(void *arg, const struct sandbox_info *sb, const char *ovl,
		     char *err, size_t errlen);
	void *steps_arg;
};

#define TEMPLATE_START_LOG "/tmp/ember-start.log"
#define TEMPLATE_READY_S   120

/*
 * The step after the setup commands: the code interpreter started and
 * warm (guest-init/INTERP.md) when the image has it.
 */
#define TEMPLATE_INTERP_START                  \
	"if command -v python3 >/dev/null && " \
	"command -v ember-interp >/dev/null; then ember-interp start; fi"

/*
 * template__build() - build template @name: copy the rootfs into the new
 * template's directory as the base image, boot a sandbox on an overlay
 * over it (with a network device unless @o->no_net, its network
 * @o->net_mode), wait for the agent, run each setup command (the first that
 * fails ends the build, -ECANCELED), start the code interpreter (unless
 * @o->no_interp; TEMPLATE_INTERP_START), sync the guest's disks, park the
 * sandbox (a Full snapshot, ember stopped), flatten base + overlay into
 * the template's disk image, move the snapshot in, record the info, and
 * only then make the template visible under its name.  On failure nothing
 * is left (no template directory, no sandbox).  -EEXIST when @name exists
 * or is being built, -EINTR when a stop signal came.
 */
int template__build(const struct template_build_opts *o, const char *name,
		    char *err, size_t errlen);

/* What a template is built from besides template_build_opts: an image. */
struct template_image_opts {
	const char *src; /* image__parse_src()'s SRC */
	uint64_t disk_mib; /* the disk's least size; 0: what the image needs */
	const char *init, *agent; /* ember's guest parts (static) */
	const char *busybox; /* a static busybox, for images without sh */
	const char *interp; /* NULL, or the code interpreter's files */
};

/*
 * template__build_image() - template__build() with the base disk made
 * from the user's image @io->src (image__to_ext4(), in the template's
 * build directory) with ember's guest parts added and the `user` account
 * unless the image has a User (struct image_guest), booted with
 * init=IMAGE_GUEST_INIT; the image's Env, WorkingDir and User are the
 * defaults of every command in its sandboxes (EMBER_GUEST_DEFAULTS).
 * @o->rootfs is ignored (@io->src is recorded instead).  The errors of
 * both; a stop signal on @o->sig_fd also stops the image's tools.
 */
int template__build_image(const struct template_build_opts *o,
			  const struct template_image_opts *io,
			  const char *name, char *err, size_t errlen);

/* A template from a Dockerfile: template__build_dockerfile(). */
struct template_docker_opts {
	const char *dockerfile; /* its path (at most 1 MiB) */
	const char *context; /* COPY's and ADD's sources are in here */
	const char *const *build_args; /* "K=V", n_build_args of them */
	size_t n_build_args;
	/* ember's parts and the disk's size; .src is unused (FROM's) */
	struct template_image_opts img;
};

/*
 * template__build_dockerfile() - template @name from the Dockerfile
 * @d->dockerfile (dockerfile.h: what is supported, ignored, refused):
 * parsed first (a bad one is one error, nothing started), its FROM (an
 * image SRC, or template:NAME: that template's disk) made into the base
 * disk with ember's parts as template__build_image() does, each step
 * run in the build sandbox booted from it (RUN as the USER in effect,
 * else the base's User, else root; COPY from @d->context through the
 * agent; WORKDIR made), the disk after each RUN and COPY kept
 * in <state>/build-cache under the step's key, so that a rebuild starts
 * after the last step found there ("+ step N/M (...): cached"); then
 * the final ENV, WORKDIR and USER written as the guest's defaults, and
 * the build goes on as template__build() (@o's setup, start and ready
 * commands, interpreter, snapshot).  The info's rootfs is
 * "dockerfile:PATH", its user the USER, else the base's, else "user".
 * Errors: the parser's (-EINVAL "line N: ..."), a failing RUN
 * (-ECANCELED, its output shown on @o->out_fd), the image code's and
 * template__build()'s; nothing is left but the cache.
 */
int template__build_dockerfile(const struct template_build_opts *o,
			       const struct template_docker_opts *d,
			       const char *name, char *err, size_t errlen);

/*
 * template__from_sandbox() - make template @name from the live sandbox
 * @sb (from sandbox__find(); E2B's fork and createSnapshot), which runs
 * on unchanged: under its pause.lock (no pause, park or resume
 * meanwhile), sync the guest's disks (agent exec `sync`; skipped when it
 * is paused: its guest cannot run), pause it (PATCH /vm) unless it is
 * paused, take a Full snapshot into the new template's directory, copy
 * its disk as it is at that moment (an overlay: the file, flattened over
 * its base after the resume; a raw disk: a sparse copy, before it),
 * resume it unless it was paused, then record the info (mem and vcpus
 * the sandbox's; kernel, rootfs, setup and interp its own template's, ""
 * and 0 for a booted sandbox; net its network device) and make the
 * template visible under @name, as template__build() does.  The disk and
 * the memory match: the guest does not run from before the snapshot
 * until its disk is copied.  The sandbox's TTL is left as it is (the
 * pause lasts about as long as the snapshot takes).  On failure no
 * template is left and the sandbox runs (or stays paused) as before.
 * The new template has @sb's spare drives (spare.h).
 * -EEXIST when @name exists or is being built, -EINVAL (a bad name, or
 * @sb is parked on disk), -EAGAIN (still booting), -EOPNOTSUPP (jailed),
 * -EBUSY (a file is swapped into one of its spare drives),
 * -ENOENT (it went away, or has no disk of its own), ember's refusal as
 * -EIO, other negative errno.
 */
int template__from_sandbox(const struct sandbox_info *sb, const char *name,
			   char *err, size_t errlen);

/*
 * template__users() - the sandboxes (live or parked) made from template
 * @name: how many in *@n, and the ids of the first ones, space-separated,
 * in @ids (@idslen bytes).
 */
int template__users(const char *name, size_t *n, char *ids, size_t idslen,
		    char *err, size_t errlen);

/*
 * template__replace() - make the template @from (just built under that
 * name, as a stand-in) the template @name, in one step: under both their
 * locks taken exclusive (no sandbox is being made from either), and with
 * no sandbox made from either (live or parked: they use their template's
 * files), @from's directory and @name's are exchanged (renameat2(2)
 * RENAME_EXCHANGE; where the file system cannot, @name is moved aside
 * just before), and the old template is removed.  A sandbox made from
 * @name meanwhile gets either the old template or the new one, whole;
 * @name need not exist.  -EBUSY (a sandbox uses one of them: nothing is
 * changed, @from is left for the caller to remove), -ENOENT (no template
 * @from), other negative errno, each with @err.
 */
int template__replace(const char *from, const char *name, char *err,
		      size_t errlen);

/*
 * template__remove() - remove template @name.  While a sandbox made from
 * it lives or is parked, -EBUSY (saying which), unless @force: then
 * those sandboxes are killed first.  -ENOENT when there is no such
 * template.
 */
int template__remove(const char *name, bool force, char *err, size_t errlen);

#endif /* EMBER_API_TEMPLATE_H */
