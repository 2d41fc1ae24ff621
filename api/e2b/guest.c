// SPDX-License-Identifier: Apache-2.0
/*
 * The guest agent for the envd services (e2b.h): pooled connections, a
 * process's environment, and a command run to its end with its output
 * captured (the sandbox library's guest_run.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../guest-init/protocol.h"
#include "../sandbox/guest_run.h"
#include "e2b.h"

/*
 * The sandboxes whose connections went to the pool, so that
 * guest__unpool_gone() can tell which sandboxes ended on their own.
 * Global, as the pool is the server's one and only: guarded by
 * pooled_lock.
 */
struct pooled {
	struct pooled *next;
	char id[SANDBOX_ID_LEN + 1];
};

static pthread_mutex_t pooled_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pooled *pooled;

/* Note that sandbox @id may have idle connections in the pool. */
static void note_pooled(const char *id)
{
	struct pooled *p;

	pthread_mutex_lock(&pooled_lock);
	for (p = pooled; p && strcmp(p->id, id); p = p->next)
		;
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (p) { /* else the pool keeps them: no worse */
			snprintf(p->id, sizeof(p->id), "%s", id);
			p->next = pooled;
			pooled = p;
		}
	}
	pthread_mutex_unlock(&pooled_lock);
}

void guest__unpool_gone(const struct sandbox_info *live, size_t n,
			void (*gone)(void *arg, const char *id), void *arg)
{
	struct pooled **pp, *p, *list = NULL;
	size_t i;

	pthread_mutex_lock(&pooled_lock);
	for (pp = &pooled; (p = *pp);) {
		for (i = 0; i < n && strcmp(live[i].id, p->id); i++)
			;
		if (i < n) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		p->next = list;
		list = p;
	}
	pthread_mutex_unlock(&pooled_lock);
	while ((p = list)) {
		list = p->next;
		gone(arg, p->id);
		free(p);
	}
}

struct agent_client *guest__agent(struct e2b_server *srv,
				  const struct e2b_guest *g, char *err,
				  size_t errlen)
{
	return pool__borrow(srv->pool, &g->info, E2B_AGENT_TIMEOUT_MS, err,
			    errlen);
}

void guest__note_pooled(const struct e2b_guest *g)
{
	note_pooled(g->info.id);
}

void guest__agent_done(struct e2b_server *srv, const struct e2b_guest *g,
		       struct agent_client *c, bool ok)
{
	if (c && ok)
		note_pooled(g->info.id);
	pool__return(srv->pool, g->info.id, c, ok);
}

char **guest__env(const struct e2b_guest *g, const json_t *extra)
{
	json_t *all = json_object();
	const char *k;
	json_t *v;
	size_t n = 0, bytes = 0, i = 0;
	char **env = NULL, *p;

	if (!all)
		return NULL;
	if ((json_is_object(g->rec.env_vars) &&
	     json_object_update(all, g->rec.env_vars)) ||
	    (json_is_object(extra) && json_object_update(all, (json_t *)extra)))
		goto out;
	json_object_foreach(all, k, v)
	{
		if (!json_is_string(v) || !*k || strchr(k, '='))
			continue;
		n++;
		bytes += strlen(k) + 1 + json_string_length(v) + 1;
	}
	if (n > E2B_MAX_ENV)
		goto out;
	env = malloc((n + 1) * sizeof(char *) + bytes);
	if (!env)
		goto out;
	p = (char *)(env + n + 1);
	json_object_foreach(all, k, v)
	{
		if (!json_is_string(v) || !*k || strchr(k, '='))
			continue;
		env[i++] = p;
		p += sprintf(p, "%s=%s", k, json_string_value(v)) + 1;
	}
	env[i] = NULL;
out:
	json_decref(all);
	return env;
}

int guest__run(struct e2b_server *srv, const struct e2b_guest *g,
	       const char *const *argv, uint32_t timeout_ms, size_t out_max,
	       char **out, size_t *outlen, char **errout, int *status,
	       char *err, size_t errlen)
{
	const struct guest_cmd cmd = {
		.argv = argv,
		.cwd = "/",
		.timeout_ms = timeout_ms,
		.out_max = out_max,
	};
	struct guest_output o;
	int rc;

	if (out)
		*out = NULL;
	if (errout)
		*errout = NULL;
	rc = guest_run__capture(srv->pool, &g->info, E2B_AGENT_TIMEOUT_MS, &cmd,
				&o, err, errlen);
	if (rc == 0 || rc == -EREMOTEIO) /* its connection went to the pool */
		note_pooled(g->info.id);
	if (rc < 0)
		return rc;
	switch (o.res.kind) {
	case EMBER_AGENT_EXITED:
		*status = o.res.code;
		break;
	case EMBER_AGENT_SIGNALLED:
		*status = 128 + o.res.code;
		break;
	default:
		*status = 124;
	}
	if (out) {
		*out = o.out;
		o.out = NULL;
		if (outlen)
			*outlen = o.outlen;
	}
	if (errout) {
		*errout = o.err;
		o.err = NULL;
	}
	guest_run__release(&o);
	return 0;
}
