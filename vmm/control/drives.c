// SPDX-License-Identifier: Apache-2.0
/*
 * PUT /drives/{drive_id} before the start, PATCH /drives/{drive_id} after
 * it: the virtio-blk disks (see control.h).
 */
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "../dev/dev.h"
#include "../vm.h"

/* PUT /drives: what a drive must be, beyond its id. */
static int ctl__check_drive(const struct control *c, const void *entry,
			    struct control_err *e)
{
	const struct control_drive *d = entry;
	unsigned int i;
	char why[160];
	int ret;

	if (!d->path_on_host || !*d->path_on_host)
		return ctl__err(
			e, -EINVAL,
			"Drive config error: path_on_host is required.");
	ret = ctl__file_ok(d->path_on_host,
			   d->is_read_only ? O_RDONLY : O_RDWR);
	if (ret)
		return ctl__err(e, -EINVAL, "Drive config error: drive %s: %s",
				d->path_on_host, ctl__strerror(ret));
	if (d->partuuid && (!*d->partuuid || strlen(d->partuuid) > 64 ||
			    strpbrk(d->partuuid, " \t\n\"")))
		return ctl__err(e, -EINVAL,
				"Drive config error: partuuid is not a "
				"partition UUID.");
	if (config__check_rate_limiter(&d->rate_limiter, why, sizeof(why)))
		return ctl__err(e, -EINVAL,
				"Drive config error: rate_limiter: %s.", why);
	for (i = 0; i < c->cfg.nr_drives; i++) {
		const struct control_drive *o = &c->cfg.drives[i];

		if (!strcmp(o->drive_id, d->drive_id))
			continue;
		if (o->is_root_device && d->is_root_device)
			return ctl__err(e, -EINVAL,
					"Drive config error: A root block "
					"device already exists!");
	}
	return 0;
}

static void ctl__keep_drive(struct ctl_new *n, void *slot, const void *entry)
{
	const struct control_drive *d = entry;
	struct control_drive *k = slot;
	unsigned int i;

	*k = *d;
	k->drive_id = ctl__keep(n, d->drive_id);
	k->path_on_host = ctl__keep(n, d->path_on_host);
	k->partuuid = ctl__keep(n, d->partuuid);
	/* The root drive first: it becomes /dev/vda. */
	for (i = 1; i < n->cfg.nr_drives; i++) {
		if (n->cfg.drives[i].is_root_device) {
			struct control_drive root = n->cfg.drives[i];

			memmove(&n->cfg.drives[1], &n->cfg.drives[0],
				i * sizeof(root));
			n->cfg.drives[0] = root;
		}
	}
}

const struct ctl_list ctl_drives = {
	.err = "Drive config error",
	.id_name = "drive_id",
	.plural = "drives",
	.max = CONFIG_MAX_DRIVES,
	.array_off = offsetof(struct control_config, drives),
	.nr_off = offsetof(struct control_config, nr_drives),
	.size = sizeof(struct control_drive),
	.id_off = offsetof(struct control_drive, drive_id),
	.check = ctl__check_drive,
	.keep = ctl__keep_drive,
};

static int ctl__set_drive(struct control *c, const void *args,
			  struct control_err *e)
{
	return ctl__put(c, &ctl_drives, args, e);
}

int control__set_drive(struct control *c, const struct control_drive *d,
		       struct control_err *e)
{
	return ctl__run(c, CTL_PREBOOT, ctl__set_drive, d, e);
}

struct update_args {
	const char *id, *path;
	const struct rate_limiter_config *rl;
};

static int ctl__update_drive(struct control *c, const void *args,
			     struct control_err *e)
{
	const struct update_args *a = args;
	struct control_drive *d;
	char *vm_path = NULL;
	struct ctl_new n;
	unsigned int at;
	char why[160];
	int ret = ctl__lookup(&ctl_drives, &c->cfg, a->id, e);

	if (ret < 0)
		return ret;
	at = (unsigned int)ret;
	d = &c->cfg.drives[at];
	if (!a->path && !a->rl)
		return ctl__err(e, -EINVAL,
				"Drive config error: Please specify at least "
				"one property to patch: path_on_host, "
				"rate_limiter.");
	if (a->rl && config__check_rate_limiter(a->rl, why, sizeof(why)))
		return ctl__err(e, -EINVAL,
				"Drive config error: rate_limiter: %s.", why);
	if (a->path) {
		/* The VM's own copy, for its snapshots (actions.c). */
		vm_path = strdup(a->path);
		if (!vm_path)
			return ctl__err(e, -ENOMEM,
					"Internal VMM error: out of memory");
		ret = dev_blk__update(&c->vm->dm, a->id, a->path,
				      d->is_read_only, why, sizeof(why));
		if (ret) {
			free(vm_path);
			return ctl__err(e, ret,
					"Drive config error: Unable to patch "
					"the block device: %s (%s)",
					why, a->path);
		}
	}
	if (a->rl) {
		ret = dev_blk__set_limiter(&c->vm->dm, a->id, a->rl, why,
					   sizeof(why));
		if (ret)
			return ctl__err(e, ret,
					"Drive config error: Unable to patch "
					"the block device: %s",
					why);
		/*
		 * No string changes: in place, here and in the VM's own
		 * configuration that snapshots save.  The VM's drives are
		 * in this configuration's order (ctl__vm_config(),
		 * ctl__config_from_vm(); none is added after the start).
		 */
		d->rate_limiter = *a->rl;
		if (at < c->vm->cfg.nr_drives)
			c->vm->cfg.drives[at].rate_limiter = *a->rl;
	}
	if (!a->path)
		return 0;
	ctl__begin(c, &n);
	n.cfg.drives[at].path_on_host = ctl__keep(&n, a->path);
	ret = ctl__commit(c, &n, e);
	/*
	 * Only now may the VM's old path go: after a snapshot load this
	 * configuration pointed into the VM's strings until the commit.
	 */
	if (!ret && at < c->vm->cfg.nr_drives) {
		free((char *)c->vm->cfg.drives[at].path);
		c->vm->cfg.drives[at].path = vm_path;
		vm_path = NULL;
	}
	free(vm_path);
	return ret;
}

int control__update_drive(struct control *c, const char *drive_id,
			  const char *path_on_host,
			  const struct rate_limiter_config *rl,
			  struct control_err *e)
{
	struct update_args a = { drive_id, path_on_host, rl };

	return ctl__run(c, CTL_POSTBOOT, ctl__update_drive, &a, e);
}
