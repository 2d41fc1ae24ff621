/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where a shim listens, as containerd 1.6's shims compute it
 * (runtime/v2/shim/util_unix.go SocketAddress): "unix://" + DIR + "/" +
 * hex(sha256(filepath.Join(containerd's address, namespace, group))),
 * DIR "/run/containerd/s" whatever containerd's own state directory.
 * The group is the task's id, or the pod's sandbox id for a container of
 * a Kubernetes pod so that a pod's containers share one shim.  Pure.
 */
#ifndef EMBER_API_CONTAINERD_ADDRESS_H
#define EMBER_API_CONTAINERD_ADDRESS_H

#include <stddef.h>

#define SHIM_SOCKET_DIR "/run/containerd/s"
/* Replaces SHIM_SOCKET_DIR (tests: a containerd without /run access). */
#define SHIM_SOCKET_DIR_ENV	  "EMBER_SHIM_SOCKET_DIR"
#define SHIM_ANNOT_SANDBOX_ID	  "io.kubernetes.cri.sandbox-id"
#define SHIM_ANNOT_CONTAINER_TYPE "io.kubernetes.cri.container-type"

/*
 * Go's filepath.Join(@a, @b, @c) (empty elements dropped, then Clean:
 * repeated and trailing slashes, "." and ".." resolved lexically) into
 * @out (@outlen bytes).  0 or -ENAMETOOLONG.
 */
int shim_address__join(const char *a, const char *b, const char *c, char *out,
		       size_t outlen);

/*
 * The address of the shim for @group of namespace @ns under containerd
 * @address, in socket directory @dir, into @out ("unix:///run/...").
 * 0, -EINVAL (empty @ns or @group), -ENAMETOOLONG (also when the socket
 * path would not fit a sockaddr_un), -ENOMEM.
 */
int shim_address__socket(const char *address, const char *ns, const char *group,
			 const char *dir, char *out, size_t outlen);

/*
 * The group of task @id from its bundle's OCI spec @json (@len bytes):
 * the annotation io.kubernetes.cri.sandbox-id when present and not
 * empty (a pod's sandbox has its own id there, its containers the
 * sandbox's), else @id.  Copied into @out (@outlen bytes).  0,
 * -EINVAL (not JSON), -ENAMETOOLONG.
 */
int shim_address__group(const char *json, size_t len, const char *id, char *out,
			size_t outlen);

/* The file path in "unix://PATH" or "PATH" @address (abstract: NULL). */
const char *shim_address__path(const char *address);

#endif
