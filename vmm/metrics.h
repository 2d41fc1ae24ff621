/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Figures about one VM run for people and bench/: timings from process
 * start, VM exits by reason, and ember's own memory (RSS minus the guest
 * RAM that is resident).
 */
#ifndef EMBER_VMM_METRICS_H
#define EMBER_VMM_METRICS_H

struct vm;

/*
 * metrics__print() - one line on stderr, "ember-stats: key=value ...":
 * first_run_ms, first_console_ms (the guest's first transmitted console
 * byte), boot_timer_ms, stop_ms (0 when it did not happen), exits_io, exits_mmio, exits_emulated, exits_intr,
 * exits_other, console_dropped_bytes (guest console output lost to a
 * reader that went away or errors), rss_kib, guest_resident_kib,
 * vmm_rss_kib.  Call after vm__run() and before vm__destroy().
 */
void metrics__print(const struct vm *vm);

#endif /* EMBER_VMM_METRICS_H */
