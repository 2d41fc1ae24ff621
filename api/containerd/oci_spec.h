/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The parts of an OCI runtime spec (the bundle's config.json, runtime-spec
 * 1.0 "config.md" and "config-linux.md") that ember's containerd shim
 * honours, read with jansson, and the parts it refuses.  A container runs
 * chrooted in a microVM of its own (or of its pod), so:
 *
 *   honoured   process (args, env, cwd, user uid/gid/additionalGids,
 *              terminal, consoleSize, rlimits), root.path and readonly,
 *              hostname, mounts (proc, sysfs, tmpfs, devpts, mqueue, bind
 *              mounts of host files: copied in), linux.resources memory
 *              limit and CPU quota/period (they size the VM), annotations
 *              (the pod grouping of the CRI plugin)
 *   ignored    capabilities, seccomp, apparmor, selinux, cgroups paths,
 *              masked and read-only paths, sysctl, OOM score: the VM is
 *              the boundary; said in the README
 *   refused    linux.devices (a microVM has no host devices), a host
 *              network, PID or IPC namespace (no namespace of that type
 *              in linux.namespaces: `ctr run --net-host`), hooks
 *
 * Pure: no I/O.  The spec comes from containerd (the bundle it wrote), but
 * it is parsed as untrusted input all the same (fuzzed with the shim's
 * other parsers).
 */
#ifndef EMBER_CONTAINERD_OCI_SPEC_H
#define EMBER_CONTAINERD_OCI_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OCI_MAX_ARGS	256 /* the guest agent's limits (protocol.h) */
#define OCI_MAX_ENV	256
#define OCI_MAX_RLIMITS 16
#define OCI_MAX_GIDS	32
#define OCI_MAX_MOUNTS	64
#define OCI_MAX_OPTS	32

/* The CRI plugin's annotations (containerd pkg/cri/annotations). */
#define OCI_ANN_CONTAINER_TYPE "io.kubernetes.cri.container-type"
#define OCI_ANN_SANDBOX_ID     "io.kubernetes.cri.sandbox-id"

struct oci_rlimit {
	uint32_t resource; /* RLIMIT_* number */
	uint64_t soft, hard; /* UINT64_MAX: unlimited */
};

/* runtime-spec "process" (also the Exec request's spec). */
struct oci_process {
	bool terminal;
	uint16_t rows, cols; /* consoleSize; 0: not given */
	char **args; /* NULL-terminated, 1..OCI_MAX_ARGS */
	char **env; /* NULL-terminated, 0..OCI_MAX_ENV */
	char *cwd; /* absolute */
	uint32_t uid, gid;
	uint32_t gids[OCI_MAX_GIDS]; /* additionalGids */
	size_t nr_gids;
	struct oci_rlimit rlimits[OCI_MAX_RLIMITS];
	size_t nr_rlimits;
};

struct oci_mount {
	char *destination; /* absolute, clean: no ".." leaves the root */
	char *type; /* "" when not given (a bind mount) */
	char *source; /* "" when not given */
	char *options[OCI_MAX_OPTS + 1]; /* NULL-terminated */
	bool bind; /* type "bind" or a "bind"/"rbind" option */
	bool readonly; /* an "ro" option */
};

struct oci_spec {
	struct oci_process process;
	char *root_path; /* root.path as given (relative to the bundle) */
	bool root_readonly;
	char *hostname; /* NULL: none */
	struct oci_mount mounts[OCI_MAX_MOUNTS];
	size_t nr_mounts;
	uint64_t mem_limit; /* linux.resources.memory.limit, bytes; 0: none */
	uint64_t cpu_quota; /* linux.resources.cpu.quota, us; 0: none */
	uint64_t cpu_period; /* its period, us (default 100000) */
	char *container_type; /* OCI_ANN_CONTAINER_TYPE; NULL: none */
	char *sandbox_id; /* OCI_ANN_SANDBOX_ID; NULL: none */
};

/*
 * oci_spec__parse() - read the config.json text @text (@len bytes, not
 * necessarily NUL-terminated) into @s (zeroed first; free it with
 * oci_spec__free() even on failure).  0; -EINVAL with the JSON path and
 * the reason in @err for a malformed spec; -ENOTSUP with the reason for
 * one that ember cannot honour (see above); -E2BIG past the limits above;
 * -ENOMEM.
 */
int oci_spec__parse(const char *text, size_t len, struct oci_spec *s, char *err,
		    size_t errlen);

/*
 * oci_process__parse() - an OCI "process" object alone, as the JSON text
 * @text (@len bytes): the spec of containerd's Exec request.  Same
 * errors as oci_spec__parse(); free @p with oci_process__free().
 */
int oci_process__parse(const char *text, size_t len, struct oci_process *p,
		       char *err, size_t errlen);

void oci_process__free(struct oci_process *p);
void oci_spec__free(struct oci_spec *s);

/*
 * oci_spec__vm_size() - the microVM that honours @s's limits: *@mem_mib
 * = the memory limit rounded up to MiB (at least @min_mib), *@vcpus =
 * quota / period rounded up (1..32); 0 for each that @s leaves open.
 */
void oci_spec__vm_size(const struct oci_spec *s, unsigned int min_mib,
		       unsigned int *mem_mib, unsigned int *vcpus);

/*
 * oci_rlimit__number() - the resource number of the name @name
 * ("RLIMIT_NOFILE"), or -EINVAL.
 */
int oci_rlimit__number(const char *name);

#endif /* EMBER_CONTAINERD_OCI_SPEC_H */
