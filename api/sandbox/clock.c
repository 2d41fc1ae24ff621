// SPDX-License-Identifier: Apache-2.0
/* Clocks, sleeps and waits: see clock.h. */
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include "clock.h"

int64_t clock__mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t clock__wall_s(void)
{
	return (int64_t)time(NULL);
}

void clock__sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int clock__wait_fd(int fd, short events, int64_t deadline_ms)
{
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = events };
		int64_t left =
			deadline_ms ? deadline_ms - clock__mono_ms() : 60000;
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, left > 60000 ? 60000 : (int)left);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

int clock__send_all(int fd, const void *buf, size_t len, int64_t deadline_ms)
{
	const char *p = buf;
	size_t off = 0;
	int rc;

	while (off < len) {
		ssize_t w = send(fd, p + off, len - off, MSG_NOSIGNAL);

		if (w > 0) {
			off += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			rc = clock__wait_fd(fd, POLLOUT, deadline_ms);
			if (rc < 0)
				return rc;
			continue;
		}
		return -ECONNRESET;
	}
	return 0;
}

int clock__cond_init(pthread_cond_t *cond)
{
	pthread_condattr_t ca;
	int rc;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	rc = pthread_cond_init(cond, &ca);
	pthread_condattr_destroy(&ca);
	return rc;
}
