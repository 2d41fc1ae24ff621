// SPDX-License-Identifier: Apache-2.0
/* Console output (see console_out.h). */
#include "console_out.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../log.h"

/* How long one wait for a slow reader lasts before the stop flag is read. */
#define CONSOLE_OUT_WAIT_MS 100
/* A console line longer than this is not searched for the panic marker. */
#define CONSOLE_OUT_LINE_MAX 256

/* What kernel/panic.c prints first (Linux 2.6 to 6.x). */
static const char panic_marker[] = "Kernel panic - not syncing: ";

struct console_out {
	int fd; /* -1: discard */
	bool may_block; /* not a regular file: a write can wait */
	bool gone; /* the reader has gone: drop everything */
	bool stopping; /* atomic: console_out__stop() was called */
	bool held; /* atomic: console_out__hold() */
	uint64_t dropped;
	double first_ms; /* the first byte's log__ms(); 0: none yet */
	char line[CONSOLE_OUT_LINE_MAX];
	size_t line_len; /* SIZE_MAX: this line is too long, skip it */
	bool have_panic;
	char panic[CONSOLE_OUT_PANIC_MAX + 1];
};

struct console_out *console_out__create(int fd)
{
	struct console_out *c = calloc(1, sizeof(*c));
	struct stat st;

	if (!c)
		return NULL;
	c->fd = fd;
	c->may_block = fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode));
	return c;
}

/* Keep the reason after the marker, printable ASCII only. */
static void console_out__check_line(struct console_out *c)
{
	const char *m;
	size_t i, n = 0;

	if (c->have_panic)
		return;
	c->line[c->line_len] = '\0';
	/* A NUL from the guest ends the search early: nothing is lost. */
	m = strstr(c->line, panic_marker);
	if (!m)
		return;
	m += sizeof(panic_marker) - 1;
	for (i = 0; m[i] && n < CONSOLE_OUT_PANIC_MAX; i++) {
		unsigned char ch = (unsigned char)m[i];

		if (ch == '\r')
			continue;
		c->panic[n++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
	}
	c->panic[n] = '\0';
	c->have_panic = true;
}

static void console_out__watch(struct console_out *c, uint8_t byte)
{
	if (byte == '\n') {
		if (c->line_len != SIZE_MAX)
			console_out__check_line(c);
		c->line_len = 0;
		return;
	}
	if (c->line_len == SIZE_MAX)
		return;
	if (c->line_len == sizeof(c->line) - 1) {
		c->line_len = SIZE_MAX;
		return;
	}
	c->line[c->line_len++] = (char)byte;
}

/* Count a lost byte; @gone: the reader has gone, so will every later one. */
static void console_out__drop(struct console_out *c, int err, bool gone)
{
	if (gone && !c->gone)
		log_info("console: the reader has gone (%s): guest output is "
			 "dropped from now on",
			 strerror(err));
	else if (!c->dropped)
		log_info("console: guest output lost: %s", strerror(err));
	c->gone |= gone;
	c->dropped++;
}

/* Stopping or held: a byte that cannot go at once is dropped. */
static bool console_out__no_wait(struct console_out *c)
{
	return __atomic_load_n(&c->stopping, __ATOMIC_ACQUIRE) ||
	       __atomic_load_n(&c->held, __ATOMIC_ACQUIRE);
}

static void console_out__emit(struct console_out *c, uint8_t byte)
{
	struct pollfd p = { .fd = c->fd, .events = POLLOUT };
	ssize_t n;

	if (c->gone) {
		c->dropped++;
		return;
	}
	for (;;) {
		/* Wait for room first, so that write() itself never blocks. */
		if (c->may_block) {
			int r = poll(&p, 1,
				     console_out__no_wait(c) ?
					     0 :
					     CONSOLE_OUT_WAIT_MS);

			if (r < 0 && errno != EINTR) {
				console_out__drop(c, errno, false);
				return;
			}
			if (r <= 0) {
				if (console_out__no_wait(c)) {
					console_out__drop(c, EAGAIN, false);
					return;
				}
				continue;
			}
		}
		n = write(c->fd, &byte, 1);
		if (n == 1)
			return;
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0 && (errno == EPIPE || errno == EIO ||
			      errno == EBADF || errno == ENXIO)) {
			console_out__drop(c, errno, true);
			return;
		}
		/* ENOSPC and the like: this byte is lost, later ones may go. */
		console_out__drop(c, n < 0 ? errno : EIO, false);
		return;
	}
}

void console_out__tx(void *opaque, uint8_t byte)
{
	struct console_out *c = opaque;

	if (!c->first_ms)
		c->first_ms = log__ms();
	console_out__watch(c, byte);
	if (c->fd >= 0)
		console_out__emit(c, byte);
}

void console_out__hold(struct console_out *c, bool hold)
{
	if (c)
		__atomic_store_n(&c->held, hold, __ATOMIC_RELEASE);
}

void console_out__stop(struct console_out *c)
{
	if (c)
		__atomic_store_n(&c->stopping, true, __ATOMIC_RELEASE);
}

uint64_t console_out__dropped(const struct console_out *c)
{
	return c ? c->dropped : 0;
}

double console_out__first_ms(const struct console_out *c)
{
	return c ? c->first_ms : 0;
}

const char *console_out__panic(const struct console_out *c)
{
	return c && c->have_panic ? c->panic : NULL;
}

void console_out__destroy(struct console_out *c)
{
	free(c);
}
