// SPDX-License-Identifier: Apache-2.0
/*
 * A process's subscribers (proc_sub.h): the streams its events fan out
 * to, each with its own deadline.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "../sandbox/clock.h"
#include "connect_rpc.h"
#include "e2b.h"
#include "proc_event.h"
#include "proc_sub.h"

void proc_sub__end(struct sub *s, const uint8_t *tail, size_t n)
{
	if (tail)
		e2b_stream__write(s->s, tail, n);
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
	struct sub **pp = list;

	while (*pp) {
		struct sub *s = *pp;

		if (e2b_stream__write(s->s, b, n) < 0) {
			*pp = s->next;
			proc_sub__end(s, NULL, 0);
			continue;
		}
		pp = &s->next;
	}
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
