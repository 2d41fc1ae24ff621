// SPDX-License-Identifier: Apache-2.0
/*
 * The table of processes started through envd's process service
 * (procs.h), and each process's life.
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
 * A PTY process (Start's pty) is a TTY exec: its terminal's output comes
 * as stdout and goes out as pty data, SendInput's bytes go to the stdin
 * pipe (the terminal's input), Update's sizes to a pipe of RESIZE records
 * (the exec's ctl_fd).
 *
 * A process that asks for no cwd runs in E2B_HOME, or in the guest's
 * default (the image's WorkingDir, else /) when the guest has no such
 * directory (home_cwd()).  It runs as the request's user (envd_path.h),
 * with the guest's default environment (the image's Env, the user's
 * HOME, USER, LOGNAME) under the sandbox's and the request's variables.
 *
 * Processes outlive a park (PROTOCOL.md, "Processes that outlive their
 * connection"): Start runs an exec with KEEP and DETACH (its pid, the
 * guest's, is the process's pid, known before the start event) and the
 * exec thread then ATTACHes to it on the same connection, so that nothing
 * of its output is lost.  A park cuts that connection: the exec thread
 * ends, its streams end and the table forgets it (procs__drop() does, on
 * a pause, without a signal), but the guest runs it on and keeps its
 * output (1 MiB).  After the resume procs__list_guest() finds it in the
 * agent's LIST and procs__adopt() lists it again with an exec thread that
 * ATTACHes to it; what Start said of it (its tag, its config) is
 * remembered for that (struct memo, in memory: lost with the server).
 * A guest whose agent knows no KEEP gets a plain exec, killed with its
 * connection, under one of ember's own pids: one counter for the whole
 * server, from PID_FIRST.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "../../guest-init/protocol.h"
#include "../sandbox/clock.h"
#include "connect_rpc.h"
#include "proc_event.h"
#include "proc_sub.h"
#include "procs.h"

#define PID_FIRST	  1000u
#define MAX_PROCS	  1024 /* running processes, all sandboxes */
#define MAX_PROCS_SANDBOX 128 /* of one sandbox */
#define READ_CHUNK	  65536 /* bytes of output per data event, at most */
#define GONE_CHECK_MS	  2000 /* idle readers look for gone clients */
#define FREE_WAIT_MS	  3000 /* procs__free() waits for threads */
#define MAX_MEMOS	  1024 /* kept processes remembered, all sandboxes */
#define ADOPT_TRIES	  10 /* LISTs while the process is attached */
#define ADOPT_WAIT_MS	  300 /* between them */

/* What Start said of a kept process, for List and Connect after a park. */
struct memo {
	struct memo *next;
	char id[SANDBOX_ID_LEN + 1];
	uint32_t pid;
	char *tag; /* NULL: none */
	json_t *config;
	bool has_stdin;
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
	struct memo *memos; /* newest first */
	unsigned int nmemos;
	uint32_t next_pid;
	unsigned int count; /* listed processes */
	unsigned int threads; /* exec and reader threads alive */
	bool closing; /* procs__stop(), procs__free(): the server is */
};

/* --- the table ------------------------------------------------------- */

struct e2b_procs *procs__new(void)
{
	struct e2b_procs *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	pthread_mutex_init(&t->lock, NULL);
	clock__cond_init(&t->cond);
	t->next_pid = PID_FIRST;
	return t;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void procs__proc_free(struct proc *p)
{
	close_fd(&p->out_r);
	close_fd(&p->out_w);
	close_fd(&p->err_r);
	close_fd(&p->err_w);
	close_fd(&p->in_r);
	close_fd(&p->in_w);
	close_fd(&p->sig_r);
	close_fd(&p->sig_w);
	close_fd(&p->ctl_r);
	close_fd(&p->ctl_w);
	close_fd(&p->wake);
	pthread_mutex_destroy(&p->in_lock);
	json_decref(p->config);
	free(p->tag);
	free(p->argv);
	free(p->env);
	free(p->cwd);
	free(p->user);
	free(p);
}

void procs__put(struct proc *p)
{
	struct e2b_procs *t = p->tab;
	int left;

	pthread_mutex_lock(&t->lock);
	left = --p->refs;
	pthread_mutex_unlock(&t->lock);
	if (!left)
		procs__proc_free(p);
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
void procs__signal(struct proc *p, int sig)
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

int procs__resize(struct proc *p, uint16_t rows, uint16_t cols)
{
	struct agent_exec_ctl r = { AGENT_EXEC_CTL_RESIZE, rows, cols };
	ssize_t n;

	if (!p->pty)
		return -ENOTTY;
	/* Full pipe: the agent is behind; a size that is lost is stale. */
	n = write(p->ctl_w, &r, sizeof(r));
	(void)n;
	return 0;
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
		/* Only a server that stops kills: a park keeps them. */
		if (t->closing)
			procs__signal(p, SIGKILL);
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

static void memo_free(struct memo *m)
{
	free(m->tag);
	json_decref(m->config);
	free(m);
}

/* Forget what Start said of @pid of @id (@pid 0: all of @id, @id NULL:
   all); under the lock. */
static void memo_del(struct e2b_procs *t, const char *id, uint32_t pid)
{
	struct memo **mp = &t->memos, *m;

	while ((m = *mp)) {
		if ((id && strcmp(m->id, id)) || (pid && m->pid != pid)) {
			mp = &m->next;
			continue;
		}
		*mp = m->next;
		t->nmemos--;
		memo_free(m);
	}
}

/* Remember what Start said of @p (a kept process); under the lock. */
static void memo_add(struct e2b_procs *t, const struct proc *p)
{
	struct memo *m = calloc(1, sizeof(*m)), **mp;

	if (!m)
		return;
	snprintf(m->id, sizeof(m->id), "%s", p->g.info.id);
	m->pid = p->pid;
	m->has_stdin = p->has_stdin;
	m->config = json_deep_copy(p->config);
	m->tag = p->tag ? strdup(p->tag) : NULL;
	if (!m->config || (p->tag && !m->tag)) {
		memo_free(m);
		return;
	}
	memo_del(t, m->id, m->pid);
	if (t->nmemos >= MAX_MEMOS) { /* the oldest goes */
		for (mp = &t->memos; (*mp)->next; mp = &(*mp)->next)
			;
		memo_free(*mp);
		*mp = NULL;
		t->nmemos--;
	}
	m->next = t->memos;
	t->memos = m;
	t->nmemos++;
}

/* What Start said of @pid (or @tag) of @id, or NULL; under the lock. */
static struct memo *memo_find(struct e2b_procs *t, const char *id, uint32_t pid,
			      const char *tag)
{
	struct memo *m;

	for (m = t->memos; m; m = m->next)
		if (!strcmp(m->id, id) &&
		    (tag ? m->tag && !strcmp(m->tag, tag) : m->pid == pid))
			return m;
	return NULL;
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
	if (!left) {
		forget_homes(t, NULL);
		memo_del(t, NULL, 0);
	}
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
		if (strcmp(p->g.info.id, id) || !p->pid)
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
 * Whether the guest's image defaults (EMBER_GUEST_DEFAULTS) name a cwd:
 * a template from an image with a WorkingDir, or E2B's setWorkdir, where
 * commands start, as envd's do in its template's workdir.  A file that
 * cannot be read or decoded names none.
 */
static bool defaults_cwd(struct proc *p)
{
	struct ember_defaults d;
	char *buf = NULL;
	bool cwd = false;
	off_t n;
	int fd;

	fd = memfd_create("ember-e2b-defaults", MFD_CLOEXEC);
	if (fd < 0)
		return false;
	if (agent_client__read_file(p->c, EMBER_GUEST_DEFAULTS, fd,
				    E2B_AGENT_TIMEOUT_MS) == 0 &&
	    (n = lseek(fd, 0, SEEK_END)) > 0 && n <= EMBER_DEFAULTS_MAX &&
	    (buf = malloc((size_t)n)) && pread(fd, buf, (size_t)n, 0) == n &&
	    ember_defaults_decode(buf, (size_t)n, &d) == 0)
		cwd = d.cwd != NULL;
	free(buf);
	close(fd);
	return cwd;
}

/*
 * The cwd of a process that asked for none: E2B_HOME, or NULL (the
 * guest's default) in a guest without it (a template not made for E2B,
 * or from an image with a User of its own) or whose image defaults name
 * a cwd (defaults_cwd()).  Asked once per sandbox, and
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
		return rc ? E2B_HOME : NULL;
	if (defaults_cwd(p)) {
		rc = -EREMOTEIO; /* as a guest without E2B_HOME: its default */
		gerr = ENOENT;
	} else {
		fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			return E2B_HOME;
		rc = agent_client__read_file(p->c, E2B_HOME, fd,
					     E2B_AGENT_TIMEOUT_MS);
		gerr = agent_client__guest_errno(p->c);
		close(fd);
		if (rc && rc != -EREMOTEIO)
			return E2B_HOME; /* the exec will say what is wrong */
	}
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
		return rc ? E2B_HOME : NULL;
	}
	return rc == -EREMOTEIO && gerr == ENOENT ? NULL : E2B_HOME;
}

/* The exec request of @p (its cwd, when it asked for none, not yet). */
static struct agent_exec_req exec_req(const struct proc *p)
{
	struct agent_exec_req req = {
		.argv = (const char *const *)p->argv,
		.env = (const char *const *)p->env,
		.env_add = true,
		.cwd = p->cwd,
		.user = p->user,
		.stdin_fd = p->has_stdin ? p->in_r : -1,
		.stdout_fd = p->out_w,
		.stderr_fd = p->err_w,
		.sig_fd = p->sig_r,
		.tty = p->pty,
		.rows = p->rows,
		.cols = p->cols,
		.ctl_fd = p->pty ? p->ctl_r : -1,
	};

	return req;
}

static void *exec_main(void *arg)
{
	struct proc *p = arg;
	struct e2b_procs *t = p->tab;
	struct agent_exec_req req = exec_req(p);
	struct agent_exec_result res = { 0 };
	int rc;

	if (p->keep || p->attach) {
		/* Started detached (keep_start()), or adopted: stream it. */
		rc = agent_client__attach(p->c, p->pid, &req, &res);
	} else {
		if (p->cwd_default)
			req.cwd = home_cwd(p);
		rc = agent_client__exec(p->c, &req, &res);
	}
	pthread_mutex_lock(&t->lock);
	p->rc = rc;
	p->res = res;
	if (rc < 0) {
		p->guest_errno = agent_client__guest_errno(p->c);
		e2b__clean_text(p->err, sizeof(p->err),
				agent_client__error(p->c));
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
	procs__put(p);
	thread_done(t);
	return NULL;
}

/* --- the reader thread ----------------------------------------------- */

/*
 * Read what @fd has (into @buf, READ_CHUNK bytes) as a data event of
 * @kind; false at its end.
 */
static bool pump(uint8_t *buf, struct sub **list, int fd, const char *kind)
{
	ssize_t r = read(fd, buf, READ_CHUNK);
	uint8_t *b;
	size_t n;

	if (r < 0)
		return errno == EINTR || errno == EAGAIN;
	if (r == 0)
		return false;
	if (!*list)
		return true; /* nobody listens: dropped, like envd */
	b = proc_event__data(kind, buf, (size_t)r, &n);
	if (b)
		proc_sub__broadcast(list, b, n);
	free(b);
	return true;
}

/*
 * The Connect error that @p's failed exec (p->rc, guest_errno, err) is:
 * its code, its message in @msg.
 */
static const char *exec_error(const struct proc *p, char *msg, size_t len)
{
	if (p->rc == -EREMOTEIO && p->pty && p->guest_errno == ENODEV) {
		snprintf(msg, len,
			 "cannot start the process: no PTY in this sandbox "
			 "(its guest has no /dev/ptmx and devpts)");
		return "failed_precondition";
	}
	if (p->rc == -EREMOTEIO && p->attach) {
		snprintf(msg, len, "process with pid %u not found: %s", p->pid,
			 p->err);
		return "not_found";
	}
	if (p->rc == -EREMOTEIO) {
		/* The command or its cwd: what the client asked for. */
		snprintf(msg, len, "cannot start the process: %s", p->err);
		return "invalid_argument";
	}
	if (p->rc == -E2BIG) {
		snprintf(msg, len, "%s", p->err);
		return "invalid_argument";
	}
	if ((p->keep || p->attach) && p->rc == -ECONNRESET) {
		snprintf(msg, len,
			 "the connection to the sandbox's agent was cut (a "
			 "pause?): the process runs on in the sandbox, "
			 "connect to pid %u again",
			 p->pid);
		return "unavailable";
	}
	snprintf(msg, len, "lost the sandbox's agent: %s", p->err);
	return "unavailable";
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
	/* Its end collected, or the guest keeps it no more: forgotten. */
	if ((p->keep || p->attach) && (p->rc == 0 || p->rc == -EREMOTEIO))
		memo_del(t, p->g.info.id, p->pid);
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
		ev = proc_event__end(&p->res, &evn);
		if (!ev) {
			code = "resource_exhausted";
			snprintf(msg, sizeof(msg), "out of memory");
		}
	} else {
		code = exec_error(p, msg, sizeof(msg));
	}
	tail = connect__end_stream(code, msg, &tailn);
	if (ev)
		proc_sub__broadcast(&list, ev, evn);
	while (list) {
		s = list;
		list = s->next;
		proc_sub__end(s, tail, tailn);
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
					proc_sub__fail(s, "unavailable",
						       "ember-e2b is stopping");
				else
					proc_sub__fail(
						s, "unavailable",
						"the sandbox %s was paused or "
						"stopped",
						p->g.info.id);
			}
			/* No deadline's kill from now on. */
			drop_done = killed = true;
		}
		for (pp = &list; *pp;) {
			s = *pp;
			if (s->deadline_ms && now >= s->deadline_ms) {
				*pp = s->next;
				proc_sub__fail(
					s, "deadline_exceeded",
					"the process stream timed out after "
					"%u ms (Connect-Timeout-Ms)",
					s->timeout_ms);
				continue;
			}
			if (now - last_gone_check >= GONE_CHECK_MS &&
			    e2b_stream__gone(s->s)) {
				*pp = s->next;
				proc_sub__end(s, NULL, 0);
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
				procs__signal(p, SIGKILL);
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
			out_open = pump(buf, &list, p->out_r,
					p->pty ? "pty" : "stdout");
		if (pfd[1].revents)
			err_open = pump(buf, &list, p->err_r, "stderr");
	}
	finish(p, list);
	procs__put(p);
	thread_done(t);
	return NULL;
}

/* --- a new process, a new subscriber --------------------------------- */

struct proc *procs__proc_new(struct e2b_server *srv, const struct e2b_guest *g)
{
	struct proc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->tab = srv->procs;
	p->srv = srv;
	p->g.info = g->info;
	p->g.port = g->port;
	p->refs = 1; /* the caller's */
	p->out_r = p->out_w = p->err_r = p->err_w = -1;
	p->in_r = p->in_w = p->sig_r = p->sig_w = p->wake = -1;
	p->ctl_r = p->ctl_w = -1;
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

int procs__proc_fds(struct proc *p)
{
	int rc;

	rc = pipe_fds(&p->out_r, &p->out_w, false);
	if (!rc)
		rc = pipe_fds(&p->err_r, &p->err_w, false);
	if (!rc)
		rc = pipe_fds(&p->sig_r, &p->sig_w, true);
	if (!rc && p->has_stdin)
		rc = pipe_fds(&p->in_r, &p->in_w, true);
	if (!rc && p->pty)
		rc = pipe_fds(&p->ctl_r, &p->ctl_w, true);
	if (!rc) {
		p->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (p->wake < 0)
			rc = -errno;
	}
	return rc;
}

/*
 * Put @p in the table with the next pid (a kept process: with its own,
 * pid 0 until it started; -EEXIST for an adopted one already listed),
 * unless the limits say no (the answer's error in @code/@err).  Takes
 * the table's reference.
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
	} else if (p->attach && find_locked(t, p->g.info.id, p->pid, NULL)) {
		rc = -EEXIST;
	} else {
		while (!p->keep && !p->attach) {
			p->pid = t->next_pid++;
			if (t->next_pid < PID_FIRST)
				t->next_pid = PID_FIRST;
			if (!find_locked(t, p->g.info.id, p->pid, NULL))
				break;
		}
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

/* --- what the process service does with the table -------------------- */

/*
 * Start @p in the guest detached, with KEEP (its pid the guest's, set
 * under the lock); 0, 1 for a guest whose agent knows no KEEP (@p then
 * gets a pid of ember's and a plain exec), else -errno with the answer's
 * error in @code/@err.
 */
static int keep_start(struct proc *p, const char **code, char *err,
		      size_t errlen)
{
	struct e2b_procs *t = p->tab;
	struct agent_exec_req req = exec_req(p);
	struct agent_exec_result res = { 0 };
	int rc;

	if (p->cwd_default) {
		req.cwd = home_cwd(p);
		if (!req.cwd) { /* the guest's default from now on */
			free(p->cwd);
			p->cwd = NULL;
		}
		p->cwd_default = false;
	}
	req.keep = req.detach = true;
	rc = agent_client__exec(p->c, &req, &res);
	pthread_mutex_lock(&t->lock);
	if (rc == 0 && res.running && res.pid) {
		p->pid = res.pid;
		memo_add(t, p);
	} else if (rc == -EREMOTEIO &&
		   agent_client__guest_errno(p->c) == EPROTO) {
		p->keep = false;
		do {
			p->pid = t->next_pid++;
			if (t->next_pid < PID_FIRST)
				t->next_pid = PID_FIRST;
		} while (find_locked(t, p->g.info.id, p->pid, NULL));
		rc = 1;
	} else {
		if (!rc)
			rc = -EPROTO; /* detached without a pid */
		p->rc = rc;
		p->guest_errno = agent_client__guest_errno(p->c);
		e2b__clean_text(p->err, sizeof(p->err),
				agent_client__error(p->c));
		*code = exec_error(p, err, errlen);
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

/*
 * Start the threads of a listed @p (counted, its agent connection in
 * p->c) with @s (NULL: none) as its first subscriber.  Consumes the
 * caller's reference either way.  0; else -EAGAIN with the error in
 * @code/@err, @p unlisted, @s ended.
 */
static int run(struct proc *p, struct sub *s, const char **code, char *err,
	       size_t errlen)
{
	struct agent_client *c = p->c;

	pthread_mutex_lock(&p->tab->lock);
	p->pending = s;
	pthread_mutex_unlock(&p->tab->lock);
	if (start_thread(p, reader_main)) {
		/* No reader: nobody would end it.  Take it all back. */
		p->pending = NULL;
		abandon(p, 1);
		if (s) {
			struct e2b_stream *st = s->s;

			proc_sub__end(s, NULL, 0);
			e2b_stream__put(st); /* the connection's */
		}
		guest__agent_done(p->srv, &p->g, c, true);
		p->c = NULL;
		procs__put(p);
		*code = "resource_exhausted";
		snprintf(err, errlen, "cannot start the process's threads");
		return -EAGAIN;
	}
	if (start_thread(p, exec_main)) {
		/* The reader ends the stream with this once the pipes end. */
		pthread_mutex_lock(&p->tab->lock);
		p->rc = -EAGAIN;
		snprintf(p->err, sizeof(p->err), "cannot start a thread");
		guest__agent_done(p->srv, &p->g, c, true);
		p->c = NULL;
		pthread_mutex_unlock(&p->tab->lock);
		close_fd(&p->out_w);
		close_fd(&p->err_w);
	}
	procs__put(p);
	return 0;
}

int procs__start(struct proc *p, unsigned int keepalive_s, uint64_t timeout_ms,
		 struct e2b_stream **st, const char **code, char *err,
		 size_t errlen)
{
	struct agent_client *c = p->c;
	struct sub *s;
	int rc;

	p->keep = true; /* unless the guest's agent knows no KEEP */
	rc = proc_list(p, code, err, errlen);
	if (rc) {
		guest__agent_done(p->srv, &p->g, c, true);
		p->c = NULL;
		procs__proc_free(p);
		return rc;
	}
	rc = keep_start(p, code, err, errlen);
	if (rc < 0) {
		abandon(p, 2);
		guest__agent_done(p->srv, &p->g, c,
				  rc == -EREMOTEIO || rc == -E2BIG);
		p->c = NULL;
		procs__put(p);
		return rc;
	}
	s = proc_sub__new(p->pid, keepalive_s, timeout_ms);
	if (!s) {
		/* Started: ended too, as a client that went away would. */
		if (p->keep)
			procs__signal(p, SIGKILL);
		p->deadline_ms = 0;
		run(p, NULL, code, err, errlen);
		*code = "resource_exhausted";
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* The reader's from now on, which may end it at any time. */
	*st = s->s;
	rc = run(p, s, code, err, errlen);
	if (rc)
		*st = NULL;
	return rc;
}

int procs__connect(struct e2b_procs *t, const char *id, uint32_t pid,
		   const char *tag, unsigned int keepalive_s,
		   uint64_t timeout_ms, struct e2b_stream **st)
{
	struct proc *p;
	struct sub *s = NULL;

	pthread_mutex_lock(&t->lock);
	p = find_locked(t, id, pid, tag);
	if (p) {
		/* A new stream's first write does not wait. */
		s = proc_sub__new(p->pid, keepalive_s, timeout_ms);
		if (s) {
			*st = s->s; /* the connection's reference */
			s->next = p->pending;
			p->pending = s;
			proc_wake(p);
		}
	}
	pthread_mutex_unlock(&t->lock);
	if (!p)
		return -ENOENT;
	return s ? 0 : -ENOMEM;
}

struct proc *procs__get(struct e2b_procs *t, const char *id, uint32_t pid,
			const char *tag)
{
	struct proc *p;

	pthread_mutex_lock(&t->lock);
	p = find_locked(t, id, pid, tag);
	if (p)
		p->refs++;
	pthread_mutex_unlock(&t->lock);
	return p;
}

json_t *procs__list(struct e2b_procs *t, const char *id)
{
	json_t *arr = json_array(), *o;
	struct proc *p;
	bool oom = !arr;

	pthread_mutex_lock(&t->lock);
	for (p = t->head; p && !oom; p = p->next) {
		if (strcmp(p->g.info.id, id) || !p->pid)
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
		return NULL;
	}
	return arr;
}

/* --- after a resume: the guest's kept processes ---------------------- */

/*
 * The processes @g's guest keeps (agent LIST) in *@aps, *@n of them;
 * 0, or -errno (an agent without LIST: -EREMOTEIO).
 */
static int guest_kept(struct e2b_server *srv, const struct e2b_guest *g,
		      struct agent_proc **aps, size_t *n)
{
	struct agent_client *c;
	char err[256];
	int rc;

	*aps = NULL;
	*n = 0;
	c = guest__agent(srv, g, err, sizeof(err));
	if (!c)
		return -ECONNREFUSED;
	rc = agent_client__list(c, aps, n, E2B_AGENT_TIMEOUT_MS);
	guest__agent_done(srv, g, c, rc == 0 || rc == -EREMOTEIO);
	return rc;
}

/* A config for a kept process Start did not tell this server of. */
static json_t *cmd_config(const struct agent_proc *ap)
{
	return json_pack("{s:s, s:[], s:{}, s:s}", "cmd", ap->cmd, "args",
			 "envs", "cwd", "");
}

int procs__adopt(struct e2b_server *srv, const struct e2b_guest *g,
		 uint32_t pid, const char *tag, unsigned int keepalive_s,
		 uint64_t timeout_ms, struct e2b_stream **st, struct proc **pp)
{
	struct e2b_procs *t = srv->procs;
	struct agent_proc *aps = NULL, *ap = NULL;
	const char *code;
	struct sub *s = NULL;
	struct proc *p;
	struct memo *m;
	char err[256];
	size_t n = 0, i;
	int rc, tries;

	pthread_mutex_lock(&t->lock);
	m = memo_find(t, g->info.id, pid, tag);
	if (tag)
		pid = m ? m->pid : 0;
	pthread_mutex_unlock(&t->lock);
	/*
	 * Attached: to another client, or still to a connection that a
	 * restore cut but whose end the guest has not seen yet (moments).
	 */
	for (tries = 0; !ap && pid && tries < ADOPT_TRIES; tries++) {
		if (tries)
			clock__sleep_ms(ADOPT_WAIT_MS);
		free(aps);
		aps = NULL;
		if (guest_kept(srv, g, &aps, &n))
			break;
		for (i = 0; i < n && (!ap || ap->attached); i++)
			if (aps[i].pid == pid)
				ap = &aps[i];
		if (!ap)
			break; /* not kept at all */
		if (ap->attached)
			ap = NULL;
	}
	if (!ap) {
		free(aps);
		return -ENOENT;
	}
	p = procs__proc_new(srv, g);
	if (!p) {
		free(aps);
		return -ENOMEM;
	}
	p->attach = true;
	p->pid = pid;
	p->pty = ap->tty;
	pthread_mutex_lock(&t->lock);
	m = memo_find(t, g->info.id, pid, NULL);
	if (m) {
		p->config = json_deep_copy(m->config);
		p->tag = m->tag ? strdup(m->tag) : NULL;
		p->has_stdin = m->has_stdin;
	}
	pthread_mutex_unlock(&t->lock);
	if (!m)
		p->config = cmd_config(ap);
	free(aps);
	p->has_stdin |= p->pty;
	if (!p->config || (m && m->tag && !p->tag) || procs__proc_fds(p)) {
		procs__proc_free(p);
		return -ENOMEM;
	}
	p->c = guest__agent(srv, g, err, sizeof(err));
	if (!p->c) {
		procs__proc_free(p);
		return -ENOENT;
	}
	rc = proc_list(p, &code, err, sizeof(err));
	if (rc) {
		guest__agent_done(srv, g, p->c, true);
		p->c = NULL;
		procs__proc_free(p);
		if (rc != -EEXIST) /* adopted meanwhile: that one */
			return rc;
		if (st)
			return procs__connect(t, g->info.id, pid, NULL,
					      keepalive_s, timeout_ms, st);
		if (pp)
			*pp = procs__get(t, g->info.id, pid, NULL);
		return pp && !*pp ? -ENOENT : 0;
	}
	if (st) {
		s = proc_sub__new(pid, keepalive_s, timeout_ms);
		if (!s) {
			abandon(p, 2);
			guest__agent_done(srv, g, p->c, true);
			p->c = NULL;
			procs__put(p);
			return -ENOMEM;
		}
		*st = s->s;
	}
	if (pp) {
		pthread_mutex_lock(&t->lock);
		p->refs++;
		pthread_mutex_unlock(&t->lock);
		*pp = p;
	}
	rc = run(p, s, &code, err, sizeof(err));
	if (rc) {
		if (st)
			*st = NULL;
		if (pp) {
			procs__put(p);
			*pp = NULL;
		}
	}
	return rc;
}

json_t *procs__list_guest(struct e2b_server *srv, const struct e2b_guest *g)
{
	struct e2b_procs *t = srv->procs;
	json_t *arr = procs__list(t, g->info.id), *o, *cfg;
	struct agent_proc *aps;
	struct memo *m;
	size_t n, i;

	if (!arr || guest_kept(srv, g, &aps, &n))
		return arr;
	for (i = 0; i < n; i++) {
		pthread_mutex_lock(&t->lock);
		if (find_locked(t, g->info.id, aps[i].pid, NULL)) {
			pthread_mutex_unlock(&t->lock);
			continue;
		}
		m = memo_find(t, g->info.id, aps[i].pid, NULL);
		cfg = m ? json_deep_copy(m->config) : cmd_config(&aps[i]);
		o = json_pack("{s:o, s:I}", "config", cfg, "pid",
			      (json_int_t)aps[i].pid);
		if (o && m && m->tag &&
		    json_object_set_new(o, "tag", json_string(m->tag))) {
			json_decref(o);
			o = NULL;
		}
		pthread_mutex_unlock(&t->lock);
		if (!o || json_array_append_new(arr, o)) {
			json_decref(arr);
			free(aps);
			return NULL;
		}
	}
	free(aps);
	return arr;
}
