/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The monotonic clock and one-shot timerfds, as the rate limiters' host
 * sides use them (devices/rate_limiter.h takes the time from here; a
 * device's throttled queue or held frame comes back when its timerfd
 * fires on the event loop).
 */
#ifndef EMBER_VMM_TIMER_H
#define EMBER_VMM_TIMER_H

#include <stdint.h>

/* timer__now_ns() - CLOCK_MONOTONIC in nanoseconds. */
uint64_t timer__now_ns(void);

/*
 * timer__arm() - the timerfd @fd (CLOCK_MONOTONIC) fires once, @ns from
 * now: 0 is taken as 1 ns (0 would disarm it), more than 68 years as 68
 * years.  Only timerfd_settime(), so any thread may call it.  Returns 0
 * or a negative errno.
 */
int timer__arm(int fd, uint64_t ns);

#endif /* EMBER_VMM_TIMER_H */
