/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The event thread: one epoll loop for everything that arrives from the
 * host side or from KVM's eventfds: console input, queue notifications
 * (ioeventfd), later sockets, tap fds and timers.  Handlers run on the
 * event thread, one at a time.
 */
#ifndef EMBER_VMM_EVENT_H
#define EMBER_VMM_EVENT_H

struct event_loop;

/* A handler: @fd is readable (or hung up). */
typedef void (*event_fn)(void *opaque, int fd);

/* event__create() - an empty loop.  Returns it, or NULL (logged). */
struct event_loop *event__create(void);

/*
 * event__add() - call @fn(@opaque, @fd) whenever @fd is readable (level
 * triggered).  @fd stays the caller's.  Before or after event__start().
 * Returns 0, -EPERM for fds epoll cannot watch (regular files), -ENOSPC
 * past 64 handlers, or another -errno from epoll_ctl.
 */
int event__add(struct event_loop *el, int fd, event_fn fn, void *opaque);

/*
 * event__add_counter() - as event__add(), for an eventfd or timerfd @fd:
 * each time, the loop first reads its count (event__drain()), then calls
 * @fn unless that read failed (also when there was no count, EAGAIN).
 */
int event__add_counter(struct event_loop *el, int fd, event_fn fn,
		       void *opaque);

/* event__del() - stop watching @fd (a handler may call it for itself). */
void event__del(struct event_loop *el, int fd);

/*
 * event__call() - run @fn(@arg) on the event thread and return once it has
 * run, so that it never races with a handler.  Called on the event thread
 * itself, or before event__start(), it runs at once.  Calls from other
 * threads are taken one at a time.
 */
void event__call(struct event_loop *el, void (*fn)(void *arg), void *arg);

/*
 * event__drain() - read and drop the counter of the eventfd or timerfd
 * @fd (its expirations, or the sum of its writes), so that it stops being
 * readable.  Returns 1 when a count was read, 0 when there was none (a
 * non-blocking @fd read or re-armed meanwhile: EAGAIN), or a negative
 * errno of read(2).
 */
int event__drain(int fd);

/* event__on_thread() - is the caller the event thread? */
int event__on_thread(const struct event_loop *el);

/* event__start() - run the loop on its own thread.  Returns 0 or -errno. */
int event__start(struct event_loop *el);

/* event__destroy() - stop and join the thread, free the loop; NULL ok. */
void event__destroy(struct event_loop *el);

#endif /* EMBER_VMM_EVENT_H */
