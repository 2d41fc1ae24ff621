/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A container's bind mounts of host files and directories (the CRI
 * plugin's /etc/hosts, /etc/resolv.conf, /etc/hostname, a termination
 * log, secret and config-map volumes; `ctr run --mount type=bind`),
 * given to its microVM as copies made at Create: a guest cannot see the
 * host's files without a shared file system (virtio-fs, which ember does
 * not have).  Files keep their mode, directories their tree, symbolic
 * links their target (Kubernetes' volumes are "..data" links); what the
 * host changes later is not seen, and what the container writes stays in
 * the guest.  Bounded: BINDS_MAX_ENTRIES entries and BINDS_MAX_BYTES
 * bytes over all of a container's binds, BINDS_MAX_DEPTH levels.
 */
#ifndef EMBER_CONTAINERD_BINDS_H
#define EMBER_CONTAINERD_BINDS_H

#include <stddef.h>

#include "oci_spec.h"
#include "pod.h"

#define BINDS_MAX_ENTRIES 4096
#define BINDS_MAX_BYTES	  (64u << 20)
#define BINDS_MAX_DEPTH	  16

/*
 * binds__copy() - copy each bind mount of @spec (its source on the host)
 * to its destination under the container @cid's root in @pod's guest
 * (pod__root()).  A source that is neither a regular file, a directory
 * nor a symbolic link (a socket, a device) is refused.  0, or -errno
 * with the mount and the reason in @err: -ENOENT (a missing source),
 * -E2BIG (past the bounds), -ENOTSUP, the agent's errors.
 */
int binds__copy(struct pod *pod, const char *cid, const struct oci_spec *spec,
		char *err, size_t errlen);

#endif /* EMBER_CONTAINERD_BINDS_H */
