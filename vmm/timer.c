// SPDX-License-Identifier: Apache-2.0
/* The monotonic clock and one-shot timerfds (see timer.h). */
#include "timer.h"

#include <errno.h>
#include <stdint.h>
#include <sys/timerfd.h>
#include <time.h>

#define NS_PER_S 1000000000ULL

uint64_t timer__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

int timer__arm(int fd, uint64_t ns)
{
	struct itimerspec it = { 0 };

	if (!ns)
		ns = 1;
	if (ns / NS_PER_S > (uint64_t)INT32_MAX)
		ns = (uint64_t)INT32_MAX * NS_PER_S;
	it.it_value.tv_sec = (time_t)(ns / NS_PER_S);
	it.it_value.tv_nsec = (long)(ns % NS_PER_S);
	return timerfd_settime(fd, 0, &it, NULL) < 0 ? -errno : 0;
}
