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
	bool drain; /* event__add_counter(): read the count before fn */
};

struct event_loop {
	int epfd, stopfd;
	pthread_t thread;
	bool started;
	struct event_handler h[EVENT_MAX_HANDLERS];
	/* event__call(): one call at a time, handed over through callfd. */
	int callfd;
	pthread_mutex_t call_lock; /* held by the caller for the whole call */
	pthread_mutex_t done_lock;
	pthread_cond_t done_cond;
	void (*call_fn)(void *arg);
	void *call_arg;
	bool call_done;
};

int event__drain(int fd)
{
	uint64_t n;
	ssize_t r = read(fd, &n, sizeof(n));

	if (r < 0)
		return errno == EAGAIN ? 0 : -errno;
	return r == sizeof(n);
}

/* The event thread's side of event__call(). */
static void event__on_call(void *opaque, int fd)
{
	struct event_loop *el = opaque;

	if (event__drain(fd) <= 0)
		return;
	pthread_mutex_lock(&el->done_lock);
	if (el->call_fn && !el->call_done) {
		el->call_fn(el->call_arg);
		el->call_done = true;
		pthread_cond_broadcast(&el->done_cond);
	}
	pthread_mutex_unlock(&el->done_lock);
}

int event__on_thread(const struct event_loop *el)
{
	return el->started && pthread_equal(pthread_self(), el->thread);
}

void event__call(struct event_loop *el, void (*fn)(void *arg), void *arg)
{
	uint64_t one = 1;

	if (!el->started || event__on_thread(el)) {
		fn(arg);
		return;
	}
	pthread_mutex_lock(&el->call_lock);
	pthread_mutex_lock(&el->done_lock);
	el->call_fn = fn;
	el->call_arg = arg;
	el->call_done = false;
	if (write(el->callfd, &one, sizeof(one)) != sizeof(one)) {
		/* Cannot happen short of a counter overflow: run it here. */
		fn(arg);
		el->call_done = true;
	}
	while (!el->call_done)
		pthread_cond_wait(&el->done_cond, &el->done_lock);
	el->call_fn = NULL;
	pthread_mutex_unlock(&el->done_lock);
	pthread_mutex_unlock(&el->call_lock);
}

struct event_loop *event__create(void)
{
	struct event_loop *el = calloc(1, sizeof(*el));
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	unsigned int i;

	if (!el)
		return NULL;
	for (i = 0; i < EVENT_MAX_HANDLERS; i++)
		el->h[i].fd = -1;
	pthread_mutex_init(&el->call_lock, NULL);
	pthread_mutex_init(&el->done_lock, NULL);
	pthread_cond_init(&el->done_cond, NULL);
	el->callfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	el->epfd = epoll_create1(EPOLL_CLOEXEC);
	el->stopfd = eventfd(0, EFD_CLOEXEC);
	if (el->epfd < 0 || el->stopfd < 0 || el->callfd < 0 ||
	    epoll_ctl(el->epfd, EPOLL_CTL_ADD, el->stopfd, &ev) < 0 ||
	    event__add(el, el->callfd, event__on_call, el) < 0) {
		log_error("event loop: %s", strerror(errno));
		if (el->epfd >= 0)
			close(el->epfd);
		if (el->stopfd >= 0)
			close(el->stopfd);
		if (el->callfd >= 0)
			close(el->callfd);
		free(el);
		return NULL;
	}
	return el;
}

static int event__add_handler(struct event_loop *el, int fd, event_fn fn,
			      void *opaque, bool drain)
{
	struct epoll_event ev = { .events = EPOLLIN };
	unsigned int i;

	for (i = 0; i < EVENT_MAX_HANDLERS && el->h[i].fd >= 0; i++)
		;
	if (i == EVENT_MAX_HANDLERS)
		return -ENOSPC;
	el->h[i] = (struct event_handler){
		.fd = fd, .fn = fn, .opaque = opaque, .drain = drain
	};
	ev.data.ptr = &el->h[i];
	if (epoll_ctl(el->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		el->h[i].fd = -1;
		return -errno;
	}
	return 0;
}

int event__add(struct event_loop *el, int fd, event_fn fn, void *opaque)
{
	return event__add_handler(el, fd, fn, opaque, false);
}

int event__add_counter(struct event_loop *el, int fd, event_fn fn, void *opaque)
{
	return event__add_handler(el, fd, fn, opaque, true);
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
			if (h->fd < 0)
				continue;
			if (!h->drain || event__drain(h->fd) >= 0)
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
	close(el->callfd);
	pthread_cond_destroy(&el->done_cond);
	pthread_mutex_destroy(&el->done_lock);
	pthread_mutex_destroy(&el->call_lock);
	free(el);
}
