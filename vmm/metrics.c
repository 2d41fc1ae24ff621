// SPDX-License-Identifier: Apache-2.0
/* Run figures (see metrics.h). */
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backends/console_out.h"
#include "vm.h"

static long metrics__rss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* Resident pages of the guest RAM mapping, by mincore(2). */
static long metrics__guest_resident_kib(const struct vm *vm)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t pages, i, chunk = 1 << 20, n;
	unsigned char *vec;
	long resident = 0;

	if (!vm->mem.map || page <= 0)
		return 0;
	pages = vm->mem.map_bytes / (size_t)page;
	vec = malloc(chunk);
	if (!vec)
		return -1;
	for (i = 0; i < pages; i += n) {
		size_t k;

		n = pages - i < chunk ? pages - i : chunk;
		if (mincore((char *)vm->mem.map + i * (size_t)page,
			    n * (size_t)page, vec) < 0) {
			resident = -1;
			break;
		}
		for (k = 0; k < n; k++)
			resident += vec[k] & 1;
	}
	free(vec);
	return resident < 0 ? -1 : resident * (page / 1024);
}

void metrics__print(const struct vm *vm)
{
	long rss = metrics__rss_kib(), guest = metrics__guest_resident_kib(vm);

	fprintf(stderr,
		"ember-stats: first_run_ms=%.3f first_console_ms=%.3f "
		"boot_timer_ms=%.3f stop_ms=%.3f exits_io=%llu exits_mmio=%llu "
		"exits_emulated=%llu exits_intr=%llu exits_other=%llu "
		"console_dropped_bytes=%llu rss_kib=%ld guest_resident_kib=%ld "
		"vmm_rss_kib=%ld\n",
		vm->vctx.t_first_run_ms, console_out__first_ms(vm->console_out),
		vm->t_boot_timer_ms, vm->t_stop_ms,
		(unsigned long long)vm->vctx.exits[EXIT_IO],
		(unsigned long long)vm->vctx.exits[EXIT_MMIO],
		(unsigned long long)vm->vctx.exits[EXIT_EMULATED],
		(unsigned long long)vm->vctx.exits[EXIT_INTR],
		(unsigned long long)vm->vctx.exits[EXIT_OTHER],
		(unsigned long long)console_out__dropped(vm->console_out), rss,
		guest, rss >= 0 && guest >= 0 ? rss - guest : -1);
}
