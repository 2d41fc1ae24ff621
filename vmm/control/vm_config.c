// SPDX-License-Identifier: Apache-2.0
/*
 * The control's configuration as the builder takes it (struct vm_config,
 * vmm/config.h), and back after a snapshot load (see core.h).
 */
#include "core.h"

#include <string.h>

#include "../vm.h"

void ctl__vm_config(const struct control *c, struct vm_config *v)
{
	const struct control_config *k = &c->cfg;
	unsigned int i;

	memset(v, 0, sizeof(*v));
	v->kernel_path = k->kernel_image_path;
	v->initrd_path = k->initrd_path;
	v->append = k->boot_args;
	v->mem_mib = k->mem_size_mib;
	v->vcpus = k->vcpu_count;
	v->console = k->opts.console;
	v->console_path = k->opts.console_path;
	v->run_cmd = k->opts.run_cmd;
	v->run_len = k->opts.run_cmd ? strlen(k->opts.run_cmd) : 0;
	v->boot_timer = k->opts.boot_timer;
	v->stats = k->opts.stats;
	v->pvm = k->opts.pvm;
	for (i = 0; i < k->nr_drives; i++) {
		const struct control_drive *d = &k->drives[i];

		v->drives[i] = (struct drive_config){
			.path = d->path_on_host,
			.id = d->drive_id,
			.read_only = d->is_read_only,
			.root = d->is_root_device,
			.partuuid = d->partuuid,
			.rate_limiter = d->rate_limiter,
		};
	}
	v->nr_drives = k->nr_drives;
	for (i = 0; i < k->nr_nets; i++) {
		const struct control_net *n = &k->nets[i];

		v->nets[i] = (struct net_config){
			.iface_id = n->iface_id,
			.host_dev_name = n->host_dev_name,
			.has_mac = n->has_mac,
			.rx_rate_limiter = n->rx_rate_limiter,
			.tx_rate_limiter = n->tx_rate_limiter,
		};
		memcpy(v->nets[i].guest_mac, n->guest_mac, 6);
	}
	v->nr_nets = k->nr_nets;
	v->no_rng = !k->have_entropy;
	if (k->have_vsock) {
		v->vsock.guest_cid = k->guest_cid;
		v->vsock.uds_path = k->uds_path;
	}
}

void ctl__config_from_vm(struct control *c, const struct vm *vm)
{
	const struct vm_config *v = &vm->cfg;
	struct control_config *k = &c->cfg;
	unsigned int i;

	k->vcpu_count = v->vcpus;
	k->mem_size_mib = v->mem_mib;
	k->have_boot_source = v->kernel_path != NULL;
	k->kernel_image_path = v->kernel_path;
	k->initrd_path = v->initrd_path;
	k->boot_args = v->append;
	k->nr_drives = v->nr_drives;
	for (i = 0; i < v->nr_drives; i++)
		k->drives[i] = (struct control_drive){
			.drive_id = v->drives[i].id,
			.path_on_host = v->drives[i].path,
			.is_root_device = v->drives[i].root,
			.is_read_only = v->drives[i].read_only,
			.partuuid = v->drives[i].partuuid,
			.rate_limiter = v->drives[i].rate_limiter,
		};
	k->nr_nets = v->nr_nets;
	for (i = 0; i < v->nr_nets; i++) {
		k->nets[i] = (struct control_net){
			.iface_id = v->nets[i].iface_id,
			.host_dev_name = v->nets[i].host_dev_name,
			.has_mac = v->nets[i].has_mac,
			.rx_rate_limiter = v->nets[i].rx_rate_limiter,
			.tx_rate_limiter = v->nets[i].tx_rate_limiter,
		};
		memcpy(k->nets[i].guest_mac, v->nets[i].guest_mac, 6);
	}
	k->have_vsock = v->vsock.uds_path != NULL;
	k->guest_cid = v->vsock.guest_cid;
	k->uds_path = v->vsock.uds_path;
	k->have_entropy = !v->no_rng;
}
