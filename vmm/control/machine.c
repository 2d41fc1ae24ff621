// SPDX-License-Identifier: Apache-2.0
/* PUT /machine-config: vCPUs and memory (see control.h). */
#include "core.h"

#include <errno.h>

struct machine_args {
	unsigned int vcpu_count;
	uint64_t mem_size_mib;
	bool smt, track_dirty_pages;
};

static int ctl__set_machine(struct control *c, const void *args,
			    struct control_err *e)
{
	const struct machine_args *a = args;
	char why[160];
	int ret;

	if (!a->vcpu_count || a->vcpu_count > CONFIG_MAX_VCPUS)
		return ctl__err(e, -EINVAL,
				"Machine config error: The number of vCPUs "
				"must be greater than 0 and at most %d.",
				CONFIG_MAX_VCPUS);
	if (a->smt)
		return ctl__err(e, -EINVAL,
				"Machine config error: simultaneous "
				"multithreading (smt) is not supported by "
				"ember.");
	ret = config__check_mem(a->mem_size_mib, why, sizeof(why));
	if (ret)
		return ctl__err(e, -EINVAL, "Machine config error: %s.", why);
	c->cfg.vcpu_count = a->vcpu_count;
	c->cfg.mem_size_mib = a->mem_size_mib;
	c->cfg.smt = a->smt;
	c->cfg.track_dirty_pages = a->track_dirty_pages;
	return 0;
}

int control__set_machine(struct control *c, unsigned int vcpu_count,
			 uint64_t mem_size_mib, bool smt,
			 bool track_dirty_pages, struct control_err *e)
{
	struct machine_args a = { vcpu_count, mem_size_mib, smt,
				  track_dirty_pages };

	return ctl__run(c, CTL_PREBOOT, ctl__set_machine, &a, e);
}
