// SPDX-License-Identifier: Apache-2.0
/*
 * PUT /metrics and the FlushMetrics action: the metrics file, a line on
 * request and one every CONTROL_METRICS_PERIOD_S while the VM runs (see
 * control.h).
 */
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "../event.h"
#include "../log.h"
#include "../vm.h"

static int ctl__set_metrics(struct control *c, const void *args,
			    struct control_err *e)
{
	const char *path = args;
	int fd;

	if (c->metrics)
		return ctl__err(e, -EINVAL,
				"Metrics error: Reinitialization of metrics "
				"not allowed.");
	fd = c->dry_run ? open("/dev/null", O_WRONLY | O_CLOEXEC) :
			  ctl__open_sink(path);
	if (fd < 0)
		return ctl__err(e, -EINVAL,
				"Metrics error: Failed to open target file: %s "
				"(%s)",
				strerror(-fd), path);
	c->metrics = metrics__open(fd);
	if (!c->metrics) {
		close(fd);
		return ctl__err(e, -ENOMEM, "Metrics error: out of memory");
	}
	return 0;
}

int control__set_metrics(struct control *c, const char *path,
			 struct control_err *e)
{
	return ctl__run(c, CTL_PREBOOT, ctl__set_metrics, path, e);
}

void ctl__flush(struct control *c)
{
	struct vm *vm = c->vm;

	if (c->metrics && vm)
		metrics__flush(c->metrics, vm, &c->api);
}

static void ctl__on_metrics_timer(void *opaque, int fd)
{
	if (event__drain(fd) <= 0)
		return;
	/* Firecracker writes no lines while the VM is paused. */
	if (vm__state(((struct control *)opaque)->vm) == VM_STATE_RUNNING)
		ctl__flush(opaque);
}

void ctl__start_metrics(struct control *c)
{
	struct itimerspec period = {
		.it_value.tv_sec = CONTROL_METRICS_PERIOD_S,
		.it_interval.tv_sec = CONTROL_METRICS_PERIOD_S,
	};

	if (c->metrics) {
		/* One line at once, then every 60 s, as Firecracker. */
		ctl__flush(c);
		c->metrics_timer = timerfd_create(CLOCK_MONOTONIC,
						  TFD_CLOEXEC | TFD_NONBLOCK);
		if (c->metrics_timer < 0 ||
		    timerfd_settime(c->metrics_timer, 0, &period, NULL) < 0 ||
		    event__add(c->el, c->metrics_timer, ctl__on_metrics_timer,
			       c) < 0)
			log_warn("metrics: no periodic flush: %s",
				 strerror(errno));
	}
}

static int ctl__flush_metrics(struct control *c, const void *args,
			      struct control_err *e)
{
	(void)args;
	(void)e;
	ctl__flush(c);
	return 0;
}

int control__flush_metrics(struct control *c, struct control_err *e)
{
	return ctl__run(c, CTL_POSTBOOT, ctl__flush_metrics, NULL, e);
}
