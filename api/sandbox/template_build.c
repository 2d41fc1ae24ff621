// SPDX-License-Identifier: Apache-2.0
/*
 * Building a template (template.h): a sandbox booted on a copy of the
 * rootfs (an overlay over it), its setup commands, its code interpreter
 * started, then paused and snapshotted into .NAME.new, the sandbox
 * killed, the disk flattened, and the template published (template.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "../../guest-init/protocol.h"
#include "agent_client.h"
#include "clock.h"
#include "ember_api.h"
#include "files.h"
#include "../../snapshot/overlay.h"
#include "sandbox.h"
#include "template.h"
#include "template_internal.h"

#define TEMPLATE_BASE_NAME    "base.ext4" /* while building */
#define TEMPLATE_OVERLAY_NAME "overlay" /* while building */
#define TEMPLATE_AGENT_MS     10000 /* the build sandbox's agent: connect */

/* A stop signal is waiting on @sig_fd (-1: none). */
static bool template__stopped(int sig_fd)
{
	struct pollfd p = { .fd = sig_fd, .events = POLLIN };

	return sig_fd >= 0 && poll(&p, 1, 0) == 1;
}

/*
 * Run `sh -c @cmd` in the build sandbox @sb, its output to @o->out_fd: 0
 * when it exited 0, else -ECANCELED (or the failure) with @err.
 */
static int template__setup(const struct template_build_opts *o,
			   const struct sandbox_info *sb, const char *cmd,
			   size_t nr, char *err, size_t errlen)
{
	const char *argv[] = { "sh", "-c", cmd, NULL };
	struct agent_exec_req req = {
		.argv = argv,
		.stdin_fd = -1,
		.stdout_fd = o->out_fd,
		.stderr_fd = o->out_fd,
		.sig_fd = o->sig_fd,
	};
	struct agent_exec_result res;
	struct agent_client *c = agent_client__new();
	int rc;

	if (!c)
		return sandbox__errf(err, errlen, -ENOMEM, "out of memory");
	if (nr)
		dprintf(o->out_fd, "+ %s\n", cmd);
	rc = agent_client__connect(c, sb->uds, EMBER_AGENT_PORT,
				   TEMPLATE_AGENT_MS);
	if (rc == 0)
		rc = agent_client__ping(c, TEMPLATE_AGENT_MS);
	if (rc == 0)
		rc = agent_client__exec(c, &req, &res);
	if (rc < 0)
		sandbox__errf(err, errlen, rc, "setup command %zu (%s): %s", nr,
			      cmd, agent_client__error(c));
	else if (res.kind == EMBER_AGENT_EXITED && res.code == 0)
		rc = 0;
	else
		rc = sandbox__errf(
			err, errlen, -ECANCELED,
			"setup command %zu (%s) failed: %s %d", nr, cmd,
			res.kind == EMBER_AGENT_EXITED	  ? "exit status" :
			res.kind == EMBER_AGENT_SIGNALLED ? "killed by signal" :
							    "timed out after",
			res.code);
	agent_client__free(c);
	return rc;
}

/* chmod 0400 @name in @dir: the template's files are read-only. */
int template__build(const struct template_build_opts *o, const char *name,
		    char *err, size_t errlen)
{
	char root[PATH_MAX], tmp[PATH_MAX], dir[PATH_MAX], base[PATH_MAX],
		ovl[PATH_MAX], disk[PATH_MAX], state[PATH_MAX], mem[PATH_MAX],
		api[PATH_MAX], why[512], id[SANDBOX_ID_LEN + 1];
	struct sandbox_opts so = {
		.ember = o->ember,
		.kernel = o->kernel,
		.rootfs = o->rootfs,
		.disk = ovl,
		.mem_mib = o->mem_mib,
		.vcpus = o->vcpus,
		.ttl_s = o->build_ttl_s,
		.boot_timeout_s = o->boot_timeout_s,
		.net_dev = !o->no_net,
		.net_mode = o->net_mode,
	};
	struct sandbox_info sb;
	struct template_info t = { 0 };
	bool running = false;
	int lock_fd = -1, rc, in, out;

	rc = template__name_ok(name, err, errlen);
	if (rc == 0 && o->no_net && o->net_mode != NET_NONE)
		rc = sandbox__errf(err, errlen, -EINVAL,
				   "a template without a network device "
				   "cannot be built with a network (%s)",
				   net__mode_name(o->net_mode));
	if (rc == 0)
		rc = template__root(root, sizeof(root), true, err, errlen);
	if (rc == 0)
		rc = template__begin(root, name, tmp, sizeof(tmp), &lock_fd,
				     err, errlen);
	if (rc)
		return rc;
	if (files__pathf(dir, sizeof(dir), "%s/%s", root, name) ||
	    files__pathf(base, sizeof(base), "%s/" TEMPLATE_BASE_NAME, tmp) ||
	    files__pathf(ovl, sizeof(ovl), "%s/" TEMPLATE_OVERLAY_NAME, tmp) ||
	    files__pathf(disk, sizeof(disk), "%s/" TEMPLATE_DISK_NAME, tmp) ||
	    files__pathf(state, sizeof(state), "%s/" TEMPLATE_STATE_NAME,
			 tmp) ||
	    files__pathf(mem, sizeof(mem), "%s/" TEMPLATE_MEM_NAME, tmp)) {
		rc = sandbox__errf(err, errlen, -ENAMETOOLONG,
				   "template path too long");
		goto out;
	}
	/* The base image: a copy, so that the rootfs may change later. */
	in = open(o->rootfs, O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		rc = sandbox__errf(err, errlen, -errno, "rootfs %s: %s",
				   o->rootfs, strerror(errno));
		goto out;
	}
	out = open(base, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	rc = out < 0 ? -errno : files__copy_sparse(in, out);
	if (out >= 0 && close(out) < 0 && rc == 0)
		rc = -errno;
	close(in);
	if (rc < 0) {
		sandbox__errf(err, errlen, rc, "copying %s: %s", o->rootfs,
			      strerror(-rc));
		goto out;
	}
	rc = overlay__create(ovl, base, why, sizeof(why));
	if (rc < 0) {
		sandbox__errf(err, errlen, rc, "an overlay over %s: %s", base,
			      why);
		goto out;
	}
	rc = sandbox__run(&so, id, err, errlen);
	if (rc < 0)
		goto out;
	rc = sandbox__find(id, &sb, err, errlen);
	if (rc < 0)
		goto out;
	running = true;
	for (size_t i = 0; i < o->nsetup && rc == 0; i++) {
		rc = template__stopped(o->sig_fd) ?
			     sandbox__errf(err, errlen, -EINTR, "stopped") :
			     template__setup(o, &sb, o->setup[i], i + 1, err,
					     errlen);
	}
	/*
	 * The code interpreter, warm in every sandbox restored from the
	 * template (guest-init/INTERP.md), when the image has one.
	 */
	if (rc == 0 && !o->no_interp)
		rc = template__stopped(o->sig_fd) ?
			     sandbox__errf(err, errlen, -EINTR, "stopped") :
			     template__setup(o, &sb, TEMPLATE_INTERP_START, 0,
					     err, errlen);
	/* What the guest wrote is on the disk, not only in its cache. */
	if (rc == 0)
		rc = template__stopped(o->sig_fd) ?
			     sandbox__errf(err, errlen, -EINTR, "stopped") :
			     template__setup(o, &sb, "sync", 0, err, errlen);
	if (rc < 0)
		goto out;
	if (files__pathf(api, sizeof(api), "%s/" SANDBOX_API_NAME, sb.dir)) {
		rc = sandbox__errf(err, errlen, -ENAMETOOLONG,
				   "sandbox path too long");
		goto out;
	}
	rc = ember_api__pause(api, true, err, errlen);
	if (rc == 0)
		rc = ember_api__snapshot_create(api, false, state, mem, err,
						errlen);
	if (rc < 0)
		goto out;
	running = false;
	rc = sandbox__kill(&sb, err, errlen);
	if (rc < 0)
		goto out;
	rc = overlay__flatten(ovl, disk, why, sizeof(why));
	if (rc < 0) {
		sandbox__errf(err, errlen, rc, "flattening the disk: %s", why);
		goto out;
	}
	unlink(ovl);
	unlink(base);
	snprintf(t.name, sizeof(t.name), "%s", name);
	t.mem_mib = o->mem_mib;
	t.vcpus = o->vcpus;
	t.created = clock__wall_s();
	snprintf(t.kernel, sizeof(t.kernel), "%s", o->kernel);
	snprintf(t.rootfs, sizeof(t.rootfs), "%s", o->rootfs);
	t.setup = (unsigned int)o->nsetup;
	t.interp = !o->no_interp;
	t.net = !o->no_net;
	rc = template__publish(tmp, dir, &t, name, err, errlen);
	if (rc < 0)
		goto out;
	close(lock_fd);
	return 0;
out:
	if (running)
		sandbox__kill(&sb, why, sizeof(why));
	files__rm_tree(tmp);
	close(lock_fd);
	return rc;
}
