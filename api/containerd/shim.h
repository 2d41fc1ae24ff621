/* SPDX-License-Identifier: Apache-2.0 */
/*
 * containerd-shim-ember-v1: the interface between main.c (flags, start,
 * delete, the ttrpc server, the events publisher) and the Task service
 * (containerd.task.v2.Task, runtime/v2/task/shim.proto).
 */
#ifndef EMBER_API_CONTAINERD_SHIM_H
#define EMBER_API_CONTAINERD_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include "ttrpc.h"

struct shim_events;
struct shim_service;

/*
 * Publish an event: @topic ("/tasks/exit"), @type_url
 * ("containerd.events.TaskExit"), @msg the packed event message (@len
 * bytes, copied).  Queued and sent in order by a thread as
 * containerd.services.events.ttrpc.v1.Events/Forward with the namespace;
 * never blocks the caller.  0 or -errno (-EAGAIN: queue full, -ENOMEM).
 */
int shim_events__publish(struct shim_events *ev, const char *topic,
			 const char *type_url, const uint8_t *msg, size_t len);

/* Filled by main before the service is created; strings live as long. */
struct shim_ctx {
	const char *ns; /* -namespace */
	const char *id; /* -id (the first task's id) */
	const char *bundle; /* cwd at start / -bundle */
	const char *address; /* containerd's -address (grpc socket) */
	const char *ttrpc_address; /* TTRPC_ADDRESS */
	struct shim_events *events;
	struct ttrpc_server *server; /* so Shutdown can stop it */
};

/* The service for the shim daemon; NULL on failure (main exits 1). */
struct shim_service *shim_service__new(const struct shim_ctx *ctx);

/* The ttrpc handler: @opaque is the struct shim_service. */
void shim_service__handle(void *opaque, const struct ttrpc_call *call,
			  struct ttrpc_reply *reply);

/* Free @s, killing what is left of its tasks. */
void shim_service__free(struct shim_service *s);

/*
 * For `delete`: clean up what the task @id of namespace @ns left under
 * @bundle when its shim is gone.  0, or -errno with a reason in @err
 * (@errlen bytes).
 */
int shim_service__cleanup_bundle(const char *bundle, const char *ns,
				 const char *id, char *err, size_t errlen);

#endif
