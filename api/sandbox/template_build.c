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

#define TEMPLATE_BASE_NAME	"base.ext4" /* while building */
#define TEMPLATE_OVERLAY_NAME	"overlay" /* while building */
#define TEMPLATE_WORK_NAME	"work" /* make_base's, while building */
#define TEMPLATE_TRY_MS		10000 /* a start or ready command's exec */
#define TEMPLATE_READY_EVERY_MS 250

#define TEMPLATE_AGENT_MS 10000 /* the build sandbox's agent: connect */

/* Add the ms since *@t0 to @o's stage @stage (if timed); restart *@t0. */
static void lap(const struct template_build_opts *o, enum template_stage stage,
		int64_t *t0)
{
	int64_t now = clock__mono_ms();

	if (o->times)
		o->times->ms[stage] += (unsigned int)(now - *t0);
	*t0 = now;
}

/* A stop signal is waiting on @sig_fd (-1: none). */
static bool template__stopped(int sig_fd)
{
	struct pollfd p = { .fd = sig_fd, .events = POLLIN };

	return sig_fd >= 0 && poll(&p, 1, 0) == 1;
}

/*
 * Run @argv in the build sandbox @sb as @user (NULL: the guest's default
 * user, an image's: PROTOCOL.md "Image defaults"), its output to @out_fd,
 * at most @timeout_ms in the guest (0: no limit): 0 with how it ended in
 * @res, or the failure to run it (@err names @what).
 */
static int template__exec(const struct template_build_opts *o,
			  const struct sandbox_info *sb, const char *user,
			  const char *const *argv, int out_fd,
			  uint32_t timeout_ms, struct agent_exec_result *res,
			  const char *what, char *err, size_t errlen)
{
	struct agent_exec_req req = {
		.argv = argv,
		.user = user,
		.stdin_fd = -1,
		.stdout_fd = out_fd,
		.stderr_fd = out_fd,
		.sig_fd = o->sig_fd,
		.timeout_ms = timeout_ms,
	};
	struct agent_client *c = agent_client__new();
	int rc;

	if (!c)
		return sandbox__errf(err, errlen, -ENOMEM, "out of memory");
	rc = agent_client__connect(c, sb->uds, EMBER_AGENT_PORT,
				   TEMPLATE_AGENT_MS);
	if (rc == 0)
		rc = agent_client__ping(c, TEMPLATE_AGENT_MS);
	if (rc == 0)
		rc = agent_client__exec(c, &req, res);
	if (rc < 0)
		sandbox__errf(err, errlen, rc, "%s: %s", what,
			      agent_client__error(c));
	agent_client__free(c);
	return rc;
}

/*
 * Run `sh -c @cmd` in the build sandbox @sb as root (setup commands, the
 * interpreter's start, sync), its output to @o->out_fd: 0
 * when it exited 0, else -ECANCELED (or the failure) with @err.  @what
 * names it ("setup command 2").
 */
static int template__setup(const struct template_build_opts *o,
			   const struct sandbox_info *sb, const char *cmd,
			   const char *what, bool echo, char *err,
			   size_t errlen)
{
	const char *argv[] = { "sh", "-c", cmd, NULL };
	struct agent_exec_result res;
	char name[256];
	int rc;

	snprintf(name, sizeof(name), "%s (%s)", what, cmd);
	if (echo)
		dprintf(o->out_fd, "+ %s\n", cmd);
	rc = template__exec(o, sb, "root", argv, o->out_fd, 0, &res, name, err,
			    errlen);
	if (rc < 0)
		return rc;
	if (res.kind == EMBER_AGENT_EXITED && res.code == 0)
		return 0;
	return sandbox__errf(
		err, errlen, -ECANCELED, "%s failed: %s %d", name,
		res.kind == EMBER_AGENT_EXITED	  ? "exit status" :
		res.kind == EMBER_AGENT_SIGNALLED ? "killed by signal" :
						    "timed out after",
		res.code);
}

/*
 * E2B's start command: `sh -c CMD` in a session of its own (the agent
 * kills an exec's process group when its connection closes), stdin from
 * /dev/null, its output to TEMPLATE_START_LOG; it runs on in the
 * snapshot.  The command is $0 of the outer shell: no quoting.
 */
static int template__start(const struct template_build_opts *o,
			   const struct sandbox_info *sb, char *err,
			   size_t errlen)
{
	const char *argv[] = { "sh", "-c",
			       "setsid sh -c \"$0\" </dev/null "
			       ">>" TEMPLATE_START_LOG " 2>&1 &",
			       o->start_cmd, NULL };
	struct agent_exec_result res;
	int rc;

	dprintf(o->out_fd, "+ start: %s\n", o->start_cmd);
	rc = template__exec(o, sb, NULL, argv, o->out_fd, TEMPLATE_TRY_MS, &res,
			    "the start command", err, errlen);
	if (rc == 0 && !(res.kind == EMBER_AGENT_EXITED && res.code == 0))
		rc = sandbox__errf(err, errlen, -ECANCELED,
				   "the start command (%s) could not be "
				   "started in the background (sh, setsid)",
				   o->start_cmd);
	return rc;
}

/* The start command's last lines of output, on @o->out_fd. */
static void start_log_tail(const struct template_build_opts *o,
			   const struct sandbox_info *sb)
{
	const char *argv[] = { "sh", "-c",
			       "tail -n 5 " TEMPLATE_START_LOG " 2>/dev/null",
			       NULL };
	struct agent_exec_result res;
	char why[256];

	if (!o->start_cmd)
		return;
	dprintf(o->out_fd, "the start command's last output (%s):\n",
		TEMPLATE_START_LOG);
	template__exec(o, sb, NULL, argv, o->out_fd, TEMPLATE_TRY_MS, &res,
		       "the start command's log", why, sizeof(why));
}

/*
 * Wait until the ready command exits 0 and the ready port listens (TCP,
 * v4 or v6, in /proc/net), trying each every TEMPLATE_READY_EVERY_MS for
 * @o->ready_timeout_s: 0, else -ETIMEDOUT (the start command's log last
 * lines on @o->out_fd), -EINTR on a stop.
 */
static int template__ready(const struct template_build_opts *o,
			   const struct sandbox_info *sb, char *err,
			   size_t errlen)
{
	unsigned int limit_s =
		o->ready_timeout_s ? o->ready_timeout_s : TEMPLATE_READY_S;
	int64_t end = clock__mono_ms() + (int64_t)limit_s * 1000;
	char port_cmd[160];
	const char *cmd[] = { o->ready_cmd, o->ready_port ? port_cmd : NULL };
	struct agent_exec_result res;
	const char *what = "";
	bool port = false;
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC), rc = 0;

	if (null < 0)
		return sandbox__errf(err, errlen, -errno, "/dev/null: %s",
				     strerror(errno));
	snprintf(port_cmd, sizeof(port_cmd),
		 "grep -qsE ':%04X [0-9A-F]+:[0-9A-F]+ 0A ' /proc/net/tcp "
		 "/proc/net/tcp6",
		 o->ready_port);
	for (size_t i = 0; i < 2; i++) {
		const char *argv[] = { "sh", "-c", cmd[i], NULL };

		if (!cmd[i])
			continue;
		port = i == 1;
		what = port ? "the ready port" : "the ready command";
		for (;;) {
			if (template__stopped(o->sig_fd)) {
				close(null);
				return sandbox__errf(err, errlen, -EINTR,
						     "stopped");
			}
			rc = template__exec(o, sb, NULL, argv, null,
					    TEMPLATE_TRY_MS, &res, what, err,
					    errlen);
			if (rc < 0) {
				close(null);
				return rc;
			}
			if (res.kind == EMBER_AGENT_EXITED && res.code == 0)
				break;
			if (clock__mono_ms() >= end)
				goto late;
			usleep(TEMPLATE_READY_EVERY_MS * 1000);
		}
	}
	close(null);
	return 0;
late:
	close(null);
	start_log_tail(o, sb);
	if (port)
		return sandbox__errf(err, errlen, -ETIMEDOUT,
				     "nothing listened on TCP port %u within "
				     "%u s",
				     o->ready_port, limit_s);
	return sandbox__errf(err, errlen, -ETIMEDOUT,
			     "the ready command (%s) did not exit 0 within "
			     "%u s",
			     o->ready_cmd, limit_s);
}

/* The base image: a copy, so that the rootfs may change later. */
static int copy_base(const struct template_build_opts *o, const char *base,
		     char *err, size_t errlen)
{
	int in, out, rc;

	in = open(o->rootfs, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return sandbox__errf(err, errlen, -errno, "rootfs %s: %s",
				     o->rootfs, strerror(errno));
	out = open(base, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	rc = out < 0 ? -errno : files__copy_sparse(in, out);
	if (out >= 0 && close(out) < 0 && rc == 0)
		rc = -errno;
	close(in);
	if (rc < 0)
		return sandbox__errf(err, errlen, rc, "copying %s: %s",
				     o->rootfs, strerror(-rc));
	return 0;
}

/* The base image made by @o->make_base, its work dir in @tmp. */
static int make_base(const struct template_build_opts *o, const char *tmp,
		     const char *base, char *err, size_t errlen)
{
	char work[PATH_MAX];

	if (files__pathf(work, sizeof(work), "%s/" TEMPLATE_WORK_NAME, tmp))
		return sandbox__errf(err, errlen, -ENAMETOOLONG,
				     "template path too long");
	return o->make_base(o->make_base_arg, base, work, err, errlen);
}

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
		.append = o->append,
		.spare_drives = o->spare_drives,
	};
	struct sandbox_info sb;
	struct template_info t = { 0 };
	bool running = false;
	int64_t t0;
	int lock_fd = -1, rc;

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
	t0 = clock__mono_ms();
	rc = o->make_base ? make_base(o, tmp, base, err, errlen) :
			    copy_base(o, base, err, errlen);
	if (rc < 0)
		goto out;
	rc = overlay__create(ovl, base, why, sizeof(why));
	if (rc < 0) {
		sandbox__errf(err, errlen, rc, "an overlay over %s: %s", base,
			      why);
		goto out;
	}
	lap(o, TEMPLATE_T_BASE, &t0);
	rc = sandbox__run(&so, id, err, errlen);
	if (rc < 0)
		goto out;
	rc = sandbox__find(id, &sb, err, errlen);
	if (rc < 0)
		goto out;
	lap(o, TEMPLATE_T_BOOT, &t0);
	running = true;
	if (o->steps) {
		rc = o->steps(o->steps_arg, &sb, ovl, err, errlen);
		lap(o, TEMPLATE_T_STEPS, &t0);
		if (rc < 0)
			goto out;
	}
	for (size_t i = 0; i < o->nsetup && rc == 0; i++) {
		char what[48];

		snprintf(what, sizeof(what), "setup command %zu", i + 1);
		rc = template__stopped(o->sig_fd) ?
			     sandbox__errf(err, errlen, -EINTR, "stopped") :
			     template__setup(o, &sb, o->setup[i], what, true,
					     err, errlen);
	}
	/* E2B's start and ready commands: its server listens in the snapshot. */
	lap(o, TEMPLATE_T_SETUP, &t0);
	if (rc == 0 && o->start_cmd)
		rc = template__stopped(o->sig_fd) ?
			     sandbox__errf(err, errlen, -EINTR, "stopped") :
			     template__start(o, &sb, err, errlen);
	if (rc == 0 && (o->ready_cmd || o->ready_port))
		rc = template__ready(o, &sb, err, errlen);
	/*
	 * The code interpreter, warm in every sandbox restored from the
	 * template (guest-init/INTERP.md), when the image has one.
	 */
	lap(o, TEMPLATE_T_READY, &t0);
	if (rc == 0 && !o->no_interp)
		rc = template__stopped(o->sig_fd) ?
			     sandbox__errf(err, errlen, -EINTR, "stopped") :
			     template__setup(o, &sb, TEMPLATE_INTERP_START,
					     "the code interpreter's start",
					     false, err, errlen);
	lap(o, TEMPLATE_T_INTERP, &t0);
	/* What the guest wrote is on the disk, not only in its cache. */
	if (rc == 0)
		rc = template__stopped(o->sig_fd) ?
			     sandbox__errf(err, errlen, -EINTR, "stopped") :
			     template__setup(o, &sb, "sync", "syncing the disk",
					     false, err, errlen);
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
	lap(o, TEMPLATE_T_SNAPSHOT, &t0);
	rc = overlay__flatten(ovl, disk, why, sizeof(why));
	if (rc < 0) {
		sandbox__errf(err, errlen, rc, "flattening the disk: %s", why);
		goto out;
	}
	unlink(ovl);
	unlink(base);
	lap(o, TEMPLATE_T_DISK, &t0);
	snprintf(t.name, sizeof(t.name), "%s", name);
	t.mem_mib = o->mem_mib;
	t.vcpus = o->vcpus;
	t.created = clock__wall_s();
	snprintf(t.kernel, sizeof(t.kernel), "%s", o->kernel);
	snprintf(t.rootfs, sizeof(t.rootfs), "%s", o->rootfs);
	t.setup = (unsigned int)o->nsetup;
	t.interp = !o->no_interp;
	t.net = !o->no_net;
	t.spare_drives = o->spare_drives;
	snprintf(t.user, sizeof(t.user), "%s", o->user ? o->user : "");
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
