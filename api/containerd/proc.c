// SPDX-License-Identifier: Apache-2.0
/*
 * A container's process in the guest, through the agent (proc.h).
 */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../guest-init/protocol.h"
#include "../sandbox/agent_client.h"
#include "../sandbox/files.h"
#include "../sandbox/sandbox.h"

#define PROC_AGENT_MS 30000

struct proc *proc__new(struct pod *pod, const char *cid, const char *id,
		       struct oci_process *spec, const char *stdin_path,
		       const char *stdout_path, const char *stderr_path,
		       bool terminal, proc_exit_fn on_exit, void *opaque)
{
	struct proc *pr = calloc(1, sizeof(*pr));

	if (!pr)
		return NULL;
	pr->id = strdup(id);
	pr->cid = strdup(cid);
	pr->stdin_path = strdup(stdin_path ? stdin_path : "");
	pr->stdout_path = strdup(stdout_path ? stdout_path : "");
	pr->stderr_path = strdup(stderr_path ? stderr_path : "");
	if (!pr->id || !pr->cid || !pr->stdin_path || !pr->stdout_path ||
	    !pr->stderr_path) {
		free(pr->id);
		free(pr->cid);
		free(pr->stdin_path);
		free(pr->stdout_path);
		free(pr->stderr_path);
		free(pr);
		return NULL;
	}
	pr->spec = *spec;
	memset(spec, 0, sizeof(*spec));
	pr->terminal = terminal;
	pr->ctl_w = -1;
	pr->pod = pod;
	pr->on_exit = on_exit;
	pr->opaque = opaque;
	return pr;
}

/* What the thread needs, owned by it. */
struct run {
	struct proc *pr;
	struct agent_client *c;
	int in_fd, out_fd, err_fd, ctl_r;
};

/*
 * A FIFO of containerd's, opened read-write: the open never waits for
 * the other side (`ctr run -d` reads none), and our own end keeps it
 * open for as long as we need it.  -1 for "" (none: /dev/null).
 */
static int open_fifo(const char *path, char *err, size_t errlen)
{
	int fd;

	if (!path[0])
		return -1;
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int rc = -errno;

		sandbox__errf(err, errlen, 0, "opening %s: %s", path,
			      strerror(errno));
		return rc;
	}
	return fd;
}

/* The run's agent connection and stdio fds closed (-1: none). */
static void run_close_io(struct run *r)
{
	agent_client__free(r->c);
	r->c = NULL;
	if (r->in_fd >= 0)
		close(r->in_fd);
	if (r->out_fd >= 0)
		close(r->out_fd);
	if (r->err_fd >= 0)
		close(r->err_fd);
	r->in_fd = r->out_fd = r->err_fd = -1;
}

static void *proc_thread(void *arg)
{
	struct run *r = arg;
	struct proc *pr = r->pr;
	struct agent_rlimit rl[OCI_MAX_RLIMITS];
	char user[32];
	struct agent_exec_req req = {
		.argv = (const char *const *)pr->spec.args,
		.env = (const char *const *)pr->spec.env,
		.cwd = pr->spec.cwd,
		.user = user,
		.stdin_fd = r->in_fd,
		.stdout_fd = r->out_fd >= 0 ? r->out_fd : -1,
		.stderr_fd = r->err_fd >= 0 ? r->err_fd : r->out_fd,
		.sig_fd = -1,
		.ctl_fd = r->ctl_r,
		.tty = pr->terminal,
		.rows = pr->spec.rows,
		.cols = pr->spec.cols,
		.rlimits = rl,
		.nr_rlimits = (unsigned)pr->spec.nr_rlimits,
	};
	char root[PATH_MAX];
	struct agent_exec_result res = { 0 };
	int null_fd = -1, rc;
	size_t i;

	snprintf(user, sizeof(user), "%u:%u", pr->spec.uid, pr->spec.gid);
	for (i = 0; i < pr->spec.nr_rlimits; i++) {
		rl[i].resource = pr->spec.rlimits[i].resource;
		rl[i].soft = pr->spec.rlimits[i].soft;
		rl[i].hard = pr->spec.rlimits[i].hard;
	}
	pod__root(pr->cid, root, sizeof(root));
	req.root = root;
	/* No FIFO: the output goes nowhere, as containerd's null IO. */
	if (req.stdout_fd < 0 || req.stderr_fd < 0) {
		null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (req.stdout_fd < 0)
			req.stdout_fd = null_fd;
		if (req.stderr_fd < 0)
			req.stderr_fd = null_fd;
	}
	rc = agent_client__exec(r->c, &req, &res);
	if (rc) {
		snprintf(pr->error, sizeof(pr->error), "%s",
			 agent_client__error(r->c));
		pr->exit_status = 255;
	} else if (res.kind == EMBER_AGENT_EXITED) {
		pr->exit_status = (uint32_t)res.code;
	} else {
		pr->exit_status = 128 + (uint32_t)res.code;
	}
	clock_gettime(CLOCK_REALTIME, &pr->exited_at);
	run_close_io(r);
	if (null_fd >= 0)
		close(null_fd);
	close(r->ctl_r);
	free(r);
	pr->on_exit(pr->opaque, pr);
	return NULL;
}

int proc__start(struct proc *pr, char *err, size_t errlen)
{
	struct run *r = calloc(1, sizeof(*r));
	int ctl[2] = { -1, -1 }, rc;

	if (!r)
		return -ENOMEM;
	r->pr = pr;
	r->in_fd = r->out_fd = r->err_fd = -1;
	rc = open_fifo(pr->stdin_path, err, errlen);
	if (rc < -1)
		goto fail;
	r->in_fd = rc;
	rc = open_fifo(pr->stdout_path, err, errlen);
	if (rc < -1)
		goto fail;
	r->out_fd = rc;
	if (!pr->terminal) {
		rc = open_fifo(pr->stderr_path, err, errlen);
		if (rc < -1)
			goto fail;
		r->err_fd = rc;
	}
	if (pipe2(ctl, O_CLOEXEC)) {
		rc = -errno;
		sandbox__errf(err, errlen, 0, "pipe: %s", strerror(errno));
		goto fail;
	}
	/*
	 * ctl() writes under the service's lock: a guest that stops
	 * reading must not stall every other request behind a full pipe.
	 */
	fcntl(ctl[1], F_SETFL, O_NONBLOCK);
	rc = sandbox__agent_connect(&pr->pod->info, PROC_AGENT_MS, &r->c, err,
				    errlen);
	if (rc)
		goto fail;
	r->ctl_r = ctl[0];
	pr->ctl_w = ctl[1];
	pr->state = PROC_RUNNING;
	rc = pthread_create(&pr->thread, NULL, proc_thread, r);
	if (rc) {
		pr->state = PROC_CREATED;
		pr->ctl_w = -1;
		sandbox__errf(err, errlen, 0, "pthread_create: %s",
			      strerror(rc));
		rc = -rc;
		goto fail;
	}
	pr->joinable = true;
	return 0;
fail:
	run_close_io(r);
	if (ctl[0] >= 0)
		close(ctl[0]);
	if (ctl[1] >= 0)
		close(ctl[1]);
	free(r);
	pr->state = PROC_STOPPED;
	pr->exit_status = 255;
	clock_gettime(CLOCK_REALTIME, &pr->exited_at);
	snprintf(pr->error, sizeof(pr->error), "%s", err);
	return rc;
}

static int ctl(struct proc *pr, uint32_t op, uint32_t a, uint32_t b)
{
	struct agent_exec_ctl m = { .op = op, .a = a, .b = b };

	if (pr->state != PROC_RUNNING || pr->ctl_w < 0)
		return -ESRCH;
	/* Atomic (under PIPE_BUF); EAGAIN: the proc thread lags far. */
	if (write(pr->ctl_w, &m, sizeof(m)) != (ssize_t)sizeof(m))
		return errno == EPIPE  ? -ESRCH :
		       errno == EAGAIN ? -EBUSY :
					 -EIO;
	return 0;
}

int proc__signal(struct proc *pr, int sig)
{
	if (sig < 1 || sig > 64)
		return -EINVAL;
	return ctl(pr, AGENT_EXEC_CTL_KILL, (uint32_t)sig, 0);
}

int proc__resize(struct proc *pr, uint32_t cols, uint32_t rows)
{
	if (!pr->terminal)
		return -ENOTTY;
	return ctl(pr, AGENT_EXEC_CTL_RESIZE, rows, cols);
}

int proc__close_stdin(struct proc *pr)
{
	return ctl(pr, AGENT_EXEC_CTL_CLOSE_STDIN, 0, 0);
}

void proc__free(struct proc *pr)
{
	if (!pr)
		return;
	if (pr->state == PROC_RUNNING)
		proc__signal(pr, SIGKILL);
	if (pr->joinable)
		pthread_join(pr->thread, NULL);
	if (pr->ctl_w >= 0)
		close(pr->ctl_w);
	oci_process__free(&pr->spec);
	free(pr->id);
	free(pr->cid);
	free(pr->stdin_path);
	free(pr->stdout_path);
	free(pr->stderr_path);
	free(pr);
}
