/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The table of processes started through envd's process service
 * (procs.c), so that List, Connect, SendInput and SendSignal find them;
 * each process with its exec and reader threads and its subscribers (the
 * streams its output fans out to).  process.c reads the requests and
 * calls this; forget.c forgets a sandbox's processes; main.c makes and
 * frees the table.
 */
#ifndef EMBER_API_E2B_PROCS_H
#define EMBER_API_E2B_PROCS_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../sandbox/agent_client.h"
#include "e2b.h"
#include "proc_sub.h"

/*
 * One process.  process.c fills tag, has_stdin, argv, env, cwd,
 * cwd_default, config, deadline_ms and c between procs__proc_new() and
 * procs__start(); the rest is the table's, under its lock (procs.c).
 */
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
	bool cwd_default; /* not asked for: E2B_HOME, else the guest's
			     default when it is missing */
	char *user; /* the agent's USER; NULL: the guest's default user */
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
	/* Start's pty: on a guest terminal of rows x cols (0 x 0: the
	   kernel's), its output as pty data, in_w its input (has_stdin),
	   ctl_w RESIZE records (struct agent_exec_ctl) for ctl_r. */
	bool pty;
	uint16_t rows, cols;
	int ctl_r, ctl_w;
	/* The guest keeps it (KEEP): pid is the guest's, and a park cuts
	   only its connection.  attach: adopted after one (ATTACH pid). */
	bool keep, attach;
};

/*
 * The table.  procs__new() NULL when out of memory; procs__drop() ends
 * the streams of every process of sandbox @id and forgets them, without
 * a signal (killed: gone with it; paused: the guest keeps them, for
 * procs__adopt() after the resume).  procs__stop() kills every process, ends its
 * streams (so that the HTTP server can stop without waiting on them) and
 * refuses new ones: call it before e2b_http__stop(), and procs__free()
 * (which waits up to 3 s for the processes' threads) before freeing the
 * pool.
 */
struct e2b_procs *procs__new(void);
void procs__drop(struct e2b_procs *t, const char *id);
void procs__stop(struct e2b_procs *t);
void procs__free(struct e2b_procs *t);

/*
 * A new process of @g for @srv's table, not listed yet, with one
 * reference (the caller's) and no fds; the caller fills its tag,
 * has_stdin, argv, env, cwd, config and deadline_ms.  NULL when out of
 * memory.  procs__proc_free() frees one that never got listed.
 */
struct proc *procs__proc_new(struct e2b_server *srv, const struct e2b_guest *g);
void procs__proc_free(struct proc *p);

/* Make @p's pipes (stdin's when has_stdin) and eventfd: 0 or -errno. */
int procs__proc_fds(struct proc *p);

/*
 * Run @p (its fds made, its agent connection in p->c): list it under the
 * next pid, subscribe a new stream to it (keepalive every @keepalive_s
 * seconds, 1-3600; @timeout_ms: Connect-Timeout-Ms, 0 for none) and start
 * its threads.  Consumes the caller's reference either way.  0 with *@st
 * (the connection's reference to the stream); else the code of the
 * Connect error in *@code and its message in @err, and @p with its agent
 * connection given back.
 */
int procs__start(struct proc *p, unsigned int keepalive_s, uint64_t timeout_ms,
		 struct e2b_stream **st, const char **code, char *err,
		 size_t errlen);

/*
 * Subscribe a new stream (as procs__start()) to the process of sandbox
 * @id with @pid, or with @tag when not NULL.  0 with *@st, -ENOENT (no
 * such process), -ENOMEM.
 */
int procs__connect(struct e2b_procs *t, const char *id, uint32_t pid,
		   const char *tag, unsigned int keepalive_s,
		   uint64_t timeout_ms, struct e2b_stream **st);

/*
 * The process of @g's sandbox with @pid (or @tag when not NULL, as Start
 * named it) that the table does not list but the guest's agent keeps (its
 * connection was cut by a park and resume): listed again, attached (its
 * output kept meanwhile first) with @st, when not NULL, subscribed as by
 * procs__connect(); with a reference in *@pp when @pp is not NULL.
 * -ENOENT (the guest keeps no such process, or another connection is
 * attached to it), -ENOMEM, -EAGAIN (limits, threads).
 */
int procs__adopt(struct e2b_server *srv, const struct e2b_guest *g,
		 uint32_t pid, const char *tag, unsigned int keepalive_s,
		 uint64_t timeout_ms, struct e2b_stream **st, struct proc **pp);

/*
 * procs__list() and the processes the guest's agent keeps that the table
 * does not list (after a resume), as envd's ProcessInfo list; NULL when
 * out of memory.
 */
json_t *procs__list_guest(struct e2b_server *srv, const struct e2b_guest *g);

/*
 * The listed process of sandbox @id with @pid (or @tag when not NULL),
 * with a reference to give back with procs__put(); NULL when none.
 */
struct proc *procs__get(struct e2b_procs *t, const char *id, uint32_t pid,
			const char *tag);
void procs__put(struct proc *p);

/*
 * Sandbox @id's processes as envd's ProcessInfo list ([{config, pid,
 * tag}]); a new reference, NULL when out of memory.
 */
json_t *procs__list(struct e2b_procs *t, const char *id);

/* Send @sig to @p's process group in the guest. */
void procs__signal(struct proc *p, int sig);

/*
 * Give @p's terminal (a pty process) @rows x @cols: its foreground
 * process group gets SIGWINCH.  0, or -ENOTTY for a process without pty.
 */
int procs__resize(struct proc *p, uint16_t rows, uint16_t cols);

#endif /* EMBER_API_E2B_PROCS_H */
