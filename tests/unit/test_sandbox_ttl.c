// SPDX-License-Identifier: Apache-2.0
/*
 * A sandbox's TTL clock (api/sandbox/record.h): it counts on
 * CLOCK_MONOTONIC, stops for pauses and parks, and a jump of the wall
 * clock (forward or back, an hour) changes nothing of it; renewals and the
 * TTL a resume gives anew; the info file keeps it, and one written before
 * (wall-clock stamps only) is read into it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../api/sandbox/clock.h"
#include "../../api/sandbox/record.h"

#define HOUR 3600

/* Ready at wall @wall and monotonic @mono with a TTL of @ttl_s. */
static void ready_at(struct sandbox_info *i, unsigned int ttl_s, int64_t wall,
		     int64_t mono)
{
	memset(i, 0, sizeof(*i));
	i->ttl_s = ttl_s;
	i->ttl_len = ttl_s;
	i->ready = wall;
	sandbox__run_start(i, wall, mono);
}

static void test_counts_while_running(void **state)
{
	struct sandbox_info i;

	(void)state;
	ready_at(&i, 10, 1000000, 5000);
	assert_int_equal(sandbox__ttl_left_ms(&i, 5000), 10000);
	assert_int_equal(sandbox__ttl_left_ms(&i, 9000), 6000);
	assert_int_equal(sandbox__ttl_left_ms(&i, 15000), 0);
	assert_int_equal(sandbox__ttl_left_ms(&i, 99000), 0);
	/* None, or booting: -1. */
	i.ttl_s = 0;
	assert_int_equal(sandbox__ttl_left_ms(&i, 9000), -1);
	i.ttl_s = 10;
	i.ready = 0;
	assert_int_equal(sandbox__ttl_left_ms(&i, 9000), -1);
}

/* Pauses stop it, whatever the wall clock did meanwhile. */
static void test_pause_and_wall_jumps(void **state)
{
	struct sandbox_info i;

	(void)state;
	ready_at(&i, 10, 1000000, 5000);
	/* Paused 3 s in, with the wall clock an hour ahead. */
	sandbox__run_stop(&i, 1000003 + HOUR, 8000);
	assert_true(i.paused != 0);
	assert_int_equal(i.run_since_ms, 0);
	assert_int_equal(sandbox__ttl_left_ms(&i, 8000), 7000);
	assert_int_equal(sandbox__ttl_left_ms(&i, 8000 + 100000000), 7000);
	/* Resumed a day later with the wall clock back an hour before. */
	sandbox__run_start(&i, 1000000 - HOUR, 8000 + 86400000);
	assert_int_equal(i.paused, 0);
	assert_true(i.paused_s >= 0);
	assert_int_equal(sandbox__ttl_left_ms(&i, 8000 + 86400000), 7000);
	assert_int_equal(sandbox__ttl_left_ms(&i, 8000 + 86402000), 5000);
	/* A park (run_stop again), then its resume. */
	sandbox__run_stop(&i, 5, 8000 + 86402000);
	sandbox__run_start(&i, 6, 20);
	assert_int_equal(sandbox__ttl_left_ms(&i, 4020), 1000);
	assert_int_equal(sandbox__ttl_left_ms(&i, 5020), 0);
}

/* A renewal: @left_s from now, in whole seconds (up to 1 s less). */
static void test_from_now(void **state)
{
	struct sandbox_info i;
	int64_t ttl;

	(void)state;
	ready_at(&i, 10, 1000000, 1000);
	ttl = sandbox__ttl_from_now(&i, 5, 4500); /* 3.5 s used */
	assert_int_equal(ttl, 8);
	i.ttl_s = (unsigned int)ttl;
	assert_int_equal(sandbox__ttl_left_ms(&i, 4500), 4500);
	/* Over (a park at its end): the TTL given anew. */
	assert_int_equal(sandbox__ttl_left_ms(&i, 60000), 0);
	i.ttl_s = (unsigned int)sandbox__ttl_from_now(&i, 10, 60000);
	assert_int_equal(sandbox__ttl_left_ms(&i, 60000), 10000);
}

static void test_info_file(void **state)
{
	char dir[] = "/tmp/ember-ttl-XXXXXX", path[128];
	struct sandbox_info i, back;
	int64_t now = clock__mono_ms(), wall = clock__wall_s();
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	ready_at(&i, 60, wall - 100, now - 4000);
	sandbox__run_stop(&i, wall, now - 1000); /* 3 s used */
	assert_int_equal(sandbox__write_info(dir, &i), 0);
	memset(&back, 0, sizeof(back));
	assert_int_equal(sandbox__read_info(dir, &back), 0);
	assert_int_equal(back.ttl_used_ms, 3000);
	assert_int_equal(back.run_since_ms, 0);
	assert_int_equal(sandbox__ttl_left(&back), 57);
	sandbox__run_start(&i, wall, now);
	assert_int_equal(sandbox__write_info(dir, &i), 0);
	assert_int_equal(sandbox__read_info(dir, &back), 0);
	assert_int_equal(back.run_since_ms, now);
	/* Written before: wall-clock stamps, parked 40 s into its TTL. */
	snprintf(path, sizeof(path), "%s/info", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "ready=1000\nttl=60\npaused=1060\npaused_s=20\nparked=1\n");
	fclose(f);
	memset(&back, 0, sizeof(back));
	assert_int_equal(sandbox__read_info(dir, &back), 0);
	assert_int_equal(back.ttl_used_ms, 40000);
	assert_int_equal(back.run_since_ms, 0);
	assert_int_equal(sandbox__ttl_left(&back), 20);
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts_while_running),
		cmocka_unit_test(test_pause_and_wall_jumps),
		cmocka_unit_test(test_from_now),
		cmocka_unit_test(test_info_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
