// SPDX-License-Identifier: Apache-2.0
/*
 * A Task service that implements nothing but Shutdown (so that containerd
 * can end the shim): every other call answers UNIMPLEMENTED.  It lets the
 * shim link and its protocol half be tested before the real service
 * (task*.c); delete this file then.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

struct shim_service {
	struct ttrpc_server *server;
};

struct shim_service *shim_service__new(const struct shim_ctx *ctx)
{
	struct shim_service *s = calloc(1, sizeof(*s));

	if (s)
		s->server = ctx->server;
	return s;
}

void shim_service__handle(void *opaque, const struct ttrpc_call *call,
			  struct ttrpc_reply *reply)
{
	struct shim_service *s = opaque;

	if (!strcmp(call->service, "containerd.task.v2.Task") &&
	    !strcmp(call->method, "Shutdown")) {
		ttrpc_server__stop(s->server); /* Empty: no payload */
		return;
	}
	reply->code = TTRPC_UNIMPLEMENTED;
	snprintf(reply->message, sizeof(reply->message),
		 "ember shim: %s/%s not implemented", call->service,
		 call->method);
}

void shim_service__free(struct shim_service *s)
{
	free(s);
}

int shim_service__cleanup_bundle(const char *bundle, const char *ns,
				 const char *id, char *err, size_t errlen)
{
	(void)bundle;
	(void)ns;
	(void)id;
	if (errlen)
		err[0] = 0;
	return 0;
}
