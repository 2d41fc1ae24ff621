// SPDX-License-Identifier: Apache-2.0
/* A command run in the guest with its output captured (guest_run.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guest_run.h"

/* The first @max bytes of the memfd @fd as a NUL-terminated buffer. */
static char *slurp(int fd, size_t max, size_t *len)
{
	struct stat st;
	size_t n;
	char *out;

	if (fstat(fd, &st) < 0)
		return NULL;
	n = (size_t)st.st_size < max ? (size_t)st.st_size : max;
	out = malloc(n + 1);
	if (!out)
		return NULL;
	if (n && pread(fd, out, n, 0) != (ssize_t)n) {
		free(out);
		return NULL;
	}
	out[n] = '\0';
	*len = n;
	return out;
}

void guest_run__release(struct guest_output *o)
{
	free(o->out);
	free(o->err);
	o->out = o->err = NULL;
}

int guest_run__capture(struct pool *p, const struct sandbox_info *sb,
		       int connect_ms, const struct guest_cmd *cmd,
		       struct guest_output *o, char *err, size_t errlen)
{
	struct agent_exec_req req = {
		.argv = cmd->argv,
		.env = cmd->env,
		.env_add = cmd->env_add,
		.cwd = cmd->cwd,
		.user = cmd->user,
		.timeout_ms = cmd->timeout_ms,
		.stdin_fd = cmd->in_fd > 0 ? cmd->in_fd : -1,
		.out_max = cmd->out_max,
		.sig_fd = -1,
	};
	struct agent_client *c;
	int fo = -1, fe = -1, rc;

	memset(o, 0, sizeof(*o));
	c = pool__borrow(p, sb, connect_ms, err, errlen);
	if (!c)
		return -EIO;
	fo = memfd_create("ember-guest-out", MFD_CLOEXEC);
	fe = memfd_create("ember-guest-err", MFD_CLOEXEC);
	if (fo < 0 || fe < 0) {
		rc = -errno;
		snprintf(err, errlen, "memfd: %s", strerror(errno));
		goto out;
	}
	req.stdout_fd = fo;
	req.stderr_fd = fe;
	rc = agent_client__exec(c, &req, &o->res);
	if (rc < 0) {
		o->guest_errno = agent_client__guest_errno(c);
		snprintf(err, errlen, "%s", agent_client__error(c));
		goto out;
	}
	o->out = slurp(fo, cmd->out_max, &o->outlen);
	o->err = slurp(fe, cmd->out_max, &o->errlen);
	if (!o->out || !o->err) {
		guest_run__release(o);
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
	}
out:
	if (fo >= 0)
		close(fo);
	if (fe >= 0)
		close(fe);
	/* A command that could not start leaves the connection sound. */
	pool__return(p, sb->id, c, rc == 0 || rc == -EREMOTEIO);
	return rc;
}
