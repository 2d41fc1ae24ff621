// SPDX-License-Identifier: Apache-2.0
/* The smallest guest: one line on the serial console, exit status 0. */
#include "guest.h"

int guest_main(void)
{
	puts("hello from a tiny guest\n");
	return 0;
}
