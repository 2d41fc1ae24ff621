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
	}
	snap_buf__u8(b, cfg->no_rng);
	snap_buf__u64(b, cfg->vsock.guest_cid);
	snap_buf__str(b, cfg->vsock.uds_path);
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
		if (!d->path || (d->id && strlen(d->id) > DEVMGR_ID_MAX))
			snap_cur__fail(c);
	}
	cfg->no_rng = snap_cur__u8(c) != 0;
	cfg->vsock.guest_cid = snap_cur__u64(c);
	cfg->vsock.uds_path = config_state__str(c, &nomem);
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
