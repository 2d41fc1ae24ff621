// SPDX-License-Identifier: Apache-2.0
/* The events publisher: see events.h. */
#include "events.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../sandbox/clock.h"
#include "proto/events_ttrpc.pb-c.h"
#include "ttrpc.h"

#define CALL_TIMEOUT_MS	   5000
#define CONNECT_TIMEOUT_MS 5000
#define MAX_TRIES	   6 /* the first and five more */

struct event {
	uint8_t *req; /* packed ForwardRequest */
	size_t len;
	struct event *next;
};

struct shim_events {
	char *address; /* NULL: drop */
	char *ns;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct event *head, *tail;
	unsigned count;
	bool closing;
	bool busy; /* the thread holds an event */
	struct ttrpc_client *client;
};

int shim_events__forward_request(const char *ns, const char *topic,
				 const char *type_url, const uint8_t *msg,
				 size_t len, int64_t sec, int32_t nsec,
				 uint8_t **out, size_t *outlen)
{
	Containerd__Services__Events__Ttrpc__V1__ForwardRequest req =
		CONTAINERD__SERVICES__EVENTS__TTRPC__V1__FORWARD_REQUEST__INIT;
	Containerd__Services__Events__Ttrpc__V1__Envelope env =
		CONTAINERD__SERVICES__EVENTS__TTRPC__V1__ENVELOPE__INIT;
	Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
	Google__Protobuf__Any any = GOOGLE__PROTOBUF__ANY__INIT;
	size_t n;

	ts.seconds = sec;
	ts.nanos = nsec;
	any.type_url = (char *)type_url;
	any.value.data = (uint8_t *)msg;
	any.value.len = msg ? len : 0;
	env.timestamp = &ts;
	env.namespace_ = (char *)ns;
	env.topic = (char *)topic;
	env.event = &any;
	req.envelope = &env;
	n = containerd__services__events__ttrpc__v1__forward_request__get_packed_size(
		&req);
	*out = malloc(n ? n : 1);
	if (!*out)
		return -ENOMEM;
	containerd__services__events__ttrpc__v1__forward_request__pack(&req,
								       *out);
	*outlen = n;
	return 0;
}

int shim_events__publish(struct shim_events *ev, const char *topic,
			 const char *type_url, const uint8_t *msg, size_t len)
{
	struct timespec now;
	struct event *e;
	int err;

	if (!ev->address)
		return 0;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	clock_gettime(CLOCK_REALTIME, &now);
	err = shim_events__forward_request(ev->ns, topic, type_url, msg, len,
					   now.tv_sec, now.tv_nsec, &e->req,
					   &e->len);
	if (err) {
		free(e);
		return err;
	}
	pthread_mutex_lock(&ev->lock);
	if (ev->count >= SHIM_EVENTS_QUEUE || ev->closing) {
		pthread_mutex_unlock(&ev->lock);
		free(e->req);
		free(e);
		return -EAGAIN;
	}
	if (ev->tail)
		ev->tail->next = e;
	else
		ev->head = e;
	ev->tail = e;
	ev->count++;
	pthread_cond_broadcast(&ev->cond);
	pthread_mutex_unlock(&ev->lock);
	return 0;
}

/* One try to forward @e: 0 or an error (the client is dropped on -errno). */
static int forward(struct shim_events *ev, const struct event *e)
{
	uint8_t *resp = NULL;
	size_t rlen;
	char msg[256];
	int err;

	if (!ev->client) {
		ev->client = ttrpc_client__connect(ev->address,
						   CONNECT_TIMEOUT_MS, &err);
		if (!ev->client)
			return err;
	}
	err = ttrpc_client__call(ev->client, SHIM_EVENTS_SERVICE, "Forward",
				 e->req, e->len, CALL_TIMEOUT_MS, &resp, &rlen,
				 msg, sizeof(msg));
	free(resp);
	if (err < 0) {
		ttrpc_client__free(ev->client);
		ev->client = NULL;
	} else if (err > 0) {
		fprintf(stderr, "ember shim: forward event: code %d: %s\n", err,
			msg);
	}
	return err;
}

static void *publisher_thread(void *arg)
{
	struct shim_events *ev = arg;
	struct timespec until;
	struct event *e;
	int tries;

	pthread_mutex_lock(&ev->lock);
	for (;;) {
		while (!ev->head && !ev->closing)
			pthread_cond_wait(&ev->cond, &ev->lock);
		if (!ev->head || ev->closing)
			break;
		e = ev->head;
		ev->head = e->next;
		if (!ev->head)
			ev->tail = NULL;
		ev->count--;
		ev->busy = true;
		for (tries = 1;; tries++) {
			int err;

			pthread_mutex_unlock(&ev->lock);
			err = forward(ev, e);
			pthread_mutex_lock(&ev->lock);
			if (!err || tries >= MAX_TRIES || ev->closing)
				break;
			/* 1.6 waits n seconds before the n-th retry */
			clock_gettime(CLOCK_MONOTONIC, &until);
			until.tv_sec += tries;
			while (!ev->closing &&
			       pthread_cond_timedwait(&ev->cond, &ev->lock,
						      &until) != ETIMEDOUT)
				;
		}
		ev->busy = false;
		pthread_cond_broadcast(&ev->cond);
		free(e->req);
		free(e);
	}
	pthread_mutex_unlock(&ev->lock);
	return NULL;
}

struct shim_events *shim_events__new(const char *ttrpc_address, const char *ns)
{
	struct shim_events *ev = calloc(1, sizeof(*ev));

	if (!ev)
		return NULL;
	ev->ns = strdup(ns ? ns : "");
	if (!ev->ns)
		goto fail;
	pthread_mutex_init(&ev->lock, NULL);
	clock__cond_init(&ev->cond); /* waits count on CLOCK_MONOTONIC */
	if (!ttrpc_address || !ttrpc_address[0])
		return ev;
	ev->address = strdup(ttrpc_address);
	if (!ev->address)
		goto fail_lock;
	if (pthread_create(&ev->thread, NULL, publisher_thread, ev))
		goto fail_lock;
	return ev;
fail_lock:
	pthread_mutex_destroy(&ev->lock);
	pthread_cond_destroy(&ev->cond);
	free(ev->address);
fail:
	free(ev->ns);
	free(ev);
	return NULL;
}

void shim_events__free(struct shim_events *ev, int flush_ms)
{
	struct timespec until;
	struct event *e;

	if (!ev)
		return;
	if (ev->address) {
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += flush_ms / 1000;
		until.tv_nsec += (long)(flush_ms % 1000) * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_mutex_lock(&ev->lock);
		while ((ev->head || ev->busy) &&
		       pthread_cond_timedwait(&ev->cond, &ev->lock, &until) !=
			       ETIMEDOUT)
			;
		ev->closing = true;
		pthread_cond_broadcast(&ev->cond);
		pthread_mutex_unlock(&ev->lock);
		/* a call in flight ends within its own timeout */
		pthread_join(ev->thread, NULL);
	}
	while ((e = ev->head)) {
		ev->head = e->next;
		free(e->req);
		free(e);
	}
	ttrpc_client__free(ev->client);
	pthread_mutex_destroy(&ev->lock);
	pthread_cond_destroy(&ev->cond);
	free(ev->address);
	free(ev->ns);
	free(ev);
}
