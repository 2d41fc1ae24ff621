// SPDX-License-Identifier: Apache-2.0
/* PUT /boot-source: kernel, initrd, boot arguments (see control.h). */
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "../../boot/layout.h"

struct boot_args {
	const char *kernel, *initrd, *boot_args;
};

static int ctl__set_boot_source(struct control *c, const void *args,
				struct control_err *e)
{
	const struct boot_args *a = args;
	struct ctl_new n;
	int ret;

	if (!a->kernel || !*a->kernel)
		return ctl__err(e, -EINVAL,
				"Boot source error: kernel_image_path is "
				"empty.");
	ret = ctl__file_ok(a->kernel, O_RDONLY);
	if (ret)
		return ctl__err(e, -EINVAL, "Boot source error: kernel %s: %s",
				a->kernel, ctl__strerror(ret));
	if (a->initrd) {
		ret = ctl__file_ok(a->initrd, O_RDONLY);
		if (ret)
			return ctl__err(e, -EINVAL,
					"Boot source error: initrd %s: %s",
					a->initrd, ctl__strerror(ret));
	}
	if (a->boot_args && strlen(a->boot_args) >= LAYOUT_CMDLINE_MAX)
		return ctl__err(e, -EINVAL,
				"Boot source error: kernel command line longer "
				"than %llu bytes: shorten boot_args (--append)",
				(unsigned long long)LAYOUT_CMDLINE_MAX - 1);
	ctl__begin(c, &n);
	n.cfg.have_boot_source = true;
	n.cfg.kernel_image_path = ctl__keep(&n, a->kernel);
	n.cfg.initrd_path = ctl__keep(&n, a->initrd);
	n.cfg.boot_args = ctl__keep(&n, a->boot_args);
	return ctl__commit(c, &n, e);
}

int control__set_boot_source(struct control *c, const char *kernel,
			     const char *initrd, const char *boot_args,
			     struct control_err *e)
{
	struct boot_args a = { kernel, initrd, boot_args };

	return ctl__run(c, CTL_PREBOOT, ctl__set_boot_source, &a, e);
}
