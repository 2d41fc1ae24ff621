// SPDX-License-Identifier: Apache-2.0
/*
 * A process's stdin (proc_stdin.h): the write end of the pipe whose read
 * end the agent's exec reads, guarded by the process's in_lock (a write
 * may wait for the guest).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../sandbox/clock.h"
#include "proc_stdin.h"
#include "procs.h"

#define STDIN_WAIT_MS 10000 /* SendInput waits this long for room */

int proc_stdin__write(struct proc *p, const uint8_t *b, size_t n,
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

bool proc_stdin__close(struct proc *p)
{
	bool had;

	pthread_mutex_lock(&p->in_lock);
	had = p->has_stdin;
	if (p->in_w >= 0) /* the agent reads its end: EOF in the guest */
		close(p->in_w);
	p->in_w = -1;
	pthread_mutex_unlock(&p->in_lock);
	return had;
}
