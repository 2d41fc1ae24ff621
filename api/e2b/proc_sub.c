// SPDX-License-Identifier: Apache-2.0
/*
 * A process's subscribers (proc_sub.h): the streams its events fan out
 * to, each with its own deadline.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../sandbox/clock.h"
#include "connect_rpc.h"
#include "e2b.h"
#include "proc_event.h"
#include "proc_sub.h"

/*
 * Bytes queued for one of several subscribers before it is dropped: a
 * client that does not read holds no other up (the producer waits only
 * for the fastest of them, as it waits for a lone one).
 */
#define SUB_BEHIND_MAX (16u << 20)

void proc_sub__end(struct sub *s, const uint8_t *tail, size_t n)
{
	/* Never waiting: a client that does not read holds no one up. */
	if (tail)
		e2b_stream__push(s->s, tail, n, SIZE_MAX);
	e2b_stream__end(s->s);
	e2b_stream__put(s->s);
	free(s);
}

void proc_sub__fail(struct sub *s, const char *code, const char *fmt, ...)
{
	char msg[512];
	uint8_t *b;
	size_t n = 0;
	va_list ap;

	va_start(ap, fmt);
	e2b__vclean_text(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	b = connect__end_stream(code, msg, &n);
	proc_sub__end(s, b, n);
	free(b);
}

void proc_sub__broadcast(struct sub **list, const uint8_t *b, size_t n)
{
	struct sub **pp = list, *fastest = NULL;
	size_t least = SIZE_MAX, q;
	int rc;

	/* A lone subscriber slows the process's output down to its pace. */
	if (*list && !(*list)->next) {
		if (e2b_stream__write((*list)->s, b, n) < 0) {
			proc_sub__end(*list, NULL, 0);
			*list = NULL;
		}
		return;
	}
	while (*pp) {
		struct sub *s = *pp;

		rc = e2b_stream__push(s->s, b, n, SUB_BEHIND_MAX);
		if (rc < 0) {
			*pp = s->next;
			if (rc == -ENOBUFS)
				proc_sub__fail(s, "resource_exhausted",
					       "this stream fell %u MiB behind "
					       "the process's output: dropped "
					       "(its other streams go on)",
					       SUB_BEHIND_MAX >> 20);
			else
				proc_sub__end(s, NULL, 0);
			continue;
		}
		q = e2b_stream__queued(s->s);
		if (q < least) {
			least = q;
			fastest = s;
		}
		pp = &s->next;
	}
	/* Paced by the fastest; the others fall behind up to the bound. */
	if (fastest)
		e2b_stream__wait(fastest->s);
}

/* A stream whose keepalive is the keepalive event. */
static struct e2b_stream *new_stream(unsigned int keepalive_s)
{
	struct e2b_stream *st = NULL;
	size_t n;
	uint8_t *b = proc_event__keepalive(&n);

	if (b)
		st = e2b_stream__new(b, n, keepalive_s * 1000);
	free(b);
	return st;
}

struct sub *proc_sub__new(uint32_t pid, unsigned int keepalive_s, uint64_t ms)
{
	struct sub *s = calloc(1, sizeof(*s));
	uint8_t *b;
	size_t n;
	int rc;

	if (!s)
		return NULL;
	s->s = new_stream(keepalive_s);
	b = proc_event__start(pid, &n);
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
