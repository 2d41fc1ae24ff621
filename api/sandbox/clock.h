/* SPDX-License-Identifier: Apache-2.0 */
/* Clocks, sleeps and waits on fds with a deadline. */
#ifndef EMBER_API_CLOCK_H
#define EMBER_API_CLOCK_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in milliseconds: for deadlines and timeouts. */
int64_t clock__mono_ms(void);

/* The wall clock: Unix time in seconds. */
int64_t clock__wall_s(void);

/* Sleep @ms milliseconds (>= 0), all of them even when signals come. */
void clock__sleep_ms(int ms);

/*
 * Wait until @fd is ready for @events (poll(2) bits) or the
 * CLOCK_MONOTONIC time @deadline_ms (clock__mono_ms(); 0: none) passes,
 * through signals.  0 when ready (or in error or hung up: the next read
 * or write says which), -ETIMEDOUT, or poll's negative errno.
 */
int clock__wait_fd(int fd, short events, int64_t deadline_ms);

/*
 * Send the @len bytes at @buf on the non-blocking socket @fd (no
 * SIGPIPE), waiting for room until @deadline_ms as clock__wait_fd()
 * does.  0; -ETIMEDOUT (or poll's negative errno); -ECONNRESET when the
 * socket takes no more (the peer is gone).
 */
int clock__send_all(int fd, const void *buf, size_t len, int64_t deadline_ms);

/*
 * Initialise the condition variable @cond so that pthread_cond_timedwait()
 * on it takes CLOCK_MONOTONIC deadlines (not the wall clock, which can
 * jump).  0, or the positive error number pthread_cond_init() returns.
 */
int clock__cond_init(pthread_cond_t *cond);

#endif /* EMBER_API_CLOCK_H */
