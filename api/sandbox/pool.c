// SPDX-License-Identifier: Apache-2.0
/* Idle agent connections, kept between tool calls: see pool.h. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox.h"
#include "pool.h"

/* One sandbox's idle connections. */
struct pool_entry {
	char id[SANDBOX_ID_LEN + 1];
	struct agent_client *agents[POOL_MAX_IDLE];
	unsigned int nagents;
	struct pool_entry *next;
};

struct pool {
	pthread_mutex_t lock; /* guards the list */
	struct pool_entry *head;
};

struct pool *pool__new(void)
{
	struct pool *p = calloc(1, sizeof(*p));

	if (p)
		pthread_mutex_init(&p->lock, NULL);
	return p;
}

static void entry_free(struct pool_entry *e)
{
	while (e->nagents)
		agent_client__free(e->agents[--e->nagents]);
	free(e);
}

void pool__free(struct pool *p)
{
	struct pool_entry *e, *next;

	if (!p)
		return;
	for (e = p->head; e; e = next) {
		next = e->next;
		entry_free(e);
	}
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/* @id's entry, made when @make; NULL when none (or out of memory). */
static struct pool_entry *entry_of(struct pool *p, const char *id, bool make)
{
	struct pool_entry *e;

	for (e = p->head; e; e = e->next)
		if (!strcmp(e->id, id))
			return e;
	if (!make || strlen(id) > SANDBOX_ID_LEN)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	strcpy(e->id, id);
	e->next = p->head;
	p->head = e;
	return e;
}

struct agent_client *pool__take_agent(struct pool *p, const char *id)
{
	struct agent_client *c = NULL;
	struct pool_entry *e;

	pthread_mutex_lock(&p->lock);
	e = entry_of(p, id, false);
	while (e && e->nagents && !c) {
		c = e->agents[--e->nagents];
		if (!agent_client__idle_ok(c)) {
			agent_client__free(c);
			c = NULL;
		}
	}
	pthread_mutex_unlock(&p->lock);
	return c;
}

void pool__give_agent(struct pool *p, const char *id, struct agent_client *c)
{
	struct pool_entry *e;

	pool__prune(p); /* the others' too: some may be gone meanwhile */
	pthread_mutex_lock(&p->lock);
	e = entry_of(p, id, true);
	if (e && e->nagents < POOL_MAX_IDLE) {
		e->agents[e->nagents++] = c;
		c = NULL;
	}
	pthread_mutex_unlock(&p->lock);
	agent_client__free(c);
}

void pool__drop(struct pool *p, const char *id)
{
	struct pool_entry **pp, *e = NULL;

	pthread_mutex_lock(&p->lock);
	for (pp = &p->head; *pp; pp = &(*pp)->next) {
		if (!strcmp((*pp)->id, id)) {
			e = *pp;
			*pp = e->next;
			break;
		}
	}
	pthread_mutex_unlock(&p->lock);
	if (e)
		entry_free(e);
}

void pool__prune(struct pool *p)
{
	struct pool_entry **pp, *e, *gone = NULL;
	struct agent_client *bad[POOL_MAX_IDLE * 4];
	unsigned int nbad = 0;

	pthread_mutex_lock(&p->lock);
	for (pp = &p->head; (e = *pp);) {
		for (unsigned int i = 0; i < e->nagents;) {
			if (agent_client__idle_ok(e->agents[i]) ||
			    nbad == sizeof(bad) / sizeof(bad[0])) {
				i++;
				continue;
			}
			bad[nbad++] = e->agents[i];
			e->agents[i] = e->agents[--e->nagents];
		}
		if (e->nagents) {
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		e->next = gone;
		gone = e;
	}
	pthread_mutex_unlock(&p->lock);
	while (nbad)
		agent_client__free(bad[--nbad]);
	while ((e = gone)) {
		gone = e->next;
		entry_free(e);
	}
}

struct agent_client *pool__borrow(struct pool *p, const struct sandbox_info *sb,
				  int timeout_ms, char *err, size_t errlen)
{
	struct agent_client *c = pool__take_agent(p, sb->id);

	if (c)
		return c;
	if (sandbox__agent_connect(sb, timeout_ms, &c, err, errlen) < 0)
		return NULL;
	return c;
}

void pool__return(struct pool *p, const char *id, struct agent_client *c,
		  bool ok)
{
	if (c && ok)
		pool__give_agent(p, id, c);
	else
		agent_client__free(c);
}
