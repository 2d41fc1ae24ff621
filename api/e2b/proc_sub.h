/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A process's subscribers (proc_sub.c): the Start stream and the Connect
 * streams that its events (proc_event.h) fan out to.  The reader thread
 * of a process (procs.c) owns its list of subscribers.
 */
#ifndef EMBER_API_E2B_PROC_SUB_H
#define EMBER_API_E2B_PROC_SUB_H

#include <stddef.h>
#include <stdint.h>

struct e2b_stream;

/* A stream that a process's events go to. */
struct sub {
	struct sub *next;
	struct e2b_stream *s; /* the producer's reference */
	int64_t deadline_ms; /* clock__mono_ms(); 0: none */
	unsigned int timeout_ms; /* what the client asked, for messages */
};

/*
 * A subscriber on a new stream (keepalive every @keepalive_s seconds)
 * whose first message is start {@pid}; its deadline @ms milliseconds
 * from now (0: none).  Two references to the stream: the subscriber's
 * (s->s) and one for the connection.  NULL when out of memory.
 */
struct sub *proc_sub__new(uint32_t pid, unsigned int keepalive_s, uint64_t ms);

/* End @s with @tail (@n bytes: an END_STREAM envelope, or NULL) and free
   it. */
void proc_sub__end(struct sub *s, const uint8_t *tail, size_t n);

/* End @s with an END_STREAM of Connect error @code and the message. */
__attribute__((format(printf, 3, 4))) void
proc_sub__fail(struct sub *s, const char *code, const char *fmt, ...);

/* Write @n bytes of @b to every subscriber of @list; drop those gone. */
void proc_sub__broadcast(struct sub **list, const uint8_t *b, size_t n);

#endif /* EMBER_API_E2B_PROC_SUB_H */
