// SPDX-License-Identifier: Apache-2.0
/*
 * A template from the user's image (template.h, template__build_image):
 * the base disk made by image__to_ext4() inside the template being built,
 * ember's parts added to it, booted with ember's init.  Apart from
 * template_build.c so that only the front ends that take images link the
 * image code (and libcrypto).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "files.h"
#include "image.h"
#include "template.h"

struct image_base {
	const struct template_image_opts *io;
	int stop_fd;
	struct template_times *times;
	char user[64]; /* the default user, once the disk is made */
};

/* template_build_opts.make_base: the image, as a disk, at @base. */
static int image_base(void *arg, const char *base, const char *work, char *err,
		      size_t errlen)
{
	struct image_base *ib = arg;
	const struct image_guest guest = {
		.init = ib->io->init,
		.agent = ib->io->agent,
		.busybox = ib->io->busybox,
		.interp = ib->io->interp,
		.add_user = true,
	};
	const struct image_opts o = {
		.disk_mib = ib->io->disk_mib,
		.stop_fd = ib->stop_fd,
		.guest = &guest,
		.times = ib->times ? &ib->times->image : NULL,
	};
	struct image_config c;
	int rc;

	rc = image__to_ext4(&o, ib->io->src, work, base, &c, err, errlen);
	/* As image__add_guest() chose it: the image's User, else ours. */
	if (!rc && c.user && c.user[0] && strlen(c.user) >= sizeof(ib->user))
		rc = sandbox__errf(err, errlen, -EINVAL,
				   "the image's User is over %zu bytes",
				   sizeof(ib->user) - 1);
	if (!rc)
		snprintf(ib->user, sizeof(ib->user), "%s",
			 c.user && c.user[0] ? c.user : IMAGE_USER_NAME);
	image_config__free(&c);
	return rc;
}

int template__build_image(const struct template_build_opts *o,
			  const struct template_image_opts *io,
			  const char *name, char *err, size_t errlen)
{
	struct image_base ib = { .io = io,
				 .stop_fd = o->sig_fd,
				 .times = o->times };
	struct template_build_opts b = *o;

	if (!io->src || !io->src[0] || !io->init || !io->agent)
		return sandbox__errf(err, errlen, -EINVAL,
				     "an image template needs a SRC, "
				     "ember's init and its agent");
	b.rootfs = io->src;
	b.make_base = image_base;
	b.make_base_arg = &ib;
	b.append = "init=" IMAGE_GUEST_INIT;
	b.user = ib.user; /* filled by image_base() */
	return template__build(&b, name, err, errlen);
}
