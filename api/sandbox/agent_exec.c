// SPDX-License-Identifier: Apache-2.0
/* The agent client's exec, output streamed both ways: see agent_client.h. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "../../guest-init/protocol.h"
#include "agent_client.h"
#include "agent_wire.h"
#include "clock.h"
#include "files.h"

/*
 * stdin per STDIN frame: half a pipe.  The agent writes STDIN to the
 * child's pipe blocking, so small frames keep it serving the child's
 * output in between (PROTOCOL.md, flow control).
 */
#define STDIN_CHUNK (32U << 10)
/* How long past the guest's exec timeout the host still waits for EXIT. */
#define EXEC_GRACE_MS 60000

struct exec_ctx {
	const struct agent_exec_req *req;
	struct agent_exec_result *res;
	int out_gone; /* stdout_fd said EPIPE: output dropped */
	int err_gone;
	int stops; /* SIGINT/SIGTERM/SIGHUP forwarded so far */
	uint64_t out_bytes, err_bytes; /* written so far, for out_max */
	int stdin_closed; /* the empty STDIN went (or there is no input) */
	int want_started; /* keep or attach: a STARTED comes first */
	uint8_t ctl[sizeof(struct agent_exec_ctl)]; /* a record, in part */
	size_t ctl_have;
};

/*
 * Write @len bytes of a stream to @fd, keeping at most @max (0: all) of
 * the stream in total (*@done counts what was kept): the rest is read
 * from the connection and dropped.
 */
static int keep_output(int fd, const uint8_t *p, uint32_t len, uint64_t max,
		       uint64_t *done)
{
	uint64_t room = max ? (max > *done ? max - *done : 0) : len;

	if (room < len)
		len = (uint32_t)room;
	*done += len;
	return len ? files__write_all(fd, p, len) : 0;
}

static int exec_kill(struct op *op, int sig)
{
	uint8_t b[4];

	ember_agent_put32(b, (uint32_t)sig);
	op->late_esrch = 1; /* the process may end before the KILL lands */
	return agent_wire__tx_frame(op->c, EMBER_AGENT_KILL, op->stream, b,
				    sizeof(b));
}

static int exec_frame(struct op *op, const struct ember_agent_hdr *h,
		      const uint8_t *p)
{
	struct exec_ctx *x = op->ctx;
	uint32_t kind, pid;
	uint64_t dropped;
	int32_t code;
	int rc;

	switch (h->type) {
	case EMBER_AGENT_STDOUT:
		if (x->out_gone || !h->len)
			return 0;
		rc = keep_output(x->req->stdout_fd, p, h->len, x->req->out_max,
				 &x->out_bytes);
		if (rc == -EPIPE) {
			/* Like a local pipeline: the writer gets SIGPIPE. */
			x->out_gone = 1;
			return exec_kill(op, SIGPIPE);
		}
		if (rc < 0)
			return agent_wire__fail(op->c, -EIO,
						"writing the output: %s",
						strerror(-rc));
		return 0;
	case EMBER_AGENT_STDERR:
		/* Nowhere to report a failing stderr: drop it from then on. */
		if (!x->err_gone && h->len &&
		    keep_output(x->req->stderr_fd, p, h->len, x->req->out_max,
				&x->err_bytes) < 0)
			x->err_gone = 1;
		return 0;
	case EMBER_AGENT_STARTED:
		/* With keep, and for an attach: before any output. */
		if (!x->want_started || x->res->pid ||
		    ember_agent_started_decode(p, h->len, &pid, &dropped) < 0)
			return agent_wire__unexpected(op->c, h);
		x->res->pid = pid;
		x->res->dropped = dropped;
		if (x->req->detach) {
			x->res->running = true;
			op->done = 1;
		}
		return 0;
	case EMBER_AGENT_EXIT:
		if (ember_agent_exit_decode(p, h->len, &kind, &code) < 0)
			return agent_wire__fail(op->c, -EPROTO,
						"malformed EXIT frame");
		if ((kind == EMBER_AGENT_EXITED && (code < 0 || code > 255)) ||
		    (kind != EMBER_AGENT_EXITED && (code < 1 || code > 64)))
			return agent_wire__fail(
				op->c, -EPROTO,
				"EXIT frame with kind %u code %d", kind, code);
		x->res->kind = kind;
		x->res->code = code;
		op->done = 1;
		return 0;
	default:
		return agent_wire__other_frame(op, h, p);
	}
}

/* stdin is readable and nothing waits to be sent: one STDIN frame. */
static int exec_input(struct op *op)
{
	struct exec_ctx *x = op->ctx;
	ssize_t n = agent_wire__tx_read(op->c, x->req->stdin_fd, STDIN_CHUNK);

	if (n == -EAGAIN)
		return 0;
	if (n == -ENOBUFS)
		return -ENOBUFS;
	op->late_esrch = 1; /* the child may be gone: STDIN gets ESRCH */
	if (n <= 0) {
		/* End of input (a read error ends it too): close its stdin. */
		op->in_fd = -1;
		x->stdin_closed = 1;
		n = 0;
	}
	agent_wire__tx_commit(op->c, EMBER_AGENT_STDIN, op->stream,
			      (uint32_t)n);
	return 0;
}

static int exec_signal(struct op *op)
{
	struct exec_ctx *x = op->ctx;
	struct signalfd_siginfo si;
	ssize_t n = read(op->sig_fd, &si, sizeof(si));
	int sig;

	if (n != (ssize_t)sizeof(si))
		return 0;
	sig = (int)si.ssi_signo;
	if (sig < 1 || sig > 64)
		return 0;
	if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
		if (++x->stops >= 3)
			sig = SIGKILL;
	}
	return exec_kill(op, sig);
}

/* One whole record of ctl_fd (agent_client.h: what is ignored). */
static int exec_ctl_record(struct op *op, const struct agent_exec_ctl *r)
{
	struct exec_ctx *x = op->ctx;
	uint8_t b[EMBER_AGENT_WINSIZE_SIZE];

	switch (r->op) {
	case AGENT_EXEC_CTL_KILL:
		if (r->a < 1 || r->a > 64)
			return 0;
		return exec_kill(op, (int)r->a);
	case AGENT_EXEC_CTL_RESIZE:
		if (!x->req->tty || r->a > UINT16_MAX || r->b > UINT16_MAX)
			return 0;
		ember_agent_winsize_encode(b, (uint16_t)r->a, (uint16_t)r->b);
		op->late_esrch = 1; /* the process may end before it lands */
		return agent_wire__tx_frame(op->c, EMBER_AGENT_RESIZE,
					    op->stream, b, sizeof(b));
	case AGENT_EXEC_CTL_CLOSE_STDIN:
		if (x->stdin_closed)
			return 0;
		x->stdin_closed = 1;
		op->in_fd = -1;
		op->late_esrch = 1;
		return agent_wire__tx_frame(op->c, EMBER_AGENT_STDIN,
					    op->stream, NULL, 0);
	default:
		return 0;
	}
}

/* ctl_fd is readable: a record (or part of one), or its end. */
static int exec_control(struct op *op)
{
	struct exec_ctx *x = op->ctx;
	struct agent_exec_ctl r;
	ssize_t n = read(op->ctl_fd, x->ctl + x->ctl_have,
			 sizeof(x->ctl) - x->ctl_have);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0) {
		op->ctl_fd = -1; /* nothing more */
		return 0;
	}
	x->ctl_have += (size_t)n;
	if (x->ctl_have < sizeof(x->ctl))
		return 0;
	x->ctl_have = 0;
	memcpy(&r, x->ctl, sizeof(r));
	return exec_ctl_record(op, &r);
}

/* @req's ROOT, RLIMIT and TTY_SIZE fields at *@off: 0 or EMBER_AGENT_E_*. */
static int exec_encode_ext(const struct agent_exec_req *r, uint8_t *b,
			   size_t cap, size_t *off)
{
	uint8_t v[EMBER_AGENT_RLIMIT_SIZE];
	int rc = 0;

	if (r->root)
		rc = ember_agent_tlv_put_str(b, cap, off, EMBER_AGENT_T_ROOT,
					     r->root);
	for (unsigned i = 0; i < r->nr_rlimits && rc == 0; i++) {
		ember_agent_rlimit_encode(v, r->rlimits[i].resource,
					  r->rlimits[i].soft,
					  r->rlimits[i].hard);
		rc = ember_agent_tlv_put(b, cap, off, EMBER_AGENT_T_RLIMIT, v,
					 EMBER_AGENT_RLIMIT_SIZE);
	}
	if (r->tty && (r->rows || r->cols) && rc == 0) {
		ember_agent_winsize_encode(v, r->rows, r->cols);
		rc = ember_agent_tlv_put(b, cap, off, EMBER_AGENT_T_TTY_SIZE, v,
					 EMBER_AGENT_WINSIZE_SIZE);
	}
	return rc;
}

/* What the agent would refuse in @r's ROOT and RLIMITs: 0 or -EINVAL. */
static int exec_check_ext(struct agent_client *c,
			  const struct agent_exec_req *r)
{
	if (r->root &&
	    (r->root[0] != '/' || (r->env_add && r->env && r->env[0])))
		return agent_wire__fail(c, -EINVAL,
					"root '%.100s': wants an absolute "
					"path and the whole environment",
					r->root);
	if (r->nr_rlimits > EMBER_AGENT_MAX_RLIMITS ||
	    (r->nr_rlimits && !r->rlimits))
		return agent_wire__fail(c, -EINVAL, "more than %d rlimits",
					EMBER_AGENT_MAX_RLIMITS);
	for (unsigned i = 0; i < r->nr_rlimits; i++) {
		const struct agent_rlimit *l = &r->rlimits[i];

		if (l->resource >= EMBER_AGENT_NR_RLIMITS || l->soft > l->hard)
			return agent_wire__fail(
				c, -EINVAL,
				"rlimit %u: wants a resource below %d and "
				"soft <= hard",
				l->resource, EMBER_AGENT_NR_RLIMITS);
		for (unsigned j = 0; j < i; j++)
			if (r->rlimits[j].resource == l->resource)
				return agent_wire__fail(c, -EINVAL,
							"rlimit %u given twice",
							l->resource);
	}
	return 0;
}

/*
 * Encode @req's fields into the @cap bytes at @b: length, -E2BIG, or
 * -EINVAL for a malformed user spec, root or rlimit.
 */
static long exec_encode(struct agent_client *c, const struct agent_exec_req *r,
			uint8_t *b, size_t cap)
{
	uint32_t flags = 0;
	size_t off = 0, n;
	int rc = 0;

	if (r->user && ember_user_spec_split(r->user) < 0)
		return agent_wire__fail(c, -EINVAL,
					"user '%.100s': wants NAME, UID, "
					"NAME:GROUP or UID:GID",
					r->user);
	rc = exec_check_ext(c, r);
	if (rc)
		return rc;
	if (r->stdin_fd >= 0)
		flags |= EMBER_AGENT_F_STDIN;
	if (r->tty)
		flags |= EMBER_AGENT_F_TTY;
	if (r->env_add && r->env && r->env[0])
		flags |= EMBER_AGENT_F_ENV_ADD;
	if (r->keep || r->detach)
		flags |= EMBER_AGENT_F_KEEP;
	if (r->detach)
		flags |= EMBER_AGENT_F_DETACH;
	for (n = 0; r->argv[n] && rc == 0; n++)
		rc = n < EMBER_AGENT_MAX_ARGS ?
			     ember_agent_tlv_put_str(b, cap, &off,
						     EMBER_AGENT_T_ARG,
						     r->argv[n]) :
			     EMBER_AGENT_E_COUNT;
	for (n = 0; r->env && r->env[n] && rc == 0; n++)
		rc = n < EMBER_AGENT_MAX_ENV ?
			     ember_agent_tlv_put_str(b, cap, &off,
						     EMBER_AGENT_T_ENV,
						     r->env[n]) :
			     EMBER_AGENT_E_COUNT;
	if (r->cwd && rc == 0)
		rc = ember_agent_tlv_put_str(b, cap, &off, EMBER_AGENT_T_CWD,
					     r->cwd);
	if (r->user && rc == 0)
		rc = ember_agent_tlv_put_str(b, cap, &off, EMBER_AGENT_T_USER,
					     r->user);
	if (r->timeout_ms && rc == 0)
		rc = ember_agent_tlv_put_u32(
			b, cap, &off, EMBER_AGENT_T_TIMEOUT, r->timeout_ms);
	if (rc == 0)
		rc = exec_encode_ext(r, b, cap, &off);
	/* No FLAGS field when no bit is set: older agents know no more. */
	if (flags && rc == 0)
		rc = ember_agent_tlv_put_u32(b, cap, &off, EMBER_AGENT_T_FLAGS,
					     flags);
	if (rc == EMBER_AGENT_E_COUNT)
		return agent_wire__fail(c, -E2BIG,
					"more than %d arguments or variables",
					EMBER_AGENT_MAX_ARGS);
	if (rc < 0)
		return agent_wire__fail(c, -E2BIG,
					"command and environment over %u bytes",
					EMBER_AGENT_MAX_PAYLOAD);
	return (long)off;
}

int agent_client__exec(struct agent_client *c, const struct agent_exec_req *req,
		       struct agent_exec_result *res)
{
	struct exec_ctx x = { .req = req,
			      .res = res,
			      .stdin_closed = req->stdin_fd < 0 && !req->tty,
			      .want_started = req->keep || req->detach };
	struct op op = {
		.c = c,
		.frame = exec_frame,
		.input = exec_input,
		.signal = exec_signal,
		.control = exec_control,
		/* detach: stdin stays open in the guest, for an attach. */
		.in_fd = req->detach ? -1 : req->stdin_fd,
		.sig_fd = req->sig_fd,
		.ctl_fd = req->ctl_fd > 0 ? req->ctl_fd : -1,
		.ctx = &x,
	};
	uint8_t *b;
	long len;
	int rc;

	c->guest_errno = 0;
	memset(res, 0, sizeof(*res));
	if (!req->argv || !req->argv[0] || req->stdout_fd < 0 ||
	    req->stderr_fd < 0)
		return agent_wire__fail(c, -EINVAL, "nothing to run");
	rc = agent_wire__request(c, &b);
	if (rc)
		return rc;
	len = exec_encode(c, req, b + EMBER_AGENT_HDR_SIZE,
			  EMBER_AGENT_MAX_PAYLOAD);
	if (len < 0)
		return (int)len;
	op.stream = agent_wire__new_stream(c);
	agent_wire__tx_commit(c, EMBER_AGENT_EXEC, op.stream, (uint32_t)len);
	if (req->timeout_ms)
		op.deadline_ms =
			clock__mono_ms() + req->timeout_ms + EXEC_GRACE_MS;
	rc = agent_wire__pump(&op);
	if (rc == -ETIMEDOUT)
		agent_wire__fail(
			c, rc, "no EXIT from the agent %d s after the timeout",
			EXEC_GRACE_MS / 1000);
	return rc;
}

int agent_client__attach(struct agent_client *c, uint32_t pid,
			 const struct agent_exec_req *req,
			 struct agent_exec_result *res)
{
	struct agent_exec_req r = *req;
	struct exec_ctx x = { .req = &r,
			      .res = res,
			      .stdin_closed = req->stdin_fd < 0 && !req->tty,
			      .want_started = 1 };
	struct op op = {
		.c = c,
		.frame = exec_frame,
		.input = exec_input,
		.signal = exec_signal,
		.control = exec_control,
		.in_fd = req->stdin_fd,
		.sig_fd = req->sig_fd,
		.ctl_fd = req->ctl_fd > 0 ? req->ctl_fd : -1,
		.ctx = &x,
	};
	uint8_t *b;
	int rc;

	c->guest_errno = 0;
	memset(res, 0, sizeof(*res));
	r.detach = false; /* an attach streams to the end */
	if (!pid)
		return agent_wire__fail(c, -EINVAL, "no pid 0");
	if (req->stdout_fd < 0 || req->stderr_fd < 0)
		return agent_wire__fail(c, -EINVAL, "no output fds");
	rc = agent_wire__request(c, &b);
	if (rc)
		return rc;
	ember_agent_put32(b + EMBER_AGENT_HDR_SIZE, pid);
	op.stream = agent_wire__new_stream(c);
	agent_wire__tx_commit(c, EMBER_AGENT_ATTACH, op.stream, 4);
	return agent_wire__pump(&op);
}

struct list_ctx {
	struct agent_proc *procs;
	size_t n;
};

static int list_frame(struct op *op, const struct ember_agent_hdr *h,
		      const uint8_t *p)
{
	struct list_ctx *x = op->ctx;
	struct ember_agent_proc e;
	size_t off = 0, n = 0;
	int rc;

	if (h->type != EMBER_AGENT_PROCS)
		return agent_wire__other_frame(op, h, p);
	while ((rc = ember_agent_proc_next(p, h->len, &off, &e)) > 0)
		n++;
	if (rc < 0)
		return agent_wire__fail(op->c, -EPROTO,
					"malformed PROCS frame");
	x->procs = n ? calloc(n, sizeof(*x->procs)) : NULL;
	if (n && !x->procs)
		return agent_wire__fail(op->c, -ENOMEM, "out of memory");
	off = 0;
	while (ember_agent_proc_next(p, h->len, &off, &e) > 0) {
		struct agent_proc *a = &x->procs[x->n++];
		size_t k;

		a->pid = e.pid;
		a->exited = e.flags & EMBER_AGENT_PROC_EXITED;
		a->attached = e.flags & EMBER_AGENT_PROC_ATTACHED;
		a->tty = e.flags & EMBER_AGENT_PROC_TTY;
		a->kind = e.kind;
		a->code = e.code;
		a->dropped = e.dropped;
		/* argv joined by spaces, the last NUL dropped. */
		for (k = 0; k < e.cmd_len; k++) {
			char ch = e.cmd[k];

			a->cmd[k] = ch == '\0'		      ? ' ' :
				    (ch < 0x20 || ch == 0x7f) ? '?' :
								ch;
		}
		while (k && a->cmd[k - 1] == ' ')
			k--;
		a->cmd[k] = '\0';
	}
	op->done = 1;
	return 0;
}

int agent_client__list(struct agent_client *c, struct agent_proc **procs,
		       size_t *n, int timeout_ms)
{
	struct list_ctx x = { 0 };
	struct op op = {
		.c = c,
		.frame = list_frame,
		.in_fd = -1,
		.sig_fd = -1,
		.ctl_fd = -1,
		.ctx = &x,
	};
	uint8_t *b;
	int rc;

	c->guest_errno = 0;
	*procs = NULL;
	*n = 0;
	rc = agent_wire__request(c, &b);
	if (rc)
		return rc;
	op.stream = agent_wire__new_stream(c);
	agent_wire__tx_commit(c, EMBER_AGENT_LIST, op.stream, 0);
	if (timeout_ms > 0)
		op.deadline_ms = clock__mono_ms() + timeout_ms;
	rc = agent_wire__pump(&op);
	if (rc) {
		free(x.procs);
		return rc;
	}
	*procs = x.procs;
	*n = x.n;
	return 0;
}
