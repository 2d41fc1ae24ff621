// SPDX-License-Identifier: Apache-2.0
/* The event thread (see event.h). */
#include "event.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <termios.h>
#include <unistd.h>

#include "../devices/serial.h"
#include "log.h"

#define CTRL_A 0x01

struct event_loop {
	int epfd, stopfd, in_fd;
	struct device *serial;
	void (*vm_stop)(void *opaque);
	void *opaque;
	pthread_t thread;
	bool tty;
	bool in_polled; /* in_fd is in the epoll set (not a file) */
	struct termios saved;
	/* Bytes read but not yet taken by the UART's FIFO. */
	uint8_t pending[256];
	size_t npending, off;
	bool escape;
};

/* Handle Ctrl-A x / Ctrl-A Ctrl-A on a terminal; false when consumed. */
static bool event__filter(struct event_loop *el, uint8_t c)
{
	if (!el->tty)
		return true;
	if (el->escape) {
		el->escape = false;
		if (c == 'x') {
			el->vm_stop(el->opaque);
			return false;
		}
		return c == CTRL_A;
	}
	if (c == CTRL_A) {
		el->escape = true;
		return false;
	}
	return true;
}

static void *event__thread(void *arg)
{
	struct event_loop *el = arg;
	struct epoll_event ev;
	uint8_t buf[256];
	bool in_open = true;

	for (;;) {
		/*
		 * The FIFO drains only as the guest reads: poll while input
		 * waits.  A regular file is always readable: no waiting.
		 */
		int timeout = el->npending		  ? 5 :
			      (!el->in_polled && in_open) ? 0 :
							    -1;
		int n = epoll_wait(el->epfd, &ev, 1, timeout);
		bool readable = n > 0 && ev.data.fd == el->in_fd;

		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && ev.data.fd == el->stopfd)
			break;
		if (el->npending) {
			el->off +=
				serial__input(el->serial, el->pending + el->off,
					      el->npending - el->off);
			if (el->off == el->npending)
				el->npending = el->off = 0;
			continue;
		}
		if (!el->in_polled)
			readable = true;
		if (readable && in_open) {
			ssize_t r = read(el->in_fd, buf, sizeof(buf));
			ssize_t i;

			if (r <= 0 &&
			    !(r < 0 && (errno == EINTR || errno == EAGAIN))) {
				/* EOF: the guest just stops getting input. */
				if (el->in_polled)
					epoll_ctl(el->epfd, EPOLL_CTL_DEL,
						  el->in_fd, NULL);
				in_open = false;
				continue;
			}
			for (i = 0; i < r; i++)
				if (event__filter(el, buf[i]))
					el->pending[el->npending++] = buf[i];
			el->off = serial__input(el->serial, el->pending,
						el->npending);
			if (el->off == el->npending)
				el->npending = el->off = 0;
		}
	}
	return NULL;
}

struct event_loop *event__start(int in_fd, struct device *serial,
				void (*vm_stop)(void *opaque), void *opaque)
{
	struct event_loop *el = calloc(1, sizeof(*el));
	struct epoll_event ev = { .events = EPOLLIN };
	int ret;

	if (!el)
		return NULL;
	el->in_fd = in_fd;
	el->serial = serial;
	el->vm_stop = vm_stop;
	el->opaque = opaque;
	el->epfd = epoll_create1(EPOLL_CLOEXEC);
	el->stopfd = eventfd(0, EFD_CLOEXEC);
	if (el->epfd < 0 || el->stopfd < 0)
		goto fail;
	ev.data.fd = el->stopfd;
	if (epoll_ctl(el->epfd, EPOLL_CTL_ADD, el->stopfd, &ev) < 0)
		goto fail;
	ev.data.fd = in_fd;
	/* Regular files and /dev/null cannot be polled: read them as is. */
	el->in_polled = true;
	if (epoll_ctl(el->epfd, EPOLL_CTL_ADD, in_fd, &ev) < 0) {
		if (errno != EPERM)
			goto fail;
		el->in_polled = false;
	}
	if (isatty(in_fd) && tcgetattr(in_fd, &el->saved) == 0) {
		struct termios raw = el->saved;

		raw.c_iflag &= ~(tcflag_t)(ICRNL | IXON | INLCR | IGNCR);
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ISIG | IEXTEN);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		if (tcsetattr(in_fd, TCSANOW, &raw) == 0)
			el->tty = true;
	}
	ret = pthread_create(&el->thread, NULL, event__thread, el);
	if (ret) {
		errno = ret;
		goto fail;
	}
	return el;
fail:
	log_warn("console input: %s", strerror(errno));
	if (el->tty)
		tcsetattr(in_fd, TCSANOW, &el->saved);
	if (el->epfd >= 0)
		close(el->epfd);
	if (el->stopfd >= 0)
		close(el->stopfd);
	free(el);
	return NULL;
}

void event__stop(struct event_loop *el)
{
	uint64_t one = 1;

	if (!el)
		return;
	if (write(el->stopfd, &one, sizeof(one)) == sizeof(one))
		pthread_join(el->thread, NULL);
	if (el->tty)
		tcsetattr(el->in_fd, TCSANOW, &el->saved);
	close(el->epfd);
	close(el->stopfd);
	free(el);
}
