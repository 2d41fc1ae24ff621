// SPDX-License-Identifier: Apache-2.0
/* Console input (see console.h). */
#include "console.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "../../devices/serial.h"
#include "../log.h"

#define CTRL_A 0x01
/* Polling for the guest (its tty to open, its FIFO to drain), or a file. */
#define CONSOLE_RETRY_NS (5ULL * 1000 * 1000)
/* The UART's pacing asks for waits of a character time: batch them. */
#define CONSOLE_MIN_WAIT_NS (1ULL * 1000 * 1000)

struct console {
	struct event_loop *el;
	int in_fd, timer_fd;
	struct device *serial;
	void (*quit)(void *opaque);
	void *opaque;
	bool in_polled; /* in_fd is watched by epoll (not a regular file) */
	bool in_open; /* no EOF yet */
	bool in_watched; /* in_fd is in the epoll set right now */
	uint64_t timer_ns; /* the armed one-shot wait; 0: disarmed */
	bool tty, escape;
	bool held; /* atomic: console__hold() */
	struct termios saved;
	/* Bytes read but not yet taken by the UART. */
	uint8_t pending[256];
	size_t npending, off;
};

/* Handle Ctrl-A x / Ctrl-A Ctrl-A on a terminal; false when consumed. */
static bool console__filter(struct console *c, uint8_t ch)
{
	if (!c->tty)
		return true;
	if (c->escape) {
		c->escape = false;
		if (ch == 'x') {
			c->quit(c->opaque);
			return false;
		}
		return ch == CTRL_A;
	}
	if (ch == CTRL_A) {
		c->escape = true;
		return false;
	}
	return true;
}

/*
 * Retries run on a one-shot timer, armed only while input waits for the
 * UART or stdin cannot be polled; @ns 0 disarms it.
 */
static void console__timer(struct console *c, uint64_t ns)
{
	struct itimerspec its = { 0 };

	if (!ns && !c->timer_ns)
		return;
	its.it_value.tv_sec = (time_t)(ns / 1000000000ULL);
	its.it_value.tv_nsec = (long)(ns % 1000000000ULL);
	timerfd_settime(c->timer_fd, 0, &its, NULL);
	c->timer_ns = ns;
}

/* Hand pending bytes to the UART; *@retry_ns as serial__input() says. */
static void console__feed(struct console *c, uint64_t *retry_ns)
{
	c->off += serial__input(c->serial, c->pending + c->off,
				c->npending - c->off, retry_ns);
	if (c->off == c->npending)
		c->npending = c->off = 0;
}

static void console__on_ready(void *opaque, int fd);

static void console__pump(struct console *c)
{
	uint8_t buf[sizeof(c->pending)];
	uint64_t retry = 0, wait = 0;
	ssize_t r, i;

	if (__atomic_load_n(&c->held, __ATOMIC_ACQUIRE)) {
		/* Paused: nothing moves; console__hold() restarts us. */
		if (c->in_watched)
			event__del(c->el, c->in_fd);
		c->in_watched = false;
		console__timer(c, 0);
		return;
	}
	if (c->npending)
		console__feed(c, &retry);
	if (!c->npending && c->in_open) {
		r = read(c->in_fd, buf, sizeof(buf));
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			r = -1;
		else if (r <= 0) {
			/* EOF or error: the guest just gets no more input. */
			c->in_open = false;
			if (c->in_watched)
				event__del(c->el, c->in_fd);
			c->in_watched = false;
		}
		for (i = 0; i < r; i++)
			if (console__filter(c, buf[i]))
				c->pending[c->npending++] = buf[i];
		if (c->npending)
			console__feed(c, &retry);
	}
	/* Back-pressure: stdin is not watched while input is pending. */
	if (c->in_polled && c->in_open) {
		if (c->npending && c->in_watched) {
			event__del(c->el, c->in_fd);
			c->in_watched = false;
		} else if (!c->npending && !c->in_watched &&
			   event__add(c->el, c->in_fd, console__on_ready, c) ==
				   0) {
			c->in_watched = true;
		}
	}
	if (c->npending)
		wait = !retry			   ? CONSOLE_RETRY_NS :
		       retry < CONSOLE_MIN_WAIT_NS ? CONSOLE_MIN_WAIT_NS :
						     retry;
	else if (c->in_open && !c->in_polled)
		wait = CONSOLE_RETRY_NS;
	console__timer(c, wait);
}

/* Input is readable, or the retry timer fired (its count read). */
static void console__on_ready(void *opaque, int fd)
{
	(void)fd;
	console__pump(opaque);
}

struct console *console__start(struct event_loop *el, int in_fd,
			       struct device *serial,
			       void (*quit)(void *opaque), void *opaque)
{
	struct console *c = calloc(1, sizeof(*c));
	int ret;

	if (!c)
		return NULL;
	c->el = el;
	c->in_fd = in_fd;
	c->serial = serial;
	c->quit = quit;
	c->opaque = opaque;
	c->in_open = true;
	c->timer_fd =
		timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (c->timer_fd < 0 ||
	    event__add_counter(el, c->timer_fd, console__on_ready, c) < 0) {
		log_warn("console input: %s", strerror(errno));
		goto fail;
	}
	ret = event__add(el, in_fd, console__on_ready, c);
	if (ret == 0)
		c->in_polled = c->in_watched = true;
	else if (ret != -EPERM) /* regular files: read on the timer */
		log_warn("console input: %s", strerror(-ret));
	if (isatty(in_fd) && tcgetattr(in_fd, &c->saved) == 0) {
		struct termios raw = c->saved;

		raw.c_iflag &= ~(tcflag_t)(ICRNL | IXON | INLCR | IGNCR);
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ISIG | IEXTEN);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		if (tcsetattr(in_fd, TCSANOW, &raw) == 0)
			c->tty = true;
	}
	console__timer(c, c->in_polled ? 0 : CONSOLE_RETRY_NS);
	return c;
fail:
	if (c->timer_fd >= 0)
		close(c->timer_fd);
	free(c);
	return NULL;
}

void console__hold(struct console *c, bool hold)
{
	struct itimerspec now = { .it_value.tv_nsec = 1 };

	if (!c)
		return;
	__atomic_store_n(&c->held, hold, __ATOMIC_RELEASE);
	/* Released: pump once on the event thread, which re-arms as needed. */
	if (!hold && timerfd_settime(c->timer_fd, 0, &now, NULL) == 0)
		c->timer_ns = 1;
}

void console__destroy(struct console *c)
{
	if (!c)
		return;
	if (c->tty)
		tcsetattr(c->in_fd, TCSANOW, &c->saved);
	close(c->timer_fd);
	free(c);
}
