// SPDX-License-Identifier: Apache-2.0
/*
 * build/test/image-unpack SRC WORK OUT.ext4 CONFIG.json [DISK_MIB]: the
 * sandbox library's image__to_ext4() alone, for
 * tests/integration/image_unpack.sh, until emberctl's `template build
 * --from-image` (issue 22, step c) calls it.  Exit 0, or 1 with the
 * error's one line on stderr.  SIGINT and SIGTERM stop it (a signalfd
 * as image_opts.stop_fd), as emberctl will.
 *
 * With IMAGE_UNPACK_GUEST="INIT AGENT BUSYBOX" in the environment, ember's
 * guest parts and the `user` account are added (image_opts.guest).
 *
 * build/test/image-unpack --check DIR CONFIG.json [TAG]: image_oci__check()
 * alone on an OCI layout (skopeo checks digests too, so the test reaches
 * ember's own checks this way), the run defaults into CONFIG.json.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>

#include "../../api/sandbox/image.h"

int main(int argc, char **argv)
{
	static char parts[3][1024];
	struct image_guest guest = { 0 };
	struct image_opts o = { .stop_fd = -1 };
	sigset_t stop;
	struct image_config c;
	char err[1024];
	int rc;

	if (argc >= 4 && argc <= 5 && !strcmp(argv[1], "--check")) {
		rc = image_oci__check(argv[2], argc == 5 ? argv[4] : NULL, &c,
				      err, sizeof(err));
		if (!rc)
			rc = image_config__write(&c, argv[3], err, sizeof(err));
		goto out;
	}
	if (argc < 5 || argc > 6) {
		fprintf(stderr,
			"usage: image-unpack SRC WORK OUT CONFIG [DISK_MIB]\n");
		return 2;
	}
	if (getenv("IMAGE_UNPACK_GUEST") &&
	    sscanf(getenv("IMAGE_UNPACK_GUEST"), "%1023s %1023s %1023s",
		   parts[0], parts[1], parts[2]) == 3) {
		guest.init = parts[0];
		guest.agent = parts[1];
		guest.busybox = parts[2];
		guest.add_user = true;
		o.guest = &guest;
	}
	if (argc == 6)
		o.disk_mib = strtoull(argv[5], NULL, 10);
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &stop, NULL) == 0)
		o.stop_fd = signalfd(-1, &stop, SFD_CLOEXEC);
	rc = image__to_ext4(&o, argv[1], argv[2], argv[3], &c, err,
			    sizeof(err));
	if (!rc)
		rc = image_config__write(&c, argv[4], err, sizeof(err));
out:
	image_config__free(&c);
	if (rc) {
		fprintf(stderr, "image-unpack: %s\n", err);
		return 1;
	}
	return 0;
}
