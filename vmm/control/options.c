// SPDX-License-Identifier: Apache-2.0
/*
 * ember's own options, beside Firecracker's configuration: console, --run,
 * boot timer, stats, PVM profile (see control.h).
 */
#include "core.h"

#include <errno.h>
#include <string.h>

#include "../../boot/layout.h"
#include "../../guest-init/protocol.h"

static int ctl__set_options(struct control *c, const void *args,
			    struct control_err *e)
{
	const struct control_options *o = args;
	struct ctl_new n;

	if (o->console == CONSOLE_FILE &&
	    (!o->console_path || !*o->console_path))
		return ctl__err(e, -EINVAL, "console file: no path");
	/* base64 on the kernel command line: 4 bytes per 3, within 2047. */
	if (o->run_cmd && ember_b64_encoded_len(strlen(o->run_cmd)) +
					  strlen(EMBER_RUN_PARAM) >=
				  LAYOUT_CMDLINE_MAX)
		return ctl__err(
			e, -EINVAL,
			"--run: a command of %zu bytes does not fit on the "
			"kernel command line (at most %llu bytes)",
			strlen(o->run_cmd),
			(unsigned long long)((LAYOUT_CMDLINE_MAX - 1 -
					      strlen(EMBER_RUN_PARAM)) *
					     3 / 4));
	ctl__begin(c, &n);
	n.cfg.opts = *o;
	n.cfg.opts.console_path = ctl__keep(&n, o->console_path);
	n.cfg.opts.run_cmd = ctl__keep(&n, o->run_cmd);
	return ctl__commit(c, &n, e);
}

int control__set_options(struct control *c, const struct control_options *o,
			 struct control_err *e)
{
	return ctl__run(c, CTL_PREBOOT, ctl__set_options, o, e);
}
