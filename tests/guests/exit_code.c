// SPDX-License-Identifier: Apache-2.0
/* guest_main's return value becomes ember's exit status. */
#include "guest.h"

int guest_main(void)
{
	puts("exit_code: returning 42\n");
	return 42;
}
