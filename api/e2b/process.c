// SPDX-License-Identifier: Apache-2.0
/*
 * envd's process.Process service (e2b.h; the schema in envd's
 * process.proto): Start and Connect stream a command's events, List,
 * SendInput, SendSignal and CloseStdin act on the processes started here.
 *
 * Each process is one agent exec (agent_client.h) on a connection of its
 * own, run by two threads: the exec thread blocks in agent_client__exec()
 * with the write ends of two pipes as stdout and stderr, the read end of a
 * pipe as stdin (when asked for) and the read end of a pipe of struct
 * signalfd_siginfo as its signal source; the reader thread polls the
 * output pipes, base64s each chunk into a data event and writes it to
 * every subscriber (the Start stream, Connect streams), and when both
 * pipes reach their end (the exec thread closes them once the exec is
 * over) it sends the end event and the END_STREAM envelope and forgets
 * the process.  Subscribers that go away are dropped; the process lives on
 * (E2B's background commands), until it ends, is killed, its
 * Connect-Timeout-Ms lapses or its sandbox goes (procs__drop()).
 *
 * A process that asks for no cwd runs in E2B_HOME, or in / when the
 * guest has no such directory (home_cwd()).
 *
 * Pids are ember's own numbers (ember does not see the guest's): one
 * counter for the whole server, from PID_FIRST, so a pid names one
 * process of one sandbox.
 *
 * Locking: the table's one mutex guards the table, every process's
 * reference count, pending subscribers, flags and exec result, and the
 * config (List copies it under the lock).  A process's active subscribers
 * belong to its reader thread alone; its stdin pipe has a mutex of its
 * own, as a write to it may wait for the guest.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "../../guest-init/protocol.h"
#include "../sandbox/agent_client.h"
#include "../sandbox/clock.h"
#include "connect_rpc.h"
#include "e2b.h"

#define SERVICE		  "/process.Process/"
#define STREAM_TYPE	  "application/connect+json"
#define PID_FIRST	  1000u
#define MAX_PROCS	  1024 /* running processes, all sandboxes */
#define MAX_PROCS_SANDBOX 128 /* of one sandbox */
#define MAX_ARGS	  255 /* the agent takes 256 argv entries */
#define MAX_TAG		  256 /* bytes of a tag */
#define READ_CHUNK	  65536 /* bytes of output per data event, at most */
#define STDIN_WAIT_MS	  10000 /* SendInput waits this long for room */
#define GONE_CHECK_MS	  2000 /* idle readers look for gone clients */
#define FREE_WAIT_MS	  3000 /* procs__free() waits for threads */
#define KEEPALIVE_DEFAULT 50 /* s, envd's Keepalive-Ping-Interval */

struct sub {
	struct sub *next;
	struct e2b_stream *s; /* the producer's reference */
	int64_t deadline_ms; /* clock__mono_ms(); 0: none */
	unsigned int timeout_ms; /* what the client asked, for messages */
};

struct proc {
	struct proc *next; /* in the table */
	struct e2b_procs *tab;
	int refs;
	bool listed; /* in the table: visible to List, Connect... */
	bool dropped; /* procs__drop(): kill, end the subscribers */
	uint32_t pid;
	char *tag; /* NULL: none */
	json_t *config; /* ProcessConfig, as List shows it */
	struct e2b_server *srv;
	struct e2b_guest g; /* info only (rec's objects NULL) */
	struct agent_client *c; /* the exec thread's until it is done */
	char **argv; /* one block */
	char **env; /* guest__env()'s block */
	char *cwd;
	bool cwd_default; /* not asked for: "/" when it is missing */
	int64_t deadline_ms; /* Connect-Timeout-Ms: killed then; 0: never */
	struct sub *pending; /* new subscribers, for the reader */
	/* The exec's outcome, set by the exec thread. */
	int rc;
	struct agent_exec_result res;
	int guest_errno;
	char err[256];
	/* fds: all close-on-exec; read ends of the pipes stay open until
	   the process is freed, so that writers never get SIGPIPE. */
	int out_r, out_w, err_r, err_w;
	int in_r, sig_r, sig_w;
	int wake; /* eventfd: pending subscribers, dropped */
	pthread_mutex_t in_lock; /* guards in_w */
	int in_w; /* -1: no stdin, or closed */
	bool has_stdin;
	bool signalled; /* (atomic) a KILL may have crossed the exit */
};

/* Whether a sandbox has E2B_HOME, found out once (home_cwd()). */
struct home {
	struct home *next;
	char id[SANDBOX_ID_LEN + 1];
	bool present;
};

struct e2b_procs {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a thread ended */
	struct proc *head;
	struct home *homes;
	uint32_t next_pid;
	unsigned int count; /* listed processes */
	unsigned int threads; /* exec and reader threads alive */
	bool closing; /* procs__stop(), procs__free(): the server is */
};

/* --- small things ---------------------------------------------------- */

/* @src as a message safe for JSON: non-ASCII and control bytes as '?'. */
static void clean_text(char *dst, size_t cap, const char *src)
{
	size_t i;

	for (i = 0; src[i] && i + 1 < cap; i++) {
		unsigned char ch = (unsigned char)src[i];

		dst[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
	}
	if (cap)
		dst[i] = 0;
}

__attribute__((format(printf, 3, 4))) static int
unary_error(struct e2b_resp *resp, const char *code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	clean_text(msg, sizeof(msg), msg);
	return e2b__reply_json(resp, connect__http_status(code),
			       connect__error(code, msg));
}

/* A streaming call's error: 200 with only the END_STREAM envelope. */
__attribute__((format(printf, 3, 4))) static int
stream_error(struct e2b_resp *resp, const char *code, const char *fmt, ...)
{
	char msg[512];
	uint8_t *b;
	size_t n;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	clean_text(msg, sizeof(msg), msg);
	b = connect__end_stream(code, msg, &n);
	if (!b)
		return e2b__reply_json(resp, 500, NULL);
	rc = e2b__reply_bytes(resp, 200, STREAM_TYPE, b, n);
	free(b);
	return rc;
}

/* {"event": @inner} (stolen) in an envelope; NULL when out of memory. */
static uint8_t *event_envelope(const char *kind, json_t *inner, size_t *n)
{
	json_t *j = json_pack("{s:{s:o}}", "event", kind, inner);
	uint8_t *b;

	if (!j)
		return NULL;
	b = connect__envelope(0, j, n);
	json_decref(j);
	return b;
}

/* Go's names of signals (syscall.Signal.String()), which envd reports. */
static const char *signal_name(int sig, char *buf, size_t cap)
{
	static const char *const names[] = {
		[1] = "hangup",
		[2] = "interrupt",
		[3] = "quit",
		[4] = "illegal instruction",
		[5] = "trace/breakpoint trap",
		[6] = "aborted",
		[7] = "bus error",
		[8] = "floating point exception",
		[9] = "killed",
		[10] = "user defined signal 1",
		[11] = "segmentation fault",
		[12] = "user defined signal 2",
		[13] = "broken pipe",
		[14] = "alarm clock",
		[15] = "terminated",
		[16] = "stack fault",
		[17] = "child exited",
		[18] = "continued",
		[19] = "stopped (signal)",
		[20] = "stopped",
		[21] = "stopped (tty input)",
		[22] = "stopped (tty output)",
		[23] = "urgent I/O condition",
		[24] = "CPU time limit exceeded",
		[25] = "file size limit exceeded",
		[26] = "virtual timer expired",
		[27] = "profiling timer expired",
		[28] = "window changed",
		[29] = "I/O possible",
		[30] = "power failure",
		[31] = "bad system call",
	};

	if (sig > 0 && sig < (int)(sizeof(names) / sizeof(names[0])))
		return names[sig];
	snprintf(buf, cap, "signal %d", sig);
	return buf;
}

/* --- the table ------------------------------------------------------- */

struct e2b_procs *procs__new(void)
{
	struct e2b_procs *t = calloc(1, sizeof(*t));
	pthread_condattr_t ca;

	if (!t)
		return NULL;
	pthread_mutex_init(&t->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->cond, &ca);
	pthread_condattr_destroy(&ca);
	t->next_pid = PID_FIRST;
	return t;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void proc_free(struct proc *p)
{
	close_fd(&p->out_r);
	close_fd(&p->out_w);
	close_fd(&p->err_r);
	close_fd(&p->err_w);
	close_fd(&p->in_r);
	close_fd(&p->in_w);
	close_fd(&p->sig_r);
	close_fd(&p->sig_w);
	close_fd(&p->wake);
	pthread_mutex_destroy(&p->in_lock);
	json_decref(p->config);
	free(p->tag);
	free(p->argv);
	free(p->env);
	free(p->cwd);
	free(p);
}

static void proc_put(struct proc *p)
{
	struct e2b_procs *t = p->tab;
	int left;

	pthread_mutex_lock(&t->lock);
	left = --p->refs;
	pthread_mutex_unlock(&t->lock);
	if (!left)
		proc_free(p);
}

/*
 * Take @p out of the table, with the table's reference.  Under the lock;
 * never the last reference (its reader thread holds one until after).
 */
static void unlist(struct proc *p)
{
	struct e2b_procs *t = p->tab;
	struct proc **pp;

	if (!p->listed)
		return;
	for (pp = &t->head; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	p->listed = false;
	t->count--;
	p->refs--;
}

/* Send @sig to @p's process group (the agent reads the struct). */
static void proc_signal(struct proc *p, int sig)
{
	struct signalfd_siginfo si;
	ssize_t n;

	memset(&si, 0, sizeof(si));
	si.ssi_signo = (uint32_t)sig;
	__atomic_store_n(&p->signalled, true, __ATOMIC_RELAXED);
	/* Full pipe: signals enough are queued already. */
	n = write(p->sig_w, &si, sizeof(si));
	(void)n;
}

static void proc_wake(struct proc *p)
{
	uint64_t one = 1;
	ssize_t n = write(p->wake, &one, sizeof(one));

	(void)n;
}

/* End every process of @id; under the lock. */
static void drop_locked(struct e2b_procs *t, const char *id)
{
	struct proc *p = t->head, *next;

	for (; p; p = next) {
		next = p->next;
		if (id && strcmp(p->g.info.id, id))
			continue;
		p->dropped = true;
		unlist(p);
		proc_signal(p, SIGKILL);
		proc_wake(p);
	}
}

/* Forget what home_cwd() learnt about @id (NULL: all); under the lock. */
static void forget_homes(struct e2b_procs *t, const char *id)
{
	struct home **hp = &t->homes, *h;

	while ((h = *hp)) {
		if (id && strcmp(h->id, id)) {
			hp = &h->next;
			continue;
		}
		*hp = h->next;
		free(h);
	}
}

void procs__drop(struct e2b_procs *t, const char *id)
{
	if (!t || !id)
		return;
	pthread_mutex_lock(&t->lock);
	drop_locked(t, id);
	forget_homes(t, id);
	pthread_mutex_unlock(&t->lock);
}

void procs__stop(struct e2b_procs *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	t->closing = true;
	drop_locked(t, NULL);
	pthread_mutex_unlock(&t->lock);
}

void procs__free(struct e2b_procs *t)
{
	struct timespec dl;
	unsigned int left;

	if (!t)
		return;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += FREE_WAIT_MS / 1000;
	pthread_mutex_lock(&t->lock);
	t->closing = true;
	drop_locked(t, NULL);
	while (t->threads &&
	       pthread_cond_timedwait(&t->cond, &t->lock, &dl) != ETIMEDOUT)
		;
	left = t->threads;
	if (!left)
		forget_homes(t, NULL);
	pthread_mutex_unlock(&t->lock);
	/*
	 * Threads still waiting on a guest that does not answer keep using
	 * the table: it is left to the exiting process then.
	 */
	if (left)
		return;
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* The listed process of sandbox @id with @pid (or @tag); under the lock. */
static struct proc *find_locked(struct e2b_procs *t, const char *id,
				uint32_t pid, const char *tag)
{
	struct proc *p;

	for (p = t->head; p; p = p->next) {
		if (strcmp(p->g.info.id, id))
			continue;
		if (tag ? p->tag && !strcmp(p->tag, tag) : p->pid == pid)
			return p;
	}
	return NULL;
}

static void thread_done(struct e2b_procs *t)
{
	pthread_mutex_lock(&t->lock);
	t->threads--;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

/* --- the exec thread ------------------------------------------------- */

/*
 * The cwd of a process that asked for none: E2B_HOME, or "/" in a guest
 * without it (a template not made for E2B).  Asked once per sandbox, and
 * not by a failed exec retried elsewhere: the failed one could have eaten
 * a signal or input meant for the process.  Reading the directory as a
 * file answers EISDIR without starting anything in the guest.
 */
static const char *home_cwd(struct proc *p)
{
	struct e2b_procs *t = p->tab;
	struct home *h;
	int fd, rc, gerr;

	pthread_mutex_lock(&t->lock);
	for (h = t->homes; h && strcmp(h->id, p->g.info.id); h = h->next)
		;
	rc = h ? h->present : -1;
	pthread_mutex_unlock(&t->lock);
	if (rc >= 0)
		return rc ? E2B_HOME : "/";
	fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return E2B_HOME;
	rc = agent_client__read_file(p->c, E2B_HOME, fd, E2B_AGENT_TIMEOUT_MS);
	gerr = agent_client__guest_errno(p->c);
	close(fd);
	if (rc && rc != -EREMOTEIO)
		return E2B_HOME; /* the exec will say what is wrong */
	h = calloc(1, sizeof(*h));
	if (h) {
		snprintf(h->id, sizeof(h->id), "%s", p->g.info.id);
		h->present = !(rc == -EREMOTEIO && gerr == ENOENT);
		rc = h->present;
		pthread_mutex_lock(&t->lock);
		if (p->dropped) { /* forgotten already: not to be kept */
			free(h);
		} else {
			h->next = t->homes;
			t->homes = h;
		}
		pthread_mutex_unlock(&t->lock);
		return rc ? E2B_HOME : "/";
	}
	return rc == -EREMOTEIO && gerr == ENOENT ? "/" : E2B_HOME;
}

static void *exec_main(void *arg)
{
	struct proc *p = arg;
	struct e2b_procs *t = p->tab;
	struct agent_exec_req req = {
		.argv = (const char *const *)p->argv,
		.env = (const char *const *)p->env,
		.cwd = p->cwd,
		.stdin_fd = p->has_stdin ? p->in_r : -1,
		.stdout_fd = p->out_w,
		.stderr_fd = p->err_w,
		.sig_fd = p->sig_r,
	};
	struct agent_exec_result res = { 0 };
	int rc;

	if (p->cwd_default)
		req.cwd = home_cwd(p);
	rc = agent_client__exec(p->c, &req, &res);
	pthread_mutex_lock(&t->lock);
	p->rc = rc;
	p->res = res;
	if (rc < 0) {
		p->guest_errno = agent_client__guest_errno(p->c);
		clean_text(p->err, sizeof(p->err), agent_client__error(p->c));
	}
	/*
	 * Under the lock so that procs__free() knows the pool is left alone.
	 * A KILL or STDIN frame that crossed the EXIT gets an ERROR answer
	 * after it, which would trip the connection's next user: such a
	 * connection is not pooled.
	 */
	if (t->closing)
		agent_client__free(p->c);
	else
		guest__agent_done(p->srv, &p->g, p->c,
				  (rc == 0 || rc == -EREMOTEIO) &&
					  !p->has_stdin &&
					  !__atomic_load_n(&p->signalled,
							   __ATOMIC_RELAXED));
	p->c = NULL;
	pthread_mutex_unlock(&t->lock);
	/* The reader sees both ends and finishes. */
	close_fd(&p->out_w);
	close_fd(&p->err_w);
	proc_put(p);
	thread_done(t);
	return NULL;
}

/* --- the reader thread ----------------------------------------------- */

/* End @s with @tail (an END_STREAM envelope, or NULL) and drop it. */
static void sub_end(struct sub *s, const uint8_t *tail, size_t n)
{
	if (tail)
		e2b_stream__write(s->s, tail, n);
	e2b_stream__end(s->s);
	e2b_stream__put(s->s);
	free(s);
}

__attribute__((format(printf, 3, 4))) static void
sub_fail(struct sub *s, const char *code, const char *fmt, ...)
{
	char msg[512];
	uint8_t *b;
	size_t n = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	clean_text(msg, sizeof(msg), msg);
	b = connect__end_stream(code, msg, &n);
	sub_end(s, b, n);
	free(b);
}

/* Write @n bytes to every subscriber; drop those gone. */
static void broadcast(struct sub **list, const uint8_t *b, size_t n)
{
	struct sub **pp = list;

	while (*pp) {
		struct sub *s = *pp;

		if (e2b_stream__write(s->s, b, n) < 0) {
			*pp = s->next;
			sub_end(s, NULL, 0);
			continue;
		}
		pp = &s->next;
	}
}

/*
 * Read what @fd has (into @buf, READ_CHUNK bytes) as a data event of
 * @kind; false at its end.
 */
static bool pump(uint8_t *buf, struct sub **list, int fd, const char *kind)
{
	ssize_t r = read(fd, buf, READ_CHUNK);
	json_t *data;
	uint8_t *b;
	size_t n;

	if (r < 0)
		return errno == EINTR || errno == EAGAIN;
	if (r == 0)
		return false;
	if (!*list)
		return true; /* nobody listens: dropped, like envd */
	data = json_pack("{s:o}", kind, connect__bytes_json(buf, (size_t)r));
	b = data ? event_envelope("data", data, &n) : NULL;
	if (b)
		broadcast(list, b, n);
	free(b);
	return true;
}

/* The end event of @p's exec (rc 0), an envelope; NULL: no memory. */
static uint8_t *end_event(const struct proc *p, size_t *n)
{
	char status[64], buf[32];
	json_t *end;
	int code;
	bool exited = p->res.kind == EMBER_AGENT_EXITED;

	if (exited) {
		code = p->res.code;
		snprintf(status, sizeof(status), "exit status %d", code);
	} else {
		/* Go's ProcessState: -1 for a signal; the agent's own timeout
		   is a SIGKILL too. */
		code = -1;
		snprintf(status, sizeof(status), "signal: %s",
			 signal_name(p->res.kind == EMBER_AGENT_SIGNALLED ?
					     p->res.code :
					     SIGKILL,
				     buf, sizeof(buf)));
	}
	end = json_pack("{s:i, s:b, s:s}", "exitCode", code, "exited", exited,
			"status", status);
	if (end && code != 0 &&
	    json_object_set_new(end, "error", json_string(status))) {
		json_decref(end);
		end = NULL;
	}
	return end ? event_envelope("end", end, n) : NULL;
}

/* The process is over: tell every subscriber how, and forget it. */
static void finish(struct proc *p, struct sub *list)
{
	struct e2b_procs *t = p->tab;
	const char *code = NULL;
	uint8_t *ev = NULL, *tail = NULL;
	size_t evn = 0, tailn = 0;
	char msg[320];
	struct sub *s;

	pthread_mutex_lock(&t->lock);
	unlist(p);
	if (p->pending) {
		for (s = p->pending; s->next; s = s->next)
			;
		s->next = list;
		list = p->pending;
		p->pending = NULL;
	}
	pthread_mutex_unlock(&t->lock);
	if (!list)
		return;
	if (p->rc == 0) {
		ev = end_event(p, &evn);
		if (!ev) {
			code = "resource_exhausted";
			snprintf(msg, sizeof(msg), "out of memory");
		}
	} else if (p->rc == -EREMOTEIO) {
		/* The command or its cwd: what the client asked for. */
		code = "invalid_argument";
		snprintf(msg, sizeof(msg), "cannot start the process: %s",
			 p->err);
	} else if (p->rc == -E2BIG) {
		code = "invalid_argument";
		snprintf(msg, sizeof(msg), "%s", p->err);
	} else {
		code = "unavailable";
		snprintf(msg, sizeof(msg), "lost the sandbox's agent: %s",
			 p->err);
	}
	tail = connect__end_stream(code, msg, &tailn);
	if (ev)
		broadcast(&list, ev, evn);
	while (list) {
		s = list;
		list = s->next;
		sub_end(s, tail, tailn);
	}
	free(ev);
	free(tail);
}

static void *reader_main(void *arg)
{
	struct proc *p = arg;
	struct e2b_procs *t = p->tab;
	struct sub *list = NULL, **pp, *s;
	bool out_open = true, err_open = true, killed = false;
	bool drop_done = false;
	int64_t last_gone_check = clock__mono_ms();
	uint8_t buf[READ_CHUNK]; /* a thread's own 8 MiB stack */

	while (out_open || err_open) {
		struct pollfd pfd[3];
		int64_t now = clock__mono_ms(), next = now + GONE_CHECK_MS;
		bool dropped, closing;
		uint64_t junk;
		ssize_t r;

		pthread_mutex_lock(&t->lock);
		while (p->pending) {
			s = p->pending;
			p->pending = s->next;
			s->next = list;
			list = s;
		}
		dropped = p->dropped;
		closing = t->closing;
		pthread_mutex_unlock(&t->lock);
		if (dropped && !drop_done) {
			while (list) {
				s = list;
				list = s->next;
				if (closing)
					sub_fail(s, "unavailable",
						 "ember-e2b is stopping");
				else
					sub_fail(s, "unavailable",
						 "the sandbox %s was stopped",
						 p->g.info.id);
			}
			drop_done = killed = true; /* drop sent SIGKILL */
		}
		for (pp = &list; *pp;) {
			s = *pp;
			if (s->deadline_ms && now >= s->deadline_ms) {
				*pp = s->next;
				sub_fail(s, "deadline_exceeded",
					 "the process stream timed out after "
					 "%u ms (Connect-Timeout-Ms)",
					 s->timeout_ms);
				continue;
			}
			if (now - last_gone_check >= GONE_CHECK_MS &&
			    e2b_stream__gone(s->s)) {
				*pp = s->next;
				sub_end(s, NULL, 0);
				continue;
			}
			if (s->deadline_ms && s->deadline_ms < next)
				next = s->deadline_ms;
			pp = &s->next;
		}
		if (now - last_gone_check >= GONE_CHECK_MS)
			last_gone_check = now;
		if (p->deadline_ms && !killed) {
			if (now >= p->deadline_ms) {
				proc_signal(p, SIGKILL);
				killed = true;
			} else if (p->deadline_ms < next) {
				next = p->deadline_ms;
			}
		}
		pfd[0] = (struct pollfd){ .fd = out_open ? p->out_r : -1,
					  .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = err_open ? p->err_r : -1,
					  .events = POLLIN };
		pfd[2] = (struct pollfd){ .fd = p->wake, .events = POLLIN };
		if (poll(pfd, 3, (int)(next > now ? next - now : 0)) <= 0)
			continue;
		if (pfd[2].revents) {
			r = read(p->wake, &junk, sizeof(junk));
			(void)r;
		}
		if (pfd[0].revents)
			out_open = pump(buf, &list, p->out_r, "stdout");
		if (pfd[1].revents)
			err_open = pump(buf, &list, p->err_r, "stderr");
	}
	finish(p, list);
	proc_put(p);
	thread_done(t);
	return NULL;
}

/* --- requests -------------------------------------------------------- */

/* Whether @o's member @k is absent or null (proto3's default). */
static json_t *member(const json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_null(v) ? NULL : v;
}

/* ProcessSelector: *@pid, or *@tag (borrowed from @req).  -EINVAL. */
static int selector(const json_t *req, uint32_t *pid, const char **tag,
		    char *err, size_t errlen)
{
	const json_t *sel = member(req, "process"), *v;
	uint64_t n;

	*tag = NULL;
	*pid = 0;
	if (!json_is_object(sel)) {
		snprintf(err, errlen, "process: a ProcessSelector is needed");
		return -EINVAL;
	}
	v = member(sel, "pid");
	if (v) {
		if (connect__json_uint(v, UINT32_MAX, &n)) {
			snprintf(err, errlen, "process.pid: not a uint32");
			return -EINVAL;
		}
		*pid = (uint32_t)n;
		return 0;
	}
	v = member(sel, "tag");
	if (json_is_string(v)) {
		*tag = json_string_value(v);
		return 0;
	}
	snprintf(err, errlen, "process: the selector needs a pid or a tag");
	return -EINVAL;
}

/*
 * The listed process that @req selects in @g, with a reference; NULL
 * with the unary error answered.
 */
static struct proc *lookup(struct e2b_server *srv, const json_t *req,
			   const struct e2b_guest *g, struct e2b_resp *resp)
{
	struct e2b_procs *t = srv->procs;
	char err[128];
	const char *tag;
	struct proc *p;
	uint32_t pid;

	if (selector(req, &pid, &tag, err, sizeof(err))) {
		unary_error(resp, "invalid_argument", "%s", err);
		return NULL;
	}
	pthread_mutex_lock(&t->lock);
	p = find_locked(t, g->info.id, pid, tag);
	if (p)
		p->refs++;
	pthread_mutex_unlock(&t->lock);
	if (p)
		return p;
	if (tag)
		unary_error(resp, "not_found",
			    "process with tag %.*s not found", MAX_TAG, tag);
	else
		unary_error(resp, "not_found", "process with pid %u not found",
			    pid);
	return NULL;
}

/* Keepalive envelope and interval of a streaming answer. */
static struct e2b_stream *new_stream(const struct e2b_req *r)
{
	uint64_t s = e2b__header_num(r, "Keepalive-Ping-Interval", 6,
				     KEEPALIVE_DEFAULT);
	json_t *ka = json_pack("{s:{s:{}}}", "event", "keepalive");
	struct e2b_stream *st = NULL;
	uint8_t *b;
	size_t n;

	if (!ka)
		return NULL;
	if (s < 1)
		s = 1;
	if (s > 3600)
		s = 3600;
	b = connect__envelope(0, ka, &n);
	json_decref(ka);
	if (b)
		st = e2b_stream__new(b, n, (unsigned int)s * 1000);
	free(b);
	return st;
}

/* A subscriber on a new stream whose first message is start {pid}. */
static struct sub *new_sub(const struct e2b_req *r, uint32_t pid)
{
	uint64_t ms = e2b__header_num(r, "Connect-Timeout-Ms", 10, 0);
	struct sub *s = calloc(1, sizeof(*s));
	uint8_t *b;
	size_t n;
	int rc;

	if (!s)
		return NULL;
	s->s = new_stream(r);
	b = event_envelope("start", json_pack("{s:I}", "pid", (json_int_t)pid),
			   &n);
	rc = s->s && b ? e2b_stream__write(s->s, b, n) : -ENOMEM;
	free(b);
	if (rc) {
		if (s->s) {
			e2b_stream__put(s->s);
			e2b_stream__put(s->s);
		}
		free(s);
		return NULL;
	}
	if (ms) {
		if (ms > UINT32_MAX)
			ms = UINT32_MAX;
		s->timeout_ms = (unsigned int)ms;
		s->deadline_ms = clock__mono_ms() + (int64_t)ms;
	}
	return s;
}

/* Resolve the requested cwd against the home as envd does. */
static char *resolve_cwd(const char *cwd, bool *dflt)
{
	char *out;

	*dflt = !cwd || !*cwd;
	if (*dflt || !strcmp(cwd, "~"))
		return strdup(E2B_HOME);
	if (cwd[0] == '/')
		return strdup(cwd);
	if (!strncmp(cwd, "~/", 2))
		cwd += 2;
	if (asprintf(&out, "%s/%s", E2B_HOME, cwd) < 0)
		return NULL;
	return out;
}

/*
 * Check StartRequest.process into @p's argv, cwd and config.  0, or
 * -EINVAL with @err, -ENOMEM.
 */
static int start_config(struct proc *p, const json_t *pc, char *err,
			size_t errlen)
{
	const json_t *cmd = member(pc, "cmd"), *args = member(pc, "args");
	const json_t *envs = member(pc, "envs"), *cwd = member(pc, "cwd");
	const char *k;
	json_t *v;
	size_t i, n, bytes;
	char *at;

	if (!json_is_string(cmd) || !json_string_length(cmd)) {
		snprintf(err, errlen, "process.cmd: a command is needed");
		return -EINVAL;
	}
	if (args && !json_is_array(args)) {
		snprintf(err, errlen, "process.args: not an array");
		return -EINVAL;
	}
	n = args ? json_array_size(args) : 0;
	if (n > MAX_ARGS) {
		snprintf(err, errlen, "process.args: more than %d", MAX_ARGS);
		return -EINVAL;
	}
	bytes = json_string_length(cmd) + 1;
	for (i = 0; i < n; i++) {
		v = json_array_get(args, i);
		if (!json_is_string(v)) {
			snprintf(err, errlen, "process.args[%zu]: not a string",
				 i);
			return -EINVAL;
		}
		bytes += json_string_length(v) + 1;
	}
	if (envs && !json_is_object(envs)) {
		snprintf(err, errlen, "process.envs: not an object");
		return -EINVAL;
	}
	json_object_foreach((json_t *)envs, k, v)
	{
		if (!json_is_string(v) || !*k || strchr(k, '=')) {
			snprintf(err, errlen,
				 "process.envs: %.64s is not a NAME: string",
				 k);
			return -EINVAL;
		}
	}
	if (cwd && !json_is_string(cwd)) {
		snprintf(err, errlen, "process.cwd: not a string");
		return -EINVAL;
	}
	/* NUL bytes would cut a string short: the agent takes C strings. */
	if (strlen(json_string_value(cmd)) != json_string_length(cmd) ||
	    (cwd &&
	     strlen(json_string_value(cwd)) != json_string_length(cwd))) {
		snprintf(err, errlen, "process: a NUL byte in cmd or cwd");
		return -EINVAL;
	}
	p->argv = malloc((n + 2) * sizeof(char *) + bytes);
	if (!p->argv)
		return -ENOMEM;
	at = (char *)(p->argv + n + 2);
	for (i = 0; i <= n; i++) {
		const json_t *s = i ? json_array_get(args, i - 1) : cmd;

		p->argv[i] = at;
		memcpy(at, json_string_value(s), json_string_length(s) + 1);
		at += json_string_length(s) + 1;
	}
	p->argv[n + 1] = NULL;
	p->cwd = resolve_cwd(cwd ? json_string_value(cwd) : NULL,
			     &p->cwd_default);
	if (!p->cwd)
		return -ENOMEM;
	p->config = json_pack(
		"{s:s, s:o, s:o, s:s}", "cmd", p->argv[0], "args",
		args ? json_deep_copy(args) : json_array(), "envs",
		envs ? json_deep_copy(envs) : json_object(), "cwd", p->cwd);
	return p->config ? 0 : -ENOMEM;
}

static struct proc *proc_new(struct e2b_server *srv, const struct e2b_guest *g)
{
	struct proc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->tab = srv->procs;
	p->srv = srv;
	p->g.info = g->info;
	p->g.port = g->port;
	p->out_r = p->out_w = p->err_r = p->err_w = -1;
	p->in_r = p->in_w = p->sig_r = p->sig_w = p->wake = -1;
	pthread_mutex_init(&p->in_lock, NULL);
	return p;
}

static int pipe_fds(int *r, int *w, bool w_nonblock)
{
	int fds[2];

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	*r = fds[0];
	*w = fds[1];
	if (w_nonblock && fcntl(*w, F_SETFL, O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static int proc_fds(struct proc *p)
{
	int rc;

	rc = pipe_fds(&p->out_r, &p->out_w, false);
	if (!rc)
		rc = pipe_fds(&p->err_r, &p->err_w, false);
	if (!rc)
		rc = pipe_fds(&p->sig_r, &p->sig_w, true);
	if (!rc && p->has_stdin)
		rc = pipe_fds(&p->in_r, &p->in_w, true);
	if (!rc) {
		p->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (p->wake < 0)
			rc = -errno;
	}
	return rc;
}

/*
 * Put @p in the table with the next pid, unless the limits say no (the
 * answer's error in @code/@err).  Takes the table's reference.
 */
static int proc_list(struct proc *p, const char **code, char *err,
		     size_t errlen)
{
	struct e2b_procs *t = p->tab;
	unsigned int mine = 0;
	struct proc *q;
	int rc = 0;

	pthread_mutex_lock(&t->lock);
	for (q = t->head; q; q = q->next)
		mine += !strcmp(q->g.info.id, p->g.info.id);
	if (t->closing) {
		*code = "unavailable";
		snprintf(err, errlen, "the server is stopping");
		rc = -ESHUTDOWN;
	} else if (t->count >= MAX_PROCS || mine >= MAX_PROCS_SANDBOX) {
		*code = "resource_exhausted";
		snprintf(err, errlen,
			 "too many processes (%u in this sandbox, at most "
			 "%d)",
			 mine, MAX_PROCS_SANDBOX);
		rc = -EAGAIN;
	} else {
		do {
			p->pid = t->next_pid++;
			if (t->next_pid < PID_FIRST)
				t->next_pid = PID_FIRST;
		} while (find_locked(t, p->g.info.id, p->pid, NULL));
		p->next = t->head;
		t->head = p;
		t->count++;
		p->listed = true;
		p->refs++;
		t->threads += 2; /* counted before they exist: see start() */
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

static int start_thread(struct proc *p, void *(*fn)(void *))
{
	pthread_attr_t a;
	pthread_t th;
	int rc;

	pthread_mutex_lock(&p->tab->lock);
	p->refs++;
	pthread_mutex_unlock(&p->tab->lock);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&th, &a, fn, p);
	pthread_attr_destroy(&a);
	if (rc) {
		pthread_mutex_lock(&p->tab->lock);
		p->refs--; /* the caller holds another */
		pthread_mutex_unlock(&p->tab->lock);
		thread_done(p->tab);
	}
	return -rc;
}

/*
 * Take back a listed @p whose reader never ran, and the @threads it was
 * counted for that did not start.
 */
static void abandon(struct proc *p, unsigned int threads)
{
	struct e2b_procs *t = p->tab;

	pthread_mutex_lock(&t->lock);
	unlist(p);
	t->threads -= threads;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

static int start(struct e2b_server *srv, const struct e2b_req *r,
		 struct e2b_guest *g, const json_t *req, struct e2b_resp *resp)
{
	const json_t *pc = member(req, "process"), *v;
	const char *code = "invalid_argument";
	struct agent_client *c;
	struct e2b_stream *st;
	struct proc *p;
	struct sub *s;
	char err[512];
	uint64_t ms;
	int rc;

	if (!json_is_object(pc))
		return stream_error(resp, code,
				    "process: a ProcessConfig is "
				    "needed");
	if (member(req, "pty"))
		return stream_error(resp, "unimplemented",
				    "Not supported by ember: a PTY (start "
				    "the command without pty)");
	v = member(req, "stdin");
	if (v && !json_is_boolean(v))
		return stream_error(resp, code, "stdin: not a boolean");
	p = proc_new(srv, g);
	if (!p)
		return stream_error(resp, "resource_exhausted",
				    "out of memory");
	p->refs = 1; /* this function's */
	p->has_stdin = json_is_true(v);
	v = member(req, "tag");
	if (v && (!json_is_string(v) || json_string_length(v) > MAX_TAG ||
		  strlen(json_string_value(v)) != json_string_length(v))) {
		proc_free(p);
		return stream_error(resp, code,
				    "tag: not a string of at most "
				    "%d bytes",
				    MAX_TAG);
	}
	if (v && !(p->tag = strdup(json_string_value(v)))) {
		proc_free(p);
		return stream_error(resp, "resource_exhausted",
				    "out of memory");
	}
	rc = start_config(p, pc, err, sizeof(err));
	if (rc) {
		proc_free(p);
		return rc == -ENOMEM ? stream_error(resp, "resource_exhausted",
						    "out of memory") :
				       stream_error(resp, code, "%s", err);
	}
	p->env = guest__env(g, member(pc, "envs"));
	if (!p->env) {
		proc_free(p);
		return stream_error(resp, "invalid_argument",
				    "too many environment variables (or out "
				    "of memory)");
	}
	rc = proc_fds(p);
	if (rc) {
		proc_free(p);
		return stream_error(resp, "resource_exhausted",
				    "cannot set up the process: %s",
				    strerror(-rc));
	}
	ms = e2b__header_num(r, "Connect-Timeout-Ms", 10, 0);
	if (ms)
		p->deadline_ms = clock__mono_ms() + (int64_t)ms;
	c = guest__agent(srv, g, err, sizeof(err));
	if (!c) {
		proc_free(p);
		return stream_error(resp, "unavailable",
				    "cannot reach the sandbox's agent: %s",
				    err);
	}
	p->c = c;
	rc = proc_list(p, &code, err, sizeof(err));
	if (rc) {
		guest__agent_done(srv, g, c, true);
		p->c = NULL;
		proc_free(p);
		return stream_error(resp, code, "%s", err);
	}
	s = new_sub(r, p->pid);
	if (!s) {
		abandon(p, 2);
		guest__agent_done(srv, g, c, true);
		p->c = NULL;
		proc_put(p);
		return stream_error(resp, "resource_exhausted",
				    "out of memory");
	}
	/* The reader's from now on, which may end it at any time. */
	st = s->s;
	pthread_mutex_lock(&p->tab->lock);
	p->pending = s;
	pthread_mutex_unlock(&p->tab->lock);
	if (start_thread(p, reader_main)) {
		/* No reader: nobody would end it.  Take it all back. */
		p->pending = NULL;
		abandon(p, 1);
		sub_end(s, NULL, 0);
		e2b_stream__put(st);
		guest__agent_done(srv, g, c, true);
		p->c = NULL;
		proc_put(p);
		return stream_error(resp, "resource_exhausted",
				    "cannot start the process's threads");
	}
	if (start_thread(p, exec_main)) {
		/* The reader ends the stream with this once the pipes end. */
		pthread_mutex_lock(&p->tab->lock);
		p->rc = -EAGAIN;
		snprintf(p->err, sizeof(p->err), "cannot start a thread");
		guest__agent_done(srv, g, c, true);
		p->c = NULL;
		pthread_mutex_unlock(&p->tab->lock);
		close_fd(&p->out_w);
		close_fd(&p->err_w);
	}
	rc = e2b__reply_stream(resp, STREAM_TYPE, st);
	proc_put(p);
	return rc;
}

static int connect_proc(struct e2b_server *srv, const struct e2b_req *r,
			struct e2b_guest *g, const json_t *req,
			struct e2b_resp *resp)
{
	struct e2b_procs *t = srv->procs;
	struct e2b_stream *st = NULL;
	const char *tag;
	struct proc *p;
	struct sub *s = NULL;
	char err[128];
	uint32_t pid;

	if (selector(req, &pid, &tag, err, sizeof(err)))
		return stream_error(resp, "invalid_argument", "%s", err);
	pthread_mutex_lock(&t->lock);
	p = find_locked(t, g->info.id, pid, tag);
	if (p) {
		/* A new stream's first write does not wait. */
		s = new_sub(r, p->pid);
		if (s) {
			st = s->s; /* the connection's reference */
			s->next = p->pending;
			p->pending = s;
			proc_wake(p);
		}
	}
	pthread_mutex_unlock(&t->lock);
	if (!p) {
		if (tag)
			return stream_error(resp, "not_found",
					    "process with tag %.*s not found",
					    MAX_TAG, tag);
		return stream_error(resp, "not_found",
				    "process with pid %u not found", pid);
	}
	if (!s)
		return stream_error(resp, "resource_exhausted",
				    "out of memory");
	return e2b__reply_stream(resp, STREAM_TYPE, st);
}

static int list(struct e2b_server *srv, struct e2b_guest *g,
		struct e2b_resp *resp)
{
	struct e2b_procs *t = srv->procs;
	json_t *arr = json_array(), *o;
	struct proc *p;
	bool oom = !arr;

	pthread_mutex_lock(&t->lock);
	for (p = t->head; p && !oom; p = p->next) {
		if (strcmp(p->g.info.id, g->info.id))
			continue;
		o = json_pack("{s:o, s:I}", "config", json_deep_copy(p->config),
			      "pid", (json_int_t)p->pid);
		if (o && p->tag &&
		    json_object_set_new(o, "tag", json_string(p->tag))) {
			json_decref(o);
			o = NULL;
		}
		oom = !o || json_array_append_new(arr, o);
	}
	pthread_mutex_unlock(&t->lock);
	if (oom) {
		json_decref(arr);
		return unary_error(resp, "resource_exhausted", "out of memory");
	}
	return e2b__reply_json(resp, 200, json_pack("{s:o}", "processes", arr));
}

/* Write all @n bytes to @p's stdin within STDIN_WAIT_MS. */
static int stdin_write(struct proc *p, const uint8_t *b, size_t n,
		       const char **code, char *err, size_t errlen)
{
	int64_t end = clock__mono_ms() + STDIN_WAIT_MS;
	int rc = 0;

	pthread_mutex_lock(&p->in_lock);
	if (p->in_w < 0) {
		*code = "failed_precondition";
		snprintf(err, errlen,
			 p->has_stdin ? "stdin of process %u is closed" :
					"process %u was started without stdin "
					"(stdin: true enables it)",
			 p->pid);
		rc = -EPIPE;
	}
	while (!rc && n) {
		ssize_t w = write(p->in_w, b, n);

		if (w > 0) {
			b += w;
			n -= (size_t)w;
		} else if (w < 0 && errno == EAGAIN) {
			if (clock__mono_ms() >= end ||
			    clock__wait_fd(p->in_w, POLLOUT, end) < 0 ||
			    clock__mono_ms() >= end) {
				*code = "deadline_exceeded";
				snprintf(err, errlen,
					 "process %u does not read its stdin",
					 p->pid);
				rc = -ETIMEDOUT;
			}
		} else if (w < 0 && errno != EINTR) {
			*code = "internal";
			snprintf(err, errlen, "writing stdin: %s",
				 strerror(errno));
			rc = -errno;
		}
	}
	pthread_mutex_unlock(&p->in_lock);
	return rc;
}

static int send_input(struct e2b_server *srv, struct e2b_guest *g,
		      const json_t *req, struct e2b_resp *resp)
{
	const json_t *in = member(req, "input"), *v;
	const char *code = NULL;
	uint8_t *b = NULL;
	size_t n = 0;
	struct proc *p;
	char err[256];
	int rc;

	if (in && !json_is_object(in))
		return unary_error(resp, "invalid_argument",
				   "input: not an object");
	if (member(in, "pty"))
		return unary_error(resp, "unimplemented",
				   "Not supported by ember: a PTY");
	v = member(in, "stdin");
	if (v && connect__json_bytes(v, &b, &n))
		return unary_error(resp, "invalid_argument",
				   "input.stdin: not base64");
	p = lookup(srv, req, g, resp);
	if (!p) {
		free(b);
		return 0;
	}
	rc = stdin_write(p, b, n, &code, err, sizeof(err));
	proc_put(p);
	free(b);
	if (rc)
		return unary_error(resp, code, "%s", err);
	return e2b__reply_json(resp, 200, json_object());
}

static int close_stdin(struct e2b_server *srv, struct e2b_guest *g,
		       const json_t *req, struct e2b_resp *resp)
{
	struct proc *p = lookup(srv, req, g, resp);
	bool had;

	if (!p)
		return 0;
	pthread_mutex_lock(&p->in_lock);
	had = p->has_stdin;
	close_fd(&p->in_w); /* the agent reads its end: EOF in the guest */
	pthread_mutex_unlock(&p->in_lock);
	proc_put(p);
	if (!had)
		return unary_error(resp, "failed_precondition",
				   "the process was started without stdin");
	return e2b__reply_json(resp, 200, json_object());
}

/* SendSignalRequest.signal: an enum name or number.  0 when bad. */
static int parse_signal(const json_t *v)
{
	const char *s = json_string_value(v);
	uint64_t n;

	if (s) {
		if (!strcmp(s, "SIGNAL_SIGKILL") || !strcmp(s, "SIGKILL"))
			return SIGKILL;
		if (!strcmp(s, "SIGNAL_SIGTERM") || !strcmp(s, "SIGTERM"))
			return SIGTERM;
	}
	if (json_is_integer(v) && !connect__json_uint(v, 64, &n) && n)
		return (int)n;
	return 0;
}

static int send_signal(struct e2b_server *srv, struct e2b_guest *g,
		       const json_t *req, struct e2b_resp *resp)
{
	int sig = parse_signal(member(req, "signal"));
	struct proc *p;

	if (!sig)
		return unary_error(resp, "invalid_argument",
				   "signal: SIGNAL_SIGKILL or SIGNAL_SIGTERM "
				   "is needed");
	p = lookup(srv, req, g, resp);
	if (!p)
		return 0;
	proc_signal(p, sig);
	proc_put(p);
	return e2b__reply_json(resp, 200, json_object());
}

int process__handle(struct e2b_server *srv, const struct e2b_req *r,
		    struct e2b_guest *g, struct e2b_resp *resp)
{
	const char *m = r->path + strlen(SERVICE), *code;
	bool streaming;
	char err[256];
	json_t *req;
	int rc;

	if (strncmp(r->path, SERVICE, strlen(SERVICE)))
		return unary_error(resp, "unimplemented", "no such service");
	streaming = !strcmp(m, "Start") || !strcmp(m, "Connect");
	if (strcmp(m, "Start") && strcmp(m, "Connect") && strcmp(m, "List") &&
	    strcmp(m, "SendInput") && strcmp(m, "SendSignal") &&
	    strcmp(m, "CloseStdin")) {
		if (!strcmp(m, "Update"))
			return unary_error(resp, "unimplemented",
					   "Not supported by ember: a PTY (so "
					   "none to resize)");
		if (!strcmp(m, "StreamInput"))
			return unary_error(
				resp, "unimplemented",
				"Not supported by ember: StreamInput "
				"(use SendInput)");
		return unary_error(resp, "unimplemented",
				   "process.Process has no method %.64s", m);
	}
	if (strcmp(r->method, "POST")) {
		if (streaming)
			return stream_error(resp, "unimplemented",
					    "Connect calls are POST");
		return unary_error(resp, "unimplemented",
				   "Connect calls are POST");
	}
	if (!r->body) {
		if (streaming)
			return stream_error(resp, "invalid_argument",
					    "no request body");
		return unary_error(resp, "invalid_argument", "no request body");
	}
	req = connect__request(r->body, r->len, streaming, &code, err,
			       sizeof(err));
	if (!req) {
		if (streaming)
			return stream_error(resp, code, "%s", err);
		return unary_error(resp, code, "%s", err);
	}
	if (!strcmp(m, "Start"))
		rc = start(srv, r, g, req, resp);
	else if (!strcmp(m, "Connect"))
		rc = connect_proc(srv, r, g, req, resp);
	else if (!strcmp(m, "List"))
		rc = list(srv, g, resp);
	else if (!strcmp(m, "SendInput"))
		rc = send_input(srv, g, req, resp);
	else if (!strcmp(m, "SendSignal"))
		rc = send_signal(srv, g, req, resp);
	else
		rc = close_stdin(srv, g, req, resp);
	json_decref(req);
	return rc;
}
