// SPDX-License-Identifier: Apache-2.0
/*
 * PVM host detection (see pvm.h): alone in its file so that the host
 * tools (the sandbox library's start gate and jails, the jailer) share
 * ember's one test without linking the PVM profile.
 */
#include "pvm.h"

#include <unistd.h>

bool pvm__detect(void)
{
	return access("/sys/module/kvm_pvm", F_OK) == 0;
}
