// SPDX-License-Identifier: Apache-2.0
/*
 * PUT /network-interfaces/{iface_id} before the start, PATCH after it:
 * the virtio-net devices over taps (see control.h).
 */
#include "core.h"

#include <errno.h>
#include <string.h>

#include "../dev/dev.h"
#include "../vm.h"

/* A tap name the kernel takes (dev_valid_name()): 1..15 bytes. */
static bool ctl__ifname_ok(const char *s)
{
	size_t len = s ? strlen(s) : 0;

	return len && len < 16 && strcmp(s, ".") && strcmp(s, "..") &&
	       !strpbrk(s, "/: \t\n\r\v\f");
}

/* PUT /network-interfaces: what an interface must be, beyond its id. */
static int ctl__check_net(const struct control *c, const void *entry,
			  struct control_err *e)
{
	const struct control_net *a = entry;
	unsigned int i;
	char why[160];

	if (!ctl__ifname_ok(a->host_dev_name))
		return ctl__err(e, -EINVAL,
				"Network interface config error: host_dev_name "
				"must be a tap name of 1 to 15 bytes without "
				"'/', ':' or spaces.");
	if (a->has_mac && (a->guest_mac[0] & 1))
		return ctl__err(e, -EINVAL,
				"Network interface config error: guest_mac "
				"must be a unicast address.");
	if (config__check_rate_limiter(&a->rx_rate_limiter, why, sizeof(why)) ||
	    config__check_rate_limiter(&a->tx_rate_limiter, why, sizeof(why)))
		return ctl__err(e, -EINVAL,
				"Network interface config error: %s", why);
	if (ctl__find(&ctl_drives, &c->cfg, a->iface_id) >= 0)
		return ctl__err(e, -EINVAL,
				"Network interface config error: "
				"iface_id %s is a drive's id.",
				a->iface_id);
	for (i = 0; i < c->cfg.nr_nets; i++) {
		const struct control_net *o = &c->cfg.nets[i];

		if (!strcmp(o->iface_id, a->iface_id))
			continue;
		if (!strcmp(o->host_dev_name, a->host_dev_name))
			return ctl__err(e, -EINVAL,
					"Network interface config error: "
					"the tap %s is already used by %s.",
					a->host_dev_name, o->iface_id);
		if (a->has_mac && o->has_mac &&
		    !memcmp(o->guest_mac, a->guest_mac, 6))
			return ctl__err(e, -EINVAL,
					"Network interface config error: "
					"the guest MAC is already used by %s.",
					o->iface_id);
	}
	return 0;
}

static void ctl__keep_net(struct ctl_new *n, void *slot, const void *entry)
{
	const struct control_net *a = entry;
	struct control_net *k = slot;

	*k = *a;
	k->iface_id = ctl__keep(n, a->iface_id);
	k->host_dev_name = ctl__keep(n, a->host_dev_name);
}

const struct ctl_list ctl_nets = {
	.err = "Network interface config error",
	.id_name = "iface_id",
	.plural = "network interfaces",
	.max = CONFIG_MAX_NETS,
	.array_off = offsetof(struct control_config, nets),
	.nr_off = offsetof(struct control_config, nr_nets),
	.size = sizeof(struct control_net),
	.id_off = offsetof(struct control_net, iface_id),
	.check = ctl__check_net,
	.keep = ctl__keep_net,
};

static int ctl__set_net(struct control *c, const void *args,
			struct control_err *e)
{
	return ctl__put(c, &ctl_nets, args, e);
}

int control__set_net(struct control *c, const struct control_net *n,
		     struct control_err *e)
{
	return ctl__run(c, CTL_PREBOOT, ctl__set_net, n, e);
}

struct update_net_args {
	const char *id;
	const struct rate_limiter_config *rx, *tx;
};

static int ctl__update_net(struct control *c, const void *args,
			   struct control_err *e)
{
	const struct update_net_args *a = args;
	struct control_net *k;
	unsigned int i;
	char why[160];
	int ret = ctl__lookup(&ctl_nets, &c->cfg, a->id, e);

	if (ret < 0)
		return ret;
	i = (unsigned int)ret;
	k = &c->cfg.nets[i];
	if ((a->rx && config__check_rate_limiter(a->rx, why, sizeof(why))) ||
	    (a->tx && config__check_rate_limiter(a->tx, why, sizeof(why))))
		return ctl__err(e, -EINVAL,
				"Network interface config error: %s", why);
	ret = dev_net__update(&c->vm->dm, a->id, a->rx, a->tx);
	if (ret)
		return ctl__err(e, ret,
				"Network interface config error: Unable to "
				"update the rate limiters of %s: %s",
				a->id, strerror(-ret));
	/*
	 * No strings change: the configuration is updated in place, and
	 * the VM's own copy (what a snapshot saves), same index.
	 */
	if (a->rx)
		k->rx_rate_limiter = *a->rx;
	if (a->tx)
		k->tx_rate_limiter = *a->tx;
	if (i < c->vm->cfg.nr_nets) {
		if (a->rx)
			c->vm->cfg.nets[i].rx_rate_limiter = *a->rx;
		if (a->tx)
			c->vm->cfg.nets[i].tx_rate_limiter = *a->tx;
	}
	return 0;
}

int control__update_net(struct control *c, const char *iface_id,
			const struct rate_limiter_config *rx,
			const struct rate_limiter_config *tx,
			struct control_err *e)
{
	struct update_net_args a = { iface_id, rx, tx };

	return ctl__run(c, CTL_POSTBOOT, ctl__update_net, &a, e);
}
