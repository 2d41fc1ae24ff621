// SPDX-License-Identifier: Apache-2.0
/* The roster of one MCP session: see roster.h. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sandbox/files.h"
#include "../sandbox/pool.h"
#include "../sandbox/sandbox.h"
#include "roster.h"
#include "tools.h"

struct roster {
	char principal[OWNER_PRINCIPAL_MAX];
	bool kill_on_end;
	pthread_mutex_t lock; /* guards what follows */
	char (*made)[SANDBOX_ID_LEN + 1]; /* the ids this session made */
	size_t n, cap;
	bool dead; /* roster__end() ran with kill_on_end */
	struct pool *pool; /* idle connections to the sandboxes */
};

struct roster *roster__new(const char *principal, bool kill_on_end)
{
	struct roster *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->pool = pool__new();
	if (!s->pool) {
		free(s);
		return NULL;
	}
	snprintf(s->principal, sizeof(s->principal), "%s", principal);
	s->kill_on_end = kill_on_end;
	pthread_mutex_init(&s->lock, NULL);
	return s;
}

void roster__free(struct roster *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->lock);
	pool__free(s->pool);
	free(s->made);
	free(s);
}

struct pool *roster__pool(struct roster *s)
{
	return s->pool;
}

int roster__add(struct roster *s, const char *id, unsigned int ttl_s, char *err,
		size_t errlen)
{
	struct sandbox_info info;
	int rc;

	rc = sandbox__find(id, &info, err, errlen);
	if (rc < 0)
		return rc == -ESRCH ? -ENOENT : rc;
	rc = owner__save(info.dir, s->principal, ttl_s);
	if (rc < 0) {
		snprintf(err, errlen, "recording its owner: %s", strerror(-rc));
		return rc;
	}
	pthread_mutex_lock(&s->lock);
	if (s->dead) {
		rc = -ESHUTDOWN;
		snprintf(err, errlen, "the session ended");
	} else {
		rc = sandbox__grow((void **)&s->made, &s->cap, s->n,
				   sizeof(*s->made));
		if (!rc)
			snprintf(s->made[s->n++], sizeof(*s->made), "%s", id);
		else
			rc = 0; /* only --kill-on-disconnect would miss it */
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* Whether this session made @id (and still knows it). */
static bool made_here(struct roster *s, const char *id)
{
	bool hit = false;

	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->n && !hit; i++)
		hit = !strcmp(s->made[i], id);
	pthread_mutex_unlock(&s->lock);
	return hit;
}

void roster__forget(struct roster *s, const char *id)
{
	pool__drop(s->pool, id);
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->n; i++) {
		if (!strcmp(s->made[i], id)) {
			memcpy(s->made[i], s->made[--s->n], sizeof(*s->made));
			break;
		}
	}
	pthread_mutex_unlock(&s->lock);
}

int roster__list(struct roster *s, struct sandbox_info **out, size_t *n,
		 char *err, size_t errlen)
{
	struct sandbox_info *v = NULL;
	size_t all = 0, k = 0;
	int rc;

	*out = NULL;
	*n = 0;
	rc = sandbox__list(&v, &all, err, errlen);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < all; i++)
		if (owner__is(v[i].dir, s->principal, NULL))
			v[k++] = v[i];
	if (!k) {
		free(v);
		v = NULL;
	}
	*out = v;
	*n = k;
	return 0;
}

/* The failure result for @ref, which names none of the principal's. */
static json_t *not_yours(const char *ref)
{
	return tools__fail("no sandbox %s of yours (a sandbox belongs to "
			   "whoever created it through ember-mcp: the local "
			   "user over stdio, the bearer token over HTTP)",
			   ref);
}

/* The principal's sandbox whose id starts with @ref, into @info. */
static json_t *by_prefix(struct roster *s, const char *ref,
			 struct sandbox_info *info)
{
	struct sandbox_info *v;
	size_t n, hits = 0;
	char err[512];

	if (roster__list(s, &v, &n, err, sizeof(err)) < 0)
		return tools__fail("%s", err);
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(v[i].id, ref, strlen(ref))) {
			*info = v[i];
			hits++;
		}
	}
	free(v);
	if (hits > 1)
		return tools__fail("sandbox id %s is ambiguous", ref);
	return hits ? NULL : not_yours(ref);
}

json_t *roster__lookup(struct roster *s, const json_t *args,
		       struct sandbox_info *info, unsigned int *ttl_s)
{
	const char *ref =
		json_string_value(json_object_get(args, "sandbox_id"));
	char err[512];
	json_t *fail;
	int rc;

	if (!ref)
		ref = "";
	if (strlen(ref) != SANDBOX_ID_LEN || !sandbox__is_id(ref)) {
		fail = by_prefix(s, ref, info);
		if (fail)
			return fail;
		ref = info->id;
	}
	rc = sandbox__find(ref, info, err, sizeof(err));
	if ((rc == -ENOENT || rc == -ESRCH) && made_here(s, ref)) {
		roster__forget(s, ref);
		return tools__fail("sandbox %s is gone (its timeout ran out, "
				   "or it was killed)",
				   ref);
	}
	if (rc == -ENOENT || rc == -ESRCH)
		return not_yours(ref);
	if (rc < 0)
		return tools__fail("sandbox %s: %s", ref, err);
	if (!owner__is(info->dir, s->principal, ttl_s))
		return not_yours(ref);
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

void roster__end(struct roster *s)
{
	char(*v)[SANDBOX_ID_LEN + 1];
	struct sandbox_info info;
	char err[512];
	size_t n;

	if (!s->kill_on_end)
		return;
	pthread_mutex_lock(&s->lock);
	s->dead = true;
	v = s->made;
	n = s->n;
	s->made = NULL;
	s->n = s->cap = 0;
	pthread_mutex_unlock(&s->lock);
	for (size_t i = 0; i < n; i++) {
		if (sandbox__find(v[i], &info, err, sizeof(err)) == 0 &&
		    sandbox__kill(&info, err, sizeof(err)) < 0)
			fprintf(stderr, "ember-mcp: killing %s: %s\n", v[i],
				err);
	}
	free(v);
}
