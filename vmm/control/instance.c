// SPDX-License-Identifier: Apache-2.0
/*
 * The instance's life: its creation, its VM once built or loaded, its
 * state, signals, the wait for its end, its destruction (see control.h).
 */
#include "core.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../log.h"
#include "../metrics.h"
#include "../vm.h"

struct control *control__create(struct event_loop *el, const char *instance_id)
{
	struct control *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->el = el;
	c->id = strdup(instance_id ? instance_id : "anonymous-instance");
	c->log_fd = -1;
	c->metrics_timer = -1;
	/* Firecracker's defaults: 1 vCPU, 128 MiB; no devices. */
	c->cfg.vcpu_count = 1;
	c->cfg.mem_size_mib = 128;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	metrics__api_init(&c->api);
	if (!c->id) {
		free(c);
		return NULL;
	}
	return c;
}

const char *control__id(const struct control *c)
{
	return c->id;
}

void control__dry_run(struct control *c)
{
	c->dry_run = true;
}

void control__set_seccomp(struct control *c, const struct seccomp_set *s)
{
	c->seccomp = s;
}

bool ctl__adopt(struct control *c, struct vm *vm, bool loaded)
{
	pthread_mutex_lock(&c->lock);
	c->vm = vm;
	c->started = true;
	if (loaded)
		ctl__config_from_vm(c, vm);
	if (c->signalled)
		vm__stop_by_signal(vm, c->signal);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	/* Its timer before the vCPUs start: seccomp allows no new one then. */
	ctl__start_metrics(c);
	vm__set_seccomp(vm, c->seccomp);
	return !c->signalled;
}

enum control_state control__state(struct control *c)
{
	struct vm *vm;

	pthread_mutex_lock(&c->lock);
	vm = c->vm;
	pthread_mutex_unlock(&c->lock);
	if (!vm)
		return CONTROL_NOT_STARTED;
	switch (vm__state(vm)) {
	case VM_STATE_PAUSED:
		return CONTROL_PAUSED;
	case VM_STATE_STOPPED:
		return CONTROL_STOPPED;
	default:
		return CONTROL_RUNNING;
	}
}

static int ctl__config(struct control *c, const void *args,
		       struct control_err *e)
{
	(void)e;
	*(struct control_config *)args = c->cfg;
	return 0;
}

void control__config(struct control *c, struct control_config *out)
{
	ctl__run(c, CTL_ANY, ctl__config, out, NULL);
}

void control__count_api(struct control *c, const char *method,
			const char *endpoint, bool failed)
{
	metrics__count_api(&c->api, method, endpoint, failed);
}

void control__signal(struct control *c, int sig)
{
	pthread_mutex_lock(&c->lock);
	if (!c->signalled) {
		c->signalled = true;
		c->signal = sig;
	}
	if (c->vm)
		vm__stop_by_signal(c->vm, sig);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

int control__wait(struct control *c)
{
	struct vm *vm;
	int status;

	pthread_mutex_lock(&c->lock);
	while (!c->started && !c->signalled)
		pthread_cond_wait(&c->cond, &c->lock);
	vm = c->vm;
	pthread_mutex_unlock(&c->lock);
	if (!vm) {
		log_warn("stopped by signal %d", c->signal);
		return 128 + c->signal;
	}
	status = vm__wait(vm);
	if (c->cfg.opts.stats)
		metrics__print(vm);
	return status;
}

void control__destroy(struct control *c)
{
	unsigned int i;

	if (!c)
		return;
	vm__destroy(c->vm);
	if (c->metrics_timer >= 0)
		close(c->metrics_timer);
	metrics__close(c->metrics);
	if (c->log_fd >= 0) {
		log__set_fd(-1);
		close(c->log_fd);
	}
	for (i = 0; i < sizeof(c->strs) / sizeof(c->strs[0]); i++)
		free(c->strs[i]);
	metrics__api_destroy(&c->api);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	free(c->id);
	free(c);
}
