// SPDX-License-Identifier: Apache-2.0
/*
 * PUT /snapshot/create and PUT /snapshot/load: the control's side of
 * vmm/persist/persist.h (see control.h).
 */
#include "core.h"

#include <errno.h>

#include "../persist/persist.h"
#include "../vm.h"

static int ctl__snapshot_create(struct control *c, const void *args,
				struct control_err *e)
{
	const struct control_snapshot_create *r = args;
	struct persist_create req = {
		.state_path = r->snapshot_path,
		.mem_path = r->mem_file_path,
		.kind = r->diff ? PERSIST_DIFF : PERSIST_FULL,
		.compress = r->compress,
	};
	char why[PERSIST_WHY_MAX];
	int ret;

	switch (vm__state(c->vm)) {
	case VM_STATE_PAUSED:
		break;
	case VM_STATE_STOPPED:
		return ctl__err(e, -ESRCH, "The microVM has stopped.");
	default:
		return ctl__err(e, -EBUSY,
				"Create snapshot error: the microVM must be "
				"paused first (PATCH /vm {\"state\": "
				"\"Paused\"})");
	}
	ret = persist__create(c->vm, &req, NULL, why);
	if (ret)
		return ctl__err(e, ret, "Create snapshot error: %s", why);
	return 0;
}

int control__snapshot_create(struct control *c,
			     const struct control_snapshot_create *req,
			     struct control_err *e)
{
	return ctl__run(c, CTL_POSTBOOT, ctl__snapshot_create, req, e);
}

/* At most @max overrides of a kind (@what, the API's name for them). */
static int ctl__overrides_ok(unsigned int nr, unsigned int max,
			     const char *what, struct control_err *e)
{
	if (nr <= max)
		return 0;
	return ctl__err(e, -EINVAL, "Load snapshot error: at most %u %s", max,
			what);
}

static int ctl__snapshot_load(struct control *c, const void *args,
			      struct control_err *e)
{
	const struct control_snapshot_load *r = args;
	struct persist_load req = {
		.state_path = r->snapshot_path,
		.backend =
			r->uffd ? PERSIST_BACKEND_UFFD : PERSIST_BACKEND_FILE,
		.backend_path = r->mem_backend_path,
		.vsock_uds = r->vsock_uds_path,
	};
	char why[PERSIST_WHY_MAX];
	struct vm_config local;
	struct vm *vm;
	unsigned int i;
	int ret;

	if (c->cfg.have_boot_source || c->cfg.nr_drives)
		return ctl__err(e, -EBUSY,
				"Loading a microVM snapshot not allowed after "
				"configuring boot-specific resources.");
	if (c->dry_run)
		return ctl__err(e, -ENOTSUP,
				"Load snapshot error: a dry run builds no "
				"VM.");
	ret = ctl__overrides_ok(r->nr_drive_overrides, CONTROL_MAX_OVERRIDES,
				"drive_overrides", e);
	if (!ret)
		ret = ctl__overrides_ok(r->nr_net_overrides, CONFIG_MAX_NETS,
					"network_overrides", e);
	if (ret)
		return ret;
	for (i = 0; i < r->nr_drive_overrides; i++) {
		req.drives[i].drive_id = r->drive_id[i];
		req.drives[i].path = r->drive_path[i];
	}
	req.nr_drives = r->nr_drive_overrides;
	for (i = 0; i < r->nr_net_overrides; i++) {
		req.nets[i].iface_id = r->net_iface_id[i];
		req.nets[i].host_dev_name = r->net_tap[i];
	}
	req.nr_nets = r->nr_net_overrides;
	ctl__vm_config(c, &local);
	req.local = &local;
	ret = persist__load(&req, c->el, &vm, why);
	if (ret)
		return ctl__err(e, ret, "Load snapshot error: %s", why);
	if (ctl__adopt(c, vm, true) && r->resume_vm)
		vm__resume(vm); /* a failure requests the stop itself */
	return 0;
}

int control__snapshot_load(struct control *c,
			   const struct control_snapshot_load *req,
			   struct control_err *e)
{
	return ctl__run(c, CTL_PREBOOT, ctl__snapshot_load, req, e);
}
