// SPDX-License-Identifier: Apache-2.0
/*
 * Forgetting a sandbox (forget.h): the one place that drops its processes
 * and its pooled agent connections, for the control plane (kill, pause)
 * and for the periodic sweep of sandboxes gone on their own.
 */
#include <stdlib.h>

#include "e2b.h"
#include "forget.h"
#include "procs.h"

void forget__sandbox(struct e2b_server *srv, const char *id)
{
	procs__drop(srv->procs, id);
	pool__drop(srv->pool, id);
}

static void gone(void *arg, const char *id)
{
	forget__sandbox(arg, id);
}

void forget__sweep(struct e2b_server *srv, bool all)
{
	struct sandbox_info *live = NULL;
	char err[256];
	size_t n = 0;

	if (!all && sandbox__list(&live, &n, err, sizeof(err)))
		return;
	guest__unpool_gone(live, n, gone, srv);
	free(live);
}
