// SPDX-License-Identifier: Apache-2.0
/*
 * The guest agent's INIT (agent_init.h, PROTOCOL.md), sent by the host after a
 * restore: fresh entropy into the kernel's pool and a reseed, then the
 * wall clock.
 *
 * With EMBER_AGENT_INIT_REPORT=FILE in the agent's environment (a test
 * hook for unprivileged hosts) INIT touches neither the clock nor the
 * random pool: it appends what it would do to FILE and answers as if it
 * had done it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#if __has_include(<linux/random.h>)
#include <linux/random.h>
#else
/* musl-gcc sees no kernel headers: the uapi of <linux/random.h>. */
struct rand_pool_info {
	int entropy_count; /* bits credited */
	int buf_size; /* bytes in buf */
	uint32_t buf[];
};
#define RNDADDENTROPY _IOW('R', 0x03, int[2])
#endif
#ifndef RNDRESEEDCRNG
#define RNDRESEEDCRNG _IO('R', 0x07) /* Linux 4.17 */
#endif

#include "agent_init.h"

/*
 * EMBER_AGENT_INIT_REPORT, read once by agent_init__from_env(): where INIT
 * reports instead of acting (NULL: act).  Global as the environment it
 * comes from is.
 */
static const char *init_report;

int agent_init__from_env(void)
{
	init_report = getenv("EMBER_AGENT_INIT_REPORT");
	if (init_report && !*init_report)
		init_report = NULL;
	if (init_report) {
		init_report = strdup(init_report);
		if (!init_report)
			return -ENOMEM;
		unsetenv("EMBER_AGENT_INIT_REPORT"); /* not for the execs */
	}
	return 0;
}

/*
 * Is the clock @now further than EMBER_AGENT_CLOCK_SLACK_NS from @sec.@nsec
 * (the host's time)?
 */
static int clock_off(const struct timespec *now, uint64_t sec, uint32_t nsec)
{
	int64_t ds, ns;

	if (__builtin_sub_overflow((int64_t)now->tv_sec, (int64_t)sec, &ds) ||
	    ds > 1 || ds < -1)
		return 1;
	ns = ds * 1000000000LL + ((int64_t)now->tv_nsec - (int64_t)nsec);
	return ns > EMBER_AGENT_CLOCK_SLACK_NS ||
	       ns < -EMBER_AGENT_CLOCK_SLACK_NS;
}

/*
 * Mix @len bytes into the kernel's input pool, credited in full (the host
 * is trusted with the guest's memory anyway), then make the kernel rekey
 * its generator from the pool now, not at its next scheduled reseed: a
 * guest restored from a snapshot shares that state with every other clone.
 * Returns 0 or an errno, *@what naming the failed step.
 */
static int init_entropy(const uint8_t *buf, uint32_t len, const char **what)
{
	uint32_t raw[2 + EMBER_AGENT_MAX_ENTROPY / 4];
	struct rand_pool_info *rpi = (struct rand_pool_info *)raw;
	int fd, err = 0;

	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*what = "/dev/urandom";
		return errno;
	}
	rpi->entropy_count = (int)len * 8;
	rpi->buf_size = (int)len;
	memcpy(rpi->buf, buf, len);
	if (ioctl(fd, RNDADDENTROPY, rpi) < 0) {
		err = errno;
		*what = "RNDADDENTROPY";
	} else if (ioctl(fd, RNDRESEEDCRNG) < 0) {
		err = errno;
		*what = "RNDRESEEDCRNG";
	}
	explicit_bzero(raw, sizeof(raw));
	close(fd);
	return err;
}

/* The test hook: append what INIT would do to init_report. */
static int init_write_report(const struct ember_agent_init *in, int step)
{
	char hex[2 * EMBER_AGENT_MAX_ENTROPY + 2] = "-";
	int fd, n, err = 0;

	for (uint32_t i = 0; i < in->entropy_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", in->entropy[i]);
	fd = open(init_report, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno;
	if (in->have_time)
		n = dprintf(fd, "init time=%llu.%09u step=%d entropy=%s\n",
			    (unsigned long long)in->sec, in->nsec, step, hex);
	else
		n = dprintf(fd, "init time=- step=0 entropy=%s\n", hex);
	if (n < 0)
		err = errno ? errno : EIO;
	if (close(fd) < 0 && !err)
		err = errno;
	return err;
}

/*
 * INIT: fresh entropy into the pool and a reseed, then the wall clock.
 * Every step is tried; the reply is OK or the first failure.  Repeating
 * it is harmless.  The payload (entropy) is wiped once used.
 */
void agent_init__handle(struct conn *c, const struct ember_agent_hdr *h)
{
	uint8_t *payload = c->rx + EMBER_AGENT_HDR_SIZE;
	const char *what = NULL;
	struct ember_agent_init in;
	struct timespec now;
	int rc, err = 0, step = 0;

	rc = ember_agent_init_decode(payload, h->len, &in);
	if (rc < 0) {
		explicit_bzero(payload, h->len);
		agent_conn__send_proto_error(c, h->stream, rc);
		return;
	}
	if (in.have_time) {
		clock_gettime(CLOCK_REALTIME, &now);
		step = clock_off(&now, in.sec, in.nsec);
	}
	if (init_report) {
		err = init_write_report(&in, step);
		what = "init report";
	} else {
		if (in.entropy)
			err = init_entropy(in.entropy, in.entropy_len, &what);
		if (step) {
			struct timespec ts = { .tv_sec = (time_t)in.sec,
					       .tv_nsec = (long)in.nsec };

			if (clock_settime(CLOCK_REALTIME, &ts) < 0 && !err) {
				err = errno;
				what = "clock_settime";
			}
		}
	}
	explicit_bzero(payload, h->len);
	if (err)
		agent_conn__send_errno(c, h->stream, err, what);
	else
		agent_conn__send(c, EMBER_AGENT_OK, h->stream, NULL, 0);
}
