// SPDX-License-Identifier: Apache-2.0
/* PUT /vsock: the virtio-vsock device and its Unix socket (see control.h). */
#include "core.h"

#include <errno.h>
#include <string.h>

struct vsock_args {
	uint64_t cid;
	const char *uds_path;
};

static int ctl__set_vsock(struct control *c, const void *args,
			  struct control_err *e)
{
	const struct vsock_args *a = args;
	struct ctl_new n;

	if (a->cid < 3 || a->cid > UINT32_MAX)
		return ctl__err(e, -EINVAL,
				"Vsock config error: guest_cid must be 3 to "
				"4294967295.");
	if (!a->uds_path || !*a->uds_path || strlen(a->uds_path) > 100)
		return ctl__err(e, -EINVAL,
				"Vsock config error: uds_path must be 1 to 100 "
				"bytes.");
	ctl__begin(c, &n);
	n.cfg.have_vsock = true;
	n.cfg.guest_cid = a->cid;
	n.cfg.uds_path = ctl__keep(&n, a->uds_path);
	return ctl__commit(c, &n, e);
}

int control__set_vsock(struct control *c, uint64_t cid, const char *uds_path,
		       struct control_err *e)
{
	struct vsock_args a = { cid, uds_path };

	return ctl__run(c, CTL_PREBOOT, ctl__set_vsock, &a, e);
}
