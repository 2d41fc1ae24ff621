// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for devices/rate_limiter.c: refill rates and the carried
 * fraction of a token, the one-time burst, both buckets taken together or
 * not at all, oversized requests and their debt, updates at run time, and
 * the arithmetic at the edges of 64 bits.  Time is passed in, so every
 * expectation is exact.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../devices/rate_limiter.h"
#include "../../vmm/config.h"

#define MS 1000000ULL /* ns */
#define T0 (1000 * MS) /* an arbitrary start */

static struct rate_limiter_config cfg_bw(uint64_t size, uint64_t burst,
					 uint64_t refill_ms)
{
	return (struct rate_limiter_config){
		.bandwidth = { size, burst, refill_ms },
	};
}

static struct rate_limiter_config cfg_ops(uint64_t size, uint64_t burst,
					  uint64_t refill_ms)
{
	return (struct rate_limiter_config){
		.ops = { size, burst, refill_ms },
	};
}

static void test_off(void **state)
{
	struct rate_limiter_config c = { 0 };
	struct rate_limiter rl;

	(void)state;
	rate_limiter__init(&rl, NULL, T0);
	assert_false(rate_limiter__on(&rl));
	assert_true(rate_limiter__consume(&rl, UINT64_MAX, UINT64_MAX, T0));
	assert_int_equal(rate_limiter__wait_ns(&rl, UINT64_MAX, 1, 0), 0);

	/* size 0 or refill_time 0 turns a bucket off, burst or not. */
	c.bandwidth = (struct token_bucket_config){ 0, 100, 1000 };
	c.ops = (struct token_bucket_config){ 100, 100, 0 };
	rate_limiter__init(&rl, &c, T0);
	assert_false(rate_limiter__on(&rl));
	assert_true(rate_limiter__consume(&rl, 1000000, 1000000, T0));

	/* One bucket on: the other gives anything. */
	c = cfg_ops(2, 0, 1000);
	rate_limiter__init(&rl, &c, T0);
	assert_true(rate_limiter__on(&rl));
	assert_true(rate_limiter__consume(&rl, UINT64_MAX, 2, T0));
	assert_false(rate_limiter__consume(&rl, 0, 1, T0));
	assert_true(rate_limiter__consume(&rl, UINT64_MAX, 0, T0));
}

/* 1000 tokens per second: one per millisecond, starting full. */
static void test_refill_rate(void **state)
{
	struct rate_limiter_config c = cfg_bw(1000, 0, 1000);
	struct rate_limiter rl;

	(void)state;
	rate_limiter__init(&rl, &c, T0);
	assert_true(rate_limiter__consume(&rl, 1000, 1, T0));
	assert_false(rate_limiter__consume(&rl, 1, 0, T0));
	assert_int_equal(rate_limiter__wait_ns(&rl, 1, 0, T0), MS);
	assert_int_equal(rate_limiter__wait_ns(&rl, 10, 0, T0), 10 * MS);
	assert_int_equal(rate_limiter__wait_ns(&rl, 1, 0, T0 + MS / 2), MS / 2);
	assert_false(rate_limiter__consume(&rl, 1, 0, T0 + MS - 1));
	assert_true(rate_limiter__consume(&rl, 1, 0, T0 + MS));
	/* Half a token's time is carried, not lost nor given twice. */
	assert_false(rate_limiter__consume(&rl, 1, 0, T0 + MS + MS / 2));
	assert_int_equal(rate_limiter__wait_ns(&rl, 1, 0, T0 + MS + MS / 2),
			 MS / 2);
	assert_true(rate_limiter__consume(&rl, 1, 0, T0 + 2 * MS));
	/* 500 ms: 500 tokens. */
	assert_false(rate_limiter__consume(&rl, 501, 0, T0 + 502 * MS - 1));
	assert_true(rate_limiter__consume(&rl, 500, 0, T0 + 502 * MS));
	assert_int_equal(rl.bw.budget, 0);
	/* A long idle time fills the bucket, never beyond its size. */
	assert_true(rate_limiter__consume(&rl, 1000, 0, T0 + 100000 * MS));
	assert_false(rate_limiter__consume(&rl, 1, 0, T0 + 100000 * MS));
	/* No time, no tokens; time going nowhere changes nothing. */
	assert_false(rate_limiter__consume(&rl, 1, 0, T0 + 100000 * MS));
}

/*
 * 3 tokens per 10 ms: a token every 3.33 ms.  Taking one token at each
 * wake-up wait_ns() asks for, token k goes at exactly ceil(k * 10 / 3) ms
 * after the bucket was emptied: no drift from rounding.
 */
static void test_fraction_carry(void **state)
{
	struct rate_limiter_config c = cfg_bw(3, 0, 10);
	struct rate_limiter rl;
	uint64_t now = T0, w, k;

	(void)state;
	rate_limiter__init(&rl, &c, now);
	assert_true(rate_limiter__consume(&rl, 3, 0, now));
	for (k = 1; k <= 3000; k++) {
		w = rate_limiter__wait_ns(&rl, 1, 0, now);
		assert_true(w > 0);
		assert_false(rate_limiter__consume(&rl, 1, 0, now + w - 1));
		now += w;
		assert_true(rate_limiter__consume(&rl, 1, 0, now));
		assert_int_equal(now - T0, (k * 10 * MS + 2) / 3);
	}
	/* 3000 tokens in 10 s: the configured rate. */
	assert_int_equal(now - T0, 10000 * MS);
}

static void test_one_time_burst(void **state)
{
	struct rate_limiter_config c = cfg_bw(100, 50, 1000);
	struct rate_limiter rl;

	(void)state;
	rate_limiter__init(&rl, &c, T0);
	/* The burst goes first; the budget is untouched. */
	assert_true(rate_limiter__consume(&rl, 30, 0, T0));
	assert_int_equal(rl.bw.burst, 20);
	assert_int_equal(rl.bw.budget, 100);
	/* 20 from the burst, 30 from the budget. */
	assert_true(rate_limiter__consume(&rl, 50, 0, T0));
	assert_int_equal(rl.bw.burst, 0);
	assert_int_equal(rl.bw.budget, 70);
	assert_true(rate_limiter__consume(&rl, 70, 0, T0));
	assert_false(rate_limiter__consume(&rl, 1, 0, T0));
	/* The burst never comes back: a full bucket again, no more. */
	assert_true(rate_limiter__consume(&rl, 100, 0, T0 + 60000 * MS));
	assert_false(rate_limiter__consume(&rl, 1, 0, T0 + 60000 * MS));
	assert_int_equal(rl.bw.burst, 0);

	/* Burst plus budget at once: 120 leave 30 tokens, not 31. */
	rate_limiter__init(&rl, &c, T0);
	assert_true(rate_limiter__consume(&rl, 120, 0, T0));
	assert_false(rate_limiter__consume(&rl, 31, 0, T0));
	assert_int_equal(rate_limiter__wait_ns(&rl, 31, 0, T0), 10 * MS);
	assert_true(rate_limiter__consume(&rl, 30, 0, T0));
	assert_false(rate_limiter__consume(&rl, 1, 0, T0));
}

/* Both buckets or neither, whichever refuses. */
static void test_both_buckets(void **state)
{
	struct rate_limiter_config c = {
		.bandwidth = { 1000, 0, 1000 },
		.ops = { 2, 0, 100 },
	};
	struct rate_limiter rl;

	(void)state;
	rate_limiter__init(&rl, &c, T0);
	assert_true(rate_limiter__consume(&rl, 100, 1, T0));
	assert_true(rate_limiter__consume(&rl, 100, 1, T0));
	/* ops refuse: the bytes stay. */
	assert_false(rate_limiter__consume(&rl, 100, 1, T0));
	assert_int_equal(rl.bw.budget, 800);
	assert_int_equal(rl.ops.budget, 0);
	assert_int_equal(rate_limiter__wait_ns(&rl, 100, 1, T0), 50 * MS);
	/* bytes refuse: the op stays. */
	assert_true(rate_limiter__consume(&rl, 0, 1, T0 + 50 * MS));
	assert_true(rate_limiter__consume(&rl, 0, 1, T0 + 100 * MS));
	assert_int_equal(rl.ops.budget, 0);
	assert_false(rate_limiter__consume(&rl, 1000, 0, T0 + 150 * MS));
	assert_int_equal(rl.ops.budget, 1);
	assert_false(rate_limiter__consume(&rl, 1000, 1, T0 + 150 * MS));
	assert_int_equal(rl.ops.budget, 1);
	assert_int_equal(rl.bw.budget, 950);
	/* The wait is the longer of the two. */
	assert_int_equal(rate_limiter__wait_ns(&rl, 1000, 2, T0 + 150 * MS),
			 50 * MS);
	assert_int_equal(rate_limiter__wait_ns(&rl, 1000, 1, T0 + 150 * MS),
			 50 * MS);
	assert_int_equal(rate_limiter__wait_ns(&rl, 990, 1, T0 + 150 * MS),
			 40 * MS);
	assert_true(rate_limiter__consume(&rl, 1000, 2, T0 + 200 * MS));
}

/*
 * A request beyond the size goes when the bucket owes nothing, empties
 * it, and the excess is owed: nothing before the debt is paid, and no
 * refill during it.
 */
static void test_oversized(void **state)
{
	struct rate_limiter_config c = cfg_bw(100, 0, 100); /* 1 per ms */
	struct rate_limiter rl;
	uint64_t now, total = 0;
	int i;

	(void)state;
	rate_limiter__init(&rl, &c, T0);
	assert_int_equal(rate_limiter__wait_ns(&rl, 250, 0, T0), 0);
	assert_true(rate_limiter__consume(&rl, 250, 0, T0));
	assert_int_equal(rl.bw.budget, 0);
	assert_int_equal(rl.bw.last_ns, T0 + 150 * MS);
	/* Another oversized one waits for the debt; a small one too, and
	 * then for its own tokens. */
	assert_false(rate_limiter__consume(&rl, 250, 0, T0 + 100 * MS));
	assert_int_equal(rate_limiter__wait_ns(&rl, 250, 0, T0 + 100 * MS),
			 50 * MS);
	assert_int_equal(rate_limiter__wait_ns(&rl, 1, 0, T0 + 100 * MS),
			 51 * MS);
	assert_false(rate_limiter__consume(&rl, 1, 0, T0 + 150 * MS));
	assert_true(rate_limiter__consume(&rl, 1, 0, T0 + 151 * MS));

	/* With an empty bucket, the whole request is owed. */
	rate_limiter__init(&rl, &c, T0);
	assert_true(rate_limiter__consume(&rl, 100, 0, T0));
	assert_true(rate_limiter__consume(&rl, 300, 0, T0));
	assert_int_equal(rl.bw.last_ns, T0 + 300 * MS);

	/*
	 * The long-run rate holds: 50 requests of 300 tokens, each taken at
	 * the first moment it may go: the first at once (100 from the full
	 * bucket, 200 owed), then one every 300 ms, the last at 14.6 s; its
	 * debt is paid at 14.9 s.  Firecracker's refill during the debt
	 * would have let them go every 200 ms.
	 */
	rate_limiter__init(&rl, &c, T0);
	now = T0;
	for (i = 0; i < 50; i++) {
		now += rate_limiter__wait_ns(&rl, 300, 0, now);
		assert_true(rate_limiter__consume(&rl, 300, 0, now));
		total += 300;
	}
	assert_int_equal(total, 15000);
	assert_int_equal(now - T0, 14600 * MS);
	assert_int_equal(rl.bw.last_ns - T0, 14900 * MS);

	/* The burst counts first: 200 + 50 from the budget is no debt. */
	c = cfg_bw(100, 200, 100);
	rate_limiter__init(&rl, &c, T0);
	assert_true(rate_limiter__consume(&rl, 250, 0, T0));
	assert_int_equal(rl.bw.budget, 50);
	assert_int_equal(rl.bw.last_ns, T0);
}

static void test_update(void **state)
{
	struct rate_limiter_config c = cfg_bw(1000, 100, 1000);
	struct rate_limiter rl;

	(void)state;
	rate_limiter__init(&rl, &c, T0);
	assert_true(rate_limiter__consume(&rl, 700, 0, T0));
	assert_int_equal(rl.bw.burst, 0);
	assert_int_equal(rl.bw.budget, 400);

	/* The same configuration: nothing changes. */
	rate_limiter__update(&rl, &c, T0 + MS / 2);
	assert_int_equal(rl.bw.budget, 400);
	assert_int_equal(rl.bw.last_ns, T0);

	/* A smaller bucket: the tokens are capped; the rate follows. */
	c = cfg_bw(100, 100, 1000); /* 1 per 10 ms */
	rate_limiter__update(&rl, &c, T0 + 10 * MS);
	assert_int_equal(rl.bw.size, 100);
	assert_int_equal(rl.bw.budget, 100);
	assert_int_equal(rl.bw.burst, 0); /* one_time_burst unchanged */
	assert_true(rate_limiter__consume(&rl, 100, 0, T0 + 10 * MS));
	assert_int_equal(rate_limiter__wait_ns(&rl, 1, 0, T0 + 10 * MS),
			 10 * MS);

	/* A larger bucket keeps what it held (nothing here). */
	c = cfg_bw(10000, 100, 1000);
	rate_limiter__update(&rl, &c, T0 + 10 * MS);
	assert_int_equal(rl.bw.budget, 0);
	assert_true(rate_limiter__consume(&rl, 10, 0, T0 + 11 * MS));

	/* A new one_time_burst restarts the burst. */
	c = cfg_bw(10000, 500, 1000);
	rate_limiter__update(&rl, &c, T0 + 11 * MS);
	assert_int_equal(rl.bw.burst, 500);

	/* Off: anything goes; on again: a full bucket. */
	rate_limiter__update(&rl, NULL, T0 + 12 * MS);
	assert_false(rate_limiter__on(&rl));
	assert_true(rate_limiter__consume(&rl, UINT64_MAX, 0, T0 + 12 * MS));
	c = cfg_ops(5, 0, 1000);
	rate_limiter__update(&rl, &c, T0 + 13 * MS);
	assert_int_equal(rl.ops.budget, 5);
	assert_int_equal(rl.ops.last_ns, T0 + 13 * MS);
	assert_false(rate_limiter__on(&rl) && rl.bw.size);

	/* A debt survives a change of rate. */
	c = cfg_bw(100, 0, 100);
	rate_limiter__init(&rl, &c, T0);
	assert_true(rate_limiter__consume(&rl, 300, 0, T0));
	c = cfg_bw(200, 0, 100);
	rate_limiter__update(&rl, &c, T0 + MS);
	assert_int_equal(rl.bw.last_ns, T0 + 200 * MS);
	assert_false(rate_limiter__consume(&rl, 1, 0, T0 + 199 * MS));
	assert_true(rate_limiter__consume(&rl, 2, 0, T0 + 201 * MS));
}

/* The largest values: nothing overflows, results saturate. */
static void test_overflow_edges(void **state)
{
	struct rate_limiter_config c;
	struct rate_limiter rl;
	uint64_t w;

	(void)state;
	/* The API's own limits: exact results. */
	c = cfg_bw(CONFIG_BUCKET_MAX, CONFIG_BUCKET_MAX, CONFIG_REFILL_MAX_MS);
	rate_limiter__init(&rl, &c, T0);
	assert_true(rate_limiter__consume(&rl, 2 * CONFIG_BUCKET_MAX, 0, T0));
	assert_false(rate_limiter__consume(&rl, 1, 0, T0));
	assert_int_equal(rate_limiter__wait_ns(&rl, CONFIG_BUCKET_MAX, 0, T0),
			 CONFIG_REFILL_MAX_MS * MS);
	w = rate_limiter__wait_ns(&rl, 1, 0, T0);
	assert_int_equal(w, (CONFIG_REFILL_MAX_MS * MS + CONFIG_BUCKET_MAX -
			     1) / CONFIG_BUCKET_MAX);
	assert_true(rate_limiter__consume(&rl, 1, 0, T0 + w));

	/* Beyond them (a caller that skipped the check): still safe. */
	c = cfg_bw(UINT64_MAX, UINT64_MAX, UINT64_MAX);
	rate_limiter__init(&rl, &c, T0);
	assert_int_equal(rl.bw.refill_ns, UINT64_MAX);
	assert_true(rate_limiter__consume(&rl, UINT64_MAX, 0, T0));
	assert_true(rate_limiter__consume(&rl, UINT64_MAX, 0, T0));
	assert_false(rate_limiter__consume(&rl, UINT64_MAX, 0, T0));
	assert_int_equal(rate_limiter__wait_ns(&rl, UINT64_MAX, 0, T0),
			 UINT64_MAX - T0);
	assert_true(rate_limiter__consume(&rl, 1, 0, UINT64_MAX));

	/* A tiny bucket with the longest refill: the debt saturates. */
	c = cfg_bw(1, 0, UINT64_MAX);
	rate_limiter__init(&rl, &c, UINT64_MAX - 10);
	assert_true(rate_limiter__consume(&rl, UINT64_MAX, 0, UINT64_MAX - 10));
	assert_int_equal(rl.bw.last_ns, UINT64_MAX);
	assert_int_equal(rate_limiter__wait_ns(&rl, 1, 0, UINT64_MAX - 10),
			 UINT64_MAX - (UINT64_MAX - 10));
	assert_false(rate_limiter__consume(&rl, 1, 0, UINT64_MAX - 1));

	/* 1 ns per token at the top of the clock. */
	c = cfg_ops(1000000, 0, 1);
	rate_limiter__init(&rl, &c, UINT64_MAX - 2000000);
	assert_true(
		rate_limiter__consume(&rl, 0, 1000000, UINT64_MAX - 2000000));
	assert_int_equal(rate_limiter__wait_ns(&rl, 0, 7, UINT64_MAX - 2000000),
			 7);
	assert_true(rate_limiter__consume(&rl, 0, 1000000, UINT64_MAX));
}

/* A small deterministic generator (xorshift64*). */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

/*
 * Random buckets and requests: a refusal always comes with a wait of at
 * least 1 ns, the request goes at exactly that time and not 1 ns before,
 * budgets stay within the size, and the tokens taken never pass what the
 * configuration allows (full bucket, burst, refill, one oversized
 * request's excess).
 */
static void test_random(void **state)
{
	uint64_t s = 0x9e3779b97f4a7c15ULL;
	int round, i;

	(void)state;
	for (round = 0; round < 300; round++) {
		struct rate_limiter_config c = {
			.bandwidth = { 1 + rnd(&s) % 100000, rnd(&s) % 3000,
				       1 + rnd(&s) % 2000 },
			.ops = { rnd(&s) % 4 ? 1 + rnd(&s) % 50 : 0,
				 rnd(&s) % 20, 1 + rnd(&s) % 500 },
		};
		uint64_t now = rnd(&s) % (1ULL << 50), start = now;
		uint64_t taken = 0, biggest = 0, allowed;
		struct rate_limiter rl;

		rate_limiter__init(&rl, &c, now);
		for (i = 0; i < 200; i++) {
			uint64_t bytes = rnd(&s) % (c.bandwidth.size * 2);
			uint64_t ops = rnd(&s) % 3;
			uint64_t w =
				rate_limiter__wait_ns(&rl, bytes, ops, now);

			if (w) {
				struct rate_limiter copy = rl;

				assert_false(rate_limiter__consume(
					&copy, bytes, ops, now + w - 1));
				now += w;
			}
			assert_true(
				rate_limiter__consume(&rl, bytes, ops, now));
			assert_true(rl.bw.budget <= rl.bw.size);
			assert_true(rl.ops.budget <= rl.ops.size);
			taken += bytes;
			biggest = bytes > biggest ? bytes : biggest;
			now += rnd(&s) % 4 ? 0 : rnd(&s) % (5 * MS);
		}
		allowed = c.bandwidth.size + c.bandwidth.one_time_burst +
			  (uint64_t)((unsigned __int128)(now - start) *
				     c.bandwidth.size /
				     (c.bandwidth.refill_time_ms * MS)) +
			  biggest;
		assert_true(taken <= allowed);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off),
		cmocka_unit_test(test_refill_rate),
		cmocka_unit_test(test_fraction_carry),
		cmocka_unit_test(test_one_time_burst),
		cmocka_unit_test(test_both_buckets),
		cmocka_unit_test(test_oversized),
		cmocka_unit_test(test_update),
		cmocka_unit_test(test_overflow_edges),
		cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests_name("rate_limiter", tests, NULL, NULL);
}
