// SPDX-License-Identifier: Apache-2.0
/* PUT /entropy: the virtio-rng device on or off (see control.h). */
#include "core.h"

static int ctl__set_entropy(struct control *c, const void *args,
			    struct control_err *e)
{
	(void)e;
	c->cfg.have_entropy = *(const bool *)args;
	return 0;
}

int control__set_entropy(struct control *c, bool on, struct control_err *e)
{
	return ctl__run(c, CTL_PREBOOT, ctl__set_entropy, &on, e);
}
