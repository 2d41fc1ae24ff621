// SPDX-License-Identifier: Apache-2.0
/*
 * What is done to the VM rather than configured: InstanceStart, PATCH /vm
 * (pause, resume), SendCtrlAltDel (see control.h).  FlushMetrics is with
 * the metrics (metrics.c).
 */
#include "core.h"

#include <errno.h>
#include <string.h>

#include "../log.h"
#include "../vm.h"

static int ctl__start(struct control *c, const void *args,
		      struct control_err *e)
{
	struct vm_config v;
	struct vm *vm;
	int ret;

	(void)args;
	if (!c->cfg.have_boot_source)
		return ctl__err(e, -EINVAL,
				"Start microvm error: Cannot start microvm "
				"without kernel configuration.");
	if (c->dry_run)
		return ctl__err(e, -ENOTSUP,
				"Start microvm error: a dry run builds no VM.");
	ctl__vm_config(c, &v);
	/*
	 * The VM owns copies of its strings: calls after the start (PATCH
	 * /drives) replace this configuration's, and snapshots save the VM's.
	 */
	if (config__dup_strings(&v))
		return ctl__err(e, -ENOMEM,
				"Internal VMM error: out of memory");
	log__clear_error();
	ret = vm__create(&v, c->el, &vm);
	if (ret) {
		config__free_strings(&v);
		return ctl__err(e, ret, "Start microvm error: %s",
				*log__last_error() ? log__last_error() :
						     strerror(-ret));
	}
	vm->cfg_owned = true;
	if (ctl__adopt(c, vm, false))
		vm__start(vm); /* a failure requests the stop itself */
	return 0;
}

int control__start(struct control *c, struct control_err *e)
{
	return ctl__run(c, CTL_PREBOOT, ctl__start, NULL, e);
}

static int ctl__pause(struct control *c, const void *args,
		      struct control_err *e)
{
	bool pause = *(const bool *)args;
	enum vm_state s;
	int ret;

	s = vm__state(c->vm);
	if (s == VM_STATE_STOPPED)
		return ctl__err(e, -ESRCH, "The microVM has stopped.");
	if (pause ? s == VM_STATE_PAUSED : s == VM_STATE_RUNNING)
		return 0; /* idempotent, as Firecracker */
	ret = pause ? vm__pause(c->vm) : vm__resume(c->vm);
	if (ret == -ETIMEDOUT)
		return ctl__err(e, ret,
				"Internal VMM error: a vCPU did not stop "
				"within %d ms; the microVM runs on",
				VM_PAUSE_TIMEOUT_MS);
	if (ret)
		return ctl__err(e, ret, "Internal VMM error: %s",
				strerror(-ret));
	return 0;
}

int control__pause(struct control *c, struct control_err *e)
{
	bool pause = true;

	return ctl__run(c, CTL_POSTBOOT, ctl__pause, &pause, e);
}

int control__resume(struct control *c, struct control_err *e)
{
	bool pause = false;

	return ctl__run(c, CTL_POSTBOOT, ctl__pause, &pause, e);
}

static int ctl__ctrl_alt_del(struct control *c, const void *args,
			     struct control_err *e)
{
	(void)args;
	if (devmgr__ctrl_alt_del(&c->vm->dm))
		return ctl__err(e, -ENODEV, "Internal VMM error: no i8042");
	return 0;
}

int control__ctrl_alt_del(struct control *c, struct control_err *e)
{
	return ctl__run(c, CTL_POSTBOOT, ctl__ctrl_alt_del, NULL, e);
}
