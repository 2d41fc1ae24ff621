/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One process of a container (its init, or one of `ctr task exec`'s),
 * run in the guest through the agent (guest-init/PROTOCOL.md: EXEC with
 * ROOT, USER, RLIMIT, TTY), its stdio on containerd's FIFOs, in a thread
 * of its own that waits for it; kill, resize and close-stdin go to the
 * running exec through its control pipe.
 */
#ifndef EMBER_CONTAINERD_PROC_H
#define EMBER_CONTAINERD_PROC_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "oci_spec.h"
#include "pod.h"

enum proc_state {
	PROC_CREATED = 0,
	PROC_RUNNING,
	PROC_STOPPED,
};

struct proc;

/*
 * Called once, from the process's thread, when it ends (or could not be
 * started): @status as containerd counts it (the exit code, 128 + the
 * signal for a signalled one, 255 when it could not start).
 */
typedef void (*proc_exit_fn)(void *opaque, struct proc *pr);

struct proc {
	char *id; /* the exec id; "" for the container's init */
	char *cid; /* the container's id */
	struct oci_process spec; /* owned */
	char *stdin_path, *stdout_path, *stderr_path; /* "" when not given */
	bool terminal;
	enum proc_state state;
	uint32_t exit_status;
	struct timespec exited_at; /* CLOCK_REALTIME */
	int ctl_w; /* the control pipe's write end, -1 when not running */
	pthread_t thread;
	bool joinable;
	proc_exit_fn on_exit;
	void *opaque;
	struct pod *pod;
	char error[512]; /* why it could not start, if so */
};

/*
 * proc__new() - a created process (not yet running) of container @cid in
 * @pod, taking @spec (moved: @spec is zeroed) and copying the FIFO paths.
 * NULL when out of memory.
 */
struct proc *proc__new(struct pod *pod, const char *cid, const char *id,
		       struct oci_process *spec, const char *stdin_path,
		       const char *stdout_path, const char *stderr_path,
		       bool terminal, proc_exit_fn on_exit, void *opaque);

/*
 * proc__start() - open its FIFOs, connect to the agent and start it in
 * its thread.  0 once the exec was sent (RUNNING), or -errno with @err:
 * then it is STOPPED with status 255 and on_exit is not called.
 */
int proc__start(struct proc *pr, char *err, size_t errlen);

/*
 * proc__signal() - deliver @sig (1-64) to the process's group in the
 * guest; never blocks.  -ESRCH when it is not running, -EBUSY when over
 * 5000 requests for it (signal, resize, close) wait to be sent to the
 * guest (the same for proc__resize and proc__close_stdin).
 */
int proc__signal(struct proc *pr, int sig);

/* proc__resize() - its terminal's size.  -ESRCH, -ENOTTY (no tty). */
int proc__resize(struct proc *pr, uint32_t cols, uint32_t rows);

/* proc__close_stdin() - end of its input.  -ESRCH when not running. */
int proc__close_stdin(struct proc *pr);

/*
 * proc__free() - kill it if it still runs (SIGKILL), wait for its
 * thread, free it.  NULL is allowed.
 */
void proc__free(struct proc *pr);

#endif /* EMBER_CONTAINERD_PROC_H */
