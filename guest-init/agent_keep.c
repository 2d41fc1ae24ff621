// SPDX-License-Identifier: Apache-2.0
/*
 * The guest agent's kept processes (agent_keep.h, PROTOCOL.md): the
 * socket that names each, its buffer while detached, the keeper's side of
 * ATTACH and LIST and the relay of an attaching connection.
 *
 * Between the keeper and a relay the frames are the protocol's own, on
 * stream 0: the relay sends ATTACH (or LIST) first, the keeper answers
 * STARTED (or PROCS, or ERROR and closes), then STDOUT/STDERR and EXIT;
 * the relay forwards STDIN, KILL and RESIZE, at most EMBER_AGENT_CHUNK
 * bytes a frame.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>

#include "agent_exec.h"
#include "agent_keep.h"

#define KEEP_NAME "ember-agent.keep."
/* How long a peer agent process may take to answer or to read. */
#define PEER_WAIT_MS 30000
#define LIST_WAIT_MS 1000
#define RX_CAP	     (EMBER_AGENT_HDR_SIZE + EMBER_AGENT_CHUNK)

/* Buffered output: STDOUT and STDERR chunks in order. */
struct keep_chunk {
	struct keep_chunk *next;
	uint16_t type;
	uint32_t off, len, cap; /* live bytes are data[off..len) */
	uint8_t data[];
};

struct keep {
	uint32_t pid;
	struct keep_chunk *head, *tail;
	size_t bytes; /* buffered */
	uint64_t dropped; /* dropped, oldest first, over EMBER_AGENT_KEEP_BUF */
	uint8_t exit[EMBER_AGENT_EXIT_SIZE]; /* with slot.exited */
	char cmd[EMBER_AGENT_PROC_CMD_MAX];
	uint32_t cmd_len;
	int started; /* a relay: the keeper said STARTED */
	uint8_t *rx; /* frames from att_fd; RX_CAP bytes */
	size_t rx_have;
};

static socklen_t keep_addr(uint32_t pid, struct sockaddr_un *sa)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* Abstract: sun_path[0] is NUL; gone with its last socket. */
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, KEEP_NAME "%u",
		     pid);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			   (size_t)n);
}

/* Write all of @len bytes to the non-blocking @fd: 0, or -1 (gone, stuck). */
static int fd_write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
		} else if (n < 0 && errno == EAGAIN) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };

			if (poll(&pfd, 1, PEER_WAIT_MS) <= 0)
				return -1;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else {
			return -1;
		}
	}
	return 0;
}

static int frame_write(int fd, uint16_t type, const void *payload, size_t len)
{
	uint8_t hdr[EMBER_AGENT_HDR_SIZE];

	ember_agent_hdr_encode(hdr, type, 0, (uint32_t)len);
	if (fd_write_all(fd, hdr, sizeof(hdr)) < 0)
		return -1;
	return len ? fd_write_all(fd, payload, len) : 0;
}

static int frame_error(int fd, int err, const char *msg)
{
	uint8_t b[256];
	long n = ember_agent_error_encode(b, sizeof(b), (uint32_t)err, msg);

	return frame_write(fd, EMBER_AGENT_ERROR, b, (size_t)n);
}

/*
 * Read from @fd into @rx (@cap bytes, *@have so far) toward one frame: 1
 * when a whole one is there (@h its header, its payload after it), 0 when
 * more is to come, -1 at EOF, an error or a bad header.
 */
static int frame_read(int fd, uint8_t *rx, size_t cap, size_t *have,
		      struct ember_agent_hdr *h)
{
	size_t need = EMBER_AGENT_HDR_SIZE;
	ssize_t n;

	if (*have >= EMBER_AGENT_HDR_SIZE) {
		if (ember_agent_hdr_decode(rx, *have, h) < 0 ||
		    EMBER_AGENT_HDR_SIZE + (size_t)h->len > cap)
			return -1;
		need += h->len;
	}
	if (*have < need) {
		n = read(fd, rx + *have, need - *have);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (n <= 0)
			return -1;
		*have += (size_t)n;
	}
	if (*have < EMBER_AGENT_HDR_SIZE)
		return 0;
	if (ember_agent_hdr_decode(rx, *have, h) < 0 ||
	    EMBER_AGENT_HDR_SIZE + (size_t)h->len > cap)
		return -1;
	return *have == EMBER_AGENT_HDR_SIZE + h->len;
}

/* frame_read(), waiting up to @ms for the whole frame. */
static int frame_read_wait(int fd, uint8_t *rx, size_t cap,
			   struct ember_agent_hdr *h, int ms)
{
	int64_t end = agent_conn__now_ms() + ms;
	size_t have = 0;
	int rc;

	while ((rc = frame_read(fd, rx, cap, &have, h)) == 0) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int64_t left = end - agent_conn__now_ms();

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return -1;
	}
	return rc;
}

/* Append @n bytes of @type to @k, dropping the oldest over the bound. */
static void buffer_add(struct keep *k, uint16_t type, const uint8_t *buf,
		       size_t n)
{
	struct keep_chunk *t = k->tail;

	if (n > EMBER_AGENT_KEEP_BUF) {
		k->dropped += n - EMBER_AGENT_KEEP_BUF;
		buf += n - EMBER_AGENT_KEEP_BUF;
		n = EMBER_AGENT_KEEP_BUF;
	}
	while (k->head && k->bytes + n > EMBER_AGENT_KEEP_BUF) {
		struct keep_chunk *h = k->head;
		size_t take = h->len - h->off;

		if (take > k->bytes + n - EMBER_AGENT_KEEP_BUF)
			take = k->bytes + n - EMBER_AGENT_KEEP_BUF;
		h->off += (uint32_t)take;
		k->bytes -= take;
		k->dropped += take;
		if (h->off == h->len) {
			k->head = h->next;
			if (!k->head)
				k->tail = NULL;
			free(h);
		}
	}
	t = k->tail;
	if (!t || t->type != type || t->cap - t->len < n) {
		size_t cap = n < 4096 ? 4096 : n;

		t = malloc(sizeof(*t) + cap);
		if (!t) {
			k->dropped += n;
			return;
		}
		*t = (struct keep_chunk){ .type = type, .cap = (uint32_t)cap };
		if (k->tail)
			k->tail->next = t;
		else
			k->head = t;
		k->tail = t;
	}
	memcpy(t->data + t->len, buf, n);
	t->len += (uint32_t)n;
	k->bytes += n;
}

static void buffer_free(struct keep *k)
{
	while (k->head) {
		struct keep_chunk *h = k->head;

		k->head = h->next;
		free(h);
	}
	k->tail = NULL;
	k->bytes = 0;
}

static void drop_attacher(struct slot *s)
{
	agent_conn__close_fd(&s->att_fd);
	if (s->kp)
		s->kp->rx_have = 0;
}

void agent_keep__release(struct slot *s)
{
	agent_conn__close_fd(&s->listen_fd);
	agent_conn__close_fd(&s->att_fd);
	if (s->kp) {
		buffer_free(s->kp);
		free(s->kp->rx);
		free(s->kp);
		s->kp = NULL;
	}
	s->keep = s->detached = s->exited = 0;
}

/* Listen on kept exec @s's socket: 0 or an errno. */
static int keep_listen(struct slot *s)
{
	struct sockaddr_un sa;
	socklen_t len = keep_addr(s->kp->pid, &sa);

	s->listen_fd =
		socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->listen_fd < 0 ||
	    bind(s->listen_fd, (struct sockaddr *)&sa, len) < 0 ||
	    listen(s->listen_fd, 8) < 0) {
		int err = errno;

		agent_conn__close_fd(&s->listen_fd);
		return err;
	}
	return 0;
}

int agent_keep__start(struct conn *c, struct slot *s,
		      const struct ember_agent_exec *e)
{
	uint8_t p[EMBER_AGENT_STARTED_SIZE];
	struct keep *k;
	int err;

	k = calloc(1, sizeof(*k));
	if (!k)
		return ENOMEM;
	k->pid = (uint32_t)s->pid;
	for (uint32_t i = 0; i < e->argc; i++) {
		size_t n = strlen(e->argv[i]) + 1;

		if (n > sizeof(k->cmd) - k->cmd_len)
			n = sizeof(k->cmd) - k->cmd_len;
		memcpy(k->cmd + k->cmd_len, e->argv[i], n);
		k->cmd_len += (uint32_t)n;
	}
	s->kp = k;
	err = keep_listen(s);
	if (err) {
		agent_keep__release(s);
		return err;
	}
	s->keep = 1;
	ember_agent_started_encode(p, k->pid, 0);
	agent_conn__send(c, EMBER_AGENT_STARTED, s->stream, p, sizeof(p));
	if (e->flags & EMBER_AGENT_F_DETACH)
		s->detached = 1;
	return 0;
}

/* Whether @s's output goes to its stream on @c. */
static int on_stream(const struct conn *c, const struct slot *s)
{
	return !s->keep || (!s->detached && !c->dead);
}

void agent_keep__emit(struct conn *c, struct slot *s, uint16_t type,
		      const void *buf, size_t n)
{
	if (on_stream(c, s)) {
		agent_conn__send(c, type, s->stream, buf, n);
		return;
	}
	if (s->att_fd >= 0 && s->detached &&
	    frame_write(s->att_fd, type, buf, n) == 0)
		return;
	drop_attacher(s);
	buffer_add(s->kp, type, buf, n);
}

int agent_keep__exit(struct conn *c, struct slot *s, const uint8_t *p)
{
	if (on_stream(c, s)) {
		agent_conn__send(c, EMBER_AGENT_EXIT, s->stream, p,
				 EMBER_AGENT_EXIT_SIZE);
		agent_keep__release(s);
		return 1;
	}
	/*
	 * Collected once an attacher has its EXIT: the socket goes first, so
	 * that an ATTACH sent after that EXIT finds nothing (ESRCH) rather
	 * than a keeper about to close (EIO).
	 */
	if (s->att_fd >= 0 && s->detached) {
		agent_conn__close_fd(&s->listen_fd);
		if (frame_write(s->att_fd, EMBER_AGENT_EXIT, p,
				EMBER_AGENT_EXIT_SIZE) == 0) {
			agent_keep__release(s);
			return 1;
		}
		/*
		 * The attacher went: kept for the next one after all, unless
		 * the socket cannot come back (then nobody could collect it).
		 */
		if (keep_listen(s)) {
			agent_keep__release(s);
			return 1;
		}
	}
	drop_attacher(s);
	memcpy(s->kp->exit, p, sizeof(s->kp->exit));
	s->exited = 1;
	return 0;
}

int agent_keep__count(const struct conn *c)
{
	int n = 0;

	for (int i = 0; i < EMBER_AGENT_MAX_EXECS; i++)
		n += c->slots[i].kind == SLOT_EXEC && c->slots[i].keep;
	return n;
}

int agent_keep__orphan(struct conn *c)
{
	for (int i = 0; i < EMBER_AGENT_MAX_EXECS; i++) {
		struct slot *s = &c->slots[i];

		if (s->kind == SLOT_EXEC && s->keep) {
			s->detached = 1;
		} else if (s->kind == SLOT_ATTACH) {
			agent_keep__release(s);
			s->kind = SLOT_FREE;
		}
	}
	return agent_keep__count(c);
}

/* @s's PROCS entry at *@off of @out (@cap bytes): 0 or no room. */
static int proc_entry(const struct conn *c, const struct slot *s, uint8_t *out,
		      size_t cap, size_t *off)
{
	struct ember_agent_proc p = {
		.pid = s->kp->pid,
		.dropped = s->kp->dropped,
		.cmd = s->kp->cmd,
		.cmd_len = s->kp->cmd_len,
	};

	if (s->exited) {
		p.flags |= EMBER_AGENT_PROC_EXITED;
		ember_agent_exit_decode(s->kp->exit, sizeof(s->kp->exit),
					&p.kind, &p.code);
	}
	if (on_stream(c, s) || s->att_fd >= 0)
		p.flags |= EMBER_AGENT_PROC_ATTACHED;
	if (s->tty_fd >= 0)
		p.flags |= EMBER_AGENT_PROC_TTY;
	return ember_agent_proc_encode(out, cap, off, &p);
}

/* Send what @s's buffer holds through @send, oldest first; empty it. */
static int flush(struct conn *c, struct slot *s, int to_fd)
{
	struct keep *k = s->kp;

	while (k->head) {
		struct keep_chunk *h = k->head;

		while (h->off < h->len) {
			size_t n = h->len - h->off;

			if (n > EMBER_AGENT_CHUNK)
				n = EMBER_AGENT_CHUNK;
			if (to_fd < 0)
				agent_conn__send(c, h->type, s->stream,
						 h->data + h->off, n);
			else if (frame_write(to_fd, h->type, h->data + h->off,
					     n) < 0)
				return -1;
			h->off += (uint32_t)n;
			k->bytes -= n;
		}
		k->head = h->next;
		if (!k->head)
			k->tail = NULL;
		free(h);
	}
	return 0;
}

/*
 * Whether @c's connection is already gone though not yet seen so: a
 * resume resets every vsock connection, and the host's next connection
 * may ATTACH before this process read the reset.
 */
static int conn_gone(struct conn *c)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN | POLLRDHUP };

	if (c->dead)
		return 1;
	if (poll(&pfd, 1, 0) == 1 &&
	    (pfd.revents & (POLLERR | POLLHUP | POLLRDHUP)))
		c->dead = 1; /* the loop orphans the rest */
	return c->dead;
}

/* A peer agent process connected to @s's socket: serve its request. */
static void keeper_accept(struct conn *c, struct slot *s)
{
	uint8_t rx[EMBER_AGENT_HDR_SIZE + 64], p[EMBER_AGENT_STARTED_SIZE];
	uint8_t out[EMBER_AGENT_PROC_HDR + EMBER_AGENT_PROC_CMD_MAX];
	struct ember_agent_hdr h;
	size_t off = 0;
	int fd, rc;

	fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	rc = frame_read_wait(fd, rx, sizeof(rx), &h, LIST_WAIT_MS);
	if (rc <= 0)
		goto out;
	if (h.type == EMBER_AGENT_LIST) {
		proc_entry(c, s, out, sizeof(out), &off);
		frame_write(fd, EMBER_AGENT_PROCS, out, off);
		goto out;
	}
	if (h.type != EMBER_AGENT_ATTACH)
		goto out;
	if (!s->detached && conn_gone(c))
		s->detached = 1;
	if (!s->detached || s->att_fd >= 0) {
		char msg[96];

		snprintf(msg, sizeof(msg),
			 "process %u is attached to another connection",
			 s->kp->pid);
		frame_error(fd, EBUSY, msg);
		goto out;
	}
	if (!s->kp->rx && !(s->kp->rx = malloc(RX_CAP))) {
		frame_error(fd, ENOMEM, "keep: out of memory");
		goto out;
	}
	ember_agent_started_encode(p, s->kp->pid, s->kp->dropped);
	if (frame_write(fd, EMBER_AGENT_STARTED, p, sizeof(p)) < 0 ||
	    flush(c, s, fd) < 0)
		goto out;
	if (s->exited) {
		agent_conn__close_fd(&s->listen_fd); /* first: as in exit() */
		frame_write(fd, EMBER_AGENT_EXIT, s->kp->exit,
			    sizeof(s->kp->exit));
		close(fd);
		agent_keep__release(s);
		s->kind = SLOT_FREE;
		return;
	}
	s->att_fd = fd;
	s->kp->rx_have = 0;
	return;
out:
	close(fd);
}

/* The attacher of kept exec @s sent something: STDIN, KILL, RESIZE. */
static void keeper_input(struct conn *c, struct slot *s)
{
	struct keep *k = s->kp;
	struct ember_agent_hdr h;
	struct winsize ws = { 0 };
	const uint8_t *pl;
	int sig, rc;

	for (int i = 0; i < 16 && s->att_fd >= 0; i++) {
		rc = frame_read(s->att_fd, k->rx, RX_CAP, &k->rx_have, &h);
		if (rc < 0)
			drop_attacher(s); /* its connection is gone */
		if (rc <= 0)
			return;
		k->rx_have = 0;
		pl = k->rx + EMBER_AGENT_HDR_SIZE;
		switch (h.type) {
		case EMBER_AGENT_STDIN:
			if (s->pid)
				agent_exec__stdin_slot(c, s, pl, h.len);
			break;
		case EMBER_AGENT_KILL:
			if (ember_agent_kill_decode(pl, h.len, &sig) == 0 &&
			    s->pid && kill(-s->pid, sig) < 0)
				frame_error(s->att_fd, errno, "kill");
			break;
		case EMBER_AGENT_RESIZE:
			ember_agent_winsize_decode(pl, h.len, &ws.ws_row,
						   &ws.ws_col);
			if (s->tty_fd < 0)
				frame_error(s->att_fd, ENOTTY,
					    "the exec has no terminal");
			else
				ioctl(s->tty_fd, TIOCSWINSZ, &ws);
			break;
		default:
			drop_attacher(s);
			return;
		}
	}
}

/* An ATTACH relay @s fails: ERROR on its stream, the stream ends. */
static void relay_fail(struct conn *c, struct slot *s, int err, const char *msg)
{
	agent_conn__send_error(c, s->stream, err, msg);
	agent_keep__release(s);
	s->kind = SLOT_FREE;
}

/* The keeper that relay @s attached to sent frames: to the host. */
static void relay_output(struct conn *c, struct slot *s)
{
	struct keep *k = s->kp;
	struct ember_agent_hdr h;
	const uint8_t *pl;
	int rc;

	for (int i = 0; i < 16; i++) {
		rc = frame_read(s->att_fd, k->rx, RX_CAP, &k->rx_have, &h);
		if (rc < 0) {
			relay_fail(c, s, EIO,
				   "the agent process keeping it went away");
			return;
		}
		if (rc == 0)
			return;
		k->rx_have = 0;
		pl = k->rx + EMBER_AGENT_HDR_SIZE;
		switch (h.type) {
		case EMBER_AGENT_STARTED:
			k->started = 1;
			/* fall through */
		case EMBER_AGENT_STDOUT:
		case EMBER_AGENT_STDERR:
			agent_conn__send(c, h.type, s->stream, pl, h.len);
			break;
		case EMBER_AGENT_ERROR:
			agent_conn__send(c, h.type, s->stream, pl, h.len);
			if (k->started)
				break; /* a RESIZE's or KILL's: not the end */
			agent_keep__release(s);
			s->kind = SLOT_FREE;
			return;
		case EMBER_AGENT_EXIT:
			agent_conn__send(c, h.type, s->stream, pl, h.len);
			agent_keep__release(s);
			s->kind = SLOT_FREE;
			return;
		default:
			relay_fail(c, s, EIO,
				   "a bad frame from the agent process "
				   "keeping it");
			return;
		}
	}
}

void agent_keep__relay(struct conn *c, struct slot *s,
		       const struct ember_agent_hdr *h, const uint8_t *payload)
{
	uint32_t off = 0;
	int rc = 0;

	do {
		uint32_t n = h->len - off;

		if (n > EMBER_AGENT_CHUNK)
			n = EMBER_AGENT_CHUNK;
		rc = frame_write(s->att_fd, h->type, payload + off, n);
		off += n;
	} while (rc == 0 && off < h->len);
	if (rc < 0)
		relay_fail(c, s, EIO, "the agent process keeping it went away");
}

int agent_keep__watch(struct conn *c, struct pollfd *pfd, struct slot **who,
		      int n)
{
	for (int i = 0; i < EMBER_AGENT_MAX_EXECS; i++) {
		struct slot *s = &c->slots[i];

		if (s->kind != SLOT_EXEC && s->kind != SLOT_ATTACH)
			continue;
		if (s->listen_fd >= 0) {
			pfd[n] = (struct pollfd){ .fd = s->listen_fd,
						  .events = POLLIN };
			who[n++] = s;
		}
		if (s->att_fd >= 0) {
			pfd[n] = (struct pollfd){ .fd = s->att_fd,
						  .events = POLLIN };
			who[n++] = s;
		}
	}
	return n;
}

void agent_keep__ready(struct conn *c, struct slot *s, int fd)
{
	if (s->kind == SLOT_EXEC && fd == s->listen_fd)
		keeper_accept(c, s);
	else if (s->kind == SLOT_EXEC && fd == s->att_fd)
		keeper_input(c, s);
	else if (s->kind == SLOT_ATTACH && fd == s->att_fd)
		relay_output(c, s);
}

/* @c's kept exec of @pid, or NULL. */
static struct slot *own_kept(struct conn *c, uint32_t pid)
{
	for (int i = 0; i < EMBER_AGENT_MAX_EXECS; i++) {
		struct slot *s = &c->slots[i];

		if (s->kind == SLOT_EXEC && s->keep && s->kp->pid == pid)
			return s;
	}
	return NULL;
}

/* ATTACH to a process this connection's own agent process keeps. */
static void attach_own(struct conn *c, struct slot *s, uint32_t stream)
{
	uint8_t p[EMBER_AGENT_STARTED_SIZE];
	char msg[96];

	if (!s->detached || s->att_fd >= 0) {
		snprintf(msg, sizeof(msg),
			 "process %u is attached to another connection",
			 s->kp->pid);
		agent_conn__send_error(c, stream, EBUSY, msg);
		return;
	}
	if (agent_conn__slot(c, stream)) {
		agent_conn__send_error(c, stream, EBUSY, "stream id in use");
		return;
	}
	s->stream = stream;
	s->detached = 0;
	ember_agent_started_encode(p, s->kp->pid, s->kp->dropped);
	agent_conn__send(c, EMBER_AGENT_STARTED, stream, p, sizeof(p));
	flush(c, s, -1);
	if (s->exited) {
		agent_conn__send(c, EMBER_AGENT_EXIT, stream, s->kp->exit,
				 sizeof(s->kp->exit));
		agent_keep__release(s);
		s->kind = SLOT_FREE;
	}
}

void agent_keep__attach(struct conn *c, const struct ember_agent_hdr *h,
			const uint8_t *payload)
{
	struct sockaddr_un sa;
	struct slot *s;
	uint32_t pid;
	char msg[96];
	int fd;

	if (h->len != 4 || !(pid = ember_agent_get32(payload))) {
		agent_conn__send_proto_error(c, h->stream, EMBER_AGENT_E_FIELD);
		return;
	}
	s = own_kept(c, pid);
	if (s) {
		attach_own(c, s, h->stream);
		return;
	}
	s = agent_conn__open_stream(c, h->stream, 0);
	if (!s)
		return;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		agent_conn__send_errno(c, h->stream, errno, "socket");
		return;
	}
	if (connect(fd, (struct sockaddr *)&sa, keep_addr(pid, &sa)) < 0) {
		snprintf(msg, sizeof(msg),
			 "no process %u kept by the agent (not started "
			 "with KEEP, or ended and collected)",
			 pid);
		agent_conn__send_error(c, h->stream, ESRCH, msg);
		close(fd);
		return;
	}
	s->kp = calloc(1, sizeof(*s->kp));
	if (s->kp)
		s->kp->rx = malloc(RX_CAP);
	if (!s->kp || !s->kp->rx ||
	    frame_write(fd, EMBER_AGENT_ATTACH, payload, 4) < 0) {
		agent_conn__send_error(c, h->stream, ENOMEM, "attach");
		close(fd);
		agent_keep__release(s);
		return;
	}
	s->kp->pid = pid;
	s->att_fd = fd;
	s->kind = SLOT_ATTACH;
}

/* Add the PROCS entry of the process another agent process keeps. */
static void list_peer(uint32_t pid, uint8_t *out, size_t cap, size_t *off)
{
	static uint8_t rx[EMBER_AGENT_HDR_SIZE + EMBER_AGENT_PROC_HDR +
			  EMBER_AGENT_PROC_CMD_MAX];
	struct ember_agent_hdr h;
	struct sockaddr_un sa;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return;
	if (connect(fd, (struct sockaddr *)&sa, keep_addr(pid, &sa)) == 0 &&
	    frame_write(fd, EMBER_AGENT_LIST, NULL, 0) == 0 &&
	    frame_read_wait(fd, rx, sizeof(rx), &h, LIST_WAIT_MS) > 0 &&
	    h.type == EMBER_AGENT_PROCS && cap - *off >= h.len) {
		memcpy(out + *off, rx + EMBER_AGENT_HDR_SIZE, h.len);
		*off += h.len;
	}
	close(fd);
}

void agent_keep__list(struct conn *c, const struct ember_agent_hdr *h)
{
	uint32_t seen[1024];
	size_t off = 0, nseen = 0;
	char line[512];
	uint8_t *out;
	FILE *f;

	out = malloc(EMBER_AGENT_MAX_PAYLOAD);
	if (!out) {
		agent_conn__send_error(c, h->stream, ENOMEM, "list");
		return;
	}
	for (int i = 0; i < EMBER_AGENT_MAX_EXECS; i++) {
		struct slot *s = &c->slots[i];

		if (s->kind == SLOT_EXEC && s->keep &&
		    proc_entry(c, s, out, EMBER_AGENT_MAX_PAYLOAD, &off) == 0 &&
		    nseen < 1024)
			seen[nseen++] = s->kp->pid;
	}
	/* The others' sockets: abstract names show in /proc/net/unix. */
	f = fopen("/proc/net/unix", "re");
	while (f && fgets(line, sizeof(line), f)) {
		char *p = strstr(line, " @" KEEP_NAME), *end;
		unsigned long pid;
		size_t i;

		if (!p)
			continue;
		pid = strtoul(p + 2 + strlen(KEEP_NAME), &end, 10);
		if (!pid || pid > UINT32_MAX || (*end != '\n' && *end))
			continue;
		for (i = 0; i < nseen && seen[i] != pid; i++)
			;
		if (i < nseen || nseen >= 1024)
			continue;
		seen[nseen++] = (uint32_t)pid;
		list_peer((uint32_t)pid, out, EMBER_AGENT_MAX_PAYLOAD, &off);
	}
	if (f)
		fclose(f);
	agent_conn__send(c, EMBER_AGENT_PROCS, h->stream, out, off);
	free(out);
}
