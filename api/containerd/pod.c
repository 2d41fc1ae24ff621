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
	static char vals[7][PATH_MAX];
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

int pod__start(struct pod *p, const struct oci_spec *spec, char *err,
	       size_t errlen)
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

int pod__guest_sh(struct pod *p, const char *script, char *out, size_t outlen,
		  char *err, size_t errlen)
{
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
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

/* Append @s to @b single-quoted for sh. */
static int sh_quote(char *b, size_t cap, size_t *len, const char *s)
{
	if (*len + 2 >= cap)
		return -E2BIG;
	b[(*len)++] = '\'';
	for (; *s; s++) {
		if (*s == '\'') {
			if (*len + 5 >= cap)
				return -E2BIG;
			memcpy(b + *len, "'\\''", 4);
			*len += 4;
			continue;
		}
		if (*len + 2 >= cap)
			return -E2BIG;
		b[(*len)++] = *s;
	}
	b[(*len)++] = '\'';
	b[*len] = '\0';
	return 0;
}

/* printf-append to the script @b. */
static int add(char *b, size_t cap, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int add(char *b, size_t cap, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(b + *len, cap - *len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap - *len)
		return -E2BIG;
	*len += (size_t)n;
	return 0;
}

/* Whether a mount option is one busybox mount passes to the kernel. */
static bool guest_opt(const char *o)
{
	return strcmp(o, "bind") && strcmp(o, "rbind") &&
	       strcmp(o, "private") && strcmp(o, "rprivate") &&
	       strcmp(o, "rslave") && strcmp(o, "slave") &&
	       strcmp(o, "shared") && strcmp(o, "rshared");
}

/* The spec's kernel mounts (proc, sysfs, tmpfs, ...) under $R. */
static int script_mounts(char *b, size_t cap, size_t *len,
			 const struct oci_spec *spec)
{
	size_t i, k;
	int rc = 0;

	for (i = 0; i < spec->nr_mounts && !rc; i++) {
		const struct oci_mount *m = &spec->mounts[i];
		bool first = true;
		bool soft = !strcmp(m->type, "cgroup") ||
			    !strcmp(m->type, "cgroup2") ||
			    !strcmp(m->type, "mqueue");

		if (m->bind)
			continue; /* host files: copied in by the caller */
		/*
		 * The guest's own devpts, not a new instance: the agent
		 * opens a TTY exec's terminal there before the chroot, and
		 * its name must resolve inside the container (tty(1)).
		 */
		if (!strcmp(m->type, "devpts")) {
			rc = add(b, cap, len, "mkdir -p \"$R\"");
			if (!rc)
				rc = sh_quote(b, cap, len, m->destination);
			if (!rc)
				rc = add(b, cap, len,
					 " && mount --bind /dev/pts \"$R\"");
			if (!rc)
				rc = sh_quote(b, cap, len, m->destination);
			if (!rc)
				rc = add(b, cap, len, "\n");
			continue;
		}
		rc = add(b, cap, len, "mkdir -p \"$R\"");
		if (!rc)
			rc = sh_quote(b, cap, len, m->destination);
		if (!rc)
			rc = add(b, cap, len, " && mount -t ");
		if (!rc)
			rc = sh_quote(b, cap, len,
				      m->type[0] ? m->type : "none");
		for (k = 0; !rc && m->options[k]; k++) {
			if (!guest_opt(m->options[k]))
				continue;
			rc = add(b, cap, len, first ? " -o " : ",");
			first = false;
			if (!rc)
				rc = sh_quote(b, cap, len, m->options[k]);
		}
		if (!rc)
			rc = add(b, cap, len, " ");
		if (!rc)
			rc = sh_quote(b, cap, len,
				      m->source[0] ? m->source : m->type);
		if (!rc)
			rc = add(b, cap, len, " \"$R\"");
		if (!rc)
			rc = sh_quote(b, cap, len, m->destination);
		/* cgroups and mqueue: where the guest kernel has them. */
		if (!rc)
			rc = add(b, cap, len, "%s\n",
				 soft ? " 2>/dev/null || true" : "");
	}
	return rc;
}

int pod__attach(struct pod *p, const char *cid, const char *disk,
		uint64_t sectors, const struct oci_spec *spec,
		unsigned int *slot, char *err, size_t errlen)
{
	char *script = NULL, out[1024];
	size_t len = 0;
	unsigned int k;
	int rc;

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
		snprintf(err, errlen,
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
	rc = -ENOMEM;
	script = malloc(POD_SCRIPT_MAX);
	if (!script)
		goto fail;
	/*
	 * Wait for the guest to see the new capacity (the config-change
	 * interrupt), then mount the disk and the spec's mounts, and give
	 * /dev the nodes and links runc gives a container.
	 */
	rc = add(script, POD_SCRIPT_MAX, &len, "set -e\nD=vd%c\nR=", 'b' + k);
	if (!rc) {
		char root[PATH_MAX];

		rc = pod__root(cid, root, sizeof(root));
		if (!rc)
			rc = sh_quote(script, POD_SCRIPT_MAX, &len, root);
	}
	if (!rc)
		rc = add(script, POD_SCRIPT_MAX, &len,
			 "\ni=0\n"
			 "while [ \"$(cat /sys/block/$D/size)\" != %llu ]; do\n"
			 "  i=$((i + 1))\n"
			 "  if [ $i -gt 1000 ]; then echo \"/dev/$D: $(cat "
			 "/sys/block/$D/size) sectors after 10 s, not %llu\" "
			 ">&2; exit 1; fi\n"
			 "  sleep 0.01\n"
			 "done\n"
			 "mkdir -p \"$R\"\n"
			 "mount -t ext4 %s/dev/$D \"$R\"\n",
			 (unsigned long long)sectors,
			 (unsigned long long)sectors,
			 spec->root_readonly ? "-o ro " : "");
	if (!rc)
		rc = script_mounts(script, POD_SCRIPT_MAX, &len, spec);
	if (!rc)
		rc = add(script, POD_SCRIPT_MAX, &len,
			 "if [ -d \"$R/dev\" ]; then\n"
			 "  for n in null zero full random urandom tty; do\n"
			 "    [ -e \"$R/dev/$n\" ] || { : > \"$R/dev/$n\" && "
			 "mount --bind /dev/$n \"$R/dev/$n\"; }\n"
			 "  done\n"
			 "  [ -e \"$R/dev/fd\" ] || ln -s /proc/self/fd "
			 "\"$R/dev/fd\"\n"
			 "  [ -e \"$R/dev/stdin\" ] || ln -s /proc/self/fd/0 "
			 "\"$R/dev/stdin\"\n"
			 "  [ -e \"$R/dev/stdout\" ] || ln -s /proc/self/fd/1 "
			 "\"$R/dev/stdout\"\n"
			 "  [ -e \"$R/dev/stderr\" ] || ln -s /proc/self/fd/2 "
			 "\"$R/dev/stderr\"\n"
			 "  [ -e \"$R/dev/ptmx\" ] || ln -s pts/ptmx "
			 "\"$R/dev/ptmx\"\n"
			 "fi\n");
	if (!rc && spec->hostname && spec->hostname[0]) {
		rc = add(script, POD_SCRIPT_MAX, &len, "hostname ");
		if (!rc)
			rc = sh_quote(script, POD_SCRIPT_MAX, &len,
				      spec->hostname);
		if (!rc)
			rc = add(script, POD_SCRIPT_MAX, &len, "\n");
	}
	if (rc) {
		sandbox__errf(err, errlen, 0,
			      "the container's mounts: over %d bytes",
			      POD_SCRIPT_MAX);
		goto fail;
	}
	rc = pod__guest_sh(p, script, out, sizeof(out), err, errlen);
	if (rc > 0) {
		len = strlen(out);
		while (len && out[len - 1] == '\n')
			out[--len] = '\0';
		sandbox__errf(err, errlen, 0,
			      "setting up the container's root in "
			      "the guest: %s",
			      out[0] ? out : "failed");
		rc = -EIO;
	}
	if (rc)
		goto fail;
	*slot = k;
	free(script);
	pthread_mutex_unlock(&p->lock);
	return 0;
fail:
	free(script);
	pthread_mutex_unlock(&p->lock);
	pod__detach(p, cid, k);
	return rc;
unlock:
	pthread_mutex_unlock(&p->lock);
	return rc;
}

int pod__detach(struct pod *p, const char *cid, unsigned int slot)
{
	char root[PATH_MAX], script[PATH_MAX * 2 + 256], out[256], err[512];
	size_t len = 0;
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
	rc = add(script, sizeof(script), &len, "R=");
	if (!rc)
		rc = sh_quote(script, sizeof(script), &len, root);
	if (!rc)
		rc = add(script, sizeof(script), &len,
			 "\nfor p in /proc/[0-9]*; do\n"
			 "  [ \"$(readlink $p/root)\" = \"$R\" ] && "
			 "kill -9 ${p#/proc/} 2>/dev/null\n"
			 "done\n"
			 "umount -R \"$R\" 2>/dev/null || umount -R -l \"$R\"\n"
			 "rmdir \"$R\" \"${R%%/root}\" 2>/dev/null\n"
			 "true\n");
	if (!rc)
		rc = pod__guest_sh(p, script, out, sizeof(out), err,
				   sizeof(err));
	sandbox__swap_drive(&p->info, slot, NULL, err, sizeof(err));
	p->used[slot] = false;
	pthread_mutex_unlock(&p->lock);
	return rc < 0 ? rc : 0;
}
