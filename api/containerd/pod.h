/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The microVM of a task, or of a pod (several containers sharing the CRI
 * plugin's io.kubernetes.cri.sandbox-id, as Kata runs them): a sandbox of
 * the sandbox library, restored from a template with spare drives where
 * one fits, else booted with them; each container's root disk is swapped
 * into a free spare drive (PATCH /drives/spareK, as Kata does with
 * Firecracker), mounted in the guest under POD_GUEST_DIR/<container id>
 * with the spec's mounts, and its processes run chrooted there through
 * the guest agent.
 *
 * Configuration, from the shim's environment (containerd passes its own
 * to the shims it starts) or a file of KEY=VALUE lines with the same keys
 * in lower case without the prefix (the environment wins): the
 * ConfigPath of the runtime's options in containerd's configuration
 * (`ctr run --runtime-config-path`), else $EMBER_SHIM_CONFIG, else
 * /etc/ember/containerd-shim.conf:
 *   EMBER_SHIM_TEMPLATE  the template to restore (default "containerd"); it
 *                        fits when it has spare drives and the spec's
 *                        memory and CPU limits (if any) are its size
 *   EMBER_SHIM_SPARE_DRIVES  spare drives of a booted VM (default 4)
 *   EMBER_SHIM_MEM_MIB, EMBER_SHIM_VCPUS  a booted VM's size without limits
 *                        (default 256 MiB, 1)
 *   EMBER_BIN, EMBER_KERNEL, EMBER_ROOTFS  as for emberctl (default: ember,
 *                        guest/vmlinux, guest/rootfs.ext4 beside the shim)
 *   EMBER_STATE_DIR      the sandbox library's state directory
 */
#ifndef EMBER_CONTAINERD_POD_H
#define EMBER_CONTAINERD_POD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../sandbox/record.h"
#include "oci_spec.h"

#define POD_GUEST_DIR "/run/ember/containers"
#define POD_MAX_SLOTS 8
#define POD_CONF_ENV  "EMBER_SHIM_CONFIG"
#define POD_CONF_FILE "/etc/ember/containerd-shim.conf"

struct pod_conf {
	char template_name[SANDBOX_TEMPLATE_MAX + 1];
	unsigned int spare_drives, mem_mib, vcpus;
	char ember[PATH_MAX], kernel[PATH_MAX], rootfs[PATH_MAX];
};

struct pod {
	pthread_mutex_t lock; /* the slots and the guest's setup */
	bool running;
	struct sandbox_info info; /* valid when running */
	bool restored; /* from a template, not booted */
	char owner[128]; /* the container whose Create started it */
	unsigned int slots; /* spare drives */
	bool used[POD_MAX_SLOTS];
	struct pod_conf conf;
};

/*
 * pod__conf() - the configuration above into @c, read from the file
 * @path when not NULL (the ConfigPath of the runtime's options in
 * containerd's configuration, which then must exist), else from
 * $EMBER_SHIM_CONFIG or POD_CONF_FILE (either may be missing).  0, or
 * -EINVAL with the bad key in @err, -ENOENT for a missing @path.
 */
int pod__conf(struct pod_conf *c, const char *path, char *err, size_t errlen);

/*
 * pod__set_conf() - the configuration of a pod whose VM is not started
 * yet becomes @c.  -EBUSY once it is started (the first container's
 * options choose its VM).
 */
int pod__set_conf(struct pod *p, const struct pod_conf *c);

/* pod__init() - an empty pod (no VM yet). */
void pod__init(struct pod *p, const struct pod_conf *c);

/*
 * pod__start() - the pod's microVM, sized for @spec (the first
 * container's, @cid, then its owner): restored from the template when
 * it fits, else booted.
 * 0 or -errno with @err.  A started pod is left as it is (0).
 */
int pod__start(struct pod *p, const char *cid, const struct oci_spec *spec,
	       char *err, size_t errlen);

/*
 * pod__attach() - give the container @cid the disk @disk (@sectors
 * 512-byte sectors; read-only when @readonly) in a free spare drive and
 * set up its root in the guest: mounted at POD_GUEST_DIR/@cid/root with
 * @spec's mounts, /dev's standard nodes and links, its hostname.  The
 * slot in *@slot.  -ENOSPC when every spare drive is taken, else -errno
 * with @err; on failure the slot is given back.
 */
int pod__attach(struct pod *p, const char *cid, const char *disk,
		uint64_t sectors, const struct oci_spec *spec,
		unsigned int *slot, char *err, size_t errlen);

/*
 * pod__seal() - make the container @cid's root read-only when @spec asks
 * for it and pod__attach() left it writable for the bind mounts'
 * copies (binds.h).  0, or -errno with @err.
 */
int pod__seal(struct pod *p, const char *cid, const struct oci_spec *spec,
	      char *err, size_t errlen);

/*
 * pod__detach() - the container @cid's root unmounted in the guest (its
 * processes killed first) and slot @slot given back to its placeholder.
 * 0 or -errno; best effort on a VM that is gone.
 */
int pod__detach(struct pod *p, const char *cid, unsigned int slot);

/* pod__stop() - the microVM stopped and its sandbox removed. */
void pod__stop(struct pod *p);

/*
 * pod__guest_sh() - run the busybox sh script @script in the guest (not
 * chrooted), its stdout and stderr (at most @outlen - 1 bytes, NUL-ended)
 * in @out.  The exit status, or -errno with @err.
 */
int pod__guest_sh(struct pod *p, const char *script, char *out, size_t outlen,
		  char *err, size_t errlen);

/*
 * pod__root() - the guest path of @cid's root (POD_GUEST_DIR/@cid/root)
 * into @out.  -ENAMETOOLONG.
 */
int pod__root(const char *cid, char *out, size_t outlen);

#endif /* EMBER_CONTAINERD_POD_H */
