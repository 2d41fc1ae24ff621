// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for ember-e2b's streamed answers (api/e2b/stream.c) and a
 * process's subscribers (api/e2b/proc_sub.c): a bounded push refuses
 * what would pass its bound and queues nothing then; a stream whose
 * client went away refuses more; of two subscribers, one that is never
 * read holds the other up no more (before, each event waited up to 30 s
 * on it) and is ended with resource_exhausted once 16 MiB behind; a lone
 * one gets every byte in order.
 */
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "../../api/e2b/e2b.h"
#include "../../api/e2b/proc_event.h"
#include "../../api/e2b/proc_sub.h"
#include "../../api/e2b/stream.h"
#include "../../api/sandbox/clock.h"

/* reply.c's, which this test does not link: the message as it is. */
void e2b__vclean_text(char *dst, size_t cap, const char *fmt, va_list ap)
{
	vsnprintf(dst, cap, fmt, ap);
}

/* What a reader thread took from a stream. */
struct reader {
	struct e2b_stream *s;
	uint64_t bytes;
	char tail[256]; /* the last bytes read */
	size_t tlen;
	bool ended; /* END_OF_STREAM (not an error) */
};

static void *read_all(void *arg)
{
	struct reader *r = arg;
	size_t cap = 64u << 10;
	char *buf = malloc(cap);
	ssize_t n;

	assert_non_null(buf);
	for (;;) {
		n = stream__read(r->s, r->bytes, buf, cap);
		if (n == MHD_CONTENT_READER_END_OF_STREAM) {
			r->ended = true;
			break;
		}
		if (n < 0)
			break;
		r->bytes += (uint64_t)n;
		if ((size_t)n >= sizeof(r->tail)) {
			memcpy(r->tail, buf + n - sizeof(r->tail),
			       sizeof(r->tail));
			r->tlen = sizeof(r->tail);
		} else {
			size_t keep = sizeof(r->tail) - (size_t)n;

			if (keep > r->tlen)
				keep = r->tlen;
			memmove(r->tail, r->tail + r->tlen - keep, keep);
			memcpy(r->tail + keep, buf, (size_t)n);
			r->tlen = keep + (size_t)n;
		}
	}
	free(buf);
	return NULL;
}

static bool tail_has(const struct reader *r, const char *s)
{
	return memmem(r->tail, r->tlen, s, strlen(s)) != NULL;
}

static void test_push_bound(void **state)
{
	struct e2b_stream *s = e2b_stream__new(NULL, 0, 1000);
	char b[100] = { 0 };

	(void)state;
	assert_non_null(s);
	assert_int_equal(e2b_stream__push(s, b, 60, 100), 0);
	assert_int_equal(e2b_stream__queued(s), 60);
	assert_int_equal(e2b_stream__push(s, b, 41, 100), -ENOBUFS);
	assert_int_equal(e2b_stream__queued(s), 60);
	assert_int_equal(e2b_stream__push(s, b, 40, 100), 0);
	assert_int_equal(e2b_stream__queued(s), 100);
	assert_int_equal(e2b_stream__push(s, b, 1, 100), -ENOBUFS);
	assert_int_equal(e2b_stream__wait(s), 0); /* under 4 MiB */
	stream__release(s); /* the client went away */
	assert_int_equal(e2b_stream__push(s, b, 1, 1000), -EPIPE);
	assert_int_equal(e2b_stream__write(s, b, 1), -EPIPE);
	assert_int_equal(e2b_stream__wait(s), -EPIPE);
	e2b_stream__put(s);
}

#define EVENT (64u << 10) /* bytes of output per event */

/* Broadcast @mib MiB of output to @list in EVENT pieces: its ms. */
static int64_t output(struct sub **list, unsigned int mib)
{
	static uint8_t data[EVENT];
	int64_t t0 = clock__mono_ms();

	memset(data, 'x', sizeof(data));
	for (unsigned int i = 0; i < (mib << 20) / EVENT && *list; i++) {
		size_t n;
		uint8_t *b = proc_event__data("stdout", data, EVENT, &n);

		assert_non_null(b);
		proc_sub__broadcast(list, b, n);
		free(b);
	}
	return clock__mono_ms() - t0;
}

static void end_all(struct sub **list)
{
	while (*list) {
		struct sub *s = *list;

		*list = s->next;
		proc_sub__end(s, NULL, 0);
	}
}

static void test_unread_subscriber_holds_none_up(void **state)
{
	struct sub *fast = proc_sub__new(7, 15, 0);
	struct sub *slow = proc_sub__new(7, 15, 0);
	struct reader r = { 0 }, rs = { 0 };
	struct sub *list;
	pthread_t th;
	int64_t ms;

	(void)state;
	assert_non_null(fast);
	assert_non_null(slow);
	fast->next = slow;
	list = fast;
	r.s = fast->s;
	rs.s = slow->s; /* slow is freed once dropped */
	assert_int_equal(pthread_create(&th, NULL, read_all, &r), 0);
	/* 24 MiB of output, 32 MiB of events: past the slow one's bound. */
	ms = output(&list, 24);
	assert_true(ms < 10000); /* before: 30 s on the slow one */
	assert_ptr_equal(list, fast); /* the slow one was dropped */
	assert_null(fast->next);
	end_all(&list);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_true(r.ended);
	assert_true(r.bytes > (24u << 20));
	/* The slow one's client reads late: what fit, then the error. */
	read_all(&rs);
	assert_true(rs.ended);
	assert_true(rs.bytes <= (16u << 20) + 4096);
	assert_true(tail_has(&rs, "resource_exhausted"));
	stream__release(r.s); /* the connections' references */
	stream__release(rs.s);
}

static void test_lone_subscriber_gets_all(void **state)
{
	struct sub *one = proc_sub__new(9, 15, 0);
	struct reader r = { 0 };
	struct sub *list = one;
	pthread_t th;

	(void)state;
	assert_non_null(one);
	r.s = one->s;
	assert_int_equal(pthread_create(&th, NULL, read_all, &r), 0);
	output(&list, 12);
	assert_ptr_equal(list, one);
	end_all(&list);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_true(r.ended);
	assert_true(r.bytes > (12u << 20));
	assert_false(tail_has(&r, "resource_exhausted"));
	stream__release(r.s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_push_bound),
		cmocka_unit_test(test_unread_subscriber_holds_none_up),
		cmocka_unit_test(test_lone_subscriber_gets_all),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
