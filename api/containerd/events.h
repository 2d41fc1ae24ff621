/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shim's events publisher (shim_events__publish is in shim.h): a
 * queue and a thread that forwards each event to containerd's ttrpc
 * socket as containerd.services.events.ttrpc.v1.Events/Forward, as 1.6's
 * shims do (runtime/v2/shim/publisher.go: an event that fails is retried
 * up to 5 times, the n-th time after n seconds, then dropped).
 */
#ifndef EMBER_API_CONTAINERD_EVENTS_H
#define EMBER_API_CONTAINERD_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "shim.h"

#define SHIM_EVENTS_QUEUE   2048 /* events waiting, at most */
#define SHIM_EVENTS_SERVICE "containerd.services.events.ttrpc.v1.Events"

/*
 * A publisher to the ttrpc socket @ttrpc_address (TTRPC_ADDRESS; NULL or
 * "" drops every event) for namespace @ns (copied).  NULL on ENOMEM.
 */
struct shim_events *shim_events__new(const char *ttrpc_address, const char *ns);

/*
 * Send what is queued (waiting up to @flush_ms), stop the thread, free.
 * NULL is fine.
 */
void shim_events__free(struct shim_events *ev, int flush_ms);

/*
 * The packed ForwardRequest{Envelope{timestamp (@sec, @nsec), @ns,
 * @topic, Any{@type_url, @msg}}} in a malloc'd *@out (*@outlen bytes).
 * 0 or -ENOMEM.  Pure.
 */
int shim_events__forward_request(const char *ns, const char *topic,
				 const char *type_url, const uint8_t *msg,
				 size_t len, int64_t sec, int32_t nsec,
				 uint8_t **out, size_t *outlen);

#endif
