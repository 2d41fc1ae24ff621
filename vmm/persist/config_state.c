// SPDX-License-Identifier: Apache-2.0
/* The VM's configuration in a snapshot (see parts.h). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "../config.h"
#include "../devmgr.h"
#include "../log.h"
#include "parts.h"

#define CONFIG_STATE_STR_MAX 4096 /* bytes: paths, arguments */

/* A rate limiter's buckets (config.h), each as three u64. */
static void config_state__limiter_save(struct snap_buf *b,
				       const struct rate_limiter_config *r)
{
	const struct token_bucket_config *tb[2] = { &r->bandwidth, &r->ops };
	unsigned int i;

	for (i = 0; i < 2; i++) {
		snap_buf__u64(b, tb[i]->size);
		snap_buf__u64(b, tb[i]->one_time_burst);
		snap_buf__u64(b, tb[i]->refill_time_ms);
	}
}

/* Read back what config_state__limiter_save() wrote; checked by the caller. */
static void config_state__limiter_restore(struct snap_cur *c,
					  struct rate_limiter_config *r)
{
	struct token_bucket_config *tb[2] = { &r->bandwidth, &r->ops };
	unsigned int i;

	for (i = 0; i < 2; i++) {
		tb[i]->size = snap_cur__u64(c);
		tb[i]->one_time_burst = snap_cur__u64(c);
		tb[i]->refill_time_ms = snap_cur__u64(c);
	}
}

void config_state__save(const struct vm_config *cfg, struct snap_buf *b)
{
	unsigned int i;

	snap_buf__u64(b, cfg->mem_mib);
	snap_buf__u32(b, cfg->vcpus);
	snap_buf__u32(b, (uint32_t)cfg->pvm);
	snap_buf__str(b, cfg->kernel_path);
	snap_buf__str(b, cfg->initrd_path);
	snap_buf__str(b, cfg->append);
	snap_buf__u32(b, cfg->nr_drives);
	for (i = 0; i < cfg->nr_drives; i++) {
		const struct drive_config *d = &cfg->drives[i];

		snap_buf__str(b, d->path);
		snap_buf__str(b, d->id);
		snap_buf__u8(b, d->read_only);
		snap_buf__u8(b, d->root);
		snap_buf__str(b, d->partuuid);
		config_state__limiter_save(b, &d->rate_limiter);
	}
	snap_buf__u8(b, cfg->no_rng);
	snap_buf__u64(b, cfg->vsock.guest_cid);
	snap_buf__str(b, cfg->vsock.uds_path);
	snap_buf__u32(b, cfg->nr_nets);
	for (i = 0; i < cfg->nr_nets; i++) {
		const struct net_config *n = &cfg->nets[i];

		snap_buf__str(b, n->iface_id);
		snap_buf__str(b, n->host_dev_name);
		snap_buf__u8(b, n->has_mac);
		snap_buf__bytes(b, n->guest_mac, sizeof(n->guest_mac));
		config_state__limiter_save(b, &n->rx_rate_limiter);
		config_state__limiter_save(b, &n->tx_rate_limiter);
	}
}

/* A string of the section, malloc()ed; NULL for an empty one. */
static const char *config_state__str(struct snap_cur *c, bool *nomem)
{
	char buf[CONFIG_STATE_STR_MAX];
	char *s;

	snap_cur__str(c, buf, sizeof(buf));
	if (c->err || !buf[0])
		return NULL;
	s = strdup(buf);
	if (!s)
		*nomem = true;
	return s;
}

void config_state__free(struct vm_config *cfg)
{
	config__free_strings(cfg);
	cfg->nr_drives = 0;
	cfg->nr_nets = 0;
}

int config_state__restore(struct vm_config *cfg, struct snap_cur *c)
{
	bool nomem = false;
	char err[128];
	uint32_t pvm;
	unsigned int i;

	cfg->mem_mib = snap_cur__u64(c);
	cfg->vcpus = snap_cur__u32(c);
	pvm = snap_cur__u32(c);
	cfg->pvm = pvm <= PVM_OFF ? (enum pvm_mode)pvm : PVM_AUTO;
	cfg->kernel_path = config_state__str(c, &nomem);
	cfg->initrd_path = config_state__str(c, &nomem);
	cfg->append = config_state__str(c, &nomem);
	cfg->nr_drives = snap_cur__u32(c);
	if (cfg->nr_drives > CONFIG_MAX_DRIVES) {
		log_error("snapshot: %u drives saved, at most %u",
			  cfg->nr_drives, CONFIG_MAX_DRIVES);
		cfg->nr_drives = 0;
		return -EINVAL;
	}
	for (i = 0; i < cfg->nr_drives; i++) {
		struct drive_config *d = &cfg->drives[i];

		d->path = config_state__str(c, &nomem);
		d->id = config_state__str(c, &nomem);
		d->read_only = snap_cur__u8(c) != 0;
		d->root = snap_cur__u8(c) != 0;
		d->partuuid = config_state__str(c, &nomem);
		config_state__limiter_restore(c, &d->rate_limiter);
		if (!d->path || (d->id && strlen(d->id) > DEVMGR_ID_MAX) ||
		    config__check_rate_limiter(&d->rate_limiter, err,
					       sizeof(err)))
			snap_cur__fail(c);
	}
	cfg->no_rng = snap_cur__u8(c) != 0;
	cfg->vsock.guest_cid = snap_cur__u64(c);
	cfg->vsock.uds_path = config_state__str(c, &nomem);
	cfg->nr_nets = snap_cur__u32(c);
	if (cfg->nr_nets > CONFIG_MAX_NETS) {
		log_error("snapshot: %u network interfaces saved, at most %u",
			  cfg->nr_nets, CONFIG_MAX_NETS);
		cfg->nr_nets = 0;
		return -EINVAL;
	}
	for (i = 0; i < cfg->nr_nets; i++) {
		struct net_config *n = &cfg->nets[i];
		uint8_t has_mac;

		n->iface_id = config_state__str(c, &nomem);
		n->host_dev_name = config_state__str(c, &nomem);
		has_mac = snap_cur__u8(c);
		snap_cur__bytes(c, n->guest_mac, sizeof(n->guest_mac));
		config_state__limiter_restore(c, &n->rx_rate_limiter);
		config_state__limiter_restore(c, &n->tx_rate_limiter);
		n->has_mac = has_mac == 1;
		if (!n->iface_id || strlen(n->iface_id) > DEVMGR_ID_MAX ||
		    !n->host_dev_name || strlen(n->host_dev_name) > 15 ||
		    has_mac > 1 || (n->has_mac && (n->guest_mac[0] & 1)) ||
		    config__check_rate_limiter(&n->rx_rate_limiter, err,
					       sizeof(err)) ||
		    config__check_rate_limiter(&n->tx_rate_limiter, err,
					       sizeof(err)))
			snap_cur__fail(c);
	}
	if (pvm > PVM_OFF || cfg->mem_mib < CONFIG_MEM_MIN_MIB ||
	    cfg->mem_mib > CONFIG_MEM_MAX_MIB || !cfg->vcpus ||
	    cfg->vcpus > CONFIG_MAX_VCPUS ||
	    (cfg->vsock.uds_path &&
	     (cfg->vsock.guest_cid < 3 || cfg->vsock.guest_cid > UINT32_MAX)))
		snap_cur__fail(c);
	if (nomem)
		return -ENOMEM;
	if (snap_cur__end(c)) {
		log_error("snapshot: section config is malformed or out of "
			  "range");
		return -EINVAL;
	}
	/* The API's own limit: no more RAM than this host has. */
	if (config__check_mem(cfg->mem_mib, err, sizeof(err))) {
		log_error("snapshot: %s", err);
		return -EINVAL;
	}
	return 0;
}
