/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A rate limiter: Firecracker's two token buckets (its rate_limiter
 * crate; the RateLimiter and TokenBucket objects of its API), one for
 * bandwidth (tokens are bytes) and one for operations (tokens are
 * requests or frames), either of which may be off.
 *
 * Each bucket holds up to `size` tokens and starts full.  It refills
 * continuously at `size` tokens per `refill_time_ms` (the fraction of a
 * token owed is carried, so no time is lost between calls), never beyond
 * `size`.  `one_time_burst` tokens come on top: they are spent first and
 * never refill.  A bucket with size 0 or refill_time_ms 0 is off.
 *
 * A request larger than a bucket's size (after the burst) could never
 * fit; as in Firecracker it goes through when the bucket is not in debt,
 * empties the bucket and leaves it in debt for the time the excess takes
 * to refill: nothing else is taken from that bucket before the debt is
 * paid, and the bucket refills only after it (Firecracker lets the bucket
 * refill during the debt too, which lets repeated oversized requests run
 * at up to twice the rate; ember does not).
 *
 * Differences from Firecracker, each on purpose: a consume() takes from
 * both buckets or from neither (Firecracker takes ops, then gives them
 * back when bytes refuse); wait_ns() says exactly when a refused request
 * can go (Firecracker polls every 100 ms); a bucket that PATCH changes
 * keeps what it holds (capped at the new size) instead of starting full,
 * and keeps its remaining burst unless one_time_burst itself changed.
 *
 * Pure: no clock is read here, no timer armed.  The caller passes the
 * time, CLOCK_MONOTONIC in nanoseconds, which must not go backwards
 * between calls on one limiter, and arms its own timer from wait_ns().
 * Not thread-safe: the caller serialises calls (the device lock).
 */
#ifndef EMBER_DEVICES_RATE_LIMITER_H
#define EMBER_DEVICES_RATE_LIMITER_H

#include <stdbool.h>
#include <stdint.h>

/*
 * One token bucket of a rate limiter, Firecracker's TokenBucket: @size
 * tokens (bytes for bandwidth, requests or frames for ops) refilled in
 * full every @refill_time_ms milliseconds, plus @one_time_burst tokens
 * that are spent first and never refill.  @size 0 or @refill_time_ms 0:
 * no limit (the bucket is off).
 */
struct token_bucket_config {
	uint64_t size;
	uint64_t one_time_burst;
	uint64_t refill_time_ms;
};

/* A rate limiter: a bandwidth and an operations bucket, either may be off. */
struct rate_limiter_config {
	struct token_bucket_config bandwidth, ops;
};

/* One bucket; every field is the module's (read them only in tests). */
struct rate_bucket {
	struct token_bucket_config cfg; /* as configured, for update() */
	uint64_t size; /* tokens when full; 0: the bucket is off */
	uint64_t refill_ns; /* time to refill @size tokens, >= 1 */
	uint64_t budget; /* tokens now, 0..size */
	uint64_t burst; /* one-time burst tokens left */
	/*
	 * The time @budget is counted to, exactly last_ns + frac / size ns
	 * (frac < size): the refill gives the tokens for the time after it.
	 * Later than now while the bucket is in debt.
	 */
	uint64_t last_ns;
	uint64_t frac;
};

struct rate_limiter {
	struct rate_bucket bw; /* bytes */
	struct rate_bucket ops; /* requests */
};

/*
 * rate_limiter__init() - @rl limits as @cfg says (NULL: no limit), both
 * buckets full from @now_ns.  Any values are taken without overflow
 * (vmm/config.h's config__check_rate_limiter() bounds what the API
 * accepts; a refill time beyond UINT64_MAX ns is clamped to it).
 */
void rate_limiter__init(struct rate_limiter *rl,
			const struct rate_limiter_config *cfg, uint64_t now_ns);

/*
 * rate_limiter__on() - does @rl limit anything (a bucket on)?  When it
 * does not, consume() always succeeds: a caller may skip reading the
 * clock.
 */
bool rate_limiter__on(const struct rate_limiter *rl);

/*
 * rate_limiter__consume() - take @bytes tokens from the bandwidth bucket
 * and @ops from the operations bucket at @now_ns, both or neither (a
 * bucket that is off gives any number).  Returns true when taken (the
 * request may go now), false when refused with nothing taken: the
 * request must wait (rate_limiter__wait_ns() says how long) and be tried
 * again, in order, before any later one.
 */
bool rate_limiter__consume(struct rate_limiter *rl, uint64_t bytes,
			   uint64_t ops, uint64_t now_ns);

/*
 * rate_limiter__wait_ns() - how long from @now_ns until consume(@bytes,
 * @ops) would succeed, if nothing else is consumed meanwhile: 0 when it
 * would now, else at least 1 (ns, saturated at UINT64_MAX).  Changes no
 * budget (it brings the refill up to date, which consume() would do).
 */
uint64_t rate_limiter__wait_ns(struct rate_limiter *rl, uint64_t bytes,
			       uint64_t ops, uint64_t now_ns);

/*
 * rate_limiter__update() - @rl now limits as @cfg says (PATCH at run
 * time).  Per bucket: one turned off forgets everything; one turned on
 * starts full; one whose configuration is the same keeps its state; one
 * whose size or refill time changed keeps its tokens (up to the new size)
 * and any debt, and refills at the new rate from @now_ns; its burst
 * restarts only if one_time_burst changed.
 */
void rate_limiter__update(struct rate_limiter *rl,
			  const struct rate_limiter_config *cfg,
			  uint64_t now_ns);

#endif /* EMBER_DEVICES_RATE_LIMITER_H */
