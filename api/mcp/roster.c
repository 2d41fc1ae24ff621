// SPDX-License-Identifier: Apache-2.0
/* The roster of one MCP session's sandboxes: see roster.h. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sandbox/pool.h"
#include "../sandbox/sandbox.h"
#include "roster.h"
#include "tools.h"

struct roster {
	pthread_mutex_t lock; /* guards what follows */
	struct roster_entry *v;
	size_t n, cap;
	bool dead; /* roster__kill_all() ran */
	struct pool *pool; /* idle connections to the sandboxes */
};

struct roster *roster__new(void)
{
	struct roster *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->pool = pool__new();
	if (!s->pool) {
		free(s);
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	return s;
}

void roster__free(struct roster *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->lock);
	pool__free(s->pool);
	free(s->v);
	free(s);
}

struct pool *roster__pool(struct roster *s)
{
	return s->pool;
}

int roster__add(struct roster *s, const char *id, unsigned int ttl_s)
{
	struct roster_entry *v;
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	if (s->dead) {
		rc = -ESHUTDOWN;
	} else if (s->n == s->cap) {
		v = realloc(s->v, (s->cap ? s->cap * 2 : 8) * sizeof(*v));
		if (!v)
			rc = -ENOMEM;
		else {
			s->v = v;
			s->cap = s->cap ? s->cap * 2 : 8;
		}
	}
	if (!rc) {
		snprintf(s->v[s->n].id, sizeof(s->v[s->n].id), "%s", id);
		s->v[s->n++].ttl_s = ttl_s;
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

void roster__forget(struct roster *s, const char *id)
{
	pool__drop(s->pool, id);
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->n; i++) {
		if (!strcmp(s->v[i].id, id)) {
			s->v[i] = s->v[--s->n];
			break;
		}
	}
	pthread_mutex_unlock(&s->lock);
}

json_t *roster__lookup(struct roster *s, const json_t *args,
		       struct sandbox_info *info, unsigned int *ttl_s)
{
	const char *ref =
		json_string_value(json_object_get(args, "sandbox_id"));
	char id[SANDBOX_ID_LEN + 1] = "", err[512];
	size_t hits = 0;
	int rc;

	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->n; i++) {
		if (!strncmp(s->v[i].id, ref, strlen(ref))) {
			memcpy(id, s->v[i].id, sizeof(id));
			*ttl_s = s->v[i].ttl_s;
			hits++;
			if (!strcmp(s->v[i].id, ref)) {
				hits = 1;
				break;
			}
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (hits != 1)
		return tools__fail(hits ? "sandbox id %s is ambiguous" :
					  "no sandbox %s in this session",
				   ref);
	rc = sandbox__find(id, info, err, sizeof(err));
	if (rc == -ENOENT || rc == -ESRCH) {
		roster__forget(s, id);
		return tools__fail("sandbox %s is gone (its timeout ran out, "
				   "or it was killed)",
				   id);
	}
	if (rc < 0)
		return tools__fail("sandbox %s: %s", id, err);
	return NULL;
}

void roster__renew(const struct sandbox_info *info, unsigned int ttl_s)
{
	char err[256];

	if (ttl_s && info->ready && !info->paused)
		sandbox__renew(info, ttl_s, err, sizeof(err));
}

json_t *roster__usable(struct roster *s, const json_t *args,
		       struct sandbox_info *info)
{
	unsigned int ttl_s = 0;
	json_t *fail = roster__lookup(s, args, info, &ttl_s);

	if (fail)
		return fail;
	if (info->paused)
		return tools__fail("sandbox %s is %s: resume_sandbox first",
				   info->id, sandbox__state_name(info));
	roster__renew(info, ttl_s);
	return NULL;
}

void roster__kill_all(struct roster *s)
{
	struct sandbox_info info;
	struct roster_entry *v;
	char err[512];
	size_t n;

	pthread_mutex_lock(&s->lock);
	s->dead = true;
	v = s->v;
	n = s->n;
	s->v = NULL;
	s->n = s->cap = 0;
	pthread_mutex_unlock(&s->lock);
	for (size_t i = 0; i < n; i++) {
		if (sandbox__find(v[i].id, &info, err, sizeof(err)) == 0 &&
		    sandbox__kill(&info, err, sizeof(err)) < 0)
			fprintf(stderr, "ember-mcp: killing %s: %s\n", v[i].id,
				err);
	}
	free(v);
}

int roster__entries(struct roster *s, struct roster_entry **out, size_t *n)
{
	struct roster_entry *v = NULL;

	pthread_mutex_lock(&s->lock);
	*n = s->n;
	if (*n) {
		v = malloc(*n * sizeof(*v));
		if (v)
			memcpy(v, s->v, *n * sizeof(*v));
	}
	pthread_mutex_unlock(&s->lock);
	*out = v;
	return *n && !v ? -ENOMEM : 0;
}
