// SPDX-License-Identifier: Apache-2.0
/* Firecracker's token buckets (see rate_limiter.h). */
#include "rate_limiter.h"

#include <string.h>

#define NS_PER_MS 1000000ULL

/*
 * Products of two 64-bit values (time times tokens) need 128 bits; the
 * results that come back to 64 bits saturate.
 */
typedef unsigned __int128 u128;

static uint64_t rl__sat(u128 v)
{
	return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

static uint64_t rl__add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static bool bucket__on_cfg(const struct token_bucket_config *c)
{
	return c->size && c->refill_time_ms;
}

/* A full bucket from @now (or an off one). */
static void bucket__init(struct rate_bucket *b,
			 const struct token_bucket_config *c, uint64_t now)
{
	memset(b, 0, sizeof(*b));
	if (!c || !bucket__on_cfg(c))
		return;
	b->cfg = *c;
	b->size = c->size;
	b->refill_ns = rl__sat((u128)c->refill_time_ms * NS_PER_MS);
	b->budget = c->size;
	b->burst = c->one_time_burst;
	b->last_ns = now;
}

/*
 * Does @b still owe time at @now?  The exact end of what it counted is
 * last_ns + frac / size.
 */
static bool bucket__owes(const struct rate_bucket *b, uint64_t now)
{
	return b->last_ns > now || (b->last_ns == now && b->frac);
}

/*
 * Bring @b's budget up to @now: the whole tokens the time since the
 * exact last_ns + frac / size paid for; that point moves on by exactly
 * the time those took, so no fraction of a token is lost or given twice
 * however often this runs.
 */
static void bucket__refill(struct rate_bucket *b, uint64_t now)
{
	u128 elapsed, adv;
	uint64_t tokens;

	if (!b->size || bucket__owes(b, now))
		return; /* off, or in debt */
	/* In units of 1/size ns; positive, as the bucket owes nothing. */
	elapsed = (u128)(now - b->last_ns) * b->size - b->frac;
	if (elapsed >= (u128)b->refill_ns * b->size) {
		b->budget = b->size;
		b->last_ns = now;
		b->frac = 0;
		return;
	}
	/* Less than refill_ns: fewer than size tokens, 64 bits. */
	tokens = (uint64_t)(elapsed / b->refill_ns);
	if (!tokens)
		return;
	adv = b->frac + (u128)tokens * b->refill_ns;
	b->last_ns += (uint64_t)(adv / b->size);
	b->frac = (uint64_t)(adv % b->size);
	b->budget = b->budget > b->size - tokens ? b->size : b->budget + tokens;
}

/*
 * The first time, after the exact last_ns + frac / size, at which the
 * refill has given @n more tokens, saturated.
 */
static uint64_t bucket__when(const struct rate_bucket *b, uint64_t n)
{
	u128 t = (u128)n * b->refill_ns + b->frac;

	return rl__add_sat(b->last_ns,
			   rl__sat(t / b->size + (t % b->size != 0)));
}

/* The tokens of @n that the burst leaves to the budget. */
static uint64_t bucket__beyond_burst(const struct rate_bucket *b, uint64_t n)
{
	return n > b->burst ? n - b->burst : 0;
}

/*
 * How long after @now (refilled to @now) until @n tokens can be taken
 * from @b: 0 when they can now.
 */
static uint64_t bucket__wait(const struct rate_bucket *b, uint64_t n,
			     uint64_t now)
{
	uint64_t need, at;

	if (!b->size || !n)
		return 0;
	need = bucket__beyond_burst(b, n);
	if (!need)
		return 0;
	if (bucket__owes(b, now)) {
		/* In debt, the budget 0: an oversized one waits it out. */
		at = bucket__when(b, need > b->size ? 0 : need);
		return at > now ? at - now : 1;
	}
	if (need > b->size || need <= b->budget)
		return 0; /* oversized (goes, see the header) or fits */
	/* After the refill to @now, less than a token's time is counted. */
	at = bucket__when(b, need - b->budget);
	return at > now ? at - now : 1;
}

/* Take @n tokens from @b at @now; bucket__wait() said 0. */
static void bucket__take(struct rate_bucket *b, uint64_t n, uint64_t now)
{
	uint64_t need;
	u128 debt;

	if (!b->size || !n)
		return;
	need = bucket__beyond_burst(b, n);
	b->burst -= n - need;
	if (!need)
		return;
	if (need <= b->budget) {
		b->budget -= need;
		return;
	}
	/* Oversized: empty the bucket and owe the rest, refilling after. */
	debt = (u128)(need - b->budget) * b->refill_ns;
	b->budget = 0;
	b->last_ns = rl__add_sat(now, rl__sat(debt / b->size));
	b->frac = b->last_ns == UINT64_MAX ? 0 : (uint64_t)(debt % b->size);
}

void rate_limiter__init(struct rate_limiter *rl,
			const struct rate_limiter_config *cfg, uint64_t now_ns)
{
	bucket__init(&rl->bw, cfg ? &cfg->bandwidth : NULL, now_ns);
	bucket__init(&rl->ops, cfg ? &cfg->ops : NULL, now_ns);
}

bool rate_limiter__on(const struct rate_limiter *rl)
{
	return rl->bw.size || rl->ops.size;
}

uint64_t rate_limiter__wait_ns(struct rate_limiter *rl, uint64_t bytes,
			       uint64_t ops, uint64_t now_ns)
{
	uint64_t a, b;

	bucket__refill(&rl->bw, now_ns);
	bucket__refill(&rl->ops, now_ns);
	a = bucket__wait(&rl->bw, bytes, now_ns);
	b = bucket__wait(&rl->ops, ops, now_ns);
	return a > b ? a : b;
}

bool rate_limiter__consume(struct rate_limiter *rl, uint64_t bytes,
			   uint64_t ops, uint64_t now_ns)
{
	if (!rate_limiter__on(rl))
		return true;
	if (rate_limiter__wait_ns(rl, bytes, ops, now_ns))
		return false;
	bucket__take(&rl->bw, bytes, now_ns);
	bucket__take(&rl->ops, ops, now_ns);
	return true;
}

static void bucket__update(struct rate_bucket *b,
			   const struct token_bucket_config *c, uint64_t now)
{
	struct rate_bucket old = *b;

	if (!bucket__on_cfg(c) || !old.size) {
		bucket__init(b, c, now);
		return;
	}
	if (!memcmp(&old.cfg, c, sizeof(*c)))
		return;
	bucket__refill(&old, now); /* what the old rate owes until now */
	bucket__init(b, c, now);
	b->budget = old.budget < b->size ? old.budget : b->size;
	if (old.cfg.one_time_burst == c->one_time_burst)
		b->burst = old.burst;
	if (bucket__owes(&old, now)) {
		b->last_ns = old.last_ns; /* the debt stands */
		b->frac = 0;
	}
}

void rate_limiter__update(struct rate_limiter *rl,
			  const struct rate_limiter_config *cfg,
			  uint64_t now_ns)
{
	static const struct rate_limiter_config none;

	if (!cfg)
		cfg = &none;
	bucket__update(&rl->bw, &cfg->bandwidth, now_ns);
	bucket__update(&rl->ops, &cfg->ops, now_ns);
}
