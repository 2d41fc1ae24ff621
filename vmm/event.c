// SPDX-License-Identifier: Apache-2.0
/* The event thread (see event.h). */
#include "event.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"

#define EVENT_MAX_HANDLERS 64

struct event_handler {
	int fd; /* -1: free slot */
	event_fn fn;
	void *opaque;
};

struct event_loop {
	int epfd, stopfd;
	pthread_t thread;
	bool started;
	struct event_handler h[EVENT_MAX_HANDLERS];
};

struct event_loop *event__create(void)
{
	struct event_loop *el = calloc(1, sizeof(*el));
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	unsigned int i;

	if (!el)
		return NULL;
	for (i = 0; i < EVENT_MAX_HANDLERS; i++)
		el->h[i].fd = -1;
	el->epfd = epoll_create1(EPOLL_CLOEXEC);
	el->stopfd = eventfd(0, EFD_CLOEXEC);
	if (el->epfd < 0 || el->stopfd < 0 ||
	    epoll_ctl(el->epfd, EPOLL_CTL_ADD, el->stopfd, &ev) < 0) {
		log_error("event loop: %s", strerror(errno));
		if (el->epfd >= 0)
			close(el->epfd);
		if (el->stopfd >= 0)
			close(el->stopfd);
		free(el);
		return NULL;
	}
	return el;
}

int event__add(struct event_loop *el, int fd, event_fn fn, void *opaque)
{
	struct epoll_event ev = { .events = EPOLLIN };
	unsigned int i;

	for (i = 0; i < EVENT_MAX_HANDLERS && el->h[i].fd >= 0; i++)
		;
	if (i == EVENT_MAX_HANDLERS)
		return -ENOSPC;
	el->h[i] =
		(struct event_handler){ .fd = fd, .fn = fn, .opaque = opaque };
	ev.data.ptr = &el->h[i];
	if (epoll_ctl(el->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		el->h[i].fd = -1;
		return -errno;
	}
	return 0;
}

void event__del(struct event_loop *el, int fd)
{
	unsigned int i;

	for (i = 0; i < EVENT_MAX_HANDLERS; i++) {
		if (el->h[i].fd == fd) {
			epoll_ctl(el->epfd, EPOLL_CTL_DEL, fd, NULL);
			el->h[i].fd = -1;
		}
	}
}

static void *event__thread(void *arg)
{
	struct event_loop *el = arg;
	struct epoll_event evs[16];
	int n, i;

	for (;;) {
		n = epoll_wait(el->epfd, evs, 16, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_error("event loop: epoll_wait: %s",
				  strerror(errno));
			break;
		}
		for (i = 0; i < n; i++) {
			struct event_handler *h = evs[i].data.ptr;

			if (!h)
				return NULL; /* the stop eventfd */
			if (h->fd >= 0)
				h->fn(h->opaque, h->fd);
		}
	}
	return NULL;
}

int event__start(struct event_loop *el)
{
	int ret = pthread_create(&el->thread, NULL, event__thread, el);

	if (ret) {
		log_error("event thread: %s", strerror(ret));
		return -ret;
	}
	pthread_setname_np(el->thread, "ember-event");
	el->started = true;
	return 0;
}

void event__destroy(struct event_loop *el)
{
	uint64_t one = 1;

	if (!el)
		return;
	if (el->started && write(el->stopfd, &one, sizeof(one)) == sizeof(one))
		pthread_join(el->thread, NULL);
	close(el->epfd);
	close(el->stopfd);
	free(el);
}
