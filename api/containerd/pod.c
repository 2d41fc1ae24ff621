// SPDX-License-Identifier: Apache-2.0
/*
 * The microVM of a task or pod (pod.h): started from a template or
 * booted, containers' disks swapped into its spare drives, their roots
 * set up in the guest with busybox sh scripts run by the agent.
 */
#include "pod.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../guest-init/protocol.h"
#include "../sandbox/agent_client.h"
#include "../sandbox/files.h"
#include "../sandbox/lookup.h"
#include "../sandbox/sandbox.h"
#include "../sandbox/sibling.h"
#include "../sandbox/spare.h"
#include "../sandbox/template.h"

#define POD_BOOT_S     300
#define POD_AGENT_MS   30000
#define POD_SCRIPT_MS  60000
#define POD_SCRIPT_MAX 65536

static int conf_uint(const char *key, const char *val, unsigned int min,
		     unsigned int max, unsigned int *out, char *err,
		     size_t errlen)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(val, &end, 10);
	if (errno || end == val || *end || v < min || v > max) {
		sandbox__errf(err, errlen, 0,
			      "%s=%s: want a number from %u to %u", key, val,
			      min, max);
		return -EINVAL;
	}
	*out = (unsigned int)v;
	return 0;
}

/* One setting: the environment's, else the file's (@file_val), else NULL. */
static const char *setting(const char *env, const char *file_val)
{
	const char *v = getenv(env);

	return v && *v ? v : file_val;
}

/* KEY=VALUE lines of the configuration file; @vals[i] for @keys[i]. */
static int read_conf_file(const char *path, const char *const *keys,
			  char vals[][PATH_MAX], size_t n, char *err,
			  size_t errlen)
{
	char line[PATH_MAX + 64];
	size_t i, lineno = 0;
	FILE *f = fopen(path, "re");

	if (!f) {
		if (errno == ENOENT)
			return 0;
		sandbox__errf(err, errlen, 0, "%s: %s", path, strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		char *eq, *k = line;

		lineno++;
		line[strcspn(line, "\r\n")] = '\0';
		while (*k == ' ' || *k == '\t')
			k++;
		if (!*k || *k == '#')
			continue;
		eq = strchr(k, '=');
		if (!eq) {
			sandbox__errf(err, errlen, 0, "%s:%zu: not KEY=VALUE",
				      path, lineno);
			fclose(f);
			return -EINVAL;
		}
		*eq = '\0';
		for (i = 0; i < n; i++)
			if (!strcmp(k, keys[i]))
				break;
		if (i == n) {
			sandbox__errf(err, errlen, 0, "%s:%zu: unknown key %s",
				      path, lineno, k);
			fclose(f);
			return -EINVAL;
		}
		snprintf(vals[i], PATH_MAX, "%s", eq + 1);
	}
	fclose(f);
	return 0;
}

int pod__set_conf(struct pod *p, const struct pod_conf *c)
{
	int rc = 0;

	pthread_mutex_lock(&p->lock);
	if (p->running)
		rc = -EBUSY;
	else
		p->conf = *c;
	pthread_mutex_unlock(&p->lock);
	return rc;
}

int pod__conf(struct pod_conf *c, const char *path, char *err, size_t errlen)
{
	static const char *const keys[] = { "template", "spare_drives",
					    "mem_mib",	"vcpus",
					    "ember",	"kernel",
					    "rootfs" };
	static const char *const envs[] = {
		"EMBER_SHIM_TEMPLATE", "EMBER_SHIM_SPARE_DRIVES",
		"EMBER_SHIM_MEM_MIB",  "EMBER_SHIM_VCPUS",
		"EMBER_BIN",	       "EMBER_KERNEL",
		"EMBER_ROOTFS"
	};
	char vals[7][PATH_MAX];
	const char *env_path = getenv(POD_CONF_ENV), *v;
	char tried[PATH_MAX];
	int rc;

	memset(c, 0, sizeof(*c));
	memset(vals, 0, sizeof(vals));
	if (path && access(path, R_OK))
		return sandbox__errf(err, errlen, -ENOENT,
				     "the runtime's ConfigPath %s: %s", path,
				     strerror(errno));
	if (!path)
		path = env_path && *env_path ? env_path : POD_CONF_FILE;
	rc = read_conf_file(path, keys, vals, 7, err, errlen);
	if (rc)
		return rc;
	v = setting(envs[0], vals[0][0] ? vals[0] : "containerd");
	if (template__name_ok(v, err, errlen))
		return -EINVAL;
	/* template__name_ok() bounds it by SANDBOX_TEMPLATE_MAX. */
	snprintf(c->template_name, sizeof(c->template_name), "%.*s",
		 SANDBOX_TEMPLATE_MAX, v);
	c->spare_drives = 4;
	c->mem_mib = SANDBOX_DEF_MEM;
	c->vcpus = 1;
	v = setting(envs[1], vals[1][0] ? vals[1] : NULL);
	if (v && conf_uint("spare_drives", v, 1, SANDBOX_MAX_SPARE_DRIVES,
			   &c->spare_drives, err, errlen))
		return -EINVAL;
	v = setting(envs[2], vals[2][0] ? vals[2] : NULL);
	if (v && conf_uint("mem_mib", v, 64, 1048576, &c->mem_mib, err, errlen))
		return -EINVAL;
	v = setting(envs[3], vals[3][0] ? vals[3] : NULL);
	if (v && conf_uint("vcpus", v, 1, 32, &c->vcpus, err, errlen))
		return -EINVAL;
	/* Missing files are said when a boot needs them. */
	sibling__path(vals[4][0] ? vals[4] : NULL, envs[4], "ember", tried,
		      sizeof(tried), c->ember, sizeof(c->ember));
	if (!c->ember[0])
		snprintf(c->ember, sizeof(c->ember), "%s", tried);
	sibling__path(vals[5][0] ? vals[5] : NULL, envs[5], "guest/vmlinux",
		      tried, sizeof(tried), c->kernel, sizeof(c->kernel));
	if (!c->kernel[0])
		snprintf(c->kernel, sizeof(c->kernel), "%s", tried);
	sibling__path(vals[6][0] ? vals[6] : NULL, envs[6], "guest/rootfs.ext4",
		      tried, sizeof(tried), c->rootfs, sizeof(c->rootfs));
	if (!c->rootfs[0])
		snprintf(c->rootfs, sizeof(c->rootfs), "%s", tried);
	return 0;
}

void pod__init(struct pod *p, const struct pod_conf *c)
{
	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->lock, NULL);
	p->conf = *c;
}

int pod__root(const char *cid, char *out, size_t outlen)
{
	if ((size_t)snprintf(out, outlen, POD_GUEST_DIR "/%s/root", cid) >=
	    outlen)
		return -ENAMETOOLONG;
	return 0;
}

int pod__start(struct pod *p, const char *cid, const struct oci_spec *spec,
	       char *err, size_t errlen)
{
	struct sandbox_opts o = {
		.ember = p->conf.ember,
		.mem_mib = p->conf.mem_mib,
		.vcpus = p->conf.vcpus,
		.ttl_s = 0,
		.boot_timeout_s = POD_BOOT_S,
	};
	unsigned int mem = 0, vcpus = 0;
	char id[SANDBOX_ID_LEN + 1];
	struct template_info t;
	bool fits = false;
	int rc = 0;

	pthread_mutex_lock(&p->lock);
	if (p->running)
		goto out;
	oci_spec__vm_size(spec, 128, &mem, &vcpus);
	if (template__open(p->conf.template_name, &t, NULL, err, errlen) == 0) {
		fits = t.spare_drives > 0 && (!mem || mem == t.mem_mib) &&
		       (!vcpus || vcpus == t.vcpus);
	}
	if (fits) {
		o.template_name = p->conf.template_name;
		o.mem_mib = t.mem_mib;
		o.vcpus = t.vcpus;
	} else {
		if (access(p->conf.kernel, R_OK) ||
		    access(p->conf.rootfs, R_OK)) {
			snprintf(err, errlen,
				 "no template %s that fits and no kernel and "
				 "rootfs to boot (%s, %s: EMBER_KERNEL, "
				 "EMBER_ROOTFS)",
				 p->conf.template_name, p->conf.kernel,
				 p->conf.rootfs);
			rc = -ENOENT;
			goto out;
		}
		o.kernel = p->conf.kernel;
		o.rootfs = p->conf.rootfs;
		o.spare_drives = p->conf.spare_drives;
		if (mem)
			o.mem_mib = mem;
		if (vcpus)
			o.vcpus = vcpus;
	}
	rc = sandbox__run(&o, id, err, errlen);
	if (rc)
		goto out;
	rc = sandbox__find(id, &p->info, err, errlen);
	if (rc)
		goto out;
	p->running = true;
	p->restored = fits;
	snprintf(p->owner, sizeof(p->owner), "%s", cid);
	p->slots = p->info.spare_drives;
	if (p->slots > POD_MAX_SLOTS)
		p->slots = POD_MAX_SLOTS;
out:
	pthread_mutex_unlock(&p->lock);
	return rc;
}

void pod__stop(struct pod *p)
{
	char err[512];

	pthread_mutex_lock(&p->lock);
	if (p->running)
		sandbox__kill(&p->info, err, sizeof(err));
	p->running = false;
	memset(p->used, 0, sizeof(p->used));
	pthread_mutex_unlock(&p->lock);
}

static int guest_run(struct pod *p, const char *const *argv, char *out,
		     size_t outlen, char *err, size_t errlen);

int pod__guest_sh(struct pod *p, const char *script, char *out, size_t outlen,
		  char *err, size_t errlen)
{
	const char *argv[] = { "/bin/sh", "-c", script, NULL };

	return guest_run(p, argv, out, outlen, err, errlen);
}

/* Run @argv in the guest (not chrooted): as pod__guest_sh(). */
static int guest_run(struct pod *p, const char *const *argv, char *out,
		     size_t outlen, char *err, size_t errlen)
{
	struct agent_exec_req req = {
		.argv = argv,
		.stdin_fd = -1,
		.sig_fd = -1,
		.ctl_fd = -1,
		.timeout_ms = POD_SCRIPT_MS,
		.out_max = outlen ? outlen - 1 : 1,
	};
	struct agent_exec_result res;
	struct agent_client *c = NULL;
	ssize_t n = 0;
	int fd, rc;

	if (outlen)
		out[0] = '\0';
	fd = memfd_create("guest-sh", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	req.stdout_fd = req.stderr_fd = fd;
	rc = sandbox__agent_connect(&p->info, POD_AGENT_MS, &c, err, errlen);
	if (rc)
		goto out;
	rc = agent_client__exec(c, &req, &res);
	if (rc) {
		sandbox__errf(err, errlen, 0, "guest agent: %s",
			      agent_client__error(c));
		goto out;
	}
	if (outlen) {
		n = pread(fd, out, outlen - 1, 0);
		out[n > 0 ? n : 0] = '\0';
	}
	rc = res.kind == EMBER_AGENT_EXITED ? res.code : 128 + res.code;
out:
	agent_client__free(c);
	close(fd);
	return rc;
}

/*
 * The agent's own binary in the guest: its child's /proc/self/exe before
 * the exec (guest-init/agent_ctr.h), whichever image it came from.
 */
#define POD_AGENT_EXE "/proc/self/exe"

/* The mounts the guest makes: the spec's, but bind mounts (binds.h). */
static int mount_args(const struct oci_spec *spec, char **args, size_t *n,
		      size_t max)
{
	size_t i, k, len;
	char *a;

	for (i = 0; i < spec->nr_mounts; i++) {
		const struct oci_mount *m = &spec->mounts[i];

		if (m->bind)
			continue;
		if (*n == max)
			return -E2BIG;
		len = strlen(m->type) + strlen(m->source) +
		      strlen(m->destination) + 4;
		for (k = 0; m->options[k]; k++)
			len += strlen(m->options[k]) + 1;
		a = malloc(len);
		if (!a)
			return -ENOMEM;
		len = (size_t)sprintf(a, "%s\t%s\t%s\t",
				      m->type[0] ? m->type : "none", m->source,
				      m->destination);
		for (k = 0; m->options[k]; k++)
			len += (size_t)sprintf(a + len, "%s%s", k ? "," : "",
					       m->options[k]);
		args[(*n)++] = a;
	}
	return 0;
}

static bool pod_has_binds(const struct oci_spec *spec)
{
	size_t i;

	for (i = 0; i < spec->nr_mounts; i++)
		if (spec->mounts[i].bind)
			return true;
	return false;
}

int pod__seal(struct pod *p, const char *cid, const struct oci_spec *spec,
	      char *err, size_t errlen)
{
	char root[PATH_MAX], out[512];
	const char *argv[] = { POD_AGENT_EXE, "ctr-ro", root, NULL };
	size_t len;
	int rc;

	if (!spec->root_readonly || !pod_has_binds(spec))
		return 0;
	rc = pod__root(cid, root, sizeof(root));
	if (rc)
		return rc;
	rc = guest_run(p, argv, out, sizeof(out), err, errlen);
	if (rc > 0) {
		len = strlen(out);
		while (len && out[len - 1] == '\n')
			out[--len] = '\0';
		return sandbox__errf(
			err, errlen, -EIO,
			"making the container's root read-only: %s", out);
	}
	return rc;
}

int pod__attach(struct pod *p, const char *cid, const char *disk,
		uint64_t sectors, const struct oci_spec *spec,
		unsigned int *slot, char *err, size_t errlen)
{
	char root[PATH_MAX], dev[8], nsect[24], out[1024];
	char *args[OCI_MAX_MOUNTS + 8] = { 0 };
	size_t n = 0, i, len;
	unsigned int k;
	int rc;

	rc = pod__root(cid, root, sizeof(root));
	if (rc)
		return rc;
	pthread_mutex_lock(&p->lock);
	rc = -ESHUTDOWN;
	if (!p->running) {
		sandbox__errf(err, errlen, 0,
			      "the pod's microVM is not running");
		goto unlock;
	}
	for (k = 0; k < p->slots && p->used[k]; k++)
		;
	if (k == p->slots) {
		sandbox__errf(err, errlen, 0,
			      "every spare drive of the pod's microVM is taken "
			      "(%u: a template or EMBER_SHIM_SPARE_DRIVES with "
			      "more)",
			      p->slots);
		rc = -ENOSPC;
		goto unlock;
	}
	rc = sandbox__swap_drive(&p->info, k, disk, err, errlen);
	if (rc)
		goto unlock;
	p->used[k] = true;
	snprintf(dev, sizeof(dev), "vd%c", 'b' + k);
	snprintf(nsect, sizeof(nsect), "%llu", (unsigned long long)sectors);
	args[n++] = POD_AGENT_EXE;
	args[n++] = "ctr-root";
	args[n++] = dev;
	args[n++] = nsect;
	args[n++] = root;
	/* Bind mounts are copied in after: then pod__seal() (binds.h). */
	args[n++] = !spec->root_readonly ? "0" :
		    pod_has_binds(spec)	 ? "2" :
					   "1";
	args[n++] = spec->hostname ? spec->hostname : "";
	i = n;
	rc = mount_args(spec, args, &n, OCI_MAX_MOUNTS + 7);
	if (!rc)
		rc = guest_run(p, (const char *const *)args, out, sizeof(out),
			       err, errlen);
	for (; i < n; i++)
		free(args[i]);
	if (rc > 0) {
		len = strlen(out);
		while (len && out[len - 1] == '\n')
			out[--len] = '\0';
		sandbox__errf(
			err, errlen, 0,
			"setting up the container's root in the guest: %s",
			out[0] ? out : "failed");
		rc = -EIO;
	}
	if (rc)
		goto fail;
	*slot = k;
	pthread_mutex_unlock(&p->lock);
	return 0;
fail:
	pthread_mutex_unlock(&p->lock);
	pod__detach(p, cid, k);
	return rc;
unlock:
	pthread_mutex_unlock(&p->lock);
	return rc;
}

int pod__detach(struct pod *p, const char *cid, unsigned int slot)
{
	char root[PATH_MAX], out[256], err[512];
	const char *argv[] = { POD_AGENT_EXE, "ctr-unroot", root, NULL };
	int rc;

	rc = pod__root(cid, root, sizeof(root));
	if (rc)
		return rc;
	pthread_mutex_lock(&p->lock);
	if (!p->running || slot >= p->slots || !p->used[slot]) {
		pthread_mutex_unlock(&p->lock);
		return 0;
	}
	/*
	 * Whatever still runs in the root (processes the agent did not
	 * start: daemons of an exec) is killed, then the root unmounted,
	 * lazily if something still holds it.
	 */
	rc = guest_run(p, argv, out, sizeof(out), err, sizeof(err));
	sandbox__swap_drive(&p->info, slot, NULL, err, sizeof(err));
	p->used[slot] = false;
	pthread_mutex_unlock(&p->lock);
	return rc < 0 ? rc : 0;
}
