// SPDX-License-Identifier: Apache-2.0
/*
 * lock cmpxchg16b at CPL0: hardware runs it; the PVM emulator cannot
 * (PLATFORM.md), and ember has no fallback for it, so on a PVM host ember
 * must stop the VM with "cannot emulate", the RIP and the bytes
 * (f0 48 0f c7 0d ...) and exit 125, never hang or go on.
 */
#include "guest.h"

static volatile u64 cell[2] __attribute__((aligned(16))) = { 1, 2 };

int guest_main(void)
{
	u64 lo = 1, hi = 2;
	u8 ok;

	puts("unemulatable: lock cmpxchg16b\n");
	asm volatile("lock cmpxchg16b %1\n\t"
		     "sete %0"
		     : "=q"(ok), "+m"(cell[0]), "+m"(cell[1]), "+a"(lo),
		       "+d"(hi)
		     : "b"((u64)3), "c"((u64)4)
		     : "memory", "cc");
	if (!check(ok && cell[0] == 3 && cell[1] == 4, "cmpxchg16b swapped"))
		return 1;
	return 0;
}
